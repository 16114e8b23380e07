#!/usr/bin/env bash
# The cudnn engine's plan cache across processes (issue 42): a first classify with a new cache
# file searches and writes it; a second process takes every choice from it ("from the plan
# cache" on each convolution cuDNN runs) and writes the same bytes of output; a damaged cache is
# ignored with a note and written anew by a run that searches again (a third process takes it
# and writes that run's bytes); `--plan-cache off` writes no default cache, while without the option the default one
# ($XDG_CACHE_HOME/ttapipe/plans) appears. Skipped (77) without a GPU.
# Usage: plan_cache.sh TTAPIPE TTP_FIXTURE MODEL
set -u
ttapipe=$1 fixture=$2 model=$3
. "$(dirname "$0")/common.sh"
needs_gpu "$ttapipe" "$model"
start_work plan-cache
mkdir "$work/images"
for i in 1 2 3 4 5 6 7 8 9; do "$fixture" photo "$work/images/$i.png" 37 29 $i || fail "fixture $i"; done
# run NAME ARGS...: classify the images on cudnn in fp16 with 5 copies, the engine described
run() {
  local name=$1
  shift
  "$ttapipe" classify --model "$model" --engine cudnn --precision fp16 --tta 5 --verbose \
    -o "$work/$name.csv" "$@" "$work/images" 2>"$work/$name.err" ||
    fail "$name: exited $?: $(tail -2 "$work/$name.err")"
}
cache=$work/cache/plans
run first --plan-cache "$cache"
[ -s "$cache" ] || fail "first: no cache written at $cache"
grep -q 'plan cache' "$work/first.err" && fail "first: the engine mentions a cache it had not: $(grep -o 'plan cache[^;]*' "$work/first.err")"
run second --plan-cache "$cache"
grep -q 'choices read' "$work/second.err" || fail "second: no choices read from the cache"
searched=$(grep -o 'ms at [0-9]* rows[^;,]*' "$work/second.err" | grep -vc 'from the plan cache')
[ "$searched" -eq 0 ] || fail "second: $searched convolutions searched again"
cmp -s "$work/first.csv" "$work/second.csv" || fail "second: other bytes than the first process"
head -c 100 /dev/urandom >"$cache"
run damaged --plan-cache "$cache"
grep -q 'plan cache .*ignored' "$work/damaged.err" || fail "damaged: no note that the cache was ignored"
run third --plan-cache "$cache"
grep -q 'choices read' "$work/third.err" || fail "third: the cache was not written anew"
cmp -s "$work/damaged.csv" "$work/third.csv" || fail "third: other bytes than the process that searched"
XDG_CACHE_HOME=$work/xdg run off --plan-cache off
[ -e "$work/xdg/ttapipe/plans" ] && fail "off: the default cache was written"
XDG_CACHE_HOME=$work/xdg run default
[ -s "$work/xdg/ttapipe/plans" ] || fail "default: no cache at \$XDG_CACHE_HOME/ttapipe/plans"
grep -o 'engine [0-9.]* ms' "$work/first.err" "$work/second.err" | sed 's|.*/||'
finish "plan cache"
