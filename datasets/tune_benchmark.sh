#!/usr/bin/env bash
# The TTA policy search on the shift benchmark's variant sets (datasets/make_variants.c: MNIST
# test images 8000..9999, the held-out images of models/lenet-mnist, as they are and shifted,
# thicker, thinner, scaled, on paper) and on the 10,000 Fashion-MNIST test images
# (models/lenet-fashion): `ttapipe tune --objective nll` on each, half held out (seed 1), then
# Markdown tables of the held-out accuracy and NLL (plain, --tta 5, the chosen policy with its
# fitted temperature, and at T = 1), the tuning split's evidence for the search's best policy
# over the plain model (its NLL gain in standard errors: kept beyond 2), the search's time, and
# the AUROC of each uncertainty
# measure for the model's mistakes, plain and with the chosen policy.
# Usage: bash datasets/tune_benchmark.sh [TUNE OPTIONS...]   e.g. --engine fused
# Environment: TTAPIPE_BUILD (default build), TTAPIPE_MNIST (a folder of MNIST's IDX files,
# else datasets/mnist.sh finds it), TTAPIPE_FASHION (Fashion-MNIST's, else
# datasets/fashion_mnist.sh installs Debian's); TUNE_MODEL, TUNE_OFFSET, TUNE_COUNT: the model
# and the MNIST test images of the variant sets (default models/lenet-mnist on 8000..9999, the
# images it never saw; NVIDIA's mnistCUDNN model, trained on MNIST's training set alone, can take
# all 10,000: TUNE_MODEL=../shared/datasets/mnistcudnn TUNE_OFFSET=0 TUNE_COUNT=10000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TTAPIPE_BUILD:-$root/build}
mnist=${TTAPIPE_MNIST:-$(bash "$root/datasets/mnist.sh")}
fashion=${TTAPIPE_FASHION:-$(bash "$root/datasets/fashion_mnist.sh")}
out=$build/tune-benchmark
rm -rf "$out" && mkdir -p "$out"
model=${TUNE_MODEL:-$root/models/lenet-mnist}
"$build/ttp_variants" "$mnist/t10k-images-idx3-ubyte.gz" "$mnist/t10k-labels-idx1-ubyte.gz" \
  "$out/sets" --offset "${TUNE_OFFSET:-8000}" --limit "${TUNE_COUNT:-2000}" >&2
for v in plain shift thick thin scale paper; do
  echo "== $v" >&2
  "$build/ttapipe" tune --model "$model" --images "$out/sets/$v" \
    --objective nll --quiet -o "$out/$v.policy" --json "$out/$v.json" "$@" >&2
done
echo "== fashion" >&2
"$build/ttapipe" tune --model "$root/models/lenet-fashion" --objective nll --quiet \
  --images "$fashion/t10k-images-idx3-ubyte.gz" --labels "$fashion/t10k-labels-idx1-ubyte.gz" \
  -o "$out/fashion.policy" --json "$out/fashion.json" "$@" >&2
python3 - "$out" <<'PY'
import json, math, sys
out = sys.argv[1]
sets = ["plain", "shift", "thick", "thin", "scale", "paper", "fashion"]
runs = {s: json.load(open(f"{out}/{s}.json")) for s in sets}
def acc(m):
    a, n = m["accuracy"], m["images"]
    return f"{100 * a:.2f} ± {196 * math.sqrt(a * (1 - a) / n):.2f}"
print("| set | held out | plain acc. % | --tta 5 acc. % | chosen acc. % | plain NLL | --tta 5 NLL | chosen NLL | chosen at T = 1 NLL | T | best's gain, z | policies | search s |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for s in sets:
    j = runs[s]; h = j["heldout"]
    t1 = h.get("chosen_t1", h["chosen"])["nll"]
    print(f"| {s} | {j['heldout_images']} | {acc(h['plain'])} | {acc(h['tta5'])} | {acc(h['chosen'])} "
          f"| {h['plain']['nll']:.4f} | {h['tta5']['nll']:.4f} | {h['chosen']['nll']:.4f} | {t1:.4f} "
          f"| {j['temperature']:.3g} | {j['best_gain_z']:.2f} | {j['candidates']} | {j['seconds']:.1f} |")
print()
keys = [("one_minus_confidence", "1 - confidence"), ("entropy", "entropy"), ("spread", "spread"),
        ("mutual_information", "mutual information"), ("one_minus_agreement", "1 - agreement")]
print("| set | policy | " + " | ".join(name for _, name in keys) + " |")
print("| --- | --- | " + " | ".join("---:" for _ in keys) + " |")
for s in sets:
    for p in ("plain", "tta5", "chosen"):
        a = runs[s]["heldout"][p]["auroc"]
        print(f"| {s} | {p} | " + " | ".join(f"{a[k]:.4f}" if a[k] >= 0 else "-" for k, _ in keys) + " |")
PY
