#!/usr/bin/env python3
"""Validate dtrain's performance model on this machine: calibrate, then measure and predict a grid.

For every layout (one process; 2 and 4 ranks on this host, 4 oversubscribing a 2-core machine is a
layout like any other; two emulated hosts of tools/netns_hosts.sh, network namespaces joined by a
veth link shaped with tc tbf, at each --rates value) the script runs `dtrain calibrate` under that
very layout (by default once per model, `--models M`: the compute rates of that model's own layer
shapes), then for every row of the grid (models W1 mlp, W2 lenet, W3 resnet20; allreduce ring,
tree, butterfly, onetoall, mpi, and shm where the ranks share one host; f32 or f16 on the wire; with or without double buffering) it
predicts the time per step with `dtrain predict --profile <that calibration> --json` and measures
it with `dtrain bench train` under the same layout. Parameter-server rows (--ps rules, --servers K
shards, with and without one worker persistently --slow-factor slower) run `dtrain train --mode ps`
for one epoch of about --seconds of steps and take the servers' global steps per second from the
log's "ps" record; the last K ranks of the layout serve, so across the emulated hosts with one rank
each the pushes and pulls cross the shaped link. Every constant comes from the calibration;
nothing is fitted to the measured steps (Paleo's authors fitted an efficiency per experiment).

Prints each row's predicted and measured time per step and the error, then the median and maximum
absolute percentage error (targets: median <= 10%, maximum <= 25%), the median and largest error of
each layout and model, and the rows over 25%, worst first.

The cache-line round trip between two cores (`dtrain bench cores`) is the machine state that
same-host transfers depend on; on a VM whose CPUs the hypervisor moves it switches between states
several times apart within seconds. The calibration records it in the profile and every measured
run records it at its start, its end and (on one host) three times between, the ranks pausing for
each sample; a run on one host any of whose round trips is more than 2x from the
profile's ran in another state than the one its constants were measured in (across the emulated
hosts the link's rate bounds the transfers, so those rows are not marked). Rows print both, and the
summary gives the errors over all rows and over the runs made in the calibrated state. On one host
(--per-state, the default) the script samples the round trip before each row and predicts it from
the layout's calibration made in that state, calibrating again the first time the layout meets a
state: the two states are two machines as far as same-host transfers go (and where the two virtual
CPUs share a cache their compute contends too: two independent lenet processes run 5-10% slower
each), and a prediction for one from the other's constants validates nothing. A row whose own run
changed state is still marked.

With --reps 2 or more a row's error is the median of its repetitions' errors, each prediction
against its own run (both made in the state that repetition met), and the summary also says how
well the measurement repeats itself: each repetition's measured time against the median of the
other repetitions of the same row (the same configuration, calibrated and measured again), the
error a perfect model of any one repetition would still show on the others. On a machine whose
speed moves under it, that is the floor of the errors above; so the summary also gives the errors
over the rows whose repetitions agree within 25% (max/min <= 1.25), the target's own tolerance.

Every factor is a flag, so a reduced grid is a matter of naming fewer levels:
  bench/validate_model.py                                   # the whole grid
  bench/validate_model.py --ranks 1,2 --models mlp --algorithms ring,mpi --dtypes f32 --db no \\
      --rates ''                                            # 4 rows, no emulated hosts
  bench/validate_model.py --ranks 4 --rates 1gbit --models lenet,resnet20 --algorithms '' \
      --dtypes f32 --db no                                  # the parameter-server rows only
  bench/validate_model.py --list                            # the rows and nothing else
--summary F prints the summaries of a grid saved with --json F again, measuring nothing.
--profiles DIR keeps the calibrations (each row of --json names its own), to see which constants
a row's prediction came from. A one-process layout has one row per model (there is nothing to exchange). The emulated hosts
need root and iproute2; --rates '' leaves them out. Each row runs `bench train` for about
--seconds (its step count from the prediction, within --min-steps..--max-steps).
"""
import argparse
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

import benchlib as bl

MODELS = ["mlp", "lenet", "resnet20"]
ALGORITHMS = ["ring", "tree", "butterfly", "onetoall", "mpi", "shm"]
DATASET = {"mlp": "fashion-mnist", "lenet": "fashion-mnist", "resnet20": "cifar10"}
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def listed(text):
    return [x for x in text.split(",") if x]


