"""S3: depthwise (and grouped) Conv with explicit Q/DQ on the weights: "Could not find any implementation" on Turing.

Upstream: https://github.com/NVIDIA/TensorRT/issues/4060 (open): ``Could not find any implementation for node
weights + node_of_weights_quantized + node_of_output``. ``node_of_<tensor>`` is what onnx-tensorrt calls an ONNX node
that has no name: ``"node_of_" + node.output(0)`` (``getNodeName`` in
https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/onnx2trt_utils.cpp). So the reporter's graphsurgeon-made
nodes were unnamed, the weight initializer was ``weights``, the weight QuantizeLinear wrote ``weights_quantized`` and
the Conv wrote ``output`` (TensorRT drops the DequantizeLinear from fused layer names, as the S5 log also shows).
We give every node the name TensorRT would give it, so layer names match the log and ``expected_int8`` can name the
conv. Tensors the log does not show follow the same scheme: ``input`` -> ``input_quantized`` -> ``input_dequantized``,
``weights_dequantized``; an INT8 weight initializer is ``weights_quantized``.

NvInfer.h (``IConvolutionLayer::setNbGroups``) documents that INT8 needs input and output channels per group to be a
multiple of 4, which would exclude every depthwise conv: channels per group is swept, on depthwise (groups = C) and on
grouped convs.
"""
from __future__ import annotations

import re
import itertools

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases._graphs import gs
from cases.model import AlreadyInForm, Built, Case, Claim, FixResult, Match, NoRewrite, Tolerance, Variant
from harness.tensorrt.signatures import KnownForm
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4060"
# The same layer with a residual Add fused after the Conv (a MobileNeXt sandglass block): four parts, not three.
RESIDUAL_ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3579"
NVINFER_H = "https://github.com/NVIDIA/TensorRT/blob/release/8.6/include/NvInfer.h"

CONV = "node_of_output"
SIZE = 16
WEIGHT_FORMS = {
    "float-qdq": "float weights -> QuantizeLinear -> DequantizeLinear",
    "int8-dq": "INT8 weights -> DequantizeLinear",
    "float": "float weights, no weight Q/DQ",
}
DEPTHWISE_CHANNELS = (3, 4, 8, 16, 32, 144)
GROUPS = 4
# 1 channel per group with 4 groups is depthwise-c4, already in the depthwise sweep.
CHANNELS_PER_GROUP = (2, 3, 4, 8)
# The thread does not state the channel count: 32 is our choice for the failing form.
REPORTED = {"channels": 32, "groups": 32, "weights": "float-qdq", "per_channel": True}

CLAIMS_AS_REPORTED = (
    Claim(
        target="trt86-x86",
        outcome="fail",
        category="no-implementation",
        source=ISSUE,
        strength="issue-thread",
        note=(
            "Reported as TensorRT '8.6.11' on a Quadro T2000 (sm_75), driver 470, CUDA 11.4 (the user's deployment "
            "target was Orin); channel count and input size not stated."
        ),
        conditions=Conditions(support="one-report", gpu="7.5", gpu_name="Quadro T2000", driver="470.256.02",
                              form="the reporter's channel count and input size are not stated"),
    ),
    Claim(
        target="trt102-x86",
        outcome="fallback",
        source=ISSUE,
        strength="write-up-only",
        note="A write-up says 10.2 builds it but runs the depthwise conv in FP32 (the Q/DQ are not fused).",
        conditions=Conditions(support="one-report"),
    ),
)
FLOAT_WEIGHTS_CLAIM = Claim(
    target="trt86-x86",
    outcome="fallback",
    source=ISSUE,
    strength="issue-thread",
    note="Per the thread, removing the weight Q/DQ lets the build succeed, with the conv in FP32 (T2000, '8.6.11').",
    conditions=Conditions(support="one-report", gpu="7.5", gpu_name="Quadro T2000", driver="470.256.02"),
)


def _name(channels: int, groups: int, weights: str, per_channel: bool) -> str:
    kind = f"depthwise-c{channels}" if groups == channels else f"grouped-g{groups}-cpg{channels // groups}"
    granularity = "" if weights == "float" else ("-per-channel" if per_channel else "-per-tensor")
    return f"{kind}-{weights}{granularity}"


