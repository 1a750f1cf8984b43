"""An EfficientNet-B0-like feature extractor, quantized as pytorch-quantization exports it, cut where the P1 report
cut EfficientDet's backbone: right after the depthwise conv + BN + SiLU of a block, before its squeeze-excitation,
with the quantizer of the cut-off SE input still on the output (torchvision names: ``/features/<stage>/<block>/...``).

Stem Conv(3x3, s2) + BN + SiLU; stage 1, an MBConv1 block (depthwise 3x3 + BN + SiLU, SE, 1x1 projection + BN);
stage 2, the expansion 1x1 + BN + SiLU and the depthwise 3x3 (s2) + BN + SiLU of an MBConv6 block. Input 1x3x64x64.
"""
from __future__ import annotations

import onnx

from tests.models.layers import Net

STAGE1_DEPTHWISE = "/features/1/0/block/0/0/Conv"
TAIL_DEPTHWISE = "/features/2/0/block/1/0/Conv"
OUTPUT = "/features/2/0/block/2/_input_quantizer/DequantizeLinear_output_0"


def build(qdq: bool = True) -> onnx.ModelProto:
    net = Net(f"efficientnet-b0-features{'-qdq' if qdq else ''}", 17, qdq)
    x = net.input("input", (1, 3, 64, 64))
    x = _conv_bn(net, x, "/features/0", "features.0", 3, 32, k=3, stride=2)
    x = _conv_bn(net, x, "/features/1/0/block/0", "features.1.0.block.0", 32, 32, k=3, groups=32)
    x = _squeeze_excitation(net, x, "/features/1/0/block/1", "features.1.0.block.1", 32, 8)
    x = _conv_bn(net, x, "/features/1/0/block/2", "features.1.0.block.2", 32, 16, k=1, activation=None)
    x = _conv_bn(net, x, "/features/2/0/block/0", "features.2.0.block.0", 16, 96, k=1)
    x = _conv_bn(net, x, "/features/2/0/block/1", "features.2.0.block.1", 96, 96, k=3, stride=2, groups=96)
    net.output(net.quantize(x, "/features/2/0/block/2/_input_quantizer"))  # the cut-off SE's input quantizer
    return net.model()


def _conv_bn(net, x, scope, param, cin, cout, k, stride=1, groups=1, activation="silu"):
    y = net.conv(x, f"{scope}/0", f"{param}.0", cin, cout, k=k, stride=stride, groups=groups, bias=False)
    y = net.batchnorm(y, f"{scope}/1", f"{param}.1", cout)
    return net.act(y, f"{scope}/2", activation) if activation else y


def _squeeze_excitation(net, x, scope, param, channels, squeezed):
    s = net.node("GlobalAveragePool", f"{scope}/avgpool", [x])
    s = net.act(net.conv(s, f"{scope}/fc1", f"{param}.fc1", channels, squeezed, k=1), f"{scope}/activation", "silu")
    s = net.node("Sigmoid", f"{scope}/scale_activation", [net.conv(s, f"{scope}/fc2", f"{param}.fc2", squeezed,
                                                                    channels, k=1)])
    return net.node("Mul", scope, [x, s])
