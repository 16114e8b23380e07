#!/usr/bin/env bash
# ttapipe as embedders get it: `cmake --install` into a temporary prefix, then
#   - the shared library exports ttp_ symbols alone (nm -D), the static archive defines no other
#     global symbol, the SONAME is libttapipe.so.MAJOR.MINOR of the version the command reports;
#   - every program of examples/ builds warning-free against the installed package four ways
#     (pkg-config and CMake's find_package, each with the shared and the static library) and
#     runs, the four builds printing the same results;
#   - a C++ program including ttapipe.h compiles warning-free and runs (extern "C");
#   - the Python package's sources find the installed library through pkg-config.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR SHARED_DATASETS_DIR
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) shared=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
model=$src/models/lenet-mnist

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
so=$(find "$prefix" -name 'libttapipe.so' | head -1)
[ -n "$so" ] || { echo "FAIL: no libttapipe.so installed"; exit 1; }
libdir=$(dirname "$so")
for f in "$prefix/include/ttapipe.h" "$libdir/libttapipe.a" "$libdir/pkgconfig/ttapipe.pc" \
         "$libdir/pkgconfig/ttapipe-static.pc" "$libdir/cmake/ttapipe/ttapipeConfig.cmake" \
         "$libdir/cmake/ttapipe/ttapipeConfigVersion.cmake" "$prefix/bin/ttapipe"; do
  [ -e "$f" ] || fail "not installed: ${f#$prefix/}"
done

# --- symbols and versions ----------------------------------------------------------------------
others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^ttp_')
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -c '^ttp_')
[ -z "$others" ] || fail "libttapipe.so exports more than ttp_: $(echo $others | head -c 300)"
[ "$exported" -ge 30 ] || fail "libttapipe.so exports only $exported ttp_ symbols"
others=$(nm -g --defined-only "$libdir/libttapipe.a" | awk 'NF == 3 {print $3}' | grep -v '^ttp_')
[ -z "$others" ] || fail "libttapipe.a defines more than ttp_: $(echo $others | head -c 300)"
version=$("$prefix/bin/ttapipe" --version | sed -n 's/^ttapipe \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p')
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libttapipe.so.${version%.*}" ] || fail "SONAME $soname for version $version"
grep -q "^Version: $version\$" "$libdir/pkgconfig/ttapipe.pc" || fail "ttapipe.pc's version"
echo "installed: $exported ttp_ symbols exported, nothing else; SONAME $soname (version $version)"

# --- the examples, four ways -------------------------------------------------------------------
export PKG_CONFIG_PATH=$libdir/pkgconfig
for package in ttapipe ttapipe-static; do
  mkdir -p "$work/pc-$package"
  make -s -C "$src/examples" PACKAGE=$package OUT="$work/pc-$package" >"$work/make.log" 2>&1 ||
    { fail "pkg-config $package build"; tail -20 "$work/make.log"; }
done
for static in OFF ON; do
  cmake -S "$src/examples" -B "$work/cmake-$static" -DCMAKE_PREFIX_PATH="$prefix" \
    -DTTAPIPE_EXAMPLES_STATIC=$static >"$work/cmake.log" 2>&1 &&
    cmake --build "$work/cmake-$static" >>"$work/cmake.log" 2>&1 ||
    { fail "CMake build (static $static)"; tail -20 "$work/cmake.log"; }
done
# The shared builds must use the installed library, not the build tree's.
ldd "$work/cmake-OFF/classify_buffer" | grep -q "$libdir/libttapipe.so" ||
  fail "the CMake build does not load the installed library: $(ldd "$work/cmake-OFF/classify_buffer" | grep ttapipe)"
images=$shared/mnist/t10k-images-idx3-ubyte.gz
[ -e "$images" ] || images=
first=
for dir in pc-ttapipe pc-ttapipe-static cmake-OFF cmake-ON; do
  "$work/$dir/classify_buffer" "$model" $images >"$work/$dir.out" 2>"$work/$dir.err" ||
    fail "$dir/classify_buffer: $(cat "$work/$dir.err")"
  [ "$(wc -l <"$work/$dir.out")" -eq 16 ] || fail "$dir/classify_buffer printed $(wc -l <"$work/$dir.out") lines"
  if [ -z "$first" ]; then first=$dir; else
    cmp -s "$work/$first.out" "$work/$dir.out" || fail "$dir and $first print different results"
  fi
