"""The engine: the evidence for one form on one target in, a verdict with its basis and the evidence that decided it
out; the planning view's cell is its projection; the gates, the orders and night-to-night changes. Each test names
the bug it is there to catch (the mutation run of harness/judgement/engine.py, tox -e mutation-judgement, checks they
do)."""
from __future__ import annotations

import itertools
import json

import pytest

from harness import judgement as j
from tests.conftest import evidence_piece
from harness.judgement import (
    BLOCKED, CANNOT_EXIST_HERE, CLAIMED, CLEAR, CRASH, FAIL, FAILS_AS_REPORTED, FALLBACK, INFRA_ERROR, LIKELY,
    MISMATCH, NOT_RUN, OBSERVED, PASS, PRECISION_FALLBACK, PRECISION_UNVERIFIED, REPORTED_FORM, TIMEOUT, UNAVAILABLE,
    UNVERIFIED, VARIANT, VERIFIED, WORKAROUND, WORKS_AS_REPORTED, YOUR_LAYER, NOT_APPLICABLE, FACT, RANGE_CLAIMED,
    PREDICTED,
)


def seen(outcome, scope=VARIANT):
    return evidence_piece(OBSERVED, scope, outcome)


def claim(outcome, scope=VARIANT):
    return evidence_piece(CLAIMED, scope, outcome)


def decided(evidence, uncovered=()):
    judged = j.judge(evidence, uncovered)
    return judged.verdict, judged.basis


def test_an_infra_error_record_is_no_evidence():
    judged = j.judge([seen(INFRA_ERROR)])
    assert (judged.verdict, judged.basis, judged.deciding, judged.scope) == (UNVERIFIED, None, None, None)
    assert judged.silent == (seen(INFRA_ERROR),) and not judged.unverified_ran
    assert j.planning_verdict(judged) == NOT_RUN
    assert decided([seen(INFRA_ERROR), claim(FAIL)]) == (BLOCKED, CLAIMED)  # the claim decides, not the broken cell
    assert decided([seen(INFRA_ERROR), seen(PASS)]) == (LIKELY, OBSERVED)
    assert j.judge([seen(INFRA_ERROR), seen(PASS)]).silent == (seen(INFRA_ERROR),)


def test_an_unverified_record_answers_nothing_but_says_the_precision_was_not_shown():
    judged = j.judge([seen(UNVERIFIED), seen(INFRA_ERROR)])
    assert (judged.verdict, judged.basis) == (UNVERIFIED, None) and judged.unverified_ran
    assert j.planning_verdict(judged) == PRECISION_UNVERIFIED
    assert decided([seen(UNVERIFIED), seen(FALLBACK)]) == (FALLBACK, OBSERVED)
    assert not j.judge([seen(UNVERIFIED), seen(PASS)]).unverified_ran  # something decided


def test_the_scan_s_verdicts_are_worst_first_and_the_worst_of_a_tier_decides():
    assert j.SCAN_VERDICTS == (BLOCKED, FALLBACK, UNAVAILABLE, UNVERIFIED, LIKELY, VERIFIED, CLEAR)
    assert sorted(reversed(j.SCAN_VERDICTS), key=j.worst_first) == list(j.SCAN_VERDICTS)
    for evidence in itertools.permutations([seen(PASS), seen(FALLBACK), seen(MISMATCH), seen(UNAVAILABLE)]):
        judged = j.judge(evidence)
        assert (judged.verdict, judged.deciding) == (BLOCKED, seen(MISMATCH))
    for evidence in itertools.permutations([seen(PASS), seen(FALLBACK), seen(UNAVAILABLE)]):
        assert decided(evidence) == (FALLBACK, OBSERVED)
    assert decided([seen(PASS), seen(UNAVAILABLE)]) == (UNAVAILABLE, OBSERVED)
    assert decided([seen(TIMEOUT)]) == decided([seen(CRASH)]) == (BLOCKED, OBSERVED)  # a timeout is a failure


