#!/usr/bin/env python3
"""Workers slowed on purpose: what they cost a data-parallel run, measured, beside what the
performance model predicts for the same run.

For each straggler setting (none; one worker persistently --factor times slower; each
worker-step --factor times slower with probability 1/W) the script trains --model for one
epoch of --limit samples under `mpirun -np --ranks` (`dtrain train --slow-*`, train/slowdown.h),
interleaved over --reps repetitions, and reads the time per step from the metrics log (the
epoch's training seconds over its steps). It calibrates the machine once (`dtrain calibrate`
under the same mpirun, or takes --profile) and asks `dtrain predict --slow-mode ...` for the same
configurations. Printed per setting: the median measured step, its spread over the repetitions,
the measured slowdown against the run with no straggler (ratios of medians of the same run,
interleaved), the predicted step and the predicted slowdown.

    bench/stragglers.py --ranks 2 --model lenet --reps 3
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

from benchlib import MPIRUN, add_common_args, footer, header, profile_for, run, wait_quiet


def settings(factor, ranks):
    return [("none", []),
            ("persistent", ["--slow-mode", "persistent", "--slow-factor", str(factor)]),
            ("random", ["--slow-mode", "random", "--slow-factor", str(factor), "--slow-prob", f"{1.0 / ranks:.6f}"])]


def train_flags(name, flags, ranks):
    """dtrain train's flags for a setting: a persistent straggler is the last rank."""
    if name == "persistent":
        return ["--slow-rank", str(ranks - 1), "--slow-factor", flags[3]]
    return flags


def measure(a, flags, log):
    cmd = MPIRUN + ["-np", str(a.ranks), a.dtrain, "train", "--model", a.model, "--limit", str(a.limit),
                    "--epochs", "1", "--batch", str(a.batch), "--threads", "1", "--progress", "none",
                    "--eval-limit", "1000", "--log", log] + flags
    run(cmd, timeout=1800)
    with open(log) as f:
        records = [json.loads(line) for line in f if line.strip()]
    epoch = [r for r in records if r.get("type") == "epoch"][-1]
    return (epoch["epoch_seconds"] - epoch["time"]["eval"]) / epoch["iteration"]


def predict(a, profile, flags):
    out = run([a.dtrain, "predict", "--model", a.model, "--dataset", "fashion-mnist", "--workers", str(a.ranks),
               "--batch-per-worker", str(a.batch), "--profile", profile, "--allreduce", a.allreduce, "--json"] + flags)
    return json.loads(out)["runs"][0]["step_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--model", default="lenet")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--limit", type=int, default=12800, help="training samples per run")
    p.add_argument("--factor", type=float, default=2.0)
    p.add_argument("--allreduce", default="shm", help="the exchange trained and predicted (shm on one host)")
    p.add_argument("--profile", help="a calibrated profile (default: calibrate first)")
    a = p.parse_args()
    header(f"stragglers: {a.model}, {a.ranks} ranks x batch {a.batch}, factor {a.factor}, --allreduce {a.allreduce}")
    with tempfile.TemporaryDirectory() as tmp:
        profile = profile_for(a, a.ranks, a.model, tmp)
        cases = settings(a.factor, a.ranks)
        steps = {name: [] for name, _ in cases}
        for rep in range(a.reps):
            for name, flags in cases:
                wait_quiet(a.quiet, a.quiet_max)
                steps[name].append(measure(a, ["--allreduce", a.allreduce] + train_flags(name, flags, a.ranks),
                                           os.path.join(tmp, "log.jsonl")))
        predicted = {name: predict(a, profile, flags) for name, flags in cases}
    base = statistics.median(steps["none"])
    print(f"{'straggler':<11} {'measured step':>13} {'spread':>7} {'slowdown':>9} {'predicted step':>15} "
          f"{'slowdown':>9} {'error':>7}")
    for name, _ in cases:
        m = statistics.median(steps[name])
        spread = (max(steps[name]) - min(steps[name])) / m
        slowdown, predicted_slowdown = m / base, predicted[name] / predicted["none"]
        print(f"{name:<11} {1000 * m:>10.2f} ms {100 * spread:>6.1f}% {slowdown:>9.2f} "
              f"{1000 * predicted[name]:>12.2f} ms {predicted_slowdown:>9.2f} "
              f"{100 * (predicted_slowdown - slowdown) / slowdown:>+6.1f}%")
    footer()


if __name__ == "__main__":
    sys.exit(main())
