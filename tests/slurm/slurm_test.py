#!/usr/bin/env python3
"""dtrain on a real single-node Slurm cluster (tools/slurm/cluster.sh starts it, tearDownModule
stops it by process id).

Every job trains the same small run; its last checkpoint must equal, byte for byte, the one plain
`mpirun -np 2` writes:
- launched by `srun --mpi=pmix`;
- launched by `sbatch` + `mpirun` (tools/slurm/dtrain-job.sh) and preempted by a job in the
  higher-priority partition (SIGTERM, checkpoint, requeue, resume); an uninterrupted sbatch job
  runs the same launch path and is left out for CI's time;
- requeued by `scontrol requeue`;
- warned by USR1 (as `--signal=B:USR1@N` warns before the time limit): it stops, requeues
  itself and resumes;
- two jobs time-sliced by gang scheduling (suspended and resumed every 10 s);
- a queue of two jobs run by `dtrain schedule --submit` under fifo: the second starts when the
  first ends, and each ends with the parameters its plain `mpirun` run gives;
- the same under srtf with `--preempt suspend`: a shorter arrival suspends the running job
  (scontrol suspend) and it resumes in place (scontrol resume), ending as plain `mpirun`.
Rank 0 sleeps through most of each step (--slow-rank 0 --slow-factor 6), so jobs last long enough
to be interrupted while leaving the CPUs to the rest of the suite.

Usage: slurm_test.py DTRAIN_BINARY REPO_ROOT. Skips (status 77) where Slurm is not installed.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

DTRAIN = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
REPO = pathlib.Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else pathlib.Path(__file__).resolve().parents[2]
CLUSTER = REPO / "tools" / "slurm" / "cluster.sh"
JOB = REPO / "tools" / "slurm" / "dtrain-job.sh"
ROOT = pathlib.Path(tempfile.mkdtemp(prefix="dtrain-slurm-"))
CONF = ROOT / "cluster"
RUN = ["train", "--limit", "2048", "--epochs", "2", "--eval-limit", "200", "--threads", "1", "--progress", "lines",
       "--allreduce", "ring", "--checkpoint-every", "8", "--slow-rank", "0", "--slow-factor", "6", "--log", ""]
FINAL = "ckpt-000000000032.safetensors"  # 2 epochs of 16 steps (2048 samples, 64 per rank x 2)
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
ENV = dict(os.environ, SLURM_CONF=str(CONF / "slurm.conf"), OMPI_MCA_rmaps_base_oversubscribe="1")


def run(command, timeout=120, check=True):
    p = subprocess.run([str(c) for c in command], env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, command))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def submit(*options, launcher="mpirun", directory):
    """sbatch's job id for a 2-rank dtrain job checkpointing in `directory`."""
    out = run(["sbatch", "--parsable", "--requeue", "--open-mode=append", "-n", "2", "-o", f"{directory}.out",
               *options, JOB, launcher, DTRAIN, *RUN, "--checkpoint-dir", directory])
    return out.stdout.strip().split(";")[0]


def state(job):
    """squeue's state of the job ('' once it has left the queue)."""
    return run(["squeue", "-h", "-j", job, "-o", "%T"], check=False).stdout.strip()


def wait_for(predicate, what, timeout=240):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_done(job, timeout=240):
    wait_for(lambda: state(job) == "", f"job {job} to finish", timeout)


def steps_done(directory):
    """Global steps of the checkpoints written so far."""
    d = pathlib.Path(directory)
    return sorted(int(p.stem.split("-")[1]) for p in d.glob("ckpt-*.safetensors")) if d.exists() else []


