#!/usr/bin/env python3
"""Writes the ONNX test models of tests/onnx/ and, for each, its test images and the probabilities
PyTorch computes for them.

Run from the repository root, with Debian's python3-torch and python3-onnx (/usr/bin/python3):

    python3 tests/onnx/export_models.py

For each network NAME it writes, into tests/onnx/:

  NAME.onnx          torch.onnx.export's output (the TorchScript exporter): float32, input "input"
                     [1, C, H, W] (resnet20: [batch, 3, 32, 32], the batch dynamic), one output,
                     exported from the model in eval mode with training=TrainingMode.PRESERVE, so
                     that BatchNormalization stays a node of its own instead of being folded into
                     the Conv before it; checked by onnx.checker. Opset 13 for the four networks
                     defined here, opset 17 for the graph-shaped networks of nets.py
  NAME.images.idx    7 random images, uint8 uniform in 0..255: an IDX file (big-endian header: two
                     zero bytes, type 0x08, the number of dimensions, each dimension as a uint32),
                     [n, h, w] for one channel, [n, 3, h, w] planar for RGB
  NAME.expected      text: '#' comment lines, then one line an image, its class probabilities as
                     comma-separated %.17g numbers, computed by PyTorch in float64 (model.double(),
                     input pixel / 255.0, and for rgb-stride then (x - mean[c]) / std[c]), softmax
                     over the logits (mlp-sigmoid ends in its own softmax)

The networks (weights: PyTorch's default initialisation from fixed seeds, the Conv and Linear
weights then multiplied by a gain, 3 unless GRAPH_NETWORKS says otherwise, so that the
probabilities vary from image to image; BatchNorm layers get random running means in -0.5..0.5,
variances in 0.5..2, weights in 0.5..1.5 and biases in -0.5..0.5; PReLU slopes are random in
0..0.5):

  lenet-mnist    models/lenet-mnist/model.onnx (written by datasets/train.py --from): only its
                 .images.idx and .expected are written here, from train.py's LeNet with that
                 directory's .bin weights
  lenet-bn-avg   1x28x28: conv 1->8 5x5, BatchNorm2d, ReLU, avg-pool 2x2/2, conv 8->16 3x3 pad 1,
                 BatchNorm2d, Tanh, avg-pool 3x3/2 pad 1 (padding counted), flatten, Linear 576->32,
                 BatchNorm1d, LeakyReLU(0.1), Linear 32->10 (logits)
  rgb-stride     3x32x32: conv 3->16 3x3/2 pad 1, ReLU6, conv 16->32 3x3/2 pad 1, Hardtanh(-2, 2),
                 max-pool 3x3/2 pad 1, flatten, Linear 512->10 (logits); metadata_props "mean",
                 "std" (CIFAR-10's) and "labels"
  mlp-sigmoid    1x28x28: flatten, Linear 784->64, Sigmoid, x @ W + b (W [64, 32], b [32]: MatMul
                 and Add), Sigmoid, Linear 32->10, softmax (the graph ends in Softmax)
  resnet20, resnet-option-a, mobilenetv2, densenet, zoo
                 the graph-shaped networks of nets.py (residual adds, depthwise and grouped
                 convolutions, concatenations, channel shuffles, ...), input pixel / 255.0 without
                 mean and std, output "logits"; resnet20 with a dynamic batch dimension ("batch")

Seeds are fixed (torch.manual_seed, numpy's default_rng): a rerun writes the same files. Each
.onnx is then run by this script's own float64 numpy evaluator of the ONNX operators, whose
probabilities must match the .expected ones (to 1e-8: the ONNX file holds float32 attributes
and constants such as epsilon, alpha, the Clip bounds and GELU's sqrt(2)), and the operators of
each graph are printed with their counts. resnet20 is also evaluated with the 7 images as one
batch.

With PyTorch 2.x (its onnx and onnxscript packages installed), the graph-shaped networks alone can
be written with either of its exporters into another directory, and checked the same way:

    python3 tests/onnx/export_models.py --out DIR --exporter script     # TorchScript, opset 17
    python3 tests/onnx/export_models.py --out DIR --exporter dynamo     # torch.export, opset 18
    python3 tests/onnx/export_models.py --out DIR --exporter dynamo-optimized

"dynamo" exports with optimize=False: the onnxscript optimisation that torch.onnx.export(dynamo=
True) applies by default folds each BatchNormalization into the Conv before it (and constant-folds
the rest); "dynamo-optimized" keeps that default, and its probabilities are checked to 1e-6 only
(the folded weights are rounded to float32). Same weights, images and float64 computation as the
committed files (so the .expected numbers should match theirs; the script reports the largest
difference). A network that fails to export or that the evaluator cannot run (an operator it does
not know) is reported and skipped; the exit status is then 1.
"""
import argparse
import collections
import inspect
import math
import os
import struct
import sys
import traceback
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "datasets"))
sys.path.insert(0, HERE)
import nets  # noqa: E402  (tests/onnx/nets.py: the graph-shaped networks)
import train  # noqa: E402  (datasets/train.py: LeNet and the reading of a model directory)