def test_what_each_piece_of_evidence_answers_and_gives():
    assert [j.verdict_of(seen(o)) for o in (PASS, FALLBACK, MISMATCH, FAIL, UNAVAILABLE)] == [
        LIKELY, FALLBACK, BLOCKED, BLOCKED, UNAVAILABLE]
    assert j.verdict_of(seen(PASS, YOUR_LAYER)) == VERIFIED and j.verdict_of(seen(PASS, REPORTED_FORM)) == LIKELY
    assert j.verdict_of(seen(FAIL, YOUR_LAYER)) == BLOCKED
    assert [j.verdict_of(claim(o)) for o in j.CLAIM_OUTCOMES] == [LIKELY, BLOCKED, FALLBACK, BLOCKED, BLOCKED]
    assert j.answer_of(seen(INFRA_ERROR)) is None and j.answer_of(claim(FALLBACK)) == j.FALLS_BACK


def test_a_claim_is_never_shown_as_observed():
    assert decided([claim(PASS)]) == (LIKELY, CLAIMED)
    for outcome in j.CLAIM_OUTCOMES:
        assert j.planning_verdict(j.judge([claim(outcome)])) == CLAIMED, outcome
    # what was observed decides over what was claimed of the same form, whatever the claim says
    assert decided([claim(FAIL), seen(PASS)]) == (LIKELY, OBSERVED)
    assert decided([claim(PASS), seen(FAIL)]) == (BLOCKED, OBSERVED)
    # a workaround claimed to pass is not a workaround that works here
    assert j.planning_verdict(j.judge([seen(FAIL)]), [j.judge([claim(PASS)])]) == FAILS_AS_REPORTED
    assert j.planning_verdict(j.judge([claim(FAIL)]), [j.judge([claim(PASS)])]) == CLAIMED
    # a claim can never verify the user's own layer: a basis may give only its own verdicts
    with pytest.raises(ValueError) as err:
        j.verdict_of(claim(PASS, YOUR_LAYER))
    assert str(err.value) == ("evidence claimed 'pass' on your-layer would give 'verified', which that basis may not "
                              "give: ('blocked', 'fallback', 'likely')")
    assert not j.BASIS[OBSERVED].hatched and j.HATCHED == tuple(b.name for b in j.BASES if b.name != OBSERVED)


def test_the_closest_scope_decides_and_a_layer_checked_in_part_only_when_it_fails():
    scoped = [t for t in j.TIERS if t[1] in (OBSERVED, CLAIMED)]
    assert scoped == [(YOUR_LAYER, OBSERVED), (YOUR_LAYER, CLAIMED), (VARIANT, OBSERVED),
                      (VARIANT, CLAIMED), (REPORTED_FORM, OBSERVED), (REPORTED_FORM, CLAIMED)]
    judged = j.judge([seen(FAIL), seen(PASS, YOUR_LAYER)])
    assert (judged.verdict, judged.basis, judged.scope) == (VERIFIED, OBSERVED, YOUR_LAYER)
    assert decided([seen(FAIL, REPORTED_FORM), claim(PASS)]) == (LIKELY, CLAIMED)  # the variant's claim first
    assert j.judge([seen(FAIL, REPORTED_FORM)]).scope == REPORTED_FORM
    partly = (YOUR_LAYER,)
    assert j.judge([seen(PASS, YOUR_LAYER), seen(FAIL)], partly).scope == VARIANT
    assert j.judge([seen(PASS, YOUR_LAYER)], partly).basis is None
    assert j.judge([seen(FALLBACK, YOUR_LAYER), seen(PASS)], partly).scope == YOUR_LAYER
    assert j.judge([seen(FAIL, YOUR_LAYER), seen(PASS)], partly).scope == YOUR_LAYER
    assert j.judge([seen(UNAVAILABLE, YOUR_LAYER), seen(PASS)], partly).scope == VARIANT


