"""scripts/export_torch_corpus.py's storing step (shrink), which runs without torch: what it empties, what it keeps,
and that corpus.load's re-drawing undoes it into a valid model."""
import importlib.util
import json

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import corpus
from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("export_torch_corpus", REPO / "scripts" / "export_torch_corpus.py")
export = importlib.util.module_from_spec(spec)
spec.loader.exec_module(export)


def quantized_linear_model() -> onnx.ModelProto:
    """y = MatMul(x, DQ(Q(W))) with a (64, 32) weight, a per-channel scale of 32 values, and a large Constant node."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.normal(0.5, 2.0, (64, 32)).astype(np.float32), "W")
    scale = numpy_helper.from_array(np.full(32, 0.02, np.float32), "scale")
    zero = numpy_helper.from_array(np.zeros(32, np.int8), "zero")
    big = numpy_helper.from_array(np.ones((40, 32), np.float32), "big_value")
    nodes = [helper.make_node("QuantizeLinear", ["W", "scale", "zero"], ["Wq"], name="q", axis=1),
             helper.make_node("DequantizeLinear", ["Wq", "scale", "zero"], ["Wdq"], name="dq", axis=1),
             helper.make_node("Constant", [], ["offset"], name="offset", value=big),
             helper.make_node("MatMul", ["x", "Wdq"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "offset"], ["y"], name="add")]
    nodes[3].metadata_props.add(key="pkg.torch.onnx.stack_trace", value="File x.py, line 1" * 100)
    nodes[3].metadata_props.add(key="pkg.torch.onnx.name_scopes", value="['', 'fc']")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [40, 32])],
                              [weight, scale, zero])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_shrink_empties_large_tensors_and_keeps_the_graph_the_scales_and_the_module_path():
    model = quantized_linear_model()
    original = numpy_helper.to_array(model.graph.initializer[0])
    redrawn = export.shrink(model)
    assert [r["name"] for r in redrawn] == ["W", "offset"]  # the large Constant became an emptied initializer
    weight = next(t for t in model.graph.initializer if t.name == "W")
    assert list(weight.dims) == [64, 32] and not weight.raw_data and not weight.float_data
    assert redrawn[0]["mean"] == pytest.approx(float(original.mean())) and redrawn[0]["std"] == pytest.approx(
        float(original.std()))
    kept = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.name in ("scale", "zero")}
    assert np.all(kept["scale"] == np.float32(0.02)) and kept["zero"].shape == (32,)
    assert [n.op_type for n in model.graph.node] == ["QuantizeLinear", "DequantizeLinear", "MatMul", "Add"]
    assert [p.key for p in model.graph.node[2].metadata_props] == ["pkg.torch.onnx.name_scopes"]
    assert export.shrink(model) == []  # shrinking twice changes nothing


def test_a_shrunk_model_redrawn_by_the_loader_is_valid_again(tmp_path, monkeypatch):
    model = quantized_linear_model()
    redrawn = export.shrink(model)
    onnx.save(model, tmp_path / "tiny.onnx")
    (tmp_path / "tiny.json").write_text(json.dumps({"kind": "qat", "redrawn": redrawn}))
    monkeypatch.setattr(corpus, "MODELS", tmp_path)
    loaded = corpus.load("tiny")
    onnx.checker.check_model(loaded, full_check=True)
    weight = numpy_helper.to_array(next(t for t in loaded.graph.initializer if t.name == "W"))
    assert weight.shape == (64, 32) and abs(weight.mean() - redrawn[0]["mean"]) < 0.3
    assert corpus.names() == ["tiny"] and corpus.names(kind="fp32") == []


def test_every_model_of_the_corpus_is_one_the_script_exports():
    assert sorted(export.SPECS) == corpus.names()
    for name in corpus.names():
        architecture, task, quantization, exporter, opset, _ = export.SPECS[name]
        info = corpus.info(name)
        assert (info["architecture"], info["task"], info["quantization"], info["exporter"], info["opset"]) == (
            architecture, task, quantization, exporter, opset)
