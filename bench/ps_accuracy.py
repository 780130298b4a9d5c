#!/usr/bin/env python3
"""Parameter-server accuracy under BSP, SSP and ASP beside allreduce training with the same
global batch, over several seeds: each run's test accuracy after every epoch, its gap to BSP
with the same seed and momentum, its clock gap and tau, and its staleness histogram.

LeNet on Fashion-MNIST by default, W workers (--workers 3) of batch 64 each and one server, so
mpirun -np 4 on this 2-core machine (oversubscribed: accuracy does not depend on the timing,
except through the order of SSP and ASP pushes). Rows (--rows picks some):

  allreduce         -np W --allreduce ring, the same global batch W x 64
  bsp               --sync bsp
  ssp3_slow         --sync ssp --staleness 3, the last worker persistently 2x slower
  ssp3              --sync ssp --staleness 3, equal workers
  asp               --sync asp, equal workers
  asp_comp          asp with --async-momentum compensate (mu - (1 - 1/W), Mitliagkas et al. 2016)
  ssp3_comp         ssp3 with --async-momentum compensate
  asp_tau           asp with --async-lr staleness (lr / tau per push, Zhang et al. 2016)
  asp_full          asp with --async-lr full (lr per push, not divided by W): the anchors' divergence
  bsp_m0, ssp3_m0, asp_m0   the same at --momentum 0

    bench/ps_accuracy.py --seeds 0 1
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

from benchlib import MPIRUN, add_common_args, footer, header, run

MOMENTUM0 = ["--momentum", "0"]


def rows(w):
    ps = ["--mode", "ps", "--servers", "1"]
    ssp3 = ps + ["--sync", "ssp", "--staleness", "3"]
    asp = ps + ["--sync", "asp"]
    comp = ["--async-momentum", "compensate"]
    return {
        "bsp": (w + 1, ps + ["--sync", "bsp"], "bsp"),
        "allreduce": (w, ["--allreduce", "ring"], "bsp"),
        "ssp3_slow": (w + 1, ssp3 + ["--slow-rank", str(w - 1), "--slow-factor", "2"], "bsp"),
        "ssp3": (w + 1, ssp3, "bsp"),
        "asp": (w + 1, asp, "bsp"),
        "asp_comp": (w + 1, asp + comp, "bsp"),
        "ssp3_comp": (w + 1, ssp3 + comp, "bsp"),
        "asp_tau": (w + 1, asp + ["--async-lr", "staleness"], "bsp"),
        "asp_full": (w + 1, asp + ["--async-lr", "full"], "bsp"),
        "bsp_m0": (w + 1, ps + ["--sync", "bsp"] + MOMENTUM0, "bsp_m0"),
        "ssp3_m0": (w + 1, ssp3 + MOMENTUM0, "bsp_m0"),
        "asp_m0": (w + 1, asp + MOMENTUM0, "bsp_m0"),
    }


def train(a, ranks, flags, seed, log):
    """Test accuracy after each epoch and the run's "ps" record (None for allreduce)."""
    run(MPIRUN + ["-np", str(ranks), a.dtrain, "train", "--model", a.model, "--epochs", str(a.epochs),
                  "--batch", str(a.batch), "--threads", "1", "--progress", "none", "--seed", str(seed),
                  "--log", log] + flags, timeout=3600)
    with open(log) as f:
        records = [json.loads(line) for line in f if line.strip()]
    acc = [r["test_accuracy"] for r in records if r.get("type") == "epoch"]
    ps = [r for r in records if r.get("type") == "ps"]
    return acc, (ps[-1] if ps else None)


def histogram(counts, bins=8):
    """value:count for the first `bins` values seen, then how many more values there were."""
    seen = [f"{v}:{n}" for v, n in enumerate(counts) if n]
    more = f" +{len(seen) - bins} more values" if len(seen) > bins else ""
    return (" ".join(seen[:bins]) or "-") + more


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--model", default="lenet")
    p.add_argument("--batch", type=int, default=64, help="per worker")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--rows", nargs="+", help="which rows (default: all; bsp and bsp_m0 are added where needed)")
    p.add_argument("--json", help="also write every run here")
    a = p.parse_args()
    table = rows(a.workers)
    names = a.rows or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        sys.exit(f"unknown row(s) {', '.join(unknown)}; valid: {', '.join(table)}")
    for n in list(names):
        if table[n][2] not in names:
            names.insert(0, table[n][2])
    names = list(dict.fromkeys(names))
    header(f"parameter-server accuracy: {a.model}, {a.workers} workers x batch {a.batch}, 1 server, "
           f"{a.epochs} epochs, seeds {' '.join(map(str, a.seeds))}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.jsonl")
        for seed in a.seeds:
            for n in names:
                ranks, flags, _ = table[n]
                acc, ps = train(a, ranks, flags, seed, log)
                results[(n, seed)] = (acc, ps)
                base = results.get((table[n][2], seed))
                gap = f"{100 * (acc[-1] - base[0][-1]):+.2f}" if base else ""
                stale = ""
                if ps:
                    s = ps["servers"][0]
                    stale = (f"gap max {ps['gap_max']} (histogram {histogram(s['gap_histogram'])}), tau mean "
                             f"{ps['tau_mean']:.2f} (histogram {histogram(s['tau_histogram'])})")
                print(f"seed {seed} {n:<10} accuracy {' '.join(f'{x:.4f}' for x in acc)}  vs {table[n][2]} "
                      f"{gap:>6} points  {stale}", flush=True)
    print()
    print(f"{'run':<10} {'final accuracy per seed':<24} {'mean':>7} {'vs BSP (points, mean)':>22} {'gap max':>8} "
          f"{'tau mean':>9}")
    summary = []
    for n in names:
        finals = [results[(n, s)][0][-1] for s in a.seeds]
        base = [results[(table[n][2], s)][0][-1] for s in a.seeds]
        diffs = [100 * (f - b) for f, b in zip(finals, base)]
        ps = [results[(n, s)][1] for s in a.seeds if results[(n, s)][1]]
        gap = max(r["gap_max"] for r in ps) if ps else ""
        tau = f"{statistics.mean(r['tau_mean'] for r in ps):.2f}" if ps else ""
        print(f"{n:<10} {' '.join(f'{x:.4f}' for x in finals):<24} {statistics.mean(finals):>7.4f} "
              f"{statistics.mean(diffs):>+10.2f} ({min(diffs):+.2f}..{max(diffs):+.2f}) {gap:>8} {tau:>9}")
        summary.append({"run": n, "vs": table[n][2], "final_accuracy": finals, "points_vs_bsp": diffs,
                        "accuracy_per_epoch": [results[(n, s)][0] for s in a.seeds], "gap_max": gap or None,
                        "tau_mean": [r["tau_mean"] for r in ps]})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "rows": summary}, f, indent=1)
    footer()


if __name__ == "__main__":
    sys.exit(main())
