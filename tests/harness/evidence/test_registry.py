"""The evidence layer: one producer per basis of the engine's table, evidence_for's order and scopes, and the one
reading of a library form that the scan and the planning view share."""
from __future__ import annotations

import pytest

from cases.generate import declared_index
from cases.model import all_cases
from harness import judgement as j
from harness.evidence import PRODUCERS, Form, Sources, evidence_for
from harness.evidence.observations import Observations
from harness.matrix import load_matrix
from harness.scan.prediction import library_form
from reports.case_index import rows_from_index
from reports.planning import form_of

TARGETS = list(load_matrix().values())


def test_every_basis_of_the_engine_has_one_producer_in_the_table_s_order():
    assert [p.basis for p in PRODUCERS] == [b.name for b in j.BASES]


def _record(case, variant, target, outcome):
    return {"case": case, "variant": variant, "target": target, "outcome": outcome, "started_at": "2026-01-01",
            "fallback_nodes": [], "backend": "tensorrt"}


def test_a_form_s_evidence_comes_in_the_engine_s_order_each_piece_of_its_producer_s_basis():
    form = library_form(next(c for c in all_cases() if c.id == "s4-bn-mish"), "native-mish")
    target = load_matrix().get("trt86-x86")
    records = [_record(form.case, form.variant, target.id, "fail")]
    found = evidence_for(form, target, Sources(Observations.of_records(records)))
    assert [e.kind for e in found] == [j.OBSERVED, j.CLAIMED, j.RANGE_CLAIMED]
    assert all(e.scope == j.VARIANT and (e.case, e.variant, e.target) == (form.case, form.variant, target.id)
               for e in found)


def test_a_stand_in_form_gives_only_what_is_known_of_that_form_never_what_is_known_of_the_target():
    stood_in = []
    for case in all_cases():
        unnamed = library_form(case, "")
        reported = [library_form(case, v.name) for v in case.variants if v.role == j.FAILING_ROLE]
        for target in TARGETS:
            found = evidence_for(unnamed, target, Sources(), stand_ins=reported)
            assert all(e.variant == "" for e in found if e.scope == j.VARIANT)
            stood_in += [e for e in found if e.scope == j.REPORTED_FORM]
    assert stood_in and all(not j.BASIS[e.kind].across_scopes and e.variant for e in stood_in)
    # a fact of the target is said of the form in question only
    assert any(e.kind == j.FACT for case in all_cases() for v in case.variants for t in TARGETS
               for e in evidence_for(library_form(case, v.name), t))


def test_the_scan_and_the_planning_view_read_the_same_evidence_of_every_library_form_on_every_target():
    """The scan makes a form from the case (its index.json form in memory), the planning view from index.json's
    rows: the same evidence, piece for piece, wherever they meet."""
    rows = rows_from_index(declared_index(), "the library's index")
    cases = {case.id: case for case in all_cases()}
    compared = 0
    for row in rows:
        scan_form = library_form(cases[row.case], row.variant)
        for target in TARGETS:
            assert evidence_for(scan_form, target) == evidence_for(form_of(row), target), (row.key, target.id)
            compared += 1
    assert compared > 1000


def test_a_page_s_column_outside_the_matrix_gets_only_what_needs_no_matrix_entry():
    """A column of records from a target this matrix does not declare: its claim and the case's word, never a fact,
    a range claim or a prediction (those read the matrix's entry for the target)."""

    class Column:
        id, backend, platform = "trt-elsewhere", "tensorrt", "x86"

    form = Form("c", "v", ({"target": "trt-elsewhere", "outcome": "fail", "source": "https://x", "strength":
                           "issue-thread", "category": None, "note": ""},),
                entry={"needs": ["implicit-int8"], "range_claims": []}, not_applicable={})
    found = evidence_for(form, Column(), Sources(prediction=lambda form, target: pytest.fail("asked a prediction")))
    assert [e.kind for e in found] == [j.CLAIMED]
