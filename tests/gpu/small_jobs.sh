#!/usr/bin/env bash
# A classify job of few files named one by one (issue 42): the GPU engines open with one batch
# of the job's size and two slots (the engine's description: "batch buckets 1, 2 slots" for one
# file, "1/3" for three), not every bucket up to 1024 and 8 slots, and write the same bytes as
# with --batch 1024 --slots 8; a directory of the same files keeps the defaults. fp32, where the
# bits do not depend on the batch. Skipped (77) without a GPU.
# Usage: small_jobs.sh TTAPIPE TTP_FIXTURE MODEL_DIR
set -u
ttapipe=$1 fixture=$2 model=$3
. "$(dirname "$0")/common.sh"
needs_gpu "$ttapipe" "$model"
start_work small-jobs
mkdir "$work/dir"
for i in 1 2 3; do "$fixture" photo "$work/dir/$i.png" 28 28 $i || fail "fixture $i"; done
for engine in fused cudnn; do
  for files in 1 3; do
    names=()
    for i in $(seq 1 $files); do names+=("$work/dir/$i.png"); done
    want="batch buckets 1, 2 slots"
    [ $files = 3 ] && want="batch buckets 1/3, 2 slots"
    "$ttapipe" classify --model "$model" --engine $engine --plan heuristic --tta 5 --verbose \
      -o "$work/$engine.$files.csv" "${names[@]}" 2>"$work/err" || fail "$engine $files: exited $?"
    grep -q "$want" "$work/err" ||
      fail "$engine, $files file(s): want '$want': $(grep -o 'batch buckets[^;]*slots' "$work/err")"
    "$ttapipe" classify --model "$model" --engine $engine --plan heuristic --tta 5 --batch 1024 \
      --slots 8 -o "$work/$engine.$files.big.csv" "${names[@]}" 2>/dev/null ||
      fail "$engine $files big: exited $?"
    cmp -s "$work/$engine.$files.csv" "$work/$engine.$files.big.csv" ||
      fail "$engine, $files file(s): other bytes than with --batch 1024 --slots 8"
  done
  "$ttapipe" classify --model "$model" --engine $engine --plan heuristic --verbose \
    -o "$work/dir.csv" "$work/dir" 2>"$work/err" || fail "$engine dir: exited $?"
  grep -q "batch buckets 1/8/64/512/1024, 8 slots" "$work/err" ||
    fail "$engine, a directory: $(grep -o 'batch buckets[^;]*slots' "$work/err")"
done
finish "small jobs"