done
if [ -n "$images" ]; then # MNIST's first 16 test digits: 7 2 1 0 4 1 4 9 5 9 0 6 9 0 1 5
  right=$(awk '{print $2}' "$work/$first.out" | paste -sd' ' | tr -d '\n')
  [ "$right" = "7 2 1 0 4 1 4 9 5 9 0 6 9 0 1 5" ] || fail "MNIST's first 16: $right"
fi
for dir in cmake-OFF pc-ttapipe-static; do
  "$work/$dir/threads" "$model" 3 >"$work/threads.out" 2>&1 || fail "$dir/threads: $(cat "$work/threads.out")"
done
# Images on the GPU (built where ttapipe has its GPU engines; without a GPU it says so).
for dir in cmake-OFF cmake-ON pc-ttapipe pc-ttapipe-static; do
  [ -x "$work/$dir/device_inputs" ] || continue
  "$work/$dir/device_inputs" "$model" >"$work/device.out" 2>&1 || fail "$dir/device_inputs: $(cat "$work/device.out")"
  grep -qE "^(1000 images classified from device memory|no GPU)" "$work/device.out" ||
    fail "$dir/device_inputs: $(cat "$work/device.out")"
done
if [ -d "$shared/mnistcudnn" ]; then
  "$work/cmake-ON/classify_files" "$model" "$shared/mnistcudnn/one_28x28.pgm" \
    "$shared/mnistcudnn/three_28x28.pgm" "$shared/mnistcudnn/five_28x28.pgm" "$work/none.png" \
    >"$work/files.out" 2>"$work/files.err" || fail "classify_files: $(cat "$work/files.err")"
  got=$(cut -d, -f2 "$work/files.out" | paste -sd' ')
  [ "$got" = "1 3 5 error" ] || fail "classify_files: $got"
fi
[ "$failures" -eq 0 ] &&
  echo "examples: built four ways, the same 16 results$([ -n "$images" ] && echo ", MNIST's first 16 right")"

# --- Python: the package's sources (python/, not pip-installed: test_python_wheel installs the
# wheel) find the installed library through pkg-config, without TTAPIPE_LIBRARY ---------------
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  got=$(cd "$work" && env -u TTAPIPE_LIBRARY PYTHONPATH="$src/python" \
          PKG_CONFIG_PATH="$libdir/pkgconfig" /usr/bin/python3 -c "
import numpy as np, ttapipe
p = ttapipe.Pipeline('$model', engine='cpu')
import os
print(ttapipe.version(), os.path.realpath(ttapipe._find_library()),
      p.classify(np.zeros((2, 28, 28), np.uint8)).classes.tolist())" 2>&1)
  case "$got" in "$version $(realpath "$libdir/libttapipe.so") ["*"]") ;;
    *) fail "the package's sources on the installed library: $got" ;; esac
  echo "python: the package's sources find the installed library through pkg-config ($got)"
else
  echo "note: Debian's python3 has no numpy: the Python package was not tried"
fi

# --- C++ ---------------------------------------------------------------------------------------
cat >"$work/use.cpp" <<'CPP'
#include <cstdio>
#include "ttapipe.h"
int main() {
  ttp_options o;
  ttp_options_init(&o);
  std::printf("%s\n", ttp_version_string());
  return ttp_status_string(TTP_OK)[0] == 'o' ? 0 : 1;
}
CPP
c++ -std=c++11 -Wall -Wextra -Werror -pedantic -I"$prefix/include" "$work/use.cpp" -o "$work/use" \
  -L"$libdir" -lttapipe -Wl,-rpath,"$libdir" 2>"$work/cpp.log" || fail "C++: $(cat "$work/cpp.log")"
[ "$("$work/use")" = "$version" ] || fail "the C++ program printed $("$work/use")"
echo "C++: ttapipe.h compiles warning-free with -pedantic and links"

if [ "$failures" -ne 0 ]; then echo "$failures failures"; exit 1; fi
echo "install: all checks passed"
