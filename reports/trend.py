"""Render the nightly history as one self-contained HTML page: changes of each series' latest run (each cell against
its last comparable outcome), trend strips lined up by date, environment changes, and what was carried over."""
from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
from html import escape
from pathlib import Path
from typing import Any, Mapping, Sequence

from markupsafe import Markup

from harness.store.compare import CHANGE_KINDS, CellChange, Comparison, not_compared_groups, not_compared_text
from harness.store.history import (
    DEFAULT_FLAKY_FLIPS,
    DEFAULT_FLAKY_WINDOW,
    DEFAULT_LAST,
    CellOutcome,
    EnvChange,
    HistoryStore,
    Series,
)
from reports.case_index import CaseIndexError, rows_from_index
from reports.html import OUTCOME_SYMBOLS, template_environment
from reports.planning import pattern_sort_key
from reports.tables import target_sort_key

TEMPLATE = "trend.html.j2"
# The change tables of a series, in the order a reader needs them: (kind, heading, what it means).
CHANGE_SECTIONS = (
    ("regression", "Regressions", "the outcome got worse than its last comparable one: pass to fallback or a "
     "failure, fallback to a failure (nights of infra-error, timeout or no record in between are skipped)"),
    ("progression", "Progressions", "the outcome got better: a failure to fallback or pass, fallback to pass"),
    ("flaky", "Flaky", "the outcome changed band more often than the flaky limit in the last runs: not counted as "
     "a regression or a progression"),
    ("changed", "Other changes", "same outcome band, other evidence (failure category, fallback nodes, fail/crash)"),
    ("new", "New cells", "no record in any earlier run of the series"),
    ("gone", "Gone cells", "a record in the previous run, none in the latest"),
)
MARKED_KINDS = ("regression", "progression", "flaky")  # a trend row says when its cell's last change is one of these


def square_title(date: str, run: str | None, cell: CellOutcome | None) -> str:
    """What one square of a trend strip says on hover: date, run, outcome and its evidence, where it was carried
    from."""
    if run is None:
        return f"{date}: no run of this series"
    if cell is None:
        return f"{date} ({run}): no record"
    evidence = [cell.category] if cell.category else []
    if cell.fallback_count:
        evidence.append(f"{cell.fallback_count} fallback node{'s' if cell.fallback_count != 1 else ''}")
    text = f"{date} ({run}): {cell.outcome}" + (f" ({' / '.join(evidence)})" if evidence else "")
    return text + (f", carried over from {cell.carried_from}" if cell.carried_from else "")


def strip_html(dates: Sequence[str], night_runs: Mapping[str, str], latest_run: str,
               cells: Mapping[str, Mapping[tuple[str, str], CellOutcome]], cell: tuple[str, str],
               night_env: Mapping[str, str]) -> Markup:
    """One cell's strip in one series: a square per night (written here rather than in the template: a year's page
    holds tens of thousands of them)."""
    parts = []
    for date in dates:
        run = night_runs.get(date)
        found = cells[run].get(cell) if run else None
        if found is not None:
            classes, outcome, symbol = f"sq o-{found.outcome}", found.outcome, OUTCOME_SYMBOLS[found.outcome]
            classes += " carried" if found.carried_from else ""
        else:
            classes, outcome, symbol = ("sq none", "none", "") if run else ("sq norun", "no-run", "")
        title = square_title(date, run, found)
        if date in night_env:
            classes += " env"
            title += f"; environment changed: {night_env[date]}"
        classes += " latest" if run is not None and run == latest_run else ""
        parts.append(f'<i class="{classes}" data-date="{date}" data-outcome="{outcome}" title="{escape(title)}">'
                     f"{symbol}</i>")
    return Markup('<span class="strip">' + "".join(parts) + "</span>")  # noqa: S704 (every value escaped above)


@dataclasses.dataclass(frozen=True)
class SeriesView:
    """One series as the page shows it: its strips, its latest change, its environment changes, its carry-overs."""

    series: Series
    strips: dict[tuple[str, str], Markup]
    change: Comparison | None
    last_changes: dict[tuple[str, str], CellChange]
    env_changes: list[EnvChange]
    night_env: dict[str, str]  # date -> environment change that night (shown in the date axis)
    carried: dict[str, list[str]]  # run the latest run carried records over from -> its cells ("case/variant")
    latest_cells: int

    @property
    def name(self) -> str:
        return self.series.name

    @property
    def label(self) -> str:
        return f"{self.series.target} @ {self.series.host}" + (f" ({self.series.arch})" if self.series.arch else "")

    @property
    def not_compared(self) -> list[tuple[int, str, list[CellChange]]]:
        """One line per target and night: (count, what the records were, the cells)."""
        if self.change is None:
            return []
        return [(len(changes), not_compared_text(changes), changes)
                for changes in not_compared_groups(self.change).values()]


