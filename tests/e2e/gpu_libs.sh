#!/usr/bin/env bash
# What a process that needs no GPU pays for the GPU (issue 42): `--help`, and `info`, `classify`
# (two MPI ranks too) and `bench` with the CPU engines, never load the CUDA driver, cuDNN or
# cuBLAS (the loader's own log, LD_DEBUG=libs, names every library a process loads or looks
# for); `--help` stays within 30 MB resident; and with cuDNN and cuBLAS hidden from the loader
# (its cache and the library's RUNPATH ignored, LD_LIBRARY_PATH without them) the command still
# classifies with the CPU engines, byte for byte as with them, and `--engine cudnn` says in one
# line which library it lacks (where there is a GPU to get that far).
# Usage: gpu_libs.sh TTAPIPE TTP_FIXTURE MODEL_DIR
set -u
ttapipe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixture=$2 model=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-gpu-libs-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
gpu_libs='find library=(libcuda\.so|libcudnn|libcublas)'

mkdir -p "$work/images"
for i in 1 2 3 4 5 6; do "$fixture" photo "$work/images/$i.png" 28 28 $i || fail "fixture $i"; done
engines=cpu
"$ttapipe" info --model "$model" --engine cpu | grep -q '^build .*oneDNN' && engines="cpu onednn"

# untouched NAME ARGS...: the command succeeds and its loader's log names no GPU library.
untouched() {
  local name=$1
  shift
  LD_DEBUG=libs "$ttapipe" "$@" >"$work/$name.out" 2>"$work/$name.log" ||
    { fail "$name: ttapipe $* exited $?: $(grep -v '^ *[0-9]*:' "$work/$name.log" | head -3)"; return; }
  if grep -qE "$gpu_libs" "$work/$name.log"; then
    fail "$name: ttapipe $* looked for a GPU library: $(grep -E "$gpu_libs" "$work/$name.log" | head -3)"
  fi
}
untouched help --help
for engine in $engines; do
  untouched info.$engine info --model "$model" --engine $engine
  grep -q '^GPUs ' "$work/info.$engine.out" || fail "info.$engine: no GPUs line"
  untouched classify.$engine classify --model "$model" --engine $engine --threads 2 --quiet \
    -o "$work/$engine.csv" "$work/images"
  [ "$(wc -l <"$work/$engine.csv")" -eq 7 ] || fail "classify.$engine: $(wc -l <"$work/$engine.csv") lines, want 7"
  untouched bench.$engine bench --model "$model" --engine $engine --batch 3 --iterations 1 --warmup 0
done

# Two MPI ranks with the CPU engine (where the build has MPI): each rank's own loader log.
if command -v mpirun >/dev/null 2>&1 && ldd "$ttapipe" 2>/dev/null | grep -q libmpi; then
  mkdir "$work/mpi"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 mpirun -n 2 \
    -x LD_DEBUG=libs -x LD_DEBUG_OUTPUT="$work/mpi/ld" "$ttapipe" classify --model "$model" \
    --engine cpu --threads 1 --quiet -o "$work/mpi.csv" "$work/images" >"$work/mpi.out" 2>&1 ||
    fail "mpirun -n 2 classify --engine cpu exited $?: $(tail -3 "$work/mpi.out")"
  [ "$(ls "$work/mpi" | wc -l)" -ge 2 ] || fail "mpirun: $(ls "$work/mpi" | wc -l) loader logs, want 2"
  if cat "$work/mpi"/* | grep -qE "$gpu_libs"; then
    fail "mpirun -n 2 classify --engine cpu: a rank looked for a GPU library"
  fi
fi

# --help's resident memory (the loader maps every library the command links).
if [ -x /usr/bin/time ]; then
  kb=$(/usr/bin/time -f %M "$ttapipe" --help 2>&1 >/dev/null | tail -1)
  echo "--help: ${kb} KB resident at most"
  [ "$kb" -le 30720 ] || fail "--help took ${kb} KB resident, want at most 30 MB"
fi

# Hidden: the loader run by hand, its cache and the library's RUNPATH ignored, the library found
# through a directory of its own, LD_LIBRARY_PATH's directories that hold cuDNN or cuBLAS left out.
loader=$(readelf -l "$ttapipe" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
library=$(ldd "$ttapipe" | awk '/libttapipe/ {print $3}')
soname=$(readelf -d "$library" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
# holds_dnn DIR: DIR holds cuDNN or cuBLASLt (either).
holds_dnn() { compgen -G "$1/libcudnn.so*" >/dev/null || compgen -G "$1/libcublasLt.so*" >/dev/null; }
system_has=0
for dir in /lib /usr/lib /lib64 /usr/lib64 /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
  holds_dnn "$dir" && system_has=1
done
if [ -z "$loader" ] || [ -z "$library" ] || [ -z "$soname" ]; then
  echo "hidden part skipped: no loader, library or soname found ($loader, $library, $soname)"
elif [ $system_has = 1 ]; then
  echo "hidden part skipped: cuDNN or cuBLAS lies in the loader's default directories"
else
  mkdir "$work/lib" && ln -s "$library" "$work/lib/$soname"
  path=$work/lib
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for dir in "${dirs[@]}"; do
    [ -n "$dir" ] && ! holds_dnn "$dir" && path=$path:$dir
  done
  hidden() { "$loader" --inhibit-cache --inhibit-rpath "$soname" --library-path "$path" "$ttapipe" "$@"; }
  for engine in $engines; do
    hidden classify --model "$model" --engine $engine --threads 2 --quiet \
      -o "$work/hidden.$engine.csv" "$work/images" 2>"$work/hidden.err" ||
      fail "hidden $engine: exited $?: $(head -3 "$work/hidden.err")"
    cmp -s "$work/$engine.csv" "$work/hidden.$engine.csv" ||
      fail "hidden $engine: other bytes than with cuDNN present"
  done
  if "$ttapipe" info --model "$model" | grep -qE '^GPUs +[1-9]'; then
    hidden classify --model "$model" --engine cudnn --quiet -o "$work/hidden.cudnn.csv" \
      "$work/images" 2>"$work/hidden.err" && fail "hidden cudnn: succeeded without cuDNN"
    [ "$(wc -l <"$work/hidden.err")" -eq 1 ] && grep -qE 'libcudnn\.so|libcublasLt\.so' "$work/hidden.err" ||
      fail "hidden cudnn: want one line naming the library: $(head -3 "$work/hidden.err")"
  else
    echo "hidden cudnn: no GPU here (the engine stops before it loads cuDNN)"
  fi
fi

[ $failures -eq 0 ] && echo "gpu_libs: all passed" || echo "gpu_libs: $failures failed"
exit $((failures > 0))
