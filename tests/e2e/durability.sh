#!/usr/bin/env bash
# Rows reach the file as they are done, so a SIGKILL (the OOM killer, a scheduler's kill after its
# grace period, a lost node) loses at most the last second: `ttapipe classify -o FILE` over
# MNIST's test images as PNG files (ttp_export), the build's fastest CPU engine, killed with
# SIGKILL 3 s into a run that classifies at least 500 files a second: FILE already holds at
# least 1,000 whole rows (the rows of the files done more than a second before), and
# `--resume` completes it to the uninterrupted run's bytes. The same under mpirun with two
# ranks (where the build has MPI): the ranks' part files (FILE.part-R-of-2) hold the rows, and
# `mpirun -n 2 ... --resume` gives the one output of the whole run.
# small (the sanitized build): the first 2,000 files, killed at 2 s, 100 rows wanted. A machine
# too busy for the rate is given more time (said).
# Usage: durability.sh TTAPIPE TTP_EXPORT MODEL_DIR SHARED_DATASETS_DIR [full|small]
set -u
set -m # each run in a process group of its own: mpirun and its ranks are killed together
ttapipe=$1 export_tool=$2 model=$3 datasets=$4 size=${5:-full}
. "$(dirname "$0")/mnist_test.sh" durability

"$export_tool" "$images" "$labels" "$work/set" >/dev/null || { echo "FAIL: ttp_export"; exit 1; }
files=10000 kill_at=3 tta=12 # a run of about 6 s on onednn, 2 threads of the 2-core machine
[ "$engine" = cpu ] && tta=1 # the reference: about 8 s
if [ "$size" = small ]; then
  files=2000 kill_at=2 tta=1
  ls "$work/set" | sort | tail -n +$((files + 1)) | sed "s|^|$work/set/|" | xargs rm -f
fi
args=(classify --model "$model" --engine "$engine" --tta "$tta")
. "$(dirname "$0")/timing.sh"
start=$(date +%s.%N)
"$ttapipe" "${args[@]}" --threads 2 -o "$work/whole.csv" --quiet "$work/set" ||
  { echo "FAIL: the whole run"; exit 1; }
took=$(calc "$(date +%s.%N) - $start")
rate=$(awk "BEGIN { printf \"%d\", $files / $took }")
echo "the whole run: $files files in $took s, $rate files/s ($engine, --tta $tta, 2 threads)"
# The rows the file must hold: 1,000 at full size, 100 in the sanitized build. The kill comes
# kill_at seconds in, later on a machine too busy to classify 500 files a second: once a run at
# the whole run's rate has done half as many files again as the rows wanted, plus a walk's first
# batches (decoded in the directory's own order: their rows wait for their turn), plus 1.5 s
# (the start of the process, and the last flush).
want=1000
[ "$size" = small ] && want=100
later=$(calc "($want * 1.5 + 1024) / $rate + 1.5")
if is "$later > $kill_at"; then
  echo "note: $rate files/s (a busy machine?): the kill at $(printf %.1f "$later") s, not $kill_at s"
  kill_at=$(printf %.1f "$later")
fi
whole_rows() { cat "$@" 2>/dev/null | grep -c ''; } # lines ending in a newline (and a torn one)
torn() { for f in "$@"; do [ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ] && return 0; done; return 1; }

# kill_run NAME COMMAND...: COMMAND in a process group of its own, SIGKILLed with the whole
# group (and any rank that left it) kill_at seconds after it started.
kill_run() {
  "${@:2}" 2>"$work/$1.err" &
  local pid=$!
  sleep "$kill_at"
  kill -KILL -- "-$pid" 2>/dev/null
  pkill -KILL -f -- "-o $work/" 2>/dev/null
  wait "$pid" 2>/dev/null
  sleep 0.2
}

# --- one process ---------------------------------------------------------------------------------
kill_run one "$ttapipe" "${args[@]}" --threads 2 -o "$work/one.csv" "$work/set"
have=$(($(whole_rows "$work/one.csv") - 1))
echo "one process, SIGKILL at $kill_at s: $have rows in the file (want at least $want)"
[ "$have" -ge "$want" ] || fail "one process: $have rows after the kill, not $want"
torn "$work/one.csv" && fail "one process: the file ends in a torn row"
head -c "$(stat -c %s "$work/one.csv")" "$work/whole.csv" | cmp -s - "$work/one.csv" ||
  fail "one process: the killed run's rows are not a prefix of the whole run's"
"$ttapipe" "${args[@]}" --threads 2 -o "$work/one.csv" --resume --quiet "$work/set" ||
  fail "one process: --resume"
cmp -s "$work/one.csv" "$work/whole.csv" || fail "one process: the resumed output is not the whole run's"

# --- two MPI ranks -------------------------------------------------------------------------------
if command -v mpirun >/dev/null 2>&1 && ldd "$ttapipe" 2>/dev/null | grep -q libmpi; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  mpi() { timeout 100 mpirun -n 2 "$ttapipe" "${args[@]}" --threads 1 -o "$work/mpi.csv" "$@"; }
  kill_run mpi mpi "$work/set"
  parts=("$work/mpi.csv.part-0-of-2" "$work/mpi.csv.part-1-of-2")
  have=$(($(whole_rows "${parts[@]}") - 2))
  echo "mpirun -n 2, SIGKILL at $kill_at s: $have rows in the ranks' part files (want $want)"
  [ "$have" -ge "$want" ] || fail "mpirun: $have rows after the kill, not $want"
  torn "${parts[@]}" && fail "mpirun: a part file ends in a torn row"
  [ -e "$work/mpi.csv" ] && fail "mpirun: the output exists after the kill (not merged yet)"
  mpi --resume --quiet "$work/set" || fail "mpirun: --resume"
  cmp -s "$work/mpi.csv" "$work/whole.csv" || fail "mpirun: the resumed output is not the whole run's"
  ls "$work"/mpi.csv.part-* >/dev/null 2>&1 && fail "mpirun: the part files were left behind"
else
  echo "no MPI in this build: the two-rank case skipped"
fi
[ "$failures" -eq 0 ] && echo "durability: killed runs kept their rows; resumed, the whole output" || exit 1
