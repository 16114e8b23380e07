#!/usr/bin/env bash
# What classify writes cannot drive a spreadsheet or a terminal, and names stay apart (ttapipe.h,
# "Writing results"), on a directory of hostile names, the CPU engine:
#   - files given by their names alone (a NUL-separated --files-from list), so that a row's
#     path is the name: =cmd|calc.png, +SUM(1+1).png, @SUM(A1).png, -dash.png, 'quote.png,
#     names with ESC, a C1 control (U+009B), a byte that is not UTF-8 (0xff) beside "ÿ" (c3 bf),
#     a TAB, a line break, a backslash, a comma; a PNG whose unknown critical chunk's type holds
#     ESC; a file that is no image; a tar archive =arch.tar of members -m1.png, =m2.png, m,1.png
#     (its path quoted where the archive's is not) and one with ESC (where this ttapipe reads
#     tar archives);
#   - CSV: no cell begins with = + - @ TAB or CR, no byte below 0x20 but the rows' line breaks,
#     valid UTF-8, and each path cell, its apostrophe dropped and its \xHH decoded, is the file's
#     exact name; with --csv-formulas the names are there as they are;
#   - JSON Lines: os.fsencode(json.loads(row)["path"]) is the file's exact name, no two alike;
#   - stderr: no byte below 0x20 but line breaks, also for messages naming such paths;
#   - --resume on cut copies, and merge of --shard 0/2 and 1/2, give the whole run's bytes (CSV,
#     JSON Lines); --resume refuses an output written with the other --csv-formulas.
# Usage: output.sh TTAPIPE TTP_FIXTURE TTP_EXPORT MODEL_DIR
set -u
ttapipe=$1 fixture=$2 export_tool=$3 model=$(cd "$4" && pwd) # absolute: run() changes directory
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-output-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
same() { cmp -s "$1" "$2" || fail "$3: $(cmp "$1" "$2" 2>&1 | head -1)"; }
# run ARGS...: classify the list of $in's names, from $in.
run() { (cd "$in" && "$ttapipe" classify --model "$model" --engine cpu --threads 2 --quiet \
           --files-from "$work/list" -0 "$@"); }
# printable FILE WHAT: no byte below 0x20 in FILE but line breaks, no DEL, no C1 control.
printable() {
  LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$1") && fail "$2: a control byte: $(od -c "$1" | head -5)"
  LC_ALL=C grep -qP '\xc2[\x80-\x9f]' "$1" && fail "$2: a C1 control: $(od -c "$1" | head -5)"
}

"$fixture" images "$work/img" 20 28 28 31 && "$fixture" labels "$work/lab" 20 10 31 &&
  "$export_tool" "$work/img" "$work/lab" "$work/set" >/dev/null || { echo "FAIL: fixtures"; exit 1; }
