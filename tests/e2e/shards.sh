#!/usr/bin/env bash
# Jobs split and resumed (`classify --shard I/N`, `merge`, `--resume`) against one whole run, on
# a generated directory of 301 PNG files (61 small), the CPU engine:
#   - three shards merged equal the whole run byte for byte (CSV, and JSON Lines with --topk 3
#     --probs); a shard taken from Slurm's job array variables is announced and equals --shard;
#     --no-slurm-shard classifies everything;
#   - a run killed (SIGKILL, no chance to finish its rows) at a random moment, then --resume,
#     equals the whole run byte for byte; resuming a finished output changes nothing;
#   - under mpirun (where the build has MPI), 2 and 3 ranks give the whole run's output byte for
#     byte, one summary with each rank's time;
#   - merge refuses shards out of order (row counts that cannot be shards of one list), resume
#     refuses another list.
# small (the sanitized build): 61 and 241 files, the same checks.
# Usage: shards.sh TTAPIPE TTP_FIXTURE TTP_EXPORT MODEL_DIR [full|small]
set -u
ttapipe=$1 fixture=$2 export_tool=$3 model=$4 size=${5:-full}
few=301 many=1201
[ "$size" = small ] && few=61 many=241
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-shards-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
same() { cmp -s "$1" "$2" || fail "$3: $(cmp "$1" "$2" 2>&1 | head -1)"; }

"$fixture" images "$work/img" $few 28 28 17 && "$fixture" labels "$work/lab" $few 10 17 &&
  "$export_tool" "$work/img" "$work/lab" "$work/set" >/dev/null || { echo "FAIL: fixtures"; exit 1; }
run() { "$ttapipe" classify --model "$model" --engine cpu --threads 2 --quiet "$@"; }

# --- shards and merge ----------------------------------------------------------------------------
run --tta 3 -o "$work/whole.csv" "$work/set" || fail "the whole run"
run --tta 3 --format jsonl --topk 3 --probs -o "$work/whole.jsonl" "$work/set" || fail "jsonl"
for i in 0 1 2; do
  run --tta 3 --shard $i/3 -o "$work/s$i.csv" "$work/set" || fail "shard $i"
  run --tta 3 --shard $i/3 --format jsonl --topk 3 --probs -o "$work/s$i.jsonl" "$work/set" || fail "jsonl shard $i"
done
rows=$(($(wc -l <"$work/s1.csv") - 1))
[ "$rows" -eq $((few / 3)) ] || fail "shard 1 of 3 has $rows rows, not $((few / 3))"
"$ttapipe" merge -o "$work/merged.csv" "$work/s0.csv" "$work/s1.csv" "$work/s2.csv" || fail "merge"
same "$work/merged.csv" "$work/whole.csv" "merged CSV shards"
"$ttapipe" merge "$work/s0.jsonl" "$work/s1.jsonl" "$work/s2.jsonl" >"$work/merged.jsonl" || fail "merge jsonl"
same "$work/merged.jsonl" "$work/whole.jsonl" "merged JSON Lines shards"
"$ttapipe" merge "$work/s1.csv" "$work/s0.csv" "$work/s2.csv" >/dev/null 2>"$work/err" &&
  fail "shards out of order merged"
grep -q "not the shards of one list" "$work/err" || fail "out of order: $(cat "$work/err")"
SLURM_ARRAY_TASK_ID=11 SLURM_ARRAY_TASK_MIN=10 SLURM_ARRAY_TASK_COUNT=3 \
  run --tta 3 -o "$work/slurm.csv" "$work/set" 2>"$work/err" || fail "the Slurm shard"
same "$work/slurm.csv" "$work/s1.csv" "Slurm's task 11 of 10..12"
grep -q "shard 1/3 from Slurm's job array" "$work/err" || fail "not announced: $(cat "$work/err")"
SLURM_ARRAY_TASK_ID=11 SLURM_ARRAY_TASK_MIN=10 SLURM_ARRAY_TASK_COUNT=3 \
  run --tta 3 --no-slurm-shard -o "$work/all.csv" "$work/set" 2>"$work/err" || fail "--no-slurm-shard"
same "$work/all.csv" "$work/whole.csv" "--no-slurm-shard"
[ -s "$work/err" ] && fail "--no-slurm-shard said: $(cat "$work/err")"
echo "shards: 3 shards merged equal the whole run (CSV, JSON Lines); Slurm's task taken and said"

