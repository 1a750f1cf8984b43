"""S1: YOLO stem Conv + SiLU (Sigmoid, Mul) under implicit INT8: "Could not find any implementation" on Jetson Orin.

Upstream: https://github.com/NVIDIA/TensorRT/issues/3640. The failing TensorRT layer is
``/model.0/conv/Conv + PWN(PWN(/model.0/act/Sigmoid), /model.0/act/Mul)``: the Sigmoid and Mul that torch.onnx
exports for SiLU fused into the stem conv. Names follow that log and torch.onnx (``images`` input,
``model.0.conv.weight``/``model.0.conv.bias`` initializers, ``<node>_output_0`` tensors; the thread's log shows an
Ultralytics export, opset 17, producer pytorch 2.1.0). The conv carries a bias: the Ultralytics exporter fuses
BatchNorm into the conv (``model.fuse()``) and names the input ``images``
(https://github.com/ultralytics/ultralytics/blob/main/ultralytics/engine/exporter.py).
"""
from __future__ import annotations

import re

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases._graphs import gs
from cases.model import Built, Case, Claim, FixResult, Knobs, Match, NoRewrite, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3640"
MINMAX_REPORT = "https://github.com/maggiez0138/yolov5_quant_sample/issues/11"

CONV = "/model.0/conv/Conv"
SIGMOID = "/model.0/act/Sigmoid"
MUL = "/model.0/act/Mul"
CONV_OUTPUT = f"{CONV}_output_0"
SIGMOID_OUTPUT = f"{SIGMOID}_output_0"

# Channel count and input size are not stated upstream: 16 channels and 32x32 are our choice for the failing form;
# the sweeps vary both.
REPORTED = {"out_channels": 16, "size": 32, "extra_output": None}

CLAIMS_AS_REPORTED = (
    Claim(
        target="trt86-orin",
        outcome="fail",
        category="no-implementation",
        source=ISSUE,
        strength="issue-thread",
        note="TensorRT 8.6.2 in the JetPack 6.0 container on Jetson AGX Orin; also reported on JetPack 5.1.2.",
        conditions=Conditions(
            support="reproduced",
            form="a YOLOv8 export and calibrator not known to be yours (a sibling report built with MinMax where "
                 "entropy calibration failed)",
        ),
    ),
    Claim(
        target="trt92-x86",
        outcome="pass",
        source=ISSUE,
        strength="issue-thread",
        note=(
            "A maintainer wrote '9.2 also pass' without naming the platform; TensorRT 9.x was never released for "
            "Jetson, so that build cannot have been on Orin: x86 assumed, GPU unknown."
        ),
    ),
    Claim(
        target="trt100-x86",
        outcome="pass",
        source=ISSUE,
        strength="write-up-only",
        note="10.0 passing appears only in a summary of the thread, not in the thread itself.",
    ),
    Claim(
        target="trt100-orin",
        outcome="pass",
        source=ISSUE,
        strength="write-up-only",
        note="10.0 passing appears only in a summary of the thread, not in the thread itself; platform not stated.",
    ),
)


def _workaround_claim(tensor: str) -> Claim:
    return Claim(
        target="trt86-orin",
        outcome="pass",
        source=ISSUE,
        strength="issue-thread",
        note=(
            f"Workaround suggested by a maintainer: mark {tensor} as a network output to break the Conv + PWN fusion. "
            "The thread was closed for inactivity; the reporter's confirmation is not recorded."
        ),
    )