IMAGES = 7
CIFAR_MEAN = [0.4914, 0.4822, 0.4465]
CIFAR_STD = [0.2470, 0.2435, 0.2616]
CIFAR_LABELS = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                "truck"]

# The graph-shaped networks of nets.py: name, seed, weight gain, dynamic batch. The seed gives the
# weights (torch.manual_seed(seed)), the BatchNorm and PReLU parameters (a generator seeded with
# 100 + seed) and the images (default_rng(1000 + seed)). The ResNets get a gain of 2.25 instead of
# 3: their BatchNorms, with random running statistics, do not renormalise, so each of their 20
# and 14 layers multiplies the scale of the activations, and at 3 the logits reach the hundreds
# (probability 1 for one class, whatever the image); at 2.25 the largest probability is about
# 0.8-0.9 and differs from image to image. mobilenetv2 gets 2.75: its HardSigmoid's alpha is
# 1/6 in float32 in the file, 5e-9 off, which at 3 moves the probabilities by up to 1e-8 (the
# evaluator's tolerance), at 2.75 by half that.
GRAPH_NETWORKS = [
    ("resnet20", 11, 2.25, True),
    ("resnet-option-a", 12, 2.25, False),
    ("mobilenetv2", 13, 2.75, False),
    ("densenet", 14, 3.0, False),
    ("zoo", 15, 3.0, False),
]
SCRIPT_OPSET = 17   # the graph-shaped networks, TorchScript exporter
DYNAMO_OPSET = 18   # the torch.export-based exporter's default opset in PyTorch 2.x
TOLERANCE = 1e-8
# --exporter dynamo-optimized: the exporter folds each BatchNormalization into the Conv before it
# and rounds the folded weights to float32, which moves the probabilities by about 1e-7
FOLDED_TOLERANCE = 1e-6


def amplify(model, gain=3.0):
    """PyTorch's default initialisation times gain for the weights of every Conv2d and Linear (and
    MlpSigmoid's W): with the default ones, random images all come out with nearly the same
    probabilities; with these, the outputs differ from image to image by a few hundredths."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                m.weight.mul_(gain)
        if isinstance(model, MlpSigmoid):
            model.w.mul_(gain)


def randomise_batch_norms(model, generator):
    """Non-trivial inference statistics and affine parameters for every BatchNorm layer."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(n, generator=generator) - 0.5)
                m.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=generator))
                m.weight.copy_(0.5 + torch.rand(n, generator=generator))
                m.bias.copy_(torch.rand(n, generator=generator) - 0.5)


class LeNetBnAvg(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(16 * 6 * 6, 32)
        self.bn3 = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.avg_pool2d(F.relu(self.bn1(self.conv1(x))), 2, 2)            # 8x12x12
        x = F.avg_pool2d(torch.tanh(self.bn2(self.conv2(x))), 3, 2, 1)     # 16x6x6
        x = F.leaky_relu(self.bn3(self.fc1(x.flatten(1))), 0.1)
        return self.fc2(x)


class RgbStride(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu6(self.conv1(x))                                          # 16x16x16
        x = F.hardtanh(self.conv2(x), -2.0, 2.0)                            # 32x8x8
        x = F.max_pool2d(x, 3, 2, 1)                                        # 32x4x4
        return self.fc(x.flatten(1))


class MlpSigmoid(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 64)
        self.w = nn.Parameter(torch.randn(64, 32) / 8.0)
        self.b = nn.Parameter(torch.randn(32) / 8.0)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.sigmoid(self.fc1(x.flatten(1)))
        x = torch.sigmoid(x @ self.w + self.b)
        return F.softmax(self.fc3(x), dim=1)


def write_idx(path, images):
    with open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, 0x08, images.ndim))
        f.write(struct.pack(">" + "I" * images.ndim, *images.shape))
        f.write(np.ascontiguousarray(images, dtype=np.uint8).tobytes())


def exporter_choice(exporter):
    """The keyword that picks torch.onnx.export's exporter ("script" or "dynamo..."): PyTorch 2.x
    has two, chosen by `dynamo` (True, the torch.export-based one, is the default from 2.9 on);
    1.13 has only the TorchScript one and no such keyword."""
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        return {"dynamo": exporter != "script"}
    if exporter != "script":
        raise RuntimeError(f"PyTorch {torch.__version__} has no torch.export-based ONNX exporter")
    return {}


def export(model, shape, path, output, metadata):
    """torch.onnx.export of the float32 eval-mode model, metadata_props added, checked."""
    model = model.float().eval()
    with torch.no_grad(), warnings.catch_warnings():
        # PRESERVE on a model in eval mode: an inference graph, without the eval-only peephole
        # that folds BatchNormalization into the Conv before it; PyTorch then advises against
        # constant folding, which is harmless here (nothing is being trained)
        warnings.filterwarnings("ignore", message=".*constant folding.*")
        warnings.filterwarnings("ignore", message=".*_graph_op.*")
        torch.onnx.export(model, torch.zeros(1, *shape), path, opset_version=13,
                          input_names=["input"], output_names=[output],
                          training=torch.onnx.TrainingMode.PRESERVE, **exporter_choice("script"))
    m = onnx.load(path)
    for key, value in metadata.items():
        m.metadata_props.add(key=key, value=value)
    onnx.checker.check_model(m)
    onnx.save(m, path)


