#!/usr/bin/env python3
"""Runs a long, mostly waiting test beside the rest of the suite without holding a ctest slot.

  background.py start DIR -- COMMAND...   starts COMMAND detached (output in DIR/output.txt), returns
  background.py wait DIR [TIMEOUT]        waits for it, prints its output, exits with its status

The Slurm test spends most of its ~2.5 minutes waiting for the cluster (requeues, time slices);
holding one of the suite's two ctest slots that long would idle a core.
"""
import pathlib
import subprocess
import sys
import time


def start(directory, command):
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("status", "output.txt"):
        (directory / name).unlink(missing_ok=True)
    script = 'status_file="$1"; shift; "$@"; echo $? > "$status_file"'
    with open(directory / "output.txt", "w") as out:
        subprocess.Popen(["sh", "-c", script, "sh", str(directory / "status"), *command], stdout=out,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return 0


def wait(directory, timeout):
    status = directory / "status"
    end = time.time() + timeout
    while not status.exists() or not status.read_text().strip():
        if time.time() > end:
            print(f"background.py: no result in {directory} after {timeout} s (was it started?)")
            return 1
        time.sleep(1)
    print((directory / "output.txt").read_text())
    return int(status.read_text())


if __name__ == "__main__":
    action, directory = sys.argv[1], pathlib.Path(sys.argv[2])
    if action == "start":
        sys.exit(start(directory, sys.argv[sys.argv.index("--") + 1:]))
    sys.exit(wait(directory, float(sys.argv[3]) if len(sys.argv) > 3 else 900))
