"""Shared onnx-graphsurgeon building blocks for the reproducer cases: deterministic weights, nodes, Q/DQ pairs.

Every builder appends its nodes to ``graph.nodes`` in topological order and returns the output tensor, so a case
reads top to bottom like the network it reproduces. Names are always passed in: each case follows the naming of
the exporter that produced the upstream model (torch.onnx, pytorch-quantization, hand-written graphsurgeon).
"""
from __future__ import annotations

import importlib.util
import sys
import zlib
from types import ModuleType

import ml_dtypes
import numpy as np

def imported_at_first_use(name: str) -> ModuleType:
    """Module ``name``, executed when one of its attributes is first read (the standard library's LazyLoader): the
    case modules name onnx-graphsurgeon up front, and a scan, whose matchers read the model's own protobuf graph,
    never loads it."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

gs = imported_at_first_use("onnx_graphsurgeon")  # the case modules import it from here

INT8_MIN, INT8_MAX = -128, 127
# Q/DQ scale for activations of about unit variance: +-4 maps onto +-127, so clipping is rare for N(0, 1) inputs.
UNIT_ACTIVATION_SCALE = 4.0 / INT8_MAX
# FP8 E4M3 (ONNX FLOAT8E4M3FN, opset 19+): largest finite value 448; QuantizeLinear saturates to it by default.
FP8_E4M3_MAX = 448.0
# The quantized type of each precision a Q/DQ pair can carry, and the largest magnitude it holds.
QUANTIZED_DTYPES = {"int8": np.dtype(np.int8), "fp8": np.dtype(ml_dtypes.float8_e4m3fn)}
QUANTIZED_MAX = {"int8": float(INT8_MAX), "fp8": FP8_E4M3_MAX}
# The same +-4 range as UNIT_ACTIVATION_SCALE, on the FP8 E4M3 grid.
UNIT_ACTIVATION_SCALE_FP8 = 4.0 / FP8_E4M3_MAX

def rng_for(name: str) -> np.random.Generator:
    """A generator seeded from ``name`` alone (CRC-32), so a tensor's values depend on nothing but its name."""
    return np.random.default_rng(zlib.crc32(name.encode("utf-8")))

def conv_weight(name: str, shape: tuple[int, ...]) -> gs.Constant:
    """A conv weight (O, I/groups, kH, kW) drawn N(0, 1/fan_in), so the output variance is about the input's."""
    fan_in = int(np.prod(shape[1:]))
    values = rng_for(name).normal(0.0, 1.0 / np.sqrt(fan_in), size=shape)
    return gs.Constant(name, values.astype(np.float32))

def dense_weight(name: str, shape: tuple[int, ...], fan_in: int) -> gs.Constant:
    """A weight of any layout drawn N(0, 1/fan_in), ``fan_in`` being the number of products summed per output."""
    values = rng_for(name).normal(0.0, 1.0 / np.sqrt(fan_in), size=shape)
    return gs.Constant(name, values.astype(np.float32))

def bias(name: str, channels: int) -> gs.Constant:
    """A small conv bias in [-0.1, 0.1)."""
    return gs.Constant(name, rng_for(name).uniform(-0.1, 0.1, size=channels).astype(np.float32))

def batchnorm_params(prefix: str, channels: int) -> list[gs.Constant]:
    """BatchNormalization scale, B, mean, var named like torch parameters (``<prefix>.weight``, ...), near identity."""
    rng = rng_for(prefix)
    values = {
        "weight": rng.uniform(0.8, 1.2, size=channels),
        "bias": rng.uniform(-0.1, 0.1, size=channels),
        "running_mean": rng.uniform(-0.1, 0.1, size=channels),
        "running_var": rng.uniform(0.8, 1.2, size=channels),
    }
    return [gs.Constant(f"{prefix}.{key}", value.astype(np.float32)) for key, value in values.items()]

def graph_input(name: str, shape: tuple[int, ...]) -> gs.Variable:
    return gs.Variable(name, dtype=np.float32, shape=shape)

def mark_output(graph: gs.Graph, tensor: gs.Variable, shape: tuple[int, ...]) -> None:
    """Append ``tensor`` to the graph outputs as an FP32 tensor of ``shape`` (outputs must carry both)."""
    tensor.dtype, tensor.shape = np.float32, shape
    graph.outputs.append(tensor)

def node(graph: gs.Graph, op: str, name: str, inputs: list, output: str, attrs: dict | None = None) -> gs.Variable:
    """Append one node named ``name`` whose single output tensor is named ``output``; return that tensor."""
    out = gs.Variable(output)
    graph.nodes.append(gs.Node(op, name=name, attrs=attrs or {}, inputs=inputs, outputs=[out]))
    return out