def series_view(store: HistoryStore, series: Series, dates: Sequence[str], change: Comparison | None) -> SeriesView:
    """The strips of ``series`` over ``dates`` (its latest run of each night), its latest change and carry-overs."""
    wanted = set(dates)
    nights = {date: runs for date, runs in series.nights() if date in wanted}  # a date's last night wins
    nights[series.latest.date] = series.nights()[-1][1]
    outcomes = store.outcomes_of(series, dict.fromkeys(run.run for runs in nights.values() for run in runs))
    # a night of several machines or shards: its cells together, the newest record of a cell speaking
    night_runs = {date: runs[-1].run for date, runs in nights.items() if date in wanted}
    cells_by_run = {runs[-1].run: {cell: found for run in runs for cell, found in outcomes[run.run].items()}
                    for runs in nights.values()}
    env_changes = series.env_changes()
    night_env = {env.date: env.text for env in env_changes}
    cells = sorted({cell for run in night_runs.values() for cell in cells_by_run[run]})
    strips = {cell: strip_html(dates, night_runs, series.latest.run, cells_by_run, cell, night_env) for cell in cells}
    last_changes = {(c.case, c.variant): c for c in (change.changes if change else ())}
    latest = cells_by_run[series.latest.run]
    carried: dict[str, list[str]] = {}
    for (case, variant), found in sorted(latest.items()):
        if found.carried_from:
            carried.setdefault(found.carried_from, []).append(f"{case}/{variant}")
    return SeriesView(series, strips, change, last_changes, env_changes, night_env, carried, len(latest))


def last_change_marks(views: Sequence[SeriesView], cell: tuple[str, str]) -> dict[str, list[str]]:
    """Per marked kind (regression, progression, flaky), the series whose latest change of ``cell`` is of it."""
    marks: dict[str, list[str]] = {}
    for view in views:
        change = view.last_changes.get(cell)
        if change is not None and change.kind in MARKED_KINDS:
            marks.setdefault(change.kind, []).append(view.label)
    return marks


def series_order(series: Series, targets: Mapping[str, Any]) -> tuple:
    """Series by platform and version of their target (as the report's columns), then host."""
    target = targets.get(series.target)
    if target is not None:
        key = target_sort_key(target.backend, target.platform, target.version, series.target)
    else:  # a target matrix.yaml does not name: after the known ones, by the version it observed
        key = (9, 9, target_sort_key("", None, series.latest.backend_version, series.target)[2], series.target)
    return key, series.host


def _case_patterns(store: HistoryStore) -> dict[str, tuple[str, str]]:
    """case -> (pattern, title), from the case index the newest run kept (empty without one)."""
    text = store.cases_index()
    if not text:
        return {}
    try:
        rows = rows_from_index(json.loads(text), "cases-index.json")
    except (CaseIndexError, json.JSONDecodeError):
        return {}
    return {row.case: (row.pattern, row.case_title) for row in rows}


def latest_changes(store: HistoryStore, series: Sequence[Series], *, flaky_window: int = DEFAULT_FLAKY_WINDOW,
                   flaky_flips: int = DEFAULT_FLAKY_FLIPS) -> dict[str, Comparison | None]:
    """Series name -> how its latest run compares (None: a single run)."""
    return {s.name: store.latest_change(s, flaky_window=flaky_window, flaky_flips=flaky_flips) for s in series}


def render_trend(store: HistoryStore, out_path: Path | str, *, targets: Mapping[str, Any] | None = None,
                 last: int = DEFAULT_LAST, flaky_window: int = DEFAULT_FLAKY_WINDOW,
                 flaky_flips: int = DEFAULT_FLAKY_FLIPS, changes: Mapping[str, Comparison | None] | None = None,
                 notes: Sequence[str] = (), index_href: str | None = None, incomplete: Sequence[str] = ()) -> Path:
    """Write the trend and regressions page of the history ``store`` (strips over its last ``last`` nights, series
    ordered by the platform and version of their ``targets``) to ``out_path``. ``changes`` (from
    :func:`latest_changes`, computed here when not given) are each series' latest changes; ``notes`` are shown under
    the title, the store's unreadable files and lines as warnings, ``incomplete`` (why the latest comparison is not
    whole: damaged input, gone cells) first of all; ``index_href`` links the compatibility matrix."""
    targets = targets or {}
    runs = store.runs()
    all_series = sorted(store.series(), key=lambda s: series_order(s, targets))
    if changes is None:
        changes = latest_changes(store, all_series, flaky_window=flaky_window, flaky_flips=flaky_flips)
    dates = sorted({run.date for series in all_series for run in series.runs})[-last:]
    views = [series_view(store, series, dates, changes[series.name]) for series in all_series]
    patterns = _case_patterns(store)
    cells = sorted({cell for view in views for cell in view.strips},
                   key=lambda cell: (pattern_sort_key(patterns.get(cell[0], ("~", ""))[0]), cell))
    groups = [(case, patterns.get(case), [(variant, last_change_marks(views, (case, variant))) for _, variant in pairs])
              for case, pairs in itertools.groupby(cells, key=lambda cell: cell[0])]
    html = template_environment().get_template(TEMPLATE).render(
        root=str(store.root), runs=runs, hosts=sorted({run.host for run in runs}),
        first_started=min((r.started_at for r in runs), default=None),
        last_started=max((r.started_at for r in runs), default=None), last=last, dates=dates,
        flaky_window=flaky_window, flaky_flips=flaky_flips, views=views, groups=groups,
        change_sections=CHANGE_SECTIONS, change_kinds=CHANGE_KINDS, marked_kinds=MARKED_KINDS, notes=list(notes),
        problems=store.problems(), index_href=index_href, incomplete=list(incomplete),
        generated_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path
