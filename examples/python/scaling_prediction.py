#!/usr/bin/env python3
"""How ResNet-50 on ImageNet would scale from 1 to 256 GPUs, by dtrain's performance model, for a
few allreduce algorithms: a notebook in cells (`# %%`, as VS Code and Jupytext read them) that
also runs as a script:

    PYTHONPATH=build/release/python python3 examples/python/scaling_prediction.py [scaling.png]

With matplotlib installed (Debian: python3-matplotlib) it plots speedup against workers into the
PNG (default scaling.png); without it, it prints the table.
"""

# %% The question: a model, a machine and the configurations to compare.
import sys

import dtrain

profile = dtrain.Profile.compose("8xv100-nvlink+ib-edr")  # 8 V100s per node, nodes on InfiniBand EDR
print(profile)
workers = [1, 2, 4, 8, 16, 32, 64, 128, 256]
algorithms = ["ring", "tree", "butterfly", "onetoall"]

# %% The prediction: one row per worker count and algorithm (one worker once), with every field of
# `dtrain predict --json`.
rows = dtrain.predict(model="resnet50", dataset="imagenet", workers=workers, batch_per_worker=32,
                      profile=profile, allreduce=algorithms)
# Speedup over one worker with the same batch per worker (weak scaling), per algorithm.
speedup = {a: [r.speedup for r in rows if r.workers == 1 or r.exchange == a] for a in algorithms}
best = {b["workers"]: b["exchange"] for b in rows.best}

# %% Plot it, or print it where matplotlib is missing.
# In a notebook sys.argv holds the kernel's arguments: only a .png argument is taken as the output.
out = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].endswith(".png") else "scaling.png"
try:
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

if plt is not None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(workers, workers, color="lightgray", linestyle="--", label="ideal")
    for a in algorithms:
        ax.plot(workers, speedup[a], marker="o", label=a)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("workers (GPUs)")
    ax.set_ylabel("speedup over one worker")
    ax.set_title(f"{rows.model} on {rows.dataset}, batch 32 per worker, {profile.name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"speedup chart: {out}")
else:
    print(f"speedup of {rows.model} on {rows.dataset}, batch 32 per worker (matplotlib is not installed: "
          "no chart)")
    print(f"{'workers':>7}  " + "  ".join(f"{a:>9}" for a in algorithms) + "  best")
    for i, w in enumerate(workers):
        print(f"{w:>7}  " + "  ".join(f"{speedup[a][i]:>9.1f}" for a in algorithms) + f"  {best.get(w, '')}")

# %% Every field of the model, as the command prints it.
print()
print(rows.table)
