#!/usr/bin/env bash
# The one command behind BENCHMARKS.md's tables: ttapipe bench (cudnn fp32 and fp16, graph on and
# off; fused fp32 and fp16, graph on and off), the naive baseline (bench_naive, tests/bench/naive.c) and the PyTorch peers (eager, CUDA graph, torch.compile), all at
# N = 5 copies on random images, from host memory to host results, in one run on this machine's
# GPU; then the table, with ratios, from their JSON. Then the graph networks (GRAPH_NETS, default
# "resnet20 mobilenetv2", tests/onnx/): graphs_gpu.sh's bench (cudnn fp32, fp16 and tf32), peer
# (CUDA graph and torch.compile, as written and tuned) and autotune (max-autotune) parts, and a
# table per network against the better of torch.compile's modes ($OUT_DIR/graphs/NET.table.md).
# PARTS="lenet graphs" (the default) or either alone, for machines whose calls are too short for
# both (each takes several minutes).
# Usage: bash tests/bench/run_table.sh [MODEL_DIR [OUT_DIR]]   (after bash .ci/build; another
# build folder than build/ through TTAPIPE_BUILD)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TTAPIPE_BUILD:-$root/build}
model=${1:-$root/models/lenet-mnist}
out=${2:-$bin/bench}
mkdir -p "$out"
parts=" ${PARTS:-lenet graphs} "
if [[ "$parts" == *" lenet "* ]]; then
  "$bin/ttapipe" bench --model "$model" --engine cudnn --precision fp32,fp16 --graph on,off \
    --batch 1,64,1024,4096,8192 --tta 5 --seconds 2 --json "$out/ttapipe.json" | tee "$out/ttapipe.txt"
  "$bin/ttapipe" bench --model "$model" --engine fused --precision fp32,fp16 --graph on,off \
    --batch 1,64,1024,4096,8192 --tta 5 --seconds 2 --json "$out/fused.json" | tee "$out/fused.txt"
  "$bin/tests/bench_naive" --model "$model" --precision fp32 --batch 1,64,1024 \
    --tta 5 --seconds 2 --warmup 1 --json "$out/naive.json" | tee "$out/naive.txt"
  python3 "$root/tests/bench/peers/pytorch_tta.py" "$model" --batch 1,64,1024,4096,8192 --tta 5 \
    --seconds 2 --json "$out/pytorch.json" | tee "$out/pytorch.txt"
  python3 "$root/tests/bench/table.py" "$out/ttapipe.json" "$out/fused.json" "$out/naive.json" \
    "$out/pytorch.json" |
    tee "$out/table.md"
fi
if [[ "$parts" == *" graphs "* ]]; then
  NETS=${GRAPH_NETS-resnet20 mobilenetv2} bash "$root/tests/bench/graphs_gpu.sh" "$bin" "$out/graphs" \
    bench peer autotune table
fi
