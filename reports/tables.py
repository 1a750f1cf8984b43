"""The matrix as tables: rows (case, variant) x columns (targets, one per host when several hosts observed a target),
each cell observed, claimed upstream, or empty."""
from __future__ import annotations

import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from harness.judgement import CANNOT_EXIST_HERE, CLAIMED, NOT_RUN, OBSERVED
from harness.store.merge import Conflict, find_conflicts
from harness.store.results_file import UNKNOWN_HOST, cell_key, record_gpu_arch, record_host
from harness.worker.record import OUTCOMES, agreement
from reports.case_index import VariantRow
from reports.templating import TARGET_UNAVAILABLE  # a cell kind beside OBSERVED, CLAIMED, NOT_RUN

if TYPE_CHECKING:  # pandas is imported where a table is made: a scan page needs none, and it costs 0.5 s
    import pandas as pd

# What a cell can be: a record of ours, only an upstream claim, nothing, or a column that cannot exist.
VERDICTS = ("agrees", "disagrees", "no verdict")
BACKEND_ORDER = ("tensorrt", "onnxruntime")  # TensorRT first; ONNX Runtime apart, after it
PLATFORM_ORDER = ("x86_64", "orin", "thor", "any")
PLATFORM_LABELS = {"x86_64": "x86_64 GPU server", "orin": "Jetson AGX Orin", "thor": "Jetson Thor",
                   "any": "this machine (local)"}
# A release read from a target's title or base image when matrix.yaml gives none (first match wins).
_RELEASE_IN_TITLE = re.compile(r"\bJetPack (\d+(?:\.\d+)*)")
_L4T_IMAGE = re.compile(r"/l4t-(?:jetpack|tensorrt|ml):r(\d+\.\d+)")
_RELEASE_IN_IMAGE = (
    (re.compile(r"/tensorrt:(\d\d\.\d\d)"), "NGC {}"),
    (_L4T_IMAGE, "L4T R{}"),
    (re.compile(r"\bcuda:(\d+\.\d+)"), "CUDA {} image"),
)
BACKEND_LABELS = {"tensorrt": "TensorRT", "onnxruntime": "ONNX Runtime"}


def version_key(version: str | None) -> tuple:
    """'10.2.0' -> (10, 2, 0), compared as numbers (so 8.6 < 10.0); no version sorts last."""
    if not version:
        return (float("inf"),)
    parts = []
    for part in version.replace("-", ".").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def target_sort_key(backend: str, platform: str | None, version: str | None, target_id: str) -> tuple:
    """Targets by backend (TensorRT, then ONNX Runtime, then others), TensorRT by platform (x86_64, Orin, local),
    then by version as numbers, then by id."""
    backend_rank = BACKEND_ORDER.index(backend) if backend in BACKEND_ORDER else len(BACKEND_ORDER)
    platform_rank = 0
    if backend == "tensorrt":
        platform_rank = PLATFORM_ORDER.index(platform) if platform in PLATFORM_ORDER else len(PLATFORM_ORDER)
    return backend_rank, platform_rank, version_key(version), target_id


def platform_group(backend: str, platform: str | None) -> str:
    """The heading a target sits under: TensorRT per platform, every ONNX Runtime target together."""
    if backend == "tensorrt":
        return f"TensorRT · {PLATFORM_LABELS.get(platform or '', platform or '?')}"
    return BACKEND_LABELS.get(backend, backend)


def release_of(target: Any) -> str | None:
    """The release a target ships in (e.g. "NGC 24.08", "L4T R36.4", "JetPack 6.1"): matrix.yaml's ``release``
    when the target has one, else what its base image names (the image decides what runs), else the JetPack its
    title names; None when none says."""
    release = getattr(target, "release", None)
    if isinstance(release, str) and release:
        return release
    image = getattr(target, "base_image", None) or ""
    jetpack = getattr(target, "jetpack", None)
    if jetpack and not _L4T_IMAGE.search(image):  # JetPack 7 runs SBSA images: the JetPack is the release, not NGC's
        return f"JetPack {jetpack}"
    from_image = next((label.format(found.group(1)) for pattern, label in _RELEASE_IN_IMAGE
                       if (found := pattern.search(image))), None)
    title = _RELEASE_IN_TITLE.search(getattr(target, "title", "") or "")
    return from_image or (f"JetPack {title.group(1)}" if title else None)


