"""Verdicts per target from tiers of evidence: the user's layer, the library variant, its claims, the reported form."""
from __future__ import annotations

import dataclasses

import pytest

from cases.model import Variant
from cases.p1_dwconv_swish_last_node import DwConvSwishLastNode
from cases.s1_conv_silu import ConvSilu
from cases.s3_depthwise_qdq import DepthwiseQdq
from cases.s4_bn_mish import BnMish
from harness import judgement as j
from harness.matrix import load_matrix
from harness.scan.matching import Finding, Occurrence
from harness.evidence.observations import Observation, Observations
from harness.scan.prediction import library_entries, library_form, model_verdict, predict

TARGETS = load_matrix()
NO_RESULTS = Observations([], [], {})


def finding(case=ConvSilu, variant="as-reported", places=1) -> Finding:
    chosen = case.variant(variant)
    return Finding(case, chosen, [Occurrence((f"/layer{i}/Conv",), "") for i in range(places)])


def observation(case, variant, target, outcome, category=None, nodes=(), host=None, source="r.jsonl"):
    record = {"case": case, "variant": variant, "target": target, "outcome": outcome, "fallback_nodes": list(nodes),
              "failure": {"category": category, "message": "the log says so", "node": None} if category else None,
              "started_at": "2026-11-23T00:00:00+00:00"}
    return Observation(record, source, host)


def observed(*observations) -> Observations:
    cells = {}
    for o in observations:
        cells.setdefault((o.record["case"], o.record["variant"], o.record["target"]), []).append(o)
    return Observations(["r.jsonl"], [], cells)


def test_a_claim_alone_gives_a_claimed_verdict_never_an_observed_one():
    verdict = predict(finding(), TARGETS["trt86-orin"], NO_RESULTS)
    assert (verdict.verdict, verdict.basis) == ("blocked", "claimed")
    assert verdict.reason == ("claimed upstream (issue thread), not observed here: fail (no-implementation); not a "
                              "CI gate here: a YOLOv8 export and calibrator not known to be yours (a sibling report "
                              "built with MinMax where entropy calibration failed)")
    assert not verdict.gates and verdict.gate_verdict == "unverified"  # reproduced, but on models not the user's
    assert [e.kind for e in verdict.evidence] == ["claimed"]
    assert "observed" not in verdict.reason.replace("not observed here", "")


def test_no_evidence_is_unverified():
    verdict = predict(finding(), TARGETS["trt86-x86"], NO_RESULTS)
    assert (verdict.verdict, verdict.basis, verdict.evidence) == ("unverified", None, [])


def test_an_observation_outranks_a_claim_and_says_it_disagrees():
    results = observed(observation("s1-conv-silu", "as-reported", "trt86-orin", "pass", host="orin-01"))
    verdict = predict(finding(), TARGETS["trt86-orin"], results)
    assert (verdict.verdict, verdict.basis) == ("likely", "observed")
    assert verdict.reason == ("observed pass on the library variant s1-conv-silu/as-reported [r.jsonl, host orin-01]; "
                              "upstream claimed fail (issue thread)")
    assert [e.kind for e in verdict.evidence] == ["observed", "claimed"]


def test_an_observed_failure_names_its_category_and_fallback_its_nodes():
    fail = observed(observation("s1-conv-silu", "as-reported", "trt86-x86", "fail", "no-implementation"))
    assert predict(finding(), TARGETS["trt86-x86"], fail).reason.startswith(
        "observed fail (no-implementation) on the library variant s1-conv-silu/as-reported")
    fallback = observed(observation("s1-conv-silu", "as-reported", "trt86-x86", "fallback",
                                    nodes=["/model.0/conv/Conv"]))
    verdict = predict(finding(), TARGETS["trt86-x86"], fallback)
    assert verdict.verdict == "fallback" and "/model.0/conv/Conv not in the precision asked" in verdict.reason


def test_a_dla_build_whose_layers_ran_on_the_gpu_is_said_beside_its_verdict():
    moved = observation("s1-conv-silu", "as-reported", "trt107-orin-dla", "pass", host="orin-01")
    moved.record["details"] = {"dla_fallback_nodes": ["/model.0/act/Sigmoid", "/model.0/act/Mul"]}
    verdict = predict(finding(), TARGETS["trt107-orin-dla"], observed(moved))
    assert (verdict.verdict, verdict.basis) == ("likely", "observed")
    assert ("observed pass on the library variant s1-conv-silu/as-reported; on the GPU, not the DLA: "
            "/model.0/act/Sigmoid, /model.0/act/Mul (a device fallback) [r.jsonl, host orin-01]") in verdict.reason
    assert verdict.evidence[0].to_dict()["gpu_nodes"] == ["/model.0/act/Sigmoid", "/model.0/act/Mul"]


