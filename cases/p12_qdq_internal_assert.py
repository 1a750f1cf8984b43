"""P12: Q/DQ graphs that trip TensorRT's internal assertions (Error Code 2) while it fuses Q/DQ into layers.

Upstream forms, each with the graph the thread states:

* https://github.com/NVIDIA/TensorRT/issues/1864 (TensorRT 8.2.3, V100): the output of the QuantizeLinear that
  quantizes a conv's weights marked as a network output (to read the quantized weights) fails with
  ``[qdqGraphOptimizer.cpp::reportWeightlessTwoInputConvolutionAsError::217] Error Code 2: Internal Error (Conv_9 +
  Relu_11: Could not fuse 2nd input (kernel weights) of CONVOLUTION)``: once the weight Q/DQ must stay visible, the
  conv has a tensor, not constant weights, as its second input.
* https://github.com/NVIDIA/TensorRT/issues/1574 (TensorRT 8.0.1.6): Q/DQ on both inputs of an Add, one of them
  after a ReLU, fails with ``[graphOptimizer.cpp::sameExprValues::587] Error Code 2: Internal Error (Assertion
  lhs.expr failed.)``; removing the Q/DQ after the ReLU builds.
* Other Error Code 2 assertions from Q/DQ graphs whose graph the threads do not show, kept as classifier signatures
  only (harness.worker.trt.classify): ``outScales.size() == 1`` in pointWiseV2Builder
  (https://github.com/NVIDIA/TensorRT/issues/2664, two Q/DQ models differing only in Q scales),
  ``p.quantizations.isOutputSet(0)`` in weightConvertors (https://github.com/NVIDIA/TensorRT/issues/3220, 8.5.3,
  a pytorch-quantization QAT model), ``!n->candidateRequirements.empty()`` (https://github.com/NVIDIA/TensorRT/issues/3040,
  8.6.1, fixed in 9.0), "Quantized constant is only allowed before DQ or PLUGIN_V2 node"
  (https://github.com/NVIDIA/TensorRT/issues/3919, 10.0.1, fixed in 10.1).

failure-patterns.md also lists #2131 and #3006; their text was not found in the search index used here.

Names follow pytorch-quantization's torch.onnx export (``/conv/_weight_quantizer/QuantizeLinear``), as in S5. None of
the reports ran a version or platform of this matrix (8.0, 8.2 and 8.5.3 on x86), so the variants carry no claims:
what they do on 8.5 to 10.x is for the matrix to observe.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cases import _graphs as g
from cases._graphs import gs
from cases.matching import is_constant, is_graph_output, nodes_of, producer
from cases import rewriting as rw
from cases.model import Built, Case, FixResult, Match, NoRewrite, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure

WEIGHT_OUTPUT_ISSUE = "https://github.com/NVIDIA/TensorRT/issues/1864"
ADD_QDQ_ISSUE = "https://github.com/NVIDIA/TensorRT/issues/1574"
OTHER_FORMS = (
    "https://github.com/NVIDIA/TensorRT/issues/2664",
    "https://github.com/NVIDIA/TensorRT/issues/3220",
    "https://github.com/NVIDIA/TensorRT/issues/3040",
    "https://github.com/NVIDIA/TensorRT/issues/3919",
)

CHANNELS_IN, CHANNELS_OUT, SIZE = 16, 32, 16
WEIGHT_Q_OUTPUT = "/conv/_weight_quantizer/QuantizeLinear_output_0"
WEIGHT_DQ_OUTPUT = "/conv/_weight_quantizer/DequantizeLinear_output_0"


def _quant_conv(graph, x, scope: str, prefix: str) -> tuple[gs.Variable, gs.Variable]:
    """A pytorch-quantization QuantConv2d (3x3, pad 1): input Q/DQ, per-channel weight Q/DQ on axis 0. Returns the
    conv output and the weight's Q/DQ output."""
    x = g.torch_fake_quantize(graph, x, f"{scope}/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
    weight = g.conv_weight(f"{prefix}.weight", (CHANNELS_OUT, CHANNELS_IN, 3, 3))
    w_dq = g.torch_fake_quantize(graph, weight, f"{scope}/_weight_quantizer", g.per_channel_scale(weight.values),
                                 axis=0)
    y = g.torch_node(graph, "Conv", scope, [x, w_dq, g.bias(f"{prefix}.bias", CHANNELS_OUT)], g.conv_attrs(3, pad=1))
    return y, w_dq


class QdqInternalAssert(Case):
    # The Add form cannot be told from a healthy Q/DQ residual block by its structure, so `find` leaves it out rather
    # than flag every quantized ResNet.
    unmatchable_forms = ("add-inputs-qdq",)
    id = "p12-qdq-internal-assert"
    title = "Q/DQ graphs that trip internal assertions: a weight quantizer's output as a network output, Q/DQ on Add"
    pattern = "P12"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="qdq-weights-not-fused", category="internal-assert",
            message=r"Could not fuse 2nd input \(kernel weights\)",
            source="https://github.com/NVIDIA/TensorRT/issues/1864",
            example=("[qdqGraphOptimizer.cpp::reportWeightlessTwoInputConvolutionAsError::217] Error Code 2: Internal Error "
                     "(Conv_9 + Relu_11: Could not fuse 2nd input (kernel weights) of CONVOLUTION)")),
        KnownFailure(
            id="qdq-add-inputs-expr", category="internal-assert",
            message=r"Assertion lhs\.expr failed",
            source="https://github.com/NVIDIA/TensorRT/issues/1574",
            example="[graphOptimizer.cpp::sameExprValues::587] Error Code 2: Internal Error (Assertion lhs.expr failed.)"),
        KnownFailure(
            id="qdq-pointwise-out-scales", category="internal-assert",
            message=r"Assertion outScales\.size\(\) == 1",
            source="https://github.com/NVIDIA/TensorRT/issues/2664",
            example="[pointWiseV2Builder.cpp::toExpr::325] Error Code 2: Internal Error (Assertion outScales.size() == 1 failed. )"),
        KnownFailure(
            id="qdq-combine-in-out-scale", category="internal-assert",
            message=r"Assertion p\.quantizations\.isOutputSet\(0\)",
            source="https://github.com/NVIDIA/TensorRT/issues/3220",
            example=("[weightConvertors.cpp::combineInOutScale::369] Error Code 2: Internal Error (Assertion "
                     "p.quantizations.isOutputSet(0) failed. )")),
        KnownFailure(
            id="qdq-int8-candidates-removed", category="internal-assert",
            message=r"Assertion !n->candidateRequirements\.empty\(\) failed",
            source="https://github.com/NVIDIA/TensorRT/issues/3040",
            example=("Assertion !n->candidateRequirements.empty() failed. All of the candidates were removed, which points to "
                     "the node being incorrectly marked as an int8 node.")),
        KnownFailure(
            id="qdq-quantized-constant-placement", category="internal-assert",
            message=r"Quantized constant is only allowed before DQ",
            source="https://github.com/NVIDIA/TensorRT/issues/3919",
            example=("[qdqGraphOptimizer.cpp::matchQuantizedConstantPluginOrDQ::4004] Error Code 2: Internal Error "
                     "(L__self___conv1.weight: Quantized constant is only allowed before DQ or PLUGIN_V2 node)")),
    )
    links = (WEIGHT_OUTPUT_ISSUE, ADD_QDQ_ISSUE, *OTHER_FORMS)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=1.5 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, as for the Q/DQ control: the INT8 convs "
            "multiply the same integers, so only accumulation order and rounding ties differ, one step of the output "
            "scale at most; a weight-quantizer output compares INT8 integers, which must match exactly."
        ),
    )
    variants = (
        Variant(
            name="weight-q-output",
            role="failing",
            description="Q/DQ Conv 16 -> 32 (3x3) -> Q/DQ -> ReLU whose weight QuantizeLinear output is also a graph "
            "output (INT8 weights, read back by the user).",
            params={"form": "conv", "extra_output": WEIGHT_Q_OUTPUT},
        ),
        Variant(
            name="weight-dq-output",
            role="sweep",
            # Another graph output on the weight path: the extra output is the pattern's subject
            varies="weight-q-output", inherits=False,
            description="As the failing form, with the weight DequantizeLinear output (float) as the extra graph "
            "output instead: does any visible tensor on the weight path break the fusion?",
            params={"form": "conv", "extra_output": WEIGHT_DQ_OUTPUT},
        ),
        Variant(
            name="no-weight-output",
            role="workaround",
            varies="weight-q-output", inherits=False,
            description="The same Q/DQ Conv -> Q/DQ -> ReLU with only the ReLU as output: read quantized weights from the "
            "ONNX initializers (round(W / scale)) instead of from the engine.",
            params={"form": "conv", "extra_output": None},
        ),
        Variant(
            name="add-inputs-qdq",
            role="failing",
            description=f"Two Q/DQ convs (quantized outputs), one followed by ReLU, summed by an Add with Q/DQ on both "
            f"of its inputs "
            f"(the form of {ADD_QDQ_ISSUE}).",
            params={"form": "add", "relu_qdq": True},
        ),
        Variant(
            name="add-relu-input-unquantized",
            role="workaround",
            varies="add-inputs-qdq", inherits=False,
            description="As add-inputs-qdq without the Q/DQ after the ReLU, the change that built in the report.",
            params={"form": "add", "relu_qdq": False},
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no analogue of TensorRT's Q/DQ graph optimizer assertions."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime runs Q/DQ graphs through its own QDQ fusions; it has no analogue of TensorRT's Q/DQ graph "
            "optimizer assertions. A marked weight-quantizer output is just one more output there."
        ),
    }
    remedy = (
        "Leave the weight Q/DQ path without extra outputs (#1864; read quantized weights from the ONNX initializers), "
        "and keep Q/DQ off the ReLU input of an Add (#1574): the forms TensorRT's Q/DQ fusion expects."
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=QdqInternalAssert.id, opset=QdqInternalAssert.opset)
        x = g.graph_input("input", (1, CHANNELS_IN, SIZE, SIZE))
        graph.inputs.append(x)
        out_shape = (1, CHANNELS_OUT, SIZE, SIZE)
        if p["form"] == "conv":
            y, w_dq = _quant_conv(graph, x, "/conv", "conv")
            y = g.torch_fake_quantize(graph, y, "/act/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
            g.mark_output(graph, g.torch_node(graph, "Relu", "/act", [y]), out_shape)
            if p["extra_output"] == WEIGHT_Q_OUTPUT:
                q_output = w_dq.inputs[0].inputs[0]
                q_output.dtype, q_output.shape = np.int8, (CHANNELS_OUT, CHANNELS_IN, 3, 3)
                graph.outputs.append(q_output)
            elif p["extra_output"] == WEIGHT_DQ_OUTPUT:
                g.mark_output(graph, w_dq, (CHANNELS_OUT, CHANNELS_IN, 3, 3))
            return Built(graph, expected_int8=("/conv/Conv",))
        left, _ = _quant_conv(graph, x, "/left", "left")
        left = g.torch_fake_quantize(graph, left, "/left_act/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        left = g.torch_node(graph, "Relu", "/left_act", [left])
        right, _ = _quant_conv(graph, x, "/right", "right")
        if p["relu_qdq"]:
            left = g.torch_fake_quantize(graph, left, "/add/_left_quantizer", g.UNIT_ACTIVATION_SCALE)
        right = g.torch_fake_quantize(graph, right, "/add/_right_quantizer", g.UNIT_ACTIVATION_SCALE)
        g.mark_output(graph, g.node(graph, "Add", "/Add", [left, right], "/Add_output_0"), out_shape)
        return Built(graph, expected_int8=("/left/Conv", "/right/Conv"))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        if workaround.name == "no-weight-output":
            return None if form is None or form.params.get("form") == "conv" else (
                "no-weight-output is the workaround of the weight-output forms")
        return f"{workaround.name} removes a quantizer of the model, which changes its scales; --fix never does"

    @classmethod
    def fix(cls, graph: Any, match: Match, workaround: Variant) -> FixResult:
        """The weight quantizer's tensor stays a graph output under its name, with the same values, but computed
        offline (QuantizeLinear / DequantizeLinear of the constant weight) by a Constant node: the layer's weight
        Q/DQ writes a tensor of its own that nothing outside reads, so TensorRT can fold it."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        q = rw.node_named(graph, match.nodes[0])
        dqs = [c for c in q.outputs[0].outputs if c.op == "DequantizeLinear"]
        visible = [t for t in [q.outputs[0], *(dq.outputs[0] for dq in dqs)] if is_graph_output(graph, t)]
        if not visible:
            raise NoRewrite(f"no tensor of the weight quantizer {q.name} is a graph output")
        added = []
        for tensor in visible:
            values = rw.constant_value(tensor)
            if values is None:
                raise NoRewrite(f"{tensor.name} cannot be computed offline (its scale or weight is not constant)")
            writer = tensor.inputs[0]
            inner = gs.Variable(rw.unique_name(graph, f"{tensor.name}_internal"), dtype=tensor.dtype,
                                shape=tensor.shape)
            readers = list(tensor.outputs)
            writer.outputs[writer.outputs.index(tensor)] = inner
            for reader in readers:
                reader.inputs[reader.inputs.index(tensor)] = inner
            name = rw.unique_name(graph, f"{tensor.name}/Constant")
            added.append(rw.add_node(graph, gs.Node("Constant", name=name, outputs=[tensor],
                                                    attrs={"value": gs.Constant(f"{name}/value", values)})))
        return FixResult(nodes_added=added, note=f"output(s) {', '.join(t.name for t in visible)} now written by "
                         f"{', '.join(added)} (the same values, computed offline); the weight Q/DQ of {q.name} "
                         "feeds only its layer")

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Every QuantizeLinear of a constant (a weight) whose output, or its DequantizeLinear's, is a graph output."""
        writers = [producer(t) for t in graph.outputs]  # only a Q writing an output, or its DQ's, can match
        near_outputs = {id(n) for n in writers if n is not None}
        near_outputs |= {id(producer(n.inputs[0])) for n in writers if n is not None and n.op == "DequantizeLinear"}
        matches = []
        for q in (n for n in nodes_of(graph, "QuantizeLinear") if id(n) in near_outputs and is_constant(n.inputs[0])):
            dqs = [c for c in q.outputs[0].outputs if c.op == "DequantizeLinear"]
            if is_graph_output(graph, q.outputs[0]):
                visible, variant = q.outputs[0], "weight-q-output"
            else:
                visible = next((dq.outputs[0] for dq in dqs if is_graph_output(graph, dq.outputs[0])), None)
                variant = "weight-dq-output"
            if visible is None:
                continue
            layers = [c.name for dq in dqs for c in dq.outputs[0].outputs]
            matches.append(Match(
                case=cls.id,
                nodes=(q.name, *(dq.name for dq in dqs), *layers),
                variant=variant,
                note=(f"the weight quantizer's tensor {visible.name} is a graph output: TensorRT cannot fold the "
                      "weight Q/DQ into the layer (Error Code 2 'Could not fuse 2nd input (kernel weights)' in #1864)"),
            ))
        return matches
