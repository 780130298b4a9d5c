#!/usr/bin/env python3
"""Pipeline-parallel `dtrain train --pipeline K` under mpirun, end to end (tests/pipeline/tests.cmake).

usage: mpi_pipeline_cli_test.py DTRAIN CASE
  loss_curve   lenet as a 2-stage and mlp as a 3-stage pipeline, 1f1b and gpipe, 2 replicas of a
               2-stage lenet on 4 ranks, and resnet20 in 2 stages (one micro-batch) follow one
               process with the same global batch step by step (relative loss difference < 1e-5)
               and end at the same test accuracy (the stages' parameters gathered into rank 0's
               model)
  checkpoint   a 2-replica, 2-stage run checkpointed per stage and resumed from the newest step both
               stages have equals the uninterrupted run at every step (bit for bit); dtrain export
               joins the stages into the whole model's tensors, named as one process's
  stop         the same run slowed, SIGUSR1 to one rank of the last stage after a random step: every
               rank agrees on the stop, each stage checkpoints that step, the run exits 75, and
               resumed it equals the uninterrupted run at every step
  trace        --trace shows each rank's schedule actions in order, and its waits
  bad_input    ranks not divisible by K, an allreduce a subset of the ranks cannot run, more stages
               than layers, a --split layer the model lacks and micro-batches that do not divide
               the batch each stop at once with the constraint named
"""
import array, json, os, random, signal, struct, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mpirun_signals import run_and_signal, step_losses  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
RUN = ["--limit", "640", "--eval-limit", "200", "--threads", "1", "--schedule", "constant", "--lr", "0.02",
       "--log-every", "1", "--progress", "none"]
COMMON = RUN + ["--epochs", "1"]


