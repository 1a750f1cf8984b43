"""P14: INT8 data moved (Reshape, Transpose, Slice) before a DequantizeLinear with an FP16 scalar scale, strongly typed:
builds on Thor (SM 11.0), not on Orin (SM 8.7), with the same TensorRT and the same ONNX file.

Upstream: https://github.com/NVIDIA/TensorRT/issues/4832 (open, label Module:Quantization). TensorRT 10.16.2.10
(trtexec v101602, CUDA 13.2) on L4T R39.2, the byte-identical ONNX from ModelOpt 0.44 (``modelopt.onnx.quantization``
INT8 PTQ, entropy calibration), ``trtexec --stronglyTyped``. On Orin every tactic is skipped with ``Error Code 9 ...
[type.cpp:186: infer_type] Could not infer output types for operation: ... dequantize: ... (i8[]) ... Input
Dequantization 0 scale weightsHalf-0.35498H:(f16[]) ... No matching rules found for input operand types`` and the
build fails; on Thor the engine builds in 123 s. The two devices differ only in GPU architecture. The Myelin operand
shows the DQ's INT8 input as ``input0 reshape out_transpose_out reshape out slice_U28 out``: the quantized tensor went
through Reshape, Transpose, Reshape and Slice before the DequantizeLinear, whose scale is one FP16 value. No workaround
was posted: the case has none, and its ``remedy`` says so.

Graph (ours, shapes not given upstream): input (1, 32, 32, 32) -> Q (INT8, per tensor) -> Reshape (1, 32, 1024) ->
Transpose (0, 2, 1) -> Reshape (1, 32, 32, 32) -> Slice (channels 0..16) -> DQ (FP16 scalar scale) -> Conv 3x3 pad 1
16 -> 16 (INT8 weight via DQ, FP16 per-channel scales, as ModelOpt writes for an FP16 network) -> Cast to FP32 ->
output. ModelOpt naming (``<tensor>_QuantizeLinear``, ``<tensor>_DequantizeLinear``), torch.onnx node names.

Sweeps: the scale type (FP32), each data-movement op alone, DQ before the data movement (the common form), and a
weakly typed build. The GPU architecture is the target's (claims name it): a matrix with an Orin and a Thor target of
the same TensorRT runs the reported pair.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Match, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4832"

CHANNELS, SIZE, KEPT = 32, 32, 16
CONV = "/head/conv/Conv"
DQ = "/stem/Slice_output_0_DequantizeLinear"
MOVES = ("reshape", "transpose", "slice")
DATA_MOVEMENT_OPS = ("Reshape", "Transpose", "Slice", "Squeeze", "Unsqueeze", "Flatten")  # what find walks back over
REPORTED = {"moves": MOVES, "scale_dtype": "float16", "dq_first": False}

_ORIN_NOTE = ("TensorRT 10.16.2.10 on L4T R39.2, Jetson AGX Orin (SM 8.7), trtexec --stronglyTyped on a ModelOpt 0.44 "
              "INT8 PTQ model: every tactic skipped with 'Could not infer output types for operation: ... dequantize "
              "... No matching rules found for input operand types', build failed.")
_THOR_NOTE = ("Same TensorRT 10.16.2.10, same L4T R39.2 and the byte-identical ONNX on Jetson Thor (SM 11.0): the "
              "engine built in 123 s.")
# The reported pair on the 10.16 targets of JetPack 7.2: the same release line on Orin (SM 8.7) and Thor (SM 11.0). The
# reporter ran JetPack's own 10.16.2.10; the targets' 26.04 image brings 10.16.1.11 (matrix.yaml: "10.16" takes both).
CLAIMS = (
    Claim(target="trt1016-orin", outcome="fail", category="no-implementation", source=ISSUE, strength="issue-thread",
          architecture="8.7", note=_ORIN_NOTE, conditions=Conditions(support="one-report")),
    Claim(target="trt1016-thor", outcome="pass", source=ISSUE, strength="issue-thread", architecture="11.0",
          note=_THOR_NOTE),
)


class DequantizeAfterDataMovement(Case):
    id = "p14-dequantize-after-data-movement"
    title = "INT8 Reshape/Transpose/Slice before a DequantizeLinear with an FP16 scalar scale, strongly typed"
    pattern = "P14"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="dequantize-type-not-inferred", category="no-implementation",
            message=r"Could not infer output types for operation:\s*\d+:\s*dequantize:",
            source="https://github.com/NVIDIA/TensorRT/issues/4832",
            example=("Error Code 9: [type.cpp:186: infer_type] Could not infer output types for operation: 291: dequantize: "
                     "Dequantized input0-(f32[1,16,512,512]) | input0 reshape out_transpose_out reshape out slice_U28 "
                     "out-(i8[]) No matching rules found for input operand types"),
            skip_reason=True),
    )
    links = (ISSUE,)
    mode = "explicit-qdq"
    opset = 19
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=0.05,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, which computes the conv in FP16 from "
            "dequantized FP16 values (FP32 in the FP32-scale sweep): a backend running it in INT8 or FP32 differs "
            "by FP16 rounding of the 144-term sums (|output| < 4, half an FP16 ulp at 4 is 0.002) and by a flipped "
            "rounding of the dequantized input, one step of 4/127 times a weight below 0.2. Moving data (a wrong "
            "transpose or slice) changes outputs by about 1, far above 0.05."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no architecture-dependent Myelin type inference: whether TensorRT on SM 8.7 "
        "types this DequantizeLinear cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime moves INT8 data through Reshape, Transpose and Slice and dequantizes with an FP16 scale on "
            "every CPU; it has no architecture-dependent Myelin type inference. Its CPU EP has no FP16 conv and casts "
            "around it, so the conv runs FP32 there. These cells say the graph is valid and computes, not whether "
            "TensorRT on SM 8.7 infers the DequantizeLinear's types."
        ),
    }
    remedy = (
        "None posted upstream (the report is open). Move the DequantizeLinear before the Reshape/Transpose/Slice (the "
        "dq-first sweep) or store its scale in FP32 (scale-fp32), and check both on the Orin target before shipping."
    )
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="Q(INT8) -> Reshape -> Transpose -> Reshape -> Slice -> DQ (FP16 scalar scale) -> Conv (INT8 "
            "weight, FP16 scales) -> Cast FP32, strongly typed.",
            params=REPORTED,
            knobs=Knobs(strongly_typed=True),
            claims=CLAIMS,
        ),
        Variant(
            name="scale-fp32",
            role="sweep",
            description="As reported with FP32 scales (DQ outputs FP32; the conv runs in FP32 types).",
            params={**REPORTED, "scale_dtype": "float32"},
            knobs=Knobs(strongly_typed=True),
            varies="as-reported",
        ),
        *(Variant(
            name=f"{move}-only",
            role="sweep",
            description=f"As reported with only the {move.capitalize()} between Q and DQ.",
            params={**REPORTED, "moves": (move,)},
            knobs=Knobs(strongly_typed=True),
            varies="as-reported",
        ) for move in MOVES),
        Variant(
            name="dq-first",
            role="sweep",
            description="As reported with the DequantizeLinear right after the QuantizeLinear, so the Reshape, "
            "Transpose, Reshape and Slice move FP16 data (TensorRT may still swap them across the DQ).",
            params={**REPORTED, "dq_first": True},
            knobs=Knobs(strongly_typed=True),
            varies="as-reported",
        ),
        Variant(
            name="weakly-typed",
            role="sweep",
            description="As reported, built weakly typed (INT8 flag, no --stronglyTyped): on TensorRT 11 there is only "
            "strongly typed.",
            params=REPORTED,
            varies="as-reported",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        half = p["scale_dtype"] == "float16"
        scale_dtype = np.float16 if half else np.float32
        graph = gs.Graph(name=DequantizeAfterDataMovement.id, opset=DequantizeAfterDataMovement.opset)
        x = g.graph_input("input", (1, CHANNELS, SIZE, SIZE))
        graph.inputs.append(x)
        q_params = g.quantizer_params("input_scale", "input_zero_point", g.UNIT_ACTIVATION_SCALE)
        x = g.quantize_linear(graph, x, *q_params, "input_QuantizeLinear", "input_QuantizeLinear_Output")
        dq_params = g.quantizer_params("/stem/Slice_output_0_scale", "/stem/Slice_output_0_zero_point",
                                       g.UNIT_ACTIVATION_SCALE, scale_dtype=scale_dtype)
        if p["dq_first"]:
            x = g.dequantize_linear(graph, x, *dq_params, DQ, "/stem/Slice_output_0_DequantizeLinear_Output")
        x, (channels, height, width) = _move(graph, x, p["moves"])
        if not p["dq_first"]:
            x = g.dequantize_linear(graph, x, *dq_params, DQ, "/stem/Slice_output_0_DequantizeLinear_Output")
        weights = g.conv_weight("head.conv.weight", (KEPT, channels, 3, 3))
        w = g.dequantize_int8_weight(graph, weights, g.per_channel_scale(weights.values), "head.conv.weight_quantized",
                                     "head.conv.weight_scale", "head.conv.weight_zero_point",
                                     "head.conv.weight_DequantizeLinear", "head.conv.weight_DequantizeLinear_Output",
                                     axis=0, scale_dtype=scale_dtype)
        y = g.torch_node(graph, "Conv", "/head/conv", [x, w], g.conv_attrs(3, pad=1))
        if half:
            y = g.torch_node(graph, "Cast", "/head", [y], {"to": 1})  # TensorProto.FLOAT: the output stays FP32
        g.mark_output(graph, y, (1, KEPT, height, width))
        return Built(graph, expected_int8=(CONV,))

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """A DequantizeLinear whose INT8 input was written by Reshape/Transpose/Slice (through any chain of them) from
        a QuantizeLinear; the variant follows the scale's type and the ops moved."""
        found = []
        if next(m.nodes_of(graph, *DATA_MOVEMENT_OPS), None) is None:  # nothing moves data: no DQ reads moved data
            return found
        for dq in m.nodes_of(graph, "DequantizeLinear"):
            moved, node = [], m.producer(dq.inputs[0])
            while node is not None and node.op in DATA_MOVEMENT_OPS:
                moved.append(node)
                node = m.producer(node.inputs[0])
            if not moved or node is None or node.op != "QuantizeLinear" or m.quantized_precision(dq) == "fp8":
                continue
            ops = tuple(dict.fromkeys(n.op.lower() for n in reversed(moved)))
            half = m.scale_dtype(dq) == "float16"
            if half and ops == MOVES:
                variant = "as-reported"
            elif half and len(ops) == 1:
                variant = f"{ops[0]}-only"
            else:
                variant = "scale-fp32" if not half and ops == MOVES else None
            found.append(Match(
                case=cls.id, nodes=(dq.name, *(n.name for n in reversed(moved)), node.name), variant=variant,
                note=f"{dq.name} dequantizes INT8 data moved by {', '.join(n.op for n in reversed(moved))} with a "
                     f"{m.scale_dtype(dq) or 'unknown-type'} scale: TensorRT 10.16.2 on Orin (SM 8.7) could not infer "
                     "the DequantizeLinear's types for this form (strongly typed) while Thor built it.",
            ))
        return found


