"""The PyTorch definitions of the graph-shaped test networks of tests/onnx/ (residual adds,
depthwise convolutions, concatenations, channel shuffles ...), for export_models.py and for any
other script that needs the same networks.

Importing this module only defines classes: it sets no seed, writes nothing and builds no model.
make(name) builds one network with PyTorch's default initialisation (the caller seeds torch
first to get the weights the committed files were made with: export_models.py does so, then
scales the weights and randomises the BatchNorm layers).

  resnet20          3x32x32  CIFAR ResNet-20 (He et al. 2016, section 4.2), projection shortcuts
                             (1x1 conv stride 2 + BN) where the shape changes
  resnet-option-a   3x32x32  CIFAR ResNet-14 with "option A" shortcuts: x[:, :, ::2, ::2] padded
                             with zero channels
  mobilenetv2       3x32x32  MobileNetV2-style inverted residuals (depthwise 3x3), two of them
                             with squeeze-and-excitation
  densenet          1x28x28  two dense blocks (concatenations), GELU, Hardswish, ReLU
  zoo               3x24x24  the remaining operators: channel shuffle and split, dilated, grouped
                             and asymmetrically padded convs, ceil-mode pooling, ELU, PReLU,
                             Softplus, Mish, SiLU, LeakyReLU, Sub and Div, a crop, GlobalMaxPool
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- ResNets for CIFAR ----

class LambdaLayer(nn.Module):
    """A module around a function (the option-A shortcut)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def option_a_shortcut(planes):
    """Every other row and column of x, then planes // 4 zero channels before and after: the
    parameter-free shortcut of the CIFAR ResNets (option A of He et al.)."""
    return LambdaLayer(lambda x: F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4),
                                       "constant", 0))


class BasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN, + the shortcut, ReLU. The shortcut is the identity where the
    shape stays, otherwise option "A" (option_a_shortcut) or "B" (1x1 conv stride 2 + BN)."""

    def __init__(self, cin, planes, stride, option):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != planes:
            if option == "A":
                self.shortcut = option_a_shortcut(planes)
            else:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False),
                                              nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """conv3x3 16, BN, ReLU; three stages of `blocks` BasicBlocks (16, 32, 64 channels, stride 2
    at the start of the second and third); global average pooling; Linear 64 -> 10. head "view":
    avg_pool2d over the whole map, then x.view(x.size(0), -1) (ResNet-20's usual code); head
    "flatten": adaptive_avg_pool2d(x, 1), then torch.flatten(x, 1)."""

    def __init__(self, blocks, option, head):
        super().__init__()
        self.head = head
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for stage, planes in enumerate((16, 32, 64)):
            stage_blocks = []
            for b in range(blocks):
                stride = 2 if stage > 0 and b == 0 else 1
                stage_blocks.append(BasicBlock(cin, planes, stride, option))
                cin = planes
            layers.append(nn.Sequential(*stage_blocks))
        self.layer1, self.layer2, self.layer3 = layers
        self.linear = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        if self.head == "view":
            x = F.avg_pool2d(x, int(x.size(3)))
            x = x.view(x.size(0), -1)
        else:
            x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.linear(x)


# ---- MobileNetV2-style ----

class SqueezeExcite(nn.Module):
    """x * hardsigmoid(conv(relu(conv(global average of x)))): an N x C x 1 x 1 gate."""

    def __init__(self, c, squeezed):
        super().__init__()
        self.reduce = nn.Conv2d(c, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.expand(F.relu(self.reduce(s))))
        return x * s


class InvertedResidual(nn.Module):
    """1x1 expand (ratio 4) + BN + ReLU6, 3x3 depthwise (stride 1 or 2) + BN + ReLU6, optional
    squeeze-and-excitation, 1x1 project + BN; + the input when the shape stays."""

    def __init__(self, cin, cout, stride, se):
        super().__init__()
        mid = 4 * cin
        self.expand = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.depthwise = nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.se = SqueezeExcite(mid, mid // 4) if se else None
        self.project = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = F.relu6(self.bn1(self.expand(x)))
        y = F.relu6(self.bn2(self.depthwise(y)))
        if self.se is not None:
            y = self.se(y)
        y = self.bn3(self.project(y))
        return x + y if self.residual else y


class MobileNetV2Small(nn.Module):
    """3x32x32: stem conv3x3 3->16 + BN + ReLU6; inverted residuals 16->16, 16->24 /2,
    24->24 (SE), 24->32 /2 (SE), 32->32; head 1x1 conv 32->128 + BN + ReLU6, mean over H and W,
    Dropout(0.2), Linear 128->10."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn_stem = nn.BatchNorm2d(16)
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 1, False),   # 16x32x32, residual
            InvertedResidual(16, 24, 2, False),   # 24x16x16
            InvertedResidual(24, 24, 1, True),    # 24x16x16, residual, SE
            InvertedResidual(24, 32, 2, True),    # 32x8x8, SE
            InvertedResidual(32, 32, 1, False))   # 32x8x8, residual
        self.head = nn.Conv2d(32, 128, 1, bias=False)
        self.bn_head = nn.BatchNorm2d(128)
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu6(self.bn_stem(self.stem(x)))
        x = self.blocks(x)
        x = F.relu6(self.bn_head(self.head(x)))
        x = x.mean((2, 3))
        return self.classifier(self.dropout(x))


# ---- DenseNet-style ----