def jetpack_named(title: str | None) -> str | None:
    """The JetPack release a target's title names ("JetPack 6.1"), if any."""
    found = _RELEASE_IN_TITLE.search(title or "")
    return f"JetPack {found.group(1)}" if found else None


def order_by_release(columns: Iterable[Column]) -> list[Column]:
    """Columns by backend and platform, then by release (a release's columns together, releases in the order of
    their oldest version, then of the release's own number), then by version; a column without a release stands
    alone at its version."""
    columns = list(columns)
    oldest: dict[tuple, tuple] = {}
    for column in columns:
        oldest[column.release_group] = min(oldest.get(column.release_group, (float("inf"),)),
                                           version_key(column.version))
    return sorted(columns, key=lambda c: c.sort_key[:2] + (oldest[c.release_group], version_key(c.release or ""))
                  + c.sort_key[2:])


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
    and runs its records observed."""

    id: str  # the target id, or "<target> @ <host>[ · <arch>]" when its records come from several hosts or GPUs
    target: str
    host: str | None  # the host of the column's records, when they name one
    title: str
    backend: str
    platform: str | None
    available: bool
    reason: str | None
    nominal_version: str | None
    observed: dict[str, tuple[str, ...]]  # environment key -> distinct observed values
    env_mismatch: tuple[str, ...]
    runs: tuple[str, ...] = ()  # the runs (provenance.run) its records belong to, in first-seen order
    observed_dates: tuple[str, ...] = ()  # first and last day a record of the column was observed (started_at)
    in_matrix: bool = True
    release: str | None = None  # "JetPack 6.1", "NGC 24.08": release_of() its target
    arch: str | None = None  # the GPU architecture its records ran on (sm_86), when they say

    @property
    def backend_versions(self) -> tuple[str, ...]:
        return self.observed.get(f"{self.backend}_version", ())

    @property
    def version(self) -> str | None:
        """The version the column is ordered by: the nominal one, else the first observed one."""
        return self.nominal_version or next(iter(self.backend_versions), None)

    @property
    def host_label(self) -> str | None:
        """The host the header names: the records' host ('unknown-host' in a per-host column of records naming none)."""
        return None if self.host is None and self.id == self.target else host_text(self.host)

    @property
    def anchor(self) -> str:
        """The column's part of a cell's shareable anchor: the target, target@host, or target@host+arch."""
        return self.id.replace(" @ ", "@").replace(" · ", "+")

    @property
    def group(self) -> str:
        return platform_group(self.backend, self.platform)

    @property
    def release_group(self) -> tuple:
        """The columns shown together under one release heading: same backend, platform and release (a column
        without a release is a group of its own target)."""
        return (self.backend, self.platform, self.release or f"target {self.target}")

    @property
    def sort_key(self) -> tuple:
        return target_sort_key(self.backend, self.platform, self.version, self.target) + (
            host_text(self.host), self.arch or "")


