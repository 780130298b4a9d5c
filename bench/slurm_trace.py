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
    run([REPO / "tools/slurm/cluster.sh", "start", cluster], env)
    try:
        profile = a.profile
        if profile is None:
            profile = str(work / "profile.json")
            run(mpirun + [dtrain, "calibrate", "--threads", "1", "--batch", "64", "--models", "lenet,mlp", "-o",
                          profile], env, stdout=subprocess.DEVNULL)
        common = [dtrain, "schedule", "--trace", a.trace, "--nodes", "1", "--ranks-per-node", "2", "--profile", profile]
        if a.cluster:
            common += ["--cluster", a.cluster]
        rows, summary = [], []
        for policy in a.policies.split(","):
            sim = json.loads(run(common + ["--policy", policy, "--json", "--fixed-ranks"], env,
                                 capture_output=True).stdout)
            real = json.loads(run(common + ["--policy", policy, "--json", "--submit", "--work-dir", work / policy],
                                  env, capture_output=True).stdout)
            sim, real = sim["policies"][0], real["policies"][0]
            for s, r in zip(sim["jobs"], real["jobs"]):
                err = (s["jct_s"] - r["jct_s"]) / r["jct_s"]
                rows.append((policy, s["name"], s["jct_s"], r["jct_s"], err))
            summary.append((policy, sim["mean_jct_s"], real["mean_jct_s"], sim["makespan_s"], real["makespan_s"]))
        lines = [f"# bench/slurm_trace.py --policies {a.policies} --trace {os.path.relpath(a.trace, REPO)}",
                 f"{'policy':<8} {'job':<10} {'predicted':>10} {'measured':>10} {'error':>7}"]
        lines += [f"{p:<8} {j:<10} {s:>9.1f}s {r:>9.1f}s {100 * e:>+6.1f}%" for p, j, s, r, e in rows]
        within = sum(1 for *_, e in rows if abs(e) <= 0.2)
        lines.append(f"jobs within 20%: {within} of {len(rows)}; median |error| "
                     f"{100 * sorted(abs(e) for *_, e in rows)[len(rows) // 2]:.1f}%")
        lines.append(f"{'policy':<8} {'mean JCT sim':>13} {'measured':>10} {'makespan sim':>13} {'measured':>10}")
        lines += [f"{p:<8} {ms:>12.1f}s {mr:>9.1f}s {ks:>12.1f}s {kr:>9.1f}s" for p, ms, mr, ks, kr in summary]
        by_sim = [p for p, *_ in sorted(summary, key=lambda x: x[1])]
        by_real = [p for p, *_ in sorted(summary, key=lambda x: x[2])]
        lines.append(f"ranking by mean JCT: simulated {' < '.join(by_sim)}; measured {' < '.join(by_real)}: "
                     f"{'agree' if by_sim == by_real else 'DISAGREE'}")
        text = "\n".join(lines) + "\n"
        print(text)
        pathlib.Path(a.output).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(a.output).write_text(text)
    finally:
        subprocess.run(["scancel", "--user", os.environ.get("USER", "root")], env=env)
        run([REPO / "tools/slurm/cluster.sh", "stop", cluster], env)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
