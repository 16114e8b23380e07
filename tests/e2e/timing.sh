# Helpers of the scripts that time signals and runs, sourced.
# calc EXPR prints its value and is EXPR succeeds when it holds: awk's arithmetic on decimal
# seconds (bc is not on every machine). now: the time, in seconds.
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
is() { awk "BEGIN { exit !($1) }"; }
now() { date +%s.%N; }
# ready PID: waits until the process blocks SIGTERM in its main thread (bit 15 of SigBlk), i.e.
# classify's stop thread takes the signals (a process dies of a signal that comes before its
# main function, as any process does); 1 if it ended first, or after 10 s.
ready() {
  local mask
  for ((k = 0; k < 5000; k++)); do
    mask=$(sed -n 's/^SigBlk:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) || return 1
    [ -n "$mask" ] || return 1
    (((16#$mask >> 14) & 1)) && return 0
    sleep 0.002
  done
  return 1
}
