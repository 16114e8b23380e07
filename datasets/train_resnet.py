#!/usr/bin/env python3
"""Trains a small ResNet on Fashion-MNIST and writes it as a ttapipe model directory.

The network (default --widths 16,40,80 --blocks 1,2,2): a stem conv 3x3 1->16 + BN + ReLU at
28x28, then three stages of basic blocks (conv 3x3 - BN - ReLU - conv 3x3 - BN, plus the
shortcut, ReLU) of 16 channels at 28x28, 40 at 14x14 and 80 at 7x7; the first block of stages 2
and 3 halves the side with its stride-2 first conv, its shortcut a 1x1 conv stride 2 + BN (the
identity elsewhere); then a global average pool, flatten and a fully connected layer 80->10:
261,258 parameters and 23.5 M multiply-adds an image, kept under 25 M for ttapipe's CPU engine,
which classifies the 10,000 test images, with test-time augmentation, on two cores. The input is
(pixel/255 - mean) / std, mean and std those of the training images (rounded to 3 digits); white
strokes on black, as the IDX files hold them.

Training is CIFAR-style: SGD with Nesterov momentum 0.9, weight decay 5e-4, a one-cycle schedule,
label smoothing 0.1, random crops (zero padding of --pad pixels, i.e. shifts with black coming in)
and horizontal flips, on the 60,000 training images only, for a fixed number of epochs: the test
set is looked at once, at the end (no model selection on it). On CUDA the images live on the GPU
as uint8, are augmented there a batch at a time, and the network runs in bf16 autocast with
channels_last; on the CPU everything is float32 and, with fixed seeds, repeatable.

The evaluation is float32, eval mode, on the CPU whatever the training device: it gives the
reference that ttapipe's CPU engine is checked against. The directory it writes (default
models/resnet-fashion):

  model.onnx     torch.onnx.export of the eval-mode network: opset 17, float32, input "input"
                 [batch, 1, 28, 28] (batch dynamic), output "logits" [batch, 10]; BatchNorm is
                 folded into the convs by the exporter; metadata_props "labels" (the class names,
                 one a line), "mean" and "std" (the input scaling, which ttapipe applies: it is
                 not in the graph)
  labels.txt     the class names, one a line
  reference.csv  this script's own evaluation, as datasets/train.py writes it: the number of test
                 images right and the softmax outputs of the first --reference test images, which
                 tests/e2e/test_models.c checks ttapipe's CPU engine against
  README.md      how it was trained and what it scores

    python3 datasets/train_resnet.py --data /usr/share/datasets/fashion-mnist \\
        --out models/resnet-fashion

A quick check of the whole script on the CPU (a subset, one epoch):

    python3 datasets/train_resnet.py --data /usr/share/datasets/fashion-mnist --epochs 1 \\
        --limit 2000 --out /tmp/rf

Works with Debian's python3-torch (1.13) on the CPU and with the GPU machine's PyTorch (2.x).
"""
import argparse
import copy
import inspect
import os
import sys
import time
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# The IDX reading, the file lookup and the class names are train.py's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import LABELS, find, read_idx  # noqa: E402

# The basic block (with its 1x1-conv shortcut, option "B") of the test networks' module.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx"))
from nets import BasicBlock  # noqa: E402

SIDE = 28
CLASSES = 10


class ResNet(nn.Module):
    """Stem conv 3x3 + BN + ReLU, stages of basic blocks (each stage after the first starts with
    a stride-2 block), global average pool, flatten, fully connected layer."""

    def __init__(self, widths, blocks):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True))
        layers, cin = [], widths[0]
        for stage, (width, count) in enumerate(zip(widths, blocks)):
            for k in range(count):
                layers.append(BasicBlock(cin, width, 2 if stage > 0 and k == 0 else 1, "B"))
                cin = width
        self.blocks = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)  # exported as GlobalAveragePool
        self.fc = nn.Linear(cin, CLASSES)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):  # He initialisation, as torchvision's ResNets
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        for block in layers:
            # Each residual branch starts at zero (its last BN's scale 0): every block begins as
            # the identity (or its shortcut), which trains faster and steadier.
            nn.init.zeros_(block.bn2.weight)

    def forward(self, x):  # logits; softmax is applied where probabilities are wanted
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def count_macs(model):
    """Multiply-adds of the convolutions and fully connected layers for one image."""
    macs = []

    def hook(module, inputs, output):
        if isinstance(module, nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
            macs.append(output[0].numel() * k)
        else:
            macs.append(module.in_features * module.out_features)

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (nn.Conv2d, nn.Linear))]
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 1, SIDE, SIDE))
    model.train(was_training)
    for h in handles:
        h.remove()
    return sum(macs)


