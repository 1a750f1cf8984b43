"""Reading a user's model: one-line errors naming the file and the problem, external data, models over 2 GB.

Every test runs twice: onnx's checks in this process (a small model), and in a second process beside the graph's
import (a large model, here forced).
"""
from __future__ import annotations

import re

import onnx
import onnx_graphsurgeon as gs
import pytest
from onnx import TensorProto, helper

from harness.scan import loading
from harness.scan.loading import ModelInputError, load_model
from harness.scan.summary import model_summary


@pytest.fixture(autouse=True, params=["checks-inline", "checks-apart"])
def checks_where(request, monkeypatch):
    if request.param == "checks-apart":
        monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", 1)
        monkeypatch.setattr(loading, "cores", lambda: 2)
    else:
        monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", 10**9)
    return request.param


def error_of(path) -> str:
    with pytest.raises(ModelInputError) as caught:
        load_model(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message


def test_a_file_that_is_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a model\n")
    assert "not an ONNX file" in error_of(path)


def test_an_empty_or_missing_file(tmp_path):
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert "empty file" in error_of(tmp_path / "empty.onnx")
    assert "no such file" in error_of(tmp_path / "missing.onnx")
    assert "not a file" in error_of(tmp_path)


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_a_truncated_file_says_where_it_ends(tmp_path, model_files, keep):
    data = model_files["backbone-silu"].read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: int(len(data) * keep)])
    message = error_of(path)
    assert "truncated ONNX file: it ends inside the model's 'graph' field" in message
    assert re.search(r"\(\d+ of \d+ bytes present\)", message)


def test_an_opset_newer_than_the_installed_onnx(tmp_path, model_files):
    model = onnx.load(model_files["plain-cnn-qdq"])
    too_new = onnx.defs.onnx_opset_version() + 5
    model.opset_import[0].version = too_new
    onnx.save(model, tmp_path / "future.onnx")
    message = error_of(tmp_path / "future.onnx")
    assert f"opset {too_new} is newer than the installed onnx {onnx.__version__} knows" in message


def test_an_invalid_graph_is_named_as_such(tmp_path, model_files):
    model = onnx.load(model_files["plain-cnn-qdq"])
    model.graph.node[3].input[0] = "no_such_tensor"
    onnx.save(model, tmp_path / "broken.onnx")
    assert "not a valid ONNX model" in error_of(tmp_path / "broken.onnx")