class Layout:
    """How ranks start: one process, mpirun on this host, or mpirun across the two emulated hosts
    (per_host ranks on each; `rate` shapes the link between them)."""

    def __init__(self, ranks, rate=None, per_host=1):
        self.ranks, self.rate, self.per_host = ranks, rate, per_host
        self.env = dict(os.environ, **MPI_ENV)
        if rate is not None:
            self.env["NETNS_NAME"] = f"dtv{os.getpid()}"
            self.name = f"2 hosts x {per_host}, {rate}"
        else:
            self.name = "1 process" if ranks == 1 else f"{ranks} ranks, 1 host"

    def prefix(self):
        if self.rate is not None:
            subnet = self.env.get("NETNS_SUBNET", "10.78.0")
            return [bl.NETNS_HOSTS, "mpirun", "-np", str(self.ranks), "--host",
                    f"{subnet}.1:{self.per_host},{subnet}.2:{self.per_host}"]
        return [] if self.ranks == 1 else bl.MPIRUN + ["-np", str(self.ranks)]

    def __enter__(self):
        if self.rate is not None:
            bl.run([bl.NETNS_HOSTS, "up", "--rate", self.rate], env=self.env)
        return self

    def __exit__(self, *exc):
        if self.rate is not None:
            subprocess.run([bl.NETNS_HOSTS, "down"], env=self.env)


def build_grid(a):
    layouts = [Layout(int(r)) for r in listed(a.ranks)]
    layouts += [Layout(2 * a.per_host, rate, a.per_host) for rate in listed(a.rates)]
    dbs = {"no": [False], "yes": [True], "both": [False, True]}[a.db]
    grid = []
    for lay in layouts:
        if lay.ranks == 1:
            rows = [dict(model=m, algorithm="-", dtype="f32", db=False, precision=a.precision)
                    for m in listed(a.models)]
        else:
            # shm needs every rank on one host: not across the emulated hosts.
            rows = [dict(model=m, algorithm=al, dtype=d, db=db, precision=a.precision) for m, al, d, db in
                    itertools.product(listed(a.models), listed(a.algorithms), listed(a.dtypes), dbs)
                    if al != "shm" or lay.rate is None]
            if a.precision == "f32":  # bf16 is priced and measured for data-parallel rows only
                rows += ps_rows(a, lay)
                rows += model_parallel_rows(a, lay)
        grid.append((lay, rows))
    return grid


def ps_rows(a, lay):
    """The parameter-server rows of a layout: every rule of --ps, every --servers K that leaves
    at least one worker (the last ranks are the servers, ps/protocol.h), with and without a
    persistent straggler (the last worker --slow-factor times slower; only where there are two
    workers or more)."""
    rows = []
    for m, sync, k, d, slow in itertools.product(listed(a.models), listed(a.ps), [int(k) for k in listed(a.servers)],
                                                 listed(a.ps_dtypes), listed(a.stragglers)):
        workers = lay.ranks - k
        if workers < 1 or (slow == "persistent" and workers < 2):
            continue
        rows.append(dict(model=m, algorithm="ps", sync=sync, servers=k, workers=workers, dtype=d, db=False,
                         straggler=slow))
    return rows


def model_parallel_rows(a, lay):
    """The model-parallel rows of a one-host layout: a 2-stage 1F1B pipeline at every
    --pipeline-micro-batches m on 2 ranks (one replica), and every layer split over all the
    layout's ranks (--tensor-parallel)."""
    if lay.rate is not None:
        return []
    rows = []
    if lay.ranks == 2:
        rows += [dict(model=m, algorithm="pipeline", micro=int(k), dtype="f32", db=False)
                 for m in listed(a.models) for k in listed(a.pipeline_micro_batches)]
    if a.tensor_parallel:
        rows += [dict(model=m, algorithm="tensor", dtype="f32", db=False) for m in listed(a.models)
                 if m != "resnet20"]  # its residual blocks stay whole: little to split
    return rows


def calibration_setting(a, lay, row):
    """(batch, T): what a row's calibration must measure its layers at: the batch they run at (a
    pipeline's micro-batch, the per-rank batch otherwise) and, for a tensor-parallel row, the
    shares of its split layers one of the layout's T ranks computes (`calibrate --tensor-parallel`)."""
    return a.batch // row.get("micro", 1), lay.ranks if row["algorithm"] == "tensor" else 1


