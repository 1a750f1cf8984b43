"""Compare two sets of records cell by cell: regressions, progressions, other changes, and what cannot be compared.

Only outcomes that say something about the pattern are compared: pass, fallback, mismatch, fail and crash.
``infra-error`` (the harness or environment broke), ``timeout`` (the harness's time limit) and ``unavailable`` (the
cell cannot exist) are never a regression or a progression; a cell with one of them on either side is listed apart
as *not compared*.

- regression: pass -> fallback / mismatch / fail / crash, and fallback -> mismatch / fail / crash;
- progression: fallback / mismatch / fail / crash -> pass, and mismatch / fail / crash -> fallback;
- changed: the outcome stayed in the same band but the evidence moved (fail -> crash, another failure category,
  other fallback nodes);
- new / gone: a cell only one side has.

Records of two GPU architectures (sm_87 on one side, sm_110 on the other: a runner pool's machines, or a host whose
GPU was changed) are of different cells of the world: *not compared*, and the architectures are said.

Night after night (:func:`classify_history`), a cell's latest outcome is compared with its last *comparable* one
before it, however many infra-error, timeout or missing nights lie between: pass -> infra-error -> fail is a
regression on the night of the fail. A cell whose outcome band flipped more than K times in the last N runs is
*flaky*: listed apart, never a regression or a progression.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterable

from harness.store.results_file import record_gpu_arch, record_host, variant_on_target
from harness.judgement import change as outcome_change
from harness.judgement import (
    COMPARED_OUTCOMES, NOT_COMPARED_OUTCOMES, RAN_OUTCOMES, SAME_BAND, UNAVAILABLE, band,
)
from harness.worker.record import Record

BAND = {outcome: band(outcome) for outcome in COMPARED_OUTCOMES}  # per compared outcome; higher is better
CHANGE_KINDS = ("regression", "progression", "flaky", "changed", "not-compared", "new", "gone", "unchanged")


@dataclasses.dataclass(frozen=True)
class CellChange:
    """How one cell moved from the old set to the new one."""

    case: str
    variant: str
    target: str
    host: str | None
    kind: str
    why: str  # e.g. "pass -> fail (no-implementation at /conv/Conv)"
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    old_run: str | None = None  # the run the old record is from, when it is not simply "the previous run"
    disagreement: str | None = None  # "gpu-a pass, gpu-b fallback": machines of the new night that disagree

    @property
    def cell(self) -> str:
        return f"{self.case}/{self.variant}"

    @property
    def old_outcome(self) -> str | None:
        return self.old["outcome"] if self.old else None

    @property
    def new_outcome(self) -> str | None:
        return self.new["outcome"] if self.new else None


def describe(record: dict[str, Any] | None) -> str:
    """An outcome with the evidence that tells two records with the same outcome apart."""
    if record is None:
        return "no record"
    text = record["outcome"]
    failure = record.get("failure")
    if failure and record["outcome"] not in RAN_OUTCOMES:
        text += f" ({failure['category']}" + (f" at {failure['node']}" if failure.get("node") else "") + ")"
    elif record["fallback_nodes"]:
        text += f" ({len(record['fallback_nodes'])} node(s) not INT8: {', '.join(record['fallback_nodes'])})"
    return text


def classify(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """The change kind (see the module docstring) of a cell whose old and new records are ``old`` and ``new``."""
    if old is None:
        return "new"
    if new is None:
        return "gone"
    before, after = old["outcome"], new["outcome"]
    if before in NOT_COMPARED_OUTCOMES or after in NOT_COMPARED_OUTCOMES:
        return "unchanged" if before == after else "not-compared"
    moved = outcome_change(before, after, record_gpu_arch(old), record_gpu_arch(new))
    if moved != SAME_BAND:
        return moved  # the engine's regression, progression or not-compared
    return "unchanged" if _evidence(old) == _evidence(new) else "changed"


def other_gpu(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """"sm_87 -> sm_110" when the two records name different GPU architectures, else None (one unknown: the same)."""
    archs = record_gpu_arch(old), record_gpu_arch(new)
    return f"{archs[0]} -> {archs[1]}" if None not in archs and archs[0] != archs[1] else None


def band_flips(outcomes: Iterable[str]) -> int:
    """How many times consecutive comparable outcomes changed band (pass / fallback / the failures); outcomes that
    say nothing about the pattern are skipped, not counted as a change."""
    bands = [BAND[o] for o in outcomes if o in BAND]
    return sum(1 for a, b in zip(bands, bands[1:]) if a != b)


def classify_history(new: dict[str, Any] | None, previous: dict[str, Any] | None, earlier: dict[str, Any] | None,
                     window: list[str], seen_before: bool, flaky_flips: int) -> tuple[str, int]:
    """The change kind of a cell in a series' latest run, and its band flips in the window.

    ``new``: its latest record (None: the latest run has no record of it); ``previous``: its record in the run
    before; ``earlier``: its last comparable record before the latest run, however far back (None: none);
    ``window``: its outcomes in the last N runs, oldest first, the latest included; ``seen_before``: some earlier
    run has a record of it.
    """
    flips = band_flips(window)
    if new is None:
        return ("gone" if previous is not None else "unchanged"), flips
    if not seen_before:
        return "new", flips
    if new["outcome"] not in BAND:
        unchanged = new["outcome"] == UNAVAILABLE and (previous or {}).get("outcome") == UNAVAILABLE
        return ("unchanged" if unchanged else "not-compared"), flips
    if earlier is None or other_gpu(earlier, new):
        return "not-compared", flips
    if flips > flaky_flips:
        return "flaky", flips
    return classify(earlier, new), flips


def _evidence(record: dict[str, Any]) -> tuple:
    failure = record.get("failure") or {}
    return record["outcome"], failure.get("category"), tuple(sorted(record["fallback_nodes"]))


@dataclasses.dataclass
class Comparison:
    """Every cell of two record sets, with its change kind."""

    old_label: str
    new_label: str
    changes: list[CellChange]

    def of_kind(self, kind: str) -> list[CellChange]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def regressions(self) -> list[CellChange]:
        return self.of_kind("regression")

    @property
    def progressions(self) -> list[CellChange]:
        return self.of_kind("progression")

    def counts(self) -> dict[str, int]:
        return {kind: len(self.of_kind(kind)) for kind in CHANGE_KINDS}


def compare_records(old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]], old_label: str = "old",
                    new_label: str = "new") -> Comparison:
    """Pair the cells of ``old`` and ``new`` and classify each pair.

    Cells are paired by (case, variant, target, host, GPU architecture). On each side the newest record of a cell
    speaks (the latest ``started_at``; of equal ones, the later in the file): two machines of one host kind that
    recorded the same cell are one observation, the newer. A target seen on exactly one host on each side is paired
    across hosts (a runner pool names its machines differently from night to night); the host change is said.
    """
    old_cells, new_cells = _by_cell(old), _by_cell(new)
    changes = []
    for cell in sorted(set(old_cells) | set(new_cells)):
        before, after = old_cells.get(cell, {}), new_cells.get(cell, {})
        if len(before) == 1 and len(after) == 1:
            pairs = [(next(iter(before)), next(iter(after)))]
        else:
            pairs = [(h if h in before else None, h if h in after else None)
                     for h in sorted(set(before) | set(after), key=str)]
        for old_key, new_key in pairs:
            old_record, new_record = before.get(old_key), after.get(new_key)
            old_host, new_host = (old_key or (None,))[0], (new_key or (None,))[0]
            kind = classify(old_record, new_record)
            why = f"{describe(old_record)} -> {describe(new_record)}"
            if old_record and new_record and old_host != new_host:
                why += f" (host {old_host} -> {new_host})"
            gpus = other_gpu(old_record, new_record) if old_record and new_record else None
            if gpus:
                why += f" (GPU {gpus}: another GPU, not compared)"
            changes.append(CellChange(*cell, host=new_host if new_record else old_host, kind=kind, why=why,
                                      old=old_record, new=new_record))
    return Comparison(old_label, new_label, changes)


def _by_cell(records: Iterable[Record]) -> dict[tuple[str, str, str], dict[tuple[str | None, str | None], Record]]:
    """(case, variant, target) -> (host, GPU architecture) -> the newest record (see compare_records)."""
    cells: dict[tuple[str, str, str], dict[tuple[str | None, str | None], Record]] = {}
    for record in records:
        found = cells.setdefault(variant_on_target(record), {})
        key = (record_host(record), record_gpu_arch(record))
        if key not in found or record.get("started_at", "") >= found[key].get("started_at", ""):
            found[key] = record
    return cells


TABLE_KINDS = ("regression", "progression", "flaky", "changed", "not-compared", "new", "gone")


def not_compared_groups(comparison: Comparison) -> dict[tuple[str, str | None], list[CellChange]]:
    """The not-compared cells of ``comparison`` per (target, host): one line each on a page or in a table."""
    groups: dict[tuple[str, str | None], list[CellChange]] = {}
    for change in comparison.of_kind("not-compared"):
        groups.setdefault((change.target, change.host), []).append(change)
    return groups


def not_compared_text(changes: list[CellChange]) -> str:
    """'infra-error 35, timeout 2, another GPU (sm_87 -> sm_110) 4': why the cells were not compared (the latest
    record's outcome when it is one that is never compared)."""
    counts: dict[str, int] = {}
    for change in changes:
        gpus = other_gpu(change.old, change.new) if change.old and change.new else None
        outcome = (change.new_outcome if change.new_outcome not in COMPARED_OUTCOMES else
                   f"another GPU ({gpus})" if gpus else "no comparable earlier")
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{outcome} {count}" for outcome, count in sorted(counts.items(), key=lambda kv: -kv[1]))


def changes_table(comparison: Comparison, kinds: Iterable[str] = TABLE_KINDS) -> str:
    """A readable table of the changed cells, regressions first; 'no changes' when every cell is unchanged."""
    import pandas as pd

    rows = []
    for kind in kinds:
        if kind == "not-compared":
            rows += [("not-compared", target, host or "-", f"{len(changes)} cell(s)", not_compared_text(changes))
                     for (target, host), changes in not_compared_groups(comparison).items()]
        else:
            rows += [(c.kind, c.target, c.host or "-", c.cell, c.why) for c in comparison.of_kind(kind)]
    counts = ", ".join(f"{n} {kind}" for kind, n in comparison.counts().items() if n)
    head = f"{comparison.old_label} -> {comparison.new_label}: {counts or 'no cells'}"
    if not rows:
        return head + "\nno changes"
    frame = pd.DataFrame(rows, columns=["change", "target", "host", "case/variant", "old -> new"])
    with pd.option_context("display.max_colwidth", 120, "display.width", 250):
        return head + "\n" + frame.to_string(index=False)


def write_junit(comparisons: Iterable[Comparison], path: Path | str) -> Path:
    """JUnit XML for CI dashboards: one test suite per comparison and target, one test case per cell.

    A regressed cell is a failed test case; a cell that could not be compared, is gone or is flaky is skipped;
    every other cell passes. The failure text holds the old and new evidence.
    """
    from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

    xml = JUnitXml("trt-matrix nightly")
    for comparison in comparisons:
        by_target: dict[str, list[CellChange]] = {}
        for change in comparison.changes:
            by_target.setdefault(change.target if change.host is None else f"{change.target}@{change.host}",
                                 []).append(change)
        for suite_name, changes in sorted(by_target.items()):
            suite = TestSuite(suite_name)
            for change in changes:
                case = TestCase(change.cell, classname=f"trt-matrix.{suite_name}")
                if change.kind == "regression":
                    failure = Failure(f"regression: {change.why}", type_="regression")
                    failure.text = _failure_text(comparison, change)
                    case.result = [failure]
                elif change.kind in ("not-compared", "gone", "flaky"):
                    case.result = [Skipped(f"{change.kind}: {change.why}")]
                suite.add_testcase(case)
            suite.update_statistics()
            xml.add_testsuite(suite)
    xml.update_statistics()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.write(str(path), pretty=True)
    return path


def _failure_text(comparison: Comparison, change: CellChange) -> str:
    lines = [f"{comparison.old_label}: {describe(change.old)}", f"{comparison.new_label}: {describe(change.new)}"]
    failure = (change.new or {}).get("failure")
    if failure:
        lines.append(f"message: {failure['message']}")
    return "\n".join(lines)
