"""One judgement: every outcome has one meaning, read from harness/store/judgement.py by every page and command; the
README's verdict tables say what it says; claims are read one way; and no other module defines a meaning again."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cases.model import CLAIM_OUTCOMES, CLAIM_STRENGTHS
from harness import judgement as j
from harness.worker import record as rec
from harness.worker.errors import InputError
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


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
    assert j.scan_verdict(timeout.answer) == "blocked"
    assert j.PLANNING_VERDICT_OF_ANSWER[timeout.answer] == "fails"
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
    assert j.SCAN_VERDICTS_OF_PLANNING[j.PRECISION_UNVERIFIED] == (j.UNVERIFIED,)


def test_claims_and_strengths_are_the_library_s_words():
    assert set(j.CLAIM_ANSWERS) == set(CLAIM_OUTCOMES)
    assert set(j.STRENGTH_LABELS) == set(CLAIM_STRENGTHS)


def test_a_claim_naming_a_gpu_shows_where_the_gpu_is_known_and_a_claim_naming_none_everywhere():
    """P14 on the 10.16 Orin target (SM 8.7 on every Orin) shows; P19's RTX PRO 6000 claim (SM 12.0) shows on an x86
    column whose records ran on sm_120, not on the x86 target as a whole nor on another GPU's column."""
    def claim(target, outcome, architecture=None):
        return {"target": target, "outcome": outcome, "source": "https://x", "strength": "issue-thread",
                "architecture": architecture}

    orin, blackwell, any_gpu = claim("trt1016-orin", "fail", "8.7"), claim("trt1016-x86", "mismatch", "12.0"), claim(
        "trt11-x86", "unsupported")
    claims = (orin, blackwell, any_gpu)
    assert j.target_claim(claims, "trt1016-orin", "orin") is orin
    assert j.target_claim(claims, "trt1016-x86", "x86_64") is None
    assert j.target_claim(claims, "trt1016-x86", "x86_64", "sm_120") is blackwell
    assert j.target_claim(claims, "trt1016-x86", "x86_64", "sm_89") is None
    assert j.target_claim(claims, "trt11-x86", "x86_64") is j.target_claim(claims, "trt11-x86", None, "sm_86") is any_gpu
    assert j.target_claim([claim("trt1016-thor", "pass", "8.7")], "trt1016-thor", "thor") is None  # Thor is 11.0


@pytest.mark.parametrize("claims, message", [
    ("a claim", "field 'claims' must be a list"),
    ([{"target": "t", "outcome": "fail", "source": "https://x"}], "needs the strings 'target', 'outcome'"),
    ([{"target": "t", "outcome": "broken", "source": "https://x", "strength": "issue-thread"}],
     "field 'outcome' is 'broken', not one of"),
    ([{"target": "t", "outcome": "fail", "source": "https://x", "strength": "rumour"}],
     "field 'strength' is 'rumour', not one of"),
])
def test_a_claim_that_cannot_be_read_names_the_file_and_the_field(claims, message):
    index = {"cases": [{"id": "c", "variants": [{"name": "v", "claims": claims}]}]}
    with pytest.raises(j.ClaimsError, match=re.escape("idx.json: cases[0] (c).variants[0]") + ".*" + message) as err:
        j.index_claims(index, "idx.json")
    assert isinstance(err.value, InputError)  # the user's bad index.json: a usage error, not a harness bug


def test_a_claimed_mismatch_reads_as_a_failure_and_agrees_only_with_an_observed_mismatch():
    claim = {"target": "t", "outcome": "mismatch", "source": "https://x", "strength": "issue-thread"}
    index = {"cases": [{"id": "c", "variants": [{"name": "v", "claims": [claim]}]}]}
    (read,) = j.index_claims(index, "idx.json")[("c", "v")]
    assert j.claim_answer(read["outcome"]) == j.FAILS and j.scan_verdict(j.claim_answer("mismatch")) == j.BLOCKED
    assert rec.agreement(read, "mismatch", None) is True
    assert rec.agreement(read, "pass", None) is False


def test_the_scan_and_the_report_read_the_same_claims():
    """The scan reads each case's claims through the index form the report reads (built by generate's own
    function), so both hold every claim the library declares, with the same fields."""
    import cases
    from cases.generate import declared_index
    from harness.scan.prediction import library_claims
    from reports.case_index import rows_from_index

    rows = rows_from_index(declared_index(), "the case library")
    for row in rows:
        case = cases.get_case(row.case)
        declared = case.variant(row.variant).claims
        assert library_claims(case)[row.variant] == row.claims
        assert [(c["target"], c["outcome"], c["strength"], c["source"]) for c in row.claims] == [
            (c.target, c.outcome, c.strength, c.source) for c in declared]


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


def test_the_readme_s_mapping_between_the_two_is_judgement_s():
    rows = readme_table("The scan (`harness scan`) answers the same evidence in its own words")
    assert [(label, tuple(re.findall(r"`([a-z-]+)`", scan))) for label, scan in rows] == [
        (f"{j.PLANNING_SYMBOLS[k]} {j.PLANNING_LABELS[k]}", j.SCAN_VERDICTS_OF_PLANNING[k])
        for k in j.PLANNING_VERDICTS]


# Outcome names that are no verdict word of either view, and claim strengths: a literal holding one, or a comparison
# with one, outside judgement.py and record.py defines what that outcome (or strength) means again.
OUTCOME_WORDS = (set(rec.OUTCOMES) - set(j.SCAN_VERDICTS) - set(j.PLANNING_VERDICTS)) | set(CLAIM_STRENGTHS)
VOCABULARY = {"harness/store/judgement.py", "harness/worker/record.py"}
NOT_OUTCOMES = {  # files whose words are not outcomes, and why
    "harness/worker/backends/tensorrt/classify.py": "failure categories of TensorRT's log ('crash' is also one)",
}


def meanings_defined(source: str) -> list[tuple[int, str]]:
    """(line, what) of each literal listing or keyed by an outcome name, and each comparison with one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in OUTCOME_WORDS]
        elif isinstance(node, ast.Dict):
            words = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in OUTCOME_WORDS]
        elif isinstance(node, ast.Compare):
            words = [c.value for c in (node.left, *node.comparators)
                     if isinstance(c, ast.Constant) and c.value in OUTCOME_WORDS]
        else:
            continue
        if words:
            found.append((node.lineno, f"{type(node).__name__.lower()} of {words}"))
    return found


def test_the_scanner_sees_a_table_a_group_and_a_comparison():
    source = ('SEVERITY = {"pass": 0, "fail": 3}\nNOT_EVIDENCE = ("infra-error",)\n'
              'def f(r):\n    return r["outcome"] == "timeout"\nVERDICTS = ("blocked", "fallback", "unavailable")\n'
              'WORDS = {"issue-thread": "issue thread"}\n')
    assert sorted(line for line, _ in meanings_defined(source)) == [1, 2, 4, 6]


def test_no_other_module_defines_what_an_outcome_means():
    offending = []
    for root in ("harness", "reports"):
        for path in sorted((REPO / root).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            if name in VOCABULARY or name in NOT_OUTCOMES:
                continue
            offending += [f"{name}:{line}: {what}" for line, what in meanings_defined(path.read_text("utf-8"))]
    assert not offending, ("what an outcome means belongs in harness/store/judgement.py (import it from there):\n"
                           + "\n".join(offending))


def test_the_exempt_files_exist_and_still_need_it():
    for name in NOT_OUTCOMES:
        assert meanings_defined((REPO / name).read_text("utf-8")), f"{name} no longer needs its exemption"
