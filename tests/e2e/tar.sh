#!/usr/bin/env bash
# Tar shards (WebDataset's layout: shard-000000.tar ..., each image beside a .cls label member),
# classified as a directory of the same images would be, on the CPU engine:
#   - a directory of 5 shards (plain, gzip'd, members named ./NAME or NAME, hidden ._ members
#     and .cls members skipped) gives the directory's rows, member by member (path
#     SHARD.tar/NAME), in the shards' order; listed with --files-from, and with 12 decoding
#     threads (3 helpers reading archives ahead), the same bytes;
#   - --shard I/N splits by archive and merge deals the shards' outputs back (CSV, JSON Lines);
#     mpirun -n 2 (where built with MPI) writes the same bytes;
#   - a corrupt member, a truncated archive and a file that is not an archive are error rows,
#     the other rows unchanged, exit status 3; outputs cut anywhere and resumed (--resume: the
#     last archive begun classified again) equal the whole run (CSV, JSON Lines); another list
#     and a directory named like an archive under --shard are refused.
# Exits 77 (skipped) when this ttapipe was built without libarchive.
# Usage: tar.sh TTAPIPE TTP_FIXTURE TTP_EXPORT MODEL_DIR [full|small]
set -u
ttapipe=$1 fixture=$2 export_tool=$3 model=$4 size=${5:-full}
few=203
[ "$size" = small ] && few=53
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-tar-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
same() { cmp -s "$1" "$2" || fail "$3: $(cmp "$1" "$2" 2>&1 | head -1)"; }
run() { "$ttapipe" classify --model "$model" --engine cpu --threads 2 --quiet --tta 3 "$@"; }

"$fixture" images "$work/img" $few 28 28 23 && "$fixture" labels "$work/lab" $few 10 23 &&
  "$export_tool" "$work/img" "$work/lab" "$work/set" >/dev/null || { echo "FAIL: fixtures"; exit 1; }
mkdir "$work/shards" "$work/stage"
for f in "$work"/set/*.png; do
  n=$(basename "$f" .png)
  cp "$f" "$work/stage/$n.png"
  echo "${n##*label}" >"$work/stage/$n.cls"
done
cp "$work/stage/$(ls "$work/stage" | head -1)" "$work/stage/._hidden.png"
# Shard k takes every fifth image from the k-th, in a shuffled order (the archive's order is
# the rows' order); 1 is gzip'd, 2 has ./ names.
for k in 0 1 2 3 4; do
  ls "$work/set" | awk -v k=$k 'NR % 5 == k' | sed 's/\.png$//' | sort -r |
    while read -r n; do echo "$n.png"; echo "$n.cls"; done >"$work/list$k"
  [ $k -eq 0 ] && echo "._hidden.png" >>"$work/list$k"
  case $k in
  1) tar -C "$work/stage" -czf "$work/shards/shard-000001.tar.gz" -T "$work/list1" ;;
  2) sed 's|^|./|' "$work/list2" >"$work/list2b"
     tar -C "$work/stage" -cf "$work/shards/shard-000002.tar" -T "$work/list2b" ;;
  *) tar -C "$work/stage" -cf "$work/shards/shard-00000$k.tar" -T "$work/list$k" ;;
  esac
done

run -o "$work/dir.csv" "$work/set" || fail "the directory"
run -o "$work/tar.csv" "$work/shards" 2>"$work/err"
rc=$?
if grep -q "reads no tar archives" "$work/tar.csv" "$work/err"; then
  echo "skipped: this ttapipe was built without libarchive"
  exit 77
fi
[ $rc -eq 0 ] || fail "the shards: exit $rc: $(cat "$work/err")"
rows=$(($(wc -l <"$work/tar.csv") - 1))
[ "$rows" -eq $few ] || fail "$rows rows from the shards, not $few"
# Member by member: the same fields as the directory's row of the same image.
sed 1d "$work/dir.csv" | sed 's|^[^,]*/||' | sort >"$work/dir.rows"
sed 1d "$work/tar.csv" | sed 's|^[^,]*\.tar\(\.gz\)\{0,1\}/||' | sort >"$work/tar.rows"
same "$work/tar.rows" "$work/dir.rows" "shards' rows against the directory's"
grep -q "^$work/shards/shard-000002.tar/[0-9]*_label" "$work/tar.csv" || fail "./ not dropped"
grep -q "\.cls\|_hidden" "$work/tar.csv" && fail "a .cls or hidden member classified"
first=$(sed -n 2p "$work/tar.csv" | cut -d, -f1)
[ "$first" = "$work/shards/shard-000000.tar/$(head -1 "$work/list0")" ] ||
  fail "not in the archive's order: $first"
