"""Signals to the ranks of a running `mpirun ... dtrain train`, for the preemption tests of the
parameter-server and pipeline modes (tests/ps, tests/pipeline): Slurm signals every task of a job,
and the tests send the same signals to the ranks directly, at a step read off the metrics log."""
import json
import os
import subprocess
import time


def rank_pids(mpirun_pid):
    """{rank: pid} of the processes mpirun started (its children with an MPI rank)."""
    ranks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        if ppid == mpirun_pid and b"OMPI_COMM_WORLD_RANK" in env:
            ranks[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return ranks


def steps_logged(log):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f if '"type":"step"' in line.replace(" ", ""))


def run_and_signal(cmd, log, after_steps, signals, timeout=240):
    """Runs `cmd` (which writes `log` with --log-every 1); once `after_steps` steps are logged,
    sends each (rank, signal) of `signals` in order, 20 ms apart, so the ranks see them at
    different points of a step. Returns (exit status, output, steps logged at the first signal)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        end = time.time() + timeout
        while p.poll() is None and steps_logged(log) < after_steps and time.time() < end:
            time.sleep(0.005)
        at = steps_logged(log)
        pids = rank_pids(p.pid)
        for rank, sig in signals:
            assert rank in pids, f"rank {rank} not found among {pids} (the run ended after {at} steps?)"
            os.kill(pids[rank], sig)
            time.sleep(0.02)
        out, _ = p.communicate(timeout=max(1, end - time.time()))
        return p.returncode, out, at
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()


def step_losses(log):
    """{iteration: loss} of a metrics log's step records."""
    with open(log) as f:
        return {r["iteration"]: r["loss"] for r in map(json.loads, f) if r.get("type") == "step"}