@pytest.mark.parametrize("form, workarounds, cell", [
    ([seen(PASS)], [[seen(FAIL)]], WORKS_AS_REPORTED),
    ([seen(PASS), seen(INFRA_ERROR)], [], WORKS_AS_REPORTED),
    ([seen(FAIL)], [[seen(FAIL)], [seen(PASS)]], WORKAROUND),
    ([seen(FALLBACK)], [[seen(PASS)]], WORKAROUND),
    ([], [[seen(PASS)]], WORKAROUND),  # the failing form not run
    ([claim(FAIL)], [[seen(PASS)]], WORKAROUND),
    ([seen(UNAVAILABLE)], [[seen(PASS)]], WORKAROUND),
    ([seen(FALLBACK)], [[seen(FAIL)]], PRECISION_FALLBACK),
    ([seen(FAIL)], [[seen(FALLBACK)]], PRECISION_FALLBACK),  # with the workaround that falls back
    ([seen(FAIL)], [[seen(FAIL)], [claim(PASS)]], FAILS_AS_REPORTED),
    ([seen(TIMEOUT)], [], FAILS_AS_REPORTED),
    ([seen(UNAVAILABLE)], [[seen(FALLBACK)]], CANNOT_EXIST_HERE),
    ([claim(FAIL)], [[seen(FALLBACK)]], CLAIMED),
    ([claim(PASS)], [], CLAIMED),
    ([seen(UNVERIFIED)], [[claim(PASS)]], PRECISION_UNVERIFIED),
    ([seen(INFRA_ERROR)], [[seen(INFRA_ERROR)]], NOT_RUN),
    ([], [], NOT_RUN),
])
def test_the_planning_cell_is_the_projection_of_the_engine_s_judgements(form, workarounds, cell):
    assert j.planning_verdict(j.judge(form), [j.judge(w) for w in workarounds]) == cell
    assert j.planning_verdict(j.judge(form), [j.judge(w) for w in workarounds], available=False) == CANNOT_EXIST_HERE


def test_the_planning_verdicts_place_each_basis_after_what_observation_gives():
    assert j.PLANNING_VERDICTS == (WORKS_AS_REPORTED, WORKAROUND, PRECISION_FALLBACK, FAILS_AS_REPORTED,
                                   NOT_APPLICABLE, FACT, CLAIMED, RANGE_CLAIMED, PREDICTED,
                                   PRECISION_UNVERIFIED, NOT_RUN, CANNOT_EXIST_HERE)
    assert all(set(b.verdicts) <= set(j.SCAN_VERDICTS) for b in j.BASES)
    # the one documented precedence: the parser's facts, not applicable, a fact, observed, claimed for the target,
    # claimed over a range, predicted
    assert [b.name for b in j.BASES] == [j.PARSER, NOT_APPLICABLE, FACT, OBSERVED, CLAIMED, RANGE_CLAIMED, PREDICTED]


def test_a_parser_refusal_decides_before_every_other_basis_and_a_silent_document_decides_nothing():
    refused, silent = piece(j.PARSER, FAIL), piece(j.PARSER, j.UNVERIFIED)
    everything_else = [piece(NOT_APPLICABLE, NOT_APPLICABLE), seen(PASS), claim(PASS), piece(PREDICTED, PASS)]
    assert decided([*everything_else, refused]) == (j.BLOCKED, j.PARSER)
    assert decided([silent, piece(PREDICTED, PASS)]) == (j.LIKELY, PREDICTED)  # the model's verdict caps it
    assert j.judge([silent]).basis is None


def piece(kind, outcome, scope=VARIANT):
    return evidence_piece(kind, scope, outcome)


def test_the_precedence_of_the_bases_decides_as_documented():
    na, fact = piece(NOT_APPLICABLE, NOT_APPLICABLE), piece(FACT, FAIL)
    ranged, predicted = piece(RANGE_CLAIMED, FALLBACK), piece(PREDICTED, PASS)
    every = [na, fact, seen(PASS), claim(PASS), ranged, predicted]
    assert decided(every) == (CLEAR, NOT_APPLICABLE)  # not applicable first: listed, never a failure
    assert decided(every[1:]) == (BLOCKED, FACT)  # a fact stops the form before any observation
    assert decided(every[2:]) == (LIKELY, OBSERVED)
    assert decided(every[3:]) == (LIKELY, CLAIMED)  # a claim for the target over a range claim
    assert decided(every[4:]) == (FALLBACK, RANGE_CLAIMED)  # a range claim over a prediction
    assert decided(every[5:]) == (LIKELY, PREDICTED)
    assert decided([seen(FAIL, REPORTED_FORM), predicted]) == (BLOCKED, OBSERVED)  # observed anywhere first
    assert decided([piece(FACT, UNAVAILABLE)]) == (UNAVAILABLE, FACT)
    with pytest.raises(KeyError):  # a prediction never blocks: it has no word for a failure
        j.verdict_of(piece(PREDICTED, FAIL))
    assert not j.BASIS[NOT_APPLICABLE].headline and all(j.BASIS[b].headline for b in j.HEADLINE)
    assert all(j.BASIS[b].hatched for b in (NOT_APPLICABLE, FACT, RANGE_CLAIMED, PREDICTED))


