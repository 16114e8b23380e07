#!/usr/bin/env python3
"""Trains NVIDIA's mnistCUDNN LeNet and writes it as a ttapipe model directory.

The network is exactly the sample's (shared/datasets/README.md): conv1 1->20 5x5 + bias ->
max-pool 2x2/2 -> conv2 20->50 5x5 + bias -> max-pool 2x2/2 -> flatten (c, h, w) -> ip1 800->500
+ bias -> ReLU -> LRN across the 500 channels (n=5, alpha=1e-4, beta=0.75, k=1) -> ip2 500->10 +
bias -> softmax; input pixel/255, white strokes on black. The directory it writes holds the raw
little-endian float32 files of the mnistCUDNN layout, labels.txt, model.onnx (the same network
and weights as ONNX, see below), a README with the command line, data, epochs, time and
accuracy, and reference.csv: this script's own evaluation (the accuracy and the softmax outputs
of the first held-out images), which tests/e2e/test_models.c checks ttapipe's CPU engine against.

    python3 datasets/train.py --data ../shared/datasets/mnist --train 0:8000 --test 8000:10000 \
        --epochs 15 --shift 2 --labels digits --out models/lenet-mnist
    python3 datasets/train.py --data /usr/share/datasets/fashion-mnist --train-set train \
        --epochs 12 --labels fashion --out models/lenet-fashion

With --from DIR nothing is trained: the weights are read from DIR's mnistCUDNN .bin files and the
class names from DIR/labels.txt, and only DIR/model.onnx is (re)written; the other files are left
alone (--data and --labels are not needed):

    python3 datasets/train.py --from models/lenet-mnist

model.onnx is torch.onnx.export's output, opset 13, float32, batch fixed at 1 (input "input"
[1,1,28,28], output "logits" [1,10], static shapes), with the class names in its metadata_props
entry "labels" (one a line, as labels.txt). The LRN is written as ONNX's own LRN node (PyTorch
would write local_response_norm as a subgraph of Mul, Pad, AveragePool, Pow and Div): the ip1
output [1,500] becomes [1,500,1,1] through one Unsqueeze (axes 2, 3), then LRN, then one Squeeze
(axes 2, 3) back to [1,500].

Works with Debian's python3-torch on the CPU (/usr/bin/python3) and with the GPU machine's
PyTorch. Seeds are fixed; on the CPU a run is repeatable.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LABELS = {
    "digits": [str(d) for d in range(10)],
    "fashion": ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                "Sneaker", "Bag", "Ankle boot"],
}


def read_idx(path):
    """An IDX file of unsigned bytes (plain or gzip) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, dims = struct.unpack(">HBB", data[:4])
    if zero != 0 or kind != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {body.size} bytes for the declared {shape}")
    return body.reshape(shape)


def find(data_dir, kind, what):
    """data_dir/<kind>-<what>-idx?-ubyte[.gz]: kind is train or t10k, what images or labels."""
    for name in os.listdir(data_dir):
        if name.startswith(f"{kind}-{what}-idx"):
            return os.path.join(data_dir, name)
    raise FileNotFoundError(f"no {kind}-{what} IDX file in {data_dir}")


class ChannelLRN(torch.autograd.Function):
    """local_response_norm across the channels of [N, C], exported as one ONNX LRN node.

    forward and backward compute what F.local_response_norm on the [N, C, 1] view computes (the
    backward recomputes it under autograd), so training is unchanged. The ONNX export writes
    Unsqueeze (axes 2, 3) -> LRN -> Squeeze (axes 2, 3), the [N, C, 1, 1] form that ONNX's LRN takes.
    The axes are given as Constant nodes (an input of Unsqueeze and Squeeze from opset 13 on).
    Both conventions divide alpha by size: x / (k + alpha / size * sum of squares) ** beta.
    """

    @staticmethod
    def _lrn(x, size, alpha, beta, k):
        return F.local_response_norm(x.unsqueeze(2), size=size, alpha=alpha, beta=beta, k=k).squeeze(2)

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        ctx.save_for_backward(x)
        ctx.params = (size, alpha, beta, k)
        return ChannelLRN._lrn(x, size, alpha, beta, k)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            y = ChannelLRN._lrn(x, *ctx.params)
        (dx,) = torch.autograd.grad(y, x, grad)
        return dx, None, None, None, None

    @staticmethod
    def symbolic(g, x, size, alpha, beta, k):
        def axes():  # one Constant node for each use, as PyTorch's own exports write them
            return g.op("Constant", value_t=torch.tensor([2, 3], dtype=torch.int64))

        y = g.op("LRN", g.op("Unsqueeze", x, axes()), size_i=size, alpha_f=alpha, beta_f=beta, bias_f=k)
        return g.op("Squeeze", y, axes())


