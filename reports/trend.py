"""Render the nightly history as one self-contained HTML page: changes since the previous run, trend strips, and
what the latest runs carried over instead of rerunning."""
from __future__ import annotations

import dataclasses
import datetime
import itertools
from pathlib import Path
from typing import Any, Sequence

from harness.store.compare import CHANGE_KINDS, CellChange, Comparison
from harness.store.history import DEFAULT_LAST, History, Series
from harness.store.run_dirs import LoadedRun
from reports.html import template_environment
from reports.tables import carried_over_from

TEMPLATE = "trend.html.j2"
# The change tables of a series, in the order a reader needs them: (kind, heading, what it means).
CHANGE_SECTIONS = (
    ("regression", "Regressions", "the outcome got worse: pass to fallback or a failure, fallback to a failure"),
    ("progression", "Progressions", "the outcome got better: a failure to fallback or pass, fallback to pass"),
    ("changed", "Other changes", "same outcome band, other evidence (failure category, fallback nodes, fail/crash)"),
    ("not-compared", "Not compared",
     "infra-error, timeout or unavailable on either side: says nothing about the pattern, so never counted as a "
     "regression or a progression"),
    ("new", "New cells", "no record in the previous run"),
    ("gone", "Gone cells", "no record in the latest run"),
)
MARKED_KINDS = ("regression", "progression")  # a trend row says when its cell's last change is one of these


def square_title(run_id: str, record: dict[str, Any] | None) -> str:
    """What one square of a trend strip says on hover: run, outcome and its evidence, where it was carried from."""
    if record is None:
        return f"{run_id}: no record"
    evidence = []
    if record["failure"]:
        evidence.append(record["failure"]["category"])
    if record["fallback_nodes"]:
        count = len(record["fallback_nodes"])
        evidence.append(f"{count} fallback node{'s' if count != 1 else ''}")
    text = f"{run_id}: {record['outcome']}" + (f" ({' / '.join(evidence)})" if evidence else "")
    source = carried_over_from(record)
    return text + (f", carried over from {source}" if source else "")


@dataclasses.dataclass(frozen=True)
class Square:
    """One run's record of a cell in a trend strip (None: that run has no record of the cell)."""

    run: str
    record: dict[str, Any] | None
    latest: bool

    @property
    def outcome(self) -> str | None:
        return self.record["outcome"] if self.record else None

    @property
    def carried_over_from(self) -> str | None:
        return carried_over_from(self.record)

    @property
    def title(self) -> str:
        return square_title(self.run, self.record)


@dataclasses.dataclass(frozen=True)
class SeriesView:
    """One series as the page shows it: its trend strips, its last change, what its latest run carried over."""

    series: Series
    runs: list[LoadedRun]  # the last N, oldest first
    strips: dict[tuple[str, str], list[Square]]
    change: Comparison | None
    last_changes: dict[tuple[str, str], CellChange]  # (case, variant) -> how the last two runs differ
    carried: dict[str, list[str]]  # run the latest run carried records over from -> its cells ("case/variant")
    latest_cells: int

    @property
    def name(self) -> str:
        return self.series.name

    @property
    def label(self) -> str:
        return f"{self.series.target} @ {self.series.host}"


def series_view(series: Series, last: int) -> SeriesView:
    """The trend strips of the last ``last`` runs of ``series``, its last change and its carried-over cells."""
    runs, strips = series.strip(last)
    squares = {
        cell: [Square(run.id, record, latest=index == len(runs) - 1) for index, (run, record) in
               enumerate(zip(runs, records))]
        for cell, records in strips.items()
    }
    change = series.last_change()
    last_changes = {(c.case, c.variant): c for c in (change.changes if change else ())}
    latest = series.records_of(series.runs[-1])
    carried: dict[str, list[str]] = {}
    for (case, variant), record in sorted(latest.items()):
        source = carried_over_from(record)
        if source:
            carried.setdefault(source, []).append(f"{case}/{variant}")
    return SeriesView(series, runs, squares, change, last_changes, carried, len(latest))


def last_change_marks(views: Sequence[SeriesView], cell: tuple[str, str]) -> dict[str, list[str]]:
    """Per marked kind (regression, progression), the series whose last change of ``cell`` is of that kind."""
    marks: dict[str, list[str]] = {}
    for view in views:
        change = view.last_changes.get(cell)
        if change is not None and change.kind in MARKED_KINDS:
            marks.setdefault(change.kind, []).append(view.label)
    return marks


def render_trend(history: History, out_path: Path | str, *, last: int = DEFAULT_LAST,
                 notes: Sequence[str] = ()) -> Path:
    """Write the trend and regressions page of ``history`` (strips of the last ``last`` runs of every series) to
    ``out_path``; ``notes`` are shown under the title, the history's unreadable files and lines as warnings."""
    views = [series_view(series, last) for series in history.series()]
    cells = sorted({cell for view in views for cell in view.strips})
    groups = [(case, [(variant, last_change_marks(views, (case, variant))) for _, variant in pairs])
              for case, pairs in itertools.groupby(cells, key=lambda cell: cell[0])]
    started = [run.started_at for run in history.runs if run.started_at]
    html = template_environment().get_template(TEMPLATE).render(
        root=str(history.root), runs=history.runs, hosts=sorted({run.host for run in history.runs}),
        first_started=min(started, default=None), last_started=max(started, default=None), last=last,
        views=views, groups=groups, change_sections=CHANGE_SECTIONS, change_kinds=CHANGE_KINDS,
        marked_kinds=MARKED_KINDS, notes=list(notes), problems=history.problems(),
        generated_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path
