"""The scan and the report give one answer: every failing form and workaround of the library, scanned as if it were a
user's model, gets on each target the verdict the planning view's cell of its pattern says (the cell is the
projection of the scan's own judgements, harness.judgement.planning_verdict), read from the same records and claims.

The records: the library observed on ort-cpu (tests/reports/golden/ort-cpu-run.jsonl) and, on the TensorRT targets,
records built the way the worker builds them, one scenario per target so that every outcome, and every planning
verdict, occurs (none of them is a TensorRT result: no TensorRT runs here). The engine predicted from TensorRT's
documented rules: the scan predicts each form's model as it predicts a user's; the planning view reads the prediction
``generate`` writes into index.json.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import onnx
import pytest

import cases
from cases.generate import declared_index, export_built, export_model
from harness.matrix import load_matrix
from harness.scan.engine_prediction.predict import quantized_requests
from harness.scan.engine_prediction.targets import predict_targets
from harness.scan.loading import load_model
from harness.scan.matching import find_patterns
from harness.evidence.observations import read_observations
from harness.scan.prediction import PredictedNodes, predict
from harness.scan.predicted import predicted_entry
from harness import judgement as j
from tests.conftest import evidence_piece
from reports.case_index import rows_from_index
from reports.planning import build_plan
from reports.tables import matrix_columns
from tests.reports.conftest import ENVIRONMENTS, make_record

GOLDEN = Path(__file__).resolve().parent / "reports" / "golden" / "ort-cpu-run.jsonl"
MATRIX = load_matrix()
FAILURES = {"fail": ("no-implementation", "no implementation of the fused node", "/conv/Conv"),
            "crash": ("crash", "The cell's process was killed by signal 11 (SIGSEGV).", None),
            "timeout": ("timeout", "The cell's process no result after 300 s; the process was killed.", None),
            "infra-error": ("harness", "the harness failed the cell", None),
            "unavailable": ("unavailable", "the API does not exist in this version", None)}
# TensorRT target -> (outcome of the failing forms, of the workarounds, of the sweeps); None: no record.
SCENARIOS = {
    "trt-local": (None, "pass", None),  # works with workaround, the failing form not run
    "trt86-x86": ("fail", "pass", "fallback"),  # works with workaround
    "trt92-x86": ("pass", "fail", "mismatch"),  # works as reported, sweeps worse
    "trt100-x86": ("fallback", "fallback", "pass"),  # precision fallback
    "trt102-x86": ("mismatch", "crash", None),  # fails
    "trt86-orin": ("timeout", None, "timeout"),  # fails (a timeout is a failure), beside the claims
    "trt100-orin": ("infra-error", "infra-error", None),  # no evidence: claimed or not run
    "trt85-orin": ("unavailable", "unavailable", "unavailable"),  # cannot exist
    "trt103-orin": ("crash", "fallback", None),  # precision fallback with a workaround
    "ort1.31-cpu": ("unverified", "infra-error", None),  # ran, precision not shown: no verdict either way
}


# The bases the engine tries before observation (harness.judgement.BASES: not applicable, a fact of the target).
BEFORE_OBSERVATION = tuple(b.name for b in j.BASES[:[b.name for b in j.BASES].index(j.OBSERVED)])


def synthetic_records() -> list[dict]:
    records = []
    for case in cases.all_cases():
        for variant in case.variants:
            for target, outcomes in SCENARIOS.items():
                role = {"failing": 0, "control": 0, "workaround": 1, "sweep": 2}[variant.role]
                outcome = outcomes[role]
                if outcome is None:
                    continue
                seen = {"fallback": "fp32", "unverified": "unknown"}.get(outcome, "int8")
                record = make_record(case.id, variant.name, target, outcome, fail=FAILURES.get(outcome),
                                     fallback_nodes=["/conv/Conv"] if outcome == "fallback" else None,
                                     precision={"/conv/Conv": seen} if j.meaning(outcome).ran else None)
                record["environment"] = ENVIRONMENTS[record["backend"]]
                records.append(record)
    return records


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """The records (a results file, as a user points --results at it) and the planning view built from them."""
    records = [json.loads(line) for line in GOLDEN.read_text().splitlines()] + synthetic_records()
    results = tmp_path_factory.mktemp("evidence") / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    index = declared_index()  # the index form the report reads, with the prediction generate writes beside it
    for case, entry in zip(cases.all_cases(), index["cases"]):
        for variant, variant_entry in zip(case.variants, entry["variants"]):
            model, built = export_built(case, variant)
            variant_entry.update(predicted_entry(variant, model, built.requested))
    rows = rows_from_index(index, "the case library")
    plan = build_plan(rows, matrix_columns(MATRIX, records), records)
    return read_observations([results]), plan


class Form:
    """What the scan knows of one form's model: its findings of the form's case and its predicted engine per target,
    as the scanner predicts a user's model (the nodes it asks a quantized precision of, each target's ruleset)."""

    def __init__(self, loaded, findings):
        self.findings = findings
        self.engines = predict_targets(loaded.index, list(MATRIX.values()))
        self.asked = quantized_requests(loaded.index)

    def __iter__(self):
        return iter(self.findings)

    def predicted(self, target: str) -> PredictedNodes | None:
        precisions = self.engines.node_precisions(target)
        return PredictedNodes(precisions, self.asked, self.engines.targets[target]["ruleset"]) if precisions else None


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """Per (case, variant) of every failing form and workaround: the finding of its own case when its model is
    scanned as a user's model (with its predicted engine), or why it cannot be told from another form."""
    out = tmp_path_factory.mktemp("forms")
    found, untellable = {}, {}
    for case in cases.all_cases():
        failing = {v.name: export_model(case, v)[0].graph for v in case.variants if v.role == "failing"}
        for variant in case.variants:
            if variant.role not in ("failing", "workaround"):
                continue
            model, _ = export_model(case, variant)
            twin = next((name for name, graph in failing.items() if name != variant.name and graph == model.graph),
                        None)
            if twin:  # e.g. a knob-only workaround (a calibrator, a cache): no ONNX file shows the difference
                untellable[(case.id, variant.name)] = twin
                continue
            path = out / f"{case.id}-{variant.name}.onnx"
            onnx.save(model, path)
            loaded = load_model(path)
            found[(case.id, variant.name)] = Form(loaded, find_patterns(loaded.view, [case]).findings)
    return found, untellable


