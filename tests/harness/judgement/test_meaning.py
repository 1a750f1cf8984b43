"""One judgement: every outcome has one meaning, read from harness.judgement by every page and command; the README's
verdict tables say what it says; the presentation tables cover every word, in order."""
from __future__ import annotations

import re

import pytest

from cases.model import CLAIM_OUTCOMES, CLAIM_STRENGTHS
from harness import judgement as j
from harness.worker import record as rec
from tests.conftest import REPO, evidence_piece

from tests.docs import all_text  # noqa: E402

README = all_text()  # README and the docs pages


def test_every_outcome_has_one_meaning_and_the_columns_hold_together():
    assert sorted(j.MEANINGS) == sorted(rec.OUTCOMES)
    for outcome, m in j.MEANINGS.items():
        assert m.answer in (*j.ANSWERS, None), outcome
        # evidence about the pattern is exactly what says works, falls back or fails; only evidence has a severity
        assert m.evidence == (m.answer in (j.WORKS, j.FALLS_BACK, j.FAILS)) == (m.severity is not None), outcome
        assert not m.compared or m.evidence, f"{outcome}: compared across nights but no evidence"
        assert not (m.compared and m.retried), f"{outcome}: a settled comparison cannot be retried every night"
        assert not m.broken or m.answer is None, f"{outcome}: the harness broke, yet it answers for the pattern"
    assert set(j.RAN_OUTCOMES) == {"pass", "fallback", "mismatch", "unverified"}  # the outcomes record.ran() gives
    assert sorted(j.COMPARED_OUTCOMES + j.NOT_COMPARED_OUTCOMES) == sorted(rec.OUTCOMES)


def test_severity_orders_a_deployment_s_answers():
    severities = {o: j.severity(o) for o in j.EVIDENCE_OUTCOMES}
    assert severities["pass"] < severities["fallback"] < severities["mismatch"] <= severities["fail"]
    assert severities["timeout"] == severities["crash"] == severities["fail"]
    assert j.WORST_FIRST[-4:] == ("pass", "unverified", "unavailable", "infra-error")
    assert [j.band(o) for o in ("pass", "fallback", "fail")] == sorted([j.band(o) for o in ("pass", "fallback",
                                                                                             "fail")], reverse=True)
    with pytest.raises(ValueError, match="not compared across nights"):
        j.band("timeout")


def test_timeouts_are_decided_once_a_failure_never_a_regression():
    timeout = j.meaning("timeout")
    assert (timeout.answer, timeout.evidence, timeout.compared, timeout.retried) == (j.FAILS, True, False, True)
    assert j.judge([evidence_piece(j.OBSERVED, j.VARIANT, "timeout")]).verdict == "blocked"
    assert j.planning_verdict(j.judge([evidence_piece(j.OBSERVED, j.VARIANT, "timeout")])) == "fails"
    assert "timeout" in rec.OBSERVED_OUTCOMES  # the worker judges a timeout against the upstream claim


def test_an_unverified_cell_ran_but_answers_nothing_and_breaks_nothing():
    """A backend that did not show an expected node's precision: never a pass, never retried every night, never the
    "broken" exit status; the scan and the planning view both say unverified when nothing else is known."""
    unverified = j.meaning("unverified")
    assert (unverified.ran, unverified.answer, unverified.evidence) == (True, None, False)
    assert (unverified.compared, unverified.retried, unverified.broken) == (False, False, False)
    assert "unverified" not in j.BROKEN_OUTCOMES and "unverified" not in j.RETRIED_OUTCOMES
    assert j.RAN_WITHOUT_VERDICT == ("unverified",)
    assert j.ATTENTION["pass"] < j.ATTENTION["unverified"] < j.ATTENTION["fallback"]
    assert j.planning_verdict(j.judge([evidence_piece(j.OBSERVED, j.VARIANT, "unverified")])) == j.PRECISION_UNVERIFIED


def test_claims_and_strengths_are_the_library_s_words():
    assert set(j.CLAIM_ANSWERS) == set(CLAIM_OUTCOMES)
    assert set(j.STRENGTH_LABELS) == set(CLAIM_STRENGTHS)


def readme_table(after: str) -> list[tuple[str, str]]:
    """The (first cell, second cell) rows of the first table after the line ``after``."""
    section = README[README.index(after):]
    table = section[section.index("\n|"):].split("\n\n", 1)[0]
    header, *rows = re.findall(r"^\| (.+?) \| (.+) \|$", table, re.MULTILINE)
    return rows


def test_the_readme_s_scan_verdicts_are_judgement_s():
    rows = readme_table("4. **Report.**")
    assert [(v.strip("`"), m) for v, m in rows] == list(j.SCAN_VERDICT_MEANINGS.items())


def test_the_readme_s_planning_verdicts_are_judgement_s():
    rows = readme_table("**Planning view** (top).")
    assert len(rows) == len(j.PLANNING_VERDICTS)
    for (label, meaning), kind in zip(rows, j.PLANNING_VERDICTS):
        assert label.startswith(f"{j.PLANNING_SYMBOLS[kind]} {j.PLANNING_LABELS[kind]}"), label
        assert meaning == j.PLANNING_MEANINGS[kind]


def test_the_presentation_tables_cover_every_word_in_its_order():
    assert list(j.OUTCOME_COLOURS) == list(j.OUTCOMES) == list(rec.OUTCOMES)
    assert list(j.SCAN_VERDICT_COLOURS) == list(j.SCAN_VERDICT_SYMBOLS) == list(j.SCAN_VERDICTS)
    assert set(j.SCAN_VERDICT_COLOURS.values()) <= set(j.OUTCOMES)
    for table in (j.PLANNING_LABELS, j.PLANNING_SYMBOLS, j.PLANNING_MEANINGS, j.PLANNING_COLOURS):
        assert list(table) == list(j.PLANNING_VERDICTS)
    # the scan page painted unverified in infra-error's colour: it has its own
    assert j.SCAN_VERDICT_COLOURS[j.UNVERIFIED] == "unverified"
    assert j.WORDS["PASS"] == "pass" and j.WORDS["CLAIMED"] == j.CLAIMED  # report.js reads them by constant


def test_the_worker_s_words_are_the_judgement_s():
    """The record module builds every record with the package's words (it imports them inside containers)."""
    assert rec.OUTCOMES is j.OUTCOMES and rec.PRECISIONS is j.PRECISIONS
    assert rec.claim_for is j.claim_for and rec.agreement is j.agreement
    assert set(j.PRECISIONS) == {*j.PRECISION_ORDER, j.UNKNOWN_PRECISION}
    assert j.PRECISION_ORDER == ("fp4", "int8", "fp8", "fp16", "bf16", "fp32")


