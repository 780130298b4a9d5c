#!/usr/bin/env python3
"""Validate dtrain's performance model on this machine: calibrate, then measure and predict a grid.

For every layout (one process; 2 and 4 ranks on this host, 4 oversubscribing 2 cores; and two
network namespaces joined by a tbf-limited veth link, one rank in each, at each --rates value)
the script runs `dtrain calibrate` under that very layout, then for every row of the grid (model
W1 mlp, W2 lenet, W3 resnet20; allreduce ring, tree, butterfly, onetoall, mpi; f32 or f16 on the
wire; with or without double buffering) it measures the time per step with `dtrain bench train`
(under mpirun) and predicts it with `dtrain predict --profile <the calibrated profile> --json`.
Every constant comes from the calibration; nothing is fitted to the measured steps.

The machine is shared and noisy, so the whole grid is repeated --reps times, each repetition with
its own calibrations (a profile is used only for the rows measured right after it); each row
reports the median prediction and the median measurement. Prints every row and then the median
and maximum absolute percentage error (targets: median <= 10%, maximum <= 25%).

Grids: --quick (about 30 rows: every factor level at least once), the default (every algorithm
for every model and layout in f32, plus f16 and double buffering for ring and butterfly), --full
(the whole cross product). The network namespaces need root and iproute2 (tc tbf); --no-netns
leaves them out.

  bench/validate_model.py --dtrain build/release/bin/dtrain --quick
  bench/validate_model.py --reps 3 --json results.json
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = ["mlp", "lenet", "resnet20"]
ALGORITHMS = ["ring", "tree", "butterfly", "onetoall", "mpi"]
DATASET = {"mlp": "fashion-mnist", "lenet": "fashion-mnist", "resnet20": "cifar10"}
BATCH = 64
NS = ("dtcal-a", "dtcal-b")
VETH = ("dtcal-va", "dtcal-vb")
SUBNET = "10.231.77"
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, timeout=900, check=True):
    env = dict(os.environ, **MPI_ENV)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


class Layout:
    """How ranks are started: one process, mpirun on this host, or two network namespaces."""

    def __init__(self, name, ranks, rate=None):
        self.name, self.ranks, self.rate = name, ranks, rate
        self.agent = None

    def prefix(self):
        if self.ranks == 1:
            return []
        base = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(self.ranks)]
        if self.rate is None:
            return base
        hosts = f"{SUBNET}.1:{self.ranks // 2},{SUBNET}.2:{self.ranks - self.ranks // 2}"
        return ["ip", "netns", "exec", NS[0]] + base + [
            "--host", hosts, "--mca", "plm_rsh_agent", self.agent, "--mca", "btl", "self,tcp",
            "--mca", "btl_tcp_if_include", f"{SUBNET}.0/24", "--mca", "oob_tcp_if_include", f"{SUBNET}.0/24"]

    def __enter__(self):
        if self.rate is None:
            return self
        self.tmp = tempfile.mkdtemp(prefix="dtcal-")
        self.agent = os.path.join(self.tmp, "netns-rsh")
        with open(self.agent, "w") as f:
            # Open MPI calls AGENT [options] HOST COMMAND...: run the command in that host's namespace.
            f.write("#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in -*) shift;; *) break;; esac; done\n"
                    f"host=$1; shift\ncase \"$host\" in {SUBNET}.1) ns={NS[0]};; {SUBNET}.2) ns={NS[1]};;\n"
                    "  *) echo \"netns-rsh: unknown host $host\" >&2; exit 1;; esac\n"
                    "exec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n")
        os.chmod(self.agent, 0o755)
        self._teardown()
        for ns in NS:
            run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", VETH[0], "netns", NS[0], "type", "veth", "peer", "name", VETH[1], "netns", NS[1]])
        for i in range(2):
            run(["ip", "-n", NS[i], "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", VETH[i]])
            run(["ip", "-n", NS[i], "link", "set", "lo", "up"])
            run(["ip", "-n", NS[i], "link", "set", VETH[i], "up"])
            # Both directions shaped: a token bucket of 64 KiB at the rate, as a switch port would.
            run(["ip", "netns", "exec", NS[i], "tc", "qdisc", "add", "dev", VETH[i], "root", "tbf", "rate", self.rate,
                 "burst", "64kb", "latency", "10ms"])
        return self

    def _teardown(self):
        for ns in NS:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)  # also removes its veth end

    def __exit__(self, *exc):
        if self.rate is not None:
            self._teardown()
            shutil.rmtree(self.tmp, ignore_errors=True)


def calibrate(dtrain, layout, path):
    out = run(layout.prefix() + [dtrain, "calibrate", "--threads", "1", "--batch", str(BATCH), "-o", path])
    return out


def predict(dtrain, profile, row):
    cmd = [dtrain, "predict", "--model", row["model"], "--dataset", DATASET[row["model"]], "--workers",
           str(row["ranks"]), "--batch-per-worker", str(BATCH), "--profile", profile, "--epochs", "1", "--json"]
    if row["ranks"] > 1:
        cmd += ["--allreduce", row["algorithm"], "--comm-dtype", row["dtype"]]
        if row["db"]:
            cmd.append("--double-buffering")
    r = json.loads(run(cmd))["runs"][-1]
    return r["step_s"], r


def measure(dtrain, layout, row, predicted, seconds):
    steps = max(5, min(400, round(seconds / max(predicted, 1e-4))))
    cmd = layout.prefix() + [dtrain, "bench", "train", "--model", row["model"], "--batch", str(BATCH), "--threads", "1",
                             "--steps", str(steps), "--warmup", str(max(3, steps // 10))]
    if row["ranks"] > 1:
        cmd += ["--allreduce", row["algorithm"], "--comm-dtype", row["dtype"]]
        if row["db"]:
            cmd.append("--double-buffering")
    out = run(cmd)
    fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
    return float(fields["step_ms"]) / 1e3, fields


def grid(kind, rates, netns):
    layouts = [Layout("1 process", 1), Layout("2 ranks, 1 host", 2), Layout("4 ranks, 1 host (2 cores)", 4)]
    if netns:
        layouts += [Layout(f"2 hosts, {r} link", 2, r) for r in rates]
    rows = {}
    for lay in layouts:
        rs = []
        if lay.ranks == 1:
            rs = [dict(model=m, algorithm="-", dtype="f32", db=False) for m in MODELS]
        elif kind == "full":
            rs = [dict(model=m, algorithm=a, dtype=d, db=db) for m in MODELS for a in ALGORITHMS
                  for d in ("f32", "f16") for db in (False, True)]
        elif kind == "quick":
            # Every level of every factor at least once per layout, W1-W3 each.
            rs = [dict(model="mlp", algorithm="ring", dtype="f32", db=False),
                  dict(model="mlp", algorithm="butterfly", dtype="f16", db=False),
                  dict(model="lenet", algorithm="tree", dtype="f32", db=True),
                  dict(model="lenet", algorithm="onetoall", dtype="f32", db=False),
                  dict(model="resnet20", algorithm="mpi", dtype="f32", db=False),
                  dict(model="resnet20", algorithm="ring", dtype="f16", db=True)]
        else:
            rs = [dict(model=m, algorithm=a, dtype="f32", db=False) for m in MODELS for a in ALGORITHMS]
            rs += [dict(model=m, algorithm=a, dtype=d, db=db) for m in MODELS for a in ("ring", "butterfly")
                   for d, db in (("f16", False), ("f32", True), ("f16", True))]
        for r in rs:
            r["ranks"] = lay.ranks
        rows[lay] = rs
    return rows


def label(lay, r):
    if lay.ranks == 1:
        return f"{lay.name:<28} {r['model']:<9}"
    return f"{lay.name:<28} {r['model']:<9} {r['algorithm']:<9} {r['dtype']} {'db' if r['db'] else '  '}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtrain", default="build/release/bin/dtrain", help="the dtrain binary")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="a small grid (every factor level once per layout)")
    g.add_argument("--full", action="store_true", help="the whole cross product")
    ap.add_argument("--reps", type=int, default=2, help="repetitions of the grid, each with fresh calibrations")
    ap.add_argument("--rates", default="100mbit,1gbit", help="tbf rates of the emulated link between two hosts")
    ap.add_argument("--no-netns", action="store_true", help="leave out the two-host layouts")
    ap.add_argument("--seconds", type=float, default=2.0, help="measured seconds per row (steps chosen to fit)")
    ap.add_argument("--json", help="write every row and repetition here")
    args = ap.parse_args()
    dtrain = os.path.abspath(args.dtrain)
    if not os.access(dtrain, os.X_OK):
        sys.exit(f"validate_model.py: no dtrain binary at {dtrain}; build it and pass --dtrain PATH")
    netns = not args.no_netns
    if netns and (os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None):
        log("network namespaces need root, ip and tc: leaving the two-host layouts out (--no-netns)")
        netns = False
    kind = "quick" if args.quick else "full" if args.full else "default"
    rows = grid(kind, args.rates.split(","), netns)
    results = {(lay.name, label(lay, r)): dict(row=r, layout=lay.name, label=label(lay, r), pred=[], meas=[])
               for lay, rs in rows.items() for r in rs}
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="dtcal-profiles-")
    try:
        for rep in range(args.reps):
            for lay, rs in rows.items():
                with lay:
                    profile = os.path.join(tmp, f"rep{rep}-{lay.ranks}-{lay.rate or 'local'}.json")
                    t0 = time.time()
                    calibrate(dtrain, lay, profile)
                    log(f"[rep {rep + 1}/{args.reps}] {lay.name}: calibrated in {time.time() - t0:.0f} s, "
                        f"{len(rs)} rows")
                    for r in rs:
                        p, _ = predict(dtrain, profile, r)
                        m, _ = measure(dtrain, lay, r, p, args.seconds)
                        res = results[(lay.name, label(lay, r))]
                        res["pred"].append(p)
                        res["meas"].append(m)
                        log(f"  {label(lay, r)}  predicted {p * 1e3:9.2f} ms  measured {m * 1e3:9.2f} ms  "
                            f"{100 * (p - m) / m:+6.1f}%")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    errors = []
    print(f"{'layout':<28} {'model':<9} {'exchange':<15} {'predicted':>11} {'measured':>11} {'error':>8}")
    for res in results.values():
        p, m = statistics.median(res["pred"]), statistics.median(res["meas"])
        res["predicted_s"], res["measured_s"], res["error"] = p, m, (p - m) / m
        errors.append(abs(res["error"]))
        print(f"{res['label']:<55} {p * 1e3:8.2f} ms {m * 1e3:8.2f} ms {100 * res['error']:+7.1f}%")
    med, worst = statistics.median(errors), max(errors)
    print(f"\n{len(errors)} rows, {args.reps} repetition(s), {time.time() - start:.0f} s: median absolute error "
          f"{100 * med:.1f}% (target <= 10%), maximum {100 * worst:.1f}% (target <= 25%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": list(results.values()), "median_abs_error": med, "max_abs_error": worst}, f, indent=1)


if __name__ == "__main__":
    main()
