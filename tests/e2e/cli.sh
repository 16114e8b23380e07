#!/usr/bin/env bash
# End-to-end tests of the ttapipe command on generated inputs: help and usage errors (exit 2),
# eval, classify and info on a generated model, and one clear error line with exit 1 (never a
# crash) for truncated, empty, wrong-magic and absurdly sized model and IDX files.
# Usage: cli.sh TTAPIPE TTP_FIXTURE SHARED_DATASETS_DIR [full|small]
# small (the sanitized build): NVIDIA's model is evaluated on 200 MNIST images, not 1000.
set -u
ttapipe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixture=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
shared=$3
size=${4:-full}
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-cli-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run CODE ARGS...: runs ttapipe, keeps its output in $work/out and $work/err, checks the code.
run() {
  local want=$1; shift
  "$ttapipe" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "ttapipe $* exited $got, want $want"; sed 's/^/  stderr: /' "$work/err" | head -5
  fi
}
# one_error PATTERN: stderr is exactly one line and holds PATTERN.
one_error() {
  local lines; lines=$(wc -l <"$work/err")
  [ "$lines" -eq 1 ] || fail "stderr has $lines lines, want 1: $(head -3 "$work/err")"
  grep -qF -- "$1" "$work/err" || fail "stderr lacks '$1': $(cat "$work/err")"
}
out_has() { grep -qF -- "$1" "$work/out" || fail "stdout lacks '$1'"; }

# --- help and usage errors ----------------------------------------------------------------------
run 0 --help; out_has "Commands:"
run 0 --version; out_has "ttapipe "
run 2
run 2 frobnicate; grep -q "unknown command" "$work/err" || fail "unknown command not named"
for cmd in eval classify info bench; do
  run 0 "$cmd" --help; out_has "Usage: ttapipe $cmd"; out_has "--model PATH"
  run 2 "$cmd" --no-such-option; grep -q "unknown option '--no-such-option'" "$work/err" \
    || fail "$cmd: unknown option not named"
  run 2 "$cmd" --model; grep -q "needs a value" "$work/err" || fail "$cmd: missing value"
done
run 2 eval --images a --labels b; grep -q -- "--model is required" "$work/err" || fail "no --model"
run 2 info --model m extra; grep -q "unexpected argument 'extra'" "$work/err" || fail "extra arg"
run 2 classify --model m; grep -q "no image files" "$work/err" || fail "classify without files"

# --- a generated model and data ----------------------------------------------------------------
m=$work/model
"$fixture" model "$m" 11
"$fixture" images "$work/img.gz" 97 28 28 1 gz
"$fixture" labels "$work/lab.gz" 97 10 2 gz
"$fixture" images "$work/img" 97 28 28 1
"$fixture" labels "$work/lab" 97 10 2
run 0 info --model "$m"; out_has "conv2"; out_has "431080"; out_has "4.586"
run 0 eval --model "$m" --images "$work/img.gz" --labels "$work/lab.gz" --threads 2
out_has "accuracy"; out_has "of 97)"; out_has "confusion matrix"
cp "$work/out" "$work/eval.gz.txt"
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --threads=1
# Plain and gzip files, one thread or two: the same accuracy line.
grep accuracy "$work/out" | cmp -s - <(grep accuracy "$work/eval.gz.txt") \
  || fail "plain and gzip evaluations differ"
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --offset 90 --limit 5
out_has "90 to 94 of 97"; out_has "of 5)"
run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" --limit 0
run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" --offset -1
run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" --threads x
run 1 eval --model "$m" --images "$work/img" --labels "$work/lab" --offset 97; one_error "past the 97"
"$fixture" labels "$work/lab96" 96 10 2
run 1 eval --model "$m" --images "$work/img" --labels "$work/lab96"; one_error "96 labels for the 97 images"
"$fixture" labels "$work/lab11" 97 11 3
run 1 eval --model "$m" --images "$work/img" --labels "$work/lab11"; one_error "model has 10 classes"
"$fixture" images "$work/img27" 5 27 28 1
run 1 eval --model "$m" --images "$work/img27" --labels "$work/lab"; one_error "images are 1x27x28"

# --- test-time augmentation settings ----------------------------------------------------------------
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --tta 5 --seed 3 --merge vote
out_has "tta       5 copies (copy 0 as it is), shift 2 px"; out_has "merge vote"; out_has "of 97)"
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --tta 3 --tta-noise-kind gaussian \
  --tta-noise 0.1 --tta-contrast 0.5,1.5 --tta-brightness=-0.2,0.2 --no-tta-original --no-tta-clamp --tta-shift 4
