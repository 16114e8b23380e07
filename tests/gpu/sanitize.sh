#!/usr/bin/env bash
# One of compute-sanitizer's tools on a small `ttapipe eval` of a GPU engine: 0 errors wanted.
# Usage: sanitize.sh TTAPIPE TOOL ENGINE PRECISION SHARED_DATASETS_DIR [MODEL IMAGES_IDX]
# (TOOL: memcheck, racecheck, synccheck, initcheck). With MODEL and IMAGES_IDX: that model on
# those images (each labelled 0; a graph network such as tests/onnx/resnet20.onnx), batch 4. Skipped (77) without a GPU or without
# compute-sanitizer. The first 40 MNIST test images with --tta 5, batch 16 (buckets 1, 8, 16:
# two full batches and a partial one), graphs on: the captured kernels are what runs. The cudnn
# engine plans by cuDNN's heuristic (--plan heuristic): its timed search would run every
# algorithm under the tool (minutes) on buffers nothing has written yet (initcheck's reports).
set -euo pipefail
cli=$1 tool=$2 engine=$3 precision=$4 data=$5 model=${6:-} images=${7:-}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$sanitizer" ]; then echo "skipped: no compute-sanitizer"; exit 77; fi
if ! "$cli" info --model "$data/mnistcudnn" 2>/dev/null | grep -qE '^GPUs +[1-9]'; then
  echo "skipped: no CUDA device"; exit 77
fi
if [ -n "$model" ]; then
  # An IDX label file of as many zeros as the images (their count: bytes 4..7, big-endian).
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  n=$(od -An -t u1 -j 4 -N 4 "$images" | awk '{print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4}')
  { printf '\000\000\010\001'
    printf "\\$(printf %03o $((n >> 24 & 255)))\\$(printf %03o $((n >> 16 & 255)))"
    printf "\\$(printf %03o $((n >> 8 & 255)))\\$(printf %03o $((n & 255)))"
    head -c "$n" /dev/zero; } > "$tmp/labels.idx"
  "$sanitizer" --tool "$tool" --error-exitcode 3 --print-limit 20 \
    "$cli" eval --model "$model" --engine "$engine" --precision "$precision" \
    --images "$images" --labels "$tmp/labels.idx" --tta 5 --batch 4 --plan heuristic
  exit
fi
"$sanitizer" --tool "$tool" --error-exitcode 3 --print-limit 20 \
  "$cli" eval --model "$data/mnistcudnn" --engine "$engine" --precision "$precision" \
  --images "$data/mnist/t10k-images-idx3-ubyte.gz" --labels "$data/mnist/t10k-labels-idx1-ubyte.gz" \
  --limit 40 --tta 5 --batch 16 --plan heuristic