def row_label(layout, ranks, r):
    if ranks == 1:
        return f"{layout:<22} {r['model']:<9}"
    if r["algorithm"] == "pipeline":
        return f"{layout:<22} {r['model']:<9} pipeline m={r['micro']}"
    if r["algorithm"] == "tensor":
        return f"{layout:<22} {r['model']:<9} tensor T={ranks}"
    if r["algorithm"] == "ps":
        slow = f"{r['straggler'][:4]}" if r["straggler"] != "none" else ""
        return f"{layout:<22} {r['model']:<9} ps {r['sync']} K={r['servers']} {r['dtype']} {slow}"
    return f"{layout:<22} {r['model']:<9} {r['algorithm']:<9} {r['dtype']} {'db' if r['db'] else '  '}"


def label(lay, r):
    return row_label(lay.name, lay.ranks, r)


def calibrate(a, lay, path, models, setting):
    batch, tensor = setting
    cmd = lay.prefix() + [a.dtrain, "calibrate", "--threads", "1", "--batch", str(batch), "--models",
                          ",".join(models), "--precision", a.precision, "-o", path]
    if tensor > 1:
        cmd += ["--tensor-parallel", str(tensor)]
    return bl.run(cmd, env=lay.env)


def ps_flags(a, row):
    """(dtrain train flags, dtrain predict flags) of a parameter-server row."""
    rule = ["--servers", str(row["servers"]), "--sync", row["sync"], "--comm-dtype", row["dtype"]]
    if row["sync"] == "ssp":
        rule += ["--staleness", str(a.staleness)]
    train, model = ["--mode", "ps"] + rule, ["--allreduce", "ps"] + rule
    if row["straggler"] == "persistent":
        train += ["--slow-rank", str(row["workers"] - 1), "--slow-factor", str(a.slow_factor)]
        model += ["--slow-mode", "persistent", "--slow-factor", str(a.slow_factor)]
    return train, model


def predict(a, profile, lay, row):
    if row["algorithm"] in ("pipeline", "tensor"):
        split = ["--pipeline", "2", "--micro-batches", str(row["micro"])] if row["algorithm"] == "pipeline" else \
            ["--tensor-parallel", str(lay.ranks)]
        cmd = [a.dtrain, "predict", "--model", row["model"], "--dataset", DATASET[row["model"]], "--batch-per-worker",
               str(a.batch), "--profile", profile, "--json"] + split
        return json.loads(bl.run(cmd))["step_s"]
    if row["algorithm"] == "ps":  # trained by `dtrain train` on its default dataset (measure_ps)
        cmd = [a.dtrain, "predict", "--model", row["model"], "--dataset", "fashion-mnist", "--workers",
               str(row["workers"]), "--batch-per-worker", str(a.batch), "--profile", profile, "--epochs", "1",
               "--json"] + ps_flags(a, row)[1]
        return json.loads(bl.run(cmd))["runs"][-1]["step_s"]
    cmd = [a.dtrain, "predict", "--model", row["model"], "--dataset", DATASET[row["model"]], "--workers",
           str(lay.ranks), "--batch-per-worker", str(a.batch), "--profile", profile, "--epochs", "1", "--json",
           "--precision", a.precision]
    if lay.ranks > 1:
        cmd += ["--allreduce", row["algorithm"], "--comm-dtype", row["dtype"], "--bucket-mb", str(a.bucket_mb)]
        if row["db"]:
            cmd.append("--double-buffering")
    return json.loads(bl.run(cmd))["runs"][-1]["step_s"]


def core_round_trip(profile):
    """The calibration's cache-line round trip in seconds (None where the profile has none)."""
    with open(profile) as f:
        q = json.load(f)["node"].get("core_round_trip")
    return q["value"] if q else None


def same_state(calibrated, run):
    """Whether every round trip of a run (seconds; 0 = not measured) is within 2x of the profile's."""
    if calibrated is None:
        return True
    return all(not (r > 2 * calibrated or calibrated > 2 * r) for r in run if r > 0)


def core_state_now(a):
    """The cache-line round trip between two cores now, in seconds (`dtrain bench cores`, 0.3 s);
    None where no sample could be taken (both CPUs busy the whole time, as while the ranks of the
    row before exit)."""
    for _ in range(3):
        f = bl.fields(bl.run([a.dtrain, "bench", "cores", "--seconds", "0.3"]), prefix="cores")
        if "median_ns" in f:
            return float(f["median_ns"]) * 1e-9
        time.sleep(0.5)
    return None