# Twelve decoding threads: three helpers read the next archives ahead of their turn.
"$ttapipe" classify --model "$model" --engine cpu --threads 12 --quiet --tta 3 \
  -o "$work/helpers.csv" "$work/shards" || fail "12 threads"
same "$work/helpers.csv" "$work/tar.csv" "archives read ahead by helpers"
ls "$work"/shards/* >"$work/files"
run --files-from "$work/files" -o "$work/listed.csv" || fail "--files-from"
same "$work/listed.csv" "$work/tar.csv" "shards listed with --files-from"
echo "tar: 5 shards give the directory's rows, in the archives' order, walked or listed"

for i in 0 1; do run --shard $i/2 -o "$work/s$i.csv" "$work/shards" || fail "shard $i/2"; done
"$ttapipe" merge "$work/s0.csv" "$work/s1.csv" >"$work/merged.csv" || fail "merge"
same "$work/merged.csv" "$work/tar.csv" "2 shards of archives merged"
run --format jsonl --probs "$work/shards" >"$work/tar.jsonl" || fail "jsonl"
for i in 0 1 2; do
  run --format jsonl --probs --shard $i/3 "$work/shards" >"$work/s$i.jsonl" || fail "jsonl shard $i/3"
done
[ "$(wc -l <"$work/s2.jsonl")" -eq "$(grep -c 'shard-00000[25]' "$work/tar.jsonl")" ] ||
  fail "shard 2/3 does not hold archive 2's rows alone"
"$ttapipe" merge "$work/s0.jsonl" "$work/s1.jsonl" "$work/s2.jsonl" >"$work/merged.jsonl" || fail "merge jsonl"
same "$work/merged.jsonl" "$work/tar.jsonl" "3 shards of archives merged, JSON Lines"
"$ttapipe" merge "$work/s1.csv" "$work/s0.csv" >/dev/null 2>&1 && fail "archive shards out of order merged"
if command -v mpirun >/dev/null 2>&1 && ldd "$ttapipe" 2>/dev/null | grep -q libmpi; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  timeout 100 mpirun -n 2 "$ttapipe" classify --model "$model" --engine cpu --threads 1 --quiet \
    --tta 3 -o "$work/mpi.csv" "$work/shards" || fail "mpirun -n 2"
  same "$work/mpi.csv" "$work/tar.csv" "mpirun -n 2 over archives"
  echo "mpi: 2 ranks over the archives write the one process's output"
fi
echo "tar: --shard by archive and merge (CSV, JSON Lines) equal the whole run"

# Hostile archives: a corrupt member, a truncated archive, not an archive at all.
mkdir "$work/bad"
cp "$work/shards/shard-000000.tar" "$work/bad/a.tar"
printf 'not an image' >"$work/stage/broken.png"
tar -C "$work/stage" -rf "$work/bad/a.tar" broken.png
head -c 5000 "$work/shards/shard-000003.tar" >"$work/bad/b.tar"
head -c 700 /dev/urandom >"$work/bad/c.tar"
run -o "$work/bad.csv" "$work/bad" 2>"$work/err"
[ $? -eq 3 ] || fail "hostile archives: not exit 3: $(cat "$work/err")"
"$ttapipe" classify --model "$model" --engine cpu --threads 12 --quiet --tta 3 \
  -o "$work/bad12.csv" "$work/bad" 2>/dev/null
same "$work/bad12.csv" "$work/bad.csv" "hostile archives read ahead by helpers"
grep -q '^[^,]*/bad/a.tar/broken.png,"\{0,1\}not an image' "$work/bad.csv" || fail "corrupt member: $(grep broken "$work/bad.csv")"
grep -q "^[^,]*/bad/b.tar,\"\{0,1\}not a readable tar archive: Truncated" "$work/bad.csv" || fail "truncated: $(grep 'b.tar,' "$work/bad.csv")"
grep -q "^[^,]*/bad/c.tar,\"\{0,1\}not a readable tar archive" "$work/bad.csv" || fail "junk: $(grep 'c.tar' "$work/bad.csv")"
grep '/bad/a.tar/[0-9]' "$work/bad.csv" | sed 's|^[^,]*/||' >"$work/bad.rows"
grep 'shard-000000.tar/' "$work/tar.csv" | sed 's|^[^,]*/||' >"$work/good.rows"
same "$work/bad.rows" "$work/good.rows" "the good members of a bad archive"
# Resumed from outputs cut anywhere (inside an archive's rows, at a row's end, inside the
# header, after the last row): the last archive begun is classified again, the rest kept.
full=$(stat -c %s "$work/tar.csv")
for cut in $((RANDOM * 32768 % full)) $((RANDOM % full)) $(head -n 77 "$work/tar.csv" | wc -c) 9 $full; do
  head -c "$cut" "$work/tar.csv" >"$work/cut.csv"
  run --resume -o "$work/cut.csv" "$work/shards" 2>"$work/err" || fail "resume after $cut bytes: $(cat "$work/err")"
  same "$work/cut.csv" "$work/tar.csv" "archives: cut after $cut of $full bytes, then resumed"
