#!/usr/bin/env python3
"""A spec-sheet GPU profile's prediction against a measured GPU.

dtrain's GPU profiles (profiles/devices/*.json) come from datasheets with fixed efficiency
factors (docs/perfmodel.md, Where the spec-sheet numbers come from). This checks them against a
real card, in two steps, since the GPU machine has PyTorch but not dtrain's build:

  measure  (on the GPU machine) ResNet-50 training steps in PyTorch on the CUDA device, in f32
           with TF32 off (the profiles price f32 on CUDA cores, as dtrain computes), synthetic
           224x224 images, momentum SGD, at each batch: the median over timed steps after warm-up.
           Also the kernels a step launches and the time they keep the GPU busy (PyTorch's
           profiler), and the ceilings the profile's factors are fractions of: f32 SGEMM (8192^3,
           TF32 off) and a device-to-device copy. Prints JSON.
  compare  (here) `dtrain predict --model resnet50 --workers 1` on the profile for each measured
           batch; prints predicted, measured and the error.

usage: bench/gpu_spec_check.py measure [--batches 32,64,128,256] [--steps 30] > measured.json
       bench/gpu_spec_check.py compare measured.json [--profile h100] [--dtrain build/release/bin/dtrain]
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cuda_seconds(torch, fn, reps):
    """Median seconds of fn() over reps calls, each bracketed by CUDA events."""
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def kernel_seconds(torch, fn, reps):
    """Kernels per call of fn() and the seconds they keep the GPU busy (the sum of their durations,
    from PyTorch's profiler): what a step costs without the gaps between kernels."""
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy_us = sum(e.time_range.elapsed_us() for e in events)
    return len(events) // reps, busy_us / reps / 1e6


def measure(a):
    try:
        import torch, torchvision
    except ImportError as e:
        sys.exit(f"measure needs PyTorch and torchvision with CUDA ({e}); run it on the GPU machine")
    if not torch.cuda.is_available():
        sys.exit("measure needs a CUDA device; torch.cuda.is_available() is False")
    # f32 on CUDA cores, as the profiles price it: no TF32 tensor-core paths in cuDNN or cuBLAS.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest algorithm per shape, as frameworks do
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "steps": a.steps, "batches": {}}

    n = 8192
    x = torch.randn(n, n, device=dev)
    y = torch.randn(n, n, device=dev)
    for _ in range(3):
        x @ y
    out["sgemm_tflops"] = 2 * n**3 / cuda_seconds(torch, lambda: x @ y, 10) / 1e12
    del x, y
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    # Bytes read plus bytes written, as the profile's memory rate counts a copy.
    out["copy_gbps"] = 2 * src.numel() / cuda_seconds(torch, lambda: dst.copy_(src), 10) / 1e9
    del src, dst

    for batch in map(int, a.batches.split(",")):
        model = torchvision.models.resnet50().to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        images = torch.randn(batch, 3, 224, 224, device=dev)
        labels = torch.randint(0, 1000, (batch,), device=dev)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(model(images), labels).backward()
            opt.step()

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        forward = cuda_seconds(torch, lambda: model(images), a.steps)
        seconds = cuda_seconds(torch, step, a.steps)
        kernels, busy = kernel_seconds(torch, step, 5)
        out["batches"][str(batch)] = {"step_s": seconds, "forward_s": forward, "samples_per_s": batch / seconds,
                                      "kernels_per_step": kernels, "kernel_s": busy}
        print(f"batch {batch}: {seconds * 1e3:.1f} ms a step, forward {forward * 1e3:.1f} ms, {kernels} kernels "
              f"busy {busy * 1e3:.1f} ms", file=sys.stderr)
        del model, opt, images, labels
        torch.cuda.empty_cache()
    json.dump(out, sys.stdout, indent=1)
    print()


def compare(a):
    how = "give the JSON that `bench/gpu_spec_check.py measure` printed on the GPU machine"
    try:
        with open(a.measured) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"cannot read the measurements in {a.measured} ({e}): {how}")
    missing = [k for k in ("device", "torch", "cudnn", "batches", "sgemm_tflops", "copy_gbps")
               if not isinstance(m, dict) or k not in m]
    if missing:
        sys.exit(f"{a.measured} lacks {', '.join(missing)}: {how}")
    if not os.path.exists(a.dtrain):
        sys.exit(f"no dtrain binary at {a.dtrain}: build it (cmake --preset release && cmake --build build/release) "
                 f"or pass --dtrain PATH")
    print(f"# {m['device']}, PyTorch {m['torch']}, cuDNN {m['cudnn']}: f32 SGEMM {m['sgemm_tflops']:.1f} TFLOP/s, "
          f"device copy {m['copy_gbps']:.0f} GB/s (read + write)")
    print(f"# dtrain predict --model resnet50 --workers 1 --profile {a.profile}")
    print(f"{'batch':>5} {'predicted_ms':>12} {'measured_ms':>11} {'error':>7}")
    errors = []
    for batch, row in sorted(m["batches"].items(), key=lambda kv: int(kv[0])):
        p = subprocess.run([a.dtrain, "predict", "--model", "resnet50", "--dataset", "imagenet", "--workers", "1",
                            "--batch-per-worker", batch, "--profile", a.profile, "--json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"dtrain predict failed: {p.stderr.strip()}")
        predicted = json.loads(p.stdout)["runs"][0]["step_s"]
        error = predicted / row["step_s"] - 1
        errors.append(abs(error))
        print(f"{batch:>5} {predicted * 1e3:12.1f} {row['step_s'] * 1e3:11.1f} {error * 100:+6.1f}%")
    print(f"max_abs_error={max(errors) * 100:.1f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    me = sub.add_parser("measure")
    me.add_argument("--batches", default="32,64,128,256")
    me.add_argument("--steps", type=int, default=30)
    co = sub.add_parser("compare")
    co.add_argument("measured")
    co.add_argument("--profile", default="h100")
    co.add_argument("--dtrain", default=os.path.join(ROOT, "build/release/bin/dtrain"))
    a = ap.parse_args()
    measure(a) if a.cmd == "measure" else compare(a)


if __name__ == "__main__":
    main()
