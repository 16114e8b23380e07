#!/usr/bin/env bash
# Time to result on the GPU machine in one run (issue 42; BENCHMARKS.md, "Time to result"): the
# probe's floor (bench_start_floor: cuInit, the context, 64 MiB pinned, cuDNN and cuBLASLt and a
# handle of each), then the command's wall time as a user sees it, RUNS times each (the median
# and the range), and its own breakdown (--verbose: opening, CUDA's start, the plan, buffers,
# graphs; the first and last rows; closed):
#   one PNG            lenet-fashion on fused; on cudnn, lenet-fashion and resnet-fashion with no
#                      plan cache (cold) and with the one the cold run wrote (warm)
#   the main job       10,000 PNG files (MNIST's test set exported, the size of the main job's
#                      Fashion-MNIST) with lenet-fashion on fused and on cudnn, and
#                      resnet-fashion on cudnn (warm caches)
#   100,000 files      one flat directory (make_files.sh), 16 threads, the same three
# Usage: start_gpu.sh BUILD_DIR SHARED_DATASETS_DIR OUT_DIR [RUNS]   (RUNS default 5)
set -uo pipefail
bin=$1 data=$2 out=$3 runs=${4:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-start-XXXXXX")
trap 'rm -rf "$work"' EXIT
images=$data/mnist/t10k-images-idx3-ubyte.gz labels=$data/mnist/t10k-labels-idx1-ubyte.gz
"$bin/ttp_export" "$images" "$labels" "$work/10k" >/dev/null || exit 1
bash "$root/tests/bench/make_files.sh" "$bin" "$images" "$labels" "$work/100k" 10 flat || exit 1
one=$(ls "$work/10k" | head -1)

echo "## the floor (bench_start_floor, $runs runs: the steps, then the probe's wall as the shell sees it)"
for i in $(seq 1 "$runs"); do
  t0=$(date +%s%N)
  steps=$("$bin/tests/bench_start_floor" | tr '\n' ' ' | tr -s ' ')
  echo "$steps; wall $((($(date +%s%N) - t0) / 1000000)) ms"
done

# timed NAME ARGS...: the command RUNS times; its wall in ms (as the shell sees it) and the
# last run's --verbose lines.
timed() {
  local name=$1 walls=()
  shift
  for i in $(seq 1 "$runs"); do
    local t0=$(date +%s%N)
    "$bin/ttapipe" classify --verbose --quiet -o "$work/out.csv" "$@" 2>"$work/err" >/dev/null
    walls+=($((($(date +%s%N) - t0) / 1000000)))
  done
  printf '%s\n' "${walls[@]}" | sort -n | awk -v n="$name" '{v[NR]=$1} END {printf "%-40s wall %d ms median (%d to %d ms)\n", n, v[int((NR+1)/2)], v[1], v[NR]}'
  grep -E "opening took|wall .* from the command" "$work/err" | sed 's/^/    /'
}
lenet=$root/models/lenet-fashion
echo "## one PNG"
timed "fused, lenet-fashion" --model "$lenet" --engine fused "$work/10k/$one"
for model in lenet-fashion resnet-fashion; do
  rm -f "$work/plans-$model"; runs_saved=$runs; runs=1
  timed "cudnn, $model, cold cache" --model "$root/models/$model" --engine cudnn \
    --plan-cache "$work/plans-$model" "$work/10k/$one"
  runs=$runs_saved
  timed "cudnn, $model, warm cache" --model "$root/models/$model" --engine cudnn \
    --plan-cache "$work/plans-$model" "$work/10k/$one"
done
echo "## the main job's 10,000 files"
timed "fused, lenet-fashion" --model "$lenet" --engine fused "$work/10k"
for model in lenet-fashion resnet-fashion; do
  timed "cudnn, $model, warm cache" --model "$root/models/$model" --engine cudnn \
    --plan-cache "$work/plans-$model" "$work/10k"
done
echo "## 100,000 files, 16 threads"
timed "fused, lenet-fashion" --model "$lenet" --engine fused --threads 16 "$work/100k"
for model in lenet-fashion resnet-fashion; do
  timed "cudnn, $model, warm cache" --model "$root/models/$model" --engine cudnn --threads 16 \
    --plan-cache "$work/plans-$model" "$work/100k"
done