def test_a_tensor_read_but_written_by_nobody_is_named_by_the_checker_in_one_line(tmp_path):
    """onnx's shape inference raises ValueError on it ("Invalid tensor data type 0.": the zero point Identity passes
    on has no type), as the first nodes of a torch.onnx export with one name mistyped do: the scan still says what
    the checker says, the node and the tensor it names on one line."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["no_such_tensor"], ["zero_point"], name="Identity_151"),
         helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["y"], name="quantize")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 4])],
        [helper.make_tensor("scale", TensorProto.FLOAT, [], [0.1])])
    path = tmp_path / "unwritten.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    with pytest.raises(ValueError, match="Invalid tensor data type"):  # what onnx's shape inference does with it
        onnx.shape_inference.infer_shapes(onnx.load(path), check_type=True, strict_mode=False)
    message = error_of(path)
    assert "not a valid ONNX model" in message
    assert "'no_such_tensor' of node: name: Identity_151 OpType: Identity is not output of any previous" in message


def save_external(model_path, tmp_path, location="weights.bin"):
    model = onnx.load(model_path)
    out = tmp_path / "ext" / "model.onnx"
    out.parent.mkdir()
    onnx.save(model, out, save_as_external_data=True, all_tensors_to_one_file=True, location=location,
              size_threshold=0)
    return out


def test_an_invalid_graph_is_named_by_the_checker_even_when_the_importer_fails_too(tmp_path, model_files,
                                                                                  monkeypatch):
    def importer_failing(model):
        raise KeyError("a tensor the graph does not have")

    model = onnx.load(model_files["plain-cnn-qdq"])
    model.graph.node[3].input[0] = "no_such_tensor"
    onnx.save(model, tmp_path / "broken.onnx")
    monkeypatch.setattr(gs, "import_onnx", importer_failing)
    assert "not a valid ONNX model" in error_of(tmp_path / "broken.onnx")
    loaded = load_model(model_files["plain-cnn-qdq"])  # the scan reads the protobuf: nothing imported yet
    with pytest.raises(ModelInputError) as caught:
        loaded.graph  # what --run and --fix cut and rewrite
    assert "onnx-graphsurgeon cannot import it (KeyError" in str(caught.value) and "\n" not in str(caught.value)


def test_the_graph_has_the_types_and_shapes_graphsurgeon_imports_from_the_inferred_model(tmp_path, model_files):
    """The graph is imported before shape inference ends and its shapes are put on it after: the same result as
    importing the inferred model, tensor by tensor."""
    for name, path in model_files.items():
        inferred = onnx.shape_inference.infer_shapes(onnx.load(path), check_type=True, strict_mode=True,
                                                     data_prop=True)
        expected = {t.name: (t.__class__.__name__, str(t.dtype), t.shape, getattr(t, "type", None))
                    for t in gs.import_onnx(inferred).tensors().values()}
        graph = load_model(path).graph
        got = {t.name: (t.__class__.__name__, str(t.dtype), t.shape, getattr(t, "type", None))
               for t in graph.tensors().values()}
        assert got == expected, name
        assert any(t.shape for node in graph.nodes[:-1] for t in node.outputs), name  # inferred, not declared


def test_external_data_is_checked_but_not_read(tmp_path, model_files):
    path = save_external(model_files["backbone-silu"], tmp_path)
    loaded = load_model(path)
    assert loaded.external_data == ["weights.bin"]
    stem = loaded.model.graph.initializer[0]
    assert stem.data_location == TensorProto.EXTERNAL and not stem.raw_data  # weights stay in the file
    assert len(loaded.graph.nodes) == len(onnx.load(model_files["backbone-silu"]).graph.node)


def test_missing_external_data_names_the_file(tmp_path, model_files):
    path = save_external(model_files["backbone-silu"], tmp_path)
    (path.parent / "weights.bin").unlink()
    message = error_of(path)
    assert "external data file 'weights.bin'" in message and "is missing" in message


def test_a_constant_nodes_external_data_is_checked_too(tmp_path):
    """A Constant node's value kept in an external file (its attribute, not an initializer) is checked as well."""
    value = TensorProto(name="bias", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    for key, text in (("location", "bias.bin"), ("offset", "0"), ("length", "16")):
        value.external_data.add(key=key, value=text)
    nodes = [helper.make_node("Constant", [], ["b"], name="/bias/Constant", value=value),
             helper.make_node("Add", ["x", "b"], ["y"], name="/add/Add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "const.onnx")
    message = error_of(tmp_path / "const.onnx")
    assert "external data file 'bias.bin' of tensor 'bias'" in message and "is missing" in message
    (tmp_path / "bias.bin").write_bytes(bytes(16))
    assert load_model(tmp_path / "const.onnx").external_data == ["bias.bin"]


def test_short_external_data_is_called_truncated(tmp_path, model_files):
    path = save_external(model_files["backbone-silu"], tmp_path)
    data = path.parent / "weights.bin"
    data.write_bytes(data.read_bytes()[:100])
    assert "is too short" in error_of(path)


def test_a_model_over_2_gb_scans_without_loading_its_weights(tmp_path):
    """2.07 GiB of conv weights in a sparse external data file: shape inference and matching read shapes only."""
    channels, kernel = 1024, 23
    nbytes = channels * channels * kernel * kernel * 4
    weight = TensorProto(name="big.weight", data_type=TensorProto.FLOAT, dims=[channels, channels, kernel, kernel],
                         data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "big.bin"), ("offset", "0"), ("length", str(nbytes))):
        weight.external_data.add(key=key, value=value)
    nodes = [helper.make_node("Conv", ["x", "big.weight"], ["c"], name="/big/conv/Conv"),
             helper.make_node("Sigmoid", ["c"], ["s"], name="/big/act/Sigmoid"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="/big/act/Mul")]
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                           [1, channels, kernel, kernel])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 1, 1])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "big.onnx")
    with open(tmp_path / "big.bin", "wb") as data:
        data.truncate(nbytes)  # sparse: no disk space, no memory
    assert nbytes > 2**31
    loaded = load_model(tmp_path / "big.onnx")
    assert loaded.notes == [] and loaded.external_data == ["big.bin"]
    assert loaded.graph.outputs[0].shape == [1, channels, 1, 1]
    import cases  # noqa: F401
    from harness.scan.matching import find_patterns

    # an FP32 model: its S1 stem, and P10 (INT8 only through a calibrator) for the model as a whole
    assert [f.case.id for f in find_patterns(loaded.graph).findings] == ["p10-implicit-lifecycle", "s1-conv-silu"]