def schedule_on_slurm(work, rows, *flags):
    """dtrain schedule --submit of a queue of dtrain rows on the 2-rank cluster: its output and jobs by name."""
    trace = pathlib.Path(f"{work}.csv")
    trace.write_text("name,model,dataset,epochs,batch,min_ranks,max_ranks,submit_time,priority\n" +
                     "".join(r + "\n" for r in rows))
    out = run([DTRAIN, "schedule", "--trace", trace, "--nodes", "1", "--ranks-per-node", "2", "--profile",
               "2xskylake-sp-upi", "--json", "--submit", "--work-dir", work, "--job-script", JOB, *flags],
              timeout=300)
    return out, {j["name"]: j for j in json.loads(out.stdout)["policies"][0]["jobs"]}


def setUpModule():
    if shutil.which("slurmctld") is None or shutil.which("sbatch") is None:
        raise unittest.SkipTest("Slurm is not installed (tools/packages.txt: slurmctld slurmd slurm-client munge)")
    run([CLUSTER, "start", CONF], timeout=90)
    global BASELINE
    BASELINE = ROOT / "plain"
    run([*MPIRUN, "-np", "2", DTRAIN, *RUN, "--checkpoint-dir", BASELINE], timeout=300)


def tearDownModule():
    if CONF.exists():
        run(["scancel", "--user", os.environ.get("USER", "root")], check=False)
        run([CLUSTER, "stop", CONF], check=False)
    shutil.rmtree(ROOT, ignore_errors=True)