def measured_steps(a, predicted):
    """Steps to measure a row predicted at `predicted` seconds a step: about --seconds of them,
    within --min-steps..--max-steps."""
    return max(a.min_steps, min(a.max_steps, round(a.seconds / max(predicted, 1e-4))))


def measure_ps(a, lay, row, predicted):
    """A parameter-server row's time per global step (W worker gradients): the inverse of the
    servers' gradients per second over W while every worker still ran (the log's "ps" record,
    ps/run_stats.h), from one epoch of `dtrain train --mode ps` over about --seconds of steps
    (at least --ps-min-steps; the training set's 60000 samples at most). The cores' state is
    sampled before and after the run (train does not probe it between)."""
    steps = max(a.ps_min_steps, measured_steps(a, predicted))
    limit = min(60000, steps * row["workers"] * a.batch)
    before = core_state_now(a) if lay.rate is None else None
    with tempfile.TemporaryDirectory(prefix="dtrain-validate-ps-") as tmp:
        log = os.path.join(tmp, "log.jsonl")
        cmd = lay.prefix() + [a.dtrain, "train", "--model", row["model"], "--batch", str(a.batch), "--threads", "1",
                              "--epochs", "1", "--limit", str(limit), "--eval-limit", "64", "--progress", "none",
                              "--log", log] + ps_flags(a, row)[0]
        bl.run(cmd, env=lay.env)
        with open(log) as f:
            records = [r for r in map(json.loads, filter(str.strip, f)) if r.get("type") == "ps"]
    if not records or records[-1]["steps_per_second"] <= 0:
        sys.exit(f"{' '.join(cmd)}: the log has no parameter-server throughput")
    after = core_state_now(a) if lay.rate is None else None
    return 1.0 / records[-1]["steps_per_second"], [c for c in (before, after) if c]


