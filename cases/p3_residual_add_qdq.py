"""P3: a residual Add whose identity branch does or does not go through Q/DQ.

Upstream: https://github.com/NVIDIA/TensorRT/issues/1992 (closed): a maintainer: without a Q/DQ pair on the
residual branch the Add has to run in FP16/FP32; with one it runs INT8 (TensorRT fuses it into the conv).
https://github.com/NVIDIA/TensorRT/issues/2204 (TensorRT 8.4.1.5, GTX 1080 Ti): under QAT a Swish + Add ran
INT8-in FP32-out where PTQ kept it INT8; a maintainer asked whether a Q/DQ after the Add had been tried. Neither
thread names a version of our matrix (one no version, the other 8.4), so the variants carry no claim for one target.
#1992 is a maintainer explaining how TensorRT fuses the Add, with no version bound: it is a range claim (TensorRT 8.0,
the first release with explicit quantization, and later, every platform) on identity-float (the Add runs FP16/FP32)
and the identity-qdq forms (INT8, fused into the conv); #2204 only asks a question, so qdq-after-add has none.

The graph is the smallest residual unit: Q/DQ -> Conv(3x3, 32 -> 32, weight Q/DQ per channel) -> Add(identity) ->
ReLU, the identity being the block input. Names follow pytorch-quantization's quantized torchvision ResNet
(``_input_quantizer``/``_weight_quantizer``, ``residual_quantizer``; see cases/s5_qdq_resnet_block.py) in a
``layer1.0`` block; the quantizers after the conv and after the Add are ours, named for the layer they feed.
"""
from __future__ import annotations

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases._graphs import gs
from cases.model import (AlreadyInForm, Built, Case, Claim, FixResult, Match, NoRewrite, Scope, Tolerance,
                         Variant)
from cases.rewriting import QDQ_ADDED

ADD_FP32 = "https://github.com/NVIDIA/TensorRT/issues/1992"
QDQ_AFTER_ADD = "https://github.com/NVIDIA/TensorRT/issues/2204"

# #1992: a maintainer explains how TensorRT treats the residual Add without naming a version; it holds for every
# release with explicit quantization (8.0 on), every platform, until a claim for a target or an observation says
# otherwise.
_EXPLICIT_QUANTIZATION_RELEASES = Scope(since="8.0")
_MAINTAINER_ON_ADD = "a maintainer explaining how TensorRT fuses a residual Add, no version named"
_ADD_WIDER = "Without a Q/DQ pair on the residual branch the Add runs in FP16/FP32: it is not fused into the conv as INT8."
_ADD_FUSED = "With a Q/DQ pair on the residual branch the Add runs INT8, fused into the conv."


def _add_claim(outcome: str, note: str) -> Claim:
    return Claim(outcome=outcome, source=ADD_FP32, strength="issue-thread",
                 scope=_EXPLICIT_QUANTIZATION_RELEASES, basis=_MAINTAINER_ON_ADD, note=note)


BLOCK = "/layer1/layer1.0"
CONV = f"{BLOCK}/conv1/Conv"
ADD = f"{BLOCK}/Add"
RESIDUAL_QUANTIZER = f"{BLOCK}/residual_quantizer"
SIZE = 16
REPORTED = {"channels": 32, "identity_qdq": False, "conv_output_qdq": False, "add_output_qdq": False}


