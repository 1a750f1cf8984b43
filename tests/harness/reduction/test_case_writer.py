"""The case module a reduction writes rebuilds the reduced graph: ops, names, attributes, shapes and dtypes; Q/DQ
scales and zero points and small constants as written; weights drawn with a fixed seed in the same shape and dtype
(or the model's own with keep_weights); an observation of the target recorded, never an upstream claim."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from harness.reduction.case_writer import CaseWriterError, write_case
from harness.reduction.failure import KeptFailure
from tests.harness.reduction.reproduce import export_case
from tests.models import f64_gelu

OBSERVED = KeptFailure(outcome="fail", category="no-implementation", error_kind="NotImplemented", node=None,
                       keep="category", message="NotImplemented: Could not find an implementation for Erf(13)")


def written(tmp_path, model: onnx.ModelProto, keep_weights: bool = False):
    path = tmp_path / "reduced.onnx"
    onnx.save(model, path)
    out = tmp_path / ("kept" if keep_weights else "drawn")
    out.mkdir()
    case = write_case(path, out, observed=OBSERVED, target="ort-cpu", source_model=tmp_path / "user.onnx",
                      nodes_before=102, max_abs_error=0.5, keep_weights=keep_weights)
    return case, export_case(case.module, tmp_path / f"export-{out.name}")


def constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


@pytest.fixture(scope="module")
def block():
    return f64_gelu.build(1)  # Q/DQ conv (scales, zero points, a 576-value weight) and the float64 GELU


def test_the_case_rebuilds_every_node_with_its_attributes_and_every_tensor_type(block, tmp_path):
    _, rebuilt = written(tmp_path, block)
    assert sorted((n.op_type, n.name) for n in rebuilt.graph.node) == sorted((n.op_type, n.name)
                                                                             for n in block.graph.node)
    attrs = {n.name: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute} for n in block.graph.node}
    assert {n.name: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            for n in rebuilt.graph.node} == attrs
    assert [(i.name, i.type) for i in rebuilt.graph.input] == [(i.name, i.type) for i in block.graph.input]
    assert [(o.name, o.type) for o in rebuilt.graph.output] == [(o.name, o.type) for o in block.graph.output]


def test_scales_zero_points_and_small_constants_are_as_written_and_weights_are_drawn(block, tmp_path):
    _, rebuilt = written(tmp_path, block)
    original, new = constants(block), constants(rebuilt)
    assert set(new) == set(original)
    weight = "blocks.0.conv.weight"
    for name, values in original.items():
        assert new[name].dtype == values.dtype and new[name].shape == values.shape, name
        if name == weight:
            assert not np.array_equal(new[name], values)
            assert abs(new[name].std() - values.std()) < 0.2 * values.std()
        else:  # scales, zero points, the bias (8 values) and the GELU's constants
            assert np.array_equal(new[name], values), name


def test_keep_weights_keeps_the_models_own(block, tmp_path):
    _, rebuilt = written(tmp_path, block, keep_weights=True)
    original, new = constants(block), constants(rebuilt)
    assert all(np.array_equal(new[name], values) for name, values in original.items())


def test_it_records_an_observation_of_the_target_and_no_upstream_claim(block, tmp_path):
    case, _ = written(tmp_path, block)
    source = case.module.read_text()
    assert "OBSERVED = Observation(target='ort-cpu', outcome='fail', category='no-implementation'" in source
    assert "links = ()" in source and "claims" not in source and "Claim(" not in source
    assert case.case_id.startswith("reduced-") and case.module.name == f"case_{case.case_id.replace('-', '_')}.py"


def test_a_graph_with_control_flow_is_refused_with_the_node_named(tmp_path):
    branch = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["x"], ["y"])], "branch", [],
                                    [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
    node = onnx.helper.make_node("If", ["c"], ["out"], name="/head/If", then_branch=branch, else_branch=branch)
    graph = onnx.helper.make_graph(
        [node], "g", [onnx.helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
                      onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [onnx.helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [1])])
    path = tmp_path / "if.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), path)
    with pytest.raises(CaseWriterError, match="'/head/If'.*subgraph"):
        write_case(path, tmp_path, observed=OBSERVED, target="ort-cpu", source_model=path, nodes_before=1,
                   max_abs_error=0.5)