pngs=("$work"/set/*.png)
in=$work/in
mkdir "$in" "$work/stage"
k=0
for name in '=cmd|calc.png' '+SUM(1+1).png' '@SUM(A1).png' '-dash.png' "'quote.png" \
            $'esc\e[2J.png' $'c1\xc2\x9b31m.png' $'bad\xff.png' $'\xc3\xbf.png' $'tab\tname.png' \
            $'line\nbreak.png' 'back\slash.png' 'comma,=x.png'; do
  cp "${pngs[$k]}" "$in/$name"
  k=$((k + 1))
done
printf 'not an image' >"$in/=broken.png"
# A PNG with a critical chunk of type ESC X Y Z (its CRC right) after IHDR.
python3 - "${pngs[$k]}" "$in/chunk.png" <<'PY' || fail "the PNG with ESC in a chunk type"
import struct, sys, zlib
png = open(sys.argv[1], 'rb').read()
kind, data = b'\x1bXYZ', b'abc'
chunk = struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
open(sys.argv[2], 'wb').write(png[:33] + chunk + png[33:])
PY
for m in -m1.png =m2.png $'m\e]0;x\a.png' 'm,1.png'; do
  k=$((k + 1)); cp "${pngs[$k]}" "$work/stage/$m"
done
(cd "$work/stage" && tar -cf "$in/=arch.tar" -- -m1.png =m2.png $'m\e]0;x\a.png' 'm,1.png')
(cd "$in" && printf '%s\0' * | LC_ALL=C sort -z >"$work/list")
if run 2>&1 | grep -q "reads no tar archives"; then
  echo "note: this ttapipe reads no tar archives: the archive's checks were not run"
  rm "$in/=arch.tar"
  (cd "$in" && printf '%s\0' * | LC_ALL=C sort -z >"$work/list")
fi

# --- the rows ------------------------------------------------------------------------------------
run -o "$work/whole.csv" 2>"$work/err"
[ $? -eq 3 ] || fail "classify: not exit 3: $(cat -v "$work/err")"
run --format jsonl -o "$work/whole.jsonl" 2>/dev/null
run --csv-formulas -o "$work/formulas.csv" 2>/dev/null
printable "$work/whole.csv" "CSV"
printable "$work/whole.jsonl" "JSON Lines"
printable "$work/formulas.csv" "CSV with --csv-formulas"
python3 - "$in" "$work/whole.csv" "$work/whole.jsonl" "$work/formulas.csv" <<'PY' || fail "rows"
import codecs, csv, json, os, sys
files = os.listdir(os.fsencode(sys.argv[1]))
names = {n for n in files if not n.endswith(b'.tar')}
for n in files:
    if n.endswith(b'.tar'):
        names |= {n + b'/' + m for m in (b'-m1.png', b'=m2.png', b'm\x1b]0;x\x07.png', b'm,1.png')}
assert len(names) == (19 if len(files) == 16 else 15), sorted(names)

def cell_bytes(cell):  # the reader's rule: one apostrophe dropped, then each \xHH decoded
    return codecs.escape_decode((cell[1:] if cell.startswith("'") else cell).encode())[0]

for which in (2, 4):
    rows = list(csv.reader(open(sys.argv[which], newline='', encoding='utf-8', errors='strict')))
    body = rows[1:]
    assert len(body) == len(names), (len(body), len(names))
    if which == 2:
        for r in rows:
            for cell in r:
                assert not cell or cell[0] not in '=+-@\t\r', ("a formula cell", r)
        got = [cell_bytes(r[0]) for r in body]
    else:  # --csv-formulas: the names as they are (still escaped)
        got = [codecs.escape_decode(r[0].encode())[0] for r in body]
    assert set(got) == names and len(got) == len(names), sorted(set(got) ^ names)
    assert all(r[1] == 'ok' or r[2:] == ['', '', ''] for r in body), body
    chunk = [r for r in body if r[0] == 'chunk.png']
    assert chunk and chunk[0][1] == 'corrupt image (PNG chunk \\x1bXYZ unknown)', chunk

rows = [json.loads(line) for line in open(sys.argv[3], encoding='utf-8', errors='strict')]
paths = [os.fsencode(r['path']) for r in rows]
assert set(paths) == names and len(paths) == len(names), sorted(set(paths) ^ names)
assert len({r['path'] for r in rows}) == len(rows), "two rows, one path"
print("rows: %d names, exact in CSV and JSON Lines, no formula cells" % len(names))
PY
# Without --csv-formulas the names have their apostrophe; with it, they are as they are.
grep -q "^'=cmd|calc\.png,ok," "$work/whole.csv" && grep -q "^''quote\.png,ok," "$work/whole.csv" ||
  fail "no apostrophes: $(cat -v "$work/whole.csv")"
grep -q "^=cmd|calc\.png,ok," "$work/formulas.csv" && grep -q "^'quote\.png,ok," "$work/formulas.csv" ||
  fail "--csv-formulas: $(cat -v "$work/formulas.csv")"

# --- stderr -------------------------------------------------------------------------------------
"$ttapipe" classify --model "$model" --engine cpu -o "$work/no/such/$(printf 'x\e[2Jy\xc2\x9b')/o.csv" \
  "$in" 2>"$work/err"; [ $? -eq 1 ] || fail "an output in no directory: not exit 1"
"$ttapipe" classify --model "$model" --engine cpu --files-from "$work/$(printf 'l\e]0;t\a')" \
  "$in" 2>>"$work/err"; [ $? -eq 1 ] || fail "a missing list: not exit 1"
"$ttapipe" classify --model "$model" --shard "$(printf '1\e[2J')" "$in" 2>>"$work/err"
"$ttapipe" classify --model "$model" --engine cpu "$in" >/dev/null 2>>"$work/err" # the summary
[ "$(grep -c 'x\\x1b\[2Jy\\xc2\\x9b/o.csv: cannot create' "$work/err")" -eq 1 ] &&
  [ "$(grep -c 'l\\x1b\]0;t\\x07: cannot open' "$work/err")" -eq 1 ] &&
  [ "$(grep -c "not '1\\\\x1b\[2J'" "$work/err")" -eq 1 ] || fail "stderr: $(cat -v "$work/err")"
printable "$work/err" "stderr"

# --- resumed and merged -------------------------------------------------------------------------
for ext in csv jsonl; do
  fmt=(); [ $ext = jsonl ] && fmt=(--format jsonl)
  full=$(stat -c %s "$work/whole.$ext")
  # Also just before the row after the archive's (its rows, the quoted one last, are kept).
  after=$(grep -a -b -m1 'broken' "$work/whole.$ext" | cut -d: -f1)
  for cut in 9 $((full / 3)) $((full / 2)) $((RANDOM * 32768 % full)) $((full - 1)) $after; do
    head -c "$cut" "$work/whole.$ext" >"$work/cut.$ext"
    run "${fmt[@]}" --resume -o "$work/cut.$ext" 2>/dev/null
    same "$work/cut.$ext" "$work/whole.$ext" "$ext cut after $cut of $full bytes, then resumed"
  done
  for i in 0 1; do run "${fmt[@]}" --shard $i/2 -o "$work/s$i.$ext" 2>/dev/null; done
  "$ttapipe" merge "$work/s0.$ext" "$work/s1.$ext" >"$work/merged.$ext" || fail "merge $ext"
  same "$work/merged.$ext" "$work/whole.$ext" "$ext shards merged"
done
cp "$work/whole.csv" "$work/other.csv"
run --csv-formulas --resume -o "$work/other.csv" 2>"$work/err" && fail "resumed with --csv-formulas"
grep -q "resume with the same paths and options" "$work/err" || fail "refusal: $(cat -v "$work/err")"
cp "$work/formulas.csv" "$work/other.csv"
run --resume -o "$work/other.csv" 2>"$work/err" && fail "resumed without --csv-formulas"
grep -q "resume with the same paths and options" "$work/err" || fail "refusal: $(cat -v "$work/err")"
head -c $(($(stat -c %s "$work/formulas.csv") / 2)) "$work/formulas.csv" >"$work/other.csv"
run --csv-formulas --resume -o "$work/other.csv" 2>/dev/null
same "$work/other.csv" "$work/formulas.csv" "--csv-formulas cut, then resumed"
echo "output: resumed and merged outputs equal the whole run; the other --csv-formulas refused"

if [ "$failures" -ne 0 ]; then echo "$failures failures"; exit 1; fi
echo "output: all checks passed"
