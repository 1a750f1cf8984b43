"""P12: Q/DQ graphs that trip TensorRT's Q/DQ fusion assertions (Error Code 2), their workarounds, the matcher, and
the known failures the classifier names for the same reports."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p12_qdq_internal_assert import WEIGHT_DQ_OUTPUT, WEIGHT_Q_OUTPUT, QdqInternalAssert

QDQ_CONV = ["QuantizeLinear", "QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv", "QuantizeLinear",
            "DequantizeLinear", "Relu"]
ADD_FORM = ["QuantizeLinear"] * 4 + ["DequantizeLinear"] * 4 + ["Conv", "Conv", "QuantizeLinear", "QuantizeLinear",
                                                                 "DequantizeLinear", "DequantizeLinear", "Relu"]


variant = QdqInternalAssert.variant


def model_of(name) -> onnx.ModelProto:
    return export_model(QdqInternalAssert, variant(name))[0]


def graph_of(name) -> gs.Graph:
    return gs.import_onnx(model_of(name))


@pytest.mark.parametrize("name", [v.name for v in QdqInternalAssert.variants])
def test_every_variant_passes_the_full_checker_and_strict_shape_inference(name):
    model = model_of(name)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


@pytest.mark.parametrize(("name", "expected"), [
    ("weight-q-output", QDQ_CONV), ("weight-dq-output", QDQ_CONV), ("no-weight-output", QDQ_CONV),
    ("add-inputs-qdq", [*ADD_FORM, "QuantizeLinear", "DequantizeLinear", "Add"]),
    ("add-relu-input-unquantized", [*ADD_FORM, "Add"]),
])
def test_exact_op_lists(name, expected):
    assert [n.op_type for n in model_of(name).graph.node] == expected


def test_the_failing_form_makes_the_weight_quantizers_int8_output_a_graph_output():
    outputs = {o.name: o for o in model_of("weight-q-output").graph.output}
    assert list(outputs) == ["/act/Relu_output_0", WEIGHT_Q_OUTPUT]
    assert outputs[WEIGHT_Q_OUTPUT].type.tensor_type.elem_type == onnx.TensorProto.INT8
    graph = graph_of("weight-q-output")
    quantizer = next(n for n in graph.nodes if n.name == "/conv/_weight_quantizer/QuantizeLinear")
    assert isinstance(quantizer.inputs[0], gs.Constant) and quantizer.inputs[0].name == "conv.weight"
    assert [o.name for o in graph_of("weight-dq-output").outputs] == ["/act/Relu_output_0", WEIGHT_DQ_OUTPUT]
    assert [o.name for o in graph_of("no-weight-output").outputs] == ["/act/Relu_output_0"]


def test_the_add_form_quantizes_both_add_inputs_and_its_workaround_not_the_relu_one():
    add = next(n for n in graph_of("add-inputs-qdq").nodes if n.op == "Add")
    assert [t.inputs[0].op for t in add.inputs] == ["DequantizeLinear", "DequantizeLinear"]
    relu_q = add.inputs[0].inputs[0].inputs[0].inputs[0]  # Add <- DQ <- Q
    assert relu_q.op == "QuantizeLinear" and relu_q.inputs[0].inputs[0].op == "Relu"
    fixed = next(n for n in graph_of("add-relu-input-unquantized").nodes if n.op == "Add")
    assert [t.inputs[0].op for t in fixed.inputs] == ["Relu", "DequantizeLinear"]
    assert QdqInternalAssert.build(variant("add-inputs-qdq")).expected_int8 == ("/left/Conv", "/right/Conv")


def test_no_claims_where_no_report_ran_a_target_of_the_matrix():
    assert all(not v.claims for v in QdqInternalAssert.variants)
    assert "#1864" in QdqInternalAssert.remedy


def test_every_p12_known_failure_of_the_classifier_cites_a_link_of_the_case():
    p12 = [s for s in QdqInternalAssert.log_signatures if s.pattern == "P12"]
    assert p12 and all(s.source in QdqInternalAssert.links for s in p12)


@pytest.mark.parametrize(("name", "found"), [("weight-q-output", "weight-q-output"),
                                             ("weight-dq-output", "weight-dq-output")])
def test_the_matcher_finds_a_weight_quantizer_with_a_visible_output(name, found):
    (match,) = QdqInternalAssert.find(graph_of(name))
    assert match.variant == found
    assert match.nodes == ("/conv/_weight_quantizer/QuantizeLinear", "/conv/_weight_quantizer/DequantizeLinear",
                           "/conv/Conv")


@pytest.mark.parametrize("name", ["no-weight-output", "add-inputs-qdq", "add-relu-input-unquantized"])
def test_the_matcher_finds_nothing_where_weight_quantizers_stay_inside(name):
    assert QdqInternalAssert.find(graph_of(name)) == []


def test_an_activation_quantizer_output_as_graph_output_is_not_the_pattern():
    graph = gs.Graph(opset=13)
    x = gs.Variable("x", np.float32, (1, 4))
    q = gs.Variable("q", np.int8, (1, 4))
    scale, zero = gs.Constant("s", np.array(0.1, np.float32)), gs.Constant("z", np.array(0, np.int8))
    graph.nodes.append(gs.Node("QuantizeLinear", name="act_q", inputs=[x, scale, zero], outputs=[q]))
    graph.inputs, graph.outputs = [x], [q]
    assert QdqInternalAssert.find(graph) == []
