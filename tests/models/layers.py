"""A small network builder on onnx-graphsurgeon for the scanner's test models, naming nodes as torch.onnx does and,
when asked, quantizing like pytorch-quantization (an input and a per-channel weight quantizer on every Conv,
ConvTranspose and MatMul with a weight)."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from cases import _graphs as g

ACTIVATIONS = ("relu", "silu", "mish", "leaky-relu", "gelu")


class Net:
    """One graph being built: ``qdq`` adds Q/DQ the way pytorch-quantization exports a quantized model."""

    def __init__(self, name: str, opset: int, qdq: bool):
        self.graph = gs.Graph(name=name, opset=opset)
        self.opset, self.qdq = opset, qdq

    def input(self, name: str, shape: tuple[int, ...]) -> gs.Variable:
        x = g.graph_input(name, shape)
        self.graph.inputs.append(x)
        return x

    def output(self, x: gs.Variable) -> None:
        x.dtype = np.float32
        self.graph.outputs.append(x)

    def node(self, op: str, scope: str, inputs: list, attrs: dict | None = None) -> gs.Variable:
        return g.torch_node(self.graph, op, scope, inputs, attrs)

    def quantize(self, x, scope: str) -> gs.Variable:
        """An activation quantizer (per-tensor) named like a TensorQuantizer, or ``x`` itself without Q/DQ."""
        return g.torch_fake_quantize(self.graph, x, scope, g.UNIT_ACTIVATION_SCALE) if self.qdq else x

    def weight(self, name: str, values: np.ndarray, scope: str, axis: int) -> gs.Tensor:
        weight = gs.Constant(name, values.astype(np.float32))
        if not self.qdq:
            return weight
        moved = np.moveaxis(weight.values, axis, 0)
        scale = g.per_channel_scale(moved)
        return g.torch_fake_quantize(self.graph, weight, f"{scope}/_weight_quantizer", scale, axis=axis)

    def conv(self, x, scope: str, param: str, cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1,
             bias: bool = True) -> gs.Variable:
        x = self.quantize(x, f"{scope}/_input_quantizer")
        w = self.weight(f"{param}.weight", g.conv_weight("w:" + param, (cout, cin // groups, k, k)).values, scope, 0)
        inputs = [x, w] + ([g.bias(f"{param}.bias", cout)] if bias else [])
        return self.node("Conv", scope, inputs, g.conv_attrs(k, stride=stride, pad=k // 2, group=groups))

    def conv_transpose(self, x, scope: str, param: str, cin: int, cout: int) -> gs.Variable:
        x = self.quantize(x, f"{scope}/_input_quantizer")
        values = g.conv_weight("w:" + param, (cin, cout, 2, 2)).values
        w = self.weight(f"{param}.weight", values, scope, 1)  # ConvTranspose weights are (Cin, Cout, kH, kW)
        attrs = {"dilations": [1, 1], "group": 1, "kernel_shape": [2, 2], "pads": [0, 0, 0, 0], "strides": [2, 2]}
        return self.node("ConvTranspose", scope, [x, w, g.bias(f"{param}.bias", cout)], attrs)

    def batchnorm(self, x, scope: str, param: str, channels: int) -> gs.Variable:
        return self.node("BatchNormalization", scope, [x, *g.batchnorm_params(param, channels)], {"epsilon": 1e-5})

    def instancenorm(self, x, scope: str, param: str, channels: int) -> gs.Variable:
        rng = g.rng_for(param)
        scale = gs.Constant(f"{param}.weight", rng.uniform(0.8, 1.2, channels).astype(np.float32))
        shift = gs.Constant(f"{param}.bias", rng.uniform(-0.1, 0.1, channels).astype(np.float32))
        return self.node("InstanceNormalization", scope, [x, scale, shift], {"epsilon": 1e-5})

    def act(self, x, scope: str, kind: str) -> gs.Variable:
        """An activation as torch.onnx writes it: SiLU as Sigmoid + Mul, Mish as the op from opset 18 and as
        x * tanh(softplus(x)) below, GELU through Erf."""
        if kind == "relu":
            return self.node("Relu", scope, [x])
        if kind == "leaky-relu":
            return self.node("LeakyRelu", scope, [x], {"alpha": 0.01})
        if kind == "silu":
            return self.node("Mul", scope, [x, self.node("Sigmoid", scope, [x])])
        if kind == "mish":
            if self.opset >= 18:
                return self.node("Mish", scope, [x])
            return self.node("Mul", scope, [x, self.node("Tanh", scope, [self.node("Softplus", scope, [x])])])
        if kind == "gelu":
            half, one, root2 = (self.const(f"{scope}/{n}", v) for n, v in (("half", 0.5), ("one", 1.0),
                                                                              ("sqrt2", np.sqrt(2.0))))
            erf = self.node("Erf", scope, [self.node("Div", scope, [x, root2])])
            return self.node("Mul", f"{scope}/out", [self.node("Mul", scope, [x, half]),
                                                      self.node("Add", scope, [erf, one])])
        raise ValueError(f"unknown activation {kind!r}")

    def const(self, name: str, value, dtype=np.float32) -> gs.Constant:
        return gs.Constant(name, np.asarray(value, dtype=dtype))

    def linear(self, x, scope: str, param: str, fan_in: int, fan_out: int) -> gs.Variable:
        """MatMul with a (in, out) weight, per-channel quantized on axis 1, then Add bias (torch.onnx's Linear)."""
        x = self.quantize(x, f"{scope}/_input_quantizer")
        values = g.rng_for(param).normal(0, 1 / np.sqrt(fan_in), size=(fan_in, fan_out))
        w = self.weight(f"{param}.weight", values, scope, 1)
        y = self.node("MatMul", scope, [x, w])
        return self.node("Add", scope, [y, g.bias(f"{param}.bias", fan_out)])

    def gemm(self, x, scope: str, param: str, fan_in: int, fan_out: int) -> gs.Variable:
        """Gemm(x, W (out, in), bias, transB=1): torch.onnx's Linear on a 2-D input; W quantized per output channel."""
        x = self.quantize(x, f"{scope}/_input_quantizer")
        values = g.rng_for(param).normal(0, 1 / np.sqrt(fan_in), size=(fan_out, fan_in))
        w = self.weight(f"{param}.weight", values, scope, 0)
        return self.node("Gemm", scope, [x, w, g.bias(f"{param}.bias", fan_out)],
                         {"alpha": 1.0, "beta": 1.0, "transB": 1})

    def model(self) -> onnx.ModelProto:
        """The exported model, shape-inferred and checked (strict), as an exporter would hand it to a user."""
        model = gs.export_onnx(self.graph.cleanup().toposort(), do_type_check=False)
        model.ir_version = 8
        model.producer_name = "trt-matrix tests"
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        onnx.checker.check_model(model, full_check=True)
        return model
