#!/usr/bin/env bash
# Stop signals against `ttapipe classify -o FILE` over MNIST's test images as PNG files (ttp_export),
# the build's fastest CPU engine on 2 threads, each at a random moment of a run (the delays are
# printed), as schedulers and users send them:
#   - two SIGTERMs 1 ms apart: to the process twice, or to the process and then to its process
#     group (what `timeout` does), or by `timeout` itself; the second is the same request;
#   - SIGINT or SIGHUP as the only signal;
#   - a second request: SIGTERM, then SIGHUP or SIGINT 1 ms later (another kind), which ends the
#     run at the next row boundary.
# A signal is sent once the command has taken its signals (its main thread blocks them: a
# process dies of a signal that comes before its main function, as any process does), at a
# random moment of the run after that (`timeout` cannot wait: a run it signalled too early is
# tried again). Every time: the exit status is 128 + the signal, a summary says how many files were done,
# FILE holds exactly that many rows after its header and is, byte for byte, a prefix of the
# uninterrupted run's output (whole rows, in order); in the optimised build, each run ended
# within STOP_BOUND seconds of its signal (tests/bench/cancel_latency.sh measures the p99).
# small (the sanitized build): the first 1,000 files, no bound on the time to stop.
# Usage: signals.sh TTAPIPE TTP_EXPORT MODEL_DIR SHARED_DATASETS_DIR [full|small]
set -u
set -m # background jobs in their own process group: a non-interactive shell would start them
       # with SIGINT ignored, which ttapipe leaves ignored (as nohup's SIGHUP)
ttapipe=$1 export_tool=$2 model=$3 datasets=$4 size=${5:-full}
. "$(dirname "$0")/mnist_test.sh" signals
engine=${SIGNALS_ENGINE:-$engine} # a GPU engine, by hand on the GPU machine

"$export_tool" "$images" "$labels" "$work/set" >/dev/null || { echo "FAIL: ttp_export"; exit 1; }
# A whole run of about 1.5 s on the 2-core machine, idle: 24 signalled runs in about 25 s.
files=10000 tta=3 runs=24 bound=1.5
[ "$engine" = cpu ] && files=3000 tta=1
if [ "$size" = small ]; then
  files=1000 tta=1 runs=20 bound=
fi
ls "$work/set" | sort | tail -n +$((files + 1)) | sed "s|^|$work/set/|" | xargs rm -f
. "$(dirname "$0")/timing.sh"
# The whole run, at least a second long, so that a signal finds it going: the copies scaled up
# until it is (a fast machine, or the sanitized build's engine), to about 1.2 s rather than
# doubled (a run of 0.95 s doubled would make every signalled run, and the test, twice as long).
for ((k = 0; k < 4; k++)); do
  args=(classify --model "$model" --engine "$engine" --threads 2 --tta "$tta")
  start=$(now)
  "$ttapipe" "${args[@]}" -o "$work/full.csv" "$work/set" 2>"$work/full.err" ||
    { echo "FAIL: the whole run"; cat "$work/full.err"; exit 1; }
  whole=$(calc "$(now) - $start")
  is "$whole >= 1" && break
  tta=$(awk "BEGIN { t = int($tta * 1.2 / ($whole > 0.05 ? $whole : 0.05)) + 1;
                     if (t < $tta + 1) t = $tta + 1; print (t > 64 ? 64 : t) }")
done
# A machine slower than the one the sizes were set for (a whole run over 2 s): fewer files, to
# about 1.5 s again, so that the 24 signalled runs keep to their time.
if is "$whole > 2"; then
  files=$(awk "BEGIN { print int($files * 1.5 / $whole) }")
  ls "$work/set" | sort | tail -n +$((files + 1)) | sed "s|^|$work/set/|" | xargs rm -f
  start=$(now)
  "$ttapipe" "${args[@]}" -o "$work/full.csv" "$work/set" 2>"$work/full.err" ||
    { echo "FAIL: the whole run"; cat "$work/full.err"; exit 1; }
  whole=$(calc "$(now) - $start")
fi
rows=$(($(wc -l <"$work/full.csv") - 1))
[ "$rows" -eq "$files" ] || fail "the whole run wrote $rows rows"
echo "the whole run: $rows rows in $whole s on $engine, --tta $tta"

# check NAME STATUS WANT PATTERN: the run's exit status, its summary's count of files done
# (PATTERN: sed's, with the count as \1) against the rows of cut.csv, and cut.csv a prefix of
# the whole run's output ending on a whole row.
check() {
  local name=$1 got=$2 want=$3 pattern=$4
  [ "$got" -eq "$want" ] || fail "$name: exit $got, want $want ($(tr '\n' ' ' <"$work/cut.err"))"
  local done_files have
  done_files=$(sed -n "s/$pattern/\1/p" "$work/cut.err")
  grep -q "^ttapipe: interrupted by SIG[A-Z]* before the first file: none done" "$work/cut.err" &&
    done_files=0 # stopped while the model loaded
  have=0 # a run stopped before its first file (the model loading) makes no output
  [ -e "$work/cut.csv" ] && have=$(($(wc -l <"$work/cut.csv") - 1))
  echo "$name: exit $got, $have rows, $(grep -m1 -E 'interrupted|stopped' "$work/cut.err")"
  [ -n "$done_files" ] || { fail "$name: no summary of the files done"; return; }
  [ "$have" -eq "$done_files" ] || fail "$name: $have rows for $done_files files done"
  [ -e "$work/cut.csv" ] || { [ "$done_files" -eq 0 ] || fail "$name: no output"; return; }
  head -c "$(stat -c %s "$work/cut.csv")" "$work/full.csv" | cmp -s - "$work/cut.csv" ||
    fail "$name: the output is not a prefix of the whole run's"
  [ -z "$(tail -c 1 "$work/cut.csv")" ] || fail "$name: the output does not end on a whole row"
}
graceful="^ttapipe: interrupted by SIG[A-Z]*: \([0-9]*\) of [0-9]* files done.*"
halted="^ttapipe: stopped by SIG[A-Z]* after SIG[A-Z]*: \([0-9]*\) files done.*"
slowest=0

