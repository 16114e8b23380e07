#!/usr/bin/env python3
"""BENCHMARKS.md's table from the JSON of `ttapipe bench` and of the PyTorch peers: images/s at
batch 1, 64, 1024 and the best batch (its size in brackets), each with its ratio to the naive
baseline (the mnistCUDNN sample's way) and to PyTorch eager in the same precision; then the
batch-1 latency. With --vs compile (the graph networks, which have no naive baseline): the ratio
to the better of torch.compile's modes (default and max-autotune, as written or tuned) at that
batch instead, PyTorch's fp32 (TF32 in its convolutions) standing beside ttapipe's tf32.
Usage: table.py [--vs compile] TTAPIPE.json [MORE.json ...]"""
import json
import sys

args = sys.argv[1:]
vs_compile = args[:2] == ["--vs", "compile"]
if vs_compile:
    args = args[2:]
points, header = [], []
for path in args:
    d = json.load(open(path))
    if "build" in d:
        gpu = d.get("gpu") or {}
        header.append(f"{d['build']}; {d['date']}; {gpu.get('name', 'no GPU')}, driver API "
                      f"{gpu.get('driver_version', '-')}, {gpu.get('sm_clock_mhz', '-')} MHz")
    else:
        header.append(f"PyTorch {d['torch']} on {d.get('gpu') or d.get('device')}")
    points += d["points"]


def key(p):
    return (p["engine"], p["precision"], p["graph"])


rows = {}
for p in points:
    rows.setdefault(key(p), {})[p["batch"]] = p


def rate(k, batch):
    p = rows.get(k, {}).get(batch)
    return p["images_per_s"] if p else None


def best_compile(k, batch):
    """The better of torch.compile's modes at batch in k's precision (tf32: PyTorch's fp32)."""
    precision = "fp32" if k[1] == "tf32" else k[1]
    rates = [rate(j, batch) for j in rows
             if j[0].startswith(("torch-compile", "torch-autotune")) and j[1] == precision]
    rates = [x for x in rates if x]
    return max(rates) if rates else None


naive = ("naive", "fp32", "-")
print("\n".join(f"<!-- {h} -->" for h in header))
print("| engine | precision | graph | batch 1 | 64 | 1024 | best (batch) | batch-1 latency p50 / p99 |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for k, by_batch in rows.items():
    eager = ("torch-eager", k[1], "-")
    cells = []
    for batch in (1, 64, 1024, "best"):
        if batch == "best":
            batch = max(by_batch, key=lambda b: by_batch[b]["images_per_s"])
            tag = f" ({batch})"
        else:
            tag = ""
        r = rate(k, batch)
        if r is None:
            cells.append("-")
            continue
        ratios = []
        if vs_compile:
            best = best_compile(k, batch)
            if best and not k[0].startswith("torch"):
                ratios.append(f"{r / best:.3g}x torch.compile's best")
        for name, ref in () if vs_compile else (("naive", naive), ("torch", eager)):
            base = rate(ref, batch) or (rate(ref, max(rows[ref], key=lambda b: rows[ref][b]["images_per_s"]))
                                         if ref in rows and tag else None)
            if base and ref != k:
                ratios.append(f"{r / base:.3g}x {name}")
        cells.append(f"{r:,.0f}{tag}" + (f" ({', '.join(ratios)})" if ratios else ""))
    lat = by_batch.get(1, {}).get("latency_ms")
    latency = f"{lat['p50']:.3f} / {lat['p99']:.3f} ms" if lat else "-"
    print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + f" | {latency} |")
