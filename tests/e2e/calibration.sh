#!/usr/bin/env bash
# eval's calibration metrics against an independent computation, on MNIST's test images
# 9000..9999 (../shared/datasets/mnist), --tta 3, the fastest CPU engine of the build
# (mnist_test.sh): eval --json on the IDX files;
# classify --probs (and --tta 1: copy 0 alone) on the same images exported as PNG files;
# tests/e2e/calibration.py recomputes accuracy, NLL, Brier, ECE and its bins, the AUROCs and
# copy 0's accuracy from the CSV and compares. Then eval --merge vote: its calibration is that
# of the mean of the copies (NLL and Brier equal the mean merge's). Then --tta-temperature 1.7
# in both: eval's metrics again equal the computation on classify's tempered probabilities, the
# accuracy that of T = 1 and the NLL not. Skipped (77) without the dataset.
# small (the sanitized build): images 9800..9999.
# Usage: calibration.sh TTAPIPE TTP_EXPORT MODEL_DIR DATASETS_DIR PYTHON [full|small]
set -u
ttapipe=$1 export_tool=$2 model=$3 datasets=$4 python=${5:-python3} size=${6:-full}
first=9000 count=1000
[ "$size" = small ] && first=9800 count=200
. "$(dirname "$0")/mnist_test.sh" calibration
"$export_tool" "$images" "$labels" "$work/set" >/dev/null || { echo "FAIL: export"; exit 1; }
ls "$work/set" | sed -n "$((first + 1)),$((first + count))p" | sed "s|^|$work/set/|" >"$work/list"
common=(--model "$model" --engine "$engine" --threads 2 --tta 3)
slice=(--images "$images" --labels "$labels" --offset $first --limit $count)
"$ttapipe" eval "${common[@]}" "${slice[@]}" --json "$work/m.json" >"$work/eval.txt" ||
  { echo "FAIL: eval"; exit 1; }
"$ttapipe" classify "${common[@]}" --probs --invert no --quiet -o "$work/c.csv" \
  --files-from "$work/list" || { echo "FAIL: classify"; exit 1; }
"$ttapipe" classify --model "$model" --engine "$engine" --threads 2 --invert no --quiet --probs \
  -o "$work/c0.csv" --files-from "$work/list" || { echo "FAIL: classify, one copy"; exit 1; }
"$python" "$(dirname "$0")/calibration.py" "$work/m.json" "$work/c.csv" "$work/c0.csv" || exit 1
grep -q "^calibration  NLL" "$work/eval.txt" && grep -q "^copy 0 " "$work/eval.txt" &&
  grep -q "^mistakes     AUROC" "$work/eval.txt" || { echo "FAIL: eval's text: $(cat "$work/eval.txt")"; exit 1; }
"$ttapipe" eval "${common[@]}" "${slice[@]}" --merge vote --json "$work/v.json" >/dev/null ||
  { echo "FAIL: eval --merge vote"; exit 1; }
"$python" -c "
import json, sys
v, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert v['nll'] == m['nll'] and v['brier'] == m['brier'], (v, m)
print('vote: NLL %.4f and Brier %.4f, the mean of the copies' % (v['nll'], v['brier']))" \
  "$work/v.json" "$work/m.json" || { echo "FAIL: vote"; exit 1; }
warm=(--tta-temperature 1.7)
"$ttapipe" eval "${common[@]}" "${warm[@]}" "${slice[@]}" --json "$work/t.json" >/dev/null ||
  { echo "FAIL: eval --tta-temperature"; exit 1; }
"$ttapipe" classify "${common[@]}" "${warm[@]}" --probs --invert no --quiet -o "$work/ct.csv" \
  --files-from "$work/list" || { echo "FAIL: classify --tta-temperature"; exit 1; }
"$python" "$(dirname "$0")/calibration.py" "$work/t.json" "$work/ct.csv" "$work/c0.csv" || exit 1
"$python" -c "
import json, sys
t, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert t['accuracy'] == m['accuracy'] and abs(t['nll'] - m['nll']) > 1e-4, (t['nll'], m['nll'])
print('temperature 1.7: accuracy %.4f kept, NLL %.4f (%.4f at T = 1)' % (t['accuracy'], t['nll'], m['nll']))" \
  "$work/t.json" "$work/m.json" || { echo "FAIL: temperature"; exit 1; }
echo "calibration: eval's metrics equal the independent computation"
