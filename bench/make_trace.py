#!/usr/bin/env python3
"""Writes a 60-job trace in the Tiresias simulator's columns for `dtrain schedule`.

Columns (SymbioticLab/Tiresias simulator/README.md): job_id, num_gpu, submit_time, iterations,
model_name, duration, interval. A job asks for num_gpu ranks; its work is `iterations` steps of
batch 32 per rank at num_gpu ranks (src/schedule/trace.h).

The distribution, in the style of Tiresias's 60_job.csv (60 jobs, 1-8 GPUs, about 30 s apart),
with dtrain's models and durations from minutes to hours:
  - submit times: gaps drawn from an exponential distribution with a 30 s mean (Poisson arrivals),
    rounded to whole seconds;
  - num_gpu: 1, 2, 4 or 8 with probabilities 0.40, 0.25, 0.20, 0.15 (weighted toward small jobs,
    powers of two as in Tiresias's trace);
  - model_name: resnet50 0.40, resnet56 0.30, resnet20 0.20, resnet32 0.10;
  - duration at num_gpu ranks: log-uniform between 3 min and 4 h (heavy-tailed: most jobs are
    short, a few take hours);
  - iterations = duration / the model's step time at batch 32 on one V100 (STEP_SECONDS below,
    from `dtrain predict --profile 8xv100-nvlink+ib-edr --batch-per-worker 32 --workers 1
    --allreduce auto --json`); the step grows by 1-3% up to 8 ranks in one node, so the model's
    time for a job at num_gpu ranks is within a few percent of its duration column;
  - interval: the gap to the next submission (0 for the last job).

Usage: bench/make_trace.py [--seed 62] [--jobs 60] [--out bench/traces/tiresias60.csv]
"""
import argparse
import math
import pathlib
import random

STEP_SECONDS = {  # one rank, batch 32, 8xv100-nvlink+ib-edr
    "resnet50": 0.12869,
    "resnet56": 0.0045405,
    "resnet32": 0.0025314,
    "resnet20": 0.0015268,
}
GPUS = [(1, 0.40), (2, 0.25), (4, 0.20), (8, 0.15)]
MODELS = [("resnet50", 0.40), ("resnet56", 0.30), ("resnet20", 0.20), ("resnet32", 0.10)]
MEAN_GAP_S = 30.0
SHORTEST_S, LONGEST_S = 180.0, 4 * 3600.0


def pick(rng, weighted):
    r = rng.random()
    for value, p in weighted:
        r -= p
        if r < 0:
            return value
    return weighted[-1][0]


def make_jobs(seed, count):
    rng = random.Random(seed)
    jobs, t = [], 0
    for i in range(count):
        gpus = pick(rng, GPUS)
        model = pick(rng, MODELS)
        duration = math.exp(rng.uniform(math.log(SHORTEST_S), math.log(LONGEST_S)))
        iterations = max(1, round(duration / STEP_SECONDS[model]))
        jobs.append({"job_id": i, "num_gpu": gpus, "submit_time": t, "iterations": iterations,
                     "model_name": model, "duration": round(duration)})
        gap = round(rng.expovariate(1.0 / MEAN_GAP_S)) if i + 1 < count else 0
        jobs[-1]["interval"] = gap
        t += gap
    return jobs


def main():
    root = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=62)
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--out", default=str(root / "traces" / "tiresias60.csv"))
    args = parser.parse_args()
    columns = ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"]
    lines = [",".join(columns)]
    for job in make_jobs(args.seed, args.jobs):
        lines.append(",".join(str(job[c]) for c in columns))
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}: {args.jobs} jobs")


if __name__ == "__main__":
    main()