def measure(a, lay, row, predicted):
    if row["algorithm"] == "ps":
        return measure_ps(a, lay, row, predicted)
    steps = measured_steps(a, predicted)
    cmd = lay.prefix() + [a.dtrain, "bench", "train", "--model", row["model"], "--batch", str(a.batch),
                          "--threads", "1", "--steps", str(steps), "--warmup", str(max(2, steps // 10)),
                          "--precision", a.precision]
    if row["algorithm"] == "pipeline":
        cmd += ["--pipeline", "2", "--micro-batches", str(row["micro"])]
    elif row["algorithm"] == "tensor":
        cmd += ["--tensor-parallel", str(lay.ranks)]
    elif lay.ranks > 1:
        cmd += ["--allreduce", row["algorithm"], "--comm-dtype", row["dtype"], "--bucket-mb", str(a.bucket_mb)]
        if row["db"]:
            cmd.append("--double-buffering")
    if lay.ranks > 1:
        if lay.rate is None:  # the state through the run, not only at its ends (a pause per sample)
            cmd += ["--probe-every", str(max(1, steps // 4))]
    f = bl.fields(bl.run(cmd, env=lay.env))
    samples = str(f.get("core_rt_samples_ns", f.get("core_rt_ns", "0,0")))
    core = [float(x) * 1e-9 for x in samples.split(",") if x not in ("", "-")]
    return f["step_ms"] / 1e3, core


def breakdown(results, target=0.25):
    """Prints the median and largest absolute error of each layout and model, then the rows over
    `target`, worst first: where the model misses, in the form docs/perfmodel.md tabulates it.
    Returns those rows."""
    groups = {}
    for r in results:
        groups.setdefault(r["layout"], {}).setdefault(r["model"], []).append(abs(r["error"]))
    models = list(dict.fromkeys(r["model"] for r in results))
    print("\nby layout and model: median / largest absolute error (rows)")
    print(f"{'layout':<22} " + " ".join(f"{m:<22}" for m in models))
    for layout, by_model in groups.items():
        cells = []
        for m in models:
            e = by_model.get(m)
            cells.append(f"{100 * bl.median(e):5.1f}% / {100 * max(e):5.1f}% ({len(e)})" if e else "-")
        print(f"{layout:<22} " + " ".join(f"{c:<22}" for c in cells))
    over = sorted((r for r in results if abs(r["error"]) > target), key=lambda r: -abs(r["error"]))
    print(f"{len(over)} rows over {100 * target:.0f}%" + (", worst first:" if over else ""))
    for r in over:
        print(f"  {row_label(r['layout'], r['ranks'], r):<54} {100 * r['error']:+7.1f}%")
    return over


def run_errors(pred, meas):
    """Each repetition's prediction against its own run: (predicted - measured) / measured. A row's
    error is the median of these. Each repetition calibrates, predicts and measures in the machine
    state it meets, so pairing the median prediction with the median run could compare a
    prediction for one state with a run made in another (a grid of 2026-11-27: mlp's tree f32 on
    2 ranks predicted 5.79, 3.14 and 5.28 ms for runs of 2.92, 3.06 and 4.33, +98%, +3% and +22%;
    the medians paired gave +72.5%)."""
    return [(p - m) / m for p, m in zip(pred, meas)]


def spans_more_than(meas, span=1.25):
    """Whether a row's measured times spread by more than `span` (max/min): 25%, the target's own
    tolerance, by default."""
    return max(meas) > span * min(meas)


def repeatability(results):
    """Each repetition's measured time against the median of the row's other repetitions: the
    relative differences over all rows, and the rows whose repetitions span more than 25%."""
    diffs, spread = [], []
    for res in results:
        m = res["meas"]
        if len(m) < 2:
            continue
        for i, x in enumerate(m):
            diffs.append(abs(bl.median(m[:i] + m[i + 1:]) - x) / x)
        if spans_more_than(m):
            spread.append(res)
    return diffs, spread


def repeatable(results, span=1.25):
    """The rows measured at least twice whose repetitions agree within `span` (max/min): where the
    measurement repeats itself within the target, the error is the model's, not the machine's."""
    return [r for r in results if len(r["meas"]) >= 2 and not spans_more_than(r["meas"], span)]


def subset_errors(rows):
    """The median and largest absolute error of `rows`, and of those whose repetitions agree within
    25%; None where there are no rows."""
    if not rows:
        return None
    errors = [abs(r["error"]) for r in rows]
    agreed = [abs(r["error"]) for r in repeatable(rows)]
    return {"rows": len(rows), "median_abs_error": bl.median(errors), "max_abs_error": max(errors),
            "repeatable": {"rows": len(agreed), "median_abs_error": bl.median(agreed),
                           "max_abs_error": max(agreed)} if agreed else None}


def summarize(results, json_path=None, elapsed=None):
    """Prints the medians of the repetitions, the median and maximum absolute error, the breakdown,
    the same over the runs in the calibrated state, the repeatability of the measurement and the
    errors over the rows that repeat; writes them all to `json_path` when given. `results`: the rows
    of a grid (as --json writes them: each with pred, meas, same_state and error)."""
    reps = max(len(r["meas"]) for r in results)
    if reps > 1:
        print(f"\nmedians of {reps} repetitions (the error: the median of the repetitions' errors):")
        for res in results:
            key = row_label(res["layout"], res["ranks"], res)
            print(f"{key:<54} {res['predicted_s'] * 1e3:8.2f} ms {res['measured_s'] * 1e3:8.2f} ms "
                  f"{100 * res['error']:+7.1f}%")
    errors = [abs(r["error"]) for r in results]
    med, worst = bl.median(errors), max(errors)
    took = f" in {elapsed:.0f} s" if elapsed is not None else ""
    print(f"\n{len(results)} rows{took}: median absolute error {100 * med:.1f}% "
          f"(target <= 10%), maximum {100 * worst:.1f}% (target <= 25%)")
    over = breakdown(results)
    # The same over the runs made in the calibrated machine state (rows with none left out).
    # (Grids saved before the state was recorded count every run as made in it.)
    states = [res.get("same_state") or [True] * len(res["meas"]) for res in results]
    steady = []
    for res, state in zip(results, states):
        kept = [(p, m) for p, m, ok in zip(res["pred"], res["meas"], state) if ok]
        if kept:
            steady.append(abs(bl.median(run_errors([k[0] for k in kept], [k[1] for k in kept]))))
    changed = sum(not ok for state in states for ok in state)
    if changed and steady:
        print(f"{len(steady)} rows over the runs in the calibrated state ({changed} run(s) of "
              f"{sum(len(state) for state in states)} left out): median absolute error "
              f"{100 * bl.median(steady):.1f}%, maximum {100 * max(steady):.1f}%")
    diffs, spread = repeatability(results)
    agreed = [abs(r["error"]) for r in repeatable(results)]
    if diffs:
        print(f"repeatability of the measurement: a repetition against the median of the other repetitions of "
              f"its row differs by {100 * bl.median(diffs):.1f}% in the median, {100 * max(diffs):.1f}% at most; "
              f"{len(spread)} rows' repetitions span more than 25% (max/min > 1.25), "
              f"{sum(r in spread for r in over)} of the {len(over)} rows over 25% error among them")
    if agreed:
        print(f"{len(agreed)} rows whose repetitions agree within 25% (max/min <= 1.25): median absolute error "
              f"{100 * bl.median(agreed):.1f}%, maximum {100 * max(agreed):.1f}%")
    subsets = {}
    for algorithm, name in (("ps", "parameter-server"), ("pipeline", "pipeline"), ("tensor", "tensor-parallel")):
        sub = subsets[algorithm] = subset_errors([r for r in results if r.get("algorithm") == algorithm])
        if sub:
            print(f"{sub['rows']} {name} rows: median absolute error {100 * sub['median_abs_error']:.1f}%, "
                  f"maximum {100 * sub['max_abs_error']:.1f}%" + (
                      f"; the {sub['repeatable']['rows']} whose repetitions agree within 25%: median "
                      f"{100 * sub['repeatable']['median_abs_error']:.1f}%, maximum "
                      f"{100 * sub['repeatable']['max_abs_error']:.1f}%" if sub["repeatable"] else ""))
    ps = subsets["ps"]
    bl.footer()
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"rows": results, "median_abs_error": med, "max_abs_error": worst,
                       "calibrated_state": {"rows": len(steady), "runs_left_out": changed,
                                            "median_abs_error": bl.median(steady) if steady else None,
                                            "max_abs_error": max(steady) if steady else None},
                       "repeatability": {"median": bl.median(diffs) if diffs else None,
                                         "max": max(diffs) if diffs else None,
                                         "rows_spanning_over_25pct": len(spread)},
                       "repeatable_rows": {"rows": len(agreed),
                                           "median_abs_error": bl.median(agreed) if agreed else None,
                                           "max_abs_error": max(agreed) if agreed else None},
                       "parameter_server_rows": ps, "pipeline_rows": subsets["pipeline"],
                       "tensor_parallel_rows": subsets["tensor"]}, f, indent=1)


def parse_args(argv=None):
    """The command line (sys.argv's when argv is None), its lists checked against what is valid."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtrain", default=bl.DEFAULT_DTRAIN, help="the dtrain binary")
    ap.add_argument("--ranks", default="1,2,4", help="ranks on this host, one layout each ('' for none)")
    ap.add_argument("--rates", default="100mbit,1gbit", help="tbf rates of the two-host layouts ('' for none)")
    ap.add_argument("--per-host", type=int, default=1, help="ranks per emulated host")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--dtypes", default="f32,f16")
    ap.add_argument("--ps", default="bsp,ssp,asp",
                    help="parameter-server rules, one row each per --servers and --stragglers ('' for none)")
    ap.add_argument("--servers", default="1,2", help="parameter-server shards K (W = ranks - K workers)")
    ap.add_argument("--staleness", type=int, default=2, help="the ssp rows' bound S")
    ap.add_argument("--stragglers", default="none,persistent",
                    help="parameter-server rows without and with one worker persistently --slow-factor slower")
    ap.add_argument("--slow-factor", type=float, default=2.0)
    ap.add_argument("--ps-dtypes", default="f32", help="the parameter-server rows' push types")
    ap.add_argument("--ps-min-steps", type=int, default=40,
                    help="fewest global steps a parameter-server row measures (its rules settle over a few clocks)")
    ap.add_argument("--pipeline-micro-batches", default="1,2,4,8",
                    help="on 2 ranks on one host: a 2-stage pipeline row per micro-batch count, its prediction from a "
                         "calibration at the micro-batch's size ('' for none)")
    ap.add_argument("--tensor-parallel", action=argparse.BooleanOptionalAction, default=True,
                    help="on one host with 2 ranks or more: a row per model (mlp, lenet) with its layers split over "
                         "all the ranks (tensorparallel/plan.h)")
    ap.add_argument("--db", choices=["no", "yes", "both"], default="both", help="double buffering")
    ap.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32",
                    help="the convolutions' and linear layers' arithmetic: calibrated (dtrain calibrate --precision), "
                         "predicted and measured in it; bf16 grids have the data-parallel rows only")
    ap.add_argument("--bucket-mb", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=2.0, help="measured seconds per row, roughly")
    # A step's time drifts over a few steps (ResNet-20 on 4 ranks of the 2 cores, 195 steps of 489-764 ms: the
    # means of 5 consecutive steps spread over 545-671 ms, of 12 over 579-659, of 25 over 594-640), so the
    # slowest rows measure at least 12 steps.
    ap.add_argument("--min-steps", type=int, default=12,
                    help="fewest measured steps per row (a slow row's mean of a few steps moves with the moment)")
    # Fast steps drift too, over seconds rather than steps (mlp on 4 ranks of the 2 cores, ring f32: five runs of 400
    # steps took 4.04-5.26 ms a step, four of 2000 steps 4.20-4.49), so the cap leaves every row about --seconds.
    ap.add_argument("--max-steps", type=int, default=2000,
                    help="most measured steps per row (200 until 2026-12-01: 0.2-0.9 s of mlp's steps)")
    ap.add_argument("--reps", type=int, default=1,
                    help="repetitions of the grid, each with fresh calibrations; a row's error is the median of its "
                         "repetitions' errors")
    ap.add_argument("--quiet", type=int, default=0,
                    help="before each calibration and row, wait until at most this many threads are runnable")
    ap.add_argument("--shared-calibration", action="store_true",
                    help="one calibration per layout over all models (default: one per model and layout)")
    ap.add_argument("--per-state", action=argparse.BooleanOptionalAction, default=True,
                    help="on one host, predict each row from a calibration made in the cores' state at its start "
                         "(calibrating again the first time a layout meets a state); --no-per-state: the layout's "
                         "first calibration for every row")
    ap.add_argument("--list", action="store_true", help="print the rows of the grid and stop")
    ap.add_argument("--summary", metavar="JSON",
                    help="print the summaries of a grid --json wrote (with the ones added since), measuring nothing")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--profiles", help="keep the calibrations in this directory (default: a temporary one, removed); "
                                       "each row of --json names the ones its repetitions were predicted from")
    a = ap.parse_args(argv)
    a.dtrain = os.path.abspath(a.dtrain)
    for flag, given, valid in (("--models", a.models, MODELS), ("--algorithms", a.algorithms, ALGORITHMS),
                               ("--dtypes", a.dtypes, ["f32", "f16", "bf16"]), ("--ps", a.ps, ["bsp", "ssp", "asp"]),
                               ("--ps-dtypes", a.ps_dtypes, ["f32", "f16", "bf16"]),
                               ("--stragglers", a.stragglers, ["none", "persistent"])):
        bad = [x for x in listed(given) if x not in valid]
        if bad:
            ap.error(f"{flag}: unknown {', '.join(bad)}; valid: {', '.join(valid)}")
    return a


def main():
    a = parse_args()
    if a.summary:
        try:
            with open(a.summary) as f:
                rows = json.load(f)["rows"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"validate_model.py: --summary {a.summary}: not a grid that --json wrote ({e})")
        if not rows:
            sys.exit(f"validate_model.py: --summary {a.summary}: the grid has no rows")
        summarize(rows, a.json)
        return
    grid = build_grid(a)
    total = sum(len(rows) for _, rows in grid)
    if a.list:
        for lay, rows in grid:
            for r in rows:
                print(label(lay, r))
        print(f"{total} rows in {len(grid)} layouts")
        return
    if not os.access(a.dtrain, os.X_OK):
        sys.exit(f"validate_model.py: no dtrain binary at {a.dtrain}; build it and pass --dtrain PATH")
    if any(lay.rate is not None for lay, _ in grid):
        check = subprocess.run([bl.NETNS_HOSTS, "check"], capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit(check.stderr.strip() + "\n(--rates '' leaves the two-host layouts out)")

    bl.header(f"performance model against measured steps: {total} rows, batch {a.batch} per rank, 1 thread")
    print(f"{'layout':<22} {'model':<9} {'exchange':<15} {'predicted':>11} {'measured':>11} {'error':>8}", flush=True)
    runs, failed, start = {}, [], time.time()
    if a.profiles:
        os.makedirs(a.profiles, exist_ok=True)
    with (contextlib.nullcontext(a.profiles) if a.profiles else
          tempfile.TemporaryDirectory(prefix="dtrain-validate-")) as tmp:
        for rep in range(a.reps):
            for i, (lay, rows) in enumerate(grid):
                with lay:
                    # One calibration per model (the rates of its own layer shapes, as `dtrain
                    # calibrate --models` is meant to be used) or, with --shared-calibration, one
                    # for all models of the grid.
                    groups = [listed(a.models)] if a.shared_calibration else [[m] for m in listed(a.models)]
                    group_of = {m: g for g in groups for m in g}
                    # Per model and batch, every calibration of this layout and repetition:
                    # (path, round trip).
                    profiles = {}

                    def calibrate_now(models, setting, why):
                        batch, tensor = setting
                        n = len(profiles.get((models[0], setting), []))
                        path = os.path.join(tmp, f"rep{rep}-layout{i}-{'-'.join(models)}-b{batch}-t{tensor}-{n}.json")
                        bl.wait_quiet(a.quiet)
                        t0 = time.time()
                        calibrate(a, lay, path, models, setting)
                        rt = core_round_trip(path)
                        at = (f", batch {batch}" if batch != a.batch else "") + \
                            (f", tensor-parallel {tensor}" if tensor > 1 else "")
                        print(f"# {lay.name}: calibrated on {','.join(models)}{at} in {time.time() - t0:.1f} s "
                              f"(repetition {rep + 1}{why}; core round trip {round((rt or 0) * 1e9)} ns)", flush=True)
                        for m in models:
                            profiles.setdefault((m, setting), []).append((path, rt))

                    for models in groups:
                        calibrate_now(models, (a.batch, 1), "")
                    # On one host the round trip before each row picks the calibration made in
                    # that state, calibrating anew the first time a state is met (--per-state).
                    per_state = a.per_state and lay.ranks > 1 and lay.rate is None
                    for r in rows:
                        bl.wait_quiet(a.quiet)
                        t1 = time.time()
                        key = label(lay, r)
                        setting = calibration_setting(a, lay, r)
                        if (r["model"], setting) not in profiles:
                            calibrate_now(group_of[r["model"]], setting, "")
                        profile, calibrated = profiles[(r["model"], setting)][0]
                        if per_state:
                            now = core_state_now(a)
                            # State unknown: the latest calibration, as the runs' own samples will say.
                            fits = [q for q in profiles[(r["model"], setting)] if now is None or same_state(q[1], [now])]
                            if not fits:
                                calibrate_now(group_of[r["model"]], setting,
                                              f", the cores' state is now {round(now * 1e9)} ns")
                                fits = [profiles[(r["model"], setting)][-1]]
                            profile, calibrated = fits[-1]
                        try:
                            p = predict(a, profile, lay, r)
                            m, core = measure(a, lay, r, p)
                        except SystemExit as e:  # benchlib.run's failure: report the row, go on
                            failed.append(key)
                            print(f"{key:<54} FAILED: {str(e.code).strip()[-400:]}", flush=True)
                            continue
                        # Same-host layouts only: across the emulated hosts the link's rate, not the
                        # cores, bounds the transfers.
                        same = lay.ranks == 1 or lay.rate is not None or same_state(calibrated, core)
                        res = runs.setdefault(key, dict(r, layout=lay.name, ranks=lay.ranks, pred=[], meas=[],
                                                        same_state=[], core_ns=[], profiles=[]))
                        res["pred"].append(p)
                        res["meas"].append(m)
                        res["same_state"].append(same)
                        res["profiles"].append(os.path.basename(profile))
                        res["core_ns"].append([round((calibrated or 0) * 1e9)] + [round(c * 1e9) for c in core])
                        res["row_s"] = time.time() - t1
                        cores = "/".join(str(x) for x in res["core_ns"][-1])
                        print(f"{key:<54} {p * 1e3:8.2f} ms {m * 1e3:8.2f} ms {100 * (p - m) / m:+7.1f}%  "
                              f"cores {cores} ns{'' if same else ' (state changed)'}", flush=True)
    results = list(runs.values())
    for res in results:
        res["predicted_s"], res["measured_s"] = bl.median(res["pred"]), bl.median(res["meas"])
        res["error"] = bl.median(run_errors(res["pred"], res["meas"]))
    if failed:
        print(f"\n{len(failed)} row run(s) failed and are left out: " + "; ".join(sorted(set(failed))))
    if not results:
        sys.exit("validate_model.py: no row was measured")
    summarize(results, a.json, time.time() - start)


if __name__ == "__main__":
    main()
