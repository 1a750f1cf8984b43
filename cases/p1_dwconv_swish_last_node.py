"""P1: Q/DQ depthwise Conv + BatchNorm + Swish as the graph's last node: "Could not find any implementation" on Orin.

Upstream: https://github.com/NVIDIA/TensorRT/issues/3385 (TensorRT 8.5.2, Jetson AGX Orin, JetPack 5.1.2, trtexec):
``Could not find any implementation for node w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid,
node_of_swish.mul)``. A maintainer confirmed a bug that triggers only when nothing follows the trailing Q/DQ and
suggested an Identity at the end of the network until a fix; the reporter's table: a regular Conv + BN + Swish and a
depthwise Conv + BN + ReLU both built. The toy graph was cut from EfficientDet (just before the SE block), whose full
model built, with conv and Swish not fused.

Names and shapes from the thread's verbose log: input ``input`` (1..32) x 144 x 128 x 128 (we build batch 1, the
profile's minimum; the harness builds static shapes), INT8 weight ``w`` (144, 1, 3, 3) with ``w_scale``/
``w_zero_point`` (144) read by ``node_of_dqconv.dq_weight``, activation DQ output ``dqconv.dq_feature``, conv
``node_of_dqconv.dwconv``, ``node_of_swish.sigmoid`` and ``node_of_swish.mul`` (``node_of_<output>`` is how
onnx-tensorrt names an unnamed node, see cases/s3_depthwise_qdq.py). Our choices where the log is silent, in the same
scheme: the activation Q ``node_of_dqconv.q_feature`` with ``feature_scale``/``feature_zero_point``, the BatchNorm
``node_of_dqconv.bn`` with ``bn.*`` parameters, the trailing Q ``node_of_swish.q``, and the graph output ``output``
written by ``node_of_output`` (the trailing DQ, or the successor where a variant has one). Conv kernel 3, pad 1,
stride 1 (the log shows the weight, not the attributes).
"""
from __future__ import annotations

import re
import functools
from typing import Any, Iterator

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases._graphs import gs
from cases.model import AlreadyInForm, Built, Case, Claim, FixResult, Match, NoRewrite, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3385"

CONV = "node_of_dqconv.dwconv"
SUCCESSOR_CONV = "node_of_output"  # the pointwise conv successor writes the graph output
REPORTED = {"channels": 144, "size": 128, "batch": 1, "groups": "depthwise", "activation": "swish",
            "successor": None}
# Only the reported graph and the maintainer's workaround run at the reported 128x128 (a cell there costs 16 times
# one at 32x32: about 2 s to generate and 19 MB of data). The reporter's other table rows state no shape; they, the
# successor and the sweeps run at 32x32 next to size-32, the reported graph at that size.
SWEEP_SIZE = 32

CLAIMS_AS_REPORTED = (
    Claim(
        target="trt85-orin",
        outcome="fail",
        category="no-implementation",
        source=ISSUE,
        strength="issue-thread",
        note="TensorRT 8.5.2 on Jetson AGX Orin (JetPack 5.1.2, container l4t-pytorch r35.4.1), trtexec --int8 with a "
        "1..32 x 144 x 128 x 128 profile. A maintainer confirmed the bug: it triggers only when no node follows the "
        "trailing Q/DQ.",
        conditions=Conditions(support="reproduced"),
    ),
    Claim(
        target="trt86-orin",
        outcome="fail",
        category="no-implementation",
        source=ISSUE,
        strength="issue-thread",
        note="A later commenter reports 'a very similar error' on TensorRT 8.6.2 with their own model, which the thread "
        "does not show: weaker than the 8.5.2 report.",
        conditions=Conditions(support="one-report"),
    ),
)


def _reporter_table_claim(row: str) -> Claim:
    return Claim(
        target="trt85-orin",
        outcome="pass",
        source=ISSUE,
        strength="issue-thread",
        note=f"The reporter's table of tried graphs (8.5.2, Orin): '{row}' built. The table states no shape; this "
        "variant runs at 32x32.",
    )