out_has "3 copies (all augmented), shift 4 px, contrast 0.5..1.5, brightness -0.2..0.2, gaussian noise 0.1, unclamped"
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --tta 4 --tta-flip-v 0.5 \
  --tta-rotate 12 --tta-scale 0.9,1.1 --tta-translate 0.5 --tta-edge reflect
out_has "shift 2 px, mirrors 0 left-right 0.5 upside down, rotation up to 12 deg, zoom 0.9..1.1, sub-pixel translation 0.5 px, edge reflect"
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --tta-views "none; flip_v; shift 1 0" \
  --tta-edge replicate
out_has "3 copies (copy 0 as it is), 3 listed views, edge replicate, contrast"
run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" --tta-views "none; wobble"
grep -q "view 2: unknown view word 'wobble'" "$work/err" || fail "--tta-views wobble: $(cat "$work/err")"
run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" --tta 4 --tta-views "none; flip_v"
grep -q "lists 2 views" "$work/err" || fail "--tta 4 with 2 views: $(cat "$work/err")"
for bad in "--tta 0" "--tta 65" "--tta x" "--tta-shift 17" "--tta-contrast 1.2" "--tta-contrast 1.2,1.1" \
           "--tta-brightness -2,0" "--tta-noise nan" "--tta-noise 2" "--tta-noise-kind pink" "--merge median" \
           "--seed -1" "--seed 18446744073709551616" "--tta-flip-h 1.5" "--tta-rotate 181" \
           "--tta-scale 0.1,1" "--tta-scale 2,1" "--tta-translate 17" "--tta-edge wrap"; do
  # shellcheck disable=SC2086
  run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" $bad
  grep -q "Try 'ttapipe eval --help'" "$work/err" || fail "$bad: no usage hint"
done
# GPU engine options: checked everywhere; without a GPU the cudnn engine is one clear error.
for bad in "--engine gpu" "--precision fp64" "--batch 0" "--batch 65537" "--slots 1" "--slots 17" "--device -1"; do
  # shellcheck disable=SC2086
  run 2 eval --model "$m" --images "$work/img" --labels "$work/lab" $bad
done
run 0 eval --model "$m" --images "$work/img" --labels "$work/lab" --engine cpu --verbose --no-graph --batch 7 --slots 2
grep -q "engine: cpu" "$work/err" || fail "--verbose did not describe the engine: $(cat "$work/err")"
if ! nvidia-smi -L >/dev/null 2>&1; then
  run 1 eval --model "$m" --images "$work/img" --labels "$work/lab" --engine cudnn; one_error "GPU"
fi
# An image's answer is the same alone and among others, with augmentation.
"$fixture" pgm "$work/t1.pgm" 28 28 21
"$fixture" pgm "$work/t2.pgm" 28 28 22
run 0 classify --model "$m" --tta 5 --tta-noise-kind gaussian "$work/t1.pgm"
alone=$(sed -n 2p "$work/out")
run 0 classify --model "$m" --tta 5 --tta-noise-kind gaussian --threads 2 "$work/t2.pgm" "$work/t1.pgm"
[ "$(sed -n 3p "$work/out")" = "$alone" ] || fail "with TTA, t1 alone ($alone) differs from t1 after t2"

# --- bad IDX files: one error line, exit 1 -------------------------------------------------------
: >"$work/empty"
run 1 eval --model "$m" --images "$work/empty" --labels "$work/lab"; one_error "$work/empty: empty file"
head -c 5000 "$work/img" >"$work/trunc"
run 1 eval --model "$m" --images "$work/trunc" --labels "$work/lab"; one_error "$work/trunc: truncated"
head -c 3000 "$work/img.gz" >"$work/trunc.gz"
run 1 eval --model "$m" --images "$work/trunc.gz" --labels "$work/lab"; one_error "$work/trunc.gz: truncated"
run 1 eval --model "$m" --images "$work/lab" --labels "$work/lab"; one_error "not an IDX images file"
run 1 eval --model "$m" --images "$work/img" --labels "$work/img"; one_error "not an IDX labels file"
printf '\x00\x00\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >"$work/absurd"
run 1 eval --model "$m" --images "$work/absurd" --labels "$work/lab"; one_error "declares more than"
run 1 eval --model "$m" --images "$work/nothing" --labels "$work/lab"; one_error "cannot open"

