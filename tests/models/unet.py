"""A small U-Net in the nnU-Net style: Conv -> InstanceNormalization -> LeakyReLU stages (or, with
``norm="batch"``, the original U-Net's Conv -> BatchNorm -> ReLU), max-pool down, one ConvTranspose and one Resize
(nearest, x2) up, Concat skips, a 1x1 head. Input 1x3x32x32."""
from __future__ import annotations

import numpy as np
import onnx

from tests.models.layers import Net

NORMS = tuple(f"/{stage}/norm/InstanceNormalization" for stage in
              ("enc1.0", "enc1.1", "enc2.0", "bottleneck.0", "up1.0", "up2.0"))


def build(qdq: bool, norm: str = "instance") -> onnx.ModelProto:
    net = Net(f"unet{'-qdq' if qdq else ''}", 17, qdq)
    net.norm = norm
    x = net.input("image", (1, 3, 32, 32))
    enc1 = _stage(net, _stage(net, x, "enc1.0", 3, 16), "enc1.1", 16, 16)
    x = net.node("MaxPool", "/down1", [enc1], {"kernel_shape": [2, 2], "strides": [2, 2]})
    enc2 = _stage(net, x, "enc2.0", 16, 32)
    x = net.node("MaxPool", "/down2", [enc2], {"kernel_shape": [2, 2], "strides": [2, 2]})
    x = _stage(net, x, "bottleneck.0", 32, 64)
    x = net.conv_transpose(x, "/up1/deconv", "up1.deconv", 64, 32)
    x = _stage(net, net.node("Concat", "/up1/cat", [x, enc2], {"axis": 1}), "up1.0", 64, 32)
    scales = net.const("/up2/resize/scales", [1.0, 1.0, 2.0, 2.0])
    x = net.node("Resize", "/up2/resize", [x, net.const("/up2/resize/roi", [], np.float32), scales],
                 {"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"})
    x = net.conv(x, "/up2/reduce", "up2.reduce", 32, 16, k=1)
    x = _stage(net, net.node("Concat", "/up2/cat", [x, enc1], {"axis": 1}), "up2.0", 32, 16)
    net.output(net.conv(x, "/head", "head", 16, 2, k=1))
    return net.model()


def _stage(net, x, name, cin, cout):
    y = net.conv(x, f"/{name}/conv", f"{name}.conv", cin, cout)
    if net.norm == "batch":
        return net.act(net.batchnorm(y, f"/{name}/norm", f"{name}.norm", cout), f"/{name}/act", "relu")
    return net.act(net.instancenorm(y, f"/{name}/norm", f"{name}.norm", cout), f"/{name}/act", "leaky-relu")


def expected(qdq: bool) -> dict[str, list[tuple[str, str]]]:
    """Case id -> [(anchor node, library variant)]: every InstanceNormalization under implicit INT8 (one input and no
    INT64 Reshape: the nearest library form is the single-input sweep); none with Q/DQ."""
    return {} if qdq else {"s2-instancenorm": [(norm, "inputs-1") for norm in NORMS]}
