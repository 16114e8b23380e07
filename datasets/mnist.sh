#!/usr/bin/env bash
# Prints the folder that holds MNIST's IDX files (t10k-images-idx3-ubyte.gz and the others),
# looking in order at: the folder given as the first argument; $TTAPIPE_MNIST; the shared
# datasets beside the checkout (../shared/datasets/mnist); data/mnist in the checkout (an earlier
# download). Otherwise downloads the four files from the canonical mirrors into data/mnist.
# Every file found or fetched is checked against MNIST's published MD5 sums.
# Usage: bash datasets/mnist.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
declare -A md5=(
  [train-images-idx3-ubyte.gz]=f68b3c2dcbeaaa9fbdd348bbdeb94873
  [train-labels-idx1-ubyte.gz]=d53e105ee54ea40749a09fcbcd1e9432
  [t10k-images-idx3-ubyte.gz]=9fb629c4189551a2d022fa330f9573f3
  [t10k-labels-idx1-ubyte.gz]=ec29112dd5afa0611ce80d1b7f02629c
)
mirrors=(https://ossci-datasets.s3.amazonaws.com/mnist https://storage.googleapis.com/cvdf-datasets/mnist
         http://yann.lecun.com/exdb/mnist)

# Checks the files present in a folder (the test set at least); prints nothing.
verify() {
  local dir=$1 name
  [ -f "$dir/t10k-images-idx3-ubyte.gz" ] && [ -f "$dir/t10k-labels-idx1-ubyte.gz" ] || return 1
  for name in "${!md5[@]}"; do
    [ -f "$dir/$name" ] || continue
    if [ "$(md5sum <"$dir/$name" | cut -d' ' -f1)" != "${md5[$name]}" ]; then
      echo "datasets/mnist.sh: $dir/$name: wrong MD5 sum" >&2
      return 2
    fi
  done
}

for dir in "${1:-}" "${TTAPIPE_MNIST:-}" "$root/../shared/datasets/mnist" "$root/data/mnist"; do
  [ -n "$dir" ] && [ -d "$dir" ] || continue
  if verify "$dir"; then (cd "$dir" && pwd); exit 0; fi
done

dest=$root/data/mnist
mkdir -p "$dest"
for name in "${!md5[@]}"; do
  for mirror in "${mirrors[@]}"; do
    echo "datasets/mnist.sh: fetching $mirror/$name" >&2
    if curl -fsSL --retry 2 -o "$dest/$name.part" "$mirror/$name" &&
       [ "$(md5sum <"$dest/$name.part" | cut -d' ' -f1)" = "${md5[$name]}" ]; then
      mv "$dest/$name.part" "$dest/$name"
      break
    fi
    rm -f "$dest/$name.part"
  done
  [ -f "$dest/$name" ] || { echo "datasets/mnist.sh: could not fetch $name" >&2; exit 1; }
done
echo "$dest"