class ConvSilu(Case):
    id = "s1-conv-silu"
    title = "YOLO stem Conv + SiLU (Sigmoid, Mul) under implicit INT8"
    pattern = "S1"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="conv-silu-no-implementation", category="no-implementation",
            message=(r"could not find any implementation for node .*\+ PWN\(PWN\([^()]*Sigmoid\), "
                     r"(?:[^()]*Mul|PWN\([^()]*Mul\))\)"), flags=re.IGNORECASE,
            source="https://github.com/NVIDIA/TensorRT/issues/3640",
            example=("[optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not find any implementation for "
                     "node /model.0/conv/Conv + PWN(PWN(/model.0/act/Sigmoid), /model.0/act/Mul).)")),
    )
    links = (ISSUE, MINMAX_REPORT)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=1.5,
        reason=(
            "Implicit INT8 against the FP32 reference. For N(0, 1) inputs the SiLU output lies in about [-0.3, 4.5]. "
            "The largest errors are tail values clipped by the calibrated range: fake-quantizing every activation "
            "with a 99.9th-percentile range (an aggressive entropy clip) gave at most 1.37 off (64 channels) and "
            "cosine > 0.999, so 1.5 (a third of the range) flags wrong results, not clipping; the cosine flags drift."
        ),
    )
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="Conv(3 -> 16, k3, s2, p1) -> Sigmoid -> Mul(conv, sigmoid) on a 1x3x32x32 image, "
            "entropy calibrator.",
            params=REPORTED,
            claims=CLAIMS_AS_REPORTED,
        ),
        Variant(
            name="conv-output-marked",
            role="workaround",
            varies="as-reported", inherits=False,
            description=f"As reported, with {CONV_OUTPUT} also a graph output (and marked by the backend).",
            params={**REPORTED, "extra_output": CONV_OUTPUT},
            knobs=Knobs(extra_outputs=(CONV_OUTPUT,)),
            claims=(_workaround_claim(CONV_OUTPUT),),
        ),
        Variant(
            name="sigmoid-output-marked",
            role="workaround",
            varies="as-reported", inherits=False,
            description=f"As reported, with {SIGMOID_OUTPUT} also a graph output (and marked by the backend).",
            params={**REPORTED, "extra_output": SIGMOID_OUTPUT},
            knobs=Knobs(extra_outputs=(SIGMOID_OUTPUT,)),
            claims=(_workaround_claim(SIGMOID_OUTPUT),),
        ),
        Variant(
            name="channels-32",
            role="sweep",
            varies="as-reported", inherits=True,
            description="As reported, with 32 output channels.",
            params={**REPORTED, "out_channels": 32},
        ),
        Variant(
            name="channels-64",
            role="sweep",
            varies="as-reported", inherits=True,
            description="As reported, with 64 output channels.",
            params={**REPORTED, "out_channels": 64},
        ),
        Variant(
            name="size-64",
            role="sweep",
            varies="as-reported", inherits=True,
            description="As reported, on a 1x3x64x64 image.",
            params={**REPORTED, "size": 64},
        ),
        Variant(
            name="calibrator-minmax",
            role="sweep",
            varies="as-reported", inherits=True,  # Another calibrator, same graph
            description=f"As reported, calibrated with MinMax instead of entropy (a sibling report, {MINMAX_REPORT}, "
            "built with MinMax).",
            params=REPORTED,
            knobs=Knobs(calibrator="minmax"),
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=ConvSilu.id, opset=ConvSilu.opset)
        images = g.graph_input("images", (1, 3, p["size"], p["size"]))
        graph.inputs.append(images)
        weight = g.conv_weight("model.0.conv.weight", (p["out_channels"], 3, 3, 3))
        conv_bias = g.bias("model.0.conv.bias", p["out_channels"])
        attrs = g.conv_attrs(3, stride=2, pad=1)
        conv = g.torch_node(graph, "Conv", "/model.0/conv", [images, weight, conv_bias], attrs)
        sigmoid = g.torch_node(graph, "Sigmoid", "/model.0/act", [conv])
        shape = (1, p["out_channels"], p["size"] // 2, p["size"] // 2)
        g.mark_output(graph, g.torch_node(graph, "Mul", "/model.0/act", [conv, sigmoid]), shape)
        extra = {CONV_OUTPUT: conv, SIGMOID_OUTPUT: sigmoid}.get(p["extra_output"])
        if extra is not None:
            g.mark_output(graph, extra, shape)
        # Sigmoid and Mul are pointwise: TensorRT fuses them into the conv (the PWN of the log) or runs them in any
        # precision; whether the conv itself stays INT8 is what the pattern is about.
        return Built(graph, expected_int8=(CONV,))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return None if workaround.knobs.extra_outputs else f"{workaround.name} is not an extra-output workaround"

    @classmethod
    def fix(cls, graph, match: Match, workaround: Variant) -> FixResult:
        """Mark the conv (or sigmoid) output of this SiLU as a graph output, the knob ``extra_outputs`` carried by
        the ONNX file itself: TensorRT's parser marks every graph output."""
        if workaround.name not in ("conv-output-marked", "sigmoid-output-marked"):
            raise NoRewrite(cls.rewrite_problem(workaround) or f"no rewrite for {workaround.name}")
        conv, sigmoid = (rw.node_named(graph, name) for name in match.nodes[:2])
        marked = conv if workaround.name == "conv-output-marked" else sigmoid
        name = rw.mark_output(graph, marked.outputs[0])
        return FixResult(outputs_added=[name], note=f"{name} ({marked.op} {marked.name}'s output) is now also a graph "
                         "output, which keeps TensorRT from fusing this Conv + SiLU")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every Conv -> Sigmoid -> Mul(conv output, sigmoid output) (SiLU as torch.onnx writes it) of an implicit-INT8
        model; none in a model with Q/DQ, which TensorRT quantizes explicitly without a calibrator."""
        if m.has_qdq(graph):
            return []
        found = []
        for mul in m.nodes_of(graph, "Mul"):
            silu = _silu_at(mul)
            if silu is None:
                continue
            conv, sigmoid = silu
            found.append(_match(graph, conv, sigmoid, mul))
        return found


def _silu_at(mul) -> tuple | None:
    """(Conv, Sigmoid) when ``mul`` computes conv_out * sigmoid(conv_out), else None."""
    if len(mul.inputs) != 2:
        return None
    for x, s in (mul.inputs, mul.inputs[::-1]):
        sigmoid = m.producer(s)
        conv = m.producer(x)
        if sigmoid is not None and sigmoid.op == "Sigmoid" and sigmoid.inputs[0] is x and conv is not None \
                and conv.op == "Conv":
            return conv, sigmoid
    return None


def _match(graph, conv, sigmoid, mul) -> Match:
    conv_out, sigmoid_out = conv.outputs[0], sigmoid.outputs[0]
    marked = {CONV_OUTPUT: m.is_graph_output(graph, conv_out), SIGMOID_OUTPUT: m.is_graph_output(graph, sigmoid_out)}
    weight_shape = getattr(m.weight_constant(conv.inputs[1]), "shape", None) if len(conv.inputs) > 1 else None
    params = {
        "extra_output": next((name for name, is_marked in marked.items() if is_marked), None),
        "out_channels": weight_shape[0] if weight_shape else None,
        "size": m.channels_of(conv.inputs[0], axis=2),
    }
    variant, differences = m.nearest_variant(ConvSilu.variants, params, required=("extra_output",))
    notes = ["Conv -> Sigmoid -> Mul(conv output, sigmoid output): SiLU, which TensorRT fuses into the conv, in an "
             "implicit-INT8 model"]
    if params["extra_output"] is not None:
        notes.append(f"{'the conv' if marked[CONV_OUTPUT] else 'the sigmoid'} output is a graph output, which breaks "
                     "the Conv + SiLU fusion")
    elsewhere = m.read_elsewhere(graph, conv_out, sigmoid, mul) and not marked[CONV_OUTPUT]
    if elsewhere:
        notes.append("the conv output is also read by other nodes")
    in_channels = m.channels_of(conv.inputs[0])
    if in_channels is not None and in_channels != 3:
        notes.append(f"not a 3-channel stem conv ({in_channels} input channels): upstream reported the stem")
    if differences:
        notes.append("nearest library variant differs in " + ", ".join(differences))
    return Match(case=ConvSilu.id, nodes=(conv.name, sigmoid.name, mul.name), variant=variant.name,
                 note="; ".join(notes))
