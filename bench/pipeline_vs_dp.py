#!/usr/bin/env python3
"""What each way of using this machine's two cores costs: a model as a 2-stage pipeline on 2
ranks, against 2-rank data parallelism and against one process, one run, interleaved.

For each model, a step of BATCH samples, one compute thread per rank, alternately REPS times:
  one process    dtrain bench train --model M --batch B --threads 1
  data parallel  mpirun -np 2 dtrain bench train --model M --batch B/2 --threads 1
  pipeline M=m   mpirun -np 2 dtrain bench train --model M --batch B --threads 1 --pipeline 2
                 --micro-batches m   (1F1B, stages balanced by FLOPs; for each m of --micro-batches)
and prints the medians: samples/s (with the spread of the repetitions, (max - min) / median), the
ratio to one process, and each rank's peak RSS (the
pipeline's stages hold different parts of the model and of the activations). On two cores data
parallelism does the same arithmetic in half the time per rank; a pipeline idles (K - 1) / (m + K
- 1) of its step in the bubble and runs at the pace of its slower stage, so it trails data
parallelism here, where memory is plentiful: what it buys is each rank holding only its stage.

usage: bench/pipeline_vs_dp.py [--reps 3] [--models lenet,resnet20] [--batch 64] [--micro-batches 2,4,8]
"""
import argparse

import benchlib as bl

STEPS = {"mlp": 300, "lenet": 60, "resnet20": 20}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.add_common_args(p)
    p.add_argument("--models", default="lenet,resnet20")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--micro-batches", default="2,4,8")
    a = p.parse_args()
    bl.header("pipeline (2 stages) vs data parallelism (2 ranks) vs one process")
    micro = [int(m) for m in a.micro_batches.split(",")]
    for model in a.models.split(","):
        common = ["bench", "train", "--model", model, "--threads", "1", "--steps", str(STEPS.get(model, 50))]
        configs = {"one process": [a.dtrain, *common, "--batch", str(a.batch)],
                   "data parallel x2": bl.MPIRUN + ["-np", "2", a.dtrain, *common, "--batch", str(a.batch // 2)]}
        for m in micro:
            configs[f"pipeline 2 stages, m={m}"] = bl.MPIRUN + ["-np", "2", a.dtrain, *common, "--batch", str(a.batch),
                                                                 "--pipeline", "2", "--micro-batches", str(m)]
        runs = {name: [] for name in configs}
        for _ in range(a.reps):
            for name, cmd in configs.items():
                bl.wait_quiet(a.quiet, a.quiet_max)
                runs[name].append(bl.fields(bl.run(cmd)))
        base = bl.median([r["samples_per_s"] for r in runs["one process"]])
        print(f"\n{model}, {a.batch} samples per step, {a.reps} reps (medians)")
        print("| configuration | samples/s | spread | vs one process | peak RSS per rank (MiB) |")
        print("| --- | --- | --- | --- | --- |")
        for name, rs in runs.items():
            rates = [r["samples_per_s"] for r in rs]
            rate = bl.median(rates)
            spread = (max(rates) - min(rates)) / rate
            rss = [bl.median([float(str(r["peak_rss_mb_ranks"]).split(",")[i]) for r in rs])
                   for i in range(len(str(rs[0]["peak_rss_mb_ranks"]).split(",")))]
            print(f"| {name} | {rate:.0f} | {100 * spread:.0f}% | {rate / base:.2f}x | "
                  f"{' / '.join(f'{x:.0f}' for x in rss)} |")
    bl.footer()


if __name__ == "__main__":
    main()
