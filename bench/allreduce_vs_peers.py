#!/usr/bin/env python3
"""dtrain's allreduce algorithms vs Open MPI's MPI_Allreduce and Gloo, 2 processes on one machine.

Runs `mpirun -np 2 dtrain bench allreduce` (every dtrain algorithm and MPI_Allreduce in the same
run, interleaved) and shared/peers/torch_allreduce.py 2 (Gloo through torch.distributed, under
torch_tuned.sh: glibc malloc tunables, the fair peer), alternately, REPS times each, and prints per
size the medians: busbw of every dtrain algorithm, of MPI_Allreduce and of Gloo, and the ratios of
dtrain's best algorithm to both. busbw = algbw * 2(p-1)/p (= algbw at p=2).

usage: bench/allreduce_vs_peers.py [--reps 3] [--np 2] [--dtype f32] [--dtrain build/release/bin/dtrain]
Target (issue 4): best/MPI >= 1.0 at every size >= 64 KiB on np=2.
"""
import argparse, collections, os

import benchlib as bl


def dtrain_table(a):
    """{(algorithm, bytes): busbw} and {bytes: paired best/MPI ratio} from one `dtrain bench allreduce` run."""
    out = bl.run(bl.MPIRUN + ["-np", str(a.np), a.dtrain, "bench", "allreduce", "--dtype", a.dtype, "--repeats",
                              str(a.inner_repeats), "--max-bytes", a.max_bytes, "--chunk-kb", a.chunk_kb])
    table, paired = {}, {}
    several = "," in a.chunk_kb
    for line in out.splitlines():
        parts = line.split()  # bytes algorithm chunk_kb time_us algbw busbw iters
        if len(parts) == 7 and parts[0].isdigit():
            name = f"{parts[1]}@{parts[2]}" if several and parts[1] not in ("mpi", "shm") else parts[1]
            table[(name, int(parts[0]))] = float(parts[5])
        if line.startswith("best ") and "ratio=" in line:
            f = bl.fields(line, "best")
            paired[int(f["bytes"])] = f["ratio"]
    return table, paired


def gloo_table(a):
    """{bytes: busbw} from one torch_allreduce.py run (f32 only)."""
    script = os.path.join(a.peers, "torch_tuned.sh")
    out = bl.run([script, "torch_allreduce.py", str(a.np), str(bl_size(a.max_bytes))], env=dict(os.environ, THREADS="1"))
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].isdigit():
            table[int(parts[0])] = float(parts[3])
    return table


def bl_size(text):
    units = {"K": 10, "M": 20, "G": 30}
    return int(text[:-1]) << units[text[-1]] if text[-1] in units else int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.add_common_args(ap)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--dtype", default="f32", help="dtrain's wire type (Gloo always runs f32)")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--inner-repeats", type=int, default=5, help="--repeats of each dtrain bench run")
    ap.add_argument("--chunk-kb", default="256", help="dtrain's pipeline chunk(s), KiB (a list: each is a column)")
    ap.add_argument("--no-gloo", action="store_true")
    a = ap.parse_args()
    if not a.no_gloo:
        bl.require_torch("--no-gloo")
    waited = 0.0
    bl.header(f"allreduce busbw (GB/s), np={a.np}, dtype={a.dtype}, medians of {a.reps} interleaved runs "
              f"(each dtrain run itself the median of {a.inner_repeats} interleaved rounds)")
    runs, gloo = collections.defaultdict(list), collections.defaultdict(list)
    ratios = collections.defaultdict(list)
    for _ in range(a.reps):
        waited += bl.wait_quiet(a.quiet, a.quiet_max)
        table, paired = dtrain_table(a)
        for key, v in table.items():
            runs[key].append(v)
        for b, r in paired.items():
            ratios[b].append(r)
        if not a.no_gloo:
            for key, v in gloo_table(a).items():
                gloo[key].append(v)
    busbw = {key: bl.median(v) for key, v in runs.items()}
    algorithms = sorted({k[0] for k in busbw if k[0] != "mpi"},
                        key=lambda n: (["ring", "tree", "butterfly", "onetoall", "shm"].index(n.split("@")[0]), n))
    sizes = sorted({k[1] for k in busbw})
    w = max(10, max(len(x) for x in algorithms) + 1)
    cols = "".join(f"{x:>{w}}" for x in algorithms)
    print(f"{'size':>9}{cols}{'MPI':>10}{'Gloo':>10}  {'best':>{w}} {'best/MPI':>8} {'best/Gloo':>9}")
    misses = []
    for b in sizes:
        own = {x: busbw[(x, b)] for x in algorithms if (x, b) in busbw}
        best = max(own, key=own.get)
        mpi = busbw.get(("mpi", b))
        g = bl.median(gloo[b]) if gloo.get(b) else None
        r_mpi = bl.median(ratios[b]) if ratios.get(b) else float("nan")
        r_gloo = own[best] / g if g else float("nan")
        if b >= 64 << 10 and mpi and r_mpi < 1.0:
            misses.append(bl.size_label(b))
        print(f"{bl.size_label(b):>9}" + "".join(f"{own.get(x, float('nan')):{w}.3f}" for x in algorithms) +
              f"{mpi if mpi else float('nan'):10.3f}{g if g else float('nan'):10.3f}  {best:>{w}} {r_mpi:8.2f} "
              f"{r_gloo:9.1f}", flush=True)
    print("# target best/MPI >= 1.0 at every size >= 64 KiB: " + ("met" if not misses else "missed at " + ", ".join(misses)))
    if a.quiet:
        print(f"# waited {waited:.0f} s in all for moments with at most {a.quiet} runnable threads")
    bl.footer()


if __name__ == "__main__":
    main()
