#!/usr/bin/env python3
"""The large-batch ablation: ResNet-20 on Fashion-MNIST (one input channel), 10 epochs per row,
final test accuracy and the steps to 90% test accuracy, at global batch 256 (the baseline), 2048
and 8192, plain and with each part of the large-batch recipe.

Every row runs on 2 ranks (mpirun -np 2, one thread each: this machine's two cores), and every
forward pass holds 128 samples per rank, so batch norm's statistics always come from 128
samples (Goyal et al. 2017, section 2.3: the per-worker batch is a batch-norm setting, not a
distributed one):
  256    2 ranks x 128
  2048   2 ranks x 1024, --accumulate 8
  8192   2 ranks x 4096, --accumulate 32

Rows for each large batch B:
  plain        the baseline's rate (0.1, cosine), nothing scaled
  linear       --lr-scaling linear from 256 (0.1 x B/256), gradual warmup over 2 epochs from the
               baseline's rate, zero-gamma and no decay on biases and batch norm (Goyal et al.)
  rmsprop      Akiba et al.: the linear rule, --optimizer rmsprop-warmup with its transition scaled
               from 90 epochs to 10 (centre 10 -> 1.11, period 5 -> 0.56), the slow-start schedule
  lars         LARS (trust 0.001), --lr 0.5 at 256 scaled linearly, warmup 2 epochs, cosine
  lamb         LAMB, --lr 0.005 at 256 scaled by sqrt (You et al. 2019), warmup 2 epochs, cosine
  best+last    the best of linear, rmsprop, lars and lamb at B with --bn-stats last-batch
  best+pop     the same with --bn-stats population:32 (32 x 128 = 4096 samples after each epoch)
and a second seed for the baseline and for the best recipe at each batch; at 30 epochs, the
baseline and the best recipe at 8192. The whole table takes hours here: every finished row is
kept in --out (one JSONL log per row) and a rerun continues where it stopped, inside a row too
(each row checkpoints; `kill -TERM` of its ranks stops it at the next step with a checkpoint).

    bench/large_batch_ablation.py                   # run what is missing, then print the table
    bench/large_batch_ablation.py --batches 2048    # only the 2048 rows (and the baseline)
    bench/large_batch_ablation.py --table           # print the table from what has finished
    bench/large_batch_ablation.py --batches 8192 --sweep lamb@0.01 lamb@0.02   # base-rate sweep rows
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

from benchlib import DEFAULT_DTRAIN, HERE, MPIRUN

BASE_BATCH = 256
PER_RANK = 128  # samples per rank and forward pass in every row
RANKS = 2
TRAIN_SAMPLES = 60000
COMMON = ["--model", "resnet20", "--threads", "1", "--weight-decay", "1e-4", "--progress", "none"]
RECIPES = ["linear", "rmsprop", "lars", "lamb"]
STOPPED = 75  # dtrain's exit status after a stop signal (src/train/stop_signal.h)


def recipe_flags(recipe, batch):
    """The flags of one row's recipe at global batch `batch` (the run's length comes separately).
    "lamb@0.01" is the recipe with its base rate (at 256, before scaling) replaced: a sweep row."""
    if "@" in recipe:
        name, lr = recipe.split("@")
        flags = recipe_flags(name, batch)
        flags[flags.index("--lr") + 1] = lr
        return flags
    scale = ["--lr-scaling", "linear", "--base-batch", str(BASE_BATCH)]
    warmup = ["--warmup-epochs", "2"]
    if recipe == "baseline" or recipe == "plain":
        return ["--lr", "0.1", "--schedule", "cosine"]
    if recipe == "linear":
        return ["--lr", "0.1", "--schedule", "cosine", *scale, *warmup]
    if recipe == "rmsprop":
        return ["--lr", "0.1", "--optimizer", "rmsprop-warmup", "--schedule", "slow-start",
                "--transition-centre", "1.11", "--transition-period", "0.56", *scale]
    if recipe == "lars":
        return ["--lr", "0.5", "--optimizer", "lars", "--schedule", "cosine", *scale, *warmup]
    if recipe == "lamb":
        return ["--lr", "0.005", "--optimizer", "lamb", "--schedule", "cosine", "--lr-scaling", "sqrt",
                "--base-batch", str(BASE_BATCH), *warmup]
    sys.exit(f"unknown recipe {recipe}")


def launch(batch):
    """How a global batch is run: mpirun and the per-rank batch and accumulation."""
    per_rank = batch // RANKS
    return MPIRUN + ["-np", str(RANKS)], ["--batch", str(per_rank), "--accumulate", str(per_rank // PER_RANK)]


def row_name(batch, recipe, seed, epochs, bn):
    bn_part = "" if bn == "running" else "+" + bn.split(":")[0]
    return f"b{batch}_{recipe}{bn_part}_s{seed}_e{epochs}"


def log_records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def diverged(path):
    """The divergence message of a row whose loss became NaN or Inf (dtrain stops such a run)."""
    marker = path + ".diverged"
    return open(marker).read().strip() if os.path.exists(marker) else None


def finished(path, epochs):
    epochs_done = [r for r in log_records(path) if r.get("type") == "epoch"]
    return len(epochs_done) >= epochs or diverged(path) is not None


def append_new_epochs(path, part):
    """The epoch records of a resumed run's log `part` that `path` lacks, appended to it."""
    done = max((r["epoch"] for r in log_records(path) if r.get("type") == "epoch"), default=0)
    with open(path, "a") as f:
        for r in log_records(part):
            if r.get("type") == "epoch" and r["epoch"] > done:
                f.write(json.dumps(r) + "\n")
    os.remove(part)