class ResidualAddQdq(Case):
    id = "p3-residual-add-qdq"
    title = "Residual Add with and without Q/DQ on the identity branch"
    pattern = "P3"
    links = (ADD_FP32, QDQ_AFTER_ADD)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=2 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph. A re-quantized tensor (conv output, Add "
            "output) moves by one step when a rounding tie flips, and the identity adds its own step when it is "
            "quantized: 2 activation steps for an INT8 backend. ONNX Runtime, which kept the TensorRT-style forms in "
            "float, measured at most 3e-6 off, and nothing on every-tensor-qdq."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's CPU EP makes a conv INT8 only when a QuantizeLinear follows it, and an Add INT8 (QLinearAdd) "
            "only when both inputs come through DequantizeLinear and a QuantizeLinear follows it; TensorRT instead "
            "fuses the Add into the conv. So the ONNX Runtime cells of the TensorRT-style forms show float nodes for "
            "ONNX Runtime's reasons; only every-tensor-qdq is fully INT8 there."
        ),
    }
    variants = (
        Variant(
            name="identity-float",
            range_claims=(_add_claim("fallback", _ADD_WIDER),),
            role="failing",
            description="Q/DQ -> Conv(3x3, 32 -> 32) -> Add(conv, identity) -> ReLU on 1x32x16x16; the identity (the "
            "block input) reaches the Add without Q/DQ.",
            params=REPORTED,
        ),
        Variant(
            name="identity-qdq",
            range_claims=(_add_claim("pass", _ADD_FUSED),),
            role="workaround",
            varies="identity-float", inherits=False,
            description=f"As identity-float, with a Q/DQ pair (the residual quantizer) on the identity branch, as a "
            f"maintainer recommends in {ADD_FP32}.",
            params={**REPORTED, "identity_qdq": True},
        ),
        Variant(
            name="qdq-after-add",
            role="workaround",
            varies="identity-float", inherits=False,
            description=f"As identity-float, with a Q/DQ after the Add (asked about by a maintainer in "
            f"{QDQ_AFTER_ADD}).",
            params={**REPORTED, "add_output_qdq": True},
        ),
        Variant(
            name="every-tensor-qdq",
            role="sweep",
            varies="identity-float", inherits=False,  # Another Q/DQ placement
            description="Q/DQ on the conv output, the identity and the Add output: the placement ONNX Runtime's "
            "quantizer writes, which the TensorFlow quantization toolkit's docs call suboptimal for TensorRT fusion.",
            params={**REPORTED, "identity_qdq": True, "conv_output_qdq": True, "add_output_qdq": True},
        ),
        Variant(
            name="channels-64",
            role="sweep",
            varies="identity-float", inherits=True,
            description="identity-float with 64 channels.",
            params={**REPORTED, "channels": 64},
        ),
        Variant(
            name="channels-64-identity-qdq",
            range_claims=(_add_claim("pass", _ADD_FUSED),),
            role="sweep",
            varies="identity-float", inherits=False,  # The identity-qdq workaround at 64 channels
            description="identity-qdq with 64 channels.",
            params={**REPORTED, "channels": 64, "identity_qdq": True},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        channels = p["channels"]
        shape = (1, channels, SIZE, SIZE)
        graph = gs.Graph(name=ResidualAddQdq.id, opset=ResidualAddQdq.opset)
        x = g.graph_input("input", shape)
        graph.inputs.append(x)
        x_dq = g.torch_fake_quantize(graph, x, f"{BLOCK}/conv1/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        weight = g.conv_weight("layer1.0.conv1.weight", (channels, channels, 3, 3))
        w_dq = g.torch_fake_quantize(graph, weight, f"{BLOCK}/conv1/_weight_quantizer",
                                     g.per_channel_scale(weight.values), axis=0)
        y = g.torch_node(graph, "Conv", f"{BLOCK}/conv1", [x_dq, w_dq], g.conv_attrs(3, pad=1))
        if p["conv_output_qdq"]:
            y = g.torch_fake_quantize(graph, y, f"{BLOCK}/add/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        identity = x
        if p["identity_qdq"]:
            identity = g.torch_fake_quantize(graph, x, RESIDUAL_QUANTIZER, g.UNIT_ACTIVATION_SCALE)
        y = g.torch_node(graph, "Add", BLOCK, [y, identity])
        if p["add_output_qdq"]:
            y = g.torch_fake_quantize(graph, y, f"{BLOCK}/relu/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        g.mark_output(graph, g.torch_node(graph, "Relu", f"{BLOCK}/relu", [y]), shape)
        # The conv and the Add: whether the Add stays INT8 (fused into the conv) is the pattern.
        return Built(graph, expected_int8=(CONV, ADD))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return None if workaround.name in ("identity-qdq", "qdq-after-add") else f"no rewrite for {workaround.name}"

    @classmethod
    def fix(cls, graph, match: Match, workaround: Variant) -> FixResult:
        """identity-qdq: a Q/DQ pair on the identity branch with the scale of the quantizer that already reads the
        identity tensor (the block's first conv reads the block input through one). qdq-after-add: a Q/DQ after the
        Add with the scale of the quantizer that already reads the Add's output, or the ReLU's after it (ReLU
        commutes with a symmetric quantizer). No new scale is invented: without such a quantizer, NoRewrite."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        add, conv = rw.node_named(graph, match.nodes[0]), rw.node_named(graph, match.nodes[1])
        if workaround.name == "qdq-after-add":
            return _qdq_after_add(graph, add)
        sides = [m.quantized_layer_behind(t, ("Conv",)) for t in add.inputs]
        identity = add.inputs[0 if sides[0] is not conv else 1]
        if m.qdq_before(identity):
            raise AlreadyInForm(f"the identity of {add.name} already comes through Q/DQ")
        quantizer = rw.quantizer_of(identity)
        if quantizer is None:
            raise NoRewrite(f"no quantizer of the model reads the identity tensor {identity.name} of {add.name}, so "
                            "there is no scale to quantize it with (--fix never invents one)")
        added = rw.qdq_between(graph, identity, [add], quantizer, f"{add.name}/residual_quantizer")
        return FixResult(nodes_added=added, tolerance=QDQ_ADDED, note=f"Q/DQ {added[0]} -> {added[1]} on the identity "
                         f"{identity.name} of {add.name}, with the scale ({quantizer[0].name}) of the quantizer that "
                         "already reads that tensor")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every Add of a quantized conv path (a Conv with Q/DQ weight, maybe through BatchNorm or a Q/DQ) and a
        non-constant identity; the variant says where Q/DQ sit around it."""
        found = []
        for add in m.nodes_of(graph, "Add"):
            if len(add.inputs) != 2 or any(m.is_constant(t) for t in add.inputs):
                continue
            sides = [m.quantized_layer_behind(t, ("Conv",)) for t in add.inputs]
            if sides[0] is None and sides[1] is None:
                continue
            conv_index = 0 if sides[0] is not None else 1
            conv, identity = sides[conv_index], add.inputs[1 - conv_index]
            identity_qdq = m.qdq_before(identity)
            conv_side_qdq = bool(m.qdq_before(add.inputs[conv_index]))
            output_qdq = bool(m.qdq_after(add.outputs[0]))
            if identity_qdq:
                variant = "every-tensor-qdq" if conv_side_qdq and output_qdq else "identity-qdq"
            else:
                variant = "qdq-after-add" if output_qdq else "identity-float"
            nodes = (add.name, conv.name, *(n.name for n in identity_qdq))
            where = "through a Q/DQ pair" if identity_qdq else "without Q/DQ"
            found.append(Match(
                case=cls.id, nodes=nodes, variant=variant,
                note=f"Residual Add {add.name} of quantized conv {conv.name} and an identity {where}: without Q/DQ "
                     "on the identity, TensorRT runs the Add in FP16/FP32 instead of fusing it INT8 into the conv.",
            ))
        return found


def _qdq_after_add(graph, add) -> FixResult:
    """P3's qdq-after-add rewrite (see ``ResidualAddQdq.fix``)."""
    out = add.outputs[0]
    if m.qdq_after(out):
        raise AlreadyInForm(f"the output of {add.name} is already quantized")
    quantizer, source = rw.quantizer_of(out), out
    relu = m.only_consumer(out)
    if quantizer is None and relu is not None and relu.op == "Relu":
        quantizer, source = rw.quantizer_of(relu.outputs[0]), relu.outputs[0]
    if quantizer is None:
        raise NoRewrite(f"no quantizer of the model reads the output of {add.name} (or of a ReLU right after it), so "
                        "there is no scale to quantize it with (--fix never invents one)")
    added = rw.qdq_between(graph, out, list(out.outputs), quantizer, f"{add.name}/output_quantizer")
    return FixResult(nodes_added=added, tolerance=QDQ_ADDED, note=f"Q/DQ {added[0]} -> {added[1]} after {add.name}, "
                     f"with the scale ({quantizer[0].name}) of the quantizer that already reads {source.name}")
