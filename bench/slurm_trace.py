#!/usr/bin/env python3
"""A trace of training jobs run on a real single-node Slurm, each policy's schedule simulated
first and then carried out, to check the simulator against what the cluster did.

For each policy: `dtrain schedule --json` simulates the trace on this machine's calibrated
profile (1 node x 2 ranks); `dtrain schedule --submit --json` runs it on Slurm (tools/slurm/
cluster.sh starts a private cluster) with the same policy. The table gives every job's
predicted and measured completion time (submit to end), their error, and per policy the mean
completion time and makespan, simulated and measured; the policies' ranking by mean completion
time is compared between the two.

Usage: bench/slurm_trace.py [--dtrain build/release/bin/dtrain] [--policies fifo,srtf,model]
                            [--trace bench/traces/slurm6.csv] [--output bench/results/slurm_trace.txt]
Takes about 4 minutes per policy plus a minute of calibration. Needs Slurm (tools/packages.txt).
"""
import argparse
import json
import os
import statistics
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent


def run(cmd, env, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run([str(c) for c in cmd], env=env, check=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtrain", default=str(REPO / "build/release/bin/dtrain"))
    ap.add_argument("--policies", default="fifo,srtf,model")
    ap.add_argument("--trace", default=str(REPO / "bench/traces/slurm6.csv"))
    ap.add_argument("--profile", help="a calibrated profile (default: calibrate now, under mpirun -np 2)")
    ap.add_argument("--cluster", help="dtrain schedule --cluster JSON (e.g. restart_seconds and requeue_seconds "
                                      "measured on this cluster)")
    ap.add_argument("--repeats", type=int, default=1, help="real runs of every policy, in rotated order")
    ap.add_argument("--recorded", help="the real runs' record (RUNS.json, written beside --output) of an earlier run: "
                                       "simulate again against it instead of running Slurm")
    ap.add_argument("--output", default=str(REPO / "bench/results/slurm_trace.txt"))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    dtrain = pathlib.Path(a.dtrain).resolve()
    work = pathlib.Path(tempfile.mkdtemp(prefix="dtrain-slurm-trace-"))
    cluster = work / "cluster"
    env = dict(os.environ, SLURM_CONF=str(cluster / "slurm.conf"))
    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2"]
    if os.getuid() == 0:
        mpirun.insert(1, "--allow-run-as-root")
    if not a.recorded:
        run([REPO / "tools/slurm/cluster.sh", "start", cluster], env)
    try:
        profile = a.profile
        if a.recorded:  # the profile and the trace of the recorded runs
            recorded = json.loads(pathlib.Path(a.recorded).read_text())
            profile = str(work / "profile.json")
            pathlib.Path(profile).write_text(recorded["profile"])
            a.trace = str(work / "trace.csv")
            pathlib.Path(a.trace).write_text(recorded["trace"])
        elif profile is None:
            profile = str(work / "profile.json")
            run(mpirun + [dtrain, "calibrate", "--threads", "1", "--batch", "64", "--models", "lenet,mlp", "-o",
                          profile], env, stdout=subprocess.DEVNULL)
        common = [dtrain, "schedule", "--trace", a.trace, "--nodes", "1", "--ranks-per-node", "2"]
        if a.cluster:
            common += ["--cluster", a.cluster]
        common_real = common + ["--profile", profile]

        def simulate(policy, slower=1.0):
            """The simulated schedule on the profile, or on it with every compute rate `slower` times lower."""
            path = profile
            if slower != 1.0:
                slowed = json.loads(pathlib.Path(profile).read_text())
                for rate in slowed["device"]["compute"].values():
                    rate["value"] /= slower
                path = work / f"profile-x{slower:.3f}.json"
                path.write_text(json.dumps(slowed))
            return json.loads(run(common + ["--profile", path, "--policy", policy, "--json", "--fixed-ranks"], env,
                                  capture_output=True).stdout)["policies"][0]

        def decisions(schedule):
            return [(x["job"], x["ranks"]) for x in schedule["actions"]]

        policies = a.policies.split(",")
        sims, reals, probes = {}, {p: [] for p in policies}, {p: [] for p in policies}
        # A schedule is fragile where a machine 15% or 30% slower than calibrated would change its
        # decisions: then a real run's order is a matter of noise, not of the simulator.
        stable = {}
        for policy in policies:
            sims[policy] = simulate(policy)
            stable[policy] = all(decisions(simulate(policy, f)) == decisions(sims[policy]) for f in (1.15, 1.3))
        predicted_step = json.loads(run([dtrain, "predict", "--profile", profile, "--model", "lenet", "--dataset",
                                         "fashion-mnist", "--batch-per-worker", "64", "--workers", "2",
                                         "--allreduce", "auto", "--epochs", "1", "--json"], env,
                                        capture_output=True).stdout)["runs"][0]["step_s"]

        def probe():
            out = run(mpirun + [dtrain, "bench", "train", "--model", "lenet", "--batch", "64", "--threads", "1",
                                "--steps", "30"], env, capture_output=True).stdout
            step_ms = float(out.split("step_ms=")[1].split()[0])
            return step_ms / 1e3 / predicted_step

        record = pathlib.Path(a.output).with_suffix(".runs.json")
        if a.recorded:
            reals, probes, a.repeats = recorded["reals"], recorded["probes"], recorded["repeats"]
        for repeat in range(0 if a.recorded else a.repeats):
            for policy in policies[repeat % len(policies):] + policies[:repeat % len(policies)]:
                before = probe()
                real = json.loads(run(common_real + ["--policy", policy, "--json", "--submit", "--work-dir",
                                                work / f"{policy}-{repeat}"], env, capture_output=True).stdout)
                probes[policy].append((before, probe()))
                reals[policy].append(real["policies"][0])
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(json.dumps({"repeats": repeat + 1, "reals": reals, "probes": probes,
                                              "profile": pathlib.Path(profile).read_text(),
                                              "trace": pathlib.Path(a.trace).read_text()}))
        rows, summary = [], []
        for policy in policies:
            sim = sims[policy]
            # The same simulation on the machine as the probes found it during this policy's runs.
            speed = statistics.median(x for pair in probes[policy] for x in pair)
            at_speed = simulate(policy, speed)
            for i, s in enumerate(sim["jobs"]):
                measured = [r["jobs"][i]["jct_s"] for r in reals[policy]]
                m = statistics.median(measured)
                rows.append((policy, s["name"], s["jct_s"], m, (s["jct_s"] - m) / m, (max(measured) - min(measured)) / m,
                             (at_speed["jobs"][i]["jct_s"] - m) / m))
            means = [r["mean_jct_s"] for r in reals[policy]]
            summary.append((policy, sim["mean_jct_s"], statistics.median(means), sim["makespan_s"],
                            statistics.median(r["makespan_s"] for r in reals[policy]),
                            (max(means) - min(means)) / statistics.median(means)))
        lines = [f"# bench/slurm_trace.py --policies {a.policies} --trace {os.path.relpath(a.trace, REPO)} "
                 f"--repeats {a.repeats}",
                 f"# measured: median of {a.repeats} run(s); spread: (max - min) / median over the runs",
                  "# at speed: the simulation with the compute rates divided by the probes' median ratio",
                f"{'policy':<8} {'job':<10} {'predicted':>10} {'measured':>10} {'error':>7} {'spread':>7} "
                f"{'at speed':>8}"]
        lines += [f"{p:<8} {j:<10} {s:>9.1f}s {r:>9.1f}s {100 * e:>+6.1f}% {100 * d:>6.1f}% {100 * v:>+7.1f}%"
                  for p, j, s, r, e, d, v in rows]
        for label, k in (("", 4), (" at the probes' speed", 6)):
            errors = sorted(abs(row[k]) for row in rows)
            lines.append(f"jobs within 20%{label}: {sum(1 for e in errors if e <= 0.2)} of {len(rows)}; "
                         f"median |error| {100 * errors[len(rows) // 2]:.1f}%")
        lines.append("decisions unchanged on a machine 15% and 30% slower: " +
                     ", ".join(f"{p} {'yes' if stable[p] else 'NO'}" for p in policies))
        lines.append(f"machine against its calibration (2-rank LeNet step measured / predicted "
                     f"{1e3 * predicted_step:.1f} ms), before and after each real run:")
        lines += [f"  {p:<8} " + ", ".join(f"{b:.2f} / {e:.2f}" for b, e in probes[p]) for p in policies]
        lines.append(f"{'policy':<8} {'mean JCT sim':>13} {'measured':>10} {'spread':>7} {'makespan sim':>13} "
                     f"{'measured':>10}")
        lines += [f"{p:<8} {ms:>12.1f}s {mr:>9.1f}s {100 * d:>6.1f}% {ks:>12.1f}s {kr:>9.1f}s"
                  for p, ms, mr, ks, kr, d in summary]
        # A pair is ranked when the simulator separates it by more than the measured spread of both.
        verdicts = []
        for i, x in enumerate(summary):
            for y in summary[i + 1:]:
                gap = abs(x[1] - y[1]) / min(x[1], y[1])
                sim_order, real_order = x[1] < y[1], x[2] < y[2]
                if gap <= max(x[5], y[5], 0.05):
                    verdicts.append(f"{x[0]}/{y[0]}: tie (simulated {100 * gap:.1f}% apart)")
                else:
                    verdicts.append(f"{x[0]}/{y[0]}: {'agree' if sim_order == real_order else 'DISAGREE'} "
                                    f"(simulated {100 * gap:.1f}% apart)")
        by_sim = [p for p, *_ in sorted(summary, key=lambda x: x[1])]
        by_real = [p for p, *_ in sorted(summary, key=lambda x: x[2])]
        lines.append(f"ranking by mean JCT: simulated {' < '.join(by_sim)}; measured {' < '.join(by_real)}")
        lines.append("pairs: " + "; ".join(verdicts))
        text = "\n".join(lines) + "\n"
        print(text)
        pathlib.Path(a.output).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(a.output).write_text(text)
    finally:
        if not a.recorded:
            subprocess.run(["scancel", "--user", os.environ.get("USER", "root")], env=env)
            run([REPO / "tools/slurm/cluster.sh", "stop", cluster], env)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
