#!/usr/bin/env python3
"""LeNet on Fashion-MNIST for 3 epochs with f16 gradient communication and double buffering on
2 ranks, next to the same 2-rank run in f32 and one process with the same global batch.

Runs, one after the other:
  f16+db   mpirun -np 2 dtrain train --model lenet --epochs 3 --batch 32 --comm-dtype f16 --double-buffering
  f32      mpirun -np 2 dtrain train --model lenet --epochs 3 --batch 32
  single   dtrain train --model lenet --epochs 3 --batch 64          (with --single)
each rank with --threads 1 (the single process with --threads 2: the same two cores), and prints
the test accuracy after each epoch and the wall-clock time from the metrics logs.

usage: bench/lenet_fp16_accuracy.py [--configs f16+db,f32] [--single] [--epochs 3]
Target (issue 4): f16+db reaches >= 0.89 test accuracy in 3 epochs.
"""
import argparse, json, os, tempfile, time

import benchlib as bl

# With --double-buffering, dtrain train lowers sgd's default momentum from 0.9 to 2*0.9-1 = 0.8, the
# compensation for one step of staleness that docs/distributed.md describes; "f16+db:m0.9" keeps
# 0.9 (the momentum of the other runs) to show what the compensation buys.
CONFIGS = {"f16+db": ["--comm-dtype", "f16", "--double-buffering"],
           "f16+db:m0.9": ["--comm-dtype", "f16", "--double-buffering", "--momentum", "0.9"],
           "f32": [], "f16": ["--comm-dtype", "f16"],
           "db": ["--double-buffering"], "bf16+db": ["--comm-dtype", "bf16", "--double-buffering"]}


def train(cmd, log):
    start = time.time()
    bl.run(cmd + ["--log", log, "--progress", "lines"], timeout=3600)
    seconds = time.time() - start
    with open(log) as f:
        epochs = [r for r in map(json.loads, f) if r["type"] == "epoch"]
    return epochs, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.add_common_args(ap)
    ap.add_argument("--configs", default="f16+db,f32", help=f"2-rank runs, from {', '.join(CONFIGS)}")
    ap.add_argument("--single", action="store_true", help="also one process with batch 64 and 2 threads")
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    bl.header(f"LeNet, Fashion-MNIST, {a.epochs} epochs, global batch 64 (2 ranks x 32, 1 thread each)")
    common = ["train", "--model", "lenet", "--epochs", str(a.epochs)]
    runs = [(c, bl.MPIRUN + ["-np", "2", a.dtrain, *common, "--batch", "32", "--threads", "1", *CONFIGS[c]])
            for c in a.configs.split(",")]
    if a.single:
        runs.append(("single", [a.dtrain, *common, "--batch", "64", "--threads", "2"]))
    print(f"{'config':11} " + " ".join(f"{'epoch ' + str(e + 1):>8}" for e in range(a.epochs)) +
          f" {'train s':>8} {'wall s':>7} {'samples/s':>9}")
    with tempfile.TemporaryDirectory() as d:
        for name, cmd in runs:
            epochs, seconds = train(cmd, os.path.join(d, f"{name}.jsonl"))
            accs = " ".join(f"{r['test_accuracy']:8.4f}" for r in epochs)
            train_s = sum(r["epoch_seconds"] for r in epochs)
            sps = sum(r["samples_per_s"] * r["epoch_seconds"] for r in epochs) / train_s
            print(f"{name:11} {accs} {train_s:8.1f} {seconds:7.1f} {sps:9.0f}", flush=True)
    bl.footer()


if __name__ == "__main__":
    main()
