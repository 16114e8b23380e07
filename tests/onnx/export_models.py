#!/usr/bin/env python3
"""Writes the ONNX test models of tests/onnx/ and, for each, its test images and the probabilities
PyTorch computes for them.

Run from the repository root, with Debian's python3-torch and python3-onnx (/usr/bin/python3):

    python3 tests/onnx/export_models.py

For each network NAME it writes, into tests/onnx/:

  NAME.onnx          torch.onnx.export's output: opset 13, float32, batch fixed at 1 (input
                     "input" [1, C, H, W], static shapes), exported from the model in eval mode
                     (training=TrainingMode.PRESERVE, so that BatchNormalization stays a node of its
                     own instead of being folded into the Conv before it), checked by onnx.checker
  NAME.images.idx    7 random images, uint8 uniform in 0..255: an IDX file (big-endian header: two
                     zero bytes, type 0x08, the number of dimensions, each dimension as a uint32),
                     [n, h, w] for one channel, [n, 3, h, w] planar for RGB
  NAME.expected      text: '#' comment lines, then one line an image, its class probabilities as
                     comma-separated %.17g numbers, computed by PyTorch in float64 (model.double(),
                     input pixel / 255.0, and for RGB then (x - mean[c]) / std[c]), softmax over
                     the logits (mlp-sigmoid ends in its own softmax)

The networks (weights: PyTorch's default initialisation from fixed seeds, the Conv and Linear
weights then times 3 so that the probabilities vary from image to image; BatchNorm layers get
random running means in -0.5..0.5, variances in 0.5..2, weights in 0.5..1.5 and biases in
-0.5..0.5):

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

Seeds are fixed (torch.manual_seed, numpy's default_rng): a rerun writes the same files. Each
.onnx is then run by this script's own float64 numpy evaluator of the ONNX operators, whose
probabilities must match the .expected ones (to 1e-8: the ONNX file holds float32 attributes
such as epsilon, alpha and the Clip bounds), and the graph's operators are printed.
"""
import os
import struct
import sys
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
import train  # noqa: E402  (datasets/train.py: LeNet and the reading of a model directory)

IMAGES = 7
CIFAR_MEAN = [0.4914, 0.4822, 0.4465]
CIFAR_STD = [0.2470, 0.2435, 0.2616]
CIFAR_LABELS = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                "truck"]


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
                          training=torch.onnx.TrainingMode.PRESERVE)
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


# ---- a float64 numpy evaluator of the ONNX operators these models use, to check the files ----

def _pad4(x, pads, value=0.0):
    """x [N, C, H, W] padded by ONNX pads [top, left, bottom, right]."""
    return np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                  constant_values=value)


def _windows(x, kernel, strides):
    """[N, C, OH, OW, KH, KW] views of the pooling / convolution windows of x [N, C, H, W]."""
    n, c, h, w = x.shape
    oh = (h - kernel[0]) // strides[0] + 1
    ow = (w - kernel[1]) // strides[1] + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kernel[0], kernel[1]),
        (s[0], s[1], s[2] * strides[0], s[3] * strides[1], s[2], s[3]), writeable=False)