done
fullj=$(stat -c %s "$work/tar.jsonl")
head -c $((RANDOM * 32768 % fullj)) "$work/tar.jsonl" >"$work/cut.jsonl"
run --format jsonl --probs --resume -o "$work/cut.jsonl" "$work/shards" || fail "resume jsonl"
same "$work/cut.jsonl" "$work/tar.jsonl" "archives: JSON Lines cut, then resumed"
head -c $((full / 2)) "$work/tar.csv" >"$work/cut.csv"
run --resume -o "$work/cut.csv" "$work/set" 2>"$work/err" && fail "resumed with another list"
grep -q "resume with the same paths" "$work/err" || fail "another list: $(cat "$work/err")"
mkdir "$work/dir.tar" && cp "$work"/set/0000*.png "$work/dir.tar/"
run --shard 0/2 "$work/dir.tar" >/dev/null 2>"$work/err" && fail "a directory named x.tar sharded"
grep -q "named like a tar archive" "$work/err" || fail "dir.tar: $(cat "$work/err")"
echo "tar: bad members and archives are error rows; resumed outputs equal the whole run; look-alike directories refused"

# One archive of more members than the decode pool holds ahead (the CPU engine's 256-image
# chunks, 9 of them): its reading waits for the workers, and every member still comes, in order.
if [ "$size" = full ]; then
  big=2711
  "$fixture" images "$work/img3" $big 28 28 29 && "$fixture" labels "$work/lab3" $big 10 29 &&
    "$export_tool" "$work/img3" "$work/lab3" "$work/bigset" >/dev/null || fail "big fixtures"
  tar -C "$work/bigset" -cf "$work/big.tar" .
  one() { "$ttapipe" classify --model "$model" --engine cpu --threads 2 --quiet "$@"; }
  one -o "$work/bigdir.csv" "$work/bigset" || fail "the big directory"
  one -o "$work/bigtar.csv" "$work/big.tar" || fail "the big archive"
  sed 1d "$work/bigdir.csv" | sed 's|^[^,]*/||' | sort >"$work/bigdir.rows"
  sed 1d "$work/bigtar.csv" | sed 's|^[^,]*\.tar/||' | sort >"$work/bigtar.rows"
  same "$work/bigtar.rows" "$work/bigdir.rows" "an archive of $big members"
  echo "tar: an archive of $big members, read as the workers go, gives the directory's rows"
fi

if [ "$failures" -ne 0 ]; then echo "$failures failures"; exit 1; fi
echo "tar: all checks passed"