class DenseLayer(nn.Module):
    """BN -> activation -> conv3x3 pad 1 (growth channels), concatenated after its input."""

    def __init__(self, cin, growth, activation):
        super().__init__()
        self.bn = nn.BatchNorm2d(cin)
        self.act = activation
        self.conv = nn.Conv2d(cin, growth, 3, 1, 1, bias=False)

    def forward(self, x):
        return torch.cat([x, self.conv(self.act(self.bn(x)))], 1)


class DenseNetSmall(nn.Module):
    """1x28x28: stem conv3x3 pad 1 1->12; dense block of 3 layers with GELU (growth 6: 12->30);
    transition BN, Hardswish, 1x1 conv 30->15, max-pool 2x2 (14x14); dense block of 3 layers
    with ReLU (15->33); BN; max-pool 2x2 (7x7); flatten; Linear 1617->10."""

    def __init__(self, growth=6):
        super().__init__()
        self.stem = nn.Conv2d(1, 12, 3, 1, 1)
        c = 12
        block1 = []
        for _ in range(3):
            block1.append(DenseLayer(c, growth, nn.GELU()))
            c += growth
        self.block1 = nn.Sequential(*block1)
        self.trans_bn = nn.BatchNorm2d(c)
        self.trans_act = nn.Hardswish()
        self.trans_conv = nn.Conv2d(c, c // 2, 1, bias=False)
        self.trans_pool = nn.MaxPool2d(2)
        c //= 2
        block2 = []
        for _ in range(3):
            block2.append(DenseLayer(c, growth, nn.ReLU()))
            c += growth
        self.block2 = nn.Sequential(*block2)
        self.bn = nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(c * 7 * 7, 10)

    def forward(self, x):
        x = self.block1(self.stem(x))                                      # 30x28x28
        x = self.trans_pool(self.trans_conv(self.trans_act(self.trans_bn(x))))  # 15x14x14
        x = self.pool(self.bn(self.block2(x)))                             # 33x7x7
        return self.fc(torch.flatten(x, 1))


# ---- an operator zoo ----

def channel_shuffle(x, groups):
    """ShuffleNet's shuffle: channel i (C/g) + j goes to j g + i."""
    n, c, h, w = x.size(0), x.size(1), x.size(2), x.size(3)
    x = x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(n, c, h, w)


class Zoo(nn.Module):
    """3x24x24 (pixel / 255, no mean and std), the operators the other networks leave out:

      stem conv3x3 pad 1 3->16, BN, PReLU (16 slopes)                         16x24x24
      channel shuffle (4 groups), split into two halves of 8 channels
        a: conv3x3 dilation 2 pad 2, ELU                                      8x24x24
        b: zero pad (left 1, right 0, top 2, bottom 1), conv 4x2 (rows x
           columns) pad 0, Softplus                                           8x24x24
      concat [a / (1 + sigmoid(b)), a - b]                                    16x24x24
      grouped conv3x3 pad 1 16->24 (2 groups), Mish                           24x24x24
      max-pool 3x3/2 ceil mode (12, not 11), then x * 0.5 - 0.25              24x12x12
      conv1x1 24->24, SiLU: y; gate 2 - sigmoid(global max of y), in 1..2   24x12x12
      (a gate in 0..1 would shrink y by as much as the global max is large,
      and the differences between images with it); y * gate
      avg-pool 3x3/2 pad 1, ceil mode, padding not counted (7, not 6)         24x7x7
      LeakyReLU(0.2), crop of one row and column on every side                24x5x5
      flatten, Linear 600->10
    """

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1)
        self.bn = nn.BatchNorm2d(16)
        self.prelu = nn.PReLU(16)
        self.dilated = nn.Conv2d(8, 8, 3, 1, 2, dilation=2)
        self.asym = nn.Conv2d(8, 8, (4, 2))
        self.grouped = nn.Conv2d(16, 24, 3, 1, 1, groups=2)
        self.mish = nn.Mish()
        self.pointwise = nn.Conv2d(24, 24, 1)
        self.fc = nn.Linear(24 * 5 * 5, 10)

    def forward(self, x):
        x = self.prelu(self.bn(self.stem(x)))
        x = channel_shuffle(x, 4)
        a, b = torch.chunk(x, 2, dim=1)
        a = F.elu(self.dilated(a))
        b = F.softplus(self.asym(F.pad(b, (1, 0, 2, 1))))
        x = torch.cat([a / (1 + torch.sigmoid(b)), a - b], 1)
        x = self.mish(self.grouped(x))
        x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = x * 0.5 - 0.25
        y = F.silu(self.pointwise(x))
        y = y * (2 - torch.sigmoid(F.adaptive_max_pool2d(y, 1)))
        y = F.avg_pool2d(y, 3, 2, 1, ceil_mode=True, count_include_pad=False)
        y = F.leaky_relu(y, 0.2)[:, :, 1:-1, 1:-1]
        return self.fc(torch.flatten(y, 1))


# name: (constructor, input shape C x H x W)
NETWORKS = {
    "resnet20": (lambda: CifarResNet(3, "B", "view"), (3, 32, 32)),
    "resnet-option-a": (lambda: CifarResNet(2, "A", "flatten"), (3, 32, 32)),
    "mobilenetv2": (MobileNetV2Small, (3, 32, 32)),
    "densenet": (DenseNetSmall, (1, 28, 28)),
    "zoo": (Zoo, (3, 24, 24)),
}


def make(name):
    """(module, input shape (C, H, W)) of the network called name, default initialisation."""
    constructor, shape = NETWORKS[name]
    return constructor(), shape
