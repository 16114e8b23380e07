#!/usr/bin/env bash
# Several GPUs measured in one run (BENCHMARKS.md, "Two GPUs"): on a machine of two or more GPUs,
#  1. ttapipe bench of each LeNet model, fused and cudnn, fp32 and fp16, 5 copies, batch 8192,
#     device mode and e2e (host memory to host results): --devices 0 against --devices 0,1;
#  2. classify of a directory of PNG files with the fused engine (and cudnn --plan heuristic):
#     one GPU, --devices all, and mpirun -n 2 (a GPU a rank), each output compared byte for
#     byte with one GPU's (and one GPU with half the decoding threads, each rank's number), the
#     files/s of each as the command's wall time gives it and as its own summary counts it
#     (from the first file read to the last row written), and where the summary's time went.
# Prints one table; the logs stay in OUT_DIR.
# Usage: two_gpus.sh BUILD_DIR FILES_DIR OUT_DIR MODEL_DIR...   (PARTS="bench classify", the default,
# or either alone; MODES="device e2e", bench's modes, the default, or either alone)
set -uo pipefail
bin=$1 files=$2 out=$3
shift 3
mkdir -p "$out"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 2 ] || { echo "two_gpus.sh: $gpus GPU(s); this needs two"; exit 77; }

parts=${PARTS:-bench classify}

# 1. bench: one GPU against two, per model, engine, precision and mode.
[[ " $parts " == *" bench "* ]] && for model in "$@"; do
  name=$(basename "$model")
  for engine in fused cudnn; do
    for mode in ${MODES:-device e2e}; do
      for devices in 0 0,1; do
        tag="$name.$engine.$mode.$([ $devices = 0 ] && echo one || echo two)"
        timeout 300 "$bin/ttapipe" bench --model "$model" --engine $engine --precision fp32,fp16 \
          --batch 8192 --tta 5 --mode $mode --devices $devices --seconds 2 \
          --json "$out/bench.$tag.json" >"$out/bench.$tag.txt" 2>&1 || fail "bench $tag"
      done
    done
  done
done
[[ " $parts " == *" bench "* ]] && python3 - "$out" "$@" <<'PY'
import json, os, sys
out, models = sys.argv[1], [os.path.basename(m) for m in sys.argv[2:]]
def rates(path):
    with open(path) as f:
        doc = json.load(f)
    return {p["precision"]: p["images_per_s"] for p in doc["points"]}
print("| model | engine | mode | precision | one GPU | two GPUs | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for m in models:
    for e in ("fused", "cudnn"):
        for mode in ("device", "e2e"):
            try:
                one = rates(f"{out}/bench.{m}.{e}.{mode}.one.json")
                two = rates(f"{out}/bench.{m}.{e}.{mode}.two.json")
            except (OSError, ValueError, KeyError) as err:
                print(f"| {m} | {e} | {mode} | - | missing: {err} | | |")
                continue
            for prec in ("fp32", "fp16"):
                if prec in one and prec in two:
                    print(f"| {m} | {e} | {mode} | {prec} | {one[prec]:,.0f} | {two[prec]:,.0f} | "
                          f"{two[prec] / one[prec]:.2f}x |")
PY

# 2. classify a directory: one GPU, --devices all, mpirun -n 2; the same bytes.
model=$1
count=$(find "$files" -type f | wc -l)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
classify() { # TAG COMMAND...: the command's wall time beside its own summary
  local tag=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  timeout 300 "$@" >"$out/classify.$tag.txt" 2>&1 || fail "classify $tag"
  t1=$(date +%s.%N)
  echo "$tag $(python3 -c "print(f'{$count / ($t1 - $t0):,.0f} files/s wall ({$t1 - $t0:.2f} s)')") | $(grep -m1 'classified' "$out/classify.$tag.txt" | sed 's/^ttapipe: //')"
}
[[ " $parts " == *" classify "* ]] && for engine in fused cudnn; do
  args=(classify --model "$model" --engine $engine --precision fp16 --tta 5 --plan heuristic)
  [ $engine = fused ] && args=(classify --model "$model" --engine fused --precision fp16 --tta 5)
  for round in 1 2; do # the second round runs on a warm page cache
    classify "$engine.one.$round" "$bin/ttapipe" "${args[@]}" --device 0 -o "$out/$engine.one.csv" "$files"
    classify "$engine.half.$round" "$bin/ttapipe" "${args[@]}" --device 0 --threads $((cores / 2)) \
      -o "$out/$engine.half.csv" "$files"
    classify "$engine.all.$round" "$bin/ttapipe" "${args[@]}" --devices all -o "$out/$engine.all.csv" "$files"
    classify "$engine.mpi.$round" mpirun -n 2 --bind-to none "$bin/ttapipe" "${args[@]}" \
      --threads $((cores / 2)) -o "$out/$engine.mpi.csv" "$files"
  done
  [ "$(wc -l <"$out/$engine.one.csv")" -eq $((count + 1)) ] || fail "$engine: one GPU wrote $(wc -l <"$out/$engine.one.csv") lines"
  cmp -s "$out/$engine.one.csv" "$out/$engine.half.csv" || fail "$engine: half the threads differ"
  cmp -s "$out/$engine.one.csv" "$out/$engine.all.csv" || fail "$engine: --devices all differs from one GPU"
  cmp -s "$out/$engine.one.csv" "$out/$engine.mpi.csv" || fail "$engine: mpirun -n 2 differs from one GPU"
done
[ "$failures" -eq 0 ] || { echo "two_gpus.sh: $failures failures"; exit 1; }
echo "two_gpus.sh: $count files: --devices all and mpirun -n 2 wrote one GPU's bytes (fused; cudnn --plan heuristic)"
