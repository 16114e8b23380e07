#!/usr/bin/env bash
# Large and hostile images, bounded: `ttapipe classify --threads 16` over a directory of
#   - the hostile files of issue 39, four copies each: an 8192 x 8192 RGBA PNG of 16 bits in about
#     520 KB, and an 8192 x 8192 RLE8 BMP of about a kilobyte (tests/common/large_images.h); and
#     progressive JPEG files of 499 and 883 scans (2048 x 2048: an 8192 x 8192 one takes a
#     minute to make), refused from their markers before any scan is decoded;
#   - a 6000 x 4000 JPEG and a 4096 x 4096 PNG, photographs of what cameras make, and eight copies
#     of a progressive 6000 x 4000 JPEG (72 MB of coefficients each while it decodes: the decoding
#     threads' budget lets about one at a time, where 16 threads would hold them all at once);
#   - the largest seed of each image fuzz corpus;
# with the default options (the hostile files refused from their headers by --max-pixels, the
# photographs classified) and with --max-pixels 67108864 (8192 x 8192: every file decoded, the
# large ones at a reduced size): each time, the process's peak resident memory is at most that
# of the same command over one small file (its own size before decoding) + 300 MB. In the
# optimised build, each file alone is read, decoded and preprocessed in at most 1 s with the
# default options.
# Usage: large_images.sh TTAPIPE TTP_FIXTURE MODEL_DIR CORPUS_DIR [full|small]
set -u
ttapipe=$1 fixture=$2 model=$3 corpus=$4 size=${5:-full}
[ -x /usr/bin/time ] || { echo "skipped: no /usr/bin/time (Debian's time)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-large-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
. "$(dirname "$0")/timing.sh"

mkdir -p "$work/made" "$work/set" "$work/one"
# small (the sanitized build, where the sanitizers' own memory makes a peak meaningless): the
# decoders on one copy of the hostile files alone, the progressive ones of 512 x 512, no bound
# checked.
copies=4
if [ "$size" = small ]; then
  copies=1
  "$fixture" hostile "$work/made" 8192 && "$fixture" hostile "$work/made" 512 scans ||
    { echo "FAIL: ttp_fixture"; exit 1; }
else
  "$fixture" hostile "$work/made" 8192 && "$fixture" hostile "$work/made" 2048 scans &&
    "$fixture" big "$work/made" || { echo "FAIL: ttp_fixture"; exit 1; }
fi
for f in "$work"/made/*; do
  case $f in
    *8192*) for ((i = 1; i <= copies; i++)); do ln "$f" "$work/set/$i-$(basename "$f")"; done ;;
    *progressive-6000*) for i in 1 2 3 4 5 6 7 8; do ln "$f" "$work/set/$i-$(basename "$f")"; done ;;
    *) ln "$f" "$work/set/" ;;
  esac
done
for format in png bmp jpeg pnm; do
  largest=$(ls -S "$corpus/$format" | head -1)
  [ -n "$largest" ] && cp "$corpus/$format/$largest" "$work/set/seed-$largest"
done
cp "$corpus/png/$(ls "$corpus/png" | head -1)" "$work/one/"
ls -la "$work/set" | awk 'NR > 1 { print "  " $5 "\t" $9 }'

args=(classify --model "$model" --threads 16 --quiet)
# peak ARGS...: the command's peak resident memory in KB (GNU time's %M) into $rss; its rows in
# out.csv.
peak() {
  /usr/bin/time -f %M -o "$work/rss" "$ttapipe" "${args[@]}" "$@" -o "$work/out.csv" 2>"$work/err"
  local rc=$?
  rss=$(tail -1 "$work/rss")
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { fail "exit $rc: $(cat "$work/err")"; rss=0; }
}
peak "$work/one"
base=$rss
echo "one small file: peak resident memory $((base / 1024)) MB"
for limit in default 67108864; do
  extra=()
  [ "$limit" = default ] || extra=(--max-pixels "$limit")
  peak "${extra[@]}" "$work/set"
  echo "--max-pixels $limit: peak $((rss / 1024)) MB, $(((rss - base) / 1024)) MB above one small file"
  if [ "$size" = full ] && ! { [ "$rss" -gt 0 ] && [ "$rss" -le $((base + 300 * 1024)) ]; }; then
    fail "--max-pixels $limit: peak $((rss / 1024)) MB, more than $((base / 1024)) + 300 MB"
  fi
  sed 's/^/    /' "$work/out.csv"
  for photo in photo-6000x4000.jpg photo-4096x4096.png {1,2,3,4,5,6,7,8}-progressive-6000x4000.jpg; do
    [ "$size" = small ] || grep -q "^$work/set/$photo,ok," "$work/out.csv" ||
      fail "--max-pixels $limit: $photo not classified"
  done
  n=$(grep -c "scans-[0-9]*.jpg,corrupt image (JPEG of more than 100 scans)," "$work/out.csv")
  [ "$n" -eq 2 ] || fail "--max-pixels $limit: $n of the 2 JPEG files of 499 and 883 scans refused"
  if [ "$limit" = default ]; then
    n=$(grep -c "more than the 50000000 allowed" "$work/out.csv")
    [ "$n" -eq $((2 * copies)) ] || fail "$n of the $((2 * copies)) hostile files refused from their headers, by default"
  else
    n=$(grep -E -c "/[0-9]-(png16-rgba|rle8)-8192\.[a-z]*,ok," "$work/out.csv")
    [ "$n" -eq $((2 * copies)) ] || fail "$n of the $((2 * copies)) hostile files classified with --max-pixels $limit"
  fi
done

# Each file alone, one thread, the default options: reading, decoding and preprocessing it take
# at most 1 s (the summary's times; the optimised build).
if [ "$size" = full ]; then
  slowest=0
  for f in "$work"/set/*; do
    "$ttapipe" classify --model "$model" --threads 1 -o /dev/null "$f" 2>"$work/err"
    took=$(sed -n 's/.*time: reading \([0-9.]*\) s, decoding \([0-9.]*\) s, preprocessing \([0-9.]*\) s.*/\1 + \2 + \3/p' "$work/err")
    [ -n "$took" ] || { fail "$(basename "$f"): no summary: $(cat "$work/err")"; continue; }
    took=$(calc "$took")
    echo "  $(basename "$f"): $took s"
    is "$took > $slowest" && slowest=$took
  done
  echo "the slowest file: $slowest s"
  is "$slowest > 1" && fail "a file took $slowest s, more than 1 s"
fi
[ "$failures" -eq 0 ] && echo "large images: memory and time bounded" || exit 1