def test_hosts_that_disagree_give_the_worse_verdict():
    results = observed(observation("s1-conv-silu", "as-reported", "trt86-x86", "pass", host="a"),
                       observation("s1-conv-silu", "as-reported", "trt86-x86", "crash", "crash", host="b"))
    verdict = predict(finding(), TARGETS["trt86-x86"], results)
    assert verdict.verdict == "blocked" and "host b" in verdict.reason


def test_infra_errors_are_no_evidence():
    broken = observation("s1-conv-silu", "as-reported", "trt86-orin", "infra-error", "harness")
    verdict = predict(finding(), TARGETS["trt86-orin"], observed(broken))
    assert (verdict.verdict, verdict.basis) == ("blocked", "claimed")  # the claim decides
    written = verdict.to_dict()["evidence"]  # scan.json lists the broken cell, with no verdict of its own
    assert [(e["kind"], e["outcome"], e["verdict"]) for e in written][0] == ("observed", "infra-error", None)
    alone = predict(finding(), TARGETS["trt86-x86"], observed(
        observation("s1-conv-silu", "as-reported", "trt86-x86", "infra-error", "harness")))
    assert alone.verdict == "unverified" and "only records that say nothing of the pattern: infra-error" in alone.reason


def test_the_users_own_layer_outranks_the_library():
    library = observed(observation("s1-conv-silu", "as-reported", "ort-cpu", "fallback", nodes=["/model.0/conv/Conv"]))
    mine = observation("s1-conv-silu", "layer0-Conv", "ort-cpu", "pass", source="out/reproducers/results.jsonl")
    verdict = predict(finding(), TARGETS["ort-cpu"], library, layers=[[mine]])
    assert (verdict.verdict, verdict.basis) == ("verified", "observed")
    assert verdict.reason.startswith("observed pass on your layer (layer0-Conv)")
    fallback = observation("s1-conv-silu", "layer0-Conv", "ort-cpu", "fallback", nodes=["/layer0/Conv"])
    reason = predict(finding(), TARGETS["ort-cpu"], library, layers=[[fallback]]).reason
    assert "/layer0/Conv not in the precision asked" in reason


def test_layers_checked_in_part_decide_only_when_one_fails():
    passed = observation("s1-conv-silu", "layer0-Conv", "trt86-orin", "pass")
    verdict = predict(finding(places=2), TARGETS["trt86-orin"], NO_RESULTS, layers=[[passed], []])
    assert (verdict.verdict, verdict.basis) == ("blocked", "claimed")  # one layer unchecked: the claim still stands
    failed = observation("s1-conv-silu", "layer1-Conv", "trt86-orin", "fail", "no-implementation")
    verdict = predict(finding(places=2), TARGETS["trt86-orin"], NO_RESULTS, layers=[[passed], [failed]])
    assert (verdict.verdict, verdict.basis) == ("blocked", "observed")
    verdict = predict(finding(places=3), TARGETS["ort-cpu"], NO_RESULTS, layers=[[failed], [], []])
    assert verdict.reason.endswith("(1 of 3 occurrences checked on their own layer)")


def linked(variant: str, varies: str | None, inherits: bool) -> Finding:
    """A finding of S1 in the form of ``variant``, linked to the failing form as given (whatever the library says)."""
    chosen = dataclasses.replace(ConvSilu.variant(variant), varies=varies, inherits=inherits)
    return Finding(ConvSilu, chosen, [Occurrence(("/layer0/Conv",), "")])


def test_only_a_sweep_that_inherits_falls_back_on_the_form_it_varies():
    sweep = predict(linked("channels-32", "as-reported", True), TARGETS["trt86-orin"], NO_RESULTS)
    assert (sweep.verdict, sweep.basis) == ("blocked", "claimed")
    assert sweep.reason.startswith("no evidence for your form channels-32; claimed upstream (issue thread), not "
                                   "observed here: fail (no-implementation) for the reported form "
                                   "s1-conv-silu/as-reported; not a CI gate here: ")
    failed = observed(observation("s1-conv-silu", "as-reported", "trt86-x86", "fail", "no-implementation"))
    own_structure = linked("channels-32", "as-reported", False)
    assert predict(own_structure, TARGETS["trt86-orin"], NO_RESULTS).verdict == "unverified"
    assert predict(own_structure, TARGETS["trt86-x86"], failed).verdict == "unverified"
    assert predict(linked("channels-32", None, False), TARGETS["trt86-x86"], failed).verdict == "unverified"
    # the failing form's workarounds are claimed to pass on trt86-orin: listed for a variation of the failing form,
    # never for a form of its own
    varied = predict(own_structure, TARGETS["trt86-orin"], NO_RESULTS)
    assert [w.variant.name for w in varied.workarounds] == ["conv-output-marked", "sigmoid-output-marked"]
    assert predict(linked("channels-32", None, False), TARGETS["trt86-orin"], NO_RESULTS).workarounds == []
    assert predict(linked("channels-32", "as-reported", True), TARGETS["trt86-x86"], failed).verdict == "blocked"
    workaround = finding(variant="conv-output-marked")
    assert predict(workaround, TARGETS["trt86-orin"], NO_RESULTS).verdict == "likely"  # its own claim
    assert predict(workaround, TARGETS["trt100-x86"], NO_RESULTS).verdict == "unverified"  # not the failing form's


