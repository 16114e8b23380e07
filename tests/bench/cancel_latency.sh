#!/usr/bin/env bash
# How long `ttapipe classify` takes to stop after a SIGTERM, at random moments of a run: the time
# from the signal to the process's exit (its rows written, its summary printed, its engine
# closed), over COUNT runs, each signalled once it has taken its signals (its main thread blocks
# them), at a uniformly random moment of what is left then of the uninterrupted run's time.
# Prints each stop, then the median, p99 and largest; fails when p99 passes BOUND seconds.
#   bash tests/bench/cancel_latency.sh TTAPIPE MODEL DIR ENGINE COUNT BOUND [classify options...]
# The CPU engines' bound is 1 s (the build machine), the GPU engines' 0.2 s (BENCHMARKS.md).
set -u
ttapipe=$1 model=$2 dir=$3 engine=$4 count=$5 bound=$6
shift 6
args=(classify --model "$model" --engine "$engine" --quiet -o /dev/null "$@" "$dir")
. "$(dirname "$0")/../e2e/timing.sh"
start=$(now)
"$ttapipe" "${args[@]}" || [ $? -eq 3 ] || { echo "the whole run failed"; exit 1; }
whole=$(calc "$(now) - $start")
echo "the whole run: $whole s ($engine $*)"
stops=()
# COUNT stops: a run that ended before its signal does not count (at most 3 COUNT runs in all).
for ((i = 0; i < 3 * count && ${#stops[@]} < count; i++)); do
  share=$(awk -v r="$RANDOM" 'BEGIN { printf "%.4f", r / 32768 * 0.95 }')
  "$ttapipe" "${args[@]}" 2>/dev/null &
  pid=$!
  t0=$(now)
  ready "$pid" || { wait "$pid"; continue; }
  delay=$(calc "$share * ($whole - ($(now) - $t0))") # of what is left of the run
  is "$delay < 0" && delay=0
  sleep "$delay"
  sent=$(now)
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  got=$?
  took=$(calc "$(now) - $sent")
  [ "$got" -eq 143 ] || { echo "run $i: exit $got after $delay s (ended before its signal)"; continue; }
  stops+=("$took")
  echo "run $i: SIGTERM after $delay s, stopped $took s later"
done
n=${#stops[@]}
[ "$n" -gt 0 ] || { echo "no run was stopped"; exit 1; }
sorted=$(printf '%s\n' "${stops[@]}" | sort -g)
p50=$(echo "$sorted" | awk -v n="$n" 'NR == int((n + 1) / 2)')
p99=$(echo "$sorted" | awk -v n="$n" 'NR == (int(0.99 * n + 0.999999) > 0 ? int(0.99 * n + 0.999999) : 1)')
max=$(echo "$sorted" | tail -1)
echo "cancel latency, $engine, $n stops: median $p50 s, p99 $p99 s, largest $max s (bound $bound s)"
is "$p99 <= $bound" || { echo "FAIL: p99 $p99 s over $bound s"; exit 1; }