class LeNet(nn.Module):
    """The mnistCUDNN network."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.ip1 = nn.Linear(800, 500)
        self.ip2 = nn.Linear(500, 10)

    def forward(self, x):  # logits; softmax is applied where probabilities are wanted
        x = F.max_pool2d(self.conv1(x), 2, 2)
        x = F.max_pool2d(self.conv2(x), 2, 2)
        x = F.relu(self.ip1(x.flatten(1)))
        x = ChannelLRN.apply(x, 5, 1e-4, 0.75, 1.0)
        return self.ip2(x)


def shifted(batch, shift, generator):
    """Each image moved by a random dx, dy in -shift..shift, black coming in."""
    if shift == 0:
        return batch
    n = batch.shape[0]
    padded = F.pad(batch, (shift, shift, shift, shift))
    d = torch.randint(0, 2 * shift + 1, (n, 2), generator=generator)
    return torch.stack([padded[i, :, d[i, 0]:d[i, 0] + 28, d[i, 1]:d[i, 1] + 28] for i in range(n)])


def write_model(model, out, labels):
    os.makedirs(out, exist_ok=True)
    for name, tensor in [("conv1", model.conv1), ("conv2", model.conv2), ("ip1", model.ip1),
                         ("ip2", model.ip2)]:
        tensor.weight.detach().numpy().astype("<f4").tofile(os.path.join(out, f"{name}.bin"))
        tensor.bias.detach().numpy().astype("<f4").tofile(os.path.join(out, f"{name}.bias.bin"))
    with open(os.path.join(out, "labels.txt"), "w") as f:
        f.write("\n".join(labels) + "\n")
    write_onnx(model, os.path.join(out, "model.onnx"), labels)


def write_onnx(model, path, labels):
    """The network as ONNX (opset 13, float32 on the CPU, batch 1, static shapes) with its class
    names in metadata_props "labels"."""
    import warnings

    import onnx  # only needed here: Debian's python3-onnx

    model = model.cpu().float().eval()
    with torch.no_grad(), warnings.catch_warnings():
        # PyTorch 1.13 warns (FutureWarning) that g.op, which ChannelLRN.symbolic calls, will
        # move in 1.14; it works in 1.13
        warnings.filterwarnings("ignore", message=".*_graph_op.*")
        torch.onnx.export(model, torch.zeros(1, 1, 28, 28), path, opset_version=13,
                          input_names=["input"], output_names=["logits"])
    m = onnx.load(path)
    m.metadata_props.add(key="labels", value="\n".join(labels))
    onnx.checker.check_model(m)
    onnx.save(m, path)


def read_model(directory):
    """A LeNet with the weights of a model directory's mnistCUDNN .bin files, and its class names."""
    model = LeNet()
    for name, layer in [("conv1", model.conv1), ("conv2", model.conv2), ("ip1", model.ip1),
                        ("ip2", model.ip2)]:
        for suffix, param in [("", layer.weight), (".bias", layer.bias)]:
            path = os.path.join(directory, f"{name}{suffix}.bin")
            data = np.fromfile(path, dtype="<f4")
            if data.size != param.numel():
                raise SystemExit(f"{path}: {data.size} floats, {param.numel()} expected")
            with torch.no_grad():
                param.copy_(torch.from_numpy(data.astype(np.float32)).reshape(param.shape))
    with open(os.path.join(directory, "labels.txt")) as f:
        labels = f.read().splitlines()
    if len(labels) != 10:
        raise SystemExit(f"{directory}/labels.txt: {len(labels)} lines, 10 expected")
    return model.eval(), labels


