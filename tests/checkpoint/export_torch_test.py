#!/usr/bin/python3
"""dtrain export -> PyTorch.

Trains LeNet briefly with dtrain, exports the final checkpoint with `dtrain export --format
safetensors`, reads the file with a short reader of the published format (Debian packages no
safetensors module for Python) into torch tensors, loads them strictly into the reference LeNet of
shared/peers/models.py and checks that PyTorch's accuracy on the Fashion-MNIST test set equals
dtrain's own evaluation of the same checkpoint. A ResNet-20 export (batch norm with running
statistics and num_batches_tracked) is checked the same way on a few samples.

usage: export_torch_test.py DTRAIN_BINARY REFERENCE_MODELS_PY
Exit status 77 (skipped) where python3-torch or the dataset is missing.
"""
import gzip
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile

SKIP = 77
FMNIST = "/usr/share/datasets/fashion-mnist"

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIPPED: needs Debian's python3-torch and python3-numpy ({e})")
    sys.exit(SKIP)
if not os.path.exists(os.path.join(FMNIST, "t10k-images-idx3-ubyte.gz")):
    print(f"SKIPPED: needs Debian's dataset-fashion-mnist package ({FMNIST})")
    sys.exit(SKIP)

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


def read_safetensors(path):
    """The published format: u64 little-endian header length, JSON header, raw little-endian data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        raw = bytearray(blob[base + begin:base + end])
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors, metadata


def idx(name):
    with gzip.open(os.path.join(FMNIST, name), "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def accuracy(model, limit):
    # dtrain's inputs: x / 255 in single precision, no normalisation.
    x = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz")[:limit].astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz")[:limit].astype(np.int64))
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), 1000):
            correct += int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
    return correct, len(y)


def check(dtrain, models, tmp, name, model, train_flags, eval_limit):
    ckpt = os.path.join(tmp, name)
    out = os.path.join(tmp, name + ".safetensors")
    subprocess.run([dtrain, "train", "--model", name, "--threads", "2", "--log", "", "--checkpoint-dir", ckpt,
                    "--eval-limit", str(eval_limit)] + train_flags, check=True)
    subprocess.run([dtrain, "export", "--checkpoint", ckpt, "--format", "safetensors", "--out", out], check=True)
    tensors, metadata = read_safetensors(out)
    model.load_state_dict(tensors, strict=True)  # every name and shape must match
    correct, total = accuracy(model, eval_limit)
    theirs = json.loads(metadata["dtrain.test_accuracy"])
    ours = correct / total
    print(f"{name}: PyTorch {correct}/{total} = {ours:.4f}, dtrain {theirs:.4f}")
    if round(theirs * total) != correct:
        print(f"FAILED: {name} exported to PyTorch scores {ours} but {theirs} in dtrain")
        return False
    return True


def main():
    dtrain, models_path = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("reference_models", models_path)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        ok = check(dtrain, models, tmp, "lenet", models.LeNet(), ["--limit", "2048", "--epochs", "1"], 10000)
        ok &= check(dtrain, models, tmp, "resnet20", models.ResNet20(cin=1),
                    ["--limit", "512", "--epochs", "1", "--batch", "32"], 1000)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
