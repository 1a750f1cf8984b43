"""Every range claim of the library covers exactly the matrix targets its source speaks about, and yields to a claim
for a target, a narrower contrary range claim and an observation; every variant's needs match its graph; and a
case whose finding cannot concern a backend says so. index.json carries all of it, and still reads as before."""
from __future__ import annotations

import dataclasses

import onnx
import pytest

from cases import all_cases
from cases.generate import declared_index, export_built
from cases.model import CLAIM_OUTCOMES, Claim, Observation, Scope, Variant, get_case
from harness.matrix import load_matrix
from harness.store.claims import index_claims
from harness.targets.facts import FP4_QDQ, FP8_QDQ
from harness.targets.ranges import OBSERVATION, RANGE_CLAIM, TARGET_CLAIM, deciding

MATRIX = load_matrix()

X86_10 = {"trt100-x86", "trt102-x86", "trt103-x86", "trt107-x86", "trt1013-x86", "trt1016-x86"}
ORIN_10 = {"trt100-orin", "trt103-orin", "trt103-orin-dla", "trt107-orin", "trt107-orin-dla", "trt1016-orin"}
THOR_10 = {"trt1013-thor", "trt1016-thor"}
BEFORE_10 = {"trt86-x86", "trt92-x86", "trt86-orin", "trt85-orin"}
ELEVEN = {"trt11-x86", "trt114-orin", "trt114-orin-dla", "trt114-thor"}
CALIBRATOR_RELEASES = BEFORE_10 | X86_10 | ORIN_10 | THOR_10  # every target before 11.0
EVERY_TENSORRT = CALIBRATOR_RELEASES | ELEVEN

# (case, variant) -> the targets its range claim covers, as its source supports.
COVERS = {
    ("p3-residual-add-qdq", "identity-float"): EVERY_TENSORRT,  # #1992: a maintainer, no version: 8.0 on
    ("p3-residual-add-qdq", "identity-qdq"): EVERY_TENSORRT,
    ("p3-residual-add-qdq", "channels-64-identity-qdq"): EVERY_TENSORRT,
    ("p10-implicit-lifecycle", "calibrator-entropy2"): CALIBRATOR_RELEASES,  # works (deprecated from 10.1) before 11.0
    ("p10-implicit-lifecycle", "explicit-qdq"): EVERY_TENSORRT,
    ("p13-dynamic-batch-calibration", "no-calibration-profile"): CALIBRATOR_RELEASES,  # the developer guide
    ("p13-dynamic-batch-calibration", "calibration-profile-set"): CALIBRATOR_RELEASES,
    ("p11-calibration-cache", "old-cache-only"): X86_10 | ORIN_10 | THOR_10,  # a cache of 8.6 on any 10.x
    ("p9-topk-head", "as-reported"): X86_10 - {"trt102-x86"},  # every 10.x on x86 but 10.2.0
    ("p16-mixed-int8-fp8-weakly-typed", "as-reported"): THOR_10,  # Blackwell (SM 10.0+), 10.x: Thor's SM 11.0
    ("p16-mixed-int8-fp8-weakly-typed", "strongly-typed"): THOR_10,
    ("p2-convtranspose-qdq", "as-reported"): EVERY_TENSORRT - {"trt85-orin"},  # #3412, 2023: 8.6 on
    ("p7-transformer-block", "implicit-ln17"): CALIBRATOR_RELEASES - {"trt85-orin"},  # #3230 (8.6.1) to #4058 (10.1)
    ("p8-attention-myelin", "as-reported"): CALIBRATOR_RELEASES,  # #2323 (2022, no version): 8.5 on, before 11.0
    ("p20-orin-dla-fallback", "dla-no-fallback"): {  # the DLA guide, releases with DLA on Orin (8.5 to 10.7)
        "trt85-orin", "trt86-orin", "trt100-orin", "trt103-orin", "trt103-orin-dla", "trt107-orin", "trt107-orin-dla"},
    ("s4-bn-mish", "native-mish"): BEFORE_10,  # onnx-tensorrt tables: Mish from 10.0
    ("s4-bn-mish", "qdq-before-native-mish"): BEFORE_10,
}
DECLARED = {(case.id, variant.name): claim for case in all_cases() for variant in case.variants
            for claim in variant.range_claims}


def test_every_range_claim_of_the_library_is_listed_here():
    assert set(DECLARED) == set(COVERS)


@pytest.mark.parametrize("key", sorted(COVERS))
def test_a_range_claim_covers_the_targets_its_source_speaks_about(key):
    claim = DECLARED[key]
    assert {t.id for t in MATRIX.values() if claim.covers(t)} == COVERS[key], claim.label()
    assert claim.source in get_case(key[0]).links and claim.basis in claim.label()


