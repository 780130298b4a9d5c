#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/TARGET/): small valid files of each
format, written from the published formats independently of dtrain's own writers. Run from the
repository root; the output is committed, so this only needs rerunning when a format changes."""
import gzip
import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def idx(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def safetensors(tensors, metadata, checksum=False):
    """tensors: list of (name, dtype, shape, bytes) in data order."""
    header, offset, data = {}, 0, b""
    entries = []
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        entries.append((offset, offset + len(raw), name, dtype, shape))
        offset += len(raw)
        data += raw
    if checksum:  # dtrain's checksum: canonical entries and metadata, then the data
        canonical = "".join(f"{n}\t{d}\t{','.join(map(str, s))}\t{b},{e}\n" for b, e, n, d, s in sorted(entries))
        canonical += "".join(f"{k}\t{v}\n" for k, v in sorted(metadata.items()))
        metadata = dict(metadata, **{"dtrain.crc32": "%08x" % zlib.crc32(data, zlib.crc32(canonical.encode()))})
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def main():
    images = idx(0x00000803, [3, 4, 4], bytes(range(48)))
    labels = idx(0x00000801, [3], bytes([0, 9, 4]))
    write("idx", "images.idx", images)
    write("idx", "labels.idx", labels)
    write("idx", "images.idx.gz", gzip.compress(images, mtime=0))
    write("idx", "labels.idx.gz", gzip.compress(labels, mtime=0))

    record = lambda label, fill: bytes([label]) + bytes([fill]) * 3072
    write("cifar10", "two_records.bin", record(3, 7) + record(9, 200))

    write("safetensors", "plain.safetensors",
          safetensors([("w", "F32", [2, 3], f32(1, 2, 3, 4, 5, 6)), ("step", "I64", [], struct.pack("<q", 7)),
                       ("empty", "F16", [0, 2], b""), ("h", "BF16", [2], b"\x80\x3f\x00\x40")], {"format": "pt"}))
    state = {"position": {"epoch": 1, "iteration": 5, "epoch_iteration": 1}, "world_size": 1,
             "optimizer": {"name": "sgd", "steps": 5}, "dropout": {"4": 10},
             "ranks": [{"loss_sum": 2.5, "correct": 3, "samples": 8}], "last_eval": None}
    write("safetensors", "checkpoint.safetensors",
          safetensors([("model.1.weight", "F32", [2, 2], f32(0.5, -1, 2, 0)), ("model.1.bias", "F32", [2], f32(0, 1)),
                       ("optimizer.momentum.1.weight", "F32", [2, 2], f32(0, 0, 0.1, 0)),
                       ("optimizer.momentum.1.bias", "F32", [2], f32(0, 0))],
                      {"dtrain.format": "checkpoint 1", "dtrain.config": json.dumps({"model": "tiny", "batch": 8}),
                       "dtrain.state": json.dumps(state)}, checksum=True))

    # Hardware profiles: the built-in files of each kind, and one complete profile (device, node
    # and network in one file, as `dtrain calibrate` writes them), compacted to keep inputs short.
    profiles = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiles")
    load = lambda kind, name: json.load(open(os.path.join(profiles, kind, name + ".json")))
    compact = lambda j: json.dumps(j, separators=(",", ":")).encode()
    write("hardware_profile", "device.json", compact(load("devices", "p100")))
    write("hardware_profile", "link.json", compact(load("links", "pcie3")))
    write("hardware_profile", "network.json", compact(load("networks", "ib-fdr")))
    full = load("devices", "v100")
    full["network"] = load("networks", "eth-10g")["link"]
    write("hardware_profile", "complete.json", compact(full))


if __name__ == "__main__":
    main()
