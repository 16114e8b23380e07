#!/usr/bin/env bash
# Graph networks on the GPU in one run (BENCHMARKS.md, "Graph networks on the cudnn engine"):
#   check     the GPU tests of the graph path: test_cudnn_graph (fp32, fp16, tf32 against the CPU
#             engine), test_onnx_torch_gpu (PyTorch's exports), the two kernel labs' checks
#   lab       the labs' timings: ttapipe's convolution and depthwise kernels beside cuDNN's
#   bench     ttapipe bench of ResNet-20 and the MobileNetV2-style net (tests/onnx/), cudnn engine,
#             fp32, fp16 and tf32, batches 1, 64 and 1024, 5 copies, host memory to host results
#   peer      the same workload in PyTorch (peers/pytorch_tta.py net:NAME): CUDA graph and
#             torch.compile, fp32 (TF32) and fp16, as written and tuned (channels-last memory and
#             cudnn.benchmark), batches 1, 64 and 1024
#   autotune  torch.compile(mode="max-autotune"), tuned, batch 1024 (minutes of compiling)
#   table     table.py of each network's JSON, each row against the better of torch.compile's
#             modes
#   ncu       ResNet-20's kernels one by one (eager launches, fp16, batch 1024) under Nsight Compute:
#             each kernel's name and time, in launch order (the layers' order)
# Usage: graphs_gpu.sh BUILD_DIR OUT_DIR [PARTS...]   (default: check lab bench peer table;
# NETS="resnet20 mobilenetv2", the default, or either)
set -uo pipefail
bin=$1 out=$2
shift 2
parts=" ${*:-check lab bench peer table} "
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
has() { [[ "$parts" == *" $1 "* ]]; }
nets=${NETS:-resnet20 mobilenetv2}
status=0

if has check; then
  timeout 300 ctest --test-dir "$bin" --output-on-failure \
    -R "^(test_cudnn_graph|test_onnx_torch_gpu|bench_conv_lab|bench_depthwise_lab|test_api)$" \
    2>&1 | tee "$out/check.txt" | grep -E "Passed|Failed|tests passed|max \|dp\||within" || status=1
  grep -q "100% tests passed" "$out/check.txt" || status=1
fi
if has lab; then
  timeout 60 "$bin/tests/bench_depthwise_lab" | tee "$out/depthwise_lab.txt" || status=1
  timeout 60 "$bin/tests/bench_conv_lab" | tee "$out/conv_lab.txt" || status=1
fi
if has bench; then
  for net in $nets; do
    timeout 200 "$bin/ttapipe" bench --model "$root/tests/onnx/$net.onnx" --engine cudnn \
      --precision fp32,fp16,tf32 --batch 1,64,1024 --tta 5 --seconds 0.5 \
      --json "$out/$net.ttapipe.json" | tee "$out/$net.ttapipe.txt" || status=1
    timeout 60 "$bin/ttapipe" info --model "$root/tests/onnx/$net.onnx" --engine cudnn \
      --precision fp16 --verbose >"$out/$net.info.txt" 2>&1
  done
fi
peer() { # NET JSON ARGS...: the PyTorch peer on net NET
  local net=$1 json=$2
  shift 2
  timeout 400 python3 "$root/tests/bench/peers/pytorch_tta.py" "net:$net" --tta 5 --seconds 0.5 \
    --json "$out/$json" "$@" | tee -a "$out/$net.peer.txt" || status=1
}
if has peer; then
  for net in $nets; do
    peer $net $net.peer.json --variant graph,compile --precision fp32,fp16 --batch 1,64,1024
    peer $net $net.peer-tuned.json --variant graph,compile --precision fp32,fp16 --batch 1,64,1024 \
      --channels-last --cudnn-benchmark
  done
fi
if has autotune; then
  for net in $nets; do
    peer $net $net.autotune.json --variant autotune --precision fp16,fp32 --batch 1024 \
      --channels-last --cudnn-benchmark
  done
fi
if has table; then
  for net in $nets; do
    echo "## $net"
    python3 "$root/tests/bench/table.py" --vs compile "$out/$net".*.json | tee "$out/$net.table.md"
  done
fi
if has ncu; then
  # Eager launches of one batch after the warm-up calls: each kernel once, in the layers' order.
  timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --launch-skip 200 --launch-count 80 "$bin/ttapipe" bench \
    --model "$root/tests/onnx/resnet20.onnx" --engine cudnn --precision fp16 --graph off \
    --batch 1024 --tta 5 --iterations 2 >"$out/ncu_resnet20.csv" 2>"$out/ncu_resnet20.err" ||
    status=1
  python3 - "$out/ncu_resnet20.csv" <<'PY' | tee "$out/ncu_resnet20.txt"
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
name, value = head.index("Kernel Name"), head.index("Metric Value")
total = 0.0
for r in rows:
    us = float(r[value].replace(",", "")) / 1e3  # ns
    total += us
    print(f"{us:9.1f} us  {r[name][:110]}")
print(f"{total:9.1f} us  in all ({len(rows)} kernels)")
PY
fi
exit $status
