#!/usr/bin/env bash
# A directory of image files for the files path's benchmarks: an IDX test set exported as PNG
# (ttp_export) COPIES times into one flat directory, r0_00000_label7.png ... (MNIST's 10,000
# test images ten times: 100,000 files of 28x28).
# Usage: make_files.sh BUILD_DIR IMAGES.idx[.gz] LABELS.idx[.gz] OUT_DIR [COPIES]
set -euo pipefail
build=$1 images=$2 labels=$3 out=$4 copies=${5:-10}
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-files-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$build/ttp_export" "$images" "$labels" "$tmp/set" >/dev/null
for ((k = 0; k < copies; k++)); do
  for f in "$tmp"/set/*; do cp "$f" "$out/r${k}_${f##*/}"; done
done
echo "$(find "$out" -type f | wc -l) files in $out"