def _successor_claim(what: str) -> Claim:
    return Claim(
        target="trt85-orin",
        outcome="pass",
        source=ISSUE,
        strength="issue-thread",
        note=f"{what} The maintainer stated the bug needs a graph that ends right after the trailing Q/DQ; no build "
        "of this exact graph is recorded in the thread.",
    )


class DwConvSwishLastNode(Case):
    id = "p1-dwconv-swish-last-node"
    title = "Q/DQ depthwise Conv + BatchNorm + Swish as the last node of the graph"
    pattern = "P1"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="qdq-conv-swish-no-implementation", category="no-implementation",
            message=(r"could not find any implementation for node [^+()]+ \+ [^+()]+ \+ "
                     r"PWN\([^()]*sigmoid, [^()]*mul\)"), flags=re.IGNORECASE,
            source="https://github.com/NVIDIA/TensorRT/issues/3385",
            example=("[optimizer.cpp::computeCosts::3728] Error Code 10: Internal Error (Could not find any implementation for "
                     "node w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid, node_of_swish.mul).)")),
    )
    links = (ISSUE,)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=1.5 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, whose output is the dequantized trailing "
            "Q: a backend that computes the same integers lands on the same step, and a rounding tie flipped by a "
            "different accumulation order or a BN folded into the conv moves an output by one step of the output "
            "scale. ONNX Runtime measured at most 1 step off on every variant; 1.5 steps flags any real difference."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no analogue of TensorRT's last-node fusion bug."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no analogue of TensorRT's last-node fusion bug: these cells say whether ONNX Runtime "
            "itself runs the conv INT8 (its CPU EP makes a QLinearConv only when a QuantizeLinear directly follows the "
            "conv, and BatchNormalization sits in between here), not whether TensorRT can build the graph."
        ),
    }
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="1x144x128x128 -> Q/DQ -> depthwise Conv(k3, INT8 weight via DQ, per-channel axis 0) -> "
            "BatchNormalization -> Sigmoid, Mul (Swish) -> Q/DQ -> graph output, nothing after it.",
            params=REPORTED,
            claims=CLAIMS_AS_REPORTED,
        ),
        Variant(
            name="identity-successor",
            role="workaround",
            varies="as-reported", inherits=False,
            description="As reported, with an Identity after the trailing DQ (the maintainer's workaround).",
            params={**REPORTED, "successor": "identity"},
            claims=(_successor_claim("Workaround suggested by a maintainer; the reporter planned to try it on the full "
                                     "model and did not report back."),),
        ),
        Variant(
            name="size-32",
            role="sweep",
            varies="as-reported", inherits=True,
            description="As reported, on a 1x144x32x32 input.",
            params={**REPORTED, "size": SWEEP_SIZE},
        ),
        Variant(
            name="pointwise-conv-successor",
            role="workaround",
            varies="as-reported", inherits=False,
            description="size-32 followed by a Q/DQ pointwise Conv(1x1, 144 -> 144), as inside a real network.",
            params={**REPORTED, "size": SWEEP_SIZE, "successor": "pointwise-conv"},
            claims=(_successor_claim("The full EfficientDet the toy graph came from built (conv and Swish not fused, "
                                     "so slower)."),),
        ),
        Variant(
            name="relu",
            role="sweep",
            varies="as-reported", inherits=False,  # Another activation op: a form of its own
            description="size-32 with ReLU in place of Swish.",
            params={**REPORTED, "size": SWEEP_SIZE, "activation": "relu"},
            claims=(_reporter_table_claim("DQ > DwConv > BN > Relu > Q"),),
        ),
        Variant(
            name="regular-conv",
            role="sweep",
            # A regular conv (groups 1) in place of the depthwise one: a form of its own
            varies="as-reported", inherits=False,
            description="size-32 with a regular Conv (groups 1, 144 -> 144) in place of the depthwise one.",
            params={**REPORTED, "size": SWEEP_SIZE, "groups": "regular"},
            claims=(_reporter_table_claim("DQ > Conv > BN > Swish > Q"),),
        ),
        Variant(
            name="channels-32",
            role="sweep",
            varies="as-reported", inherits=True,
            description="size-32 with 32 channels (a multiple of 4 and of 32).",
            params={**REPORTED, "size": SWEEP_SIZE, "channels": 32},
        ),
        Variant(
            name="batch-4",
            role="sweep",
            varies="as-reported", inherits=True,
            description="size-32 with batch 4, the profile's optimum batch.",
            params={**REPORTED, "size": SWEEP_SIZE, "batch": 4},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        channels = p["channels"]
        shape = (p["batch"], channels, p["size"], p["size"])
        graph = gs.Graph(name=DwConvSwishLastNode.id, opset=DwConvSwishLastNode.opset)
        x = g.graph_input("input", shape)
        graph.inputs.append(x)
        x_params = g.quantizer_params("feature_scale", "feature_zero_point", g.UNIT_ACTIVATION_SCALE)
        x = g.quantize_linear(graph, x, *x_params, "node_of_dqconv.q_feature", "dqconv.q_feature")
        x = g.dequantize_linear(graph, x, *x_params, "node_of_dqconv.dq_feature", "dqconv.dq_feature")

        depthwise = p["groups"] == "depthwise"
        weights = g.conv_weight("w", (channels, 1 if depthwise else channels, 3, 3))
        w = g.dequantize_int8_weight(graph, weights, g.per_channel_scale(weights.values), "w", "w_scale",
                                     "w_zero_point", "node_of_dqconv.dq_weight", "dqconv.dq_weight", axis=0)
        attrs = g.conv_attrs(3, pad=1, group=channels if depthwise else 1)
        y = g.node(graph, "Conv", CONV, [x, w], "dqconv.dwconv", attrs)
        y = g.node(graph, "BatchNormalization", "node_of_dqconv.bn", [y, *g.batchnorm_params("bn", channels)],
                   "dqconv.bn", {"epsilon": 1e-5})
        if p["activation"] == "swish":
            sigmoid = g.node(graph, "Sigmoid", "node_of_swish.sigmoid", [y], "swish.sigmoid")
            y = g.node(graph, "Mul", "node_of_swish.mul", [y, sigmoid], "swish.mul")
        else:
            y = g.node(graph, "Relu", "node_of_act.relu", [y], "act.relu")

        out_params = g.quantizer_params("output_scale", "output_zero_point", g.UNIT_ACTIVATION_SCALE)
        y = g.quantize_linear(graph, y, *out_params, "node_of_swish.q", "swish.q")
        expected = [CONV]
        if p["successor"] is None:
            y = g.dequantize_linear(graph, y, *out_params, "node_of_output", "output")
        else:
            y = g.dequantize_linear(graph, y, *out_params, "node_of_swish.dq", "swish.dq")
            if p["successor"] == "identity":
                y = g.node(graph, "Identity", "node_of_output", [y], "output")
            else:
                pw = g.conv_weight("pw_w", (channels, channels, 1, 1))
                pw = g.dequantize_int8_weight(graph, pw, g.per_channel_scale(pw.values), "pw_w", "pw_w_scale",
                                              "pw_w_zero_point", "node_of_pwconv.dq_weight", "pwconv.dq_weight", axis=0)
                y = g.node(graph, "Conv", SUCCESSOR_CONV, [y, pw], "output", g.conv_attrs(1))
                expected.append(SUCCESSOR_CONV)
        g.mark_output(graph, y, shape)
        # The convs are the compute nodes: BN folds into the conv and the Swish is pointwise (the log's PWN fusion).
        return Built(graph, expected_int8=tuple(expected))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        if workaround.name == "identity-successor":
            return None
        return (f"{workaround.name} adds a computing layer after the graph's end, which changes what the model "
                "computes; --fix only adds the Identity (identity-successor)")

    @classmethod
    def fix(cls, graph, match: Match, workaround: Variant) -> FixResult:
        """An Identity after the last node of the chain, writing the graph output under its own name."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        last = rw.node_named(graph, match.nodes[-1])
        if last.op == "Identity":
            raise AlreadyInForm(f"{last.name} is already an Identity after the chain: the place has the workaround "
                                "form")
        identity = rw.identity_after(graph, last.outputs[0])
        return FixResult(nodes_added=[identity], note=f"Identity {identity} after {last.name}: the graph no longer "
                         f"ends right after the trailing Q/DQ; the output keeps its name {last.outputs[0].name}")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """A depthwise Conv with a quantized input and weight -> BatchNorm? -> Swish (Sigmoid, Mul) -> Q/DQ? that
        ends the graph: its last tensor is a graph output read by nothing, or only by an Identity that is. Walked
        back from the graph's ends to the convs that may have the chain (a graph has a few ends, a large one
        thousands of convs), then checked forward from each."""
        candidates = {id(conv): conv for conv in _convs_behind_ends(graph)}
        if len(candidates) > 1:  # in graph order
            candidates = {id(conv): conv for conv in m.nodes_of(graph, "Conv") if id(conv) in candidates}
        return [match for match in map(functools.partial(_chain_to_end, graph), candidates.values()) if match]


def _convs_behind_ends(graph) -> Iterator[Any]:
    """The Convs a graph output read by nothing comes from through Identity?, Q/DQ?, Mul (a Swish's),
    BatchNormalization?: a superset of those :func:`_chain_to_end` matches."""
    for end in graph.outputs:
        if m.consumers(end):
            continue
        node = m.producer(end)
        if node is not None and node.op == "Identity":
            node = m.producer(node.inputs[0])
        if node is not None and node.op == "DequantizeLinear":
            quantize = m.producer(node.inputs[0])
            node = m.producer(quantize.inputs[0]) if quantize is not None and quantize.op == "QuantizeLinear" else None
        if node is None or node.op != "Mul":
            continue
        for behind in filter(None, map(m.producer, node.inputs)):
            if behind.op == "BatchNormalization":
                yield from (n for n in filter(None, map(m.producer, behind.inputs)) if n.op == "Conv")
            elif behind.op == "Conv":
                yield behind


def _chain_to_end(graph, conv) -> Match | None:
    """The match at ``conv``: its chain to the graph's end and its quantized input and weight, or None."""
    # the chain to the graph's end first: it costs less than the weight's questions
    chain = m.follow_chain(conv, ("BatchNormalization",))
    swish = m.swish_after(chain[-1].outputs[0])
    if swish is None:
        return None
    chain += swish
    qdq = m.qdq_after(chain[-1].outputs[0])
    chain += qdq
    end = chain[-1].outputs[0]
    if m.ends_graph(graph, end):
        variant = "as-reported" if qdq else None
    else:
        identity = m.only_consumer(end)
        if not (identity is not None and identity.op == "Identity" and m.ends_graph(graph, identity.outputs[0])):
            return None
        chain.append(identity)
        variant = "identity-successor" if qdq else None
    if not (m.is_depthwise(conv) and m.is_quantized_weight(conv.inputs[1]) and m.dequantized(conv.inputs[0])):
        return None
    trailing = "a trailing Q/DQ" if qdq else "no trailing Q/DQ (the reported graph had one)"
    tail = "then an Identity, the maintainer's workaround" if chain[-1].op == "Identity" else "then nothing"
    return Match(
        case=DwConvSwishLastNode.id, nodes=tuple(n.name for n in chain), variant=variant,
        note=f"Depthwise Q/DQ conv {conv.name} with Swish and {trailing}, {tail}: TensorRT 8.5.2 on Orin "
        "found no implementation for this fusion at the end of a graph.",
    )