def _variant(channels: int, groups: int, weights: str, per_channel: bool) -> Variant:
    params = {"channels": channels, "groups": groups, "weights": weights, "per_channel": per_channel}
    granularity = ""
    if weights != "float":
        granularity = " (per-channel scale, axis 0)" if per_channel else " (per-tensor scale)"
    description = f"{channels} channels in {groups} groups, {WEIGHT_FORMS[weights]}{granularity}."
    if params == REPORTED:
        return Variant(_name(**params), "failing", f"As reported: {description}", params, claims=CLAIMS_AS_REPORTED)
    reported = _name(**REPORTED)
    if weights == "float":
        return Variant(_name(**params), "workaround", description, params, claims=(FLOAT_WEIGHTS_CLAIM,),
                       varies=reported)
    # A depthwise conv with the reported weight form keeps its structure at any channel count and scale granularity;
    # INT8-stored weights drop the weight QuantizeLinear and a grouped conv has other weight shapes: forms of their own.
    same_form = groups == channels and weights == REPORTED["weights"]
    return Variant(_name(**params), "sweep", description, params, varies=reported, inherits=same_form)


def _variants() -> tuple[Variant, ...]:
    depthwise = [
        _variant(c, c, weights, per_channel)
        for c, weights, per_channel in itertools.product(DEPTHWISE_CHANNELS, ("float-qdq", "int8-dq"), (True, False))
    ]
    grouped = [
        _variant(GROUPS * cpg, GROUPS, weights, True)
        for cpg, weights in itertools.product(CHANNELS_PER_GROUP, ("float-qdq", "int8-dq"))
    ]
    workaround = _variant(REPORTED["channels"], REPORTED["groups"], "float", False)
    return (*depthwise, *grouped, workaround)


