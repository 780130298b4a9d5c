#!/usr/bin/env python3
"""Speedup of f16 gradient communication with double buffering over plain f32, between two
emulated hosts on a bandwidth-limited link (ChainerMN's figure: 2.1x on a cluster without
InfiniBand).

Creates the two hosts of tools/netns_hosts.sh (network namespaces joined by a veth pair, each end
shaped with tc tbf to --rate), and for each model runs `dtrain bench train` with one rank per host
(batch 64 per rank, 1 thread) in these configurations, alternately REPS times:
  f32         plain
  f16         --comm-dtype f16
  db          --double-buffering
  f16+db      --comm-dtype f16 --double-buffering
then prints the medians: samples/s of each, the speedups over f32, and the per-phase times of
f32 and f16+db. Needs root; the namespaces are deleted at the end whatever happens.

usage: sudo bench/netns_fp16_db.py [--reps 3] [--rate 1gbit] [--models mlp,lenet,resnet20]
"""
import argparse, collections, os, subprocess, sys

import benchlib as bl

STEPS = {"mlp": 200, "lenet": 40, "resnet20": 30}
CONFIGS = {"f32": [], "f16": ["--comm-dtype", "f16"], "db": ["--double-buffering"],
           "f16+db": ["--comm-dtype", "f16", "--double-buffering"]}
PHASES = ("forward_ms", "backward_ms", "comm_ms", "update_ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.add_common_args(ap)
    ap.add_argument("--rate", default="1gbit", help="tc tbf rate of the link ('' for none)")
    ap.add_argument("--models", default="mlp,lenet,resnet20")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps-scale", type=float, default=1.0)
    ap.add_argument("--dtrain-args", default="", help="extra flags of every run (e.g. --allreduce ring)")
    a = ap.parse_args()
    hosts = [bl.NETNS_HOSTS]
    env = dict(os.environ, NETNS_NAME=f"dtb{os.getpid()}")
    check = subprocess.run(hosts + ["check"], env=env, capture_output=True, text=True)
    if check.returncode != 0:
        sys.exit(check.stderr.strip())
    waited = 0.0
    bl.header(f"f16 + double buffering vs f32 between 2 network namespaces, link {a.rate or 'unshaped'}, "
              f"batch {a.batch} per rank, 1 thread, medians of {a.reps} interleaved runs")
    bl.run(hosts + ["up"] + (["--rate", a.rate] if a.rate else []), env=env)
    try:
        print(f"{'model':9}" + "".join(f"{c + '/s':>10}" for c in CONFIGS) +
              "".join(f"{'x ' + c:>9}" for c in list(CONFIGS)[1:]) + "  ms/step f32 fwd/bwd/comm/upd -> f16+db")
        for model in a.models.split(","):
            steps = max(1, int(STEPS.get(model, 50) * a.steps_scale))
            r = collections.defaultdict(list)
            for _ in range(a.reps):
                waited += bl.wait_quiet(a.quiet, a.quiet_max)
                for name, flags in CONFIGS.items():
                    out = bl.run(hosts + ["mpirun", "-np", "2", "--host", "10.78.0.1:1,10.78.0.2:1", a.dtrain, "bench",
                                          "train", "--model", model, "--batch", str(a.batch), "--threads", "1",
                                          "--steps", str(steps), *flags, *a.dtrain_args.split()], env=env)
                    f = bl.fields(out)
                    r[name].append(f["samples_per_s"])
                    for k in PHASES:
                        r[name + k].append(f[k])
            m = {k: bl.median(v) for k, v in r.items()}
            ph = lambda c: "/".join(f"{m[c + k]:.1f}" for k in PHASES)
            print(f"{model:9}" + "".join(f"{m[c]:10.0f}" for c in CONFIGS) +
                  "".join(f"{m[c] / m['f32']:9.2f}" for c in list(CONFIGS)[1:]) + f"  {ph('f32')} -> {ph('f16+db')}",
                  flush=True)
    finally:
        subprocess.run(hosts + ["down"], env=env)
    if a.quiet:
        print(f"# waited {waited:.0f} s in all for moments with at most {a.quiet} runnable threads")
    bl.footer()


if __name__ == "__main__":
    main()
