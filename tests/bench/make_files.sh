#!/usr/bin/env bash
# A directory of image files for the files path's benchmarks: an IDX test set exported as PNG
# (ttp_export) COPIES times, either flat (OUT/r0_00000_label7.png, ...) or as a tree of one
# directory per copy (OUT/r0/00000_label7.png, ...): MNIST's 10,000 test images ten times make
# 100,000 files of 28x28.
# Usage: make_files.sh BUILD_DIR IMAGES.idx[.gz] LABELS.idx[.gz] OUT_DIR [COPIES [flat|tree]]
set -euo pipefail
build=$1 images=$2 labels=$3 out=$4 copies=${5:-10} layout=${6:-flat}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-files-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$build/ttp_export" "$images" "$labels" "$tmp/set" >/dev/null
python3 - "$tmp/set" "$out" "$copies" "$layout" <<'PY'
import os, shutil, sys
src, out, copies, layout = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
names = sorted(os.listdir(src))
for k in range(copies):
    folder = os.path.join(out, f"r{k}") if layout == "tree" else out
    os.makedirs(folder, exist_ok=True)
    for n in names:
        shutil.copyfile(os.path.join(src, n), os.path.join(folder, n if layout == "tree" else f"r{k}_{n}"))
print(f"{copies * len(names)} files in {out} ({layout})")
PY
