#!/usr/bin/env bash
# One fuzzing run for ctest that makes the same executions every time: a fixed seed and number
# of runs, the inputs given, new inputs to SCRATCH (emptied first), no periodic re-reading of
# the corpus, and address-space randomisation off where the machine allows it (libFuzzer's
# features include the stack's depth, which moves with randomised addresses: two runs of one
# seed would diverge).
# Usage: ci_run.sh SCRATCH TARGET RUNS INPUT...
set -eu
scratch=$1 target=$2 runs=$3
shift 3
rm -rf "$scratch"
mkdir -p "$scratch"
fixed=()
if setarch "$(uname -m)" -R true 2>/dev/null; then fixed=(setarch "$(uname -m)" -R); fi
exec "${fixed[@]}" "$target" -seed=1 -runs="$runs" -reload=0 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$scratch" "$@"
