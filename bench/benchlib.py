"""Helpers shared by the distributed benchmark scripts in this folder: where the binaries and the
peers are, how to start mpirun, running a command and reading its key=value output, and the
machine's load (the development machine is shared, so every table records the load it ran under).
"""
import os, re, signal, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_DTRAIN = os.path.join(ROOT, "build/release/bin/dtrain")
DEFAULT_PEERS = os.path.join(os.path.dirname(ROOT), "shared/peers")
NETNS_HOSTS = os.path.join(ROOT, "tools/netns_hosts.sh")
# --bind-to none: with more ranks than the binding policy expects, Open MPI would pin ranks to
# cores that other ranks also use.
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
median = statistics.median


def add_common_args(parser):
    parser.add_argument("--dtrain", default=DEFAULT_DTRAIN, help="the dtrain binary")
    parser.add_argument("--peers", default=DEFAULT_PEERS, help="the shared peers folder")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (medians are printed)")
    parser.add_argument("--quiet", type=int, default=0,
                        help="before each run, wait until at most this many threads are runnable (0: don't)")
    parser.add_argument("--quiet-max", type=float, default=120, help="longest wait for a quiet moment, seconds")


# The peers' interpreter (shared/peers/torch_tuned.sh runs it): Debian's python3 with its
# python3-torch, not a python3 earlier on PATH.
PEER_PYTHON = "/usr/bin/python3"
TORCH_PACKAGES = "python3-torch libopenblas0-openmp"


def require_torch(skip_flag=None):
    """Exits with how to install PyTorch (or skip the peer) where the peers' interpreter lacks it."""
    p = subprocess.run([PEER_PYTHON, "-c", "import torch"], capture_output=True, text=True)
    if p.returncode != 0:
        skip = f", or pass {skip_flag} to measure dtrain alone" if skip_flag else ""
        sys.exit(f"PyTorch, which the peers run on, is not importable by {PEER_PYTHON}: install Debian 12's "
                 f"build (apt-get install -y --no-install-recommends {TORCH_PACKAGES}){skip}")


def profile_for(a, ranks, models, tmp):
    """a.profile when given, else a calibration of this machine under mpirun -np `ranks` (1 thread
    per rank, a.batch, `models`) written into the folder `tmp`."""
    if a.profile:
        return a.profile
    path = os.path.join(tmp, "profile.json")
    run(MPIRUN + ["-np", str(ranks), a.dtrain, "calibrate", "--threads", "1", "--batch", str(a.batch),
                  "--models", models, "-o", path], timeout=1800)
    return path


def run(cmd, env=None, timeout=900):
    """Runs cmd, returns its stdout; exits with its output on failure."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def run_peak_rss(cmd, env=None):
    """Runs cmd under /usr/bin/time -v; returns (stdout, its peak RSS in MiB); exits on failure."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) / 1024
    return p.stdout, rss


def run_until_line(cmd, pattern, env=None, timeout=900, grace=15):
    """Runs cmd until a stdout line matches `pattern`, then gives it `grace` seconds to exit and
    kills its process group if it does not (torch 1.13 DDP can deadlock at interpreter exit after
    printing its result). Returns the matching line."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    found, lines, start = None, [], time.time()
    for line in p.stdout:
        lines.append(line)
        if re.search(pattern, line):
            found = line
            break
        if time.time() - start > timeout:
            break
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    if found is None:
        sys.exit(f"no line matching {pattern!r} from: {' '.join(cmd)}\n{''.join(lines)}")
    return found


def fields(text, prefix="dtrain"):
    """key=value pairs of the first line of `text` starting with `prefix`, numbers as floats."""
    for line in text.splitlines():
        if line.startswith(prefix):
            out = {}
            for k, v in re.findall(r"(\w+)=(\S+)", line):
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
            return out
    raise ValueError(f"no line starting with {prefix!r} in:\n{text}")


def runnable():
    """Threads running or ready to run right now, machine-wide (this one included)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running"):
                return int(line.split()[1])
    return 0


def wait_quiet(limit, max_wait=120):
    """Waits (up to max_wait seconds) until the machine has been quiet for 3 s: at most `limit`
    runnable threads (this script's own included) in each of 12 samples. limit <= 0: no wait.
    Returns the seconds waited. A shared machine's load comes and goes; measuring in its quiet
    moments gives figures closer to an idle machine's without stopping anybody else's work."""
    if limit <= 0:
        return 0.0
    start = time.time()
    while time.time() - start < max_wait:
        ok = True
        for _ in range(12):
            if runnable() > limit:
                ok = False
                break
            time.sleep(0.25)
        if ok:
            return time.time() - start
        time.sleep(1)
    return time.time() - start


def load():
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def header(title):
    print(f"# {title}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} cores, {load()} (start)", flush=True)


def footer():
    print(f"# {load()} (end)", flush=True)


def size_label(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"
