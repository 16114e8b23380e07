#!/usr/bin/env bash
# ttapipe's CPU engines against PyTorch on the same cores (BENCHMARKS.md, "CPU engines"): for each
# thread count, `ttapipe bench --engine onednn,cpu` and tests/bench/peers/pytorch_tta.py --device
# cpu (eager and torch.compile) on models/lenet-mnist (or NET=resnet20: tests/onnx/resnet20.onnx
# against the same network of tests/onnx/nets.py), fp32, batches 1 and 1024 (ResNet-20: 1 and
# 256), --tta 1 and 5; then a Markdown table of images/s (batch 1: calls of one image, 1 / the
# median latency) with onednn's ratio to the faster PyTorch variant.
# Usage: bash tests/bench/cpu_table.sh [THREADS,...]   (default: the machine's cores)
# Environment: TTAPIPE_BUILD (default build), TTAPIPE_TORCH_PYTHON (a Python with torch; else
# Debian's python3 if it has torch 2 or later (torch.compile), else a virtual environment in $TTAPIPE_BUILD/torch-venv into
# which torch is installed from PyPI, once: about 4 GB), SECONDS_A_POINT (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TTAPIPE_BUILD:-$root/build}
threads=${1:-$(nproc)}
seconds=${SECONDS_A_POINT:-2}
model=$root/models/lenet-mnist
peer_model=$model
big=1024
if [ "${NET:-lenet}" = resnet20 ]; then
  model=$root/tests/onnx/resnet20.onnx peer_model=net:resnet20 big=256
fi

py=${TTAPIPE_TORCH_PYTHON:-}
if [ -z "$py" ]; then
  if /usr/bin/python3 -c "import torch; assert hasattr(torch, 'compile')" 2>/dev/null; then
    py=/usr/bin/python3
  else
    venv=$build/torch-venv
    if ! "$venv/bin/python" -c "import torch; assert hasattr(torch, 'compile')" 2>/dev/null; then
      echo "cpu_table: installing torch from PyPI into $venv" >&2
      /usr/bin/python3 -m venv "$venv"
      "$venv/bin/pip" install -q torch numpy >&2
    fi
    py=$venv/bin/python
  fi
fi

out=$build/cpu-table
rm -rf "$out" && mkdir -p "$out"
for t in ${threads//,/ }; do
  echo "== $t thread(s)" >&2
  "$build/ttapipe" bench --model "$model" --engine onednn,cpu --threads "$t" --batch 1,$big \
    --tta 1,5 --seconds "$seconds" --json "$out/ttapipe-$t.json" >&2
  "$py" "$root/tests/bench/peers/pytorch_tta.py" "$peer_model" --device cpu --threads "$t" \
    --variant eager,compile --precision fp32 --batch 1,$big --tta 1,5 --seconds "$seconds" \
    --json "$out/torch-$t.json" >&2
done

python3 - "$out" "$threads" "$big" <<'PY'
import json, platform, sys
out, threads, big = sys.argv[1], sys.argv[2].replace(",", " ").split(), int(sys.argv[3])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
def rate(p):  # batch 1: calls of one image, 1 / the median latency
    return 1e3 / p["latency_ms"]["p50"] if p["batch"] == 1 else p["images_per_s"]
first = json.load(open(f"{out}/ttapipe-{threads[0]}.json"))
torch = json.load(open(f"{out}/torch-{threads[0]}.json"))
print(f"<!-- {first['build']}; {first['date']}; {cpu}; PyTorch {torch['torch']} -->")
print("| threads | batch | N | onednn | cpu (reference) | torch eager | torch.compile | onednn / best torch |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for t in threads:
    pts = {}
    for name in ("ttapipe", "torch"):
        for p in json.load(open(f"{out}/{name}-{t}.json"))["points"]:
            pts[(p["engine"], p["batch"], p["copies"])] = rate(p)
    for batch in (1, big):
        for n in (1, 5):
            g = lambda e: pts.get((e, batch, n))
            best = max(v for v in (g("torch-eager"), g("torch-compile")) if v)
            cells = [f"{g(e):,.0f}" if g(e) else "-" for e in ("onednn", "cpu", "torch-eager", "torch-compile")]
            print(f"| {t} | {batch} | {n} | " + " | ".join(cells) + f" | {g('onednn') / best:.2f}x |")
PY