def expected(model, images, mean, std, ends_in_softmax):
    """float64 probabilities, one row an image."""
    model = model.double().eval()
    x = torch.from_numpy(images.astype(np.float64) / 255.0)
    if x.dim() == 3:
        x = x.unsqueeze(1)
    if mean is not None:
        x = (x - torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)) / \
            torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
    with torch.no_grad():
        y = model(x)
        probs = y if ends_in_softmax else F.softmax(y, dim=1)
    model.float()
    return x.numpy(), probs.numpy()


def write_expected(path, name, probs, preprocessing, ends_in_softmax):
    with open(path, "w") as f:
        f.write(f"# {name}: the class probabilities of {name}.onnx for the images of "
                f"{name}.images.idx, one line an image\n")
        f.write(f"# computed by PyTorch {torch.__version__} in float64 (model.double()); input "
                f"{preprocessing}; " + ("the model's own softmax" if ends_in_softmax else
                                        "softmax over the logits") + "\n")
        f.write(f"# written by tests/onnx/export_models.py; {probs.shape[1]} numbers a line, %.17g\n")
        for row in probs:
            f.write(",".join("%.17g" % p for p in row) + "\n")


# ---- the graph-shaped networks of nets.py ----

def randomise_prelus(model, generator):
    """Random slopes in 0..0.5 for every PReLU (PyTorch's default is 0.25 for all)."""
    for m in model.modules():
        if isinstance(m, nn.PReLU):
            with torch.no_grad():
                m.weight.copy_(0.5 * torch.rand(m.weight.shape, generator=generator))


def build_graph_network(name, seed, gain):
    """(float32 eval-mode model, input shape (C, H, W)) of a network of nets.py with the weights of
    the committed files."""
    torch.manual_seed(seed)
    model, shape = nets.make(name)
    amplify(model, gain)
    generator = torch.Generator().manual_seed(100 + seed)
    randomise_batch_norms(model, generator)
    randomise_prelus(model, generator)
    return model.float().eval(), shape


def export_graph(model, shape, path, exporter, dynamic_batch):
    """torch.onnx.export of a graph-shaped network with the exporter named (script, dynamo,
    dynamo-optimized): input "input", output "logits", batch 1 or dynamic. Returns the file, loaded
    and checked by onnx.checker."""
    model = model.float().eval()
    parameters = inspect.signature(torch.onnx.export).parameters
    kwargs = exporter_choice(exporter)
    example = torch.zeros(1, *shape)
    if exporter == "script":
        # PRESERVE on a model in eval mode: an inference graph without the eval-only peephole
        # pass that folds BatchNormalization into the Conv before it
        kwargs.update(opset_version=SCRIPT_OPSET, training=torch.onnx.TrainingMode.PRESERVE)
        if dynamic_batch:
            kwargs["dynamic_axes"] = {"input": {0: "batch"}, "logits": {0: "batch"}}
    else:
        # torch.export traces the model in eval mode (BatchNorm with its running statistics);
        # the weights go inside the .onnx file rather than into a separate data file. "dynamo":
        # without the onnxscript optimisation, whose rewrite rules fold each BatchNormalization
        # into the Conv before it; "dynamo-optimized": with it, the exporter's default
        kwargs["opset_version"] = DYNAMO_OPSET
        if "external_data" in parameters:
            kwargs["external_data"] = False
        if "optimize" in parameters:
            kwargs["optimize"] = exporter == "dynamo-optimized"
        if dynamic_batch:
            # torch.export specialises a dimension whose example size is 0 or 1: example batch 2
            kwargs["dynamic_shapes"] = ({0: torch.export.Dim("batch")},)
            example = torch.zeros(2, *shape)
    with torch.no_grad(), warnings.catch_warnings():
        # PRESERVE makes PyTorch advise against constant folding, harmless for a model that is
        # not trained; resnet20's int(x.size(3)) is meant to become a constant of the trace
        warnings.filterwarnings("ignore", message=".*constant folding.*")
        warnings.filterwarnings("ignore", message=".*_graph_op.*")
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        # zoo's F.pad: PyTorch 1.13 has no shape inference for the constant list of its pads,
        # which the ONNX graph computes with ops of known shapes all the same
        warnings.filterwarnings("ignore", message=".*shape inference of prim::Constant.*")
        # PyTorch 2.x calls the TorchScript exporter legacy; it is chosen here on purpose
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
        torch.onnx.export(model, (example,), path, input_names=["input"],
                          output_names=["logits"], **kwargs)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    return m


def op_counts(m):
    """'Op count, ...' for the nodes of the graph, in the order of first appearance."""
    counts = collections.Counter(n.op_type if n.domain in ("", "ai.onnx") else
                                 f"{n.domain}.{n.op_type}" for n in m.graph.node)
    return ", ".join(f"{op} {k}" for op, k in counts.items())