# kind: term2 | group | timeout | int | hup | term-hup | term-int
for ((i = 0; i < runs; i++)); do
  kinds=(term2 group timeout term2 group timeout int hup term-hup term-int)
  kind=${kinds[i % ${#kinds[@]}]}
  case $kind in
    int) sig=INT code=130 summary=$graceful ;;
    hup) sig=HUP code=129 summary=$graceful ;;
    term-hup) sig=HUP code=129 summary=$halted ;;
    term-int) sig=INT code=130 summary=$halted ;;
    *) sig=TERM code=143 summary=$graceful ;;
  esac
  # A random moment of the whole run (from its start: before the first rows too). A run that
  # ended before it (exit 0) is tried again with the signal sooner, up to three times.
  delivered=0
  for attempt in 1 2 3; do
    share=$(awk -v r="$RANDOM" -v a="$attempt" 'BEGIN { printf "%.4f", (0.02 + r / 32768 * 0.9) / 2 ^ (a - 1) }')
    delay=$(calc "$share * $whole")
    rm -f "$work/cut.csv"
    if [ "$kind" = timeout ]; then
      t0=$(now)
      timeout --preserve-status -s TERM "$delay" "$ttapipe" "${args[@]}" -o "$work/cut.csv" \
        "$work/set" 2>"$work/cut.err"
      got=$?
      sent=$(calc "$t0 + $delay")
    else
      "$ttapipe" "${args[@]}" -o "$work/cut.csv" "$work/set" 2>"$work/cut.err" &
      pid=$!
      t0=$(now)
      ready "$pid"
      # That share of what is left of the run once the command took its signals.
      delay=$(calc "$share * ($whole - ($(now) - $t0))")
      is "$delay < 0" && delay=0
      sleep "$delay"
      sent=$(now)
      case $kind in
        term2) kill -TERM "$pid" 2>/dev/null; sleep 0.001; kill -TERM "$pid" 2>/dev/null ;;
        group) kill -TERM "$pid" 2>/dev/null; sleep 0.001; kill -TERM -- "-$pid" 2>/dev/null ;;
        int) kill -INT "$pid" 2>/dev/null ;;
        hup) kill -HUP "$pid" 2>/dev/null ;;
        term-hup) kill -TERM "$pid" 2>/dev/null; sleep 0.001; kill -HUP "$pid" 2>/dev/null ;;
        term-int) kill -TERM "$pid" 2>/dev/null; sleep 0.001; kill -INT "$pid" 2>/dev/null ;;
      esac
      wait "$pid"
      got=$?
    fi
    took=$(calc "$(now) - $sent")
    if [ "$kind" = timeout ] && [ ! -e "$work/cut.csv" ] && [ ! -s "$work/cut.err" ]; then
      echo "timeout after $delay s: before the command took its signals; again later"
      whole=$(calc "$whole * 2")
      continue
    fi
    [ "$got" -ne 0 ] && { delivered=1; break; }
    echo "$kind after $delay s: the run had ended; again sooner"
  done
  [ "$delivered" -eq 1 ] || { fail "$kind: three runs ended (exit 0) before their signal"; continue; }
  # A second request: the status is that of the signal taken second (two signals of different
  # kinds 1 ms apart may be taken in either order: the kernel hands pending ones out lowest
  # number first). It may find the run stopped already by the first: then the first's summary,
  # and the second ends the process after it ("stopped by X after Y", no count).
  if [ "$summary" = "$halted" ]; then
    case $(sed -n 's/^ttapipe: stopped by SIG\([A-Z]*\) after.*/\1/p' "$work/cut.err") in
      TERM) code=143 ;; INT) code=130 ;; HUP) code=129 ;; *) code=143 ;;
    esac
    grep -q "$halted" "$work/cut.err" || summary=$graceful
  fi
  check "$kind after $delay s (stopped in $took s)" "$got" "$code" "$summary"
  if [ "$kind" = term2 ] || [ "$kind" = group ] || [ "$kind" = timeout ]; then
    grep -q "^ttapipe: stopped by" "$work/cut.err" &&
      fail "$kind: the second SIGTERM within a second was taken as a second request"
    grep -q -e "^ttapipe: [0-9]* of [0-9]* files classified" -e "before the first file: none done" \
      "$work/cut.err" || fail "$kind: no summary line"
  fi
  is "$took > $slowest" && slowest=$took
done
echo "the slowest stop: $slowest s after its signal"
if [ -n "$bound" ] && is "$slowest > $bound"; then
  fail "a run took $slowest s to stop, more than $bound s"
fi
[ "$failures" -eq 0 ] && echo "signals: every interrupted run kept whole rows, in order" || exit 1
