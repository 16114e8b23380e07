#!/usr/bin/env bash
# classify and bench on several GPUs (--devices): on two GPUs the first two, on one GPU device 0
# twice (two runners sharing it). classify of 1,203 PNG files (in a directory, and packed in two
# tar shards) with the cudnn and fused engines, fp32 and fp16, writes the bytes --device 0
# writes; `--devices all` too; bench --devices in device mode gives a point; bad lists are
# usage errors. Skipped (77) without a GPU; the shards are left out where the build reads no
# tar archives.
# Usage: devices_gpu.sh TTAPIPE TTP_FIXTURE TTP_EXPORT MODEL_DIR
set -u
ttapipe=$1 fixture=$2 export_tool=$3 model=$4
"$ttapipe" info --model "$model" | grep -q '^GPUs    0$' && { echo "skipped: no GPU"; exit 77; }
gpus=$("$ttapipe" info --model "$model" | sed -n 's/^GPUs    //p')
pair="0,0"
[ "$gpus" -ge 2 ] && pair="0,1"
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-devices-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
"$fixture" images "$work/img" 1203 28 28 31 && "$fixture" labels "$work/lab" 1203 10 31 &&
  "$export_tool" "$work/img" "$work/lab" "$work/set" >/dev/null || { echo "FAIL: fixtures"; exit 1; }
mkdir "$work/shards"
ls "$work/set" | head -600 >"$work/l0" && ls "$work/set" | tail -n +601 >"$work/l1"
tar -C "$work/set" -cf "$work/shards/a.tar" -T "$work/l0"
tar -C "$work/set" -czf "$work/shards/b.tar.gz" -T "$work/l1"
run() { "$ttapipe" classify --model "$model" --quiet --tta 5 --batch 128 --plan heuristic "$@"; }
inputs="set shards"
if run --engine fused -o "$work/probe.csv" "$work/shards" 2>&1 | grep -q "reads no tar archives" ||
  grep -q "reads no tar archives" "$work/probe.csv"; then
  echo "this ttapipe was built without libarchive: the directory alone, not its tar shards"
  inputs="set"
fi
for engine in cudnn fused; do
  for precision in fp32 fp16; do
    for input in $inputs; do
      what="$engine $precision $input"
      run --engine $engine --precision $precision -o "$work/one.csv" "$work/$input" || fail "$what: one device"
      run --engine $engine --precision $precision --devices $pair -o "$work/two.csv" "$work/$input" ||
        fail "$what: --devices $pair"
      cmp -s "$work/one.csv" "$work/two.csv" || fail "$what: --devices $pair differs from --device 0"
      [ "$(wc -l <"$work/two.csv")" -eq 1204 ] || fail "$what: $(wc -l <"$work/two.csv") lines"
    done
  done
done
run --engine cudnn --devices all -o "$work/all.csv" "$work/set" || fail "--devices all"
run --engine cudnn -o "$work/one.csv" "$work/set" && cmp -s "$work/one.csv" "$work/all.csv" ||
  fail "--devices all differs from --device 0"
"$ttapipe" bench --model "$model" --engine cudnn --devices $pair --batch 64 --mode device \
  --iterations 5 --json "$work/bench.json" >/dev/null || fail "bench --devices, device mode"
"$ttapipe" bench --model "$model" --engine fused --devices $pair --batch 64 --seconds 0.2 \
  >/dev/null || fail "bench --devices, e2e mode"
for bad in "" "0,,1" "0,1,2,3,4,5,6,7,8" "x" "-1"; do
  run --devices "$bad" "$work/set" >/dev/null 2>&1
  [ $? -eq 2 ] || fail "--devices '$bad' is not a usage error"
done
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "devices: --devices $pair (and all) write --device 0's bytes for cudnn and fused, fp32 and fp16, directories and tar shards"
