#!/usr/bin/env python3
"""BENCHMARKS.md's table from the JSON of `ttapipe bench` and of the PyTorch peers: images/s at
batch 1, 64, 1024 and the best batch (its size in brackets), each with its ratio to the naive
baseline (the mnistCUDNN sample's way) and to PyTorch eager in the same precision; then the
batch-1 latency. Usage: table.py TTAPIPE.json [MORE.json ...]"""
import json
import sys

points, header = [], []
for path in sys.argv[1:]:
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
        for name, ref in (("naive", naive), ("torch", eager)):
            base = rate(ref, batch) or (rate(ref, max(rows[ref], key=lambda b: rows[ref][b]["images_per_s"]))
                                         if ref in rows and tag else None)
            if base and ref != k:
                ratios.append(f"{r / base:.3g}x {name}")
        cells.append(f"{r:,.0f}{tag}" + (f" ({', '.join(ratios)})" if ratios else ""))
    lat = by_batch.get(1, {}).get("latency_ms")
    latency = f"{lat['p50']:.3f} / {lat['p99']:.3f} ms" if lat else "-"
    print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + f" | {latency} |")