def matrix_columns(targets: Mapping[str, Any], records: Iterable[dict[str, Any]]) -> list[Column]:
    """The targets of matrix.yaml and any target that only records name, ordered by platform, release, then version
    (ONNX Runtime apart); a target whose records come from several hosts (a record naming none counts as one) gets one
    column per host."""
    by_target: dict[str, dict[tuple[str | None, str | None], list[dict[str, Any]]]] = {}
    for record in records:
        where = (record_host(record), record_gpu_arch(record))
        by_target.setdefault(record["target"], {}).setdefault(where, []).append(record)
    columns = []
    for target_id in [*targets, *sorted(set(by_target) - set(targets))]:
        by_host = by_target.get(target_id, {(None, None): []})
        target = targets.get(target_id)
        if target is not None:
            declared = dict(title=target.title, backend=target.backend, platform=target.platform,
                            available=target.available, reason=target.reason, nominal_version=target.version,
                            release=release_of(target))
        else:
            declared = dict(title="(not in matrix.yaml)", backend=next(iter(by_host.values()))[0]["backend"],
                            platform=None, available=True, reason=None, nominal_version=None, in_matrix=False)
        several_archs = len({arch for _, arch in by_host}) > 1
        for host, arch in sorted(by_host, key=lambda where: (host_text(where[0]), where[1] or "")):
            found = by_host[(host, arch)]
            dates = sorted(r["started_at"][:10] for r in found if r.get("started_at"))
            column_id = target_id
            if len(by_host) > 1:
                column_id = f"{target_id} @ {host_text(host)}"
                column_id += f" · {arch or 'unknown-gpu'}" if several_archs else ""
            columns.append(Column(
                id=column_id, target=target_id, host=host, arch=arch, observed=observed_environment(found),
                env_mismatch=_distinct(r.get("env_mismatch") for r in found),
                runs=_distinct((r.get("provenance") or {}).get("run") for r in found),
                observed_dates=tuple(dict.fromkeys([dates[0], dates[-1]])) if dates else (), **declared,
            ))
    return order_by_release(_same_jetpack_same_release(columns))


def _same_jetpack_same_release(columns: list[Column]) -> list[Column]:
    """A Jetson column whose release comes from its title's JetPack (no image: a target that cannot exist) joins the
    release of another column of its platform whose title names the same JetPack and whose image names its release:
    the L4T release on JetPack 5 and 6, the NGC SBSA image on JetPack 7 (a DLA target that cannot exist beside its GPU
    target)."""
    imaged = {(c.backend, c.platform, jetpack_named(c.title)): c.release for c in columns
              if c.release and jetpack_named(c.title) and c.release != jetpack_named(c.title)}
    return [dataclasses.replace(c, release=imaged.get((c.backend, c.platform, c.release), c.release)) for c in columns]


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
    library_claim = row.claim_for(column.target, column.platform, column.arch)
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
    import pandas as pd

    records = list(records)
    by_key = {cell_key(r): r for r in records}
    conflicts = {(c.case, c.variant, c.target): c for c in find_conflicts(records)}
    data = [[make_cell(row, col, by_key.get((*row.key, col.target, col.host, col.arch)),
                       conflicts.get((*row.key, col.target)))
             for col in columns] for row in rows]
    index = pd.MultiIndex.from_tuples([row.key for row in rows], names=["case", "variant"])
    return pd.DataFrame(data, index=index, columns=[col.id for col in columns], dtype=object)


def outcome_table(grid: pd.DataFrame) -> pd.DataFrame:
    """The matrix as text: the label of every cell (outcome, 'claimed upstream: ...', 'not run', ...)."""
    import pandas as pd

    labels = [[cell.label for cell in cells] for cells in grid.to_numpy()]
    return pd.DataFrame(labels, index=grid.index, columns=grid.columns)


def cell_frame(grid: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: case, variant, target (the column id), kind, outcome, verdict, fallback_count (NaN: not
    observed)."""
    import pandas as pd

    long = pd.DataFrame(
        [(case, variant, target, cell.kind, cell.outcome, cell.verdict, cell.fallback_count)
         for (case, variant), cells in grid.iterrows() for target, cell in cells.items()],
        columns=["case", "variant", "target", "kind", "outcome", "verdict", "fallback_count"],
    )
    long["fallback_count"] = pd.to_numeric(long["fallback_count"])
    return long


# The matrix filter's word for a cell that was not observed (an observed cell goes by its outcome).
FILTER_KINDS = {CLAIMED: CLAIMED, NOT_RUN: NOT_RUN, TARGET_UNAVAILABLE: CANNOT_EXIST_HERE}


def filter_counts(grid: pd.DataFrame) -> dict[str, int]:
    """Cells per kind the matrix's outcome filter offers (an observed cell's outcome, else claimed, not-run or
    cannot-exist), counted here so the page's script need not read every cell when it loads."""
    counts: dict[str, int] = {}
    for cell in grid.to_numpy().ravel():
        kind = cell.outcome if cell.kind == OBSERVED else FILTER_KINDS[cell.kind]
        counts[kind] = counts.get(kind, 0) + 1
    return counts


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