@pytest.mark.parametrize("key", sorted(COVERS))
def test_a_claim_for_the_target_a_narrower_contrary_claim_or_an_observation_overrides_it(key):
    claim = DECLARED[key]
    target = MATRIX[sorted(COVERS[key])[0]]
    contrary = next(o for o in CLAIM_OUTCOMES if o != claim.outcome)
    assert deciding(target, range_claims=[claim]).evidence is claim
    exact = dataclasses.replace(get_case(key[0]).variant(key[1]).claims[0], target=target.id, outcome=contrary) \
        if get_case(key[0]).variant(key[1]).claims else contrary
    assert deciding(target, claims=[exact], range_claims=[claim]).basis == TARGET_CLAIM
    major, minor = (tuple(int(n) for n in target.version.split(".")[:2]) + (0,))[:2]
    narrower = dataclasses.replace(claim, outcome=contrary, scope=Scope(  # this release on this platform only
        since=f"{major}.{minor}", before=f"{major}.{minor + 1}", platforms=(target.platform,),
        architectures=claim.scope.architectures))
    decision = deciding(target, range_claims=[claim, narrower])
    assert (decision.basis, decision.evidence.outcome, decision.overridden) == (RANGE_CLAIM, contrary, (claim,))
    seen = Observation(target=target.id, outcome=contrary, category=None)
    assert deciding(target, observations=[seen], claims=[exact], range_claims=[claim]).basis == OBSERVATION


def test_a_range_claim_refuses_what_it_cannot_be():
    scope = Scope(since="8.0")
    with pytest.raises(ValueError, match="outcome 'works' is not one of"):  # the case library's claim vocabulary
        Variant(name="v", role="failing", description="d", range_claims=(
            Claim(outcome="works", source="https://x", strength="issue-thread", scope=scope, basis="b"),))
    with pytest.raises(ValueError, match="https://"):
        Claim(outcome=CLAIM_OUTCOMES[0], source="#1992", strength="issue-thread", scope=scope, basis="b")
    with pytest.raises(ValueError, match="basis"):
        Claim(outcome=CLAIM_OUTCOMES[0], source="https://x", strength="issue-thread", scope=scope, basis="")
    with pytest.raises(ValueError, match="needs \\['int4'\\]"):
        Variant(name="v", role="failing", description="d", needs=("int4",))


def _has_quantize_of(model: onnx.ModelProto, element_types: set[int]) -> bool:
    types = {init.name: init.data_type for init in model.graph.initializer}
    return any(node.op_type in ("QuantizeLinear", "DequantizeLinear") and len(node.input) > 2
               and types.get(node.input[2]) in element_types for node in model.graph.node)


FP8_TYPES = {onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E5M2}
FP8_CASES = ["p15-precision-flag-without-qdq", "p16-mixed-int8-fp8-weakly-typed", "p17-fp8-qdq-after-maxpool",
             "p18-fp8-gemm-mixed-scales", "p10-implicit-lifecycle", "p3-residual-add-qdq", "s5-qdq-resnet-block"]


@pytest.mark.parametrize("case_id", FP8_CASES)
def test_a_variant_declares_fp8_exactly_where_its_graph_has_fp8_qdq(case_id):
    case = get_case(case_id)
    for variant in case.variants:
        model, _ = export_built(case, variant)
        assert (FP8_QDQ in case.needs_of(variant)) == _has_quantize_of(model, FP8_TYPES), variant.name
        assert FP4_QDQ not in case.needs_of(variant)


def test_needs_follow_mode_and_knobs():
    assert get_case("p10-implicit-lifecycle").needs_of(get_case("p10-implicit-lifecycle").variant(
        "calibrator-entropy2")) == ("implicit-int8",)
    assert get_case("p10-implicit-lifecycle").needs_of(get_case("p10-implicit-lifecycle").variant("explicit-qdq")) == ()
    p20 = get_case("p20-orin-dla-fallback")
    assert p20.needs_of(p20.variant("as-reported")) == ("dla", "implicit-int8")
    assert "dla" not in p20.needs_of(p20.variant("gpu-only"))
    p13 = get_case("p13-dynamic-batch-calibration")
    assert "calibration-profile" in p13.needs_of(p13.variant("calibration-profile-set"))


def test_a_finding_of_tensorrt_s_calibrator_lifecycle_is_not_applicable_on_onnx_runtime():
    assert "no analogue" in get_case("p10-implicit-lifecycle").not_applicable["onnxruntime"]
    not_applicable = {case.id for case in all_cases() if "onnxruntime" in case.not_applicable}
    # The cases whose ONNX Runtime cells show ONNX Runtime's own INT8 coverage of the form stay applicable there.
    assert not not_applicable & {"p3-residual-add-qdq", "p6-linear-int8", "s1-conv-silu", "p19-best-precision-accuracy"}
    assert {"p1-dwconv-swish-last-node", "p9-topk-head", "p11-calibration-cache", "p20-orin-dla-fallback"} <= \
        not_applicable


def test_index_json_carries_needs_range_claims_and_not_applicable_and_reads_as_before():
    index = declared_index()
    p3 = next(c for c in index["cases"] if c["id"] == "p3-residual-add-qdq")
    entry = next(v for v in p3["variants"] if v["name"] == "identity-float")
    claim = entry["range_claims"][0]
    assert Scope.from_dict(claim["scope"]) == Scope(since="8.0") and claim["source"].endswith("/1992")
    p10 = next(c for c in index["cases"] if c["id"] == "p10-implicit-lifecycle")
    assert p10["not_applicable"]["onnxruntime"]
    assert p10["variants"][0]["needs"] == ["implicit-int8"]
    claims = index_claims(index, "index.json")
    assert [c["target"] for c in claims[("p10-implicit-lifecycle", "calibrator-entropy2")]] == [
        "trt100-x86", "trt102-x86", "trt103-orin"]
