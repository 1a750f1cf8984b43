"""P17: an FP8 (E4M3) Q/DQ that ModelOpt places after a MaxPool: Myelin cannot infer the quantize's types; the build
fails or ends slower than FP16.

Upstream:

* https://github.com/NVIDIA/Model-Optimizer/issues/118 (closed): ResNet-18 quantized with ``python -m
  modelopt.onnx.quantization --quantize_mode=fp8``, built with TensorRT 10.7 ``trtexec --fp8 --fp16``: ``Error[9]:
  Error Code: 9: Skipping tactic 0x0000000000000000 due to exception [type.cpp:infer_type:145] Could not infer output
  types for operation: 40: quantize: /maxpool/MaxPool_output_0_QuantizeLinear_Output'-(fp8[7,64,192,256]...) |
  /maxpool/MaxPool_output_0'-(f32[...])``, the same for the weight quantizers (``onnx__Conv_217_QuantizeLinear``, FP16
  per-channel scales ``weightsHalf``); an engine was written and ran, slower than the FP16 engine.
* https://github.com/NVIDIA/Model-Optimizer/issues/439 (open): a ModelOpt FP8 ONNX fails to build with ``trtexec
  --fp16 --fp8`` and again with ``--stronglyTyped`` (as #118 had suggested); the error text is in screenshots, the
  TensorRT version is not given; slower than FP16 too.
* https://github.com/NVIDIA/Model-Optimizer/issues/16: a ModelOpt developer: for Conv in FP8 start from the newest
  TensorRT, and before export convert the quantizers to INT8 (8 bits, amax scaled by 127/448); the int8 variant is
  that graph with INT8 Q/DQ.

Graph: the ResNet stem as #118 names it: input (1, 3, 64, 64) -> FP8 Q/DQ -> Conv 7x7 stride 2, 3 -> 64 (FP8
weight, per channel) -> Relu -> MaxPool 3x3 stride 2 -> FP8 Q/DQ (``/maxpool/MaxPool_output_0_QuantizeLinear``) ->
Conv 3x3 64 -> 64 (FP8 weight) -> output (1, 64, 16, 16). Weights are Q/DQ of FP32 constants, as in the log.

No claim: #118 names TensorRT 10.7 but not the GPU, and says an engine was written and ran slower than FP16 after
every tactic of the quantizers was skipped; which layers ran FP8 is not reported, so neither a pass nor a fallback can
be claimed for it (#439 gives no version).
"""
from __future__ import annotations

from typing import Any

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases._backend_notes import ORT_DROPS_RELU_BEFORE_FP8_Q
from cases.model import Built, Case, Knobs, Match, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure

ISSUE = "https://github.com/NVIDIA/Model-Optimizer/issues/118"
FAILED_BUILD = "https://github.com/NVIDIA/Model-Optimizer/issues/439"
INT8_FOR_CONV = "https://github.com/NVIDIA/Model-Optimizer/issues/16"

SIZE, STEM, CHANNELS = 64, 3, 64
CONVS = ("/conv1/Conv", "/layer1/layer1.0/conv1/Conv")
MAXPOOL = "/maxpool/MaxPool"
REPORTED = {"precision": "fp8", "qdq": "after-maxpool"}

