#!/usr/bin/env python3
"""`dtrain train --mode ps` under mpirun, end to end (registered by tests/ps/tests.cmake).

usage: ps_cli_test.py DTRAIN
  BSP with one and with two servers trains what allreduce with the same global batch trains (the
  same test accuracy after an epoch: one arithmetic, to rounding); SSP keeps every clock gap within
  its bound and logs its mode, and with --profile prints the model's global steps/s beside the
  servers'; ASP runs, and its --trace holds every worker's pushes and pulls; compensated momentum
  is reported; bf16 pushes train as f32 ones; bad flags are clear errors before any training.
"""
import json, os, re, subprocess, sys, tempfile

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
COMMON = ["--model", "mlp", "--limit", "6144", "--epochs", "1", "--eval-limit", "2000", "--threads", "1",
          "--progress", "none"]


def run(cmd, timeout=240):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def trained(dtrain, np, flags, log):
    """The output and the log's records: config first, then epochs, then (--mode ps) the "ps" record."""
    rc, out = run(MPIRUN + ["-np", str(np), dtrain, "train", *COMMON, "--log", log, *flags])
    assert rc == 0, out
    recs = records(log)
    if "--mode" in flags:
        ps = recs[-1]
        assert ps["type"] == "ps" and ps["steps_per_second"] > 0, (ps, out)
        server = ps["servers"][0]
        assert sum(server["gap_histogram"]) == server["gradients"], ps
        assert len(ps["worker_wait_seconds"]) == ps["workers"], ps
        assert "staleness: clock gap max" in out and "global steps/s while all" in out, out
        recs = recs[:-1]
    assert recs[-1]["type"] == "epoch", recs[-1]
    return out, recs


def main():
    dtrain = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.jsonl")
        _, ar = trained(dtrain, 3, ["--allreduce", "ring"], log)
        for servers in (1, 2):
            out, bsp = trained(dtrain, 3 + servers, ["--mode", "ps", "--servers", str(servers), "--sync", "bsp"], log)
            assert bsp[0]["mode"] == "ps" and bsp[0]["servers"] == servers, bsp[0]
            assert abs(bsp[-1]["test_accuracy"] - ar[-1]["test_accuracy"]) <= 0.002, (bsp[-1], ar[-1], out)
            gap = re.search(r"clock gap max (\d+)", out)
            assert gap and gap.group(1) == "0", out
        # --profile: the model's prediction of the run, compared with the servers' rate at the end.
        out, ssp = trained(dtrain, 4, ["--mode", "ps", "--sync", "ssp", "--staleness", "2", "--profile", "skylake-sp"],
                           log)
        assert ssp[0]["sync"] == "ssp" and ssp[0]["staleness"] == 2, ssp[0]
        assert records(log)[-1]["predicted_steps_per_second"] > 0 and "global steps/s: predicted" in out, out
        gap = re.search(r"clock gap max (\d+)", out)
        assert gap and 0 <= int(gap.group(1)) <= 2, out
        # Trained, not diverged: well above chance (0.1) after 32 steps; the exact figure depends on
        # the order the pushes arrived in.
        assert ssp[-1]["test_accuracy"] > 0.3, ssp[-1]
        # ASP, 2 workers and 2 servers, traced: every worker's pushes of both shards and its pulls.
        trace = os.path.join(d, "trace.json")
        out, asp = trained(dtrain, 4, ["--mode", "ps", "--servers", "2", "--sync", "asp", "--trace", trace,
                                       "--trace-steps", "4"], log)
        assert asp[-1]["test_accuracy"] > 0.3, (asp[-1], out)
        assert "each push at lr/2, server momentum 0.9" in out and asp[0]["async_lr"] == "divided", (asp[0], out)
        with open(trace) as f:
            events = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
        for worker in (0, 1):
            mine = [e for e in events if e["pid"] == worker]
            pushes = sorted({e["args"]["shard"] for e in mine if e["cat"] == "push"})
            pulls = [e for e in mine if e["cat"] == "pull"]
            assert pushes == [0, 1] and len(pulls) == 4, (worker, pushes, len(pulls))
            assert {"forward", "backward", "step"} <= {e["cat"] for e in mine}, worker
        assert {e["pid"] for e in events} == {0, 1}, "workers only: the servers record no trace"
        # Compensated momentum is what the run reports and logs.
        out, comp = trained(dtrain, 4, ["--mode", "ps", "--sync", "asp", "--async-momentum", "compensate"], log)
        assert f"server momentum {0.9 - 2 / 3:.3g}" in out and comp[-1]["test_accuracy"] > 0.3, (comp[-1], out)
        # bf16 pushes: the same training as f32 pushes, to the rounding of the gradients.
        out, bf16 = trained(dtrain, 4, ["--mode", "ps", "--sync", "bsp", "--comm-dtype", "bf16"], log)
        assert "pushes in bf16" in out and abs(bf16[-1]["test_accuracy"] - ar[-1]["test_accuracy"]) <= 0.02, (
            bf16[-1], ar[-1], out)

    bad = [
        ([dtrain, "train", "--mode", "ps"], "--mode ps needs several processes"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--servers", "2"], "leaves no worker: give 1..1"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--servers", "0"], "leaves no server"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--sync", "ssp"], "--sync ssp needs --staleness"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--sync", "ssp", "--staleness", "-1"],
         "--sync ssp needs --staleness"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--sync", "asp", "--staleness", "1"],
         "--staleness bounds --sync ssp"),
        ([dtrain, "train", "--servers", "2"], "add --mode ps"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--double-buffering"],
         "with --mode ps use --sync ssp --staleness 1"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--async-lr", "staleness"],
         "bsp applies one step per clock"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--sync", "asp", "--async-lr", "tau"],
         "unknown --async-lr 'tau'; valid: divided, staleness, full"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--sync", "asp", "--optimizer", "adam",
                   "--async-momentum", "compensate"], "--optimizer adam has none to lower"),
        ([dtrain, "train", "--async-momentum", "compensate"], "add --mode ps"),
        (MPIRUN + ["-np", "2", dtrain, "train", "--mode", "ps", "--optimizer", "lars"],
         "a server holds a flat range of the parameters"),
        ([dtrain, "train", "--mode", "sharded"], "unknown --mode 'sharded'; valid: allreduce, ps"),
    ]
    for cmd, message in bad:
        rc, out = run(cmd + ["--limit", "256", "--log", ""], timeout=120)
        assert rc != 0 and message in out, (cmd, rc, out)
    print(f"ps_cli: bsp (1 and 2 servers) = allreduce, ssp within its bound, asp trains and is traced, {len(bad)} errors "
          "named")


if __name__ == "__main__":
    main()