def run(cmd, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def loss_curve(dtrain):
    # (model, stages, ranks, pipeline flags): ranks / stages replicas, each with --batch 32, against
    # one process with the replicas' batches together.
    for model, stages, ranks, extra in [("lenet", 2, 2, ["--pipeline-schedule", "1f1b", "--micro-batches", "4"]),
                                        ("mlp", 3, 3, ["--pipeline-schedule", "gpipe", "--micro-batches", "8"]),
                                        ("mlp", 2, 2, ["--split", "f3", "--micro-batches", "2"]),
                                        ("lenet", 2, 4, ["--micro-batches", "4", "--allreduce", "tree"]),
                                        # Residual blocks kept whole; one micro-batch, so batch norm
                                        # sees the whole batch as in one process.
                                        ("resnet20", 2, 2, ["--micro-batches", "1"])]:
        replicas = ranks // stages
        with tempfile.TemporaryDirectory() as d:
            single, piped = os.path.join(d, "single.jsonl"), os.path.join(d, "piped.jsonl")
            rc, out = run([dtrain, "train", "--model", model, *COMMON, "--batch", str(32 * replicas), "--log", single])
            assert rc == 0, out
            rc, out = run(MPIRUN + ["-np", str(ranks), dtrain, "train", "--model", model, *COMMON, "--batch", "32",
                                    "--pipeline", str(stages), *extra, "--log", piped])
            assert rc == 0, out
            a = [r["loss"] for r in records(single) if r["type"] == "step"]
            b = [r["loss"] for r in records(piped) if r["type"] == "step"]
            assert len(a) == len(b) == 640 // (32 * replicas), (len(a), len(b))
            worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
            assert worst < 1e-5, (model, stages, worst, a, b)
            acc_a = [r["test_accuracy"] for r in records(single) if r["type"] == "epoch"]
            acc_b = [r["test_accuracy"] for r in records(piped) if r["type"] == "epoch"]
            assert acc_a == acc_b, (acc_a, acc_b)
            config = records(piped)[0]
            assert config["pipeline"] == stages and config["replicas"] == replicas and "|" in config["stages"], config
            print(f"{model}, {replicas} x {stages} stages {' '.join(extra)}: loss within {worst:.1e}, accuracy {acc_b}")


def safetensors(path):
    """name -> (dtype, shape, bytes) of a safetensors file."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


def checkpoint(dtrain):
    """2 replicas of a 2-stage mlp: a run checkpointed every 7 steps, its last checkpoint of stage 1
    deleted (a stage that died while writing), resumed to 2 epochs, equals the uninterrupted run at
    every step: the stages agree on step 14, the newest both have."""
    flags = ["--model", "mlp", *RUN, "--batch", "16", "--pipeline", "2", "--micro-batches", "4"]
    with tempfile.TemporaryDirectory() as d:
        whole, resumed, ckpt = os.path.join(d, "whole.jsonl"), os.path.join(d, "resumed.jsonl"), os.path.join(d, "ck")
        rc, out = run(MPIRUN + ["-np", "4", dtrain, "train", *flags, "--epochs", "2", "--log", whole])
        assert rc == 0, out
        rc, out = run(MPIRUN + ["-np", "4", dtrain, "train", *flags, "--epochs", "1", "--checkpoint-dir", ckpt,
                                "--checkpoint-every", "7"])
        assert rc == 0, out
        assert sorted(os.listdir(ckpt)) == ["stage-0", "stage-1"], os.listdir(ckpt)
        newest = sorted(os.listdir(os.path.join(ckpt, "stage-1")))[-1]
        assert newest.endswith("020.safetensors"), newest
        os.remove(os.path.join(ckpt, "stage-1", newest))
        rc, out = run(MPIRUN + ["-np", "4", dtrain, "train", *flags, "--epochs", "2", "--checkpoint-dir", ckpt,
                                "--checkpoint-every", "7", "--resume", "--log", resumed])
        assert rc == 0, out
        assert "stage-0/ckpt-000000000014" in out and "stage-1/ckpt-000000000014" in out, out
        a = {r["iteration"]: r["loss"] for r in records(whole) if r["type"] == "step"}
        b = [r for r in records(resumed) if r["type"] == "step"]
        assert b[0]["iteration"] == 14 and len(b) == 26, (b[0]["iteration"], len(b))
        assert all(a[r["iteration"]] == r["loss"] for r in b), [(a[r["iteration"]], r["loss"]) for r in b]
        acc = lambda path: [r["test_accuracy"] for r in records(path) if r["type"] == "epoch"]
        assert acc(whole)[-1] == acc(resumed)[-1], (acc(whole), acc(resumed))
        # dtrain export joins the stages into the whole model, equal to one process's after the same steps.
        single_ckpt = os.path.join(d, "single")
        rc, out = run([dtrain, "train", "--model", "mlp", *RUN, "--batch", "32", "--epochs", "2", "--checkpoint-dir",
                       single_ckpt])
        assert rc == 0, out
        exported = {}
        for name, path in (("pipeline", ckpt), ("single", single_ckpt)):
            rc, out = run([dtrain, "export", "--checkpoint", path, "--out", os.path.join(d, name + ".safetensors")])
            assert rc == 0, out
            exported[name] = safetensors(os.path.join(d, name + ".safetensors"))
        assert exported["pipeline"].keys() == exported["single"].keys(), (exported["pipeline"].keys(),
                                                                          exported["single"].keys())
        for k, (dtype, shape, data) in exported["single"].items():
            assert exported["pipeline"][k][:2] == (dtype, shape), k
            if dtype == "F32":  # the replicas' two half-batch means round apart from one batch's mean
                a, b = array.array("f", data), array.array("f", exported["pipeline"][k][2])
                scale = max(abs(x) for x in a) or 1.0
                assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-4 * scale, k
        print(f"resumed at step 14 of stage files 20/14: bit-identical to the uninterrupted run, accuracy "
              f"{acc(resumed)}; exported {len(exported['pipeline'])} tensors under the whole model's names")


def stop(dtrain):
    """2 replicas of a 2-stage mlp slowed to tens of ms a step (so the signal lands mid-run),
    SIGUSR1 to rank 3 alone (replica 1 of stage 1): all ranks stop after one step, both stages
    checkpoint it, and the resumed run's losses equal the uninterrupted run's."""
    flags = ["--model", "mlp", *RUN, "--batch", "16", "--pipeline", "2", "--micro-batches", "4", "--epochs", "2"]
    with tempfile.TemporaryDirectory() as d:
        whole, stopped, resumed = (os.path.join(d, n + ".jsonl") for n in ("whole", "stopped", "resumed"))
        ckpt = os.path.join(d, "ck")
        rc, out = run(MPIRUN + ["-np", "4", dtrain, "train", *flags, "--log", whole])
        assert rc == 0, out
        after = random.randint(3, 30)
        cmd = MPIRUN + ["-np", "4", dtrain, "train", *flags, "--checkpoint-dir", ckpt, "--slow-rank", "1",
                        "--slow-factor", "30"]
        rc, out, at = run_and_signal(cmd + ["--log", stopped], stopped, after, [(3, signal.SIGUSR1)])
        assert rc == 75 and "stopping on SIGUSR1" in out, (after, rc, out)
        done = len(step_losses(stopped))
        for stage in ("stage-0", "stage-1"):
            names = os.listdir(os.path.join(ckpt, stage))
            assert f"ckpt-{done:012d}.safetensors" in names, (stage, done, names)
        rc, out = run(cmd + ["--resume", "--log", resumed])
        assert rc == 0, out
        a, b = step_losses(whole), step_losses(resumed)
        assert min(b) == done and len(b) == 40 - done, (done, sorted(b))
        assert all(a[i] == loss for i, loss in b.items()), [(a[i], loss) for i, loss in b.items()]
        print(f"stopped by SIGUSR1 to rank 3 after step {done} (signalled at {at}); resumed bit-identical")


def trace(dtrain):
    """--trace of a 2-stage 1F1B run: each rank's lane of schedule actions holds its forwards and
    backwards in the schedule's order and its waits, inside the window of steps asked for."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        rc, out = run(MPIRUN + ["-np", "2", dtrain, "train", "--model", "lenet", *COMMON, "--batch", "32",
                                "--pipeline", "2", "--micro-batches", "4", "--trace", path, "--trace-steps", "1"])
        assert rc == 0, out
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        for rank, order in ((0, "F0 F1 B0 F2 B1 F3 B2 B3"), (1, "F0 B0 F1 B1 F2 B2 F3 B3")):
            lane = [e for e in events if e.get("ph") == "X" and e["pid"] == rank and
                    lanes.get((rank, e["tid"])) == "pipeline schedule"]
            compute = " ".join(e["name"] for e in sorted(lane, key=lambda e: e["ts"]) if e["name"][0] in "FB")
            assert compute == order, (rank, compute)
            waits = [e for e in lane if e["name"].startswith("wait: ")]
            assert waits, (rank, [e["name"] for e in lane])
        print("trace: both ranks' schedule lanes in 1F1B order, with their waits")