# Failing forms the scan does not find in their own model, and why. The agreement below cannot be checked for them.
MATCHER_GAPS = {
    ("p11-calibration-cache", "old-cache-only"): "a calibration cache reused without batches is a knob: no ONNX file "
                                                 "shows it",
    ("p12-qdq-internal-assert", "add-inputs-qdq"): "P12's matcher finds only a weight quantizer that is a graph "
                                                   "output, not the Add with Q/DQ on both inputs",
}


# Failing forms whose scan predicts other nodes than their planning cell: the scan predicts the nodes at a finding's
# places that the model asks a quantized precision of (a DequantizeLinear feeds them), the planning cell the nodes
# the form's record is judged on (its expected nodes). With nothing else known, the cell's prediction then differs
# from the scan's (the scan has none, or another).
PREDICTED_OTHER_NODES = {
    ("p14-dequantize-after-data-movement", "as-reported"): "the finding is the data movement before the DQ; the conv "
                                                           "the case expects INT8 reads it, outside the finding",
    ("p17-fp8-qdq-after-maxpool", "as-reported"): "the finding is the Q/DQ pair around the max pooling; the FP8 "
                                                  "convolutions the case expects are outside it",
    ("p6-matmul-int8", "act-x-act-as-reported"): "the MatMul the case expects INT8 reads two activations no DQ "
                                                 "feeds: the model asks float of it, the scan leaves it out, its "
                                                 "record (and the cell) judge it against INT8: predicted fallback",
}


def test_every_form_scanned_is_found_as_itself(scanned):
    """A failing form is found as itself (but for the gaps named above); a workaround is found as itself, or its
    model holds no form of the pattern any more (nothing to warn about); a form whose graph is another's differs
    only in knobs or build mode (P19's fp16-only: the as-reported graph built as float, without INT8)."""
    found, untellable = scanned
    named = {key: [f.variant.name if f.variant else None for f in findings] for key, findings in found.items()}
    wrong = {key: names for key, names in named.items()
             if key[1] not in names and (names or cases.get_case(key[0]).variant(key[1]).role == "failing")}
    assert wrong.keys() == MATCHER_GAPS.keys(), f"forms the scan names otherwise (case/variant: variants found): {wrong}"
    for (case_id, name), twin in untellable.items():
        case = cases.get_case(case_id)
        variant, other = case.variant(name), case.variant(twin)
        assert variant.knobs != other.knobs or case.mode_of(variant) != case.mode_of(other), (
            f"{case_id}/{name} has the graph of {twin} and no knob or build mode of its own")


