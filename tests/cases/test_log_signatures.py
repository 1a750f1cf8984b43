"""What each pattern looks like in a TensorRT log is declared in its case (``Case.log_signatures``): the classifier
names every declared signature from the example its case gives, the table travels through index.json to the worker
unchanged, and a signature that is not the case's own is refused where the case is declared."""
import json
import re

import pytest

import cases
from cases.generate import declared_index
from cases.model import Case, Tolerance, Variant, library_signatures
from harness.tensorrt.classify import classify_log, known_forms
from harness.tensorrt.signatures import NO_SIGNATURES, KnownFailure, KnownForm, LogSignatures
from harness.worker.casedata import CasesDirError, load_cells

SIGNATURES = library_signatures()


@pytest.mark.parametrize("known", SIGNATURES.failures, ids=lambda s: s.id)
def test_a_declared_failure_is_named_from_its_example_with_the_pattern_of_its_case(known):
    result = classify_log(f"[E] {known.example}", SIGNATURES)
    assert (result.category, result.known_failure) == (known.category, known)
    (case,) = [c for c in cases.all_cases() if known in c.log_signatures]
    assert known.pattern == case.pattern and known.source in case.links
    assert classify_log(f"[E] {known.example}").known_failure is None  # the classifier has no table of its own


@pytest.mark.parametrize("known", SIGNATURES.forms, ids=lambda s: s.id)
def test_a_declared_form_is_found_in_its_example(known):
    assert [form for form, _ in known_forms(known.example, SIGNATURES)] == [known]
    assert known_forms(known.example, NO_SIGNATURES) == []


def test_every_pattern_with_a_known_failure_of_the_classifier_declares_it_in_one_case():
    declared = [(case.id, s.id) for case in cases.all_cases() for s in case.log_signatures]
    assert len({sid for _, sid in declared}) == len(declared) == len(SIGNATURES.failures) + len(SIGNATURES.forms)
    # the patterns that name messages upstream reports print, and the forms a model confirms
    assert {s.pattern for s in SIGNATURES.failures} >= {"P1", "P8", "P9", "P10", "P12", "P14", "P15", "P16", "P17",
                                                         "P20", "S1"}
    assert {s.pattern for s in SIGNATURES.forms} == {"P7", "P9", "P20", "S2", "S3"}


def test_the_table_goes_through_index_json_unchanged():
    written = json.loads(json.dumps(declared_index()["log_signatures"]))
    assert LogSignatures.from_json(written) == SIGNATURES


def test_the_worker_reads_the_table_of_a_generated_directory_and_refuses_a_damaged_one(control_cases_dir, tmp_path):
    (cell, *_) = load_cells(control_cases_dir)
    assert LogSignatures.from_json(cell["log_signatures"]) == SIGNATURES
    index = json.loads((control_cases_dir / "index.json").read_text())
    index["log_signatures"]["failures"][0]["message"] = "(unclosed"
    damaged = tmp_path / "cases"
    damaged.mkdir()
    for path in control_cases_dir.iterdir():
        if path.name != "index.json":
            (damaged / path.name).symlink_to(path)
    (damaged / "index.json").write_text(json.dumps(index))
    with pytest.raises(CasesDirError, match=r"index\.json: field 'log_signatures'\.failures\[0\]\.message: not a regular"):
        load_cells(damaged)


def _case(name, signature, links=("https://github.com/NVIDIA/TensorRT/issues/1",), pattern="P99"):
    return type(name, (Case,), {
        "id": f"test-{name.lower()}", "title": "t", "pattern": pattern, "links": links, "mode": "explicit-qdq",
        "opset": 13, "tolerance": Tolerance(min_cosine=0.9, max_abs_error=1.0, reason="r"),
        "variants": (Variant("v", role="control", description="d"),), "log_signatures": (signature,)})


def _failure(**fields):
    return KnownFailure(**{"id": "x-failure", "category": "internal-assert", "message": "x",
                           "source": "https://github.com/NVIDIA/TensorRT/issues/1", "example": "x", **fields})


@pytest.mark.parametrize(("signature", "links", "error"), [
    (_failure(source="https://example.com/other"), None, "cites https://example.com/other, which is not among"),
    (_failure(pattern="P1"), None, "names pattern P1, not the case's P99"),
    ("x failed", None, "not a KnownFailure or KnownForm"),
])
def test_a_signature_that_is_not_the_cases_own_is_refused(signature, links, error, monkeypatch):
    monkeypatch.setattr("cases.model._REGISTRY", dict(cases.model._REGISTRY))
    with pytest.raises(TypeError, match=re.escape(error)):
        _case("Refused", signature, **({"links": links} if links else {}))


def test_a_declared_signature_takes_the_pattern_of_its_case(monkeypatch):
    monkeypatch.setattr("cases.model._REGISTRY", dict(cases.model._REGISTRY))
    case = _case("Declared", _failure())
    assert [s.pattern for s in case.log_signatures] == ["P99"]
    assert library_signatures([case]).failures == case.log_signatures
    with pytest.raises(ValueError, match=r"log signature ids repeat: \['x-failure'\]"):
        LogSignatures((_failure(),), (KnownForm("x-failure", "missing-scale", "x", "s", "n", "x"),))


def test_an_index_without_the_table_gives_cells_none(control_cases_dir, tmp_path):
    """A cases directory written before the table travelled in index.json: the worker classifies without known
    failures rather than refusing it."""
    index = json.loads((control_cases_dir / "index.json").read_text())
    del index["log_signatures"]
    older = tmp_path / "cases"
    older.mkdir()
    for path in control_cases_dir.iterdir():
        if path.name != "index.json":
            (older / path.name).symlink_to(path)
    (older / "index.json").write_text(json.dumps(index))
    assert all(LogSignatures.from_json(cell["log_signatures"]) == NO_SIGNATURES for cell in load_cells(older))