def augment(padded, idx, pad, flip, generator):
    """A random SIDE x SIDE crop of each padded image (a shift of -pad..pad pixels each way),
    mirrored left-right with probability 1/2 when flip: one gather for the whole batch, on the
    images' device. padded: [N, SIDE + 2 pad, SIDE + 2 pad] uint8; idx: the batch's indices."""
    n, device = len(idx), padded.device
    ar = torch.arange(SIDE, device=device)
    dy = torch.randint(0, 2 * pad + 1, (n, 1), generator=generator, device=device)
    dx = torch.randint(0, 2 * pad + 1, (n, 1), generator=generator, device=device)
    rows = dy + ar
    cols = dx + ar
    if flip:
        mirror = torch.randint(0, 2, (n, 1), generator=generator, device=device).bool()
        cols = torch.where(mirror, dx + (SIDE - 1) - ar, cols)  # the columns read right to left
    return padded[idx[:, None, None], rows[:, :, None], cols[:, None, :]]


def scaled(images, mean, std):
    """uint8 [N, SIDE, SIDE] -> float32 [N, 1, SIDE, SIDE], (pixel/255 - mean) / std: the
    scaling that ttapipe applies from the model's metadata."""
    return ((images.float() / 255.0 - mean) / std).unsqueeze(1)


def onnx_export(model, path, opset):
    """torch.onnx.export of model (CPU, float32, eval mode) with a dynamic batch; the TorchScript
    exporter (dynamo=False) where PyTorch has both."""
    import warnings

    kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    with torch.no_grad(), warnings.catch_warnings():
        # the TorchScript exporter's deprecation notice in PyTorch 2.x
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        torch.onnx.export(model, torch.zeros(1, 1, SIDE, SIDE), path, opset_version=opset,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                          **kwargs)


def write_onnx(model, path, labels, mean, std):
    """The network as ONNX with its class names and input scaling in metadata_props; checked by
    onnx.checker. Returns the graph's op types (Counter) and its number of weights."""
    import onnx  # only needed here (Debian's python3-onnx; the GPU machine's onnx)

    onnx_export(model, path, 17)
    m = onnx.load(path)
    m.metadata_props.add(key="labels", value="\n".join(labels))
    m.metadata_props.add(key="mean", value=mean)
    m.metadata_props.add(key="std", value=std)
    onnx.checker.check_model(m, full_check=True)
    kinds = {t.data_type for t in m.graph.initializer}
    if kinds - {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64}:
        raise SystemExit(f"{path}: initializers of types {sorted(kinds)}, float32 expected")
    onnx.save(m, path)
    weights = sum(int(np.prod(t.dims)) for t in m.graph.initializer
                  if t.data_type == onnx.TensorProto.FLOAT)
    return Counter(n.op_type for n in m.graph.node), m.opset_import[0].version, weights


def onnxruntime_check(path, inputs, probs):
    """Where onnxruntime is installed: its probabilities for inputs against probs (PyTorch's),
    as (max absolute difference, number of images whose top class differs); else None."""
    try:
        import onnxruntime
    except ImportError:
        return None
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    logits = np.concatenate([session.run(None, {"input": inputs[i:i + 1000].numpy()})[0]
                             for i in range(0, len(inputs), 1000)])
    theirs = torch.softmax(torch.from_numpy(logits), dim=1)
    return (float((theirs - probs).abs().max()),
            int((theirs.argmax(1) != probs.argmax(1)).sum()))