def scan_verdicts(found, observations, evidence, target):
    """Per form of ``evidence`` (a planning cell's entries, each naming its case and variant: a pattern may have
    several cases, P6) that the scan finds as itself in its own model: its verdict on ``target``."""
    verdicts = {}
    for e in evidence:
        form = found.get((e.case, e.variant), ())
        finding = next((f for f in form if f.variant and f.variant.name == e.variant), None)
        if finding is not None:
            verdicts[(e.case, e.variant)] = predict(finding, MATRIX[target], observations,
                                                    predicted=form.predicted(target), explicit=bool(form.asked))
    return verdicts


def test_the_scan_of_each_form_agrees_with_the_planning_view_on_every_target(scanned, evidence):
    found, untellable = scanned
    observations, plan = evidence
    assert {t.id for t in plan.targets} >= set(SCENARIOS) | {"ort-cpu"}
    disagreements, seen_kinds, predicted_other = [], set(), set()
    for row in plan.rows:
        if row.pattern.id == "control":
            continue
        for target, cell in zip(plan.targets, row.verdicts):
            seen_kinds.add(cell.kind)
            by_role = {role: [e for e in cell.evidence if e.role == role] for role in ("failing", "workaround")}
            scan = scan_verdicts(found, observations, by_role["failing"], target.id)
            where = f"{row.pattern.id} on {target.id}: planning {cell.kind} ({cell.text})"
            if not scan:
                # Forms no graph shows: a matcher's gap, a knob-only twin of another form, or one its case declares
                # unmatchable (P15's builder flags).
                assert all((e.case, e.variant) in MATCHER_GAPS or (e.case, e.variant) in untellable
                           or e.variant in getattr(cases.get_case(e.case), "unmatchable_forms", ())
                           for e in by_role["failing"]), where
                continue
            form = j.judge(e for v in scan.values() for e in v.evidence)
            listed = [j.judge(w.evidence) for v in scan.values() for w in v.workarounds]
            projected = j.planning_verdict(form, listed, target.available)
            other_nodes = set(scan) & PREDICTED_OTHER_NODES.keys()
            if cell.kind == j.PREDICTED and other_nodes:
                predicted_other |= other_nodes
                continue
            if projected != cell.kind:
                disagreements.append(f"{where}; the scan's judgement of the failing form, {form.verdict} "
                                     f"({form.basis}), and of its workarounds {[w.verdict for w in listed]} project to "
                                     f"{projected}: " + "; ".join(f"{n}: {v.reason}" for (_, n), v in scan.items()))
            if cell.kind == j.PREDICTED == form.basis:  # and what is predicted: the worst of the failing forms'
                predicted = set(re.findall(rf"(?:^|; )({j.PASS}|{j.FALLBACK}) \(", cell.detail))
                if form.verdict != (j.FALLBACK if j.FALLBACK in predicted else j.LIKELY):
                    disagreements.append(f"{where}; the scan predicts {form.verdict}: {form.deciding.describe()}")
            # Form by form: what the planning view read of each variant is what the scan says of it.
            workarounds = scan_verdicts(found, observations, by_role["workaround"], target.id)
            for e in by_role["failing"] + by_role["workaround"]:
                verdict = {**scan, **workarounds}.get((e.case, e.variant))
                if verdict is None:
                    continue
                expected = j.verdict_of(evidence_piece(j.OBSERVED, j.VARIANT, e.outcome)) if e.outcome else None
                if verdict.basis in BEFORE_OBSERVATION:  # a fact or not-applicable decides before any record
                    continue
                if expected and (verdict.verdict, verdict.basis) != (expected, j.OBSERVED):
                    disagreements.append(f"{where}; {e.variant} observed {e.text}, the scan says {verdict.verdict} "
                                         f"({verdict.basis}): {verdict.reason}")
            if cell.kind == j.WORKAROUND and cell.workaround in {n for _, n in workarounds}:
                listed = {w.variant.name: w.verdict for v in scan.values() for w in v.workarounds}
                if listed.get(cell.workaround) not in j.SCAN_GOOD:
                    disagreements.append(f"{where}; the scan does not list {cell.workaround} as a workaround that "
                                         f"works: {listed}")
    assert not disagreements, f"{len(disagreements)} disagreement(s):\n" + "\n".join(disagreements)
    assert seen_kinds == set(j.PLANNING_VERDICTS), "the scenarios must give every planning verdict"
    assert predicted_other == PREDICTED_OTHER_NODES.keys(), "a form named there is never predicted: drop it"
