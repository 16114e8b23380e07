#!/usr/bin/env bash
# Fuzzes ttapipe's parsers for as long as one wants (tests/fuzz/README.md). Builds build-fuzz/
# with Debian's clang, libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer (installing
# clang and its runtime when they are missing), then runs each target for SECONDS of wall time
# (default 600), as many at once as there are cores, from the seed corpus, the regressions and
# what earlier runs learnt (kept in build-fuzz/tests/fuzz/grown/TARGET). A finding (crash,
# sanitizer report, leak, timeout, out-of-memory) is written to build-fuzz/tests/fuzz/findings/
# TARGET/; make it a regression with: cp FINDING tests/fuzz/regressions/TARGET/NAME.
# Ends with one line per target (executions, coverage, findings); exits 1 if anything was found.
# Usage: bash tests/fuzz/run.sh [--seconds S] [TARGET...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=600
# The targets of ttapipe's own readers write a file each execution: in memory, not on disk, they
# run at full speed (fuzz_idx: 4,400 executions a second on /dev/shm, half the CPU's time idle on
# a disk's /tmp).
[ -n "${TMPDIR:-}" ] || { [ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm; }
if [ "${1:-}" = --seconds ]; then seconds=$2; shift 2; fi
CC=clang bash .ci/build build-fuzz -DCMAKE_C_COMPILER=clang -DTTAPIPE_CUDA=OFF \
  -DTTAPIPE_SANITIZE=ON -DTTAPIPE_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug
dir=build-fuzz/tests/fuzz
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_png fuzz_jpeg fuzz_bmp fuzz_pnm fuzz_idx fuzz_file_list fuzz_model fuzz_onnx fuzz_args fuzz_tar fuzz_policy)

fuzz_one() { # TARGET: one campaign, its log in findings/TARGET.log
  local t=$1 seeds=${1#fuzz_}
  mkdir -p "$dir/grown/$t" "$dir/findings/$t"
  local inputs=("$dir/grown/$t" "$dir/corpus/$seeds")
  [ -d "tests/fuzz/regressions/$t" ] && inputs+=("tests/fuzz/regressions/$t")
  local TIMEFORMAT='cpu: %U s user, %S s system'
  { time "$dir/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/findings/$t/" "${inputs[@]}"; } \
    >"$dir/findings/$t.log" 2>&1 || true
}

running=0
for t in "${targets[@]}"; do
  [ -x "$dir/$t" ] || { echo "unknown target $t" >&2; exit 2; }
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then wait -n; running=$((running - 1)); fi
done
wait

found=0
for t in "${targets[@]}"; do
  log=$dir/findings/$t.log
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
  n=$(find "$dir/findings/$t" -type f | wc -l)
  found=$((found + n))
  cpu=$(grep '^cpu: ' "$log" | tail -1)
  echo "$t: ${runs:-?} executions (${cpu:-cpu: ?}), ${cov:-no coverage line}, $n findings"
  [ "$n" -eq 0 ] || grep -m3 -E 'ERROR|runtime error|FUZZ_ASSERT' "$log" | sed 's/^/  /'
done
[ "$found" -eq 0 ]
