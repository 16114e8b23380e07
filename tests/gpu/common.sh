# What the GPU shell tests share (sourced): needs_gpu TTAPIPE MODEL exits 77 (skipped) unless the
# command sees a GPU; start_work NAME makes $work (removed at exit); fail counts a failure and
# says it; finish NAME reports and exits 0 or 1.
needs_gpu() {
  if ! "$1" info --model "$2" 2>/dev/null | grep -qE '^GPUs +[1-9]'; then
    echo "skipped: no CUDA device"; exit 77
  fi
}
start_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-$1-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  failures=0
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  [ "$failures" -eq 0 ] && echo "$1: all passed" || echo "$1: $failures failed"
  exit $((failures > 0))
}
