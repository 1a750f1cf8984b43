"""The evidence bases the verdict engine reads from index.json: an FP32 model (P10's calibrator form) is stopped by a
fact on every TensorRT 11 target and answered by a range claim on every other TensorRT target; a QAT residual block
(P3) has a range claim on every TensorRT target; P10's finding is not applicable on ONNX Runtime; a malformed index
names the field."""
from __future__ import annotations

import pytest

from cases.generate import declared_index
from harness.matrix import load_matrix
from harness.targets import declared
from harness.targets.facts import CANNOT_EXPRESS, IMPLICIT_INT8, NO_DEVICE, REFUSES_BUILD

MATRIX = load_matrix()
INDEX = declared_index()
TENSORRT = [t for t in MATRIX.values() if t.backend == "tensorrt" and t.version and t.available]


def case_entry(case_id):
    return next(c for c in INDEX["cases"] if c["id"] == case_id)


def variant_entry(case_id, name):
    return next(v for v in case_entry(case_id)["variants"] if v["name"] == name)


@pytest.mark.parametrize("target_id", [t.id for t in TENSORRT])
def test_an_fp32_model_is_answered_on_every_tensorrt_target_by_a_fact_or_a_range_claim(target_id):
    target = MATRIX[target_id]
    calibrator = variant_entry("p10-implicit-lifecycle", "calibrator-entropy2")
    fact = declared.model_fact_basis(calibrator, target)
    assert fact == declared.fact_basis(calibrator, target)
    claim = declared.range_claim_basis(calibrator, target)
    if target.version.startswith("11"):
        assert fact is not None and fact.what == IMPLICIT_INT8 and fact.effect == REFUSES_BUILD and claim is None
        explicit = variant_entry("p10-implicit-lifecycle", "explicit-qdq")  # what --to-explicit writes
        assert declared.fact_basis(explicit, target) is None
        assert declared.range_claim_basis(explicit, target) is not None
    else:
        assert fact is None and claim is not None and claim.strength == "documentation"
        assert "before 11.0" in claim.label()


def test_a_user_s_model_is_stopped_by_what_it_needs_itself_not_by_the_reporter_s_build_knobs():
    mixed = variant_entry("p16-mixed-int8-fp8-weakly-typed", "as-reported")  # INT8 + FP8 Q/DQ, built weakly typed
    eleven = MATRIX["trt11-x86"]
    cell = declared.fact_basis(mixed, eleven, gpu_arch="sm_120")
    assert cell.what == "fp8-builder-flag" and cell.effect == CANNOT_EXPRESS  # the reported build cannot be made
    assert declared.model_fact_basis(mixed, eleven, gpu_arch="sm_120") is None  # the model builds strongly typed
    orin = declared.model_fact_basis(mixed, MATRIX["trt1016-orin"])
    assert orin.what == "fp8-qdq" and orin.effect == REFUSES_BUILD and "SM 8.7" in orin.statement
    calibrator = variant_entry("p10-implicit-lifecycle", "calibrator-entropy2")
    assert declared.model_fact_basis(calibrator, MATRIX["trt114-thor"]).what == IMPLICIT_INT8
    dla = variant_entry("p20-orin-dla-fallback", "as-reported")  # the DLA core is the cell's knob, not the model's
    assert declared.fact_basis(dla, MATRIX["trt1016-orin"]).effect == NO_DEVICE
    assert declared.model_fact_basis(dla, MATRIX["trt1016-orin"]) is None


@pytest.mark.parametrize("target_id", [t.id for t in TENSORRT])
def test_a_qat_residual_block_has_the_maintainer_s_range_claim_on_every_tensorrt_target(target_id):
    for name in ("identity-float", "identity-qdq"):
        claim = declared.range_claim_basis(variant_entry("p3-residual-add-qdq", name), MATRIX[target_id])
        assert claim is not None and claim.source == "https://github.com/NVIDIA/TensorRT/issues/1992"
        assert "no version named" in claim.label()


def test_a_tensorrt_only_finding_is_not_applicable_on_onnx_runtime_only():
    p10 = case_entry("p10-implicit-lifecycle")
    assert "no analogue" in declared.not_applicable_basis(p10, MATRIX["ort-cpu"])
    assert declared.not_applicable_basis(p10, MATRIX["trt107-orin"]) is None
    assert declared.not_applicable_basis(case_entry("p3-residual-add-qdq"), MATRIX["ort-cpu"]) is None


def test_an_index_written_before_these_fields_declares_nothing():
    old = {"name": "v", "claims": []}
    assert declared.range_claims(old) == () and declared.needs(old) == ()
    assert declared.fact_basis(old, MATRIX["trt11-x86"]) is None
    assert declared.not_applicable({"id": "c"}, "onnxruntime") is None


@pytest.mark.parametrize(("entry", "message"), [
    ({"range_claims": {}}, "cases\\[0\\].variants\\[1\\]: field 'range_claims' must be a list"),
    ({"range_claims": [{"outcome": "x"}]}, "range_claims\\[0\\]: missing field"),
    ({"range_claims": [{"outcome": "x", "source": "https://s", "strength": "s", "basis": "b",
                        "scope": {"since": "eight"}}]}, "range_claims\\[0\\].scope: .*MAJOR.MINOR"),
    ({"needs": ["int4"]}, "needs: \\['int4'\\] are not among"),
])
def test_a_malformed_entry_names_the_field(entry, message):
    with pytest.raises(ValueError, match=message):
        declared.range_claims(entry, "cases[0].variants[1]")
        declared.needs(entry, "cases[0].variants[1]")