def _move(graph: gs.Graph, x, moves: tuple[str, ...]) -> tuple[gs.Variable, tuple[int, int, int]]:
    """The reported data movement, or the ops of ``moves`` alone; returns the tensor and its (channels, height,
    width): the reported chain ends in the (1, 32, 32, 32) layout it started from, a Reshape alone folds 2x2 pixels into
    channels (1, 128, 16, 16), a Transpose alone swaps height and width, the Slice keeps channels 0..16."""
    shape = (CHANNELS, SIZE, SIZE)
    if "reshape" in moves and "transpose" in moves:
        x = _reshape(graph, x, "/stem/Reshape", (1, CHANNELS, SIZE * SIZE))
        x = g.torch_node(graph, "Transpose", "/stem", [x], {"perm": [0, 2, 1]})
        x = _reshape(graph, x, "/stem/Reshape_1", (1, CHANNELS, SIZE, SIZE))
    elif "reshape" in moves:
        shape = (CHANNELS * 4, SIZE // 2, SIZE // 2)
        x = _reshape(graph, x, "/stem/Reshape", (1, *shape))
    elif "transpose" in moves:
        x = g.torch_node(graph, "Transpose", "/stem", [x], {"perm": [0, 1, 3, 2]})
    if "slice" in moves:
        starts, ends, axes = ([gs.Constant(f"/stem/Slice_{k}", np.array(v, dtype=np.int64)) for k, v in
                               (("starts", [0]), ("ends", [KEPT]), ("axes", [1]))])
        x = g.torch_node(graph, "Slice", "/stem", [x, starts, ends, axes])
        shape = (KEPT, *shape[1:])
    return x, shape


def _reshape(graph: gs.Graph, x, name: str, shape: tuple[int, ...]) -> gs.Variable:
    target = gs.Constant(f"{name}_shape", np.array(shape, dtype=np.int64))
    return g.node(graph, "Reshape", name, [x, target], f"{name}_output_0")
