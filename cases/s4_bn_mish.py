"""S4: MobileNeXt SandGlass depthwise Conv -> BatchNormalization -> Mish under implicit INT8 (TensorRT 10.0.1.6).

Upstream: https://github.com/NVIDIA/TensorRT/issues/3869 (duplicate https://github.com/NVIDIA/TensorRT/issues/3870):
"Could not find any implementation for node SandGlass1.0.weight". Per the same user's
https://github.com/NVIDIA/TensorRT/issues/3579 that weight belongs to a 32-channel depthwise 3x3 conv followed by
BatchNorm, with the block's activations replaced by Mish. Only the weight name is in the log: the other names are
torch.onnx names for an ``nn.Sequential`` ``SandGlass1`` of (conv, bn, act) = ``SandGlass1.0/1/2``. BatchNormalization
stays a node, as the pattern has it (the weight kept its parameter name, which suggests BN was not folded into it).

Mish reaches ONNX in two forms and we do not know which the reporter's model had: torch.onnx writes
``Softplus -> Tanh -> Mul(x, .)`` below opset 18 and the native ``Mish`` op from opset 18 (those variants override the
case's opset 17).
"""
from __future__ import annotations

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Match, Scope, Tolerance, Variant
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3869"
DUPLICATE = "https://github.com/NVIDIA/TensorRT/issues/3870"
SANDGLASS_REPORT = "https://github.com/NVIDIA/TensorRT/issues/3579"
# onnx-tensorrt's operator table for 8.6: opsets up to 17 and no Mish; Mish is listed from 10.0.
OPERATORS_86 = "https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/docs/operators.md"

CHANNELS = 32
SIZE = 16
CONV = "/SandGlass1/SandGlass1.0/Conv"
ACT_SCOPE = "/SandGlass1/SandGlass1.2"
# Q/DQ of the workaround, between BN and the activation, as a pytorch-quantization TensorQuantizer would be named.
ACT_QUANTIZER = "/SandGlass1/act_quantizer"
CONV_INPUT_QUANTIZER = "/SandGlass1/SandGlass1.0/_input_quantizer"
CONV_WEIGHT_QUANTIZER = "/SandGlass1/SandGlass1.0/_weight_quantizer"


def _issue_claims(form: str) -> tuple[Claim, ...]:
    return (
        Claim(
            target="trt100-x86",
            outcome="fail",
            category="no-implementation",
            source=ISSUE,
            strength="issue-thread",
            note=f"TensorRT 10.0.1.6, Python API, BuilderFlag.INT8 + int8_calibrator. Which Mish form the reporter's "
            f"ONNX carried is not known (this variant: {form}).",
            conditions=Conditions(support="reproduced",
                                  form="which Mish form (native or decomposed) the reporter's ONNX carried "
                                       "is not known"),
        ),
        Claim(
            target="trt102-x86",
            outcome="pass",
            source=ISSUE,
            strength="write-up-only",
            note="Fixed in 10.2 according to a write-up only.",
        ),
    )


NATIVE_MISH_UNSUPPORTED = tuple(
    Claim(
        target=target,
        outcome="unsupported",
        category="unsupported-op",
        source=OPERATORS_86,
        strength="documentation",
        note="onnx-tensorrt 8.6 supports opsets up to 17 and its operator table has no Mish (listed from 10.0).",
        conditions=Conditions(support="documented"),
    )
    for target in ("trt86-x86", "trt86-orin")
)
WORKAROUND_CLAIM = Claim(
    target="trt100-x86",
    outcome="pass",
    source=ISSUE,
    strength="write-up-only",
    note=(
        "A write-up gives Q/DQ between BN and the activation as the workaround. With any Q/DQ in the network "
        "TensorRT quantizes explicitly and ignores the calibrator, so a conv without Q/DQ on its input is not INT8: "
        "the write-up does not say whether the conv stayed INT8."
    ),
)


