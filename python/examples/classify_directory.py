"""Classify every image file under a directory (PNG, JPEG, BMP, PGM/PPM; walked and sorted), as
`ttapipe classify DIR` does, and print a row a file: path, label, probability, or its error.

    python classify_directory.py MODEL DIR [--tta N] [--engine auto|cpu|onednn|cudnn|fused]
"""
import argparse

import ttapipe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a model directory or an ONNX file")
    parser.add_argument("directory")
    parser.add_argument("--tta", type=int, default=1, help="augmented copies of each image")
    parser.add_argument("--engine", default="auto")
    args = parser.parse_args()
    with ttapipe.Pipeline(args.model, tta=args.tta, engine=args.engine) as p:
        found = p.classify_files([args.directory])
    for i, path in enumerate(found.paths):
        if found.errors[i]:
            print(f"{path},error,{found.errors[i]}")
        else:
            print(f"{path},{found.labels[found.classes[i]]},{found.probabilities[i]:.4f}")
    failed = sum(error is not None for error in found.errors)
    print(f"{len(found) - failed} of {len(found)} files classified")


if __name__ == "__main__":
    main()