def test_a_model_strict_inference_rejects_is_scanned_with_a_note(tmp_path):
    """A declared output shape that contradicts inference fails strict mode; the scan goes on and says so."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="/act/Relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "odd.onnx")
    loaded = load_model(tmp_path / "odd.onnx")
    assert any(note.startswith("strict shape inference failed") for note in loaded.notes)


def test_repeated_node_names_are_made_unique(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="act"), helper.make_node("Relu", ["a"], ["y"], name="act")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "dup.onnx")
    loaded = load_model(tmp_path / "dup.onnx")
    assert [n.name for n in loaded.graph.nodes] == ["act", "act~2"]
    assert any("repeat" in note for note in loaded.notes)


def test_the_summary_counts_ops_and_tells_the_quantization_mode(model_files):
    summary = model_summary(load_model(model_files["backbone-silu-qdq"]))
    ops = dict(summary["ops"])
    assert summary["mode"] == "explicit-qdq" and summary["qdq"]["QuantizeLinear"] == ops["QuantizeLinear"] > 0
    assert ops["Conv"] == 10 and summary["nodes"] == sum(ops.values())
    assert summary["ops"] == sorted(summary["ops"], key=lambda item: (-item[1], item[0]))
    assert summary["inputs"] == [{"name": "images", "dtype": "float32", "shape": [1, 3, 64, 64]}]
    assert summary["opset"] == 17
    implicit = model_summary(load_model(model_files["backbone-silu"]))
    assert implicit["mode"] == "implicit-int8" and implicit["qdq"] == {"QuantizeLinear": 0, "DequantizeLinear": 0}


def test_the_summary_names_the_types_fp8_and_mixed_qdq_models_quantize_to(tmp_path):
    """An FP8 Q/DQ model is not an "INT8" model: the summary says what its Q/DQ nodes quantize to."""
    import cases
    from cases.generate import export_built

    said = {}
    for case_id, variant in (("p15-precision-flag-without-qdq", "explicit-fp8-qdq"),
                             ("p16-mixed-int8-fp8-weakly-typed", "as-reported")):
        model, _ = export_built(cases.get_case(case_id), cases.get_case(case_id).variant(variant))
        onnx.save(model, tmp_path / f"{case_id}.onnx")
        said[case_id] = model_summary(load_model(tmp_path / f"{case_id}.onnx"))
    fp8 = said["p15-precision-flag-without-qdq"]
    assert fp8["quantized_types"] == ["FP8 (E4M3)"] and "INT8" not in fp8["mode_text"]
    assert "Q/DQ nodes set the FP8 (E4M3) tensors" in fp8["mode_text"]
    assert set(said["p16-mixed-int8-fp8-weakly-typed"]["quantized_types"]) == {"INT8", "FP8 (E4M3)"}