# --- bad model files: one error line, exit 1 -----------------------------------------------------
bad_model() { # NAME: a copy of the model for one spoiled file
  rm -rf "$work/bad"; cp -r "$m" "$work/bad"; echo "$work/bad/$1"
}
f=$(bad_model conv2.bin); head -c 99999 "$m/conv2.bin" >"$f"
run 1 info --model "$work/bad"; one_error "conv2.bin: expected 100000 bytes (25000 float32), found 99999"
f=$(bad_model ip1.bias.bin); : >"$f"
run 1 eval --model "$work/bad" --images "$work/img" --labels "$work/lab"; one_error "ip1.bias.bin: expected 2000 bytes (500 float32), found 0"
f=$(bad_model ip2.bin); cat "$m/ip2.bin" "$m/ip2.bin" >"$f"
run 1 info --model "$work/bad"; one_error "found 40000"
f=$(bad_model conv1.bin); rm "$f"
run 1 info --model "$work/bad"; one_error "conv1.bin: cannot open"
f=$(bad_model conv1.bias.bin); printf '\x00\x00\xc0\x7f' | dd of="$f" bs=1 seek=8 conv=notrunc status=none
run 1 info --model "$work/bad"; one_error "conv1.bias.bin: value 2 is NaN"
f=$(bad_model labels.txt); printf 'a\nb\n' >"$f"
run 1 info --model "$work/bad"; one_error "labels.txt: 2 names for the model's 10 classes"
run 1 info --model "$work/missing-dir"; one_error "cannot open"

# --- classify: rows in order, bad files as error rows, exit 3 ------------------------------------
"$fixture" pgm "$work/a.pgm" 28 28 5
"$fixture" pgm "$work/b, \"q\".pgm" 28 28 6
"$fixture" pgm "$work/small.pgm" 20 20 7
run 3 classify --model "$m" "$work/a.pgm" "$work/b, \"q\".pgm" "$work/small.pgm" "$work/none.pgm" "$work/a.pgm"
[ "$(wc -l <"$work/out")" -eq 6 ] || fail "classify printed $(wc -l <"$work/out") lines, want 6"
sed -n 2p "$work/out" | grep -q "^$work/a.pgm,ok,[0-9]," || fail "row 1: $(sed -n 2p "$work/out")"
sed -n 3p "$work/out" | grep -qF "\"$work/b, \"\"q\"\".pgm\",ok," || fail "row 2 not quoted: $(sed -n 3p "$work/out")"
sed -n 4p "$work/out" | grep -q "^$work/small.pgm,ok," || fail "row 3 (20x20, resized): $(sed -n 4p "$work/out")"
sed -n 5p "$work/out" | grep -q "cannot open" || fail "row 4: $(sed -n 5p "$work/out")"
[ "$(sed -n 2p "$work/out")" = "$(sed -n 6p "$work/out")" ] || fail "the same file twice differs"
run 0 classify --model "$m" "$work/a.pgm"

# --- classify: a directory of every kind of image, good and bad -----------------------------------
g=$work/gallery
"$fixture" gallery "$g"
# Expected rows: every file under the gallery, in byte order; the bad ones are errors.
find "$g" -type f | LC_ALL=C sort >"$work/expected_paths"
run 3 classify --model "$m" --engine cpu "$g" --threads 3
python3 - "$work/out" "$work/expected_paths" "$(id -u)" <<'PY' || fail "gallery rows wrong"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8')))
want = open(sys.argv[2], encoding='utf-8').read().splitlines()
bad = {"truncated.png", "random.jpg", "empty.bmp", "huge.png"}
if sys.argv[3] != "0":
    bad.add("noread.png")  # root reads it anyway
assert rows[0] == ["path", "status", "class", "label", "probability"], rows[0]
assert [r[0] for r in rows[1:]] == want, ([r[0] for r in rows[1:]], want)
for r in rows[1:]:
    name = r[0].rsplit("/", 1)[1]
    if name in bad:
        assert r[1] != "ok" and r[2:] == ["", "", ""], r
    else:
        assert r[1] == "ok" and r[2].isdigit() and 0 < float(r[4]) <= 1, r
