"""A claim covers what its source covers: the conditions on the one Claim type, how they stand on a target, and the
gate rule (a claim not known to hold on the target is shown and does not stop ``--fail-on blocked``)."""
from __future__ import annotations

import pytest

from harness import judgement as j
from harness.judgement import Claim, Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/1"


def states(conditions: Conditions, gpu=None, min_driver=None):
    return [state for state, _ in conditions.on(gpu, min_driver)]


def test_one_report_never_holds_on_another_model():
    on = Conditions(support=j.ONE_REPORT).on("8.6", 545)
    assert [state for state, _ in on] == [j.CONDITION_NOT_KNOWN]
    assert "one report, not reproduced" in on[0][1]
    assert not j.claim_gates(on) and j.covers_target(on)


@pytest.mark.parametrize("support", [j.REPRODUCED, j.MAINTAINER, j.DOCUMENTED])
def test_more_than_one_report_gates_where_nothing_else_is_a_condition(support):
    assert j.claim_gates(Conditions(support=support).on(None, None))


def test_the_reporters_gpu_holds_only_on_that_gpu():
    report = Conditions(support=j.REPRODUCED, gpu="7.5", gpu_name="Quadro T2000")
    assert states(report, "7.5") == [j.CONDITION_HOLDS]
    assert states(report, None) == [j.CONDITION_NOT_KNOWN]  # an x86 target: any GPU
    assert states(report, "8.7") == [j.CONDITION_NOT_KNOWN]  # a different GPU: shown, not gating
    assert "Quadro T2000 (compute capability 7.5)" in report.on(None)[0][1]


def test_an_environment_failure_does_not_cover_an_image_that_needs_a_newer_driver():
    allocator = Conditions(support=j.ONE_REPORT, driver="470.129.06", environment="the allocator")
    assert not j.covers_target(allocator.on(None, 545))
    assert "needs driver 545 or newer" in allocator.on(None, 545)[1][1]
    assert j.covers_target(allocator.on(None, None))  # a Jetson image: its driver is the L4T's, not known here
    assert j.covers_target(allocator.on(None, 450))


def test_another_failure_on_an_old_driver_is_only_not_known_on_a_newer_one():
    tactic = Conditions(support=j.REPRODUCED, driver="470")
    assert states(tactic, None, 545) == [j.CONDITION_NOT_KNOWN]


def test_a_form_condition_is_never_known_to_hold_on_a_users_model():
    assert states(Conditions(support=j.REPRODUCED, form="calibrator not stated"), "8.7") == [j.CONDITION_NOT_KNOWN]


def test_bad_conditions_are_refused_with_the_field():
    with pytest.raises(ValueError, match="support"):
        Conditions(support="two reports")
    with pytest.raises(ValueError, match="gpu"):
        Conditions(support=j.ONE_REPORT, gpu="sm_75")
    with pytest.raises(ValueError, match="environment cause names the driver"):
        Conditions(support=j.ONE_REPORT, environment="the allocator")
    with pytest.raises(ValueError, match="unknown field"):
        Conditions.from_dict({"support": j.ONE_REPORT, "channels": 32})


def test_conditions_travel_in_index_json_and_back():
    claim = Claim(target="trt86-x86", outcome="fail", source=ISSUE, strength="issue-thread",
                  conditions=Conditions(support=j.ONE_REPORT, gpu="7.5", driver="470"))
    written = claim.to_dict()
    assert written["conditions"]["gpu"] == "7.5"
    assert Conditions.from_dict(written["conditions"]) == claim.conditions
    assert "conditions" not in Claim(target="trt86-x86", outcome="fail", source=ISSUE,
                                     strength="issue-thread").to_dict()  # a claim without: index.json as before


class Decided:
    def __init__(self, gates):
        self.kind, self.scope, self.outcome, self.gates = j.CLAIMED, j.VARIANT, j.FAIL, gates


def test_the_gate_reads_a_failure_on_a_claim_not_known_to_hold_as_unverified():
    held, not_held = j.judge([Decided(True)]), j.judge([Decided(False)])
    assert held.verdict == not_held.verdict == j.BLOCKED  # shown the same ...
    assert j.fails_scan_gate(held.gate_verdict, j.BLOCKED)
    assert not j.fails_scan_gate(not_held.gate_verdict, j.BLOCKED)  # ... but it does not gate by default
    assert j.fails_scan_gate(not_held.gate_verdict, j.UNVERIFIED)  # only where the user asks for unverified too
    assert j.gate_verdict(j.LIKELY, False) == j.LIKELY  # a good verdict is not made worse
