#!/usr/bin/env bash
# The main job on the embedded default: the shipped model that scores best on Fashion-MNIST,
# resnet-fashion (94.68%; lenet-fashion 91.92%), classifies the 10,000 Fashion-MNIST test images
# as PNG files, on the engine `auto` picks (a ResNet: cudnn where there is a GPU, else onednn, the
# fast CPU engine).
# No test-time augmentation: on these clean, centred images it costs accuracy (README). Installs
# Debian's dataset-fashion-mnist if missing and exports
# its test set once into build/fashion-test; writes every result to build/fashion-test.csv and
# shows the first ones, ttapipe's summary and the accuracy against the labels in the names.
# Usage: bash datasets/main_job.sh   (after bash .ci/build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=$(bash "$root/datasets/fashion_mnist.sh")
images=$root/build/fashion-test
if [ ! -d "$images" ]; then
  "$root/build/ttp_export" "$data/t10k-images-idx3-ubyte.gz" "$data/t10k-labels-idx1-ubyte.gz" "$images"
fi
echo "model: models/resnet-fashion (the shipped model that scores best: 94.68% on this set)"
"$root/build/ttapipe" classify --model "$root/models/resnet-fashion" --verbose \
  -o "$root/build/fashion-test.csv" "$images" || [ $? -eq 3 ]
echo
head -6 "$root/build/fashion-test.csv" | sed "s|$root/||"
echo "..."
awk -F, 'NR > 1 { n++; split($1, a, "_label"); if (substr(a[2], 1, index(a[2], ".") - 1) == $3) ok++ }
         END { printf "accuracy against the labels in the file names: %.2f%% (%d of %d)\n", 100 * ok / n, ok, n }' \
  "$root/build/fashion-test.csv"
