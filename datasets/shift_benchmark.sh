#!/usr/bin/env bash
# The shift benchmark: how a model reads held-out images changed the way people draw or scan
# them (datasets/make_variants.c: shifted 3-4 px, thicker and thinner strokes, scaled 0.8-1.2,
# inverted onto light noisy paper), as they are (plain: --invert auto, the default), with TTA
# (--tta 5), centred as MNIST was made (--center mnist), and both. Prints a Markdown table of
# accuracies. Run from anywhere after bash .ci/build.
# Usage: bash datasets/shift_benchmark.sh [MODEL [IMAGES LABELS [OFFSET COUNT]]]
#   (default: models/lenet-mnist on MNIST test images 8000..9999, its held-out images)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/models/lenet-mnist}
if [ $# -ge 3 ]; then images=$2 labels=$3; else
  mnist=$(bash "$root/datasets/mnist.sh")
  images=$mnist/t10k-images-idx3-ubyte.gz labels=$mnist/t10k-labels-idx1-ubyte.gz
fi
offset=${4:-8000} count=${5:-2000}
out=$root/build/shift-benchmark
rm -rf "$out"
"$root/build/ttp_variants" "$images" "$labels" "$out" --offset "$offset" --limit "$count" >&2

# accuracy DIR OPTIONS...: percent of the files whose class is the label in their name.
accuracy() {
  local dir=$1; shift
  "$root/build/ttapipe" classify --model "$model" --quiet "$@" "$dir" |
    awk -F, 'NR > 1 { n++; split($1, a, "_label"); if (substr(a[2], 1, index(a[2], ".") - 1) == $3) ok++ }
             END { printf "%.2f%%", 100 * ok / n }'
}
echo "| variant | plain | TTA N=5 | --center mnist | both |"
echo "| --- | --- | --- | --- | --- |"
for v in plain shift thick thin scale paper; do
  d=$out/$v
  echo "| $v | $(accuracy "$d") | $(accuracy "$d" --tta 5) | $(accuracy "$d" --center mnist) | $(accuracy "$d" --tta 5 --center mnist) |"
done
