#!/usr/bin/env python3
"""`dtrain calibrate` under mpirun, and what uses its profile, end to end (registered by tests.cmake).

usage: calibrate_mpi_test.py DTRAIN CASE [NETNS_HOSTS_SH]
  same_host   mpirun -np 2 on this host: the profile has 2 accelerators per node, a measured
              same-host link (alpha, beta) and overlap, the update of ranks sharing their
              weights, no network; `dtrain bench allreduce
              --profile` prints the model's time beside each measured collective; `dtrain predict` takes it;
              `dtrain train --profile --allreduce auto --bucket-mb auto` logs the choice with its
              alternatives and prints predicted beside measured per epoch; `dtrain explain` (with the run's trace) on
              that log names what limits scaling
  time_shared two ranks on one CPU (taskset -c 0): the profile's host has 1 CPU and the cost of
              the ranks taking turns (node.turn_taking); with mpirun binding a core to each
              rank, 2 CPUs and no turns; 4 ranks on 2 CPUs (taskset -c 0,1): turns, and the
              same-host pairs timed each pinned to one CPU
  two_hosts   one rank in each of two emulated hosts (tools/netns_hosts.sh) on a 100 Mbit/s link:
              the profile gains a network whose bandwidth is that of the shaped link (at most
              its rate, at least 30% of it) and whose burst allowance is that of its tc tbf
              (256 KB), 1 accelerator per node. Exits 77 (skipped) where
              namespaces cannot be made.
"""
import json, os, subprocess, sys, tempfile

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
# mlp's 669706 parameters in f32.
MLP_GRADIENT_BYTES = 669706 * 4
QUICK = ["--models", "mlp", "--batch", "16", "--min-seconds", "0.02", "--threads", "1"]


