"""The shared graph building blocks: deterministic weights, INT8 scales and values, Q/DQ and torch-style naming."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from cases import _graphs as g


def test_values_depend_on_the_name_only():
    a = g.conv_weight("model.0.conv.weight", (8, 3, 3, 3)).values
    assert np.array_equal(a, g.conv_weight("model.0.conv.weight", (8, 3, 3, 3)).values)
    assert not np.array_equal(a, g.conv_weight("model.1.conv.weight", (8, 3, 3, 3)).values)
    assert a.dtype == np.float32


def test_conv_weight_keeps_the_variance():
    values = g.conv_weight("w", (64, 16, 3, 3)).values
    assert values.std() == pytest.approx(1 / np.sqrt(16 * 9), rel=0.05)


def test_batchnorm_params_are_named_like_torch_and_near_identity():
    params = g.batchnorm_params("layer.bn", 8)
    assert [p.name for p in params] == [f"layer.bn.{k}" for k in ("weight", "bias", "running_mean", "running_var")]
    scale, _, _, var = (p.values for p in params)
    assert (scale > 0.5).all() and (var > 0.5).all()


def test_scales_map_the_largest_magnitude_to_127():
    w = g.conv_weight("w", (4, 2, 3, 3)).values
    per_channel = g.per_channel_scale(w)
    assert per_channel.shape == (4,)
    assert (np.abs(g.quantize_values(w, per_channel)).reshape(4, -1).max(axis=1) == 127).all()
    per_tensor = g.per_tensor_scale(w)
    assert per_tensor.shape == ()
    assert np.abs(g.quantize_values(w, per_tensor)).max() == 127


@pytest.mark.parametrize("per_channel", [True, False])
def test_quantize_values_equals_onnxruntime_quantizelinear(per_channel):
    """The INT8 initializers we write are what QuantizeLinear makes of the float weights."""
    w = g.conv_weight("w", (6, 4, 3, 3)).values
    scale = g.per_channel_scale(w) if per_channel else g.per_tensor_scale(w)
    attrs = {"axis": 0} if per_channel else {}
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["w", "s", "z"], ["q"], **attrs)],
        "q",
        [helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, w.shape)],
        [helper.make_tensor_value_info("q", onnx.TensorProto.INT8, w.shape)],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(np.zeros(scale.shape, np.int8), "z")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.array_equal(session.run(None, {"w": w})[0], g.quantize_values(w, scale))


def test_quantizer_params_have_a_symmetric_int8_zero_point():
    scale, zero_point = g.quantizer_params("s", "z", g.per_channel_scale(np.ones((3, 1, 1, 1), np.float32)))
    assert scale.values.dtype == np.float32 and zero_point.values.dtype == np.int8
    assert zero_point.values.shape == scale.values.shape == (3,) and not zero_point.values.any()


def test_axis_must_match_the_scale():
    graph = gs.Graph()
    x = g.graph_input("x", (1, 3, 4, 4))
    per_channel = g.quantizer_params("s", "z", np.ones(3, np.float32))
    per_tensor = g.quantizer_params("s1", "z1", 1.0)
    with pytest.raises(ValueError):
        g.quantize_linear(graph, x, *per_channel, "q", "q_out")
    with pytest.raises(ValueError):
        g.dequantize_linear(graph, x, *per_tensor, "dq", "dq_out", axis=0)


def test_torch_fake_quantize_names_and_wiring():
    graph = gs.Graph()
    x = g.graph_input("x", (1, 3, 4, 4))
    out = g.torch_fake_quantize(graph, x, "/layer/_input_quantizer", 0.5)
    q, dq = graph.nodes
    assert (q.op, q.name, q.outputs[0].name) == (
        "QuantizeLinear", "/layer/_input_quantizer/QuantizeLinear", "/layer/_input_quantizer/QuantizeLinear_output_0"
    )
    assert (dq.op, dq.name, dq.outputs[0]) == ("DequantizeLinear", "/layer/_input_quantizer/DequantizeLinear", out)
    assert q.inputs[0] is x and dq.inputs[0] is q.outputs[0]
    assert q.inputs[1:] == dq.inputs[1:]
    assert [t.name for t in q.inputs[1:]] == ["/layer/_input_quantizer/scale", "/layer/_input_quantizer/zero_point"]


def test_torch_node_naming_and_output_marking():
    graph = gs.Graph()
    x = g.graph_input("x", (1, 3, 4, 4))
    y = g.torch_node(graph, "Relu", "/model.0/act", [x])
    assert (graph.nodes[0].name, y.name) == ("/model.0/act/Relu", "/model.0/act/Relu_output_0")
    g.mark_output(graph, y, (1, 3, 4, 4))
    assert graph.outputs == [y] and y.dtype == np.float32 and tuple(y.shape) == (1, 3, 4, 4)


def test_per_channel_scale_along_another_axis_maps_each_column_to_127():
    w = g.dense_weight("fc.weight", (32, 48), fan_in=32).values
    scale = g.per_channel_scale(w, axis=1)
    assert scale.shape == (48,)
    assert (np.abs(g.quantize_values(w, scale, axis=1)).max(axis=0) == 127).all()
    np.testing.assert_array_equal(g.per_channel_scale(w.T), scale)


def test_dense_weight_keeps_the_variance_of_its_fan_in():
    assert g.dense_weight("fc.weight", (256, 64), fan_in=256).values.std() == pytest.approx(1 / 16, rel=0.05)


def test_dequantize_int8_weight_stores_what_quantizelinear_makes_and_reads_it_through_one_dq():
    graph = gs.Graph()
    w = g.dense_weight("fc.weight", (32, 48), fan_in=32)
    scale = g.per_channel_scale(w.values, axis=1)
    out = g.dequantize_int8_weight(graph, w, scale, "fc.weight_int8", "s", "z", "dq", "dq_out", axis=1)
    (dq,) = graph.nodes
    stored, s, z = dq.inputs
    assert (dq.op, dq.attrs, dq.outputs[0]) == ("DequantizeLinear", {"axis": 1}, out)
    assert stored.name == "fc.weight_int8" and stored.values.dtype == np.int8
    np.testing.assert_array_equal(stored.values, g.quantize_values(w.values, scale, axis=1))
    assert (s.name, z.name, z.values.dtype) == ("s", "z", np.int8)
