"""A Q/DQ CNN (pytorch-quantization style) of ``blocks`` Conv -> GELU blocks in which one block computes its GELU in
float64 (Cast to DOUBLE, Div, Erf, Add, Mul, Mul, Cast back), as an export of a model with one activation kept in
double precision writes it. ONNX allows Erf on double; ONNX Runtime's CPU execution provider has no double Erf
kernel ("Could not find an implementation for Erf(13)"), so the whole model fails to load there: a real failure
buried in a graph of ``10 * blocks + 2`` nodes. Input 1x8x8x8."""
from __future__ import annotations

import numpy as np
import onnx

from tests.models.layers import Net

CHANNELS = 8


def double_scope(blocks: int) -> str:
    """The scope of the block whose GELU runs in float64."""
    return f"/blocks/blocks.{blocks // 2}/act"


def build(blocks: int = 10, qdq: bool = True) -> onnx.ModelProto:
    """``qdq=False``: the FP32 model before quantization (no Q/DQ), which ONNX Runtime cannot load either."""
    net = Net(f"f64-gelu-{blocks}", 17, qdq=qdq)
    x = net.input("images", (1, CHANNELS, 8, 8))
    for i in range(blocks):
        scope = f"/blocks/blocks.{i}"
        x = net.conv(x, f"{scope}/conv", f"blocks.{i}.conv", CHANNELS, CHANNELS)
        x = _double_gelu(net, x, f"{scope}/act") if f"{scope}/act" == double_scope(blocks) else net.act(
            x, f"{scope}/act", "gelu")
    net.output(x)
    return net.model()


def _double_gelu(net: Net, x, scope: str):
    x = net.node("Cast", f"{scope}/to_double", [x], {"to": onnx.TensorProto.DOUBLE})
    half, one, root2 = (net.const(f"{scope}/{n}", v, np.float64) for n, v in (("half", 0.5), ("one", 1.0),
                                                                             ("sqrt2", np.sqrt(2.0))))
    erf = net.node("Erf", scope, [net.node("Div", scope, [x, root2])])
    y = net.node("Mul", f"{scope}/out", [net.node("Mul", scope, [x, half]), net.node("Add", scope, [erf, one])])
    return net.node("Cast", f"{scope}/to_float", [y], {"to": onnx.TensorProto.FLOAT})