class DepthwiseQdq(Case):
    id = "s3-depthwise-qdq"
    title = "Depthwise and grouped Conv with explicit Q/DQ weights"
    pattern = "S3"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownForm(
            id="qdq-weights-layer-no-implementation", kind="no-implementation",
            form=r"^[^\s+()]+ \+ [^\s+()]*quantiz[^\s+()]* \+ [^\s+()]+$", flags=re.IGNORECASE,
            source="https://github.com/NVIDIA/TensorRT/issues/4060",
            note=("a layer made of weights, their QuantizeLinear and one consumer, nothing fused after it, has no "
                  "implementation: S3's form when the consumer is a depthwise Conv; other Q/DQ convolutions fail in "
                  "this form too (https://github.com/NVIDIA/TensorRT/issues/1768), so the model decides (--model)"),
            example="[E] Error[10]: Could not find any implementation for node weights + node_of_weights_quantized + node_of_output."),
        KnownForm(  # the same layer with the residual Add of a MobileNeXt sandglass block fused after the Conv
            id="qdq-weights-layer-residual-no-implementation", kind="no-implementation",
            form=r"^[^\s+()]+ \+ [^\s+()]*quantiz[^\s+()]* \+ [^\s+()]+ \+ [^\s+()]+$", flags=re.IGNORECASE,
            source=RESIDUAL_ISSUE,
            note=("a layer of weights, their QuantizeLinear, a Conv and the Add fused after it has no implementation: "
                  "S3's form extended by the residual Add; whether the Conv is depthwise the model decides (--model)"),
            example="[E] 10: Could not find any implementation for node SandGlass4.8.weight + "
                    "/SandGlass4/SandGlass4.8/_weight_quantizer/QuantizeLinear + /SandGlass4/SandGlass4.8/Conv + /Add."),
    )
    links = (ISSUE, NVINFER_H, RESIDUAL_ISSUE)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=2 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph (FP32 output, no output Q): an INT8 or "
            "FP32 conv on the dequantized values differs only by accumulation order, or by a rounding tie flipping an "
            "input step, which moves an output by one input step times |w| (|w| < 2 here): 2 input steps."
        ),
    )
    variants = _variants()

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        channels, groups = p["channels"], p["groups"]
        graph = gs.Graph(name=DepthwiseQdq.id, opset=DepthwiseQdq.opset)
        x = g.graph_input("input", (1, channels, SIZE, SIZE))
        graph.inputs.append(x)
        x_params = g.quantizer_params("input_scale", "input_zero_point", g.UNIT_ACTIVATION_SCALE)
        x_q = g.quantize_linear(graph, x, *x_params, "node_of_input_quantized", "input_quantized")
        x_dq = g.dequantize_linear(graph, x_q, *x_params, "node_of_input_dequantized", "input_dequantized")

        weights = g.conv_weight("weights", (channels, channels // groups, 3, 3))
        if p["weights"] == "float":
            w = weights
        else:
            axis = 0 if p["per_channel"] else None
            scale = g.per_channel_scale(weights.values) if p["per_channel"] else g.per_tensor_scale(weights.values)
            w_params = g.quantizer_params("weights_scale", "weights_zero_point", scale)
            if p["weights"] == "float-qdq":
                w_q = g.quantize_linear(
                    graph, weights, *w_params, "node_of_weights_quantized", "weights_quantized", axis
                )
            else:
                w_q = gs.Constant("weights_quantized", g.quantize_values(weights.values, scale))
            w = g.dequantize_linear(graph, w_q, *w_params, "node_of_weights_dequantized", "weights_dequantized", axis)

        y = g.node(graph, "Conv", CONV, [x_dq, w], "output", g.conv_attrs(3, pad=1, group=groups))
        g.mark_output(graph, y, (1, channels, SIZE, SIZE))
        # The conv is the only compute node between the DequantizeLinear and the output.
        return Built(graph, expected_int8=(CONV,))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        if workaround.params.get("weights") == "float":
            return None
        return f"{workaround.name} is not a float-weight form"

    @classmethod
    def fix(cls, graph, match: Match, workaround: Variant) -> FixResult:
        """The conv reads its weight as the float constant its weight Q/DQ computed (dequantized offline): the same
        numbers, without the weight Q/DQ TensorRT has no INT8 kernel for in this grouped conv."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        conv = rw.node_named(graph, match.nodes[0])
        weight = conv.inputs[1]
        if m.dequantized(weight) is None:
            raise AlreadyInForm(f"{conv.name} already reads a float weight")
        values = rw.constant_value(weight)
        if values is None:
            raise NoRewrite(f"{conv.name}'s weight {weight.name} cannot be computed offline")
        quantizer = m.quantizer_before(weight)[::-1]  # the DQ first: it is unread once the conv no longer reads it
        conv.inputs[1] = gs.Constant(rw.unique_name(graph, f"{weight.name}_dequantized"), values)
        removed = rw.remove_unread(graph, quantizer)
        return FixResult(nodes_removed=removed, note=f"{conv.name} reads its weight as a float constant (the values "
                         f"its weight Q/DQ computed); removed {', '.join(removed) or 'nothing (still read elsewhere)'}")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every grouped Conv (depthwise or not) whose input reaches it through DequantizeLinear, with its weight
        form: float W -> Q -> DQ, INT8 W -> DQ, or float W (the workaround form)."""
        found = []
        for conv in m.nodes_of(graph, "Conv"):
            groups = m.attr(conv, "group", 1)
            if groups <= 1 or len(conv.inputs) < 2 or m.dequantized(conv.inputs[0]) is None:
                continue
            weight = m.weight_constant(conv.inputs[1])
            form = _weight_form(conv.inputs[1], weight)
            if form is None:
                continue
            params = {
                "weights": form,
                "per_channel": m.is_per_channel(conv.inputs[1]),
                "channels": weight.shape[0] if getattr(weight, "shape", None) else None,
                "groups": groups,
            }
            variant, differences = m.nearest_variant(DepthwiseQdq.variants, params, required=("weights", "per_channel"))
            kind = "depthwise" if m.is_depthwise(conv) else "grouped"
            note = f"{kind} conv, {params['channels']} channels in {groups} groups, {WEIGHT_FORMS[form]}"
            if differences:
                note += "; nearest library variant differs in " + ", ".join(differences)
            nodes = [conv, *m.quantizer_before(conv.inputs[0]), *m.quantizer_before(conv.inputs[1])]
            found.append(Match(case=DepthwiseQdq.id, nodes=tuple(n.name for n in nodes), variant=variant.name,
                               note=note))
        return found


def _weight_form(weight_input, weight) -> str | None:
    """Which of WEIGHT_FORMS the conv's weight input has; None when the weight is not a constant."""
    if weight is None:
        return None
    if weight is weight_input:
        return "float"
    if m.qdq_before(weight_input):
        return "float-qdq"
    return "int8-dq"