def parse_range(text, n):
    a, b = text.split(":")
    a, b = int(a or 0), int(b or n)
    if not 0 <= a < b <= n:
        raise ValueError(f"range {text} outside 0..{n}")
    return a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="from_dir", metavar="DIR",
                    help="train nothing: write DIR/model.onnx from DIR's .bin files and labels.txt")
    ap.add_argument("--data", help="folder of the IDX files")
    ap.add_argument("--train-set", default="t10k", choices=["train", "t10k"],
                    help="the IDX set trained on (default t10k: MNIST's training set is not here)")
    ap.add_argument("--train", default=":", help="range of the training set, A:B (default all)")
    ap.add_argument("--test", default=":", help="range of the t10k set evaluated on (default all)")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05, help="peak of the one-cycle schedule")
    ap.add_argument("--shift", type=int, default=0, help="random shifts of up to this many pixels")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--labels", choices=sorted(LABELS))
    ap.add_argument("--reference", type=int, default=100, help="held-out images in reference.csv")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.from_dir:
        model, labels = read_model(args.from_dir)
        write_onnx(model, os.path.join(args.from_dir, "model.onnx"), labels)
        print(f"wrote {os.path.join(args.from_dir, 'model.onnx')}")
        return
    missing = [f"--{n}" for n in ("data", "labels", "out") if getattr(args, n) is None]
    if missing:
        ap.error(f"{', '.join(missing)} required (or --from DIR)")

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    generator = torch.Generator().manual_seed(args.seed)

    train_x = read_idx(find(args.data, args.train_set, "images"))
    train_y = read_idx(find(args.data, args.train_set, "labels"))
    test_x = read_idx(find(args.data, "t10k", "images"))
    test_y = read_idx(find(args.data, "t10k", "labels"))
    a, b = parse_range(args.train, len(train_x))
    c, d = parse_range(args.test, len(test_x))
    if args.train_set == "t10k" and not (b <= c or d <= a):
        raise SystemExit("the training and test ranges overlap")
    x = torch.from_numpy(train_x[a:b].astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(train_y[a:b].astype(np.int64))
    tx = torch.from_numpy(test_x[c:d].astype(np.float32) / 255.0).unsqueeze(1)
    ty = torch.from_numpy(test_y[c:d].astype(np.int64))

    model = LeNet()
    steps = (len(x) + args.batch - 1) // args.batch
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                   steps_per_epoch=steps)
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(x), generator=generator)
        total = 0.0
        for i in range(steps):
            idx = order[i * args.batch:(i + 1) * args.batch]
            loss = F.cross_entropy(model(shifted(x[idx], args.shift, generator)), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.item() * len(idx)
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total / len(x):.4f}, "
              f"{time.time() - start:.0f} s", flush=True)
    seconds = time.time() - start

    model.eval()
    with torch.no_grad():
        probs = torch.cat([F.softmax(model(tx[i:i + 1000]), dim=1) for i in range(0, len(tx), 1000)])
    correct = int((probs.argmax(1) == ty).sum())
    accuracy = 100.0 * correct / len(tx)
    print(f"accuracy on t10k {c}..{d - 1}: {accuracy:.2f}% ({correct} of {len(tx)})")

    write_model(model, args.out, LABELS[args.labels])
    with open(os.path.join(args.out, "reference.csv"), "w") as f:
        f.write(f"# train.py's own evaluation, PyTorch {torch.__version__}, float32\n")
        f.write(f"accuracy,t10k,{c},{d},{correct}\n")
        for i in range(min(args.reference, len(tx))):
            f.write(f"{c + i}," + ",".join(f"{p:.9g}" for p in probs[i].tolist()) + "\n")
    name = os.path.basename(os.path.normpath(args.out))
    data = (f"{args.train_set} images {a}..{b - 1}" +
            (f", random shifts of up to {args.shift} pixels" if args.shift else ", no augmentation"))
    held_out = ("\nMNIST's own training set is not available where this model was made: it was trained "
                "on the first images of the MNIST test set and is evaluated on the rest of it, "
                "which it never saw.\n" if args.train_set == "t10k" else "")
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(f"""# {name}

NVIDIA's mnistCUDNN LeNet (the sample's exact network), trained by `datasets/train.py`.
{held_out}
| | |
| --- | --- |
| command | `python3 {' '.join(sys.argv)}` |
| data | `{os.path.basename(os.path.normpath(args.data))}`: trained on {data}; evaluated on t10k images {c}..{d - 1} |
| training | {args.epochs} epochs, batch {args.batch}, SGD with Nesterov momentum 0.9, weight decay 5e-4, one-cycle schedule peaking at {args.lr}, seed {args.seed} |
| time | {seconds:.0f} s on {args.threads} CPU thread(s), PyTorch {torch.__version__} |
| accuracy | {accuracy:.2f}% ({correct} of {len(tx)}) |

Files: the mnistCUDNN layout (raw little-endian float32: `conv1.bin`, `conv1.bias.bin`,
`conv2.bin`, `conv2.bias.bin`, `ip1.bin`, `ip1.bias.bin`, `ip2.bin`, `ip2.bias.bin`),
`labels.txt`, `model.onnx` (the same network and weights as ONNX: `torch.onnx.export`, opset 13,
float32, batch 1, the LRN as one `LRN` node, the class names in `metadata_props` "labels"; it
alone is rewritten by `python3 datasets/train.py --from DIR`), and `reference.csv`: the script's
own evaluation (the number of correct images and the softmax outputs of the first
{min(args.reference, len(tx))} held-out images), which
`tests/e2e/test_models.c` checks ttapipe's CPU engine against.
""")


if __name__ == "__main__":
    main()
