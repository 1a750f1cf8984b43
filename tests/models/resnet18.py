"""torchvision's ResNet-18 as torch.onnx exports it in eval mode (BatchNorm folded into the convs), FP32, and the same
model quantized as a user would with ONNX Runtime's static quantizer: QDQ format, per-channel QInt8 weights.

Structure and names follow the export: ``/conv1/Conv`` (7x7, stride 2) -> ``/relu/Relu`` -> ``/maxpool/MaxPool``, four
stages of two BasicBlocks (``/layer2/layer2.0/conv1/Conv``, ``.../Add``, ``.../relu_1/Relu``; a 1x1 stride-2
``downsample.0`` conv where the width doubles), ``/avgpool/GlobalAveragePool``, ``/Flatten`` and the classifier
``/fc/Gemm`` (512 -> 1000, transB=1). Widths are torchvision's; the input is 1x3x64x64 (not 224) so that calibration
takes a second: the network's structure does not depend on it. torch and torchvision are not installed here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from tests.models.layers import Net

CLASSIFIER = "/fc/Gemm"
INPUT = "input"
SHAPE = (1, 3, 64, 64)
STAGES = ((1, 64, 1), (2, 128, 2), (3, 256, 2), (4, 512, 2))  # (layer index, width, stride of its first block)
CALIBRATION_BATCHES = 4


def build() -> onnx.ModelProto:
    """The FP32 model as exported."""
    net = Net("resnet18", 13, qdq=False)
    x = net.input(INPUT, SHAPE)
    x = net.node("Relu", "/relu", [net.conv(x, "/conv1", "conv1", 3, 64, k=7, stride=2)])
    x = net.node("MaxPool", "/maxpool", [x], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})
    channels = 64
    for layer, width, stride in STAGES:
        for block in range(2):
            scope, param = f"/layer{layer}/layer{layer}.{block}", f"layer{layer}.{block}"
            x = _basic_block(net, x, scope, param, channels, width, stride if block == 0 else 1)
            channels = width
    x = net.node("GlobalAveragePool", "/avgpool", [x])
    x = net.node("Flatten", "", [x], {"axis": 1})
    net.output(net.gemm(x, "/fc", "fc", 512, 1000))
    return net.model()


def _basic_block(net, x, scope, param, cin, cout, stride):
    y = net.node("Relu", f"{scope}/relu", [net.conv(x, f"{scope}/conv1", f"{param}.conv1", cin, cout, stride=stride)])
    y = net.conv(y, f"{scope}/conv2", f"{param}.conv2", cout, cout)
    identity = x
    if stride != 1 or cin != cout:
        identity = net.conv(x, f"{scope}/downsample/downsample.0", f"{param}.downsample.0", cin, cout, k=1,
                            stride=stride)
    return net.node("Relu", f"{scope}/relu_1", [net.node("Add", scope, [y, identity])])


def quantize(fp32: Path, out: Path) -> Path:
    """``fp32`` quantized by ``onnxruntime.quantization.quantize_static`` (QDQ, per-channel, QInt8 activations and
    weights), calibrated on N(0, 1) batches; written to ``out``."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Batches(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(18)
            self.batches = iter([{INPUT: rng.standard_normal(SHAPE).astype(np.float32)}
                                 for _ in range(CALIBRATION_BATCHES)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(fp32), str(out), Batches(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return out
