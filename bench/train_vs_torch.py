#!/usr/bin/env python3
"""dtrain vs tuned PyTorch 1.13 training throughput, side by side in one run.

For each model (W1 mlp, W2 lenet, W3 resnet20), batch (64, 256) and thread count (1, 2), runs
`dtrain bench train` and shared/peers/torch_train.py under shared/peers/torch_tuned.sh (glibc malloc
tunables + the OpenMP build of OpenBLAS: the fair peer), interleaved, REPS times each, and prints
the medians: samples/s of both, their ratio, dtrain's achieved GFLOP/s against the sgemm ceiling
that `dtrain bench train` measures in the same run (about 197 GFLOP/s per core with AVX-512), and
the peak RSS of both (from /usr/bin/time -v; dtrain's at the end of its training steps, before
the sgemm ceiling's matrices).

usage: bench/train_vs_torch.py [--reps 3] [--models mlp,lenet,resnet20] [--batches 64,256]
                               [--threads 1,2] [--dtrain build/release/bin/dtrain] [--peers ../shared/peers]
Targets (issue 3): ratio >= 1.0 on every row, >= 1.3 on resnet20, dtrain RSS <= half of PyTorch's.
"""
import argparse, os, re, statistics

import benchlib as bl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Steps per run: about 5-10 s each on the development machine at 1 thread.
TORCH_STEPS = {("mlp", 64): 3000, ("mlp", 256): 1000, ("lenet", 64): 200, ("lenet", 256): 60,
               ("resnet20", 64): 60, ("resnet20", 256): 16}

timed = bl.run_peak_rss

def field(text, key):
    return float(re.search(rf"{key}=([0-9.]+)", text).group(1))

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="mlp,lenet,resnet20")
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtrain", default=os.path.join(ROOT, "build/release/bin/dtrain"))
    ap.add_argument("--peers", default=os.path.join(os.path.dirname(ROOT), "shared/peers"))
    a = ap.parse_args()
    bl.require_torch()
    base_env = dict(os.environ, FMNIST_DIR="/usr/share/datasets/fashion-mnist")
    print(f"{'model':9} {'batch':>5} {'thr':>3} {'dtrain/s':>9} {'torch/s':>9} {'ratio':>6} "
          f"{'GFLOP/s':>8} {'%peak':>6} {'dtrainMB':>8} {'torchMB':>8} {'rss':>5}  faults/step")
    for model in a.models.split(","):
        for batch in map(int, a.batches.split(",")):
            for threads in map(int, a.threads.split(",")):
                steps = TORCH_STEPS.get((model, batch), 50) * threads
                d_sps, t_sps, d_rss, t_rss, gf, frac, faults = [], [], [], [], [], [], []
                for _ in range(a.reps):
                    out, _ = timed([a.dtrain, "bench", "train", "--model", model, "--batch", str(batch),
                                    "--threads", str(threads), "--steps", str(steps)], base_env)
                    # dtrain's own peak RSS (getrusage, as /usr/bin/time reads it) at the end of the
                    # training steps: the sgemm ceiling bench train measures after them allocates its
                    # matrices (about 23 MB) for the benchmark alone.
                    d_sps.append(field(out, "samples_per_s")); d_rss.append(field(out, "peak_rss_mb"))
                    gf.append(field(out, "gflops")); frac.append(field(out, "peak_fraction"))
                    faults.append(field(out, "minor_faults_per_step"))
                    env = dict(base_env, THREADS=str(threads))
                    out, rss = timed([os.path.join(a.peers, "torch_tuned.sh"), "torch_train.py", model, str(batch),
                                      str(steps)], env)
                    t_sps.append(field(out, "samples_per_s")); t_rss.append(rss)
                m = statistics.median
                print(f"{model:9} {batch:5d} {threads:3d} {m(d_sps):9.0f} {m(t_sps):9.0f} {m(d_sps)/m(t_sps):6.2f} "
                      f"{m(gf):8.1f} {100*m(frac):5.1f}% {m(d_rss):8.0f} {m(t_rss):8.0f} {m(d_rss)/m(t_rss):5.2f}  "
                      f"{m(faults):.1f}", flush=True)

if __name__ == "__main__":
    main()