class BnMish(Case):
    id = "s4-bn-mish"
    title = "SandGlass depthwise Conv + BatchNorm + Mish under implicit INT8"
    pattern = "S4"
    links = (ISSUE, DUPLICATE, SANDGLASS_REPORT, OPERATORS_86)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=3.0,
        reason=(
            "Implicit INT8 against the FP32 reference; the Q/DQ workarounds, compared with their own Q/DQ reference, "
            "sit far inside it. Conv weights N(0, 1/9) and a near-identity BN keep the pre-activation about N(0, 1), "
            "so for N(0, 1) inputs the output lies in about [-0.31, 7.5], its top in rare tail elements that a "
            "calibrated range clips: ONNX Runtime's entropy calibration clipped the BN output at 5.7 (one element "
            "2.3 off, cosine 0.999), and fake-quantizing every activation at its 99.9th percentile gave 1.79 off. "
            "3.0 flags wrong results, not tail clipping; the cosine flags drift."
        ),
    )
    variants = (
        Variant(
            name="decomposed-mish",
            role="failing",
            description="Conv(32, groups 32, k3, p1) -> BatchNormalization -> Softplus -> Tanh -> Mul (opset 17).",
            params={"activation": "decomposed-mish", "qdq": "none"},
            claims=_issue_claims("decomposed Mish"),
        ),
        Variant(
            name="native-mish",
            range_claims=(Claim(
                outcome="unsupported", source=OPERATORS_86, strength="documentation", scope=Scope(before="10.0"),
                basis="onnx-tensorrt's operator tables: no Mish before 10.0 (the 8.5, 8.6 and 9.2 tables)",
                category="unsupported-op",
                note="The native Mish op (opset 18) has no importer before onnx-tensorrt 10.0."),),
            role="failing",
            description="Conv(32, groups 32, k3, p1) -> BatchNormalization -> Mish (opset 18).",
            params={"activation": "native-mish", "qdq": "none"},
            claims=(*_issue_claims("native Mish"), *NATIVE_MISH_UNSUPPORTED),
            opset=18,
        ),
        Variant(
            name="qdq-before-decomposed-mish",
            role="workaround",
            varies="decomposed-mish", inherits=False,
            description="Decomposed Mish with Q/DQ between BN and Softplus/Mul (the write-up's workaround, taken "
            "literally: the conv has no Q/DQ, so TensorRT is in explicit mode and keeps the conv in float).",
            params={"activation": "decomposed-mish", "qdq": "before-activation"},
            claims=(WORKAROUND_CLAIM,),
            mode="explicit-qdq",
        ),
        Variant(
            name="qdq-before-native-mish",
            range_claims=(Claim(
                outcome="unsupported", source=OPERATORS_86, strength="documentation", scope=Scope(before="10.0"),
                basis="onnx-tensorrt's operator tables: no Mish before 10.0 (the 8.5, 8.6 and 9.2 tables)",
                category="unsupported-op",
                note="The native Mish op (opset 18) has no importer before onnx-tensorrt 10.0."),),
            role="workaround",
            varies="native-mish", inherits=False,
            description="Native Mish (opset 18) with Q/DQ between BN and Mish (the write-up's workaround, literally).",
            params={"activation": "native-mish", "qdq": "before-activation"},
            claims=(WORKAROUND_CLAIM, *NATIVE_MISH_UNSUPPORTED),
            mode="explicit-qdq",
            opset=18,
        ),
        Variant(
            name="qdq-conv-and-before-decomposed-mish",
            role="workaround",
            varies="decomposed-mish", inherits=False,
            description="Decomposed Mish with Q/DQ between BN and the activation, plus input and per-channel weight "
            "Q/DQ on the conv so that explicit quantization can keep the conv INT8.",
            params={"activation": "decomposed-mish", "qdq": "conv-and-before-activation"},
            mode="explicit-qdq",
        ),
        Variant(
            name="relu6",
            role="control",
            description="Mish replaced by ReLU6 (Clip 0..6): the same block with an activation TensorRT fuses.",
            params={"activation": "relu6", "qdq": "none"},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=BnMish.id, opset=BnMish.opset_of(variant))
        x = g.graph_input("input", (1, CHANNELS, SIZE, SIZE))
        graph.inputs.append(x)
        weight = g.conv_weight("SandGlass1.0.weight", (CHANNELS, 1, 3, 3))
        conv_input, conv_weight = x, weight
        if p["qdq"] == "conv-and-before-activation":
            conv_input = g.torch_fake_quantize(graph, x, CONV_INPUT_QUANTIZER, g.UNIT_ACTIVATION_SCALE)
            conv_weight = g.torch_fake_quantize(
                graph, weight, CONV_WEIGHT_QUANTIZER, g.per_channel_scale(weight.values), axis=0
            )
        attrs = g.conv_attrs(3, pad=1, group=CHANNELS)
        y = g.torch_node(graph, "Conv", "/SandGlass1/SandGlass1.0", [conv_input, conv_weight], attrs)
        bn_params = g.batchnorm_params("SandGlass1.1", CHANNELS)
        y = g.torch_node(graph, "BatchNormalization", "/SandGlass1/SandGlass1.1", [y, *bn_params], {"epsilon": 1e-5})
        if p["qdq"] != "none":
            y = g.torch_fake_quantize(graph, y, ACT_QUANTIZER, g.UNIT_ACTIVATION_SCALE)
        g.mark_output(graph, _activation(graph, y, p["activation"]), (1, CHANNELS, SIZE, SIZE))
        # The conv is the compute node; BN folds into it and the activation is pointwise (fused or not).
        return Built(graph, expected_int8=(CONV,))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return ("the workarounds add Q/DQ to an implicit-INT8 model, which needs scales from calibration: use "
                "--to-explicit")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every Mish (the native op, or x * tanh(softplus(x))) whose input is a BatchNormalization or Conv output,
        directly (implicit INT8: no Q/DQ in the model) or through Q/DQ (the explicit workaround forms)."""
        explicit = m.has_qdq(graph)
        found = []
        for anchor in m.nodes_of(graph, "Mish", "Mul"):
            mish = _mish_at(anchor)
            if mish is None:
                continue
            activation, mish_nodes = mish
            x, act_quantizer = m.through_qdq(mish_nodes[0].inputs[0])
            source, batchnorms = m.producer_skipping(x, "BatchNormalization")
            conv = source if source is not None and source.op == "Conv" else None
            if conv is None and not batchnorms:
                continue
            conv_quantized = conv is not None and m.dequantized(conv.inputs[0]) is not None
            if not explicit:
                qdq = "none"
            elif act_quantizer:
                qdq = "conv-and-before-activation" if conv_quantized else "before-activation"
            else:
                continue  # explicit quantization without Q/DQ before Mish: no library variant has that form
            variant, differences = m.nearest_variant(BnMish.variants, {"activation": activation, "qdq": qdq},
                                                     required=("qdq",))
            source_text = "BatchNormalization" if batchnorms else "Conv"
            form = "the Mish op" if activation == "native-mish" else "x * tanh(softplus(x))"
            where = "in an implicit-INT8 model" if qdq == "none" else "with Q/DQ before it"
            notes = [f"Mish ({form}) after {source_text}, {where}"]
            if conv is None:
                notes.append("no Conv before the BatchNormalization")
            elif not m.is_depthwise(conv):
                notes.append("the reported conv was depthwise (32 groups); this one is not")
            if differences:
                notes.append("nearest library variant differs in " + ", ".join(differences))
            conv_nodes = ([conv, *m.quantizer_before(conv.inputs[0]), *m.quantizer_before(conv.inputs[1])]
                          if conv else [])
            nodes = [*conv_nodes[:1], *batchnorms, *act_quantizer, *mish_nodes, *conv_nodes[1:]]
            found.append(Match(case=BnMish.id, nodes=tuple(n.name for n in nodes), variant=variant.name,
                               note="; ".join(notes)))
        return found


def _mish_at(node) -> tuple[str, list] | None:
    """("native-mish", [Mish]) or ("decomposed-mish", [Softplus, Tanh, Mul]) when ``node`` ends a Mish, else None."""
    if node.op == "Mish":
        return "native-mish", [node]
    if len(node.inputs) != 2:
        return None
    for x, t in (node.inputs, node.inputs[::-1]):
        tanh = m.producer(t)
        softplus = m.producer(tanh.inputs[0]) if tanh is not None and tanh.op == "Tanh" else None
        if softplus is not None and softplus.op == "Softplus" and softplus.inputs[0] is x:
            return "decomposed-mish", [softplus, tanh, node]
    return None


def _activation(graph: gs.Graph, x: gs.Variable, activation: str) -> gs.Variable:
    if activation == "native-mish":
        return g.torch_node(graph, "Mish", ACT_SCOPE, [x])
    if activation == "decomposed-mish":
        # torch.onnx below opset 18: x * tanh(softplus(x))
        softplus = g.torch_node(graph, "Softplus", ACT_SCOPE, [x])
        tanh = g.torch_node(graph, "Tanh", ACT_SCOPE, [softplus])
        return g.torch_node(graph, "Mul", ACT_SCOPE, [x, tanh])
    if activation == "relu6":
        low = gs.Constant(f"{ACT_SCOPE}/Clip_min", np.array(0.0, dtype=np.float32))
        high = gs.Constant(f"{ACT_SCOPE}/Clip_max", np.array(6.0, dtype=np.float32))
        return g.torch_node(graph, "Clip", ACT_SCOPE, [x, low, high])
    raise ValueError(f"unknown activation {activation!r}")
