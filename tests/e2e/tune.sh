#!/usr/bin/env bash
# ttapipe tune on MNIST's test images 9000..9399 (../shared/datasets/mnist), the fastest CPU
# engine of the build (mnist_test.sh), 6 candidates, objective NLL:
#   - the two splits (--splits) are disjoint, 200 images each, and together the slice;
#   - the chosen policy's held-out metrics (--json) equal tests/e2e/calibration.py's own
#     computation on `classify --probs --tta-policy` of the held-out images as PNG files;
#   - the search is deterministic: a second run writes the same policy and splits; another
#     --split-seed gives another split;
#   - (full size) with 40 candidates the search reaches the views: --json's trace of the
#     policies tried holds a rotation and the reflect edge;
# Skipped (77) without the dataset.
# small (the sanitized build): 100 + 100 images, 3 candidates.
# Usage: tune.sh TTAPIPE TTP_EXPORT MODEL_DIR DATASETS_DIR PYTHON [full|small]
set -u
ttapipe=$1 export_tool=$2 model=$3 datasets=$4 python=${5:-python3} size=${6:-full}
count=400 candidates=6
[ "$size" = small ] && count=200 candidates=3
. "$(dirname "$0")/mnist_test.sh" tune
tune() { "$ttapipe" tune --model "$model" --engine "$engine" --threads 2 --images "$images" \
           --labels "$labels" --offset 9000 --limit $count --candidates $candidates --objective nll --quiet "$@"; }
tune -o "$work/a.policy" --json "$work/a.json" --splits "$work/a.splits" >"$work/a.txt" ||
  { echo "FAIL: tune"; cat "$work/a.txt"; exit 1; }
cat "$work/a.txt"
"$python" - "$work/a.splits" "$work/a.json" "$count" "$candidates" <<'PY' || fail "the splits"
import json, sys
lines = dict(line.split(None, 1) for line in open(sys.argv[1]))
tune, held = [set(map(int, lines[k].split())) for k in ("tune", "heldout")]
count, candidates = int(sys.argv[3]), int(sys.argv[4])
assert len(tune) == count // 2 and len(held) == count // 2, (len(tune), len(held))
assert not tune & held, "the splits overlap"
assert tune | held == set(range(9000, 9000 + count)), "the splits are not the slice"
j = json.load(open(sys.argv[2]))
assert j["tune_images"] == count // 2 and j["heldout_images"] == count // 2, j
assert j["candidates"] <= candidates, j
print(f"splits: disjoint, {count // 2} + {count // 2}, the slice")
PY
# The held-out images as PNG files, classified with the chosen policy.
"$export_tool" "$images" "$labels" "$work/set" >/dev/null || fail "export"
for i in $(sed -n 's/^heldout //p' "$work/a.splits"); do
  printf '%s/set/%05d_label' "$work" "$i"
  ls "$work/set" | sed -n "$((i + 1))p" | sed 's/^[0-9]*_label//'
done >"$work/held.list"
"$ttapipe" classify --model "$model" --engine "$engine" --threads 2 --invert no --quiet --probs \
  --tta-policy "$work/a.policy" -o "$work/held.csv" --files-from "$work/held.list" || fail "classify"
"$python" "$(dirname "$0")/calibration.py" "$work/a.json" "$work/held.csv" --key heldout.chosen ||
  fail "held-out metrics"
tune -o "$work/b.policy" --splits "$work/b.splits" >/dev/null || fail "tune again"
cmp -s "$work/a.policy" "$work/b.policy" || fail "a second run chose another policy"
cmp -s "$work/a.splits" "$work/b.splits" || fail "a second run split otherwise"
tune -o "$work/c.policy" --splits "$work/c.splits" --split-seed 2 --candidates 2 >/dev/null || fail "seed 2"
cmp -s "$work/a.splits" "$work/c.splits" && fail "--split-seed 2 gave the same split"
if [ "$size" = full ]; then
  "$ttapipe" tune --model "$model" --engine "$engine" --threads 2 --images "$images" \
    --labels "$labels" --offset 9000 --limit 200 --candidates 40 --objective nll --quiet \
    -o "$work/v.policy" --json "$work/v.json" >/dev/null || fail "tune, 40 candidates"
  "$python" - "$work/v.json" <<'PY' || fail "the views were not searched"
import json, sys
j = json.load(open(sys.argv[1]))
tried = [t["policy"] for t in j["tried"]]
assert len(tried) == j["candidates"], (len(tried), j["candidates"])
assert any("rotation up to 10 deg" in p for p in tried), tried[-6:]
assert any("edge reflect" in p for p in tried), tried[-6:]
print(f"tune: {len(tried)} policies tried, rotations and edges among them")
PY
fi
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "tune: disjoint splits, held-out metrics recomputed, deterministic"