class SlurmTest(unittest.TestCase):
    def assert_same_as_plain_mpirun(self, directory):
        final = pathlib.Path(directory) / FINAL
        log = pathlib.Path(f"{directory}.out")
        self.assertTrue(final.exists(), f"{final} missing; job output:\n{log.read_text() if log.exists() else ''}")
        self.assertEqual(final.read_bytes(), (BASELINE / FINAL).read_bytes(),
                         f"{final} differs from plain mpirun's")

    def test_srun_pmix_gives_the_run_plain_mpirun_gives(self):
        d = ROOT / "srun"
        run(["srun", "--mpi=pmix", "-n", "2", DTRAIN, *RUN, "--checkpoint-dir", d], timeout=300)
        self.assert_same_as_plain_mpirun(d)

    def test_a_preempted_job_checkpoints_requeues_and_resumes_exactly(self):
        d = ROOT / "preempted"
        job = submit("-p", "low", directory=d)
        wait_for(lambda: state(job) == "RUNNING" and steps_done(d), "the low job's first checkpoint")
        high = run(["sbatch", "--parsable", "-p", "high", "-n", "2", "-o", "/dev/null", "--wrap", "sleep 2"])
        wait_done(job)
        wait_done(high.stdout.strip())
        out = pathlib.Path(f"{d}.out").read_text()
        self.assertIn("DUE TO PREEMPTION", out)
        self.assertIn("requeued by Slurm: resuming", out)
        self.assertIn("(restart 1)", out)
        self.assert_same_as_plain_mpirun(d)

    def test_scontrol_requeue_resumes_exactly(self):
        d = ROOT / "requeued"
        job = submit(launcher="srun", directory=d)
        wait_for(lambda: state(job) == "RUNNING" and steps_done(d), "the job's first checkpoint")
        run(["scontrol", "requeue", job])
        wait_done(job)
        out = pathlib.Path(f"{d}.out").read_text()
        self.assertIn("resumed from", out)
        self.assert_same_as_plain_mpirun(d)

    def test_a_warning_signal_stops_requeues_and_resumes(self):
        d = ROOT / "warned"
        job = submit(directory=d)
        wait_for(lambda: state(job) == "RUNNING" and steps_done(d), "the job's first checkpoint")
        # What --signal=B:USR1@N delivers N seconds before the time limit.
        run(["scancel", "--batch", "--signal=USR1", job])
        wait_done(job)
        out = pathlib.Path(f"{d}.out").read_text()
        self.assertIn("stopping on SIGUSR1", out)
        self.assertIn("ended with status 75 (restart 0)", out)
        self.assertIn("(restart 1)", out)
        self.assert_same_as_plain_mpirun(d)

    def test_two_gang_scheduled_jobs_are_time_sliced_and_both_finish_exactly(self):
        a, b = ROOT / "gang-a", ROOT / "gang-b"
        jobs = [submit("-p", "gang", directory=a), submit("-p", "gang", directory=b)]
        suspended = set()

        def finished():
            states = [state(j) for j in jobs]
            suspended.update(j for j, s in zip(jobs, states) if s == "SUSPENDED")
            return all(s == "" for s in states)

        wait_for(finished, "both gang jobs", timeout=300)
        self.assertTrue(suspended, "gang scheduling never suspended either job")
        self.assert_same_as_plain_mpirun(a)
        self.assert_same_as_plain_mpirun(b)

    def test_dtrain_schedule_submit_runs_a_queue_in_policy_order_exactly(self):
        work = ROOT / "queue"
        _, jobs = schedule_on_slurm(work, ["first,mlp,fashion-mnist,2,64,2,2,0,0",
                                             "second,mlp,fashion-mnist,1,64,2,2,1,0"], "--policy", "fifo")
        self.assertEqual(set(jobs), {"first", "second"})
        # fifo on 2 ranks: the second job waits for the first; both ran on the 2 ranks they asked.
        self.assertGreaterEqual(jobs["second"]["start_s"], jobs["first"]["end_s"] - 1.0)
        for name, job in jobs.items():
            self.assertGreater(job["jct_s"], 0, name)
            self.assertEqual({g["ranks"] for g in job["segments"]}, {2}, name)
        for name, epochs in (("first", 2), ("second", 1)):
            self.assert_same_as_plain_mpirun_run(work / name, "mlp", epochs, name)

    def test_dtrain_schedule_submit_suspends_a_job_and_resumes_it_in_place_exactly(self):
        work = ROOT / "suspend"
        # srtf: the short job arrives while the long one runs (the model prices lenet's two epochs
        # at 3.6 s on this profile, mlp's one at 0.2 s), so the long one is suspended, not
        # requeued. --limit keeps both short in fact; the model prices the rows without it.
        limit = ["--limit", "4096"]
        out, jobs = schedule_on_slurm(work, ["long,lenet,fashion-mnist,2,64,2,2,0,0",
                                             "short,mlp,fashion-mnist,1,64,2,2,2,0"], "--policy", "srtf",
                                      "--preempt", "suspend", "--launcher", "mpirun", "--train-flags", " ".join(limit))
        self.assertIn("(scontrol suspend", out.stderr)
        self.assertIn("(scontrol resume", out.stderr)
        self.assertEqual(jobs["long"]["preemptions"], 1)
        self.assertGreaterEqual(jobs["long"]["end_s"], jobs["short"]["end_s"])
        self.assert_same_as_plain_mpirun_run(work / "long", "lenet", 2, "long", limit)
        self.assert_same_as_plain_mpirun_run(work / "short", "mlp", 1, "short", limit)

    def assert_same_as_plain_mpirun_run(self, directory, model, epochs, name, flags=()):
        """The last checkpoint in `directory` equals that of plain mpirun training `model` for `epochs`."""
        plain = ROOT / f"plain-{model}-{epochs}{''.join(flags)}"
        if not plain.exists():
            run([*MPIRUN, "-np", "2", DTRAIN, "train", "--model", model, "--dataset", "fashion-mnist", "--epochs",
                 epochs, "--batch", "64", "--threads", "1", "--checkpoint-dir", plain, "--log", "", *flags],
                timeout=300)
        final = max(directory.glob("ckpt-*.safetensors"))
        self.assertEqual(final.name, max(plain.glob("ckpt-*.safetensors")).name, name)
        self.assertEqual(final.read_bytes(), (plain / final.name).read_bytes(),
                         f"{name}: the scheduled job's parameters differ from plain mpirun's")

if __name__ == "__main__":
    argv = [sys.argv[0]] + sys.argv[3:]
    result = unittest.main(argv=argv, exit=False, verbosity=2).result
    if result.skipped and not result.testsRun - len(result.skipped):
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
