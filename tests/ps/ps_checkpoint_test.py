#!/usr/bin/env python3
"""Checkpoints of `dtrain train --mode ps` under mpirun (registered by tests/ps/tests.cmake).

usage: ps_checkpoint_test.py DTRAIN [resume|stop]
  resume: BSP, 3 workers and 2 servers, momentum SGD: 2 epochs straight, and a run resumed from the
  straight run's checkpoint after epoch 1, end with bitwise the same parameters and optimizer state (worker 0 writes the servers' shards
  and state as one checkpoint, the servers continue from it) and the same test accuracy. ASP
  resumes from its checkpoint at the right step (not bitwise: its order of pushes is the
  timing's).
  stop: SIGTERM to every rank (servers first, worker 0 last, 20 ms apart) after a
  random step, the workers agree on one clock, worker 0 checkpoints it, the run exits 75, and
  resumed it ends bitwise as the straight run.
"""
import json, os, random, shutil, signal, struct, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mpirun_signals import run_and_signal  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "5"]
COMMON = ["--mode", "ps", "--servers", "2", "--model", "mlp", "--limit", "3840", "--eval-limit", "1000",
          "--threads", "1", "--progress", "none"]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def tensors(path):
    """{name: raw bytes} of a safetensors file, and its metadata."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}, meta


def newest(directory):
    files = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors"))
    assert files, os.listdir(directory)
    return os.path.join(directory, files[-1])


def last_epoch(log):
    with open(log) as f:
        return [r for r in map(json.loads, f) if r.get("type") == "epoch"][-1]


def bsp_state(path):
    """The model and optimizer tensors of the newest checkpoint in `path`."""
    a, _ = tensors(newest(path))
    return {k: v for k, v in a.items() if k.startswith(("model.", "optimizer."))}


def resume(dtrain):
    with tempfile.TemporaryDirectory() as d:
        straight, split = os.path.join(d, "straight"), os.path.join(d, "split")
        log_a, log_b = os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl")
        # A checkpoint after each epoch; the resumed run starts from a copy of the first only (the
        # same --epochs: the learning-rate schedule spans them).
        run(MPIRUN + [dtrain, "train", *COMMON, "--sync", "bsp", "--epochs", "2", "--checkpoint-dir", straight,
                      "--log", log_a])
        os.makedirs(split)
        first = sorted(f for f in os.listdir(straight) if f.endswith(".safetensors"))[0]
        shutil.copy(os.path.join(straight, first), split)
        out = run(MPIRUN + [dtrain, "train", *COMMON, "--sync", "bsp", "--epochs", "2", "--checkpoint-dir", split,
                            "--resume", "--log", log_b])
        assert "resumed" in out, out
        a, b = bsp_state(straight), bsp_state(split)
        assert any(k.startswith("optimizer.") for k in a), sorted(a)
        differ = sorted(k for k in a if a[k] != b.get(k))
        assert not differ, f"resumed BSP run differs in {differ}"
        _, meta_a = tensors(newest(straight))
        _, meta_b = tensors(newest(split))
        steps_a = json.loads(meta_a["dtrain.state"])["optimizer"]["steps"]
        assert steps_a == json.loads(meta_b["dtrain.state"])["optimizer"]["steps"] == 40, (meta_a, meta_b)
        ea, eb = last_epoch(log_a), last_epoch(log_b)
        assert ea["test_accuracy"] == eb["test_accuracy"] and ea["test_loss"] == eb["test_loss"], (ea, eb)

        asp = os.path.join(d, "asp")
        run(MPIRUN + [dtrain, "train", *COMMON, "--sync", "asp", "--epochs", "1", "--checkpoint-dir", asp,
                      "--log", ""])  # (its schedule spans 1 epoch: resuming with 2 is allowed, not exact)
        out = run(MPIRUN + [dtrain, "train", *COMMON, "--sync", "asp", "--epochs", "2", "--checkpoint-dir", asp,
                            "--resume", "--log", log_b])
        assert "resumed" in out and last_epoch(log_b)["epoch"] == 2, out
    print("ps_checkpoint resume: BSP resumed bitwise equal to the straight run (parameters, optimizer state, "
          "accuracy); ASP resumed")


def stop(dtrain):
    """A run slowed to tens of ms a step (so that the signals land mid-run), SIGTERM to every rank."""
    with tempfile.TemporaryDirectory() as d:
        straight, stopped, log = os.path.join(d, "straight"), os.path.join(d, "stopped"), os.path.join(d, "c.jsonl")
        bsp = MPIRUN + [dtrain, "train", *COMMON, "--sync", "bsp", "--epochs", "2", "--log", ""]
        run(bsp + ["--checkpoint-dir", straight])
        after = random.randint(3, 34)
        rc, out, at = run_and_signal(bsp[:-2] + ["--checkpoint-dir", stopped, "--log", log, "--log-every", "1",
                                                 "--slow-rank", "1", "--slow-factor", "30"],
                                     log, after, [(r, signal.SIGTERM) for r in (4, 3, 2, 1, 0)])
        assert rc == 75 and "stopping on SIGTERM" in out, (after, at, rc, out)
        out = run(bsp + ["--checkpoint-dir", stopped, "--resume"])
        assert "resumed" in out, out
        a, c = bsp_state(straight), bsp_state(stopped)
        differ = sorted(k for k in a if a[k] != c.get(k))
        assert not differ, f"BSP stopped after step {at} and resumed differs in {differ}"
    print(f"ps_checkpoint stop: SIGTERM at step {at}, resumed bitwise equal to the straight run")


if __name__ == "__main__":
    {"resume": resume, "stop": stop}[sys.argv[2] if len(sys.argv) > 2 else "resume"](sys.argv[1])