def run_row(a, batch, recipe, seed, epochs, bn="running"):
    """Runs one row to its end. Each row checkpoints every epoch (and on SIGTERM or SIGUSR1, at the
    step it is at) into ROW.ckpt: a row stopped or killed part way continues from there when the
    script runs again, exactly, its log continued."""
    path = os.path.join(a.out, row_name(batch, recipe, seed, epochs, bn) + ".jsonl")
    if finished(path, epochs):
        return path
    ckpt = path[:-len(".jsonl")] + ".ckpt"
    resume = os.path.isdir(ckpt) and any(f.endswith(".safetensors") for f in os.listdir(ckpt))
    log = path + ".part" if resume else path
    mpirun, split = launch(batch)
    cmd = mpirun + [a.dtrain, "train", *COMMON, *split, *recipe_flags(recipe, batch), "--epochs", str(epochs),
                    "--seed", str(seed), "--bn-stats", bn, "--checkpoint-dir", ckpt, "--keep", "1", "--log", log]
    cmd += ["--resume"] if resume else []
    print("running", " ".join(cmd[len(mpirun):]), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=6 * 3600)
    if resume and os.path.exists(log):
        append_new_epochs(path, log)
    if p.returncode == STOPPED:
        sys.exit(f"stopped by a signal with a checkpoint in {ckpt}: run the script again to continue")
    if p.returncode == 0:
        shutil.rmtree(ckpt, ignore_errors=True)
    if p.returncode != 0:
        out = p.stdout + p.stderr
        if "the loss became" not in out:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{out}")
        line = next(l for l in out.splitlines() if "the loss became" in l)
        with open(path + ".diverged", "w") as f:
            f.write(line + "\n")
    return path


def summary(path, batch):
    if diverged(path) is not None:
        return {"accuracy": 0.0, "epochs": 0, "steps": 0, "to90": None, "hours": 0, "diverged": True}
    records = log_records(path)
    epochs = [r for r in records if r.get("type") == "epoch"]
    if not epochs:
        return None
    steps_per_epoch = TRAIN_SAMPLES // batch
    to90 = next((r["iteration"] for r in epochs if r["test_accuracy"] >= 0.90), None)
    return {"accuracy": epochs[-1]["test_accuracy"], "epochs": len(epochs), "steps": steps_per_epoch * len(epochs),
            "to90": to90, "hours": sum(r["epoch_seconds"] for r in epochs) / 3600}