class Fp8QdqAfterMaxPool(Case):
    id = "p17-fp8-qdq-after-maxpool"
    title = "FP8 Q/DQ placed after a MaxPool (ModelOpt FP8 ResNet stem): Myelin cannot type the quantize"
    pattern = "P17"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="quantize-type-not-inferred", category="no-implementation",
            message=r"Could not infer output types for operation:\s*\d+:\s*quantize:",
            source="https://github.com/NVIDIA/Model-Optimizer/issues/118",
            example=("[type.cpp:infer_type:145] Could not infer output types for operation:    40: quantize: "
                     "/maxpool/MaxPool_output_0_QuantizeLinear_Output'-(fp8[7,64,192,256][]so[], mem_prop=0) No "
                     "matching rules found for input operand types"),
            skip_reason=True),
    )
    links = (ISSUE, FAILED_BUILD, INT8_FOR_CONV)
    mode = "explicit-qdq"
    opset = 19
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=0.1,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph: a backend computing on the same FP8 (or "
            "INT8) values differs by accumulation order and by a re-quantized MaxPool output one grid step off where "
            "rounding flips (E4M3 steps near the +-4 range are 1/8 of a binade, 0.03; summed over 576 weights below "
            "0.15 they rarely pass 0.05). A dropped Relu or a wrong scale moves outputs (about +-3) by far more."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no Myelin type inference: whether TensorRT can type an FP8 quantize after a MaxPool "
        "cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no Myelin type inference: it quantizes a MaxPool output to FP8 and back on any CPU. "
            "These cells show the graph is valid and computes, not whether TensorRT can type the quantize. "
            + ORT_DROPS_RELU_BEFORE_FP8_Q
        ),
    }
    remedy = (
        "No fix was posted for the FP8 form (#439 is open). For CNN convs a ModelOpt developer advises INT8 "
        "quantizers (the int8 variant) and the newest TensorRT; otherwise leave the MaxPool output unquantized or "
        "quantize before the MaxPool, and compare the engine's speed with FP16."
    )
    variants = (
        Variant(
            name="as-reported",
            needs=("fp8-qdq",),
            role="failing",
            description="FP8 Q/DQ conv 7x7/2 -> Relu -> MaxPool -> FP8 Q/DQ -> conv 3x3, weakly typed with the FP16 "
            "and FP8 flags (trtexec --fp16 --fp8).",
            params=REPORTED,
            knobs=Knobs(fp16=True, fp8=True),
        ),
        Variant(
            name="strongly-typed",
            needs=("fp8-qdq",),
            role="sweep",
            description="As reported, built strongly typed (trtexec --stronglyTyped, tried in #439: it failed too).",
            params=REPORTED,
            knobs=Knobs(strongly_typed=True),
            varies="as-reported",
            inherits=True,
        ),
        Variant(
            name="qdq-before-maxpool",
            needs=("fp8-qdq",),
            role="sweep",
            description="The FP8 Q/DQ moved before the MaxPool (between Relu and MaxPool), so the MaxPool reads "
            "dequantized data and the second conv's input has no Q/DQ of its own.",
            params={**REPORTED, "qdq": "before-maxpool"},
            knobs=Knobs(fp16=True, fp8=True),
            varies="as-reported",
        ),
        Variant(
            name="no-maxpool",
            needs=("fp8-qdq",),
            role="sweep",
            description="As reported without the MaxPool (the Q/DQ right after the Relu): is the MaxPool the trigger?",
            params={**REPORTED, "qdq": "no-maxpool"},
            knobs=Knobs(fp16=True, fp8=True),
            varies="as-reported",
        ),
        Variant(
            name="int8",
            role="workaround",
            description="The same graph with INT8 Q/DQ everywhere (weakly typed, FP16 allowed): a ModelOpt "
            "developer's advice for convs in #16.",
            params={**REPORTED, "precision": "int8"},
            knobs=Knobs(fp16=True),
            varies="as-reported",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        precision = p["precision"]
        graph = gs.Graph(name=Fp8QdqAfterMaxPool.id, opset=Fp8QdqAfterMaxPool.opset)
        x = g.graph_input("input", (1, STEM, SIZE, SIZE))
        graph.inputs.append(x)
        y = _conv(graph, x, "input", "/conv1/Conv", "onnx::Conv_193", STEM, 7, 2, precision)
        y = g.torch_node(graph, "Relu", "/relu", [y])
        unit = g.UNIT_ACTIVATION_SCALE_FP8 if precision == "fp8" else g.UNIT_ACTIVATION_SCALE
        if p["qdq"] == "before-maxpool":
            y = g.modelopt_fake_quantize(graph, y, "/relu/Relu_output_0", unit, precision=precision)
        if p["qdq"] != "no-maxpool":
            y = g.torch_node(graph, "MaxPool", "/maxpool", [y],
                             {"ceil_mode": 0, "dilations": [1, 1], "kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                              "strides": [2, 2]})
        source = {"after-maxpool": "/maxpool/MaxPool_output_0", "no-maxpool": "/relu/Relu_output_0"}.get(p["qdq"])
        y = _conv(graph, y, source, CONVS[1], "onnx::Conv_196", CHANNELS, 3, 1, precision)
        side = SIZE // 2 if p["qdq"] == "no-maxpool" else SIZE // 4
        g.mark_output(graph, y, (1, CHANNELS, side, side))
        if precision == "int8":
            return Built(graph, expected_int8=CONVS)
        return Built(graph, expected_precision=dict.fromkeys(CONVS, precision))

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """An FP8 QuantizeLinear that reads a MaxPool's output, or an FP8 DequantizeLinear a MaxPool reads."""
        found = []
        for pool in m.nodes_of(graph, "MaxPool"):
            after = _qdq_reading(pool.outputs[0])
            if after and m.quantized_precision(after[1]) == "fp8":
                found.append(Match(
                    case=cls.id, nodes=(after[0].name, pool.name, after[1].name), variant="as-reported",
                    note=f"FP8 quantize {after[0].name} of MaxPool {pool.name}'s output: TensorRT 10.7 skipped every "
                         "tactic of such a quantize ('Could not infer output types for operation: ... quantize'), "
                         "and the FP8 engine ran slower than FP16.",
                ))
                continue
            _, before = m.through_qdq(pool.inputs[0])
            if before and m.quantized_precision(before[1]) == "fp8":
                found.append(Match(
                    case=cls.id, nodes=(pool.name, *(n.name for n in before)), variant="qdq-before-maxpool",
                    note=f"MaxPool {pool.name} reads FP8 Q/DQ data and its output has no Q/DQ: a variant of the "
                         "ModelOpt placement that failed to type on TensorRT 10.7.",
                ))
        return found


def _qdq_reading(tensor) -> list:
    """[Q, DQ] when ``tensor`` is read only by a QuantizeLinear and that only by a DequantizeLinear, else []."""
    q = m.only_consumer(tensor)
    dq = m.only_consumer(q.outputs[0]) if q is not None and q.op == "QuantizeLinear" else None
    return [q, dq] if dq is not None and dq.op == "DequantizeLinear" else []


def _conv(graph: gs.Graph, x, source: str | None, name: str, weight: str, channels_in: int, kernel: int, stride: int,
          precision: str) -> gs.Variable:
    """A conv to CHANNELS with ModelOpt Q/DQ on its weight and, when ``source`` names the input tensor, its input."""
    unit = g.UNIT_ACTIVATION_SCALE_FP8 if precision == "fp8" else g.UNIT_ACTIVATION_SCALE
    if source is not None:
        x = g.modelopt_fake_quantize(graph, x, source, unit, precision=precision)
    values = g.conv_weight(weight, (CHANNELS, channels_in, kernel, kernel))
    w = g.modelopt_fake_quantize(graph, values, weight, g.per_channel_scale(values.values, precision=precision),
                                 axis=0, precision=precision)
    return g.node(graph, "Conv", name, [x, w], f"{name}_output_0",
                  g.conv_attrs(kernel, stride=stride, pad=kernel // 2))

