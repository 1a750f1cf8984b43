"""The planning view: one verdict per (pattern, target), the target to pick per pattern, and what blocks each target.

A pattern's verdict on a target is the engine's (:func:`harness.judgement.judge`, the scan's own) applied to the
failing forms as reported (the controls, for the control pattern) and to each workaround, projected into a cell by
:func:`harness.judgement.planning_verdict`: only records of this project decide *works*, *fails* or *fallback*; an
upstream claim alone gives *claimed upstream only*, and the engine TensorRT's documented rules predict for an
explicit form (index.json's ``predicted_engine``) *predicted*, never an observed verdict. The evidence of each
variant is :func:`harness.evidence.evidence_for`'s (the scan's own, from the records and the index); this module words
the cell; the verdict words and their labels are :mod:`harness.judgement`'s.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Iterable, Sequence

from harness import judgement as j
from harness.judgement import (
    CANNOT_EXIST_HERE as CANNOT_EXIST,
    FAILS_AS_REPORTED as FAILS,
    NOT_RUN,
    PLANNING_LABELS as VERDICT_LABELS,
    PRECISION_FALLBACK as FALLBACK,
    PRECISION_UNVERIFIED as UNVERIFIED,
    WORKAROUND,
    WORKS_AS_REPORTED as WORKS,
)
from harness.evidence import Evidence, Form, Observations, Sources, evidence_for
from harness.matrix import MatrixError, load_matrix
from harness.scan.predicted import library_prediction
from harness.store.run_dirs import record_host
from reports.case_index import VariantRow
from reports.tables import Column, host_text, platform_group, target_sort_key

PATTERN_ORDER_PREFIXES = ("S", "P")


def pattern_sort_key(pattern: str) -> tuple:
    """S1..S5, then P1..P13 (as numbers), then anything else, the control last."""
    if pattern == "control":
        return (3, 0, pattern)
    if pattern[:1] in PATTERN_ORDER_PREFIXES and pattern[1:].isdigit():
        return (PATTERN_ORDER_PREFIXES.index(pattern[:1]), int(pattern[1:]), pattern)
    return (2, 0, pattern)


@dataclasses.dataclass(frozen=True)
class PlanTarget:
    """A planning column: one target, whatever hosts observed it."""

    id: str
    title: str
    backend: str
    platform: str | None
    version: str | None
    available: bool
    reason: str | None
    columns: tuple[str, ...]  # the matrix columns (one per host) of this target

    @property
    def group(self) -> str:
        return platform_group(self.backend, self.platform)


def plan_targets(columns: Sequence[Column]) -> list[PlanTarget]:
    """The targets of the matrix columns, in column order (platform, then version)."""
    targets: dict[str, PlanTarget] = {}
    for column in columns:
        known = targets.get(column.target)
        targets[column.target] = PlanTarget(
            id=column.target, title=column.title, backend=column.backend, platform=column.platform,
            version=column.version, available=column.available, reason=column.reason,
            columns=(known.columns if known else ()) + (column.id,))
    return list(targets.values())


@dataclasses.dataclass(frozen=True)
class VariantLine:
    """One variant's part in a verdict: its role and what was observed (or claimed) on the target."""

    case: str
    variant: str
    role: str
    outcome: str | None  # the worst observed outcome across hosts; None: no record that speaks of the pattern
    text: str  # e.g. "fail: no-implementation at /model.0/conv/Conv", "claimed upstream: pass (write-up only)"
    anchors: tuple[str, ...]  # matrix cells ("case/variant@column") that hold the records
    conflict: bool = False  # its hosts disagree


@dataclasses.dataclass(frozen=True)
class Cell:
    """A planning cell: the engine's judgement of a pattern's forms on one target, projected
    (:func:`harness.judgement.planning_verdict`) and worded."""

    kind: str
    text: str  # the whole verdict in a sentence, e.g. "fails: no-implementation at /model.0/conv/Conv"
    detail: str = ""  # what the cell shows under the verdict's label: the workaround, the category and node, ...
    workaround: str | None = None  # the variant that works, for WORKAROUND
    nodes: tuple[str, ...] = ()  # fallback nodes, for FALLBACK
    sweeps: str | None = None  # e.g. "2 of 12 sweep points fail": sweeps worse than the verdict says
    notes: tuple[str, ...] = ()  # the cases' notes for this backend (e.g. what ONNX Runtime cannot show)
    conflict: bool = False
    evidence: tuple[VariantLine, ...] = ()
    claimed_pass: bool = False  # CLAIMED: upstream claims the failing form passes
    sweep_counts: str = ""  # e.g. "sweep points: 20 fallback, 4 pass"
    gpu_fallback: tuple[str, ...] = ()  # a DLA target: the deciding record's nodes that ran on the GPU instead

    @property
    def label(self) -> str:
        return VERDICT_LABELS[self.kind]

    @property
    def observed(self) -> bool:
        return self.kind in j.OBSERVED_PLANNING_VERDICTS


