"""Cutting a match out of a user's model: the user's weights and Q/DQ scales, inputs and outputs at the cut."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cases  # noqa: F401  (registers the library)
from harness.scan.extraction import ExtractionError, Extractor
from harness.scan.loading import load_model
from harness.scan.matching import find_patterns


def occurrences(path, label):
    loaded = load_model(path)
    finding = next(f for f in find_patterns(loaded.graph).findings if f.label == label)
    return loaded, finding.occurrences


def initializers(model) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def test_a_qdq_depthwise_conv_keeps_the_users_weights_and_scales(model_files):
    loaded, (occurrence,) = occurrences(model_files["backbone-silu-qdq"], "s3-depthwise-qdq/"
                                        "depthwise-c32-float-qdq-per-channel")
    extracted = Extractor(loaded).extract(occurrence.nodes)
    model = extracted.model
    assert sorted(n.name for n in model.graph.node) == sorted(occurrence.nodes)
    original = initializers(onnx.load(model_files["backbone-silu-qdq"]))
    for name, values in initializers(model).items():
        np.testing.assert_array_equal(values, original[name])
    assert {"backbone.dw.conv.weight", "/backbone/dw/conv/_weight_quantizer/scale"} <= set(initializers(model))
    (x,) = model.graph.input
    assert x.name == "/backbone/layer2/layer2.0/relu_1/Relu_output_0"
    assert [d.dim_value for d in x.type.tensor_type.shape.dim] == [1, 32, 16, 16]
    assert [o.name for o in model.graph.output] == ["/backbone/dw/conv/Conv_output_0"]
    assert extracted.notes == []


def test_a_residual_block_is_cut_at_its_input_and_its_last_relu(model_files):
    loaded, blocks = occurrences(model_files["backbone-silu-qdq"], "s5-qdq-resnet-block/downsample-shortcut")
    model = Extractor(loaded).extract(blocks[0].nodes).model
    assert [i.name for i in model.graph.input] == ["/backbone/layer1/layer1.1/relu_1/Relu_output_0"]
    assert [o.name for o in model.graph.output] == ["/backbone/layer2/layer2.0/relu_1/Relu_output_0"]
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 3 and ops.count("Add") == 1


def test_a_tensor_the_rest_of_the_model_reads_becomes_an_output(tmp_path):
    """S1's workaround form: the conv output is also a graph output, so the reproducer must keep it one."""
    from cases.generate import export_model
    from cases.s1_conv_silu import CONV_OUTPUT, ConvSilu

    variant = ConvSilu.variant("conv-output-marked")
    onnx.save(export_model(ConvSilu, variant)[0], tmp_path / "marked.onnx")
    loaded, (occurrence,) = occurrences(tmp_path / "marked.onnx", "s1-conv-silu/conv-output-marked")
    model = Extractor(loaded).extract(occurrence.nodes).model
    assert CONV_OUTPUT in [o.name for o in model.graph.output]


def test_symbolic_dimensions_are_set_to_one_and_said(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/conv/Conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="/act/Sigmoid"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="/act/Mul")]
    weight = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 8, 8])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "dynamic.onnx")
    loaded, (occurrence,) = occurrences(tmp_path / "dynamic.onnx", "s1-conv-silu/as-reported")
    extracted = Extractor(loaded).extract(occurrence.nodes)
    assert [d.dim_value for d in extracted.model.graph.input[0].type.tensor_type.shape.dim] == [1, 3, 8, 8]
    assert extracted.notes == ["input 'x' has the shape ['batch', 3, 8, 8]: symbolic dimensions set to 1, [1, 3, 8, 8]"]


def test_an_integer_tensor_computed_by_the_model_cannot_be_an_input(tmp_path):
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="/shape"),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="/reshape")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "shape.onnx")
    with pytest.raises(ExtractionError, match="'shape' is int64: its value is computed by the rest of the model"):
        Extractor(load_model(tmp_path / "shape.onnx")).extract(["/reshape"])


def test_weights_in_external_data_are_read_for_the_cut_nodes(tmp_path, model_files):
    out = tmp_path / "ext" / "model.onnx"
    out.parent.mkdir()
    onnx.save(onnx.load(model_files["backbone-silu"]), out, save_as_external_data=True, location="weights.bin",
              size_threshold=0)
    loaded, occurrences_ = occurrences(out, "s1-conv-silu/size-64")
    model = Extractor(loaded).extract(occurrences_[0].nodes).model
    original = initializers(onnx.load(model_files["backbone-silu"]))
    weights = initializers(model)
    assert set(weights) == {"backbone.stem.conv.weight", "backbone.stem.conv.bias"}
    for name, values in weights.items():
        np.testing.assert_array_equal(values, original[name])


def test_cutting_leaves_the_users_graph_as_it_was_imported(model_files):
    """Later matches are compared with earlier ones by their nodes' types and shapes: a cut must not load, convert
    or keep anything in the user's graph."""
    loaded, (occurrence,) = occurrences(model_files["backbone-silu-qdq"], "s3-depthwise-qdq/"
                                        "depthwise-c32-float-qdq-per-channel")
    before = [(t.name, t.dtype, t.shape) for t in loaded.graph.tensors().values()]
    extractor = Extractor(loaded)
    first = extractor.extract(occurrence.nodes).model.SerializeToString(deterministic=True)
    second = extractor.extract(occurrence.nodes).model.SerializeToString(deterministic=True)
    assert first == second
    assert [(t.name, t.dtype, t.shape) for t in loaded.graph.tensors().values()] == before
