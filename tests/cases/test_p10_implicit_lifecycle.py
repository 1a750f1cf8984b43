"""P10: a calibrator build (Conv + ReLU) through implicit quantization's lifecycle, and its explicit Q/DQ migration."""
from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs
import pytest
import yaml

from cases.generate import export_model
from cases.p10_implicit_lifecycle import ImplicitLifecycle
from cases.p12_qdq_internal_assert import QdqInternalAssert
from harness.tensorrt.quantization_lifecycle import implicit_quantization
from tests.cases.test_library import MATRIX


variant = ImplicitLifecycle.variant


def model_of(name) -> onnx.ModelProto:
    return export_model(ImplicitLifecycle, variant(name))[0]


@pytest.mark.parametrize("name", [v.name for v in ImplicitLifecycle.variants])
def test_every_variant_passes_the_full_checker_and_strict_shape_inference(name):
    model = model_of(name)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    assert ImplicitLifecycle.build(variant(name)).expected_int8 == ("/conv/Conv",)


@pytest.mark.parametrize(("name", "expected"), [
    ("calibrator-entropy2", ["Conv", "Relu"]),
    ("calibrator-minmax", ["Conv", "Relu"]),
    ("explicit-qdq", ["QuantizeLinear", "QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv",
                      "QuantizeLinear", "DequantizeLinear", "Relu"]),
])
def test_exact_op_lists(name, expected):
    assert [n.op_type for n in model_of(name).graph.node] == expected


def test_the_calibrator_variants_differ_only_in_the_calibrator_and_the_migration_only_in_qdq():
    entropy, minmax, migration = (variant(n) for n in ("calibrator-entropy2", "calibrator-minmax", "explicit-qdq"))
    assert model_of("calibrator-entropy2").graph == model_of("calibrator-minmax").graph
    assert (entropy.knobs.calibrator, minmax.knobs.calibrator) == ("entropy2", "minmax")
    assert ImplicitLifecycle.mode_of(migration) == "explicit-qdq" and migration.role == "workaround"
    float_nodes = [n.name for n in model_of("explicit-qdq").graph.node if n.op_type in ("Conv", "Relu")]
    assert float_nodes == ["/conv/Conv", "/act/Relu"]


def test_claims_follow_the_lifecycle_of_each_target_version():
    """10.0 works without a warning (the reporter's), 10.2 and 10.3 still build but are past the 10.1 deprecation."""
    targets = yaml.safe_load(MATRIX.read_text())["targets"]
    claims = variant("calibrator-entropy2").claims
    assert {c.target for c in claims} == {"trt100-x86", "trt102-x86", "trt103-orin"}
    for claim in claims:
        status = implicit_quantization(targets[claim.target]["version"]).status
        assert claim.outcome == "pass"
        assert status == ("supported" if claim.target == "trt100-x86" else "deprecated"), claim.target
        if status == "deprecated":
            assert "DeprecationWarning" in claim.note and claim.strength == "documentation"
    assert "Q/DQ" in ImplicitLifecycle.remedy and "11.0" in ImplicitLifecycle.remedy


def test_the_matcher_takes_any_model_without_qdq_as_needing_a_calibrator():
    (match,) = ImplicitLifecycle.find(gs.import_onnx(model_of("calibrator-entropy2")))
    assert (match.case, match.nodes, match.variant) == (ImplicitLifecycle.id, (), "calibrator-entropy2")
    assert "10.1" in match.note and "11.0" in match.note


def test_the_matcher_finds_nothing_in_a_qdq_model_or_an_empty_graph():
    assert ImplicitLifecycle.find(gs.import_onnx(model_of("explicit-qdq"))) == []
    assert ImplicitLifecycle.find(gs.import_onnx(export_model(QdqInternalAssert, QdqInternalAssert.variants[0])[0])) == []
    assert ImplicitLifecycle.find(gs.Graph(opset=17)) == []
