#!/usr/bin/env bash
# SIGTERM, SIGINT and SIGHUP interrupt `ttapipe classify -o FILE` over MNIST's 10,000 test images
# as PNG files (ttp_export), each at a random moment: the exit status is 128 + the signal, the
# summary says how many files were done, FILE holds exactly that many rows after its header and
# is, byte for byte, a prefix of the uninterrupted run's output (whole rows, in order). The CPU
# engine on 2 threads, so that a run takes seconds on any machine; the delays are printed.
# small (the sanitized build): the first 2,000 files only.
# Usage: signals.sh TTAPIPE TTP_EXPORT MODEL_DIR SHARED_DATASETS_DIR [full|small]
set -u
set -m # background jobs in their own process group: a non-interactive shell would start them
       # with SIGINT ignored, which ttapipe leaves ignored (as nohup's SIGHUP)
ttapipe=$1 export_tool=$2 model=$3 shared=$4 size=${5:-full}
mnist=$shared/mnist
[ -f "$mnist/t10k-images-idx3-ubyte.gz" ] || { echo "skipped: no $mnist"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-signals-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$export_tool" "$mnist/t10k-images-idx3-ubyte.gz" "$mnist/t10k-labels-idx1-ubyte.gz" \
  "$work/set" >/dev/null || { echo "FAIL: ttp_export"; exit 1; }
files=10000
if [ "$size" = small ]; then
  files=2000
  ls "$work/set" | sort | tail -n +$((files + 1)) | sed "s|^|$work/set/|" | xargs rm -f
fi
classify() { exec "$ttapipe" classify --model "$model" --engine cpu --threads 2 -o "$1" "$work/set"; }
start=$(date +%s.%N)
(classify "$work/full.csv") 2>"$work/full.err" || { echo "FAIL: the whole run"; cat "$work/full.err"; exit 1; }
whole=$(echo "$(date +%s.%N) - $start" | bc)
rows=$(($(wc -l <"$work/full.csv") - 1))
[ "$rows" -eq "$files" ] || fail "the whole run wrote $rows rows"
echo "the whole run: $rows rows in $whole s"

for sig in TERM INT HUP; do
  case $sig in TERM) code=143 ;; INT) code=130 ;; HUP) code=129 ;; esac
  # A random moment between 25% and 60% of the whole run's time after the start (the files
  # are being classified, the handlers in place). Should this run end before it (a machine
  # whose load changed), the signal comes again sooner in a new run, up to three times: only a
  # signal that found the run going says anything about how it stops.
  delivered=0
  for attempt in 1 2 3; do
    delay=$(awk -v r="$RANDOM" -v w="$whole" -v a="$attempt" \
      'BEGIN { printf "%.2f", (0.25 + r / 32768 * 0.35) * w / 2 ^ (a - 1) }')
    classify "$work/cut.csv" 2>"$work/cut.err" &
    pid=$!
    sleep "$delay"
    if kill -s "$sig" "$pid" 2>/dev/null; then delivered=1; fi
    wait "$pid"
    got=$?
    # Exit 0: the run had finished (the signal found at most a process that was exiting).
    [ "$got" -eq 0 ] && delivered=0
    [ "$delivered" -eq 1 ] && break
    echo "SIG$sig after $delay s: the run had ended; again sooner"
  done
  [ "$delivered" -eq 1 ] || { fail "SIG$sig: three runs ended (exit 0) before or despite their signal"; continue; }
  done_files=$(sed -n "s/^ttapipe: interrupted by SIG$sig: \([0-9]*\) of $files files done.*/\1/p" "$work/cut.err")
  have=$(($(wc -l <"$work/cut.csv") - 1))
  echo "SIG$sig after $delay s: exit $got, $have rows, summary: $(head -1 "$work/cut.err")"
  [ "$got" -eq "$code" ] || fail "SIG$sig: exit $got, want $code"
  [ -n "$done_files" ] || { fail "SIG$sig: no summary of the files done"; continue; }
  [ "$have" -eq "$done_files" ] || fail "SIG$sig: $have rows for $done_files files done"
  head -c "$(stat -c %s "$work/cut.csv")" "$work/full.csv" | cmp -s - "$work/cut.csv" ||
    fail "SIG$sig: the output is not a prefix of the whole run's"
  [ -z "$(tail -c 1 "$work/cut.csv")" ] || fail "SIG$sig: the output does not end on a whole row"
done
[ "$failures" -eq 0 ] && echo "signals: every interrupted run kept whole rows, in order" || exit 1