def best_recipe(a, batch):
    """The recipe with the highest final accuracy at `batch` among those finished, or None."""
    scored = []
    for recipe in RECIPES:
        s = summary(os.path.join(a.out, row_name(batch, recipe, 0, a.epochs, "running") + ".jsonl"), batch)
        if s:
            scored.append((s["accuracy"], recipe))
    return max(scored)[1] if len(scored) == len(RECIPES) else None


def plan(a):
    """Every row in run order: (batch, recipe, seed, epochs, bn)."""
    rows = [(BASE_BATCH, "baseline", 0, a.epochs, "running"), (BASE_BATCH, "baseline", 1, a.epochs, "running")]
    for batch in a.batches:
        rows += [(batch, r, 0, a.epochs, "running") for r in ["plain"] + RECIPES]
    return rows


def later_rows(a):
    """The rows that depend on the best recipe (known once its batch's four recipes finished)."""
    rows = []
    for batch in a.batches:
        rows += [(batch, r, 0, a.epochs, "running") for r in a.sweep]
        best = best_recipe(a, batch)
        if best is None:
            continue
        rows += [(batch, best, 0, a.epochs, "last-batch"), (batch, best, 0, a.epochs, "population:32"),
                 (batch, best, 1, a.epochs, "running")]
        if batch == max(a.batches) and a.long_epochs > 0:
            rows += [(BASE_BATCH, "baseline", 0, a.long_epochs, "running"), (batch, best, 0, a.long_epochs, "running")]
    return rows


def fmt_acc(s):
    if s and s.get("diverged"):
        return "diverged"
    return f"{100 * s['accuracy']:.2f}" if s else "-"


def table(a):
    base = [summary(os.path.join(a.out, row_name(BASE_BATCH, "baseline", seed, a.epochs, "running") + ".jsonl"),
                    BASE_BATCH) for seed in (0, 1)]
    ref = base[0]["accuracy"] if base[0] else None
    lines = ["| global batch | run as | recipe | BN statistics | seed | epochs | steps | test acc % | vs baseline | "
             "steps to 90% |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for batch, recipe, seed, epochs, bn in plan(a) + later_rows(a):
        s = summary(os.path.join(a.out, row_name(batch, recipe, seed, epochs, bn) + ".jsonl"), batch)
        per_rank = batch // RANKS
        run_as = f"2 x {per_rank}" + (f" / {per_rank // PER_RANK}" if per_rank > PER_RANK else "")
        gap = f"{100 * (s['accuracy'] - ref):+.2f}" if s and ref is not None and not s.get("diverged") else "-"
        if s and not s.get("diverged") and s["epochs"] < epochs:
            gap = f"(at epoch {s['epochs']}, unfinished)"
        to90 = s["to90"] if s and s["to90"] is not None else "-"
        lines.append(f"| {batch} | {run_as} | {recipe} | {bn} | {seed} | {epochs} | {s['steps'] if s else '-'} | "
                     f"{fmt_acc(s)} | {gap} | {to90} |")
    print("\n".join(lines))
    print(f"\nrun as: ranks x per-rank batch / accumulation (128 samples per forward pass and rank). "
          f"Baseline seeds: {', '.join(fmt_acc(b) for b in base)}.")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtrain", default=DEFAULT_DTRAIN)
    p.add_argument("--out", default=os.path.join(HERE, "results", "large_batch"), help="one JSONL log per row")
    p.add_argument("--batches", type=int, nargs="+", default=[2048, 8192])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--long-epochs", type=int, default=30, help="the longer budget's epochs (0: skip those rows)")
    p.add_argument("--sweep", nargs="+", default=[], metavar="RECIPE@LR",
                   help="extra rows at each batch with a recipe's base rate replaced, e.g. lamb@0.01")
    p.add_argument("--table", action="store_true", help="print the table from the finished rows only")
    a = p.parse_args()
    for b in a.batches:
        if b % (RANKS * PER_RANK) != 0:
            sys.exit(f"--batches: {b} is not a multiple of {RANKS} ranks x {PER_RANK}")
    os.makedirs(a.out, exist_ok=True)
    if not a.table:
        for row in plan(a):
            run_row(a, *row)
        for row in later_rows(a):
            run_row(a, *row)
    table(a)


if __name__ == "__main__":
    main()