def torch_node(graph: gs.Graph, op: str, scope: str, inputs: list, attrs: dict | None = None) -> gs.Variable:
    """A node named as torch.onnx names it: ``<scope>/<Op>``, output ``<scope>/<Op>_output_0``."""
    return node(graph, op, f"{scope}/{op}", inputs, f"{scope}/{op}_output_0", attrs)

def conv_attrs(kernel: int, stride: int = 1, pad: int = 0, group: int = 1) -> dict:
    """Conv attributes in the order torch.onnx writes them."""
    return {
        "dilations": [1, 1],
        "group": group,
        "kernel_shape": [kernel, kernel],
        "pads": [pad, pad, pad, pad],
        "strides": [stride, stride],
    }

def per_tensor_scale(values: np.ndarray, precision: str = "int8") -> np.ndarray:
    """Symmetric scale of a whole tensor: max|x| / 127 for INT8 (/ 448 for FP8 E4M3), as a scalar."""
    return np.array(np.abs(values).max() / QUANTIZED_MAX[precision], dtype=np.float32)

def per_channel_scale(values: np.ndarray, axis: int = 0, precision: str = "int8") -> np.ndarray:
    """Symmetric scale per channel of ``axis`` (a conv's output channels are axis 0): max|x| over the other
    axes / 127 for INT8 (/ 448 for FP8 E4M3)."""
    moved = np.moveaxis(np.abs(values), axis, 0)
    return (moved.reshape(moved.shape[0], -1).max(axis=1) / QUANTIZED_MAX[precision]).astype(np.float32)

def quantize_values(values: np.ndarray, scale: np.ndarray, axis: int = 0, precision: str = "int8") -> np.ndarray:
    """Values as QuantizeLinear computes them (zero point 0, saturating): INT8 rounds half to even and clips to
    [-128, 127]; FP8 E4M3 clips to +-448 and rounds to the nearest E4M3 value."""
    scale = np.asarray(scale, dtype=np.float32)
    if scale.ndim == 1:
        scale = scale.reshape([-1 if i == axis else 1 for i in range(values.ndim)])
    if precision == "fp8":
        return np.clip(values / scale, -FP8_E4M3_MAX, FP8_E4M3_MAX).astype(QUANTIZED_DTYPES["fp8"])
    return np.clip(np.rint(values / scale), INT8_MIN, INT8_MAX).astype(np.int8)

def quantizer_params(scale_name: str, zero_point_name: str, scale: np.ndarray, precision: str = "int8",
                     scale_dtype=np.float32) -> tuple[gs.Constant, gs.Constant]:
    """Scale and zero point (all zeros: TensorRT requires symmetric quantization) initializers of one Q or DQ.

    The zero point's type is the quantized type: INT8, or FLOAT8E4M3FN for ``precision="fp8"`` (opset 19+). A
    ``scale_dtype`` of float16 (opset 19+) makes the DequantizeLinear's output FP16, as ModelOpt writes for an FP16
    network.
    """
    scale = np.asarray(scale, dtype=scale_dtype)
    zero_point = np.zeros(scale.shape, dtype=QUANTIZED_DTYPES[precision])
    return gs.Constant(scale_name, scale), gs.Constant(zero_point_name, zero_point)

def quantize_linear(graph, x, scale: gs.Constant, zero_point: gs.Constant, name: str, output: str, axis=None):
    """QuantizeLinear; ``axis`` only for a per-channel (1-D) scale."""
    return node(graph, "QuantizeLinear", name, [x, scale, zero_point], output, _axis_attr(scale, axis))

def dequantize_linear(graph, x, scale: gs.Constant, zero_point: gs.Constant, name: str, output: str, axis=None):
    """DequantizeLinear; ``axis`` only for a per-channel (1-D) scale."""
    return node(graph, "DequantizeLinear", name, [x, scale, zero_point], output, _axis_attr(scale, axis))

def _axis_attr(scale: gs.Constant, axis) -> dict:
    per_channel = scale.values.ndim == 1
    if per_channel != (axis is not None):
        raise ValueError(f"{scale.name}: a per-channel scale needs an axis and a per-tensor one none (axis={axis})")
    return {"axis": axis} if per_channel else {}

def dequantize_int8_weight(graph: gs.Graph, weights: gs.Constant, scale: np.ndarray, quantized_name: str,
                           scale_name: str, zero_point_name: str, name: str, output: str, axis=None,
                           precision: str = "int8", scale_dtype=np.float32) -> gs.Variable:
    """Pre-quantized weights: an initializer ``quantized_name`` holding what QuantizeLinear makes of ``weights`` (INT8,
    or FP8 E4M3 for ``precision="fp8"``), read through one DequantizeLinear ``name`` (per-channel along ``axis`` for a
    1-D ``scale``; its scale stored as ``scale_dtype``)."""
    stored_scale = np.asarray(scale, dtype=scale_dtype)
    stored = gs.Constant(quantized_name, quantize_values(weights.values, stored_scale, axis or 0, precision))
    params = quantizer_params(scale_name, zero_point_name, stored_scale, precision, scale_dtype)
    return dequantize_linear(graph, stored, *params, name, output, axis)

