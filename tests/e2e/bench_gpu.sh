#!/usr/bin/env bash
# A short `ttapipe bench` of the GPU engines (cudnn with graphs and without, the naive baseline,
# e2e and device modes), so that the benchmark keeps working; skipped (77) without a GPU.
# Usage: bench_gpu.sh TTAPIPE MODEL_DIR
set -u
ttapipe=$1 model=$2
"$ttapipe" info --model "$model" | grep -q '^GPUs    0$' && { echo "skipped: no GPU"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$ttapipe" bench --model "$model" --engine cudnn,naive --precision fp32,fp16 --graph on,off \
  --batch 1,33 --tta 3 --seconds 0.1 --json "$work/e2e.json" || exit 1
"$ttapipe" bench --model "$model" --engine cudnn --batch 8 --mode device --iterations 5 || exit 1
python3 - "$work/e2e.json" <<'PY'
import json, sys
points = json.load(open(sys.argv[1]))["points"]
# cudnn: 2 precisions x 2 graphs x 2 batches; naive: 2 precisions x 2 batches
assert len(points) == 12, len(points)
for p in points:
    assert p["images_per_s"] > 0 and p["latency_ms"]["p99"] >= p["latency_ms"]["p50"] > 0, p
    if p["engine"] == "cudnn":
        assert p["per_batch_ms"]["compute"] > 0 and p["per_batch_ms"]["h2d"] > 0, p
print("bench: 12 GPU points")
PY