def ints(text):
    return [int(v) for v in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="folder of Fashion-MNIST's IDX files (default %(default)s)")
    ap.add_argument("--out", default="models/resnet-fashion", help="model directory written")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="training device (default cuda if there is one, else cpu)")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2, help="peak of the one-cycle schedule")
    ap.add_argument("--wd", type=float, default=5e-4, help="weight decay")
    ap.add_argument("--smoothing", type=float, default=0.1, help="label smoothing")
    ap.add_argument("--pad", type=int, default=2,
                    help="random crops from the image zero-padded by this many pixels (0: none)")
    ap.add_argument("--no-flip", dest="flip", action="store_false",
                    help="no random horizontal flips")
    ap.add_argument("--widths", type=ints, default=[16, 40, 80], help="channels of each stage")
    ap.add_argument("--blocks", type=ints, default=[1, 2, 2], help="basic blocks of each stage")
    ap.add_argument("--fp32", action="store_true",
                    help="train in float32 on CUDA too (default there: bf16 autocast)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, help="train on the first LIMIT training images only "
                    "(a quick check of the script; the test set is evaluated whole)")
    ap.add_argument("--reference", type=int, default=100, help="test images in reference.csv")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads")
    args = ap.parse_args()
    if len(args.widths) != len(args.blocks) or min(args.blocks) < 1:
        ap.error("--widths and --blocks need one value a stage, at least one block each")

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    torch.manual_seed(args.seed)  # the initial weights: made on the CPU, the same on any device
    torch.set_num_threads(args.threads)
    if cuda:
        torch.backends.cudnn.benchmark = True  # fastest conv algorithms (not bit-repeatable)
    else:
        torch.use_deterministic_algorithms(True)
    generator = torch.Generator(device=device).manual_seed(args.seed)

    train_x = read_idx(find(args.data, "train", "images"))
    train_y = read_idx(find(args.data, "train", "labels"))
    test_x = read_idx(find(args.data, "t10k", "images"))
    test_y = read_idx(find(args.data, "t10k", "labels"))
    n = min(args.limit or len(train_x), len(train_x))
    train_x, train_y = train_x[:n], train_y[:n]

    # The input scaling, from the training images only, rounded to 3 digits: the same text goes
    # into the metadata, and its value is what training and evaluation use, so that ttapipe
    # (which parses the text) feeds the network exactly what it was trained and checked on.
    pixels = train_x.astype(np.float64) / 255.0
    mean_text, std_text = f"{pixels.mean():.3f}", f"{pixels.std():.3f}"
    mean, std = float(mean_text), float(std_text)
    del pixels

    model = ResNet(args.widths, args.blocks)
    params = sum(p.numel() for p in model.parameters())
    macs = count_macs(model)
    sides = [SIDE]  # each stage after the first halves the side (3x3 conv, stride 2, pad 1)
    for _ in args.widths[1:]:
        sides.append((sides[-1] + 1) // 2)
    arch = (f"stem conv 3x3 1->{args.widths[0]} + BN + ReLU; " +
            "; ".join(f"{b} basic block{'s' if b > 1 else ''} of {w} channels at {h}x{h}"
                      for w, b, h in zip(args.widths, args.blocks, sides)) +
            f"; global average pool; FC {args.widths[-1]}->{CLASSES}")
    print(f"network: {arch}")
    print(f"{params:,} parameters, {macs:,} multiply-adds an image (convs and FC)")

    # The training images on the device as uint8, zero-padded once for the random crops.
    x = torch.from_numpy(train_x.copy()).to(device)
    if args.pad:
        x = F.pad(x, (args.pad,) * 4)
    y = torch.from_numpy(train_y.astype(np.int64)).to(device)

    model.to(device)
    if cuda:
        model.to(memory_format=torch.channels_last)
    amp = cuda and not args.fp32
    steps = (n + args.batch - 1) // args.batch
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                weight_decay=args.wd)
    # Momentum stays 0.9 (cycle_momentum off): one-cycle changes the learning rate only.
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                   steps_per_epoch=steps, cycle_momentum=False)
    if cuda:
        torch.cuda.synchronize()
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(n, generator=generator, device=device)
        total = torch.zeros((), device=device)  # summed on the device: one sync an epoch
        for i in range(steps):
            idx = order[i * args.batch:(i + 1) * args.batch]
            if args.pad or args.flip:
                batch = augment(x, idx, args.pad, args.flip, generator)
            else:
                batch = x[idx]
            inputs = scaled(batch, mean, std)
            if cuda:
                inputs = inputs.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                logits = model(inputs)
            loss = F.cross_entropy(logits.float(), y[idx], label_smoothing=args.smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.detach() * len(idx)
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total.item() / n:.4f}, "
              f"{time.time() - start:.1f} s", flush=True)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.time() - start
    if cuda:
        where = f"one {torch.cuda.get_device_name(device)}, " + (
            "bf16 autocast, channels_last" if amp else "float32, channels_last")
    else:
        where = f"{args.threads} CPU thread(s), float32"
    print(f"trained in {seconds:.1f} s on {where}")

    # The evaluation: float32, eval mode, on the CPU.
    model = copy.deepcopy(model).cpu().float().to(memory_format=torch.contiguous_format).eval()
    tx = scaled(torch.from_numpy(test_x.copy()), mean, std)
    ty = torch.from_numpy(test_y.astype(np.int64))
    with torch.no_grad():
        probs = torch.cat([F.softmax(model(tx[i:i + 1000]), dim=1) for i in range(0, len(tx), 1000)])
    correct = int((probs.argmax(1) == ty).sum())
    accuracy = 100.0 * correct / len(tx)
    top2 = probs.topk(2, dim=1).values
    gap = top2[:, 0] - top2[:, 1]
    print(f"accuracy on the {len(tx)} test images (float32, CPU, no TTA): {accuracy:.2f}% "
          f"({correct} of {len(tx)}); closest call: top two probabilities {float(gap.min()):.2g} "
          f"apart, {int((gap < 1e-4).sum())} image(s) under 1e-4")

    labels = LABELS["fashion"]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "labels.txt"), "w") as f:
        f.write("\n".join(labels) + "\n")
    onnx_path = os.path.join(args.out, "model.onnx")
    ops, opset, weights = write_onnx(model, onnx_path, labels, mean_text, std_text)
    print(f"wrote {onnx_path}: opset {opset}, {weights:,} float32 weights, "
          f"{os.path.getsize(onnx_path):,} bytes; nodes: " +
          ", ".join(f"{op} x{k}" for op, k in sorted(ops.items())))
    check = onnxruntime_check(onnx_path, tx, probs)
    print("onnxruntime: not installed, not checked" if check is None else
          f"onnxruntime against PyTorch: probabilities within {check[0]:.2g}, "
          f"{check[1]} top class(es) differ")

    rows = min(args.reference, len(tx))
    with open(os.path.join(args.out, "reference.csv"), "w") as f:
        f.write(f"# train_resnet.py's own evaluation, PyTorch {torch.__version__}, float32\n")
        f.write(f"accuracy,t10k,0,{len(tx)},{correct}\n")
        for i in range(rows):
            f.write(f"{i}," + ",".join(f"{p:.9g}" for p in probs[i].tolist()) + "\n")

    name = os.path.basename(os.path.normpath(args.out))
    augmentation = ", ".join(
        ([f"random crops of the image zero-padded by {args.pad} pixels (shifts of up to "
          f"{args.pad} pixels, black coming in)"] if args.pad else []) +
        (["random horizontal flips"] if args.flip else [])) or "none"
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(f"""# {name}

A small ResNet trained on Fashion-MNIST by `datasets/train_resnet.py`.

| | |
| --- | --- |
| command | `python3 {' '.join(sys.argv)}` |
| data | `{os.path.basename(os.path.normpath(args.data))}`: trained on train images 0..{n - 1}; evaluated on t10k images 0..{len(tx) - 1} |
| network | {arch}; basic block: conv 3x3 - BN - ReLU - conv 3x3 - BN, + shortcut (1x1 conv stride 2 + BN where the side halves), ReLU |
| size | {params:,} parameters, {macs:,} multiply-adds an image |
| input | (pixel/255 - {mean_text}) / {std_text} (the training images' mean and std), in the ONNX metadata |
| training | {args.epochs} epochs, batch {args.batch}, SGD with Nesterov momentum 0.9, weight decay {args.wd:g}, one-cycle schedule peaking at {args.lr:g}, label smoothing {args.smoothing:g}, seed {args.seed} |
| augmentation | {augmentation} |
| time | {seconds:.0f} s on {where}, PyTorch {torch.__version__} |
| accuracy | {accuracy:.2f}% ({correct} of {len(tx)}), float32 on the CPU, no TTA |

Files: `labels.txt`; `model.onnx` (`torch.onnx.export` of the eval-mode network, opset {opset},
float32, input "input" [batch, 1, 28, 28] with a dynamic batch, output "logits" [batch, 10],
BatchNorm folded into the convs by the exporter; the class names in `metadata_props` "labels",
the input scaling in "mean" and "std", which ttapipe applies); and `reference.csv`: the script's
own evaluation (the number of correct images and the softmax outputs of the first {rows} test
images), which `tests/e2e/test_models.c` checks ttapipe's CPU engine against.
""")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
