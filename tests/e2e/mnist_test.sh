# What the e2e scripts on MNIST's test images share, sourced once they have set $datasets and
# $ttapipe: images and labels, the IDX files in $datasets/mnist (without them the script exits
# 77, skipped); work, a directory of its own, removed at exit; fail MESSAGE, counted in
# failures; engine, the fastest CPU engine of the build (onednn, else cpu, the reference): these
# scripts check what the commands make of an engine's probabilities, not the engine, which
# tests/unit/test_onednn.c checks against the reference.
# Usage: . "$(dirname "$0")/mnist_test.sh" NAME   (NAME: in the work directory's name)
images=$datasets/mnist/t10k-images-idx3-ubyte.gz labels=$datasets/mnist/t10k-labels-idx1-ubyte.gz
[ -f "$images" ] && [ -f "$labels" ] || { echo "skipped: no $images"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-$1-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
engine=cpu
"$ttapipe" --version | grep -q oneDNN && engine=onednn