print("gallery: %d rows as expected" % (len(rows) - 1))
PY
grep -q "files classified, 4 failed\|files classified, 5 failed" "$work/err" || fail "no summary: $(cat "$work/err")"
# The engine left to auto walks the directory while the engine opens (the list then classified
# whole) rather than while it classifies: the same files in the same order, the same statuses
# (auto may be onednn here, whose last bits may differ from cpu's).
cp "$work/out" "$work/gallery_walked"
run 3 classify --model "$m" "$g" --threads 3
python3 - "$work/out" "$work/gallery_walked" <<'PY' || fail "gallery: auto's rows differ from cpu's"
import csv, sys
a, b = ([r[:2] for r in csv.reader(open(f, newline='', encoding='utf-8'))] for f in sys.argv[1:])
assert a == b, (a, b)
PY
# The same through a NUL-separated list on standard input, with the directory named x.png.
(cd "$g" && printf '%s\0' "x.png" "digit grey.png" "nested/rgba \"quoted\".png") >"$work/list0"
(cd "$g" && "$ttapipe" classify --model "$m" --files-from - -0 --quiet --format jsonl --topk 3 \
  --probs <"$work/list0" >"$work/out" 2>"$work/err")
[ $? -eq 3 ] || fail "list with a directory: exit code"
[ ! -s "$work/err" ] || fail "--quiet printed: $(cat "$work/err")"
(cd "$g" && python3 - "$work/out" <<'PY') || fail "JSON rows wrong"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8')]
assert [r["path"] for r in rows] == ["x.png", "digit grey.png", 'nested/rgba "quoted".png'], rows
assert rows[0]["status"] == "is a directory" and rows[0]["class"] is None, rows[0]
for r in rows[1:]:
    assert r["status"] == "ok" and len(r["top"]) == 3 and len(r["probabilities"]) == 10, r
    assert r["top"][0]["class"] == r["class"] and abs(sum(r["probabilities"]) - 1) < 1e-4, r
print("list: 3 JSON rows as expected")
PY
# -o FILE: nothing on stdout; good files only: exit 0.
run 0 classify --model "$m" -o "$work/result.csv" --quiet "$g/nested/deeper" "$g/wide.ppm"
[ ! -s "$work/out" ] && [ "$(wc -l <"$work/result.csv")" -eq 4 ] || fail "-o: $(cat "$work/result.csv")"
# --verbose: where opening went, and the run's wall time from the command's start, in order.
run 0 classify --model "$m" -o "$work/verbose.csv" --verbose "$g/nested/deeper"
grep -q "^ttapipe: opening took .* ms: the model .* ms, the engine .* ms" "$work/err" ||
  fail "--verbose: no opening line: $(grep opening "$work/err")"
python3 - "$work/err" <<'PY' || fail "--verbose: the wall line: $(grep 'wall' "$work/err")"
import re, sys
line = [l for l in open(sys.argv[1]) if l.startswith("ttapipe: wall ")][0]
wall, *marks = [float(x) for x in re.findall(r"([0-9.]+) ms", line)]
opened, first, last, closed = marks
assert 0 < opened <= first <= last <= closed == wall, line
PY
run 1 classify --model "$m" -o "$work/no/such/dir/out.csv" "$g"; one_error "cannot create"
run 2 classify --model "$m" --tta 3 --tta-weights 1,2 "$g"
grep -q "lists 2 weights, but there are 3" "$work/err" || fail "--tta-weights against --tta: $(cat "$work/err")"
run 0 classify --model "$m" --engine cpu --tta-weights 2,1,0.5 --merge logits "$work/a.pgm"
run 2 classify --model "$m" --tta-weights 0,0 "$work/a.pgm"
grep -q "not all 0" "$work/err" || fail "--tta-weights 0,0: $(cat "$work/err")"
printf 'weights = 1, 2\n' >"$work/weighed.policy"
run 2 classify --model "$m" --tta-policy "$work/weighed.policy" --tta 3 "$work/a.pgm"
grep -q "the policy weighs 2" "$work/err" || fail "a policy's weights, other copies: $(cat "$work/err")"
run 2 classify --model "$m" --topk 11 "$g"
run 2 classify --model "$m" --max-size 10x "$g"
run 2 classify --model "$m" --invert sideways "$g"
run 2 classify --model "$m" --format xml "$g"
run 3 classify --model "$m" --max-size 30x30 --quiet "$g/light, rgb.jpg" "$g/digit grey.png"
grep -q "larger than the 30x30" "$work/out" || fail "--max-size not applied: $(cat "$work/out")"