def test_a_sweep_that_changes_the_structure_inherits_nothing_from_the_reported_form():
    relu = DwConvSwishLastNode.variant("relu")  # another activation: a form of its own
    assert not relu.inherits and not any(c.target == "trt86-orin" for c in relu.claims)
    reported = [c.target for c in DwConvSwishLastNode.variant("as-reported").claims]
    assert "trt86-orin" in reported
    verdict = predict(finding(DwConvSwishLastNode, "relu"), TARGETS["trt86-orin"], NO_RESULTS)
    assert (verdict.verdict, verdict.evidence) == ("unverified", [])
    # on a target the case concerns that no claim, range or fact places (P1 is not applicable to ONNX Runtime)
    results = observed(observation(DwConvSwishLastNode.id, "as-reported", "trt-local", "fail", "runtime-error"))
    assert predict(finding(DwConvSwishLastNode, "relu"), TARGETS["trt-local"], results).verdict == "unverified"


@pytest.fixture
def s4_with_an_inheriting_sweep(monkeypatch):
    """S4 with a sweep of one failing form declared among its variants: the scan reads claims from the case's
    index.json form (judgement), which lists only the case's own variants."""
    sweep = Variant("decomposed-mish-wide", "sweep", "decomposed-mish, other sizes", varies="decomposed-mish",
                    inherits=True)
    monkeypatch.setattr(BnMish, "variants", type(BnMish.variants)([*BnMish.variants, sweep]))
    library_form.cache_clear()
    library_entries.cache_clear()
    yield sweep
    library_form.cache_clear()
    library_entries.cache_clear()


def test_an_inheriting_sweep_takes_the_evidence_of_the_form_it_varies_only(s4_with_an_inheriting_sweep):
    """S4 has two failing forms; a sweep of one of them never reads the other's claims."""
    sweep = s4_with_an_inheriting_sweep
    native = {c.target for c in BnMish.variant("native-mish").claims}
    decomposed = {c.target for c in BnMish.variant("decomposed-mish").claims}
    assert native - decomposed  # targets where only the other failing form has a claim
    place = [Occurrence(("/layer/Mish",), "")]
    for target in TARGETS.values():
        if not target.available:
            continue
        verdict = predict(Finding(BnMish, sweep, place), target, NO_RESULTS)
        claimed = [e for e in verdict.evidence if e.kind == "claimed"]  # its own facts and ranges are its own
        assert {e.variant for e in claimed} <= {"decomposed-mish"}, target.id
        assert bool(claimed) == (target.id in decomposed), target.id


def test_an_unavailable_target_says_why():
    verdict = predict(finding(), TARGETS["trt92-orin"], NO_RESULTS)
    assert verdict.verdict == "unavailable" and "never released for Jetson" in verdict.reason


def test_workarounds_known_to_pass_come_first():
    verdict = predict(finding(), TARGETS["trt86-orin"], NO_RESULTS)
    assert [(w.variant.name, w.verdict) for w in verdict.workarounds] == [
        ("conv-output-marked", "likely"), ("sigmoid-output-marked", "likely")]
    failed = observed(observation("s1-conv-silu", "conv-output-marked", "trt86-orin", "fail", "no-implementation"))
    verdict = predict(finding(), TARGETS["trt86-orin"], failed)
    assert [(w.variant.name, w.verdict) for w in verdict.workarounds] == [
        ("sigmoid-output-marked", "likely"), ("conv-output-marked", "blocked")]
    assert verdict.workarounds[1].to_dict()["knobs"] == {"extra_outputs": ["/model.0/conv/Conv_output_0"]}


def test_a_workaround_form_lists_the_other_workarounds_not_itself():
    s3 = finding(DepthwiseQdq, "depthwise-c32-float-qdq-per-channel")
    verdict = predict(s3, TARGETS["trt86-x86"], NO_RESULTS)
    assert verdict.verdict == "blocked"
    assert [(w.variant.name, w.verdict) for w in verdict.workarounds] == [("depthwise-c32-float", "fallback")]
    assert predict(finding(DepthwiseQdq, "depthwise-c32-float"), TARGETS["trt86-x86"], NO_RESULTS).workarounds == []