def read_expected(path):
    """The probabilities of a .expected file, one row an image."""
    with open(path) as f:
        return np.array([[float(v) for v in line.split(",")] for line in f
                         if line.strip() and not line.startswith("#")])


def write_graph_network(out, name, seed, gain, dynamic_batch, exporter):
    """Writes NAME.images.idx, NAME.expected and NAME.onnx into out, then checks the .onnx with the
    evaluator. Returns the largest difference between its probabilities and PyTorch's."""
    model, shape = build_graph_network(name, seed, gain)
    rng = np.random.default_rng(1000 + seed)
    images = rng.integers(0, 256, size=(IMAGES,) + (shape if shape[0] == 3 else shape[1:]),
                          dtype=np.uint8)
    write_idx(os.path.join(out, f"{name}.images.idx"), images)
    inputs, probs = expected(model, images, None, None, False)
    write_expected(os.path.join(out, f"{name}.expected"), name, probs, "pixel / 255.0", False)
    committed = os.path.join(HERE, f"{name}.expected")
    if os.path.abspath(out) != HERE and os.path.exists(committed):
        old = read_expected(committed)
        diff = float(np.abs(old - probs).max()) if old.shape == probs.shape else float("inf")
        print(f"{name}: PyTorch {torch.__version__}'s float64 probabilities within {diff:.3g} of "
              f"the committed {name}.expected")
    path = os.path.join(out, f"{name}.onnx")
    m = export_graph(model, shape, path, exporter, dynamic_batch)
    modules = sum(isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)) for mod in model.modules())
    nodes = sum(n.op_type == "BatchNormalization" for n in m.graph.node)
    if nodes != modules:
        message = f"{name}: {nodes} BatchNormalization nodes for {modules} BatchNorm layers"
        if exporter == "script":
            raise ValueError(message)
        print(message + " (the exporter folded the others)")
    return check(name, path, inputs, probs, False,
                 FOLDED_TOLERANCE if exporter == "dynamo-optimized" else TOLERANCE)


# ---- a float64 numpy evaluator of the ONNX operators these models use, to check the files ----
#
# Floating-point tensors are held as float64 whatever their ONNX type, integer tensors as int64,
# booleans as bool. 2-D convolution and pooling only (N, C, H, W).

_OPS = {}


def _op(*names):
    """Registers fn(attributes, *inputs) -> output or tuple of outputs for the ONNX op types
    named; a missing optional input is None."""
    def register(fn):
        for name in names:
            _OPS[name] = fn
        return fn
    return register


def _f64(a):
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _tensor(t):
    return _f64(numpy_helper.to_array(t))


def _ints(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _pad4(x, pads, value=0.0):
    """x [N, C, H, W] padded by ONNX pads [top, left, bottom, right]."""
    return np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                  constant_values=value)


def _windows(x, kernel, strides, dilations=(1, 1)):
    """[N, C, OH, OW, KH, KW] views of the pooling / convolution windows of x [N, C, H, W]."""
    n, c, h, w = x.shape
    oh = (h - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (w - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kernel[0], kernel[1]),
        (s[0], s[1], s[2] * strides[0], s[3] * strides[1], s[2] * dilations[0],
         s[3] * dilations[1]), writeable=False)


def _no_auto_pad(at):
    if at.get("auto_pad", "NOTSET") != "NOTSET":
        raise NotImplementedError(f"auto_pad {at['auto_pad']}")


@_op("Constant")
def _constant(at):
    if "value" in at:
        return _tensor(at["value"])
    if "value_float" in at:
        return np.array(at["value_float"], dtype=np.float64)
    if "value_floats" in at:
        return np.array(at["value_floats"], dtype=np.float64)
    if "value_int" in at:
        return np.array(at["value_int"], dtype=np.int64)
    if "value_ints" in at:
        return np.array(at["value_ints"], dtype=np.int64)
    raise NotImplementedError(f"Constant with {sorted(at)}")


@_op("Identity")
def _identity(at, x):
    return x


@_op("Dropout")
def _dropout(at, x, ratio=None, training=None):
    if training is not None and bool(training):
        raise NotImplementedError("Dropout in training mode")
    return x, np.ones(x.shape, dtype=bool)