@pytest.mark.parametrize("form, cell", [
    ([piece(FACT, FAIL)], FACT), ([piece(RANGE_CLAIMED, PASS)], RANGE_CLAIMED),
    ([piece(PREDICTED, FALLBACK)], PREDICTED), ([piece(NOT_APPLICABLE, NOT_APPLICABLE)], NOT_APPLICABLE)])
def test_a_cell_on_another_basis_is_that_basis_never_an_observed_verdict(form, cell):
    assert j.planning_verdict(j.judge(form)) == cell
    assert cell not in j.OBSERVED_PLANNING_VERDICTS


@pytest.mark.parametrize("level, stopped", [
    (BLOCKED, {BLOCKED}), (FALLBACK, {BLOCKED, FALLBACK}), (UNVERIFIED, {BLOCKED, FALLBACK, UNVERIFIED})])
def test_the_scan_gate_stops_every_verdict_as_bad_as_its_level_and_no_other(level, stopped):
    assert {v for v in j.SCAN_VERDICTS if j.fails_scan_gate(v, level)} == stopped
    assert j.SCAN_FAIL_ON_LEVELS == (BLOCKED, FALLBACK, UNVERIFIED) and j.SCAN_FAIL_ON_DEFAULT == BLOCKED


@pytest.mark.parametrize("level, stopped", [
    (FALLBACK, {FALLBACK, MISMATCH, FAIL, CRASH, TIMEOUT}), (MISMATCH, {MISMATCH, FAIL, CRASH, TIMEOUT}),
    (FAIL, {FAIL, CRASH, TIMEOUT})])
def test_the_run_gate_stops_evidence_as_severe_as_its_level_and_never_what_is_no_evidence(level, stopped):
    assert {o for o in j.OUTCOMES if j.fails_gate(o, level)} == stopped
    assert j.RUN_FAIL_ON_LEVELS == (FALLBACK, MISMATCH, FAIL)


def test_a_regression_is_a_band_down_on_one_gpu_and_never_across_two():
    assert [j.change(PASS, o) for o in (FALLBACK, MISMATCH, FAIL, CRASH)] == [j.REGRESSION] * 4
    assert j.change(FALLBACK, FAIL) == j.REGRESSION and j.change(FAIL, FALLBACK) == j.PROGRESSION
    assert j.change(CRASH, PASS) == j.PROGRESSION
    assert j.change(FAIL, CRASH) == j.change(PASS, PASS) == j.SAME_BAND
    assert j.change(PASS, FAIL, "sm_87", "sm_110") == j.change(FAIL, PASS, "sm_87", "sm_110") == j.NOT_COMPARED
    assert j.change(PASS, FAIL, "sm_87", "sm_87") == j.REGRESSION
    assert j.change(PASS, FAIL, None, "sm_87") == j.change(PASS, FAIL, "sm_87", None) == j.REGRESSION  # one unknown
    for other in (TIMEOUT, INFRA_ERROR, UNVERIFIED, UNAVAILABLE):
        assert j.change(PASS, other) == j.change(other, FAIL) == j.NOT_COMPARED, other


def test_workarounds_and_fixes_rank_what_is_known_to_work_first():
    ranked = sorted([BLOCKED, UNVERIFIED, FALLBACK, LIKELY, VERIFIED], key=j.workaround_rank)
    assert ranked[:2] == [LIKELY, VERIFIED] and ranked[2] == UNVERIFIED
    assert j.workaround_rank(BLOCKED) == j.workaround_rank(FALLBACK) > j.workaround_rank(UNVERIFIED)
    other = "the library's workaround form"
    candidates = [(UNVERIFIED, other), (LIKELY, CLAIMED), (LIKELY, other), (LIKELY, OBSERVED), (VERIFIED, OBSERVED)]
    assert sorted(candidates, key=lambda c: j.fix_rank(*c)) == [
        (VERIFIED, OBSERVED), (LIKELY, OBSERVED), (LIKELY, CLAIMED), (LIKELY, other), (UNVERIFIED, other)]
    assert j.fix_rank(LIKELY, None) == j.fix_rank(LIKELY, other)