def run(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p.stdout


def calibrated(q):
    return q["value"] > 0 and q["source"].startswith("calibrated on ") and "by dtrain calibrate" in q["source"]


def same_host(dtrain):
    with tempfile.TemporaryDirectory() as d:
        profile, log, trace = (os.path.join(d, name) for name in ("p.json", "run.jsonl", "trace.json"))
        out = run(MPIRUN + ["-np", "2", dtrain, "calibrate", *QUICK, "-o", profile])
        assert "same host" in out, out
        p = json.load(open(profile))
        assert p["dtrain_profile"] == 1 and p["node"]["accelerators"] == 2, p["node"]
        link = p["node"]["intra_link"]
        assert calibrated(link["latency"]) and calibrated(link["bandwidth"]), link
        assert "same-host pair" in link["bandwidth"]["source"], link
        assert "network" not in p, "one host: no network measured"
        for key in ("reduce", "reduce_f16", "reduce_bf16", "cast_f16", "cast_bf16", "shared_update"):
            assert calibrated(p["device"][key]), (key, p["device"])
        # The ranks share one copy of the weights under shm: their update is timed that way too.
        assert "sharing one copy of the weights" in p["device"]["shared_update"]["source"], p["device"]
        assert "shared update" in out, out
        assert "(f16 " in out and "16-bit casts" in out, out
        ladder = link["exchange_ladder"]
        sizes = [q["bytes"] for q in ladder["points"]]
        assert sizes == sorted(sizes) and sizes[0] == 65536 and len(sizes) >= 2, ladder
        assert all(q["seconds"] > 0 for q in ladder["points"]) and "exchange" in ladder["source"], ladder
        assert "exchange ladder 64 KiB" in out, out
        mpi = p["mpi_allreduce"]
        sizes = [q["bytes"] for q in mpi["points"]]
        assert mpi["workers"] == 2 and sizes == sorted(sizes) and sizes[0] == 4096, mpi
        assert all(b == 2 * a for a, b in zip(sizes, sizes[1:])), mpi
        assert all(q["seconds"] > 0 for q in mpi["points"]) and "MPI_Allreduce" in mpi["source"], mpi
        # The ladder ends at the first size that holds mlp's gradients (the largest message a run of
        # mlp sends): no 64 MiB calls, whose mapped reduction buffers slowed the rounds after them.
        assert sizes[-1] >= MLP_GRADIENT_BYTES > sizes[-1] // 2, mpi
        # Compute beside MPI_Allreduce, measured on its own (a blocking collective polls).
        for share in ("compute", "comm"):
            q = mpi["overlap"][share]
            assert 0 < q["value"] <= 1 and "MPI_Allreduce" in q["source"], mpi["overlap"]
        assert "overlap (MPI)   compute keeps" in out, out
        # shm: the ranks of one host share memory, so its ladder is timed too, at the same sizes.
        shm = p["shm_allreduce"]
        sizes = [q["bytes"] for q in shm["points"]]
        assert shm["workers"] == 2 and sizes[0] == 4096 and all(b == 2 * a for a, b in zip(sizes, sizes[1:])), shm
        assert all(q["seconds"] > 0 for q in shm["points"]) and "shm allreduce" in shm["source"], shm
        assert "shm allreduce   4 KiB" in out, out
        assert 0 < p["node"]["overlap"]["compute"]["value"] <= 1, p["node"]["overlap"]
        # The cache-line round trip between two cores: absent where the probe's two threads never
        # ran at once (one CPU, or both busy, e.g. with tests running beside this one).
        rt = p["node"].get("core_round_trip")
        assert rt is None or (1e-9 < rt["value"] < 20e-6 and "samples" in rt["source"]), rt
        copy = p["device"]["gradient_copy"]
        assert calibrated(copy) and "copied into a second buffer" in copy["source"], copy
        variation = p["device"]["step_variation"]
        assert 0 <= variation["value"] < 1 and "compute steps per rank" in variation["source"], variation
        # Ranks with a CPU each time their steps in lockstep too, and the variation is their own part.
        lockstep = "each step after a barrier" in variation["source"]
        assert lockstep == (len(os.sched_getaffinity(0)) >= 2), (os.sched_getaffinity(0), variation)
        assert not lockstep or ("from unsynchronised steps" in variation["source"] and "in lockstep" in out), out
        # The model's time for each measured collective, beside it, and the errors over the rows.
        out = run(MPIRUN + ["-np", "2", dtrain, "bench", "allreduce", "--min-bytes", "64K", "--max-bytes", "256K",
                            "--repeats", "1", "--iterations", "5", "--algorithms", "ring,mpi,shm", "--profile", profile])
        rows = [line.split() for line in out.splitlines() if line.startswith("  ")]
        assert len(rows) == 6 and all(len(r) == 9 and float(r[7]) > 0 and r[8].endswith("%") for r in rows), out
        assert "model_us" in out and "model rows=6 median_abs_error=" in out, out
        pred = json.loads(run([dtrain, "predict", "--model", "lenet", "--dataset", "fashion-mnist", "--workers", "2",
                               "--batch-per-worker", "32", "--profile", profile, "--allreduce", "ring", "--json"]))
        assert pred["runs"][-1]["step_s"] > 0, pred
        out = run(MPIRUN + ["-np", "2", dtrain, "train", "--model", "lenet", "--limit", "1280", "--epochs", "2",
                            "--eval-limit", "100", "--threads", "1", "--batch", "32", "--progress", "lines",
                            "--profile", profile, "--allreduce", "auto", "--bucket-mb", "auto", "--log", log,
                            "--trace", trace, "--trace-steps", "3"])
        assert "--allreduce/--bucket-mb auto: chose " in out and "alternatives:" in out, out
        assert out.count("per step: predicted ") == 2 and "measured" in out, out
        records = [json.loads(line) for line in open(log)]
        config = records[0]
        assert config["auto"]["alternatives"], config
        assert config["allreduce"] in ("ring", "tree", "butterfly", "onetoall", "shm"), config
        epochs = [r for r in records if r["type"] == "epoch"]
        assert all(r["predicted_step_s"] > 0 and r["measured_step_s"] > 0 for r in epochs), epochs
        text = run([dtrain, "explain", log, "--trace", trace])
        assert "limits scaling: " in text and "efficiency" in text, text
        # The trace's layers beside the model's: every LeNet layer matched, none missing.
        assert "rank-steps recorded): forward and backward per step, by layer kind" in text, text
        assert "conv2d" in text and "never recorded" not in text and "largest differences: " in text, text
        if "core_round_trip_ns" in config and rt is not None:
            assert config["core_round_trip_ns"] > 0 and "machine state: a cache line" in text, (config, text)
        print(out, text, sep="\n")


def time_shared(dtrain):
    """Two ranks on one CPU (taskset): the profile counts 1 CPU for the host and keeps the cost of
    the ranks taking turns, the expected slowest of the two ranks' compute steps against their
    mean; with a CPU per rank (mpirun's own binding) there are no turns."""
    with tempfile.TemporaryDirectory() as d:
        profile = os.path.join(d, "p.json")
        out = run(["taskset", "-c", "0"] + MPIRUN + ["-np", "2", dtrain, "calibrate", *QUICK, "-o", profile])
        assert "taking turns " in out and "waits for the slowest of 2 ranks' compute steps" in out, out
        node = json.load(open(profile))["node"]
        assert node["cores"]["value"] == 1 and "affinity" in node["cores"]["source"], node
        turns = node["turn_taking"]
        assert turns["source"].startswith("calibrated on "), turns
        assert turns["value"] >= 0 and "the expected slowest of 2 ranks' steps" in turns["source"], turns
        assert "turn_taking_shm" not in node, node  # shm's ranks take the same turns
        pred = json.loads(run([dtrain, "predict", "--model", "mlp", "--dataset", "fashion-mnist", "--workers", "2",
                               "--batch-per-worker", "16", "--profile", profile, "--allreduce", "ring", "--json"]))
        assert pred["runs"][-1]["step_s"] > 0, pred
        if os.cpu_count() >= 2:
            out = run(["mpirun", "--allow-run-as-root", "-np", "2", dtrain, "calibrate", *QUICK, "-o", profile])
            node = json.load(open(profile))["node"]
            assert node["cores"]["value"] >= 2 and "turn_taking" not in node, node
            assert "taking turns " not in out, out
            # Four ranks on two CPUs: the kernel would place them as it likes, so each same-host
            # pair is timed on a CPU of its own (calibration/pinned_pairs.h); the turns stay.
            out = run(["taskset", "-c", "0,1"] + MPIRUN + ["-np", "4", dtrain, "calibrate", *QUICK, "-o", profile])
            node = json.load(open(profile))["node"]
            assert node["cores"]["value"] == 2 and "turn_taking" in node, node
            # The turns: the median of four blocks of unsynchronised steps spread through it.
            assert "(the median of 4 block(s): " in out, out
            assert "4 blocks of compute steps per rank" in node["turn_taking"]["source"], node["turn_taking"]
            link = node["intra_link"]
            assert "each pinned to one CPU" in link["bandwidth"]["source"], link
            assert "each pinned to one CPU" in link["exchange_ladder"]["source"], link
            assert "2 same-host pair(s) side by side, each pinned to one CPU" in out, out
        print(out)


def two_hosts(dtrain, hosts):
    env = dict(os.environ, NETNS_NAME=f"dtc{os.getpid()}", NETNS_SUBNET="10.79.0")
    check = subprocess.run([hosts, "check"], capture_output=True, text=True, env=env)
    if check.returncode != 0:
        print(check.stderr.strip())
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        profile = os.path.join(d, "p.json")
        os.chmod(d, 0o755)
        out = run([hosts, "run", "--rate", "100mbit", "--", dtrain, "calibrate", *QUICK, "-o", profile], env=env)
        print(out)
        p = json.load(open(profile))
        assert p["node"]["accelerators"] == 1, p["node"]
        net = p["network"]
        assert calibrated(net["latency"]) and calibrated(net["bandwidth"]), net
        # The exchange ladder is a same-host link's: a host with one rank has none, nor does the network.
        assert "exchange_ladder" not in net and "exchange_ladder" not in p["node"]["intra_link"], p
        # Nor is shm timed: the model never runs it across hosts.
        assert "shm_allreduce" not in p, p["shm_allreduce"]
        rate = 100e6 / 8
        # Measured, not assumed: at most the shaped rate (an unshaped veth would give GB/s), and
        # not far below it (TCP in both directions at once, with each other's ACKs, gets 60-80%).
        assert 0.3 * rate <= net["bandwidth"]["value"] <= 1.1 * rate, net["bandwidth"]
        # The shaper's burst allowance (tc tbf burst 256kb, tools/netns_hosts.sh) measured after
        # the link idles: 233-244 KiB in calibrations at 100 Mbit/s and 1 Gbit/s.
        burst = net["burst"]
        assert calibrated(burst) and 0.5 * 262144 <= burst["value"] <= 1.25 * 262144, burst
        # MPI_Allreduce timed over the shaped link: two ranks each send at least half the vector
        # across it, so the largest point (past tc tbf's burst allowance, which lets a small
        # message through faster) cannot beat the link's rate.
        largest = p["mpi_allreduce"]["points"][-1]
        assert largest["seconds"] >= 0.9 * largest["bytes"] / 2 / rate, p["mpi_allreduce"]
        # The ladder stopped at the first size that holds mlp's gradients, the largest bucket a
        # run of mlp sends.
        assert largest["bytes"] >= MLP_GRADIENT_BYTES > largest["bytes"] // 2, p["mpi_allreduce"]


def main():
    dtrain, case = sys.argv[1], sys.argv[2]
    if case == "same_host":
        same_host(dtrain)
    elif case == "time_shared":
        time_shared(dtrain)
    elif case == "two_hosts":
        two_hosts(dtrain, sys.argv[3])
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main()
