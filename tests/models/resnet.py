"""A ResNet-18-like classifier (torchvision's layout and names at a quarter of the width, input 1x3x64x64), quantized
as pytorch-quantization's automatic mode exports it: an input and a per-channel weight quantizer on every Conv and
on the classifier, and none on the residual identities (P3's reported form in every block)."""
from __future__ import annotations

import onnx

from tests.models.layers import Net

WIDTHS = (16, 32, 64, 128)
IDENTITY_ADDS = tuple(f"/layer{i}/layer{i}.1/Add" for i in range(1, 5)) + ("/layer1/layer1.0/Add",)
DOWNSAMPLE_ADDS = tuple(f"/layer{i}/layer{i}.0/Add" for i in range(2, 5))


def build(qdq: bool = True) -> onnx.ModelProto:
    net = Net(f"resnet18{'-qdq' if qdq else ''}", 17, qdq)
    x = net.input("input", (1, 3, 64, 64))
    x = net.act(net.batchnorm(net.conv(x, "/conv1", "conv1", 3, WIDTHS[0], k=7, stride=2, bias=False), "/bn1",
                              "bn1", WIDTHS[0]), "/relu", "relu")
    x = net.node("MaxPool", "/maxpool", [x], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    cin = WIDTHS[0]
    for stage, cout in enumerate(WIDTHS, start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _basic_block(net, x, f"/layer{stage}/layer{stage}.{block}", f"layer{stage}.{block}", cin, cout,
                             stride)
            cin = cout
    x = net.node("Flatten", "/flatten", [net.node("GlobalAveragePool", "/avgpool", [x])], {"axis": 1})
    net.output(net.linear(x, "/fc", "fc", cin, 10))
    return net.model()


def _basic_block(net, x, scope, param, cin, cout, stride):
    y = net.conv(x, f"{scope}/conv1", f"{param}.conv1", cin, cout, stride=stride, bias=False)
    y = net.act(net.batchnorm(y, f"{scope}/bn1", f"{param}.bn1", cout), f"{scope}/relu", "relu")
    y = net.batchnorm(net.conv(y, f"{scope}/conv2", f"{param}.conv2", cout, cout, bias=False), f"{scope}/bn2",
                      f"{param}.bn2", cout)
    identity = x
    if stride != 1 or cin != cout:
        identity = net.conv(x, f"{scope}/downsample/downsample.0", f"{param}.downsample.0", cin, cout, k=1,
                            stride=stride, bias=False)
        identity = net.batchnorm(identity, f"{scope}/downsample/downsample.1", f"{param}.downsample.1", cout)
    return net.act(net.node("Add", scope, [y, identity]), f"{scope}/relu_1", "relu")
