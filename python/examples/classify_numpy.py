"""Classify a batch of images held in a NumPy array: here MNIST-sized digits read from an IDX
file (the format of MNIST's own files), or random pixels without one. Prints each image's class,
its merged probability and the spread of that probability over the augmented copies.

    python classify_numpy.py MODEL [IDX_IMAGES] [--count N] [--tta N]
"""
import argparse
import gzip

import numpy as np

import ttapipe


def read_idx_images(path, count):
    """The first `count` images of an IDX file of uint8 images (gzip or not), (n, rows, cols)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, n, rows, cols = np.frombuffer(f.read(16), dtype=">u4")
        if magic != 0x803:
            raise SystemExit(f"{path}: not an IDX file of uint8 images")
        n = min(int(n), count)
        pixels = np.frombuffer(f.read(n * int(rows) * int(cols)), dtype=np.uint8)
    return pixels.reshape(n, int(rows), int(cols))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a model directory or an ONNX file")
    parser.add_argument("images", nargs="?", help="an IDX file of images (else random pixels)")
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--tta", type=int, default=5)
    args = parser.parse_args()
    with ttapipe.Pipeline(args.model, tta=args.tta) as p:
        c, h, w = p.input_shape
        if args.images:
            images = read_idx_images(args.images, args.count)
        else:  # channels last, as most loaders give them: classify reads the layout
            images = np.random.default_rng(1).integers(0, 256, (args.count, h, w, c), np.uint8)
        r = p.classify(images)
        print(f"{p.description}")
    for i in range(len(r)):
        print(f"image {i}: {r.labels[r.classes[i]]} (p = {r.probabilities[i]:.4f}, "
              f"spread {r.spreads[i]:.4f})")


if __name__ == "__main__":
    main()
