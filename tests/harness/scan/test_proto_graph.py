"""The scan's view of a model's protobuf answers the matchers as onnx-graphsurgeon's import of the same model does:
the same findings on every model the tests hold (the scan models, every variant of the library, every real-exporter
corpus model), the same types, shapes, attributes and links of every tensor and node, one object per tensor."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import cases
import corpus
from cases.generate import export_model
from cases.matching import dequantized_precisions, has_qdq, indexed
from harness.scan.loading import load_model
from harness.scan.matching import find_patterns
from harness.scan.proto_graph import Constant, GraphIndex, ProtoGraph


def findings(graph) -> list[tuple]:
    found = find_patterns(graph)
    return [(f.case.id, f.variant.name if f.variant else None, [(o.nodes, o.note) for o in f.occurrences])
            for f in found.findings] + [("problems", found.problems)]


def library_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("library")
    for case in cases.all_cases():
        for variant in case.variants:
            path = out / f"{case.id}-{variant.name}.onnx"
            onnx.save(export_model(case, variant)[0], path)
            yield path


def test_the_view_finds_what_the_import_finds_on_every_model(model_files, tmp_path_factory, tmp_path):
    paths = [*model_files.values(), *library_models(tmp_path_factory),
             *(corpus.save(name, tmp_path) for name in corpus.names())]
    compared = 0
    for path in paths:
        loaded = load_model(path)
        on_view = findings(loaded.view)
        assert on_view == findings(loaded.graph), path.name
        with indexed(loaded.view):  # read a type of zero point at a time on the view, a node at a time on the import
            assert dequantized_precisions(loaded.view) == dequantized_precisions(loaded.graph), path.name
        compared += bool(on_view[:-1])
    assert compared > 100  # most models have findings: the comparison is not of empty lists


def _tensor_facts(tensor) -> tuple:
    values = tensor.values if isinstance(tensor, Constant) or tensor.__class__.__name__ == "Constant" else None
    return (tensor.__class__.__name__, str(tensor.dtype), None if tensor.shape is None else list(tensor.shape),
            None if values is None else values.tobytes())


def _attribute(value):
    if value.__class__.__name__ == "Constant":
        return ("tensor", value.name, np.asarray(value.values).tobytes())
    if isinstance(value, onnx.GraphProto) or value.__class__.__name__ == "Graph":
        return ("graph", value.name)
    return value


@pytest.mark.parametrize("name", ["transformer-qdq", "backbone-mish-qdq", "unet-qdq", "plain-cnn-qdq"])
def test_every_node_and_tensor_reads_as_in_the_import(model_files, name):
    loaded = load_model(model_files[name])
    view, graph = loaded.view, loaded.graph
    assert [n.name for n in view.nodes] == [n.name for n in graph.nodes]
    for mine, theirs in zip(view.nodes, graph.nodes):
        assert (mine.op, mine.domain) == (theirs.op, theirs.domain)
        assert {k: _attribute(v) for k, v in mine.attrs.items()} == {k: _attribute(v) for k, v in theirs.attrs.items()}
        for own, their in ((mine.inputs, theirs.inputs), (mine.outputs, theirs.outputs)):
            assert [t.name for t in own] == [t.name for t in their]
            assert [_tensor_facts(t) for t in own] == [_tensor_facts(t) for t in their], mine.name
            assert [[n.name for n in t.inputs] for t in own] == [[n.name for n in t.inputs] for t in their]
            assert [[n.name for n in t.outputs] for t in own] == [[n.name for n in t.outputs] for t in their]
    assert [_tensor_facts(t) for t in view.inputs] == [_tensor_facts(t) for t in graph.inputs]
    assert [_tensor_facts(t) for t in view.outputs] == [_tensor_facts(t) for t in graph.outputs]


def test_one_object_per_tensor_and_node(model_files):
    view = load_model(model_files["backbone-silu-qdq"]).view
    first, again = view.nodes[3], view.nodes[3]
    assert first is again
    tensor = first.outputs[0]
    assert all(tensor is reader_input for reader in tensor.outputs for reader_input in reader.inputs
               if reader_input.name == tensor.name)
    assert tensor.inputs[0] is first


def test_objects_are_made_once_when_a_matcher_first_reaches_one(model_files):
    view = load_model(model_files["backbone-silu-qdq"]).view
    assert view._nodes is None and view._tensors == {}  # indexing the model made no object
    assert has_qdq(view)
    made = view._nodes
    assert made is not None and len(made) == len(view.index.nodes)
    find_patterns(view)
    assert view._nodes is made  # the matchers reached the same objects, not new ones


def test_the_summarys_types_read_from_the_index_are_those_of_the_import(model_files, tmp_path_factory, tmp_path):
    """The summary reads a Q/DQ's type from its initializer zero point in the index: the same names, counts and
    order as reading every Q/DQ node of onnx-graphsurgeon's import; and the graph inputs and outputs from their value
    infos: the same types and shapes as the import's (the outputs' from shape inference)."""
    from collections import Counter

    from cases.matching import QDQ_OPS
    from harness.scan.summary import QUANTIZED_TYPE_NAMES, _type_name_of, model_summary, quantized_types

    paths = [*model_files.values(), *library_models(tmp_path_factory),
             *(corpus.save(name, tmp_path) for name in corpus.names())]
    kinds = set()
    for path in paths:
        loaded = load_model(path)
        names = (_type_name_of(node) for node in loaded.graph.nodes if node.op in QDQ_OPS)
        expected = Counter(QUANTIZED_TYPE_NAMES.get(n, n) if n else "unknown type" for n in names)
        assert quantized_types(loaded.view) == [name for name, _ in expected.most_common()], path.name
        summary = model_summary(loaded)
        for side, tensors in (("inputs", loaded.graph.inputs), ("outputs", loaded.graph.outputs)):
            assert summary[side] == [{"name": t.name, "dtype": None if t.dtype is None else np.dtype(t.dtype).name,
                                      "shape": None if t.shape is None else [d if isinstance(d, int) else str(d)
                                                                             for d in t.shape]}
                                     for t in tensors], (path.name, side)
        kinds.update(expected)
    assert {"INT8", "INT32", "FP8 (E4M3)"} <= kinds  # the models hold several types: not one name compared


def test_quantizers_are_grouped_by_the_type_of_their_initializer_zero_point_else_by_its_name():
    """Thousands of Q/DQ with a zero point each (one per weight quantizer) make a few groups, one per type; a zero
    point computed by a node, or left out, keeps its own group, each in graph order."""
    h, tp = onnx.helper, onnx.TensorProto
    nodes = [h.make_node("Constant", [], ["zc"], value=h.make_tensor("v", tp.INT8, [], [0]), name="c")]
    for i, zero_point in enumerate(["z0", "zf", "z1", "", "zc", "z2"]):
        inputs = [f"x{i}", "s", zero_point] if zero_point else [f"x{i}", "s"]
        nodes.append(h.make_node("QuantizeLinear" if i % 2 else "DequantizeLinear", inputs, [f"y{i}"], name=f"n{i}"))
    initializers = [h.make_tensor(n, tp.INT8, [], [0]) for n in ("z0", "z1", "z2")]
    initializers.append(h.make_tensor("zf", tp.FLOAT8E4M3FN, [], [0]))
    groups = GraphIndex(h.make_graph(nodes, "g", [], [], initializers)).quantizer_groups
    assert groups.by_type == {tp.INT8: [1, 3, 6], tp.FLOAT8E4M3FN: [2]}
    assert groups.by_zero_point == {"": [4], "zc": [5]}