# --- bench on the CPU engine --------------------------------------------------------------------
run 0 bench --model "$m" --engine cpu --batch 1,7 --tta 1,2 --seconds 0.2 --json "$work/bench.json"
[ "$(grep -c '^cpu ' "$work/out")" -eq 4 ] || fail "bench: $(cat "$work/out")"
python3 - "$work/bench.json" <<'PY' || fail "bench JSON wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["points"]) == 4 and "CPU only" in d["build"] or d["gpu"] is None or "name" in d["gpu"], d
for p in d["points"]:
    assert p["engine"] == "cpu" and p["images_per_s"] > 0 and p["latency_ms"]["p50"] > 0, p
    q = p["latency_ms"]
    assert q["p99.9"] >= q["p99"] >= q["p90"] >= q["p50"], p
    assert abs(p["copies_per_s"] - p["images_per_s"] * p["copies"]) < 1e-3 * p["copies_per_s"] + 1, p
print("bench: 4 CPU points")
PY
run 0 bench --model "$m" --engine cpu --batch 3 --iterations 2 --warmup 0
run 2 bench --model "$m" --engine tpu
run 2 bench --model "$m" --batch 0
run 2 bench --model "$m" --seconds 0

# --- NVIDIA's model on the MNIST test set, where ../shared is present ----------------------------
if [ -d "$shared/mnist" ] && [ -d "$shared/mnistcudnn" ]; then
  limit=1000; [ "$size" = small ] && limit=200
  run 0 eval --model "$shared/mnistcudnn" --images "$shared/mnist/t10k-images-idx3-ubyte.gz" \
    --labels "$shared/mnist/t10k-labels-idx1-ubyte.gz" --limit "$limit"
  acc=$(sed -n 's/^accuracy  *\([0-9.]*\)%.*/\1/p' "$work/out")
  awk -v a="$acc" 'BEGIN { exit !(a >= 98.0) }' || fail "NVIDIA's model: accuracy $acc% on $limit images"
  run 0 classify --model "$shared/mnistcudnn" "$shared/mnistcudnn/one_28x28.pgm" \
    "$shared/mnistcudnn/three_28x28.pgm" "$shared/mnistcudnn/five_28x28.pgm"
  cut -d, -f3 "$work/out" | tail -3 | tr '\n' ' ' | grep -q "^1 3 5 $" || fail "1 3 5: $(cat "$work/out")"
  # Twenty MNIST digits drawn dark on white, three times larger, off-centre: as they are, the
  # model misreads most; inverted and centred as MNIST was made, it reads them as well as the
  # originals (eval of the same twenty).
  "$fixture" drawn "$work/drawn" "$shared/mnist/t10k-images-idx3-ubyte.gz" "$shared/mnist/t10k-labels-idx1-ubyte.gz"
  correct() { tail -n +2 "$work/out" | awk -F, '{ split($1, a, "label"); if (substr(a[2], 1, 1) == $3) n++ } END { print n + 0 }'; }
  run 0 classify --model "$shared/mnistcudnn" --quiet --invert no --center none "$work/drawn"; raw=$(correct)
  run 0 classify --model "$shared/mnistcudnn" --quiet --invert auto --center mnist "$work/drawn"; fixed=$(correct)
  run 0 eval --model "$shared/mnistcudnn" --images "$shared/mnist/t10k-images-idx3-ubyte.gz" \
    --labels "$shared/mnist/t10k-labels-idx1-ubyte.gz" --limit 20
  model=$(sed -n 's/^accuracy .*(\([0-9]*\) of 20)/\1/p' "$work/out")
  echo "drawn digits: $raw/20 as they are, $fixed/20 inverted and centred; the model reads $model/20 originals"
  [ "$fixed" -ge "$model" ] && [ "$raw" -lt 10 ] || fail "drawn digits: $raw raw, $fixed centred, model $model"
else
  echo "note: $shared absent; the checks on NVIDIA's model were not run"
fi

