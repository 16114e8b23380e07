#!/usr/bin/env bash
# A short `ttapipe bench` of the GPU engines (cudnn with graphs and without, e2e and device
# modes) and of the naive baseline (bench_naive), so that the benchmarks keep working; skipped
# (77) without a GPU.
# Usage: bench_gpu.sh TTAPIPE BENCH_NAIVE MODEL_DIR
set -u
ttapipe=$1 naive=$2 model=$3
"$ttapipe" info --model "$model" | grep -q '^GPUs    0$' && { echo "skipped: no GPU"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$ttapipe" bench --model "$model" --engine cudnn --precision fp32,fp16 --graph on,off \
  --batch 1,33 --tta 3 --seconds 0.1 --json "$work/e2e.json" || exit 1
"$naive" --model "$model" --precision fp16 --batch 1,3 --tta 3 --seconds 0.1 \
  --json "$work/naive.json" || exit 1
"$ttapipe" bench --model "$model" --engine cudnn --batch 8 --mode device --iterations 5 || exit 1
python3 - "$work/e2e.json" "$work/naive.json" <<'PY'
import json, sys
points = json.load(open(sys.argv[1]))["points"] + json.load(open(sys.argv[2]))["points"]
# cudnn: 2 precisions x 2 graphs x 2 batches; naive: 2 batches
assert len(points) == 10, len(points)
for p in points:
    assert p["images_per_s"] > 0 and p["latency_ms"]["p99.9"] >= p["latency_ms"]["p99"] >= p["latency_ms"]["p50"] > 0, p
    if p["engine"] == "cudnn":
        assert p["per_batch_ms"]["compute"] > 0 and p["per_batch_ms"]["h2d"] > 0, p
print("bench: 10 GPU points")
PY
