#!/usr/bin/env bash
# eval and tune on a directory of labelled image files (--images DIR, NNNNN_label<L>.png) against
# the same images as an IDX slice, MNIST's test images 9000..9299 (../shared/datasets/mnist)
# exported with ttp_export, the fastest CPU engine of the build (mnist_test.sh):
#   - eval --tta 3: every --json field but the time equal, and the same text but the source;
#   - tune: the same output, policy and --json but the source and the time, the same splits
#     (the directory's name the files, whose names hold the IDX indices);
#   - refusals, each one line naming the file: a name without _label, a label the model does not
#     have, a corrupt PNG, --labels with a directory, a directory without images; --invert with
#     IDX is a usage error.
# Skipped (77) without the dataset.
# small (the sanitized build): images 9000..9199, 3 candidates.
# Usage: labelled_dir.sh TTAPIPE TTP_EXPORT MODEL_DIR DATASETS_DIR PYTHON [full|small]
set -u
ttapipe=$1 export_tool=$2 model=$3 datasets=$4 python=${5:-python3} size=${6:-full}
first=9000 count=300 candidates=6
[ "$size" = small ] && count=200 candidates=3
. "$(dirname "$0")/mnist_test.sh" labelled
"$export_tool" "$images" "$labels" "$work/set" --offset $first --limit $count >/dev/null ||
  { echo "FAIL: export"; exit 1; }
common=(--model "$model" --engine "$engine" --threads 2)
idx=(--images "$images" --labels "$labels" --offset $first --limit $count)

# eval: the directory against the IDX slice.
"$ttapipe" eval "${common[@]}" --tta 3 "${idx[@]}" --json "$work/idx.json" >"$work/idx.txt" ||
  { echo "FAIL: eval IDX"; exit 1; }
"$ttapipe" eval "${common[@]}" --tta 3 --images "$work/set" --json "$work/dir.json" \
  >"$work/dir.txt" ||
  { echo "FAIL: eval DIR"; cat "$work/dir.txt"; exit 1; }
"$python" - "$work/idx.json" "$work/dir.json" <<'PY' || fail "eval's JSON"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
del a["seconds"], b["seconds"]
assert a.keys() == b.keys(), (sorted(a), sorted(b))
for k in a:
    assert a[k] == b[k], (k, a[k], b[k])
assert a["images"] > 0 and 0 < a["accuracy"] <= 1, a
print(f"eval: {len(a)} fields equal: accuracy {a['accuracy']:.4f}, NLL {a['nll']:.4f}, "
      f"Brier {a['brier']:.4f}, ECE {a['ece']:.4f}")
PY
grep -q "^images    $work/set: files 0 to $((count - 1)) of $count " "$work/dir.txt" ||
  fail "eval DIR's images line: $(grep '^images' "$work/dir.txt")"
diff <(grep -v '^images\|^time' "$work/idx.txt") <(grep -v '^images\|^time' "$work/dir.txt") ||
  fail "eval's text differs"

# tune: the same search on the same split.
tune() { "$ttapipe" tune "${common[@]}" --candidates $candidates --objective nll --quiet "$@"; }
tune "${idx[@]}" -o "$work/idx.policy" --json "$work/idx-tune.json" --splits "$work/idx.splits" \
  >"$work/idx-tune.txt" || { echo "FAIL: tune IDX"; exit 1; }
tune --images "$work/set" -o "$work/dir.policy" --json "$work/dir-tune.json" \
  --splits "$work/dir.splits" >"$work/dir-tune.txt" || { echo "FAIL: tune DIR"; exit 1; }
cat "$work/dir-tune.txt"
diff <(grep -v '^search' "$work/idx-tune.txt") <(grep -v '^search' "$work/dir-tune.txt") ||
  fail "tune's text differs"
diff <(grep -v '^#' "$work/idx.policy") <(grep -v '^#' "$work/dir.policy") ||
  fail "tune chose another policy"
"$python" - "$work" "$count" <<'PY' || fail "tune's JSON or splits"
import json, os, sys
work, count = sys.argv[1], int(sys.argv[2])
a, b = (json.load(open(f"{work}/{n}-tune.json")) for n in ("idx", "dir"))
del a["seconds"], b["seconds"]
assert a == b, (a, b)
idx = {k: list(map(int, v.split()))
       for k, v in (line.split(None, 1) for line in open(f"{work}/idx.splits"))}
dirs = {"tune": [], "heldout": []}
for line in open(f"{work}/dir.splits"):
    split, path = line.rstrip("\n").split(" ", 1)
    assert os.path.dirname(path) == f"{work}/set" and os.path.isfile(path), path
    dirs[split].append(int(os.path.basename(path).split("_")[0]))
assert idx == dirs, "the directory's splits are not the IDX slice's"
assert sorted(idx["tune"] + idx["heldout"]) == list(range(9000, 9000 + count))
print(f"tune: the same policy, held-out metrics and splits ({len(dirs['tune'])} + "
      f"{len(dirs['heldout'])} files)")
PY

# Refusals: exit 1, one line on stderr, naming the file.
refused() { # refused WHAT NAME ARGS...: eval ARGS must fail, its one line naming NAME
  local what=$1 name=$2; shift 2
  "$ttapipe" eval "${common[@]}" "$@" >/dev/null 2>"$work/err"
  local rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l <"$work/err")" -ne 1 ] || ! grep -qF "$name" "$work/err"; then
    fail "$what: exit $rc, $(cat "$work/err")"
  else
    echo "refused, $what: $(cat "$work/err")"
  fi
}
some() { mkdir "$work/$1" && cp "$work/set/0900"[0-4]_label*.png "$work/$1/"; }
some nolabel && cp "$work/set/09005_label"*.png "$work/nolabel/09005.png"
refused "a name without _label" "$work/nolabel/09005.png" --images "$work/nolabel"
some range && cp "$work/set/09005_label"*.png "$work/range/09005_label12.png"
refused "label 12 of 10 classes" "$work/range/09005_label12.png" --images "$work/range"
some corrupt && head -c 60 "$work/set/09005_label"*.png >"$work/corrupt/09005_label1.png"
refused "a corrupt PNG" "$work/corrupt/09005_label1.png" --images "$work/corrupt"
refused "--labels with a directory" "$work/set" --images "$work/set" --labels "$labels"
mkdir "$work/empty"
refused "a directory without images" "$work/empty" --images "$work/empty"
refused "--offset past the files" "$work/set" --images "$work/set" --offset $count
"$ttapipe" tune "${common[@]}" -o "$work/x.policy" --images "$work/range" --quiet >/dev/null \
  2>"$work/err" && fail "tune took label 12"
grep -qF "$work/range/09005_label12.png" "$work/err" || fail "tune's refusal: $(cat "$work/err")"
"$ttapipe" eval "${common[@]}" "${idx[@]}" --invert no >/dev/null 2>"$work/err"
[ $? -eq 2 ] && grep -q "^ttapipe eval: --invert, --center and --max-size are for a directory" \
  "$work/err" || fail "--invert with IDX: $(cat "$work/err")"
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "labelled directory: eval and tune equal the IDX slice's; bad sets refused"
