#!/usr/bin/env bash
# ttapipe tune --folds 2, --compare and --sweeps on MNIST's test images 9000..9199 (../shared/datasets/mnist),
# the fastest CPU engine of the build (mnist_test.sh), 3 candidates, objective NLL:
#   - the folds swap the halves: fold 2 tunes on fold 1's held-out images and holds out fold 1's
#     tuning ones; fold 1 is the plain run's (--folds 1, the same seed) policy and held-out figures;
#   - the pooled figures are the folds' held-out ones weighed by their images, and the paired
#     gains are the differences of the pooled means (accuracy in points, NLL), over the plain
#     model and over a 5-copy policy given to --compare (whose figures differ from the plain
#     model's, so that the gains are not all 0);
#   - --compare with a one-copy policy scores what the plain model scores, bit for bit, and the
#     chosen's gains over it are those over the plain model;
#   - --sweeps rotate,scale tries the plain model, the start and rotations and zooms alone;
#   - --sweeps views tries the six lists of views (2, 6 weighed, 10, turns, zooms, both).
# Skipped (77) without the dataset.
# Usage: tune_folds.sh TTAPIPE DATASETS_DIR PYTHON
set -u
ttapipe=$1 datasets=$2 python=${3:-python3}
. "$(dirname "$0")/mnist_test.sh" tune-folds
printf 'copies = 1\n' >"$work/plain.policy"
printf 'copies = 5\nshift = 2\n' >"$work/five.policy"
tune() { "$ttapipe" tune --model "$(dirname "$0")/../../models/lenet-mnist" --engine "$engine" \
           --threads 2 --images "$images" --labels "$labels" --offset 9000 --limit 200 \
           --candidates 3 --objective nll --quiet "$@"; }
tune --folds 2 --compare "$work/five.policy" -o "$work/f.policy" --json "$work/f.json" \
  >"$work/f.txt" || { echo "FAIL: tune --folds 2"; cat "$work/f.txt"; exit 1; }
cat "$work/f.txt"
tune -o "$work/one.policy" --json "$work/one.json" --compare "$work/plain.policy" >/dev/null ||
  fail "tune --folds 1"
cmp -s "$work/f.policy" "$work/one.policy" || fail "fold 1 chose otherwise than the plain run"
"$python" - "$work/f.json" "$work/one.json" <<'PY' || fail "the folds' figures"
import json, sys
f, one = (json.load(open(p)) for p in sys.argv[1:3])
a, b, pooled = f, f["fold2"], f["pooled"]
assert a["tune_images"] == b["heldout_images"] == 100 and b["tune_images"] == a["heldout_images"] == 100, (a, b)
assert pooled["images"] == 200, pooled
for k in ("plain", "chosen"):
    assert a["heldout"][k] == one["heldout"][k], (k, a["heldout"][k], one["heldout"][k])
close = lambda x, y: abs(x - y) <= 1e-6 * max(1, abs(x), abs(y))
n1, n2 = a["heldout_images"], b["heldout_images"]
for k in ("plain", "compared", "chosen"):
    for m in ("accuracy", "nll"):
        want = (n1 * a["heldout"][k][m] + n2 * b["heldout"][k][m]) / (n1 + n2)
        assert close(pooled[k][m], want), (k, m, pooled[k][m], want)
for k in ("plain", "compared"):
    g = pooled["paired"][k]
    assert close(g["accuracy_gain"], 100 * (pooled["chosen"]["accuracy"] - pooled[k]["accuracy"])), g
    assert close(g["nll_gain"], pooled[k]["nll"] - pooled["chosen"]["nll"]), g
assert pooled["compared"]["nll"] != pooled["plain"]["nll"], pooled
for m in ("accuracy", "nll", "brier", "ece"):
    assert one["heldout"]["compared"][m] == one["heldout"]["plain"][m], (m, one["heldout"])
assert one["paired"]["compared"] == dict(one["paired"]["plain"]), one["paired"]
print("tune --folds 2: the halves swapped, fold 1 the plain run's, pooled figures and paired gains "
      "consistent; --compare of the plain policy scores as the plain model")
PY
tune --sweeps rotate,scale --candidates 12 -o "$work/s.policy" --json "$work/s.json" >/dev/null ||
  fail "tune --sweeps"
"$python" - "$work/s.json" <<'PY' || fail "--sweeps rotate,scale"
import json, re, sys
tried = [t["policy"] for t in json.load(open(sys.argv[1]))["tried"]]
assert 3 <= len(tried) <= 2 + 4 + 3, tried
# past the two starts, the candidates differ in their rotation and zoom alone (a view block of
# rotation 0 and zoom 1..1 is not written)
rest = {re.sub(r"mirrors 0 left-right 0 upside down, rotation up to [0-9.]+ deg, "
               r"zoom [0-9.]+\.\.[0-9.]+, sub-pixel translation 0 px, edge zero, ", "", p)
        for p in tried[2:]}
assert len(rest) == 1, rest
assert any(re.search(r"rotation up to [1-9]", p) for p in tried), tried
assert any(re.search(r"zoom 0\.9", p) for p in tried), tried
print(f"tune --sweeps rotate,scale: {len(tried)} policies, rotations and zooms alone")
PY
tune --sweeps views --candidates 12 -o "$work/v.policy" --json "$work/v.json" >/dev/null ||
  fail "tune --sweeps views"
"$python" - "$work/v.json" <<'PY' || fail "--sweeps views"
import json, sys
tried = [t["policy"] for t in json.load(open(sys.argv[1]))["tried"]]
# the plain model, the start, then the six lists (2, 6 and 10 views; airbench's weighed 2, 2, 1,
# ...; turns, zooms, both)
lists = [p for p in tried if "listed views" in p]
assert [int(p.split(" listed views")[0].split()[-1]) for p in lists] == [2, 6, 10, 3, 3, 5], tried
assert "weights 2,2,1,1,1,1" in lists[1] and "weights" not in lists[0], lists
print(f"tune --sweeps views: {len(tried)} policies, the six lists among them")
PY
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
