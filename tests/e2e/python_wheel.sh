#!/usr/bin/env bash
# The Python package as a user installs it (issue 44): a CPU-only wheel built from this checkout
# by `pip wheel ./python` (scikit-build-core, from the package registry, builds the C library
# with CMake and puts it inside the package), installed into a fresh virtual environment (with
# the system's numpy and pytest, which .ci/build installs). test_python then runs python/tests
# in that environment, with nothing pointing it at another library.
# Skipped (77) where the python lacks numpy, pytest or venv, or where no package registry
# answers (the GPU machine: its wheels come from .device, tests/README.md).
# Usage: python_wheel.sh PYTHON SOURCE_DIR WORK_DIR
set -u
python=$1 source=$2 work=$3
"$python" -c 'import numpy, pytest, ensurepip' 2>/dev/null ||
  { echo "skipped: $python lacks numpy, pytest or venv"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
"$python" -m venv --system-site-packages "$work/venv" || { echo "FAIL: venv"; exit 1; }
pip=("$work/venv/bin/pip" --disable-pip-version-check)
# The build backend comes from the registry: none reachable, nothing to test here.
"${pip[@]}" download -q --no-deps --retries 0 --timeout 15 -d "$work/probe" \
  "scikit-build-core>=0.10" >"$work/probe.log" 2>&1 ||
  { echo "skipped: no package registry for scikit-build-core ($(tail -1 "$work/probe.log"))"
    exit 77; }
start=$SECONDS
"${pip[@]}" wheel -q --no-deps -w "$work/wheels" "$source/python" \
  --config-settings=cmake.define.TTAPIPE_CUDA=OFF \
  --config-settings=build-dir="$work/build" >"$work/wheel.log" 2>&1 ||
  { tail -30 "$work/wheel.log"; echo "FAIL: pip wheel ./python"; exit 1; }
wheel=$(ls "$work"/wheels/ttapipe-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "FAIL: no wheel in $work/wheels"; exit 1; }
"${pip[@]}" install -q --no-deps --no-index "$wheel" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "FAIL: pip install of the wheel"; exit 1; }
echo "built and installed $(basename "$wheel") in $((SECONDS - start)) s"
# The installed package loads the library inside it, and it is the CPU-only one.
(cd "$work" && env -u PYTHONPATH -u TTAPIPE_LIBRARY "$work/venv/bin/python" -c '
import os, ttapipe
lib = ttapipe._find_library()
here = os.path.dirname(os.path.abspath(ttapipe.__file__))
assert lib == os.path.join(here, "libttapipe.so"), lib
assert "site-packages" in here, here
assert ttapipe.gpu_count() == 0
print("the package in", here, "loads", os.path.basename(lib))
') || { echo "FAIL: the installed package"; exit 1; }
