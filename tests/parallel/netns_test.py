#!/usr/bin/env python3
"""`dtrain train` across two emulated hosts (registered by tests.cmake).

usage: netns_test.py DTRAIN NETNS_HOSTS_SH ALGORITHM

Two network namespaces joined by a veth pair stand for two machines (tools/netns_hosts.sh); mpirun
starts one rank in each, the second through the `ip netns exec` launch agent in place of ssh, and
the ranks talk TCP over the veth link only. The test checks what mpi_cli_test.py's loss_curve
checks on one host: batch 32 per rank on 2 hosts follows one process with batch 64 (max relative
difference of the loss over the first 20 steps < 1e-4, f32 communication), and in addition that
the gradients really crossed the link (the link's byte counters). With ALGORITHM shm, which needs
every rank on one host, it checks instead that both ranks stop at start-up with an error saying so.

Exits 77 (ctest: skipped) with the reason where namespaces cannot be made (not root, no iproute2,
a container without the capability).
"""
import json, os, subprocess, sys, tempfile

SKIP = 77
COMMON = ["--model", "lenet", "--limit", "1280", "--epochs", "1", "--eval-limit", "100", "--threads", "1",
          "--schedule", "constant", "--log-every", "1", "--progress", "lines"]
LOSS_CURVE_LR = ["--lr", "0.02"]  # as mpi_cli_test.py: a stable run, so rounding is not amplified


def run(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout + p.stderr


def step_losses(path):
    with open(path) as f:
        return [r["loss"] for r in map(json.loads, f) if r["type"] == "step"]


def link_bytes(namespace):
    """Bytes sent on the emulated link by `namespace` (its veth end's tx counter)."""
    out = subprocess.run(["ip", "-n", namespace, "-j", "-s", "link", "show", "link0"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)[0]["stats64"]["tx"]["bytes"]


def main():
    dtrain, hosts, algorithm = sys.argv[1], sys.argv[2], sys.argv[3]
    name = f"dtt{os.getpid()}"
    env = dict(os.environ, NETNS_NAME=name)
    rc, out = run([hosts, "check"], env)
    if rc == SKIP:
        print(f"SKIPPED: {out.strip()}")
        return SKIP
    assert rc == 0, out

    with tempfile.TemporaryDirectory() as d:
        single, multi = os.path.join(d, "single.jsonl"), os.path.join(d, "multi.jsonl")
        rc, out = run([dtrain, "train", *COMMON, *LOSS_CURVE_LR, "--batch", "64", "--log", single])
        assert rc == 0, out
        try:
            rc, out = run([hosts, "up"], env)
            assert rc == 0, out
            rc, out = run([hosts, "mpirun", "-np", "2", "--host", "10.78.0.1:1,10.78.0.2:1", dtrain, "train",
                           *COMMON, *LOSS_CURVE_LR, "--batch", "32", "--allreduce", algorithm, "--timeout", "60", "--log",
                           multi], env)
            if algorithm == "shm":
                assert rc != 0, out
                assert "--allreduce shm needs every rank on one host" in out, out
                print("shm across 2 namespaces: refused at start-up:",
                      next(line for line in out.splitlines() if "needs every rank" in line))
                return 0
            assert rc == 0, out
            sent = [link_bytes(f"{name}-h{k}") for k in (1, 2)]
        finally:
            run([hosts, "down"], env)
        leftovers = [n for n in os.listdir("/run/netns") if n.startswith(name)] if os.path.isdir("/run/netns") else []
        assert not leftovers, f"namespaces left behind: {leftovers}"

        a, b = step_losses(single), step_losses(multi)
        assert len(a) == len(b) == 20, (len(a), len(b))
        worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
        # LeNet's 3 274 634 f32 gradients (13.1 MB) per step; on 2 ranks every algorithm sends at
        # least the whole vector's worth each way per step (ring: two halves, 2(p-1)/p of it).
        gradient_bytes = 20 * 3274634 * 4
        print(f"{algorithm} across 2 namespaces: max relative loss difference over 20 steps {worst:.2e}; "
              f"link bytes sent h1->h2 {sent[0]}, h2->h1 {sent[1]}")
        assert worst < 1e-4, (a, b)
        assert min(sent) >= gradient_bytes, f"too little traffic on the emulated link: {sent} < {gradient_bytes}"
    return 0


if __name__ == "__main__":
    sys.exit(main())
