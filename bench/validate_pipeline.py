#!/usr/bin/env python3
"""The pipeline model against measured pipeline steps: `dtrain predict --pipeline` beside
`dtrain bench train --pipeline` on 2 ranks, one compute thread each (each stage has a core).

For each model and micro-batch count m, a step of BATCH samples as a 2-stage 1F1B pipeline:
  measured   mpirun -np 2 dtrain bench train --model M --batch B --threads 1 --pipeline 2 --micro-batches m
  predicted  dtrain predict --profile P --model M --batch-per-worker B --pipeline 2 --micro-batches m --json
The profile is a calibration of this machine under mpirun -np 2 at the micro-batch's size (a
layer's rate depends on its batch: --batch of `dtrain calibrate` is the per-rank batch a layer
runs at, which in a pipeline is B/m), one per micro-batch size unless --profile is given. The
measured runs are interleaved (REPS times each), and the table gives their medians and spread,
the prediction, the error, and the step's ratio m=1 over the largest m, measured and predicted.

usage: bench/validate_pipeline.py [--reps 3] [--models mlp,lenet] [--batch 64] [--micro-batches 1,2,4,8]
                                  [--profile FILE]
"""
import argparse, json, os, tempfile

import benchlib as bl

STEPS = {"mlp": 300, "lenet": 60, "resnet20": 20}
DATASET = {"mlp": "fashion-mnist", "lenet": "fashion-mnist", "resnet20": "cifar10"}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.add_common_args(p)
    p.add_argument("--models", default="mlp,lenet")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--micro-batches", default="1,2,4,8")
    p.add_argument("--profile", default="", help="one profile for every m (default: calibrate per micro-batch size)")
    a = p.parse_args()
    micro = [int(m) for m in a.micro_batches.split(",")]
    bl.header("pipeline model: predicted vs measured, 2 stages on 2 ranks")
    with tempfile.TemporaryDirectory() as tmp:
        profiles = {}
        for m in micro:
            if a.profile:
                profiles[m] = a.profile
                continue
            path = os.path.join(tmp, f"profile-b{a.batch // m}.json")
            bl.run(bl.MPIRUN + ["-np", "2", a.dtrain, "calibrate", "--threads", "1", "--batch", str(a.batch // m),
                                "--models", a.models, "-o", path], timeout=1800)
            profiles[m] = path
        print(f"# profiles calibrated {bl.load()}", flush=True)
        for model in a.models.split(","):
            predicted = {}
            for m in micro:
                out = bl.run([a.dtrain, "predict", "--profile", profiles[m], "--model", model, "--dataset",
                              DATASET[model], "--batch-per-worker", str(a.batch), "--pipeline", "2",
                              "--micro-batches", str(m), "--json"])
                predicted[m] = json.loads(out)
            measured = {m: [] for m in micro}
            for _ in range(a.reps):
                for m in micro:
                    bl.wait_quiet(a.quiet, a.quiet_max)
                    out = bl.run(bl.MPIRUN + ["-np", "2", a.dtrain, "bench", "train", "--model", model, "--batch",
                                              str(a.batch), "--threads", "1", "--steps", str(STEPS.get(model, 50)),
                                              "--pipeline", "2", "--micro-batches", str(m)])
                    measured[m].append(bl.fields(out)["step_ms"])
            print(f"\n{model}, {a.batch} samples per step, stages {' | '.join(s['layers'][0] + '..' + s['layers'][-1] for s in predicted[micro[0]]['stages'])}")
            print("| m | measured ms | spread | predicted ms | error | predicted bubble |")
            print("| --- | --- | --- | --- | --- | --- |")
            for m in micro:
                med = bl.median(measured[m])
                spread = (max(measured[m]) - min(measured[m])) / med
                pred = 1e3 * predicted[m]["step_s"]
                print(f"| {m} | {med:.2f} | {100 * spread:.0f}% | {pred:.2f} | {100 * (pred - med) / med:+.1f}% | "
                      f"{100 * predicted[m]['bubble_fraction']:.0f}% |")
            first, last = micro[0], micro[-1]
            print(f"step m={first} / m={last}: measured {bl.median(measured[first]) / bl.median(measured[last]):.2f}, "
                  f"predicted {predicted[first]['step_s'] / predicted[last]['step_s']:.2f}")
    bl.footer()


if __name__ == "__main__":
    main()