def test_the_model_verdict_is_the_worst_finding_or_clear():
    target = TARGETS["trt86-orin"]
    assert model_verdict(target, []).verdict == "clear"
    blocked = predict(finding(), target, NO_RESULTS)
    fine = predict(finding(variant="conv-output-marked"), target, NO_RESULTS)
    combined = model_verdict(target, [("a", fine), ("b", blocked)])
    assert (combined.verdict, combined.basis) == ("blocked", "claimed")
    assert combined.reason.startswith("b: claimed upstream")
    assert combined.findings == [("b", "blocked"), ("a", "likely")]
    assert model_verdict(TARGETS["trt102-orin"], [("b", blocked)]).verdict == "unavailable"


@pytest.mark.parametrize("level, failing", [("blocked", {"blocked"}), ("fallback", {"blocked", "fallback"}),
                                            ("unverified", {"blocked", "fallback", "unverified"})])
def test_fail_on_levels(level, failing):
    verdicts = ("blocked", "fallback", "unavailable", "unverified", "likely", "verified", "clear")
    assert {v for v in verdicts if j.fails_scan_gate(v, level)} == failing


def test_when_nothing_is_known_only_workarounds_known_to_pass_are_listed():
    assert predict(finding(), TARGETS["trt86-x86"], NO_RESULTS).workarounds == []
    passed = observed(observation("s1-conv-silu", "sigmoid-output-marked", "trt86-x86", "pass"))
    verdict = predict(finding(), TARGETS["trt86-x86"], passed)
    assert verdict.verdict == "unverified"
    assert [(w.variant.name, w.verdict) for w in verdict.workarounds] == [("sigmoid-output-marked", "likely")]


def test_beside_a_predicted_likely_only_workarounds_observed_to_work_are_listed():
    """An observation outranks a prediction, as in the planning view's cell (works with workaround)."""
    from harness.scan.prediction import PredictedNodes

    predicted = PredictedNodes({"/layer0/Conv": {"precision": j.INT8, "rule": "weighted-int8-output", "layer": "c"}},
                               frozenset({"/layer0/Conv"}), "trt-8.6")
    alone = predict(finding(), TARGETS["trt86-x86"], NO_RESULTS, predicted=predicted)
    assert (alone.verdict, alone.basis, alone.workarounds) == ("likely", j.PREDICTED, [])
    passed = observed(observation("s1-conv-silu", "sigmoid-output-marked", "trt86-x86", "pass"))
    beside = predict(finding(), TARGETS["trt86-x86"], passed, predicted=predicted)
    assert beside.basis == j.PREDICTED and [w.variant.name for w in beside.workarounds] == ["sigmoid-output-marked"]


def test_evidence_never_crosses_to_a_form_that_does_not_inherit_it():
    """Whatever the library links: a form found as a variant that does not inherit gets no evidence of the reported
    form on any target, and no workaround of another form (e.g. a weight Gemm never gets the act x act MatMul's
    claim, nor its Q/DQ-on-both-inputs workaround)."""
    import cases

    for case in cases.all_cases():
        for variant in case.variants:
            if variant.inherits:
                continue
            found = Finding(case, variant, [Occurrence(("/n",), "")])
            for target in TARGETS.values():
                verdict = predict(found, target, NO_RESULTS)
                assert all(e.scope == "variant" for e in verdict.evidence), (case.id, variant.name, target.id)
                if variant.role == "sweep" and variant.varies is None:  # a form of its own
                    assert verdict.workarounds == [], (case.id, variant.name, target.id)
                assert all(check.variant.varies in (None, variant.name, variant.varies)
                           for check in verdict.workarounds), (case.id, variant.name, target.id)


def test_a_claim_naming_a_gpu_predicts_on_the_jetson_of_that_gpu_and_not_on_an_x86_target_of_any_gpu():
    """P14's Orin claim (SM 8.7) speaks for the 10.16 Orin target; P19's RTX PRO 6000 claim (SM 12.0) does not speak
    for every GPU of the 10.16 x86 target, so the scan does not call a user's model blocked there from it."""
    from cases.p14_dequantize_after_data_movement import DequantizeAfterDataMovement
    from cases.p19_best_precision_accuracy import BestPrecisionAccuracy

    orin = predict(Finding(DequantizeAfterDataMovement, DequantizeAfterDataMovement.variant("as-reported"),
                           [Occurrence(("/head/conv/Conv",), "")]), TARGETS["trt1016-orin"], NO_RESULTS)
    assert (orin.verdict, orin.basis) == ("blocked", "claimed")
    x86 = predict(Finding(BestPrecisionAccuracy, BestPrecisionAccuracy.variant("as-reported"),
                          [Occurrence(("/conv1/Conv",), "")]), TARGETS["trt1016-x86"], NO_RESULTS)
    assert (x86.verdict, x86.basis) == ("unverified", None)
