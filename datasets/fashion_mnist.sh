#!/usr/bin/env bash
# Prints the folder of Fashion-MNIST's IDX files, installing Debian's dataset-fashion-mnist
# (as root, or through sudo) when it is missing: /usr/share/datasets/fashion-mnist.
# Usage: bash datasets/fashion_mnist.sh
set -euo pipefail
dir=/usr/share/datasets/fashion-mnist
if [ ! -f "$dir/t10k-images-idx3-ubyte.gz" ]; then
  echo "datasets/fashion_mnist.sh: installing dataset-fashion-mnist" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq dataset-fashion-mnist >&2
fi
echo "$dir"
