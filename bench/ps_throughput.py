#!/usr/bin/env python3
"""Parameter-server throughput under BSP, SSP and ASP, with and without stragglers, beside
allreduce training and beside what the performance model predicts for each run.

W workers (--workers, default 3) train --model for one epoch of --limit samples; parameter-server
runs add --servers server ranks (mpirun -np W + K), allreduce runs are W ranks (and, for the run
without stragglers, W + K ranks too: the same processes as the parameter-server run). Three
straggler settings: one worker persistently --factor times slower (the last worker), each
worker-step --factor times slower with probability 1/W, and none (train/slowdown.h: a slowed
step sleeps, so it frees its core). Runs are interleaved over --reps repetitions.

Steps per second, a global step being W worker gradients:
  parameter server: the servers' gradients applied per second while every worker still ran
                    (the log's "ps" record, ps/run_stats.h) over W;
  allreduce:        training steps over the epoch's training seconds (evaluation excluded).
With a fixed share of the data per worker, a run under ASP with a slow worker still ends when
that worker ends: the rate is the rule's, not the job's wall time.

The model: `dtrain predict --allreduce ps --sync ... --slow-mode ...` on a profile calibrated
first under mpirun -np W (or --profile), its steps per second and its ratios to BSP.

    bench/ps_throughput.py --reps 3
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

from benchlib import MPIRUN, add_common_args, footer, header, profile_for, run, wait_quiet


def stragglers(a):
    w = a.workers
    return {
        "persistent": (["--slow-rank", str(w - 1), "--slow-factor", str(a.factor)],
                       ["--slow-mode", "persistent", "--slow-factor", str(a.factor)]),
        "random": (["--slow-mode", "random", "--slow-factor", str(a.factor), "--slow-prob", f"{1.0 / w:.6f}"],
                   ["--slow-mode", "random", "--slow-factor", str(a.factor), "--slow-prob", f"{1.0 / w:.6f}"]),
        "none": ([], []),
    }


def modes(a):
    """(name, ranks, dtrain train flags, dtrain predict flags) of every run of a straggler setting."""
    w, k = a.workers, a.servers
    ps = ["--mode", "ps", "--servers", str(k)]
    out = [("allreduce", w, ["--allreduce", a.allreduce], ["--allreduce", a.allreduce]),
           ("bsp", w + k, ps + ["--sync", "bsp"], ["--allreduce", "ps", "--servers", str(k), "--sync", "bsp"])]
    for s in a.staleness:
        out.append((f"ssp{s}", w + k, ps + ["--sync", "ssp", "--staleness", str(s)],
                    ["--allreduce", "ps", "--servers", str(k), "--sync", "ssp", "--staleness", str(s)]))
    out.append(("asp", w + k, ps + ["--sync", "asp"], ["--allreduce", "ps", "--servers", str(k), "--sync", "asp"]))
    return out


def measure(a, ranks, flags, log):
    """Global steps per second of one run (see the docstring)."""
    cmd = MPIRUN + ["-np", str(ranks), a.dtrain, "train", "--model", a.model, "--limit", str(a.limit),
                    "--epochs", "1", "--batch", str(a.batch), "--threads", "1", "--progress", "none",
                    "--eval-limit", "1000", "--log", log] + flags
    run(cmd, timeout=1800)
    with open(log) as f:
        records = [json.loads(line) for line in f if line.strip()]
    ps = [r for r in records if r.get("type") == "ps"]
    if ps:
        return ps[-1]["steps_per_second"], ps[-1]
    epoch = [r for r in records if r.get("type") == "epoch"][-1]
    return epoch["iteration"] / (epoch["epoch_seconds"] - epoch["time"]["eval"]), None


def predict(a, profile, flags):
    out = run([a.dtrain, "predict", "--model", a.model, "--dataset", "fashion-mnist", "--workers", str(a.workers),
               "--batch-per-worker", str(a.batch), "--profile", profile, "--epochs", "1", "--json"] + flags)
    return 1.0 / json.loads(out)["runs"][0]["step_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--staleness", type=int, nargs="+", default=[1, 3], help="SSP bounds to run")
    p.add_argument("--model", default="resnet20")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--limit", type=int, default=19200, help="training samples per run (all workers together)")
    p.add_argument("--factor", type=float, default=2.0)
    p.add_argument("--allreduce", default="shm", help="the allreduce runs' exchange")
    p.add_argument("--settings", nargs="+", default=["persistent", "random", "none"])
    p.add_argument("--profile", help="a calibrated profile (default: calibrate first under mpirun -np W)")
    p.add_argument("--json", help="also write every measurement here")
    a = p.parse_args()
    header(f"parameter-server throughput: {a.model}, {a.workers} workers x batch {a.batch}, {a.servers} server(s), "
           f"straggler factor {a.factor}")
    settings = stragglers(a)
    runs = modes(a)
    measured = {(s, m[0]): [] for s in a.settings for m in runs}
    extra = {s: [] for s in a.settings}  # allreduce on W + K ranks, no straggler only
    stats = {}
    with tempfile.TemporaryDirectory() as tmp:
        profile = profile_for(a, a.workers, a.model, tmp)
        log = os.path.join(tmp, "log.jsonl")
        for rep in range(a.reps):
            for s in a.settings:
                train_slow, _ = settings[s]
                for name, ranks, flags, _ in runs:
                    wait_quiet(a.quiet, a.quiet_max)
                    rate, ps = measure(a, ranks, flags + train_slow, log)
                    measured[(s, name)].append(rate)
                    if ps:
                        stats.setdefault((s, name), []).append(ps)
                if s == "none":
                    wait_quiet(a.quiet, a.quiet_max)
                    extra[s].append(measure(a, a.workers + a.servers, ["--allreduce", a.allreduce], log)[0])
        predicted = {(s, name): predict(a, profile, pflags + settings[s][1])
                     for s in a.settings for name, _, _, pflags in runs}
    print(f"{'straggler':<11} {'run':<10} {'steps/s':>8} {'spread':>7} {'x BSP':>6} {'model/s':>8} {'x BSP':>6} "
          f"{'error':>7} {'gap max':>8} {'tau mean':>9}")
    rows = []
    for s in a.settings:
        bsp = statistics.median(measured[(s, "bsp")])
        pbsp = predicted[(s, "bsp")]
        for name, _, _, _ in runs:
            v = measured[(s, name)]
            m = statistics.median(v)
            ratio, pratio = m / bsp, predicted[(s, name)] / pbsp
            st = stats.get((s, name))
            gap = max(r["gap_max"] for r in st) if st else None
            tau = statistics.median(r["tau_mean"] for r in st) if st else None
            print(f"{s:<11} {name:<10} {m:>8.2f} {100 * (max(v) - min(v)) / m:>6.1f}% {ratio:>6.2f} "
                  f"{predicted[(s, name)]:>8.2f} {pratio:>6.2f} {100 * (pratio - ratio) / ratio:>+6.1f}% "
                  f"{'' if gap is None else gap:>8} {'' if tau is None else f'{tau:.2f}':>9}")
            rows.append({"straggler": s, "run": name, "steps_per_second": v, "median": m, "ratio_to_bsp": ratio,
                         "predicted_steps_per_second": predicted[(s, name)], "predicted_ratio_to_bsp": pratio,
                         "gap_max": gap, "tau_mean": tau})
        if extra[s]:
            m = statistics.median(extra[s])
            print(f"{s:<11} {f'allreduce/{a.workers + a.servers}':<10} {m:>8.2f} "
                  f"{100 * (max(extra[s]) - min(extra[s])) / m:>6.1f}% {m / bsp:>6.2f}   (every rank a worker)")
            rows.append({"straggler": s, "run": f"allreduce_{a.workers + a.servers}_ranks", "steps_per_second": extra[s],
                         "median": m, "ratio_to_bsp": m / bsp})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "rows": rows}, f, indent=1)
    footer()


if __name__ == "__main__":
    sys.exit(main())
