#!/usr/bin/env python3
"""Training speed in bf16 against f32, side by side: `dtrain bench train --precision bf16` and
`--precision f32` interleaved, REPS times each, for every model, batch and thread count; the
table gives the median step of each, the ratio f32 / bf16 and both peak RSS. Beside them, the
peer: PyTorch 1.13 with CPU autocast in bf16 (shared/peers/torch_train.py with PRECISION=bf16
under torch_tuned.sh, the same model, batch and threads), its step, dtrain's speed-up over it
and its peak RSS (--no-torch leaves it out).

bf16 here: the convolutions' and linear layers' inputs and weights in bf16, their sums and outputs, the master
weights and every other layer in f32 (tensor/kernels/cpu/compute_precision.h).

usage: bench/precision_speed.py [--reps 3] [--models mlp,lenet,resnet20] [--batches 64,256] [--threads 1,2]
                                [--no-torch] [--peers ../shared/peers]
Targets (issue 61): f32 / bf16 >= 1.6 on lenet and resnet20; torch bf16 / dtrain bf16 >= 1.3.
"""
import argparse
import os

import benchlib as bl

STEPS = {"mlp": 200, "lenet": 30, "resnet20": 10}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.add_common_args(p)
    p.add_argument("--models", default="mlp,lenet,resnet20")
    p.add_argument("--batches", default="64,256")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--no-torch", action="store_true", help="measure dtrain alone")
    a = p.parse_args()
    if not a.no_torch:
        bl.require_torch("--no-torch")
    peer_env = dict(os.environ, FMNIST_DIR="/usr/share/datasets/fashion-mnist", PRECISION="bf16")
    rows = [(m, int(b), int(t)) for m in a.models.split(",") for b in a.batches.split(",")
            for t in a.threads.split(",")]
    bl.header("bf16 against f32: dtrain bench train --precision")
    measured = {(r, prec): [] for r in rows for prec in ("f32", "bf16")}
    rss = {}
    for _ in range(a.reps):
        for m, b, t in rows:
            for prec in ("f32", "bf16"):
                bl.wait_quiet(a.quiet, a.quiet_max)
                steps = max(3, STEPS[m] * 64 // b)
                f = bl.fields(bl.run([a.dtrain, "bench", "train", "--model", m, "--batch", str(b), "--threads", str(t),
                                      "--steps", str(steps), "--precision", prec]))
                measured[((m, b, t), prec)].append(f["step_ms"])
                rss[((m, b, t), prec)] = f["peak_rss_mb"]
            if not a.no_torch:
                bl.wait_quiet(a.quiet, a.quiet_max)
                out, peak = bl.run_peak_rss([os.path.join(a.peers, "torch_tuned.sh"), "torch_train.py", m, str(b),
                                             str(max(3, STEPS[m] * 64 // b))], dict(peer_env, THREADS=str(t)))
                measured.setdefault(((m, b, t), "torch"), []).append(
                    1e3 * b / bl.fields(out, "torch")["samples_per_s"])
                rss[((m, b, t), "torch")] = peak
    peer = "" if a.no_torch else " torch bf16 ms | torch / dtrain bf16 | torch RSS MiB |"
    print("| model | batch | threads | f32 ms | bf16 ms | f32 / bf16 | peak RSS f32 / bf16 MiB |" + peer)
    print("| --- | --- | --- | --- | --- | --- | --- |" + ("" if a.no_torch else " --- | --- | --- |"))
    for r in rows:
        f32, bf16 = bl.median(measured[(r, "f32")]), bl.median(measured[(r, "bf16")])
        line = (f"| {r[0]} | {r[1]} | {r[2]} | {f32:.2f} | {bf16:.2f} | {f32 / bf16:.2f}x | "
                f"{rss[(r, 'f32')]:.0f} / {rss[(r, 'bf16')]:.0f} |")
        if not a.no_torch:
            torch = bl.median(measured[(r, "torch")])
            line += f" {torch:.2f} | {torch / bf16:.2f}x | {rss[(r, 'torch')]:.0f} |"
        print(line, flush=True)
    bl.footer()


if __name__ == "__main__":
    main()
