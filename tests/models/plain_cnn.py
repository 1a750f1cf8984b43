"""A plain VGG-style classifier, explicitly quantized: Q/DQ Conv -> ReLU -> MaxPool three times, a Q/DQ 1x1 conv
head and global average pooling. Nothing in it is a known failure pattern: a scan must come back clean."""
from __future__ import annotations

import onnx

from tests.models.layers import Net


def build() -> onnx.ModelProto:
    net = Net("plain-cnn-qdq", 13, qdq=True)
    x = net.input("input", (1, 3, 32, 32))
    channels = 3
    for i, width in enumerate((16, 32, 64)):
        x = net.act(net.conv(x, f"/features/conv{i}", f"features.conv{i}", channels, width), f"/features/relu{i}",
                    "relu")
        x = net.node("MaxPool", f"/features/pool{i}", [x], {"kernel_shape": [2, 2], "strides": [2, 2]})
        channels = width
    x = net.conv(x, "/classifier/conv", "classifier.conv", channels, 10, k=1)
    net.output(net.node("GlobalAveragePool", "/classifier/pool", [x]))
    return net.model()