def torch_fake_quantize(graph: gs.Graph, x, quantizer: str, scale: np.ndarray, axis=None, precision: str = "int8",
                        scale_dtype=np.float32) -> gs.Variable:
    """A QuantizeLinear -> DequantizeLinear pair as pytorch-quantization exports a TensorQuantizer named ``quantizer``.

    Nodes ``<quantizer>/QuantizeLinear`` and ``<quantizer>/DequantizeLinear`` (torch.onnx naming, e.g.
    ``/backbone_2d/stage_4/stage_4.1/conv2/_weight_quantizer/QuantizeLinear`` in
    https://github.com/NVIDIA/TensorRT/issues/3980); initializers ``<quantizer>/scale`` and ``<quantizer>/zero_point``.
    ``precision`` and ``scale_dtype`` as in :func:`quantizer_params`.
    """
    params = quantizer_params(f"{quantizer}/scale", f"{quantizer}/zero_point", scale, precision, scale_dtype)
    q = quantize_linear(graph, x, *params, f"{quantizer}/QuantizeLinear", f"{quantizer}/QuantizeLinear_output_0", axis)
    return dequantize_linear(
        graph, q, *params, f"{quantizer}/DequantizeLinear", f"{quantizer}/DequantizeLinear_output_0", axis
    )

def modelopt_int8_weight(graph: gs.Graph, name: str, shape: tuple[int, ...], fan_in: int, axis, scope: str):
    """A ``dense_weight`` stored INT8 and read through one DequantizeLinear named as ModelOpt names a Linear's weight
    quantizer (``<scope>/weight_quantizer/DequantizeLinear``): per channel along ``axis``, or per tensor when None."""
    weights = dense_weight(name, shape, fan_in=fan_in)
    scale = per_tensor_scale(weights.values) if axis is None else per_channel_scale(weights.values, axis)
    quantizer = f"{scope}/weight_quantizer"
    return dequantize_int8_weight(graph, weights, scale, name, f"{quantizer}/scale", f"{quantizer}/zero_point",
                                  f"{quantizer}/DequantizeLinear", f"{quantizer}/DequantizeLinear_output_0", axis)

def modelopt_fake_quantize(graph: gs.Graph, x, tensor: str, scale: np.ndarray, axis=None, precision: str = "int8",
                           scale_dtype=np.float32) -> gs.Variable:
    """A QuantizeLinear -> DequantizeLinear pair as ModelOpt's ONNX quantization writes it for the tensor ``tensor``:
    nodes ``<tensor>_QuantizeLinear`` / ``<tensor>_DequantizeLinear``, outputs ``..._Output``, initializers
    ``<tensor>_scale`` / ``<tensor>_zero_point`` (as in the logs of
    https://github.com/NVIDIA/Model-Optimizer/issues/118: ``/maxpool/MaxPool_output_0_QuantizeLinear``)."""
    params = quantizer_params(f"{tensor}_scale", f"{tensor}_zero_point", scale, precision, scale_dtype)
    q = quantize_linear(graph, x, *params, f"{tensor}_QuantizeLinear", f"{tensor}_QuantizeLinear_Output", axis)
    return dequantize_linear(graph, q, *params, f"{tensor}_DequantizeLinear", f"{tensor}_DequantizeLinear_Output",
                             axis)

def quantized_conv(graph: gs.Graph, x, scope: str, weight_name: str, channels_in: int, channels: int,
                   precision: str, kernel: int = 3, stride: int = 1) -> gs.Variable:
    """A conv (pad kernel // 2) with a per-tensor input quantizer and a per-channel weight quantizer of ``precision``
    ("int8" or "fp8"), ModelOpt's ``input_quantizer``/``weight_quantizer`` under the torch.onnx scope ``scope``."""
    unit = UNIT_ACTIVATION_SCALE_FP8 if precision == "fp8" else UNIT_ACTIVATION_SCALE
    weight = conv_weight(weight_name, (channels, channels_in, kernel, kernel))
    x = torch_fake_quantize(graph, x, f"{scope}/input_quantizer", unit, precision=precision)
    weight = torch_fake_quantize(graph, weight, f"{scope}/weight_quantizer",
                                 per_channel_scale(weight.values, precision=precision), axis=0, precision=precision)
    return torch_node(graph, "Conv", scope, [x, weight], conv_attrs(kernel, stride=stride, pad=kernel // 2))