def bad_input(dtrain):
    cases = [
        (3, ["--model", "mlp", "--pipeline", "2"], "do not divide into 2-stage pipelines"),
        (4, ["--model", "mlp", "--pipeline", "2", "--allreduce", "shm"], "not offered between a pipeline's replicas"),
        (2, ["--model", "mlp", "--pipeline", "2", "--split", "f9"], "no layer of that name; its layers are flatten"),
        (2, ["--model", "mlp", "--pipeline", "2", "--micro-batches", "5"], "--micro-batches 5 does not divide"),
        (1, ["--model", "mlp", "--micro-batches", "2"], "add --pipeline K"),
    ]
    for ranks, flags, expected in cases:
        rc, out = run(MPIRUN + ["-np", str(ranks), dtrain, "train", *COMMON, "--batch", "32", *flags], timeout=120)
        assert rc != 0 and expected in out, (flags, rc, out[-2000:])
    # More stages than layers: mlp has 6.
    rc, out = run(MPIRUN + ["-np", "7", dtrain, "train", "--model", "mlp", *COMMON, "--batch", "32", "--pipeline", "7"],
                  timeout=120)
    assert rc != 0 and "only 6 layers" in out, out[-2000:]
    # A loss that becomes NaN on 2 replicas of 2 stages: the replicas' gradient buckets carry the
    # verdict, and every rank stops before the update, naming the fix.
    # Split at f1, stage 0 is a lone flatten: no gradients to carry the verdict, which its
    # replicas then exchange alone. Every rank stops at the same step; the first to exit ends the
    # job (mpirun), so how many of the 4 print their error before that varies.
    diverging = [x if x != "0.02" else "1e30" for x in COMMON]  # the --lr
    for split in ([], ["--split", "f1"]):
        start = time.time()
        rc, out = run(MPIRUN + ["-np", "4", dtrain, "train", "--model", "mlp", *diverging, "--batch", "32",
                                "--pipeline", "2", *split], timeout=120)
        assert rc != 0 and "became non-finite at step 1" in out and "Lower --lr" in out, (split, out[-2000:])
        assert time.time() - start < 60, (split, "the stages did not stop together")
    print("bad input: every case named its constraint")


if __name__ == "__main__":
    dtrain, case = sys.argv[1], sys.argv[2]
    {"loss_curve": loss_curve, "checkpoint": checkpoint, "stop": stop, "trace": trace, "bad_input": bad_input}[case](dtrain)