@_op("Conv")
def _conv(at, x, w, b=None):
    """Grouped, dilated, strided 2-D convolution; pads [top, left, bottom, right]."""
    _no_auto_pad(at)
    if x.ndim != 4:
        raise NotImplementedError(f"Conv on a {x.ndim}-D input")
    g = at.get("group", 1)
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    assert c == g * cg and o % g == 0
    win = _windows(_pad4(x, at.get("pads", [0] * 4)), (kh, kw), at.get("strides", [1, 1]),
                   at.get("dilations", [1, 1]))
    oh, ow = win.shape[2:4]
    win = win.reshape(n, g, cg, oh, ow, kh, kw)
    y = np.einsum("ngchwij,gocij->ngohw", win, w.reshape(g, o // g, cg, kh, kw),
                  optimize=True).reshape(n, o, oh, ow)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y


def _pool(at, x, kind):
    """MaxPool / AveragePool [N, C, H, W]. In ceil mode the last window may reach past the end
    padding (the cells it has there are not counted), and a window that would start inside the
    end padding is dropped, as PyTorch does."""
    _no_auto_pad(at)
    if x.ndim != 4 or list(at.get("dilations", [1, 1])) != [1, 1]:
        raise NotImplementedError("pooling other than 2-D without dilation")
    k = list(at["kernel_shape"])
    s = list(at.get("strides", [1, 1]))
    p = list(at.get("pads", [0] * 4))
    out, extra = [], []
    for i in range(2):
        size = x.shape[2 + i]
        span = size + p[i] + p[i + 2] - k[i]
        o = (-(-span // s[i]) if at.get("ceil_mode", 0) else span // s[i]) + 1
        if at.get("ceil_mode", 0) and (o - 1) * s[i] >= size + p[i]:
            o -= 1
        out.append(o)
        extra.append(max(0, (o - 1) * s[i] + k[i] - (size + p[i] + p[i + 2])))
    whole = [p[0], p[1], p[2] + extra[0], p[3] + extra[1]]
    if kind == "max":
        y = _windows(_pad4(x, whole, -np.inf), k, s).max(axis=(4, 5))
    else:
        total = _windows(_pad4(x, whole), k, s).sum(axis=(4, 5))
        ones = np.ones((1, 1) + x.shape[2:])
        if at.get("count_include_pad", 0):
            mask = _pad4(_pad4(ones, p, 1.0), [0, 0, extra[0], extra[1]])
        else:
            mask = _pad4(ones, whole)
        y = total / _windows(mask, k, s).sum(axis=(4, 5))
    return y[:, :, :out[0], :out[1]]


@_op("MaxPool")
def _max_pool(at, x):
    if at.get("storage_order", 0):
        raise NotImplementedError("MaxPool storage_order 1")
    return _pool(at, x, "max")


@_op("AveragePool")
def _average_pool(at, x):
    return _pool(at, x, "average")


@_op("GlobalAveragePool")
def _global_average_pool(at, x):
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)


@_op("GlobalMaxPool")
def _global_max_pool(at, x):
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)


def _reduce(fn):
    """ReduceX: axes an attribute (before opset 18 for most) or an input; none = all."""
    def run(at, x, axes=None):
        axes = at.get("axes") if axes is None else _ints(axes)
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return x
            axes = range(x.ndim)
        return fn(x, axis=tuple(a % x.ndim for a in axes), keepdims=bool(at.get("keepdims", 1)))
    return run


_op("ReduceMean")(_reduce(np.mean))
_op("ReduceSum")(_reduce(np.sum))
_op("ReduceMax")(_reduce(np.max))
_op("ReduceMin")(_reduce(np.min))


@_op("BatchNormalization")
def _batch_normalization(at, x, scale, bias, mean, var):
    if at.get("training_mode", 0):
        raise NotImplementedError("BatchNormalization training_mode 1")
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale, bias, mean, var = (v.reshape(shape) for v in (scale, bias, mean, var))
    return (x - mean) / np.sqrt(var + at.get("epsilon", 1e-5)) * scale + bias


@_op("LRN")
def _lrn(at, x):
    size = at["size"]
    c = x.shape[1]
    sq = np.pad(x * x, ((0, 0), ((size - 1) // 2, size // 2)) + ((0, 0),) * (x.ndim - 2))
    total = sum(sq[:, i:i + c] for i in range(size))
    return x / (at.get("bias", 1.0) + at.get("alpha", 1e-4) / size * total) ** at.get("beta", 0.75)


@_op("Gemm")
def _gemm(at, a, b, c=None):
    a = a.T if at.get("transA", 0) else a
    b = b.T if at.get("transB", 0) else b
    y = at.get("alpha", 1.0) * (a @ b)
    if c is not None:
        y = y + at.get("beta", 1.0) * c
    return y


@_op("MatMul")
def _matmul(at, a, b):
    return a @ b


# elementwise, one input
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0.0, x)


_UNARY = {
    "Relu": lambda x: np.maximum(x, 0),
    "Tanh": np.tanh,
    "Sigmoid": _sigmoid,
    "Erf": _erf,
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Neg": np.negative,
    "Abs": np.abs,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Reciprocal": lambda x: 1.0 / x,
    "Softplus": _softplus,
    "Softsign": lambda x: x / (1.0 + np.abs(x)),
    "Mish": lambda x: x * np.tanh(_softplus(x)),
    "HardSwish": lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    "Not": np.logical_not,
}
for _name, _fn in _UNARY.items():
    _op(_name)(lambda at, x, fn=_fn: fn(x))


@_op("LeakyRelu")
def _leaky_relu(at, x):
    return np.where(x >= 0, x, at.get("alpha", 0.01) * x)


@_op("Elu")
def _elu(at, x):
    return np.where(x > 0, x, at.get("alpha", 1.0) * np.expm1(np.minimum(x, 0.0)))


@_op("Selu")
def _selu(at, x):
    alpha = at.get("alpha", 1.67326319217681884765625)
    gamma = at.get("gamma", 1.05070102214813232421875)
    return gamma * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


@_op("Celu")
def _celu(at, x):
    alpha = at.get("alpha", 1.0)
    return np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha))


@_op("HardSigmoid")
def _hard_sigmoid(at, x):
    return np.clip(at.get("alpha", 0.2) * x + at.get("beta", 0.5), 0.0, 1.0)


@_op("Gelu")
def _gelu(at, x):
    if at.get("approximate", "none") == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


@_op("PRelu")
def _prelu(at, x, slope):
    return np.where(x < 0, slope * x, x)


@_op("Clip")
def _clip(at, x, lo=None, hi=None):
    lo = at.get("min", -np.inf) if lo is None else lo
    hi = at.get("max", np.inf) if hi is None else hi
    return np.minimum(np.maximum(x, lo), hi)


@_op("Softmax", "LogSoftmax")
def _softmax(at, x):
    axis = at.get("axis", -1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)
    return np.log(y) if at["_op"] == "LogSoftmax" else y


# elementwise, two or more inputs, with numpy (= ONNX multidirectional) broadcasting
def _div(a, b):
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)   # integer Div truncates toward zero
        return np.where((a < 0) != (b < 0), -q, q)
    return a / b


_BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": _div,
    "Pow": lambda a, b: np.power(a, b) if a.dtype.kind == "f" else np.power(a, b).astype(a.dtype),
    "Equal": np.equal,
    "Less": np.less,
    "LessOrEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
}
for _name, _fn in _BINARY.items():
    _op(_name)(lambda at, a, b, fn=_fn: fn(a, b))


@_op("Max", "Min", "Sum", "Mean")
def _variadic(at, *xs):
    fn = {"Max": np.maximum, "Min": np.minimum}.get(at["_op"], np.add)
    y = xs[0]
    for v in xs[1:]:
        y = fn(y, v)
    return y / len(xs) if at["_op"] == "Mean" else y


@_op("Where")
def _where(at, c, a, b):
    return np.where(c, a, b)


# shapes and data movement
_CAST_FLOAT = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16}
_CAST_INT = {onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
             onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
             onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


def _cast_to(x, to):
    if to in _CAST_FLOAT:
        return np.asarray(x).astype(np.float64)
    if to in _CAST_INT:
        return np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
    if to == onnx.TensorProto.BOOL:
        return x.astype(bool)
    raise NotImplementedError(f"Cast to type {to}")


@_op("Cast")
def _cast(at, x):
    return _cast_to(x, at["to"])


@_op("CastLike")
def _cast_like(at, x, like):
    return x.astype(like.dtype)


@_op("Shape")
def _shape(at, x):
    start = at.get("start", 0)
    end = at.get("end", x.ndim)
    return np.array(x.shape[start:end], dtype=np.int64)


@_op("Size")
def _size(at, x):
    return np.array(x.size, dtype=np.int64)


@_op("Gather")
def _gather(at, x, indices):
    return np.take(x, indices.astype(np.int64), axis=at.get("axis", 0))


@_op("Unsqueeze")
def _unsqueeze(at, x, axes=None):
    axes = at["axes"] if axes is None else _ints(axes)
    rank = x.ndim + len(axes)
    y = x
    for a in sorted(a % rank for a in axes):
        y = np.expand_dims(y, a)
    return y


@_op("Squeeze")
def _squeeze(at, x, axes=None):
    axes = at.get("axes") if axes is None else _ints(axes)
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(a % x.ndim for a in axes))


@_op("Concat")
def _concat(at, *xs):
    return np.concatenate(xs, axis=at["axis"])


@_op("Reshape")
def _reshape(at, x, shape):
    shape = _ints(shape)
    if not at.get("allowzero", 0):
        shape = [x.shape[i] if v == 0 else v for i, v in enumerate(shape)]
    return x.reshape(shape)


@_op("Flatten")
def _flatten(at, x):
    axis = at.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))


@_op("Transpose")
def _transpose(at, x):
    return np.transpose(x, at.get("perm"))


@_op("Expand")
def _expand(at, x, shape):
    return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(_ints(shape)))).copy()


@_op("Tile")
def _tile(at, x, repeats):
    return np.tile(x, _ints(repeats))


@_op("Range")
def _range(at, start, limit, delta):
    n = max(int(math.ceil((limit.item() - start.item()) / delta.item())), 0)
    return (start + np.arange(n) * delta).astype(start.dtype)


@_op("ConstantOfShape")
def _constant_of_shape(at, shape):
    value = _tensor(at["value"]) if "value" in at else np.zeros(1)
    return np.full(_ints(shape), value.reshape(-1)[0], dtype=value.dtype)


@_op("Slice")
def _slice(at, x, starts, ends, axes=None, steps=None):
    """Start and end clamped as ONNX says: into [0, dim] for a positive step, into [0, dim - 1]
    and [-1, dim - 1] for a negative one (end -1: up to and including index 0)."""
    starts, ends = _ints(starts), _ints(ends)
    axes = range(len(starts)) if axes is None else _ints(axes)
    steps = [1] * len(starts) if steps is None else _ints(steps)
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis %= x.ndim
        dim = x.shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        index[axis] = slice(start, None if end < 0 else end, step)
    return x[tuple(index)]