# --- MPI: two ranks (oversubscribed on a small machine), rank 0 writing the one output ----------
if command -v mpirun >/dev/null 2>&1 && ldd "$ttapipe" 2>/dev/null | grep -q libmpi; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  mpi() { timeout 100 mpirun -n "$1" "$ttapipe" classify --model "$model" --engine cpu --threads 1 \
            --quiet "${@:2}"; }
  mpi 2 --tta 3 -o "$work/mpi.csv" "$work/set" || fail "mpirun -n 2"
  same "$work/mpi.csv" "$work/whole.csv" "mpirun -n 2, CSV"
  mpi 3 --tta 3 --format jsonl --topk 3 --probs "$work/set" >"$work/mpi.jsonl" || fail "mpirun -n 3 jsonl"
  same "$work/mpi.jsonl" "$work/whole.jsonl" "mpirun -n 3, JSON Lines on standard output"
  timeout 100 mpirun -n 2 "$ttapipe" classify --model "$model" --engine cpu --threads 1 --tta 3 \
    -o "$work/mpi2.csv" "$work/set" 2>"$work/err" || fail "mpirun, the summary run"
  grep -q "2 ranks (MPI)" "$work/err" || fail "no per-rank summary: $(cat "$work/err")"
  [ "$(grep -c "files classified" "$work/err")" -eq 1 ] || fail "more than one summary"
  mpi 2 --shard 0/2 -o "$work/x.csv" "$work/set" 2>/dev/null; [ $? -eq 2 ] || fail "mpirun with --shard"
  echo "mpi: 2 and 3 ranks write the one process's output, byte for byte"
else
  echo "note: no mpirun, or this ttapipe was built without MPI: the MPI checks were not run"
fi

# --- killed, then resumed ------------------------------------------------------------------------
# 1,201 files (241 small). A run killed (SIGKILL) at a random moment leaves whatever its stdio buffer had
# written (often nothing: the files path hands its rows over in bursts); then outputs cut at
# random bytes (a torn row, as a lost node leaves) are resumed too.
"$fixture" images "$work/img2" $many 28 28 19 && "$fixture" labels "$work/lab2" $many 10 19 &&
  "$export_tool" "$work/img2" "$work/lab2" "$work/big" >/dev/null || { echo "FAIL: fixtures"; exit 1; }
slow() { run --tta 3 "$@" "$work/big"; }
# In the background as the ttapipe process itself (exec), so that the kill reaches it.
slow_bg() { (exec "$ttapipe" classify --model "$model" --engine cpu --threads 2 --quiet --tta 3 \
                  -o "$1" "$work/big") & }
start=$(date +%s%N)
slow -o "$work/slow.csv" || fail "the slow whole run"
whole_ms=$((($(date +%s%N) - start) / 1000000))
full=$(stat -c %s "$work/slow.csv")
delay_ms=$((whole_ms * (20 + RANDOM % 71) / 100))
slow_bg "$work/killed.csv"
pid=$!
sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
echo "killed after $delay_ms ms of a $whole_ms ms run: $(stat -c %s "$work/killed.csv" 2>/dev/null || echo 0) of $full bytes written"
slow --resume -o "$work/killed.csv" 2>"$work/err" || fail "resume: $(cat "$work/err")"
same "$work/killed.csv" "$work/slow.csv" "killed then resumed"
# Random bytes, a row boundary, and inside the header.
for cut in $((RANDOM * 32768 % full)) $((RANDOM % full)) $(head -n 100 "$work/slow.csv" | wc -c) 9; do
  head -c "$cut" "$work/slow.csv" >"$work/cut.csv"
  slow --resume -o "$work/cut.csv" 2>"$work/err" || fail "resume after $cut bytes: $(cat "$work/err")"
  same "$work/cut.csv" "$work/slow.csv" "cut after $cut of $full bytes, then resumed"
done
cp "$work/slow.csv" "$work/again.csv"
# Not --quiet: the resume says what it found.
"$ttapipe" classify --model "$model" --engine cpu --threads 2 --tta 3 --resume \
  -o "$work/again.csv" "$work/big" 2>"$work/err" || fail "resume of a finished run"
same "$work/again.csv" "$work/slow.csv" "a finished run resumed"
grep -q "holds the rows of $many of $many files" "$work/err" || fail "finished: $(cat "$work/err")"
run --tta 3 --resume -o "$work/again.csv" "$work/set" 2>"$work/err" &&
  fail "resumed with another list"
grep -q "resume with the same paths" "$work/err" || fail "another list: $(cat "$work/err")"
run --resume "$work/set" 2>/dev/null; [ $? -eq 2 ] || fail "--resume without -o"
echo "resume: a killed run resumed equals the whole run; a finished one is left as it is"

if [ "$failures" -ne 0 ]; then echo "$failures failures"; exit 1; fi
echo "shards and resume: all checks passed"
