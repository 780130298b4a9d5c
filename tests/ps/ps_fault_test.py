#!/usr/bin/env python3
"""Faults in `dtrain train --mode ps` under mpirun (registered by tests/ps/tests.cmake).

usage: ps_fault_test.py DTRAIN
  A server stopped with SIGSTOP (alive, silent): the workers stop within --timeout + 10 s, non-zero,
  naming the server's rank. A worker stopped likewise: the servers stop within the timeout, naming
  it. A server killed with SIGKILL: the job ends within 10 s. A data size that the workers do not
  divide (--limit 1000, 3 workers x batch 64) finishes its epoch under BSP. Worker 0's evaluation
  longer than --timeout 1 (ResNet-20 on 10000 test images, one thread) between two epochs does not
  end the run: it paused, and the servers keep the worker they hold at the gate waiting.
"""
import os, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mpirun_signals import rank_pids  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
TIMEOUT = 5  # dtrain's --timeout, seconds


def rank_pid(mpirun_pid, rank, deadline=60):
    """The pid of MPI rank `rank` among the children of mpirun, once it has started."""
    end = time.time() + deadline
    while time.time() < end:
        pid = rank_pids(mpirun_pid).get(rank)
        if pid is not None:
            return pid
        time.sleep(0.2)
    raise AssertionError(f"no process of rank {rank} under mpirun {mpirun_pid}")


def fault(dtrain, victim, sig, log):
    """Starts 3 workers and 1 server on a long run, sends `sig` to rank `victim` once training
    runs, and returns (seconds from the signal to mpirun's exit, exit status, output)."""
    cmd = MPIRUN + ["-np", "4", dtrain, "train", "--mode", "ps", "--servers", "1", "--model", "mlp", "--epochs",
                    "50", "--threads", "1", "--progress", "none", "--log-every", "1", "--log", log,
                    "--timeout", str(TIMEOUT)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        pid = rank_pid(p.pid, victim)
        end = time.time() + 120
        while time.time() < end:  # until a few steps are logged: the servers serve
            if os.path.exists(log) and sum(1 for _ in open(log)) > 5:
                break
            time.sleep(0.2)
        os.kill(pid, sig)
        signalled = time.time()
        try:
            out, _ = p.communicate(timeout=TIMEOUT + 60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"mpirun still runs {TIMEOUT + 60} s after signal {sig} to rank {victim}")
        return time.time() - signalled, p.returncode, out
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGCONT)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def main():
    dtrain = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.jsonl")
        seconds, rc, out = fault(dtrain, 3, signal.SIGSTOP, log)
        assert rc != 0 and seconds < TIMEOUT + 10, (seconds, rc, out)
        # The workers name the server and say what its answer waits for.
        assert "waiting for rank 3" in out and "answered once every worker pushed clock" in out, out
        seconds, rc, out = fault(dtrain, 1, signal.SIGSTOP, os.path.join(d, "log2.jsonl"))
        assert rc != 0 and seconds < TIMEOUT + 10, (seconds, rc, out)
        # The server names the stopped worker before the workers it holds back time out.
        assert "from worker rank(s) 1 " in out, out
        seconds, rc, out = fault(dtrain, 3, signal.SIGKILL, os.path.join(d, "log3.jsonl"))
        assert rc != 0 and seconds < 10, (seconds, rc, out)

        p = subprocess.run(MPIRUN + ["-np", "4", dtrain, "train", "--mode", "ps", "--model", "mlp", "--limit", "1000",
                                     "--epochs", "1", "--threads", "1", "--progress", "none", "--eval-limit", "500",
                                     "--log", "", "--timeout", str(TIMEOUT)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "final test accuracy" in p.stdout, p.stdout + p.stderr

        t0 = time.time()
        p = subprocess.run(MPIRUN + ["-np", "3", dtrain, "train", "--mode", "ps", "--model", "resnet20", "--limit", "256",
                                     "--epochs", "2", "--threads", "1", "--progress", "none", "--log", "",
                                     "--timeout", "1"], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "final test accuracy" in p.stdout, p.stdout + p.stderr
        waits = [float(x) for x in p.stdout.split("workers waited ")[1].split(" s")[0].split(", ")]
        assert waits[1] > 2.25, (waits, "worker 1 waited less than its own deadline: the evaluation was too short to "
                                        "test the pause", p.stdout)
        print(f"evaluation past the timeout: {time.time() - t0:.1f} s, worker 1 waited {waits[1]:.1f} s")
    print("ps_fault: a stopped server and a stopped worker named within the timeout, a killed server ends the job, "
          "an uneven data size finishes, an evaluation longer than the timeout does not end the run")


if __name__ == "__main__":
    main()