@_op("Split")
def _split(at, x, split=None):
    axis = at.get("axis", 0) % x.ndim
    split = at.get("split") if split is None else _ints(split)
    if split is None:
        # equal parts, as many as the node has outputs (or num_outputs, opset 18), the last one
        # smaller where the axis does not divide evenly
        parts = at.get("num_outputs", at["_outputs"])
        size = -(-x.shape[axis] // parts)
        split = [min(size, x.shape[axis] - i * size) for i in range(parts)]
    return tuple(np.split(x, np.cumsum(split)[:-1], axis=axis))


@_op("Pad")
def _pad(at, x, pads, value=None, axes=None):
    """Pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...] over all axes or the axes input;
    negative pads crop."""
    mode = at.get("mode", "constant")
    pads = _ints(pads)
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in _ints(axes)]
    width = [[0, 0] for _ in range(x.ndim)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[i + len(axes)]]
    crop = tuple(slice(max(-b, 0), x.shape[a] - max(-e, 0)) for a, (b, e) in enumerate(width))
    x = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in width]
    if mode == "constant":
        fill = 0 if value is None else np.asarray(value).reshape(-1)[0]
        return np.pad(x, width, constant_values=fill)
    if mode in ("reflect", "edge", "wrap"):
        return np.pad(x, width, mode=mode)
    raise NotImplementedError(f"Pad mode {mode}")


def _run(nodes, values, functions, outer=None):
    """Evaluates nodes in order, values: name -> array. A node of a model-local function runs that
    function's nodes (outer: the calling node's attributes, for the function's attribute
    references)."""
    for node in nodes:
        at = {}
        for a in node.attribute:
            if a.ref_attr_name:
                if outer is not None and a.ref_attr_name in outer:
                    at[a.name] = outer[a.ref_attr_name]
                continue
            v = onnx.helper.get_attribute_value(a)
            at[a.name] = v.decode() if isinstance(v, bytes) else v
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        x = []
        for name in node.input:
            if name and name not in values:
                raise NotImplementedError(f"{op}: its input {name} was not computed")
            x.append(values[name] if name else None)
        while x and x[-1] is None:
            x.pop()
        if node.domain in ("", "ai.onnx") and node.op_type in _OPS:
            at["_op"] = node.op_type
            at["_outputs"] = len(node.output)
            y = _OPS[node.op_type](at, *x)
        elif (node.domain, node.op_type) in functions:
            f = functions[(node.domain, node.op_type)]
            calling = {a.name: onnx.helper.get_attribute_value(a)
                       for a in getattr(f, "attribute_proto", [])}
            calling.update(at)
            inner = dict(zip(f.input, x))
            _run(f.node, inner, functions, calling)
            y = tuple(inner[o] for o in f.output)
        else:
            raise NotImplementedError(f"unknown operator {op}")
        if not isinstance(y, tuple):
            y = (y,)
        for name, v in zip(node.output, y):
            if name:
                values[name] = v


def evaluate(model, x):
    """The graph's output for input x, in float64."""
    values = {t.name: _tensor(t) for t in model.graph.initializer}
    data = [i.name for i in model.graph.input if i.name not in values]
    values[data[0]] = np.asarray(x, dtype=np.float64)
    _run(model.graph.node, values, {(f.domain, f.name): f for f in model.functions})
    return values[model.graph.output[0].name]


