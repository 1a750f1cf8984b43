"""Reading upstream claims: one reader of index.json's claims (bad input names the file and the field), and the claim
a page shows for a target."""
from __future__ import annotations

import re

import pytest

from harness import judgement as j
from tests.conftest import evidence_piece
from harness.store.claims import ClaimsError, index_claims, target_claim
from harness.worker import record as rec
from harness.worker.errors import InputError


def test_a_claim_naming_a_gpu_shows_where_the_gpu_is_known_and_a_claim_naming_none_everywhere():
    """P14 on the 10.16 Orin target (SM 8.7 on every Orin) shows; P19's RTX PRO 6000 claim (SM 12.0) shows on an x86
    column whose records ran on sm_120, not on the x86 target as a whole nor on another GPU's column."""
    def claim(target, outcome, architecture=None):
        return {"target": target, "outcome": outcome, "source": "https://x", "strength": "issue-thread",
                "architecture": architecture}

    orin, blackwell, any_gpu = claim("trt1016-orin", "fail", "8.7"), claim("trt1016-x86", "mismatch", "12.0"), claim(
        "trt11-x86", "unsupported")
    claims = (orin, blackwell, any_gpu)
    assert target_claim(claims, "trt1016-orin", "orin") is orin
    assert target_claim(claims, "trt1016-x86", "x86_64") is None
    assert target_claim(claims, "trt1016-x86", "x86_64", "sm_120") is blackwell
    assert target_claim(claims, "trt1016-x86", "x86_64", "sm_89") is None
    assert target_claim(claims, "trt11-x86", "x86_64") is target_claim(claims, "trt11-x86", None, "sm_86") is any_gpu
    assert target_claim([claim("trt1016-thor", "pass", "8.7")], "trt1016-thor", "thor") is None  # Thor is 11.0


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
    with pytest.raises(ClaimsError, match=re.escape("idx.json: cases[0] (c).variants[0]") + ".*" + message) as err:
        index_claims(index, "idx.json")
    assert isinstance(err.value, InputError)  # the user's bad index.json: a usage error, not a harness bug


def test_a_claimed_mismatch_reads_as_a_failure_and_agrees_only_with_an_observed_mismatch():
    claim = {"target": "t", "outcome": "mismatch", "source": "https://x", "strength": "issue-thread"}
    index = {"cases": [{"id": "c", "variants": [{"name": "v", "claims": [claim]}]}]}
    (read,) = index_claims(index, "idx.json")[("c", "v")]
    assert j.claim_answer(read["outcome"]) == j.FAILS and j.verdict_of(evidence_piece(j.CLAIMED, j.VARIANT, "mismatch")) == j.BLOCKED
    assert rec.agreement(read, "mismatch", None) is True
    assert rec.agreement(read, "pass", None) is False


def test_the_scan_and_the_report_read_the_same_claims():
    """The scan reads each case's claims through the index form the report reads (built by generate's own
    function), so both hold every claim the library declares, with the same fields."""
    import cases
    from cases.generate import declared_index
    from harness.scan.prediction import library_form
    from reports.case_index import rows_from_index

    rows = rows_from_index(declared_index(), "the case library")
    for row in rows:
        case = cases.get_case(row.case)
        declared = case.variant(row.variant).claims
        assert library_form(case, row.variant).claims == row.claims
        assert [(c["target"], c["outcome"], c["strength"], c["source"]) for c in row.claims] == [
            (c.target, c.outcome, c.strength, c.source) for c in declared]
