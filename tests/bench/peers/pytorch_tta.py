#!/usr/bin/env python3
"""The ttapipe workload the way a PyTorch user would write it, for BENCHMARKS.md.

The same network (datasets/train.py's LeNet, loaded from a model directory in the mnistCUDNN
layout; or, for MODEL net:NAME, a graph network of tests/onnx/nets.py, e.g. net:resnet20, with
its default initialisation: the weights do not change the work), the same test-time augmentation (N copies; copy 0 as it is; shifts of up to 2 pixels with
black coming in, contrast 0.85..1.15, brightness -0.05..+0.05, uniform noise of 0.04, clamp to
[0, 1]; torch's random numbers instead of ttapipe's Philox keyed by the pixels), the mean of the
softmax outputs, from u8 images in host memory to classes and probabilities in host memory, one
batch per call, each call synchronised by the copy of its results to the host. Four variants:
eager; one CUDA graph per batch size (torch.cuda.graph, static input and output tensors);
torch.compile (default mode); torch.compile(mode="max-autotune") ("autotune": Triton's tuned
kernels and CUDA graphs; its compilation takes minutes per batch size and precision). fp32 (its
convolutions in TF32, PyTorch's default) and fp16 (the model and copies in half).

With --device cpu, the same on the CPU (tests/bench/cpu_table.sh, against ttapipe's CPU engines):
fp32, eager or torch.compile (Inductor's C++ kernels), on --threads threads (torch.set_num_threads),
each call from u8 images to classes and probabilities.

Prints the columns of `ttapipe bench` (the time split is not measured: "-"), and writes JSON.
    python3 tests/bench/peers/pytorch_tta.py MODEL_DIR [--batch 1,64,1024] [--tta 5]
        [--variant eager,graph,compile,autotune] [--precision fp32,fp16] [--seconds 1]
        [--device cuda|cpu] [--threads N] [--channels-last] [--cudnn-benchmark] [--json FILE]
--channels-last and --cudnn-benchmark are what a PyTorch user tuning for speed turns on; their
points are named with -cl and -cb after the variant (torch-compile-cl-cb).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "datasets"))
from train import LeNet  # noqa: E402  the network, written once
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "onnx"))
import nets  # noqa: E402  the graph networks, written once

SHAPE = [1, 28, 28]  # the input image: channels, rows, columns (set by load)
FLOPS = 2 * (288000 + 1600000 + 400000 + 5000)  # per copy: 2 per multiply-add of conv and fc


def count_flops(model):
    """2 per multiply-add of the convolutions and fully connected layers, one copy."""
    macs = []

    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            macs.append(output.numel() * module.in_channels // module.groups *
                        module.kernel_size[0] * module.kernel_size[1])
        elif isinstance(module, torch.nn.Linear):
            macs.append(module.in_features * module.out_features)
    handles = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        model(torch.zeros(1, *SHAPE))
    for h in handles:
        h.remove()
    return 2 * sum(macs)


CHANNELS_LAST = False  # --channels-last: the model's weights and the copies in NHWC memory


def load(model_dir, dtype, device):
    global FLOPS
    if model_dir.startswith("net:"):
        model, shape = nets.make(model_dir[4:])
        SHAPE[:] = list(shape)
        model.eval()
        FLOPS = count_flops(model)
        model = model.to(device).to(dtype)
        return model.to(memory_format=torch.channels_last) if CHANNELS_LAST else model
    model = LeNet()
    for name in ("conv1", "conv2", "ip1", "ip2"):
        layer = getattr(model, name)
        w = np.fromfile(os.path.join(model_dir, f"{name}.bin"), dtype="<f4")
        b = np.fromfile(os.path.join(model_dir, f"{name}.bias.bin"), dtype="<f4")
        layer.weight.data = torch.from_numpy(w.reshape(layer.weight.shape).copy())
        layer.bias.data = torch.from_numpy(b.copy())
    return model.to(device).to(dtype).eval()


def tta(images_u8, copies, dtype):
    """B x C x H x W u8 -> (B N) x C x H x W augmented copies (every channel moved alike)."""
    b = images_u8.shape[0]
    c, h, w = SHAPE
    x = (images_u8.to(dtype) / 255.0).repeat_interleave(copies, 0)
    n = x.shape[0]
    dev = x.device
    shift = torch.randint(-2, 3, (n, 2), device=dev).to(dtype)
    theta = torch.zeros(n, 2, 3, device=dev, dtype=dtype)
    theta[:, 0, 0] = 1
    theta[:, 1, 1] = 1
    theta[:, 0, 2] = -shift[:, 0] * (2.0 / w)  # move the image by (dx, dy) pixels
    theta[:, 1, 2] = -shift[:, 1] * (2.0 / h)
    grid = F.affine_grid(theta, (n, c, h, w), align_corners=False)
    moved = F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=False)
    contrast = torch.empty(n, 1, 1, 1, device=dev, dtype=dtype).uniform_(0.85, 1.15)
    brightness = torch.empty(n, 1, 1, 1, device=dev, dtype=dtype).uniform_(-0.05, 0.05)
    noise = torch.empty_like(moved).uniform_(-0.04, 0.04)
    out = (contrast * moved + brightness + noise).clamp_(0, 1)
    out.view(b, copies, c, h, w)[:, 0] = x.view(b, copies, c, h, w)[:, 0]  # copy 0 as it is
    return out.contiguous(memory_format=torch.channels_last) if CHANNELS_LAST else out


def make_step(model, copies, dtype):
    def step(images_u8):
        probs = F.softmax(model(tta(images_u8, copies, dtype)).float(), dim=1)
        merged = probs.view(images_u8.shape[0], copies, -1).mean(1)
        return merged.argmax(1), merged
    return step


def runner(variant, model, copies, dtype, batch, host):
    """A function host_u8 (pinned, batch x C x H x W) -> (classes, probabilities) on the host."""
    step = make_step(model, copies, dtype)
    if variant == "compile":
        step = torch.compile(step)
    if variant == "autotune":
        step = torch.compile(step, mode="max-autotune")
    if host.device.type == "cpu" and not host.is_pinned():  # --device cpu: no copies at all
        return step
    if variant in ("eager", "compile", "autotune"):
        def call(x):
            cls, merged = step(x.cuda(non_blocking=True))
            return cls.cpu(), merged.cpu()
        return call
    static_in = torch.empty(batch, *SHAPE, dtype=torch.uint8, device="cuda")
    static_in.copy_(host)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm up on the capture stream
            step(static_in)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(static_in)

    def call(x):
        static_in.copy_(x, non_blocking=True)
        graph.replay()
        return static_out[0].cpu(), static_out[1].cpu()
    return call


def measure(variant, precision, batch, copies, model_dir, seconds, device):
    dtype = torch.float16 if precision == "fp16" else torch.float32
    model = load(model_dir, dtype, device)
    gen = torch.Generator().manual_seed(1)
    host = torch.randint(0, 256, (batch, *SHAPE), dtype=torch.uint8, generator=gen)
    if device == "cuda":
        host = host.pin_memory()
    with torch.no_grad():
        call = runner(variant, model, copies, dtype, batch, host)
        for _ in range(3):
            call(host)
        lat = []
        start = time.perf_counter()
        while len(lat) < 3 or time.perf_counter() - start < seconds:
            t = time.perf_counter()
            call(host)
            lat.append(1e3 * (time.perf_counter() - t))
    lat = np.array(lat)
    images = batch * len(lat) / (lat.sum() / 1e3)
    tuned = ("-cl" if CHANNELS_LAST else "") + ("-cb" if torch.backends.cudnn.benchmark else "")
    return {"engine": f"torch-{variant}{tuned}", "precision": precision, "graph": "on" if variant == "graph" else "-",
            "batch": batch, "copies": copies, "images_per_s": images, "copies_per_s": images * copies,
            "tflops": images * copies * FLOPS * 1e-12,
            "latency_ms": {q: float(np.percentile(lat, p)) for q, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9))}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--batch", default="1,64,1024")
    ap.add_argument("--tta", default="5", help="copies, comma-separated")
    ap.add_argument("--variant", default="eager,graph,compile,autotune")
    ap.add_argument("--precision", default="fp32,fp16")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (default: torch's)")
    ap.add_argument("--channels-last", action="store_true",
                    help="the model and the copies in channels-last (NHWC) memory (engine -cl)")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark: cuDNN's algorithms timed per shape "
                         "(engine -cb)")
    ap.add_argument("--json")
    args = ap.parse_args()
    global CHANNELS_LAST
    CHANNELS_LAST = args.channels_last
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cpu":
        where = f"CPU, {torch.get_num_threads()} threads, {torch.backends.cpu.get_cpu_capability()}"
    else:
        where = torch.cuda.get_device_name()
    print(f"# PyTorch {torch.__version__}, {where}")
    print(f"{'engine':<20} {'prec':<5} {'graph':<5} {'batch':>6} {'N':>3} {'images/s':>12} "
          f"{'copies/s':>12} {'TFLOP/s':>8} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'p99.9 ms':>9}")
    points = []
    for variant in args.variant.split(","):
        for precision in args.precision.split(","):
            for batch, copies in ((int(b), int(n)) for b in args.batch.split(",")
                                  for n in args.tta.split(",")):
                p = measure(variant, precision, batch, copies, args.model, args.seconds,
                            args.device)
                points.append(p)
                q = p["latency_ms"]
                print(f"{p['engine']:<20} {precision:<5} {p['graph']:<5} {batch:>6} {copies:>3} "
                      f"{p['images_per_s']:>12.0f} {p['copies_per_s']:>12.0f} {p['tflops']:>8.3f} "
                      f"{q['p50']:>9.3f} {q['p90']:>9.3f} {q['p99']:>9.3f} {q['p99.9']:>9.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": where, "threads": torch.get_num_threads(),
                       **({"gpu": where} if args.device == "cuda" else {}), "points": points},
                      f, indent=1)


if __name__ == "__main__":
    main()
