#!/usr/bin/python3
"""Writes the golden files of the PyTorch comparison test (tests/nn/golden_test.cpp).

For each reference workload W1-W3 of shared/peers/models.py (copied as tools/reference_models.py),
sets every parameter from a closed-form pattern the C++ test reproduces exactly, runs one forward
and backward in training mode on a closed-form batch, and stores the logits, the loss and every
parameter gradient (tensors over 8192 elements as 2048 evenly strided samples plus their sum and
sum of squares, to keep the files small). Run once with Debian's python3-torch:
    /usr/bin/python3 tools/make_golden.py tests/data/golden
"""
import json, os, sys
import torch, torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as models

BATCH = 4
FULL_LIMIT = 8192
SAMPLES = 2048

def pattern(k, i):
    # Integer arithmetic only, so C++ and Python produce the same values bit for bit.
    return ((i * 7919 + k * 104729) % 2001 - 1000) / 1000.0

def fill(name, t, k):
    n = t.numel()
    h = torch.tensor([pattern(k, i) for i in range(n)], dtype=torch.float64)
    if t.dim() == 1 and name.endswith("weight"):      # batch-norm gamma
        v = 1.0 + 0.1 * h
    elif t.dim() == 1:                                 # biases, batch-norm beta
        v = 0.1 * h
    else:
        fan_in = n // t.shape[0]
        v = h / fan_in ** 0.5
    t.copy_(v.reshape(t.shape).to(torch.float32))

def short(values):
    return [float(f"{v:.9g}") for v in values]  # 9 significant digits round-trip an f32

def summarize(t):
    flat = t.detach().reshape(-1).double()
    out = {"shape": list(t.shape)}
    if flat.numel() <= FULL_LIMIT:
        out["values"] = short(flat.tolist())
    else:
        stride = flat.numel() // SAMPLES
        out["stride"] = stride
        out["samples"] = short(flat[::stride][:SAMPLES].tolist())
        out["sum"] = flat.sum().item()
        out["sum_sq"] = (flat * flat).sum().item()
    return out

def run(name, cin, hw):
    m = models.MODELS[name]() if name != "resnet20" else models.ResNet20(cin=cin)
    with torch.no_grad():
        for k, (pname, p) in enumerate(m.named_parameters()):
            fill(pname, p, k)
    n = BATCH * cin * hw * hw
    x = torch.tensor([((i * 31 + 7) % 255) / 255.0 for i in range(n)], dtype=torch.float32).reshape(BATCH, cin, hw, hw)
    y = torch.tensor([i % 10 for i in range(BATCH)], dtype=torch.int64)
    m.train()
    logits = m(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    return {
        "model": name, "in_channels": cin, "image_size": hw, "batch": BATCH,
        "num_parameters": sum(p.numel() for p in m.parameters()),
        "parameter_names": [pn for pn, _ in m.named_parameters()],
        "logits": summarize(logits), "loss": loss.item(),
        "grads": {pn: summarize(p.grad) for pn, p in m.named_parameters()},
        "buffers": {bn: summarize(b) for bn, b in m.named_buffers() if b.dtype == torch.float32},
        "torch_version": torch.__version__,
    }

def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/golden"
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for name, cin, hw in [("mlp", 1, 28), ("lenet", 1, 28), ("resnet20", 3, 32), ("resnet20", 1, 28)]:
        g = run(name, cin, hw)
        path = os.path.join(out_dir, f"{name}_c{cin}.json")
        with open(path, "w") as f:
            json.dump(g, f, separators=(",", ":"))
        print(path, g["num_parameters"], "parameters, loss", g["loss"])

if __name__ == "__main__":
    main()
