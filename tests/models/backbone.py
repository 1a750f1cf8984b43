"""A small ResNet/YOLO-style backbone: a stem conv with SiLU (or Mish), three ResNet BasicBlocks (two with an
identity shortcut, then a down-sampling one), a depthwise-separable block and a classifier head. Input 1x3x64x64.

SiLU models have BatchNorm folded into conv biases (as Ultralytics exports); Mish models keep Conv -> BN -> Mish
(CSPDarknet style), the native Mish op from opset 18 and x * tanh(softplus(x)) below it.
"""
from __future__ import annotations

import onnx

from tests.models.layers import Net

STEM = "/backbone/stem/conv/Conv"
DEPTHWISE = "/backbone/dw/conv/Conv"
POINTWISE = "/backbone/pw/conv/Conv"
BLOCK1_ADDS = ("/backbone/layer1/layer1.0/Add", "/backbone/layer1/layer1.1/Add")
BLOCK2_ADD = "/backbone/layer2/layer2.0/Add"


def build(qdq: bool, activation: str = "silu", opset: int = 17) -> onnx.ModelProto:
    net = Net(f"backbone-{activation}{'-qdq' if qdq else ''}", opset, qdq)
    x = net.input("images", (1, 3, 64, 64))
    x = _conv_act(net, x, "/backbone/stem", "backbone.stem", 3, 16, stride=2, activation=activation)
    for i in range(2):  # two blocks of one shape: the same pattern form twice
        x = _basic_block(net, x, f"/backbone/layer1/layer1.{i}", f"backbone.layer1.{i}", 16, 16, stride=1,
                         residual_quantizer=True)
    x = _basic_block(net, x, "/backbone/layer2/layer2.0", "backbone.layer2.0", 16, 32, stride=2,
                     residual_quantizer=False)
    x = _conv_act(net, x, "/backbone/dw", "backbone.dw", 32, 32, groups=32, activation=activation)
    x = _conv_act(net, x, "/backbone/pw", "backbone.pw", 32, 64, k=1, activation=activation)
    x = net.node("GlobalAveragePool", "/head/pool", [x])
    x = net.node("Flatten", "/head/flatten", [x], {"axis": 1})
    net.output(net.linear(x, "/head/fc", "head.fc", 64, 10))
    return net.model()


def _conv_act(net, x, scope, param, cin, cout, k=3, stride=1, groups=1, activation="silu"):
    fold_bn = activation == "silu"
    y = net.conv(x, f"{scope}/conv", f"{param}.conv", cin, cout, k=k, stride=stride, groups=groups, bias=fold_bn)
    if not fold_bn:
        y = net.batchnorm(y, f"{scope}/bn", f"{param}.bn", cout)
    return net.act(y, f"{scope}/act", activation)


def _basic_block(net, x, scope, param, cin, cout, stride, residual_quantizer):
    y = net.conv(x, f"{scope}/conv1", f"{param}.conv1", cin, cout, stride=stride, bias=False)
    y = net.act(net.batchnorm(y, f"{scope}/bn1", f"{param}.bn1", cout), f"{scope}/relu", "relu")
    y = net.conv(y, f"{scope}/conv2", f"{param}.conv2", cout, cout, bias=False)
    y = net.batchnorm(y, f"{scope}/bn2", f"{param}.bn2", cout)
    identity = x
    if stride != 1 or cin != cout:
        identity = net.conv(x, f"{scope}/downsample/downsample.0", f"{param}.downsample.0", cin, cout, k=1,
                            stride=stride, bias=False)
        identity = net.batchnorm(identity, f"{scope}/downsample/downsample.1", f"{param}.downsample.1", cout)
    if residual_quantizer:
        identity = net.quantize(identity, f"{scope}/residual_quantizer")
    return net.act(net.node("Add", scope, [y, identity]), f"{scope}/relu_1", "relu")


def expected(qdq: bool, activation: str = "silu") -> dict[str, list[tuple[str, str]]]:
    """Case id -> [(anchor node, library variant)] of the S patterns the model holds."""
    if qdq:
        # Explicit quantization: no implicit-INT8 pattern; Mish has no Q/DQ before it (pytorch-quantization
        # quantizes conv inputs only), so no S4 form either.
        return {
            "s3-depthwise-qdq": [(DEPTHWISE, "depthwise-c32-float-qdq-per-channel")],
            "s5-qdq-resnet-block": [*((add, "identity-shortcut-residual-quantizer") for add in BLOCK1_ADDS),
                                    (BLOCK2_ADD, "downsample-shortcut")],
        }
    if activation == "silu":
        return {"s1-conv-silu": [(STEM, "size-64"), (DEPTHWISE, "channels-32"), (POINTWISE, "channels-64")]}
    form = "native-mish" if activation == "mish-native" else "decomposed-mish"
    return {"s4-bn-mish": [(STEM, form), (DEPTHWISE, form), (POINTWISE, form)]}
