"""The matrix as tables: rows (case, variant) x columns (targets, one per host when several hosts observed a target),
each cell observed, claimed upstream, or empty."""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, Mapping

import pandas as pd

from harness.store.merge import Conflict, find_conflicts
from harness.store.results_file import UNKNOWN_HOST, cell_key, record_host
from harness.worker.record import OUTCOMES, agreement

# What a cell can be: a record of ours, only an upstream claim, nothing, or a column that cannot exist.
OBSERVED, CLAIMED, NOT_RUN, TARGET_UNAVAILABLE = "observed", "claimed", "not-run", "target-unavailable"
VERDICTS = ("agrees", "disagrees", "no verdict")


@dataclasses.dataclass(frozen=True)
class VariantRow:
    """One row: a variant of a case, and what upstream claimed for it per target (claims are never observations)."""

    case: str
    case_title: str
    case_links: tuple[str, ...]
    pattern: str
    variant: str
    role: str
    description: str
    mode: str
    claims: tuple[dict[str, Any], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return self.case, self.variant

    def claim_for(self, target_id: str) -> dict[str, Any] | None:
        return next((c for c in self.claims if c["target"] == target_id), None)


def rows_from_variants(pairs: Iterable[tuple[Any, Any]]) -> list[VariantRow]:
    """Rows for the (case, variant) pairs that ``cases.model.iter_variants()`` yields, claims as plain dicts."""
    return [
        VariantRow(
            case=case.id, case_title=case.title, case_links=tuple(case.links), pattern=case.pattern,
            variant=variant.name, role=variant.role, description=variant.description, mode=variant.mode or case.mode,
            claims=tuple(dataclasses.asdict(claim) for claim in variant.claims),
        )
        for case, variant in pairs
    ]


def matrix_rows(rows: Iterable[VariantRow], records: Iterable[dict[str, Any]]) -> list[VariantRow]:
    """``rows`` grouped by case in their own order, then a row for every (case, variant) that only records know."""
    rows = list(rows)
    known = {row.key for row in rows}
    orphans = {(r["case"], r["variant"]): r["mode"] for r in records if (r["case"], r["variant"]) not in known}
    rows += [
        VariantRow(case=case, case_title="(not in the case library)", case_links=(), pattern="?", variant=variant,
                   role="?", description="Recorded in the results; the case library has no such variant.", mode=mode)
        for (case, variant), mode in sorted(orphans.items())
    ]
    case_order = list(dict.fromkeys(row.case for row in rows))
    return sorted(rows, key=lambda row: case_order.index(row.case))


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: a target as matrix.yaml declares it (on one host, when several observed it), and the environment
    its records observed."""

    id: str  # the target id, or "<target> @ <host>" when the target's records come from several hosts
    target: str
    host: str | None  # the host of the column's records, when they name one
    title: str
    backend: str
    available: bool
    reason: str | None
    nominal_version: str | None
    observed: dict[str, tuple[str, ...]]  # environment key -> distinct observed values
    env_mismatch: tuple[str, ...]
    in_matrix: bool = True

    @property
    def backend_versions(self) -> tuple[str, ...]:
        return self.observed.get(f"{self.backend}_version", ())

    @property
    def host_label(self) -> str | None:
        """The host the header names: the records' host ('unknown-host' in a per-host column of records naming none)."""
        return None if self.host is None and self.id == self.target else host_text(self.host)


def matrix_columns(targets: Mapping[str, Any], records: Iterable[dict[str, Any]]) -> list[Column]:
    """The targets of matrix.yaml in file order, then any target that only records name; a target whose records
    come from several hosts (a record naming none counts as one) gets one column per host."""
    by_target: dict[str, dict[str | None, list[dict[str, Any]]]] = {}
    for record in records:
        by_target.setdefault(record["target"], {}).setdefault(record_host(record), []).append(record)
    columns = []
    for target_id in [*targets, *sorted(set(by_target) - set(targets))]:
        by_host = by_target.get(target_id, {None: []})
        target = targets.get(target_id)
        if target is not None:
            declared = dict(title=target.title, backend=target.backend, available=target.available,
                            reason=target.reason, nominal_version=target.version)
        else:
            declared = dict(title="(not in matrix.yaml)", backend=next(iter(by_host.values()))[0]["backend"],
                            available=True, reason=None, nominal_version=None, in_matrix=False)
        for host in sorted(by_host, key=host_text):
            found = by_host[host]
            columns.append(Column(
                id=f"{target_id} @ {host_text(host)}" if len(by_host) > 1 else target_id, target=target_id,
                host=host, observed=observed_environment(found),
                env_mismatch=_distinct(r.get("env_mismatch") for r in found), **declared,
            ))
    return columns


def host_text(host: str | None) -> str:
    """``host``, or the name harness.store.merge gives the missing host of a record."""
    return UNKNOWN_HOST if host is None else host


def observed_environment(records: Iterable[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Distinct values of each environment field across ``records``; GPUs split into 'gpu' and 'driver'."""
    values: dict[str, list[Any]] = {}
    for record in records:
        for key, value in record["environment"].items():
            if key == "gpus":
                for gpu in value or []:
                    values.setdefault("gpu", []).append(_gpu_text(gpu))
                    values.setdefault("driver", []).append(gpu.get("driver_version"))
            else:
                values.setdefault(key, []).append(value)
    found = {key: _distinct(values[key]) for key in sorted(values)}
    return {key: vals for key, vals in found.items() if vals}


def _gpu_text(gpu: dict[str, Any]) -> str:
    if "error" in gpu:
        return gpu["error"]
    return f"{gpu.get('name', '?')} (compute {gpu.get('compute_cap', '?')})"


def _distinct(values: Iterable[Any]) -> tuple[str, ...]:
    texts = (v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values if v is not None)
    return tuple(dict.fromkeys(texts))


def carried_over_from(record: dict[str, Any] | None) -> str | None:
    """The run that observed ``record``, when a nightly carried it over instead of rerunning the cell."""
    return ((record or {}).get("provenance") or {}).get("carried_over_from")


@dataclasses.dataclass(frozen=True)
class Cell:
    """What the matrix knows about one (case, variant, target)."""

    kind: str
    record: dict[str, Any] | None = None
    claim: dict[str, Any] | None = None
    agrees: bool | None = None
    reason: str | None = None  # why the target cannot exist (TARGET_UNAVAILABLE)
    conflict: Conflict | None = None  # the hosts of the cell's target disagree (OBSERVED)

    @property
    def outcome(self) -> str | None:
        return self.record["outcome"] if self.record else None

    @property
    def fallback_count(self) -> int | None:
        """Expected-INT8 nodes not in INT8; None when the cell never observed per-node precision."""
        if not self.record or not (self.record["precision"] or self.record["fallback_nodes"]):
            return None
        return len(self.record["fallback_nodes"])

    @property
    def carried_over_from(self) -> str | None:
        return carried_over_from(self.record)

    @property
    def verdict(self) -> str | None:
        """How the observation compares with the upstream claim; None without both a record and a claim."""
        if self.kind != OBSERVED or self.claim is None:
            return None
        return {True: "agrees", False: "disagrees", None: "no verdict"}[self.agrees]

    @property
    def label(self) -> str:
        """The text the matrix shows for the cell."""
        if self.kind == OBSERVED:
            return self.outcome
        if self.kind == CLAIMED:
            return f"claimed upstream: {self.claim['outcome']}"
        if self.kind == TARGET_UNAVAILABLE:
            return f"target unavailable: {self.reason}"
        return "not run"


def make_cell(row: VariantRow, column: Column, record: dict[str, Any] | None,
              conflict: Conflict | None = None) -> Cell:
    """The cell of ``row`` x ``column``; a record's own expectation (what it was judged against) beats the library's."""
    library_claim = row.claim_for(column.target)
    if record is not None:
        if record["expectation"] is not None:
            claim, agrees = record["expectation"], record["agrees"]
        else:
            claim = library_claim
            agrees = agreement(library_claim, record["outcome"], record["failure"]) if library_claim else None
        return Cell(OBSERVED, record=record, claim=claim, agrees=agrees, conflict=conflict)
    if not column.available:
        return Cell(TARGET_UNAVAILABLE, claim=library_claim, reason=column.reason)
    if library_claim is not None:
        return Cell(CLAIMED, claim=library_claim)
    return Cell(NOT_RUN)


def cell_grid(records: Iterable[dict[str, Any]], rows: list[VariantRow], columns: list[Column]) -> pd.DataFrame:
    """Cells indexed by (case, variant), one column per column id; observed cells whose hosts disagree carry the
    conflict."""
    records = list(records)
    by_key = {cell_key(r): r for r in records}
    conflicts = {(c.case, c.variant, c.target): c for c in find_conflicts(records)}
    data = [[make_cell(row, col, by_key.get((*row.key, col.target, col.host)), conflicts.get((*row.key, col.target)))
             for col in columns] for row in rows]
    index = pd.MultiIndex.from_tuples([row.key for row in rows], names=["case", "variant"])
    return pd.DataFrame(data, index=index, columns=[col.id for col in columns], dtype=object)


def outcome_table(grid: pd.DataFrame) -> pd.DataFrame:
    """The matrix as text: the label of every cell (outcome, 'claimed upstream: ...', 'not run', ...)."""
    labels = [[cell.label for cell in cells] for cells in grid.to_numpy()]
    return pd.DataFrame(labels, index=grid.index, columns=grid.columns)


def cell_frame(grid: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: case, variant, target (the column id), kind, outcome, verdict, fallback_count (NaN: not
    observed)."""
    long = pd.DataFrame(
        [(case, variant, target, cell.kind, cell.outcome, cell.verdict, cell.fallback_count)
         for (case, variant), cells in grid.iterrows() for target, cell in cells.items()],
        columns=["case", "variant", "target", "kind", "outcome", "verdict", "fallback_count"],
    )
    long["fallback_count"] = pd.to_numeric(long["fallback_count"])
    return long


def target_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per column (a target, or a target on one host): cells per outcome, cells with fallback nodes, and how
    observations compare with upstream claims."""
    long = cell_frame(grid)
    targets = list(grid.columns)
    observed = long[long["kind"] == OBSERVED]

    def counts(frame: pd.DataFrame, column: str, categories: Iterable[str]) -> pd.DataFrame:
        table = frame.groupby(["target", column]).size().unstack(fill_value=0)
        return table.reindex(index=targets, columns=list(categories), fill_value=0)

    summary = counts(observed, "outcome", OUTCOMES)
    summary["fallback cells"] = observed[observed["fallback_count"] > 0].groupby("target").size()
    summary = summary.join(counts(observed.dropna(subset=["verdict"]), "verdict", VERDICTS))
    summary["claimed, not run"] = long[long["kind"] == CLAIMED].groupby("target").size()
    summary["not run"] = long[long["kind"] == NOT_RUN].groupby("target").size()
    summary.index.name = "target"
    return summary.fillna(0).astype(int)
