#!/usr/bin/env bash
# `ttapipe eval --report` rendered in a real browser (Debian's chromium, headless; .ci/build
# installs it): 211 random 28x28 images (a set the model gets mostly wrong, so that every
# section has images), --tta 5, the CPU engine.
#   - each report's screenshot is not blank (its pixels take many values);
#   - the DOM after rendering (--dump-dom) holds every section, the confusion matrix's 100
#     cells, 24 mistakes and 24 uncertain images, 3 rows of the original and 5 copies, and every
#     image decoded (the report's script marks each with its decoded width: 84 = 28 x 3);
#   - a model directory whose name holds <script>, an <img> with onerror, quotes and a byte
#     that is not UTF-8, with
#     labels holding markup, show as text: the page has no element but the report's own, and
#     its one script.
#   - classify --report over 61 PNG files and a broken one named with markup: every section, the
#     failure listed, 24 least certain images decoded, the name shown as text.
#   - bench --report of 4 CPU points: every section, 2 series, 4 latency rows.
# Exits 77 (skipped) without chromium.
# Usage: report.sh TTAPIPE TTP_FIXTURE TTP_EXPORT MODEL_DIR
set -u
ttapipe=$1 fixture=$2 export_tool=$3 model=$4
browser=$(command -v chromium || command -v chromium-browser) || { echo "skipped: no chromium"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ttapipe-report-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
"$fixture" images "$work/img" 211 28 28 37 && "$fixture" labels "$work/lab" 211 10 37 ||
  { echo "FAIL: fixtures"; exit 1; }
# The hostile model: a copy of the shipped one under a name and with labels that are markup.
evil="$work/m<script>alert(1)<img src=x onerror=alert(2)>\"q'$(printf '\xff')"
mkdir "$evil" && cp "$model"/*.bin "$evil/" || { echo "FAIL: the hostile model"; exit 1; }
printf '%s\n' '<b>zero</b>' '"one"' "'two'" '&amp;three' '<script>alert(4)</script>' \
  "five$(printf '\xc3\x28')" '</svg><p>six' 'seven' 'eight' 'nine' >"$evil/labels.txt"
"$ttapipe" eval --model "$evil" --images "$work/img" --labels "$work/lab" --engine cpu \
  --threads 2 --tta 5 --report "$work/r.html" >/dev/null || { echo "FAIL: eval --report"; exit 1; }
render() { timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
             --user-data-dir="$work/profile" "$@" 2>/dev/null; }
# A page's screenshot, and whether it is blank (its pixels take few values).
screenshot() { # HTML WHAT
  rm -f "$work/shot.png"
  render --window-size=1280,2400 --screenshot="$work/shot.png" "file://$1" >/dev/null
  [ -s "$work/shot.png" ] || { fail "$2: no screenshot"; return; }
  python3 - "$work/shot.png" "$2" <<'PY' || fail "$2: the screenshot is blank"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT": idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
values = len(set(raw))
print(f"{sys.argv[2]}: screenshot of {len(raw)} bytes of pixels, {values} distinct byte values")
sys.exit(0 if values > 40 else 1)
PY
}
screenshot "$work/r.html" eval
render --virtual-time-budget=5000 --dump-dom "file://$work/r.html" >"$work/dom.html"
count() { grep -o "$1" "$work/dom.html" | wc -l; }
for id in summary calibration confusion classes mistakes uncertain copies; do
  [ "$(count "<section id=\"$id\"")" -eq 1 ] || fail "no section $id"
done
[ "$(count 'class="cell"')" -eq 100 ] || fail "$(count 'class="cell"') confusion cells, not 100"
[ "$(count 'class="bin"')" -ge 1 ] || fail "no bar in the reliability diagram"
images=$(grep -o "<img " "$work/r.html" | wc -l)
[ "$images" -eq $((24 + 24 + 3 * 5)) ] || fail "$images images in the report, not 24 + 24 + 15"
[ "$(count 'data-decoded="84"')" -eq "$images" ] ||
  fail "$(count 'data-decoded="84"') of $images images decoded at 84 pixels"
[ "$(count '<script')" -eq 1 ] || fail "$(count '<script') scripts in the rendered page"
[ "$(count '<img ')" -eq "$images" ] || fail "$(count '<img ') images in the rendered page, not $images"
[ "$(count '<b>zero')" -eq 0 ] && [ "$(count '<p>six')" -eq 0 ] || fail "a label became markup"
grep -q '&lt;b&gt;zero&lt;/b&gt;' "$work/dom.html" || fail "a label not shown as text"
grep -q 'm&lt;script&gt;alert(1)&lt;img src=x onerror=alert(2)&gt;"q'"'"'�' "$work/dom.html" ||
  fail "the model's name not shown as text: $(grep -o 'm&lt;script[^<]*' "$work/dom.html" | head -1)"

# classify --report over 61 PNG files and one broken file whose name holds markup, quotes and a
# byte that is not UTF-8: the failure listed with its name shown as text.
"$fixture" images "$work/img2" 61 28 28 41 && "$fixture" labels "$work/lab2" 61 10 41 &&
  "$export_tool" "$work/img2" "$work/lab2" "$work/files" >/dev/null || { echo "FAIL: the files"; exit 1; }
printf 'not an image' >"$work/files/<b>broken\"q'$(printf '\xfe')<script>alert(5)<img src=y onerror=alert(6)>.png"
"$ttapipe" classify --model "$evil" --engine cpu --threads 2 --tta 5 --quiet -o /dev/null \
  --report "$work/c.html" "$work/files"
[ $? -eq 3 ] || fail "classify --report: not exit 3 (one file failed)"
screenshot "$work/c.html" classify
render --virtual-time-budget=5000 --dump-dom "file://$work/c.html" >"$work/dom.html"
for id in summary classes status failed uncertain; do
  [ "$(count "<section id=\"$id\"")" -eq 1 ] || fail "classify: no section $id"
done
[ "$(count 'class="failure"')" -eq 1 ] || fail "classify: $(count 'class="failure"') failures listed"
cimages=$(grep -o "<img " "$work/c.html" | wc -l)
[ "$cimages" -eq 24 ] || fail "classify: $cimages images, not 24"
[ "$(count 'data-decoded="84"')" -eq "$cimages" ] || fail "classify: images not decoded"
[ "$(count '<script')" -eq 1 ] && [ "$(count '<img ')" -eq "$cimages" ] &&
  [ "$(count '<b>broken')" -eq 0 ] || fail "classify: a file name became markup"
grep -q '&lt;b&gt;broken"q'"'"'�&lt;script&gt;alert(5)&lt;img src=y onerror=alert(6)&gt;.png' \
  "$work/dom.html" || fail "classify: the broken file's name not shown as text"
# bench --report: 2 series (copies 1 and 2) of 2 batches on the CPU engine.
"$ttapipe" bench --model "$model" --engine cpu --threads 2 --batch 1,5 --tta 1,2 --iterations 2 \
  --warmup 1 --report "$work/b.html" >/dev/null || fail "bench --report"
screenshot "$work/b.html" bench
render --virtual-time-budget=5000 --dump-dom "file://$work/b.html" >"$work/dom.html"
for id in summary throughput latency; do
  [ "$(count "<section id=\"$id\"")" -eq 1 ] || fail "bench: no section $id"
done
[ "$(count 'class="series"')" -eq 2 ] || fail "bench: $(count 'class="series"') series, not 2"
[ "$(count 'class="point"')" -eq 4 ] || fail "bench: $(count 'class="point"') points, not 4"
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "report: rendered by $("$browser" --version 2>/dev/null | head -1): eval (100 cells, $images images) and classify ($cimages images, the failure) and bench (2 series, 4 points) reports, every section, every image decoded, hostile names as text"