# --- ONNX models: PyTorch's exports (models/*/model.onnx, tests/onnx/) ---------------------------
repo=$(cd "$(dirname "$0")/../.." && pwd)
run 0 info --model "$repo/models/lenet-mnist/model.onnx"; out_has "softmax (added)"
run 0 info --model "$repo/models/lenet-mnist/model.onnx" --verbose
grep -q "a softmax added after the model's logits" "$work/err" || fail "--verbose: $(cat "$work/err")"
run 0 info --model "$repo/tests/onnx/rgb-stride.onnx"; out_has "3x32x32"; out_has "- 0.4914) / 0.247"
# An RGB model on its 4-D IDX images (planar), its labels generated; grey images refused.
rgb=$repo/tests/onnx/rgb-stride
"$fixture" labels "$work/rgb-labels" 7 10 5
run 0 eval --model "$rgb.onnx" --images "$rgb.images.idx" --labels "$work/rgb-labels" --tta 3; out_has "accuracy"
run 1 eval --model "$rgb.onnx" --images "$work/img" --labels "$work/lab"
one_error "the model needs 3x32x32"
# Colour files through classify (each plane resized); the scaling overridden changes the answer.
run 0 classify --model "$rgb.onnx" --quiet "$g/nested/deeper" "$g/wide.ppm"; cp "$work/out" "$work/rgb1"
run 0 classify --model "$rgb.onnx" --quiet --mean 0 --std 1 "$g/nested/deeper" "$g/wide.ppm"
[ "$(wc -l <"$work/out")" -eq "$(wc -l <"$work/rgb1")" ] || fail "RGB classify: rows differ"
cmp -s "$work/out" "$work/rgb1" && fail "RGB classify: --mean 0 --std 1 changed nothing"
run 2 classify --model "$rgb.onnx" --mean 0.5 "$g/wide.ppm"
grep -q -- "--mean and --std come together" "$work/err" || fail "--mean alone: $(cat "$work/err")"
run 2 classify --model "$rgb.onnx" --mean 0.5 --std 0 "$g/wide.ppm"
grep -q "std 0 1e-6..1e6" "$work/err" || fail "--std 0: $(cat "$work/err")"
run 1 classify --model "$rgb.onnx" --center mnist "$g/wide.ppm"; one_error "one-channel"
# The output is created with the first row: an engine that cannot open (fused on an RGB model,
# or on a machine without a GPU; it opens behind the walk and the decoding) leaves an existing
# one as it was.
printf 'kept\n' >"$work/kept.csv"
run 1 classify --model "$rgb.onnx" --engine fused -o "$work/kept.csv" "$g"; one_error "fused"
[ "$(cat "$work/kept.csv")" = kept ] || fail "a failed engine changed the output: $(head -2 "$work/kept.csv")"
# Bad ONNX files: one line, exit 1.
: >"$work/empty.onnx"
mkdir -p "$work/folder.onnx"
head -c 3000 "$repo/models/lenet-mnist/model.onnx" >"$work/cut.onnx"
head -c 5000 "$work/img" >"$work/magic.onnx"
for bad in empty folder cut magic; do
  run 1 info --model "$work/$bad.onnx"; one_error "$bad.onnx"
done
# TTA policy files: the same bytes as the options they hold; options override single fields;
# bench takes one; a bad one is one line naming the file and the line.
printf '# a policy\ncopies = 4\nshift = 1\nmerge = vote\nseed = 7\nnoise_kind = gaussian\n' >"$work/p.policy"
run 0 classify --model "$m" --quiet --probs --tta-policy "$work/p.policy" "$g/nested/deeper"
cp "$work/out" "$work/policy.csv"
run 0 classify --model "$m" --quiet --probs --tta 4 --tta-shift 1 --merge vote --seed 7 \
  --tta-noise-kind gaussian "$g/nested/deeper"
cmp -s "$work/out" "$work/policy.csv" || fail "--tta-policy differs from the options it holds"
run 0 classify --model "$m" --quiet --probs --tta-policy "$work/p.policy" --tta 2 --merge mean "$g/nested/deeper"
cp "$work/out" "$work/override.csv"
run 0 classify --model "$m" --quiet --probs --tta 2 --tta-shift 1 --seed 7 --tta-noise-kind gaussian "$g/nested/deeper"
cmp -s "$work/out" "$work/override.csv" || fail "options did not override the policy's fields"
run 0 bench --model "$m" --engine cpu --batch 3 --iterations 1 --warmup 0 --tta-policy "$work/p.policy"
grep -q "^cpu .* 4 " "$work/out" || fail "bench: the policy's 4 copies not measured: $(tail -1 "$work/out")"
printf 'copies = 4\nshift = lots\n' >"$work/bad.policy"
run 1 classify --model "$m" --tta-policy "$work/bad.policy" "$g/nested/deeper"; one_error "bad.policy: line 2"

if [ "$failures" -ne 0 ]; then echo "$failures failures"; exit 1; fi
echo "cli: all checks passed"