def evaluate(model, x):
    """The graph's output for input x, in float64."""
    values = {}
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        values[t.name] = a.astype(np.float64) if a.dtype == np.float32 else a
    values[model.graph.input[0].name] = np.asarray(x, dtype=np.float64)
    for node in model.graph.node:
        at = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        x = [values[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Constant":
            a = numpy_helper.to_array(at["value"])
            y = a.astype(np.float64) if a.dtype == np.float32 else a
        elif op == "Identity":
            y = x[0]
        elif op == "Conv":
            assert at.get("group", 1) == 1 and list(at.get("dilations", [1, 1])) == [1, 1]
            w = x[1]
            win = _windows(_pad4(x[0], at.get("pads", [0] * 4)), w.shape[2:], at.get("strides", [1, 1]))
            y = np.einsum("nchwij,ocij->nohw", win, w)
            if len(x) > 2:
                y = y + x[2].reshape(1, -1, 1, 1)
        elif op == "MaxPool":
            assert at.get("ceil_mode", 0) == 0
            y = _windows(_pad4(x[0], at.get("pads", [0] * 4), -np.inf), at["kernel_shape"],
                         at.get("strides", [1, 1])).max(axis=(4, 5))
        elif op == "AveragePool":
            assert at.get("ceil_mode", 0) == 0
            pads = at.get("pads", [0] * 4)
            assert at.get("count_include_pad", 0) == 1 or not any(pads)
            y = _windows(_pad4(x[0], pads), at["kernel_shape"], at.get("strides", [1, 1])).mean(axis=(4, 5))
        elif op == "Pad":
            assert at.get("mode", b"constant") in (b"constant", "constant")
            r = len(x[1]) // 2
            value = float(x[2]) if len(x) > 2 and x[2] is not None else 0.0
            y = np.pad(x[0], [(int(x[1][i]), int(x[1][i + r])) for i in range(r)], constant_values=value)
        elif op == "Flatten":
            y = x[0].reshape(int(np.prod(x[0].shape[:at.get("axis", 1)])), -1)
        elif op == "Gemm":
            a = x[0].T if at.get("transA", 0) else x[0]
            b = x[1].T if at.get("transB", 0) else x[1]
            y = at.get("alpha", 1.0) * (a @ b)
            if len(x) > 2:
                y = y + at.get("beta", 1.0) * x[2]
        elif op == "MatMul":
            y = x[0] @ x[1]
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "Relu":
            y = np.maximum(x[0], 0.0)
        elif op == "Tanh":
            y = np.tanh(x[0])
        elif op == "Sigmoid":
            y = 1.0 / (1.0 + np.exp(-x[0]))
        elif op == "LeakyRelu":
            y = np.where(x[0] >= 0, x[0], at.get("alpha", 0.01) * x[0])
        elif op == "Clip":
            lo = x[1] if len(x) > 1 and x[1] is not None else -np.inf
            hi = x[2] if len(x) > 2 and x[2] is not None else np.inf
            y = np.minimum(np.maximum(x[0], lo), hi)
        elif op == "BatchNormalization":
            shape = (1, -1) + (1,) * (x[0].ndim - 2)
            scale, bias, mean, var = (v.reshape(shape) for v in x[1:5])
            y = (x[0] - mean) / np.sqrt(var + at.get("epsilon", 1e-5)) * scale + bias
        elif op == "Unsqueeze":
            y = x[0]
            for axis in sorted(int(a) for a in x[1]):
                y = np.expand_dims(y, axis)
        elif op == "Squeeze":
            y = np.squeeze(x[0], axis=tuple(int(a) for a in x[1]))
        elif op == "LRN":
            size = at["size"]
            c = x[0].shape[1]
            sq = np.pad(x[0] * x[0], ((0, 0), ((size - 1) // 2, size // 2)) + ((0, 0),) * (x[0].ndim - 2))
            total = sum(sq[:, i:i + c] for i in range(size))
            y = x[0] / (at.get("bias", 1.0) + at.get("alpha", 1e-4) / size * total) ** at.get("beta", 0.75)
        elif op == "Softmax":
            axis = at.get("axis", -1)
            e = np.exp(x[0] - x[0].max(axis=axis, keepdims=True))
            y = e / e.sum(axis=axis, keepdims=True)
        else:
            raise NotImplementedError(f"evaluate: {op}")
        values[node.output[0]] = y
    return values[model.graph.output[0].name]


def check(name, path, inputs, probs, ends_in_softmax):
    m = onnx.load(path)
    onnx.checker.check_model(m)
    worst = 0.0
    for i in range(len(inputs)):
        y = evaluate(m, inputs[i:i + 1])
        if not ends_in_softmax:
            e = np.exp(y - y.max())
            y = e / e.sum()
        worst = max(worst, float(np.abs(y[0] - probs[i]).max()))
    if worst > 1e-8:  # float32 attributes: LeakyRelu alpha 0.1 is off by 1.5e-9 (6e-10 here)
        raise SystemExit(f"{name}: the ONNX file's probabilities differ from PyTorch's by {worst:.3g}")
    print(f"{name}: opset {m.opset_import[0].version}, {os.path.getsize(path)} bytes, "
          f"numpy evaluation of the .onnx within {worst:.2g} of PyTorch float64")
    print("  " + " ".join(n.op_type for n in m.graph.node))


def main():
    networks = [
        # name, constructor, input shape, output name, ends in softmax, RGB normalisation, metadata
        ("lenet-bn-avg", LeNetBnAvg, (1, 28, 28), "logits", False, None, {}),
        ("rgb-stride", RgbStride, (3, 32, 32), "logits", False, (CIFAR_MEAN, CIFAR_STD), {
            "mean": ",".join(f"{v:.4f}" for v in CIFAR_MEAN),
            "std": ",".join(f"{v:.4f}" for v in CIFAR_STD),
            "labels": "\n".join(CIFAR_LABELS)}),
        ("mlp-sigmoid", MlpSigmoid, (1, 28, 28), "probabilities", True, None, {}),
    ]
    torch.set_num_threads(1)

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


if __name__ == "__main__":
    main()
