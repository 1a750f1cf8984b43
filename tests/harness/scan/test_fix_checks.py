"""The rescan check of a fixed model, each of its answers: a place in its workaround form passes, a place still in a
failing form, a finding the original lacked and a form changed for the worse each stop the fix, naming the place."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import cases
from cases.model import FixResult
from harness.scan.fix_checks import _rescan
from harness.scan.fix_places import FixFailed, PlaceFix
from harness.scan.matching import Finding, Occurrence

S1, P3 = cases.get_case("s1-conv-silu"), cases.get_case("p3-residual-add-qdq")
STEM, ADD = "/model.0/conv/Conv", "/layer1/layer1.0/Add"


def finding(case, variant: str, *anchors: str) -> Finding:
    return Finding(case, case.variant(variant), [Occurrence((anchor,), "") for anchor in anchors])


def scanned(*found: tuple[Finding, str]) -> SimpleNamespace:
    """A scan's findings and, per finding, its verdict on the one target ``t``."""
    return SimpleNamespace(findings=[f for f, _ in found],
                           verdicts=[{"t": SimpleNamespace(verdict=verdict)} for _, verdict in found])


def stem_fixed_with(workaround: str, original: Finding) -> PlaceFix:
    return PlaceFix(original, original.occurrences[0], S1.variant(workaround),
                    FixResult(outputs_added=[f"{STEM}_output_0"]))


def test_the_fixed_place_found_in_its_workaround_form_passes():
    before = finding(S1, "as-reported", STEM)
    check = _rescan(scanned((before, "fallback")), scanned((finding(S1, "conv-output-marked", STEM), "likely")),
                    [stem_fixed_with("conv-output-marked", before)])
    assert check["places"] == [{"place": STEM, "case": S1.id, "form": "conv-output-marked",
                                "state": "found in the workaround form conv-output-marked"}]
    assert check["passed"] and check["changed_forms"] == []


def test_a_place_still_in_its_failing_form_stops_the_fix():
    before = finding(S1, "as-reported", STEM)
    with pytest.raises(FixFailed) as failed:
        _rescan(scanned((before, "fallback")), scanned((before, "fallback")),
                [stem_fixed_with("conv-output-marked", before)])
    assert (failed.value.place, failed.value.check) == (STEM, "rescan")
    assert "still found here as s1-conv-silu/as-reported, not in the workaround form conv-output-marked" in \
        failed.value.message


def test_a_finding_the_original_lacked_stops_the_fix_and_names_its_place():
    before = finding(S1, "as-reported", STEM)
    fixed = scanned((finding(S1, "conv-output-marked", STEM), "likely"),
                    (finding(P3, "identity-float", ADD), "fallback"))
    with pytest.raises(FixFailed) as failed:
        _rescan(scanned((before, "fallback")), fixed, [stem_fixed_with("conv-output-marked", before)])
    assert (failed.value.place, failed.value.check) == (ADD, "rescan")
    assert failed.value.message == f"the fixed model has a finding the original lacked: p3-residual-add-qdq/" \
                                   f"identity-float at {ADD}"


def test_another_place_changing_form_passes_when_no_worse_and_stops_the_fix_when_worse():
    stem, add = finding(S1, "as-reported", STEM), finding(P3, "identity-qdq", ADD)
    place = stem_fixed_with("conv-output-marked", stem)
    fixed_stem = (finding(S1, "conv-output-marked", STEM), "likely")
    same = _rescan(scanned((stem, "fallback"), (add, "fallback")),
                   scanned(fixed_stem, (finding(P3, "qdq-after-add", ADD), "fallback")), [place])
    assert same["changed_forms"] == [{"place": ADD, "case": P3.id, "from": "p3-residual-add-qdq/identity-qdq",
                                      "to": "p3-residual-add-qdq/qdq-after-add",
                                      "state": "another form of a case found here before, no worse on these targets"}]
    with pytest.raises(FixFailed) as failed:
        _rescan(scanned((stem, "fallback"), (add, "likely")),
                scanned(fixed_stem, (finding(P3, "identity-float", ADD), "blocked")), [place])
    assert failed.value.place == ADD and "which is worse on t blocked (was likely)" in failed.value.message


def test_a_finding_another_rewrite_took_out_of_every_known_form_is_listed_as_gone():
    stem, add = finding(S1, "as-reported", STEM), finding(P3, "identity-float", ADD)
    check = _rescan(scanned((stem, "fallback"), (add, "blocked")),
                    scanned((finding(S1, "conv-output-marked", STEM), "likely")),
                    [stem_fixed_with("conv-output-marked", stem)])
    assert [(g["place"], g["was"]) for g in check["gone"]] == [(ADD, "p3-residual-add-qdq/identity-float")]
    assert "the evidence about its old form no longer applies" in check["gone"][0]["state"]