def _dynamic_batch(m):
    """Whether the graph input's first dimension is symbolic."""
    data = [i for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    dims = data[0].type.tensor_type.shape.dim
    return bool(dims) and not dims[0].HasField("dim_value")


def check(name, path, inputs, probs, ends_in_softmax, tolerance=TOLERANCE):
    """Runs the .onnx with the evaluator, one image at a time (and, where the batch is dynamic,
    all images as one batch too), compares with PyTorch's probabilities, prints the graph's
    operators. Returns the largest difference; ValueError where it exceeds tolerance,
    NotImplementedError where the graph has an operator or attribute the evaluator lacks."""
    m = onnx.load(path)
    onnx.checker.check_model(m)

    def softmax(y):
        if ends_in_softmax:
            return y
        e = np.exp(y - y.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    worst = 0.0
    for i in range(len(inputs)):
        y = softmax(evaluate(m, inputs[i:i + 1]))
        worst = max(worst, float(np.abs(y[0] - probs[i]).max()))
    batched = _dynamic_batch(m)
    if batched:
        y = softmax(evaluate(m, inputs))
        worst = max(worst, float(np.abs(y - probs).max()))
    if worst > tolerance:  # float32 attributes: LeakyRelu alpha 0.1 is off by 1.5e-9
        raise ValueError(f"{name}: the ONNX file's probabilities differ from PyTorch's by {worst:.3g}")
    print(f"{name}: opset {m.opset_import[0].version}, {os.path.getsize(path)} bytes, "
          f"{len(m.graph.node)} nodes, numpy evaluation of the .onnx within {worst:.2g} of PyTorch "
          f"float64" + (" (one image at a time and all as one batch)" if batched else ""))
    print("  " + op_counts(m))
    return worst


def write_committed():
    """The default run: every network, into tests/onnx/ (lenet-mnist's .onnx: models/)."""
    networks = [
        # name, constructor, input shape, output name, ends in softmax, RGB normalisation, metadata
        ("lenet-bn-avg", LeNetBnAvg, (1, 28, 28), "logits", False, None, {}),
        ("rgb-stride", RgbStride, (3, 32, 32), "logits", False, (CIFAR_MEAN, CIFAR_STD), {
            "mean": ",".join(f"{v:.4f}" for v in CIFAR_MEAN),
            "std": ",".join(f"{v:.4f}" for v in CIFAR_STD),
            "labels": "\n".join(CIFAR_LABELS)}),
        ("mlp-sigmoid", MlpSigmoid, (1, 28, 28), "probabilities", True, None, {}),
    ]

    # lenet-mnist: the model directory's model.onnx, written by datasets/train.py --from
    model, _ = train.read_model(os.path.join(ROOT, "models", "lenet-mnist"))
    rng = np.random.default_rng(1000)
    images = rng.integers(0, 256, size=(IMAGES, 28, 28), dtype=np.uint8)
    write_idx(os.path.join(HERE, "lenet-mnist.images.idx"), images)
    inputs, probs = expected(model, images, None, None, False)
    write_expected(os.path.join(HERE, "lenet-mnist.expected"), "lenet-mnist", probs,
                   "pixel / 255.0; the network of models/lenet-mnist (its .bin weights)", False)
    check("lenet-mnist", os.path.join(ROOT, "models", "lenet-mnist", "model.onnx"), inputs, probs, False)

    for seed, (name, make, shape, output, softmaxed, norm, metadata) in enumerate(networks, 1):
        torch.manual_seed(seed)
        model = make()
        amplify(model)
        randomise_batch_norms(model, torch.Generator().manual_seed(100 + seed))
        path = os.path.join(HERE, f"{name}.onnx")
        export(model, shape, path, output, metadata)
        rng = np.random.default_rng(1000 + seed)
        images = rng.integers(0, 256, size=(IMAGES,) + (shape if shape[0] == 3 else shape[1:]),
                              dtype=np.uint8)
        write_idx(os.path.join(HERE, f"{name}.images.idx"), images)
        inputs, probs = expected(model, images, *(norm or (None, None)), softmaxed)
        pre = "pixel / 255.0" + (", then (x - mean[c]) / std[c] with the .onnx's metadata mean "
                                 "and std" if norm else "")
        write_expected(os.path.join(HERE, f"{name}.expected"), name, probs, pre, softmaxed)
        check(name, path, inputs, probs, softmaxed)

    for name, seed, gain, dynamic_batch in GRAPH_NETWORKS:
        write_graph_network(HERE, name, seed, gain, dynamic_batch, "script")


def write_elsewhere(out, exporter):
    """--out: the graph-shaped networks with the exporter named, into out. A network that fails is
    reported and skipped. Returns the exit status."""
    os.makedirs(out, exist_ok=True)
    print(f"PyTorch {torch.__version__}, onnx {onnx.__version__}, exporter {exporter}")
    failed = []
    for name, seed, gain, dynamic_batch in GRAPH_NETWORKS:
        try:
            write_graph_network(out, name, seed, gain, dynamic_batch, exporter)
        except NotImplementedError as e:
            print(f"{name}: the evaluator cannot run {name}.onnx: {e}")
            path = os.path.join(out, f"{name}.onnx")
            if os.path.exists(path):
                print("  " + op_counts(onnx.load(path)))
            failed.append(name)
        except Exception as e:  # an export or a check that fails: the next network all the same
            print(f"{name}: FAILED: {type(e).__name__}: {e}")
            traceback.print_exc(limit=4)
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(
        description="Writes the ONNX test models of tests/onnx/ with their images and PyTorch's "
                    "probabilities; with --out, only the graph-shaped networks of nets.py, with "
                    "the exporter chosen, elsewhere.")
    parser.add_argument("--out", metavar="DIR",
                        help="write the graph-shaped networks into DIR instead (PyTorch 2.x)")
    parser.add_argument("--exporter", choices=("script", "dynamo", "dynamo-optimized"),
                        help="with --out: torch.onnx.export(dynamo=False), TorchScript, opset "
                             f"{SCRIPT_OPSET}; dynamo=True, torch.export, opset {DYNAMO_OPSET}, "
                             "optimize=False (BatchNormalization kept); the same with "
                             "optimize=True, the exporter's default (BatchNormalization folded)")
    args = parser.parse_args()
    if (args.out is None) != (args.exporter is None):
        parser.error("--out and --exporter go together")
    torch.set_num_threads(1)
    if args.out is not None:
        sys.exit(write_elsewhere(args.out, args.exporter))
    try:
        write_committed()
    except (ValueError, NotImplementedError) as e:
        raise SystemExit(str(e))


if __name__ == "__main__":
    main()