@dataclasses.dataclass(frozen=True)
class Pattern:
    """A planning row: every case of one pattern id."""

    id: str
    titles: tuple[str, ...]
    cases: tuple[str, ...]
    remedies: tuple[str, ...]
    rows: tuple[VariantRow, ...]

    def notes_for(self, backend: str) -> tuple[str, ...]:
        notes = {row.case: row.note_for(backend) for row in self.rows}
        return tuple(dict.fromkeys(n for n in notes.values() if n))


def patterns_of(rows: Iterable[VariantRow]) -> list[Pattern]:
    by_pattern: dict[str, list[VariantRow]] = {}
    for row in rows:
        by_pattern.setdefault(row.pattern, []).append(row)
    patterns = []
    for pattern_id in sorted(by_pattern, key=pattern_sort_key):
        members = by_pattern[pattern_id]
        titles = {row.case: row.case_title for row in members}
        remedies = {row.case: row.remedy for row in members if row.remedy}
        patterns.append(Pattern(pattern_id, tuple(titles.values()), tuple(titles), tuple(dict.fromkeys(
            remedies.values())), tuple(members)))
    return patterns


def _records_by_cell(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    cells: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in records:
        cells.setdefault((record["case"], record["variant"], record["target"]), []).append(record)
    return cells


def outcome_text(record: dict[str, Any]) -> str:
    """An observed outcome with what names it: the failure category and node, the fallback nodes, the cosine."""
    outcome, failure = record["outcome"], record.get("failure") or {}
    if j.answer(outcome) == j.FALLS_BACK:
        return f"fallback: {fallback_text(record)}"
    if outcome in j.RAN_WITHOUT_VERDICT:
        return f"{outcome}: precision of {nodes_text(unverified_nodes(record))} not shown by {record['backend']}"
    metrics = record.get("metrics") or {}
    if metrics.get("within_tolerance") is False and metrics.get("cosine") is not None:
        return f"{outcome}: cosine {metrics['cosine']:.4f}"
    if failure:
        node = f" at {failure['node']}" if failure.get("node") else ""
        return f"{outcome}: {failure['category']}{node}"
    return outcome


def nodes_text(nodes: Sequence[str]) -> str:
    """The first node and how many more: '/model.0/conv/Conv +2 more'."""
    if not nodes:
        return "no node named"
    return nodes[0] + (f" +{len(nodes) - 1} more" if len(nodes) > 1 else "")


def precision_pairs(record: dict[str, Any]) -> str:
    """The asked -> got precisions of a fallback's nodes where one was asked for other than INT8 ('fp8 -> fp32'),
    else '': an INT8 fallback reads as one without them."""
    pairs = (record.get("details") or {}).get("fallback_precision") or {}
    seen = dict.fromkeys(f"{p['asked']} -> {p['got']}" for p in pairs.values())
    return ", ".join(seen) if any(p["asked"] != j.INT8 for p in pairs.values()) else ""


def fallback_text(record: dict[str, Any]) -> str:
    """A fallback's nodes, with the precisions where they help: '/model/up_proj/MatMul (fp8 -> fp16)'."""
    pairs = precision_pairs(record)
    return nodes_text(record["fallback_nodes"]) + (f" ({pairs})" if pairs else "")


def unverified_nodes(record: dict[str, Any]) -> list[str]:
    """The expected nodes whose precision the backend did not show (records before the field: expected_int8's)."""
    details = record.get("details") or {}
    return details.get("unverified_nodes", details.get("unverified_int8", []))


def claim_text(claim: dict[str, Any]) -> str:
    """'fail (no-implementation), issue thread, one report, not reproduced': what upstream claimed, how strongly and
    who stands behind it (its conditions' support, where it declares them)."""
    category = f" ({claim['category']})" if claim.get("category") else ""
    support = (claim.get("conditions") or {}).get("support")
    behind = f", {j.SUPPORTS[support]}" if support in j.SUPPORTS else ""
    return f"{claim['outcome']}{category}, {j.strength_label(claim['strength'])}{behind}"


def _claim_shape(piece: Evidence) -> dict[str, Any]:
    """A piece of evidence that is not an observation, in the claim's shape a cell words (``outcome``,
    ``category``, ``source``, ``strength``, and ``said`` where the basis says what it rests on)."""
    if piece.kind == j.CLAIMED:
        return piece.item
    if piece.kind == j.NOT_APPLICABLE:
        return {"outcome": piece.item, "category": None, "source": "", "strength": "the case's word"}
    if piece.kind == j.FACT:
        return {"outcome": piece.item.statement.split(";")[0].split(": ")[0], "category": None,
                "source": piece.source, "strength": piece.strength, "said": piece.said}
    if piece.kind == j.RANGE_CLAIMED:
        return {"outcome": piece.outcome, "category": piece.category, "source": piece.source,
                "strength": f"{j.strength_label(piece.strength)}; claimed for {piece.said}"}
    if piece.kind == j.PREDICTED:
        return {"outcome": piece.outcome, "category": ", ".join(piece.item.rules), "source": "",
                "strength": piece.source, "said": piece.said}
    return {"outcome": piece.outcome, "category": piece.category, "source": piece.source,
            "strength": "; ".join((j.strength_label(piece.strength), *piece.conditions)), "said": piece.said}


def form_of(row: VariantRow) -> Form:
    """The evidence layer's form of an index.json row."""
    return Form(row.case, row.variant, row.claims, row.declared, row.not_applicable, row.case_links)


def evidence_on(row: VariantRow, target: PlanTarget, records: list[dict[str, Any]]) -> list[Evidence]:
    """What is known of the row's form on ``target`` (:func:`harness.evidence.evidence_for`, the scan's own): the
    records, the claim for the target and what the index declares (the case's not-applicable backends, the target's
    fact that stops the form, the range claim covering the target, the engine TensorRT's documented rules predict for
    its expected quantized nodes)."""
    sources = Sources(Observations.of_records(records), prediction=library_prediction)
    return evidence_for(form_of(row), _matrix_target(target.id) or target, sources)


class _Observed:
    """What one variant's evidence on one target says, across the hosts that observed it."""

    def __init__(self, row: VariantRow, target: PlanTarget, records: list[dict[str, Any]]):
        self.row = row
        self.target = target
        self.evidence = evidence_on(row, target, records)
        self.records = [e.item for e in self.evidence if e.kind == j.OBSERVED]
        speaking = [r for r in self.records if j.meaning(r["outcome"]).evidence]
        self.worst = max(speaking, key=lambda r: j.severity(r["outcome"]), default=None)
        self.conflict = len({r["outcome"] for r in speaking}) > 1
        self.unavailable = None if speaking else next(
            (r for r in self.records if j.answer(r["outcome"]) == j.CANNOT_EXIST), None)
        self.unverified = None if speaking else next(
            (r for r in self.records if r["outcome"] in j.RAN_WITHOUT_VERDICT), None)
        self.infra = not speaking and not self.unverified and any(j.answer(r["outcome"]) is None
                                                                  for r in self.records)
        self.claim = next((e.item for e in self.evidence if e.kind == j.CLAIMED), None)
        self.declared = [e for e in self.evidence if e.kind not in (j.OBSERVED, j.CLAIMED)]
        columns = target.columns if len(target.columns) == 1 else tuple(dict.fromkeys(
            f"{target.id} @ {host_text(record_host(r))}" for r in self.records))
        self.anchors = tuple(f"{row.case}/{row.variant}@{column.replace(' @ ', '@')}" for column in columns)

    @property
    def outcome(self) -> str | None:
        return self.worst["outcome"] if self.worst else None

    @property
    def severity(self) -> int | None:
        return j.severity(self.outcome) if self.worst else None

    @property
    def answer(self) -> str | None:
        """What its worst observation says about deploying the pattern (None: nothing observed)."""
        return j.answer(self.outcome) if self.worst else None

    def pieces(self) -> list[Evidence]:
        """Its evidence, as the engine reads it."""
        return self.evidence

    def line(self) -> VariantLine:
        if self.worst:
            text = outcome_text(self.worst) + (" (hosts disagree)" if self.conflict else "")
        elif self.unavailable:
            text = f"{j.UNAVAILABLE}: {(self.unavailable.get('failure') or {}).get('message') or 'cannot exist'}"
        elif self.unverified:
            text = outcome_text(self.unverified)
        elif self.infra:
            text = f"{j.INFRA_ERROR}: the harness failed, says nothing of the pattern"
        elif self.claim:
            text = f"claimed upstream: {claim_text(self.claim)}"
        elif self.declared:
            piece = self.declared[0]
            text = f"{j.BASIS[piece.kind].said}: {claim_text(_claim_shape(piece))}"
        else:
            text = VERDICT_LABELS[NOT_RUN]
        return VariantLine(self.row.case, self.row.variant, self.row.role, self.outcome, text, self.anchors,
                            self.conflict)


@functools.lru_cache(maxsize=None)
def _matrix_target(target_id: str) -> Any:
    """The matrix.yaml target of a column (its facts and the ranges that cover it), or None (not in the matrix)."""
    try:
        return load_matrix().get(target_id)
    except MatrixError:
        return None


def _counts(observed: Iterable[_Observed]) -> str:
    """How the sweep points of a pattern ended on a target, e.g. "sweep points: 20 fallback, 4 pass, 2 not run"."""
    counts: dict[str, int] = {}
    for o in observed:
        kind = o.outcome or (j.UNAVAILABLE if o.unavailable else o.unverified["outcome"] if o.unverified
                             else j.INFRA_ERROR if o.infra else NOT_RUN)
        counts[kind] = counts.get(kind, 0) + 1
    order = [*j.WORST_FIRST, NOT_RUN]
    parts = [f"{counts[k]} {VERDICT_LABELS.get(k, k) if k == NOT_RUN else k}" for k in sorted(counts, key=order.index)]
    return f"sweep points: {', '.join(parts)}" if parts else ""


def dla_fallback_nodes(record: dict[str, Any]) -> list[str]:
    """The nodes a DLA build ran on the GPU instead (a device fallback, not a precision one)."""
    return list((record.get("details") or {}).get("dla_fallback_nodes") or [])


def with_gpu_fallback(found: Cell, record: dict[str, Any]) -> Cell:
    """``found``, saying which nodes of the record that decided it ran on the GPU, not on the DLA it was built for."""
    nodes = dla_fallback_nodes(record)
    if not nodes:
        return found
    return dataclasses.replace(found, gpu_fallback=tuple(nodes), text=f"{found.text}; on the GPU, not the DLA: "
                               f"{nodes_text(nodes)} (a device fallback, not a precision one)")


def verdict(pattern: Pattern, target: PlanTarget, records_by_cell: dict) -> Cell:
    """The one verdict of ``pattern`` on ``target`` (see the module docstring); on a DLA target, with the nodes of
    the record that decided it that ran on the GPU instead."""
    found, deciding = _verdict(pattern, target, records_by_cell)
    return with_gpu_fallback(found, deciding) if deciding else found


def _verdict(pattern: Pattern, target: PlanTarget, records_by_cell: dict) -> tuple[Cell, dict | None]:
    """The verdict and the record that decided it (None when no record did): the engine's judgement of the failing
    forms and of each workaround, projected into a cell, then worded."""
    observed = [_Observed(row, target, records_by_cell.get((row.case, row.variant, target.id), []))
                for row in pattern.rows]
    primary_role = j.FAILING_ROLE if any(o.row.role == j.FAILING_ROLE for o in observed) else j.CONTROL_ROLE
    primary = [o for o in observed if o.row.role == primary_role] or observed
    workarounds = [o for o in observed if o.row.role == j.WORKAROUND_ROLE]
    sweeps = [o for o in observed if o.row.role == j.SWEEP_ROLE and o.worst]
    evidence = tuple(o.line() for o in [*primary, *workarounds])
    common = dict(notes=pattern.notes_for(target.backend), evidence=evidence, conflict=any(o.conflict for o in observed),
                  sweep_counts=_counts(o for o in observed if o.row.role == j.SWEEP_ROLE))
    form = j.judge(piece for o in primary for piece in o.pieces())
    judged = [(o, j.judge(o.pieces())) for o in workarounds]
    kind = j.planning_verdict(form, [w for _, w in judged], target.available)
    if not target.available:
        return Cell(kind, f"cannot exist: {target.reason or 'the target is unavailable'}", **common), None
    working = [o for o, w in judged if w.basis == j.OBSERVED and w.verdict in j.SCAN_GOOD]
    seen = [o for o in primary if o.worst]
    worst = max(seen, key=lambda o: o.severity) if seen else None
    if worst:
        worse_sweeps = [o for o in sweeps if o.severity > worst.severity]
        if worse_sweeps:
            kinds = sorted({o.outcome for o in worse_sweeps}, key=j.WORST_FIRST.index)
            common["sweeps"] = f"{len(worse_sweeps)} of {len(sweeps)} sweep points worse ({', '.join(kinds)})"
        else:
            common["sweeps"] = None
    if kind == WORKS:
        partial = "" if len(seen) == len(primary) else f" ({len(seen)} of {len(primary)} forms run)"
        return Cell(WORKS, VERDICT_LABELS[WORKS] + partial, partial.strip(" ()"), **common), worst.worst
    if kind == WORKAROUND:
        names = ", ".join(o.row.variant for o in working)
        as_reported = f"as reported {outcome_text(worst.worst)}" if worst else "the failing form was not run"
        detail = names if worst else f"{names} (failing form not run)"
        return Cell(WORKAROUND, f"works with workaround {names}; {as_reported}", detail,
                       workaround=working[0].row.variant, **common), working[0].worst
    if kind == FALLBACK and form.verdict == j.FALLBACK:
        nodes = tuple(worst.worst["fallback_nodes"])
        return Cell(FALLBACK, f"precision fallback: {fallback_text(worst.worst)}", fallback_text(worst.worst),
                       nodes=nodes, **common), worst.worst
    if kind == FALLBACK:  # the failing form fails; its first workaround that falls back is what works at all
        degraded = next(o for o, w in judged if w.basis == j.OBSERVED and w.verdict == j.FALLBACK)
        text = fallback_text(degraded.worst)
        return Cell(FALLBACK, f"precision fallback with workaround {degraded.row.variant}: "
                       f"{text}; as reported {outcome_text(worst.worst)}",
                       f"with workaround {degraded.row.variant}: {text}", nodes=tuple(degraded.worst["fallback_nodes"]),
                       workaround=degraded.row.variant, **common), degraded.worst
    if kind == FAILS:
        return Cell(FAILS, f"fails as reported: {outcome_text(worst.worst)}", outcome_text(worst.worst),
                       **common), None
    if kind == CANNOT_EXIST:
        message = (form.deciding.item.get("failure") or {}).get("message") or "cannot exist on this target"
        return Cell(CANNOT_EXIST, f"cannot exist: {message}", message, **common), None
    if kind in j.PLANNING_BASES:  # what the pieces of that basis say, in the claim's shape, after how it is known
        said = [(o, piece) for o in primary for piece in o.pieces() if piece.kind == kind]
        texts = list(dict.fromkeys(claim_text(_claim_shape(piece)) for _, piece in said))
        passing = [o for o in workarounds if any(piece.kind == kind and j.answer_of(piece) == j.WORKS
                                                 for piece in o.pieces())]
        text = "; ".join(f"{o.row.variant}: {claim_text(_claim_shape(piece))}" + (
            f" ({_claim_shape(piece)['said']})" if _claim_shape(piece).get("said") else "") for o, piece in said)
        detail = "; ".join(texts)
        if passing:
            names = ", ".join(o.row.variant for o in passing)
            text += f"; workaround {names} {kind} to pass"
            detail += f"; {len(passing)} workaround{'s' if len(passing) > 1 else ''} {kind} to pass"
        return Cell(kind, f"{j.BASIS[kind].label}: {text}", detail,
                       claimed_pass=kind in (j.CLAIMED, j.RANGE_CLAIMED)
                       and all(j.answer_of(piece) == j.WORKS for _, piece in said), **common), None
    if kind == UNVERIFIED:
        unverified = next(o.unverified for o in primary if o.unverified)
        return Cell(UNVERIFIED, f"{VERDICT_LABELS[UNVERIFIED]}: {outcome_text(unverified)}",
                       nodes_text(unverified_nodes(unverified)), nodes=tuple(unverified_nodes(unverified)),
                       **common), None
    if any(o.infra for o in primary):
        return Cell(NOT_RUN, f"{VERDICT_LABELS[NOT_RUN]}: {j.INFRA_ERROR} (the harness failed, not the pattern)",
                       j.INFRA_ERROR, **common), None
    return Cell(NOT_RUN, VERDICT_LABELS[NOT_RUN], **common), None


@dataclasses.dataclass(frozen=True)
class Recommendation:
    group: str  # e.g. "TensorRT · Jetson AGX Orin"
    targets: tuple[str, ...]  # the targets with the best verdict of the group, newest version first
    verdict: Cell | None  # that verdict; None when nothing observed works in the group
    claimed: tuple[str, ...] = ()  # targets where upstream claims it passes, when nothing observed works
    observed: bool = True  # something of the group was observed (else it was not run at all)


@dataclasses.dataclass(frozen=True)
class PlanRow:
    pattern: Pattern
    verdicts: tuple[Cell, ...]  # one per plan target
    recommendations: tuple[Recommendation, ...]


@dataclasses.dataclass(frozen=True)
class Plan:
    targets: tuple[PlanTarget, ...]
    rows: tuple[PlanRow, ...]
    left_out: tuple[str, ...] = ()  # targets with neither a record nor a claim

    def groups(self) -> list[tuple[str, int]]:
        """(platform group, number of targets) in column order, for the header row above the targets."""
        spans: list[tuple[str, int]] = []
        for target in self.targets:
            if spans and spans[-1][0] == target.group:
                spans[-1] = (target.group, spans[-1][1] + 1)
            else:
                spans.append((target.group, 1))
        return spans

    def blocking(self, index: int) -> dict[str, list[str]]:
        """Per verdict kind (fails, fallback, not run, claimed), the patterns that have it on target ``index``."""
        found: dict[str, list[str]] = {}
        for row in self.rows:
            found.setdefault(row.verdicts[index].kind, []).append(row.pattern.id)
        return found


def _recommend(targets: Sequence[PlanTarget], verdicts: Sequence[Cell]) -> tuple[Recommendation, ...]:
    """Per platform group, the targets where the pattern works best (as reported, else with a workaround, else
    with fallback), those whose layers all ran on the device they were built for first, then newest version first; a
    group where nothing observed works names upstream's pass claims."""
    groups: dict[str, list[tuple[PlanTarget, Cell]]] = {}
    for target, found in zip(targets, verdicts):
        groups.setdefault(target.group, []).append((target, found))
    out = []
    for group, members in groups.items():
        for kind in j.PLANNING_PREFERENCE:
            best = [(t, v) for t, v in members if v.kind == kind]
            if best:
                best.sort(key=lambda pair: (not pair[1].gpu_fallback, target_sort_key(  # all on its device first
                    pair[0].backend, pair[0].platform, pair[0].version, pair[0].id)), reverse=True)
                out.append(Recommendation(group, tuple(t.id for t, _ in best), best[0][1]))
                break
        else:
            claimed = tuple(t.id for t, v in members if v.claimed_pass)
            if claimed or any(v.observed for _, v in members):
                out.append(Recommendation(group, (), None, claimed, observed=any(v.observed for _, v in members)))
    return tuple(out)


def build_plan(rows: Sequence[VariantRow], columns: Sequence[Column], records: Iterable[dict[str, Any]]) -> Plan:
    """The planning view of ``records``. A target with no record, no upstream claim, no fact, no range claim and no
    prediction that decides a form says nothing a plan can use: it is left out (and named in ``Plan.left_out``),
    unless it cannot exist."""
    rows = list(rows)
    by_cell = _records_by_cell(records)
    recorded = {target for _, _, target in by_cell}
    claimed = {claim["target"] for row in rows for claim in row.claims}
    targets, left_out = [], []
    for target in plan_targets(columns):
        known = (target.id in recorded | claimed or not target.available
                 or any(e.kind not in (j.OBSERVED, j.CLAIMED) for row in rows for e in evidence_on(row, target, [])))
        (targets if known else left_out).append(target)
    plan_rows = []
    for pattern in patterns_of(rows):
        verdicts = tuple(verdict(pattern, target, by_cell) for target in targets)
        plan_rows.append(PlanRow(pattern, verdicts, _recommend(targets, verdicts)))
    return Plan(tuple(targets), tuple(plan_rows), tuple(t.id for t in left_out))