def test_good_verdicts_are_one_group_and_every_other_its_own():
    assert j.verdict_group(LIKELY) == j.verdict_group(VERIFIED) == j.SCAN_GOOD
    assert [j.verdict_group(v) for v in (BLOCKED, FALLBACK, UNVERIFIED, UNAVAILABLE)] == [
        (BLOCKED,), (FALLBACK,), (UNVERIFIED,), (UNAVAILABLE,)]


def test_the_words_scan_json_and_diff_write_stay_the_same():
    """scan.json's scopes and bases, and diff's and history's change kinds, are formats users read back."""
    assert j.SCOPES == ("your-layer", "variant", "reported-form") and (j.OBSERVED, j.CLAIMED) == ("observed", "claimed")
    assert (j.REGRESSION, j.PROGRESSION, j.NOT_COMPARED) == ("regression", "progression", "not-compared")
    assert j.SCOPE_LABELS == {YOUR_LAYER: "your layer", VARIANT: "the library variant",
                              REPORTED_FORM: "the reported form"}


def test_evidence_and_judgements_are_values():
    """Equal when they say the same, usable as keys (a page groups cells by them), never changed in place."""
    assert {seen(PASS), seen(PASS)} == {seen(PASS)} and len({j.judge([seen(FAIL)]), j.judge([seen(FAIL)])}) == 1
    with pytest.raises(AttributeError):
        j.judge([seen(FAIL)]).verdict = LIKELY


def test_a_newer_record_of_a_cell_and_host_wins_over_an_older_one(tmp_path):
    """What the engine is handed: the latest record per cell and host (a host's fail fixed later is a pass)."""
    import cases
    from harness.matrix import load_matrix
    from harness.scan.matching import Finding
    from harness.evidence.observations import read_observations
    from harness.scan.prediction import predict
    from tests.reports.conftest import make_record

    case = cases.get_case("p3-residual-add-qdq")
    variant = next(v for v in case.variants if v.role == j.FAILING_ROLE)
    older = make_record(case.id, variant.name, "ort-cpu", FAIL, fail=("no-implementation", "refused", None))
    newer = make_record(case.id, variant.name, "ort-cpu", PASS, precision={})
    older["started_at"], newer["started_at"] = "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"
    for order in ([older, newer], [newer, older]):
        results = tmp_path / "results.jsonl"
        results.write_text("".join(json.dumps(r) + "\n" for r in order))
        observations = read_observations([results])
        verdict = predict(Finding(case, variant, []), load_matrix()["ort-cpu"], observations)
        assert (verdict.verdict, verdict.basis) == (LIKELY, OBSERVED), verdict.reason


def test_which_workarounds_the_scan_lists_beside_a_finding():
    """Every one beside a failing verdict; only those known to work where nothing is known; beside a good verdict on a
    claim or a prediction only those observed to work (they outrank it, as in the planning cell); none beside an
    observed good verdict."""
    from harness.judgement.engine import Judgement

    works_observed, works_claimed = Judgement(j.LIKELY, j.OBSERVED), Judgement(j.LIKELY, j.CLAIMED)
    fails = Judgement(j.BLOCKED, j.OBSERVED)
    listed = lambda form: [w for w in (works_observed, works_claimed, fails) if j.workaround_listed(form, w)]  # noqa
    assert listed(Judgement(j.FALLBACK, j.CLAIMED)) == [works_observed, works_claimed, fails]
    assert listed(Judgement(j.UNVERIFIED, None)) == [works_observed, works_claimed]
    assert listed(Judgement(j.LIKELY, j.PREDICTED)) == listed(Judgement(j.LIKELY, j.CLAIMED)) == [works_observed]
    assert listed(Judgement(j.LIKELY, j.OBSERVED)) == [] and not j.lists_workarounds(Judgement(j.LIKELY, j.OBSERVED))
    assert listed(Judgement(j.CLEAR, None)) == [] and listed(Judgement(j.UNAVAILABLE, None)) == []
