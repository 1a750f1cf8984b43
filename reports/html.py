"""Render the compatibility matrix as one self-contained HTML file (inline CSS and JS, nothing fetched)."""
from __future__ import annotations

import datetime
import itertools
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jinja2
from markupsafe import Markup

from harness import judgement
from harness.judgement import (
    ATTENTION, EVIDENCE_OUTCOMES, MEANINGS, PLANNING_LABELS, PLANNING_MEANINGS, PLANNING_SYMBOLS, PLANNING_VERDICTS,
    STRENGTH_LABELS, strength_label,
)
from harness.store.merge import find_conflicts
from harness.store.results_file import read_results, record_host, variant_on_target
from harness.worker.record import OUTCOMES
from reports.case_index import VariantRow, read_index
from reports.engine_agreement import engine_agreement
from reports.columns import observed_architectures, plan_lines
from reports.panels import PanelData, packed
from reports.planning import build_plan, nodes_text, pattern_sort_key, precision_pairs, unverified_nodes
from reports.templating import OUTCOME_SYMBOLS, TEMPLATE_DIR, page_environment
from reports.tables import (
    BACKEND_LABELS, CLAIMED, FILTER_KINDS, OBSERVED, Cell, Column, cell_grid, filter_counts,
    host_text, matrix_columns, matrix_rows, target_summary,
)

TEMPLATE = "report.html.j2"
OUTCOME_MEANINGS = {outcome: m.text for outcome, m in MEANINGS.items()}
# How a variant's role reads: labels in neutral ink, so "the failing form" never looks like a "fail" outcome.
ROLE_LABELS = dict(zip(judgement.VARIANT_ROLES, ("failing form, as reported", judgement.WORKAROUND_ROLE, "sweep point",
                                                  judgement.CONTROL_ROLE)))
SHORT_ROLES = dict(zip(judgement.VARIANT_ROLES, ("as reported", *judgement.VARIANT_ROLES[1:])))


def cosine_text(value: float | None) -> str:
    """Cosine rounded down to 4 decimals, so 0.99996 never reads as a perfect 1.0000."""
    if value is None:
        return "–"
    return f"{math.floor(value * 1e4) / 1e4:.4f}"


def sqnr_text(value: float | None) -> str:
    """SQNR in dB; records store an exact match (infinite SQNR) as null."""
    return "∞ dB" if value is None else f"{value:.1f} dB"


def short_number(value: float | None) -> str:
    """A measured number to 4 significant digits, for a short panel (the drawer shows it in full)."""
    return "–" if value is None else f"{value:.4g}"


def major_minor(version: str) -> str:
    """'10.2.0' -> '10.2': the version a filter offers."""
    return ".".join(version.split(".")[:2])


def page_script(name: str) -> Markup:
    """A page's own script from the templates folder, written verbatim into its <script> element (it is code of this
    project, not data: records reach the script only through the escaped evidence JSON)."""
    return Markup((TEMPLATE_DIR / name).read_text(encoding="utf-8"))  # noqa: S704


def template_environment() -> jinja2.Environment:
    """The Jinja environment of the matrix report and the trend page: every page's (:func:`reports.templating.
    page_environment`) with the report's filters and names."""
    env = page_environment()
    env.filters.update(cosine=cosine_text, sqnr=sqnr_text, truncate_version=major_minor, short_number=short_number,
                       strength=strength_label)
    env.globals.update(FILTER_KINDS=FILTER_KINDS, precision_pairs=precision_pairs,
                       unverified_nodes=unverified_nodes, nodes_text=nodes_text,
                       OUTCOMES=OUTCOMES, MEANINGS=MEANINGS, ATTENTION=ATTENTION,
                       OUTCOME_MEANINGS=OUTCOME_MEANINGS, OBSERVED=OBSERVED, CLAIMED=CLAIMED,
                       VERDICT_KINDS=PLANNING_VERDICTS,
                       VERDICT_LABELS=PLANNING_LABELS, VERDICT_MEANINGS=PLANNING_MEANINGS,
                       VERDICT_SYMBOLS=PLANNING_SYMBOLS, BACKEND_LABELS=BACKEND_LABELS, ROLE_LABELS=ROLE_LABELS,
                       SHORT_ROLES=SHORT_ROLES)
    return env


def render_report(records: Iterable[dict[str, Any]], targets: Mapping[str, Any], rows: Iterable[VariantRow],
                  out_path: Path | str, *, notes: Sequence[str] = (), skipped: Sequence[str] = (),
                  trend_href: str | None = None, incomplete: Sequence[str] = (),
                  engine_agreement: Sequence[Any] = ()) -> Path:
    """Write the matrix of ``records`` (columns: ``targets`` of load_matrix(); rows, upstream claims, remedies and
    backend notes: ``rows`` of the case index) to ``out_path``. ``notes`` (e.g. the inputs) and ``skipped`` (results
    lines left out) are shown under the title, ``incomplete`` (why the matrix is not whole: damaged or lost input)
    above them; ``trend_href`` links the trend page and each cell's history there; ``engine_agreement`` (of
    reports.engine_agreement) the predicted engine against the observed one per target.
    Records from several hosts (their ``provenance.host``) split a target into one column per host; cells whose
    hosts disagree are conflicts."""
    records = list(records)
    rows = matrix_rows(rows, records)
    columns = matrix_columns(targets, records)
    grid = cell_grid(records, rows, columns)
    panels = PanelData()  # in the page's cell order: the script numbers the observed cells as it finds them
    for row in rows:
        for column in columns:
            cell = grid.at[row.key, column.id]
            if cell.kind == OBSERVED:
                panels.add(cell.record, _panel_extra(row, column, cell))
    groups = [
        (case_rows[0], [(row, [grid.at[row.key, col.id] for col in columns]) for row in case_rows])
        for case_rows in (list(g) for _, g in itertools.groupby(rows, key=lambda row: row.case))
    ]
    hosts_by_cell: dict[tuple[str, str, str], set[str | None]] = {}
    for record in records:
        hosts_by_cell.setdefault(variant_on_target(record), set()).add(record_host(record))
    hosts = set().union(*hosts_by_cell.values())
    document = panels.document() | {"meanings": OUTCOME_MEANINGS, "symbols": OUTCOME_SYMBOLS,
                                    "strengths": STRENGTH_LABELS, "evidence": EVIDENCE_OUTCOMES, "trend": trend_href}
    plan = build_plan(rows, columns, records)
    html = template_environment().get_template(TEMPLATE).render(
        columns=columns, groups=groups, summary=target_summary(grid), kind_counts=filter_counts(grid),
        notes=list(notes), skipped=list(skipped),
        incomplete=list(incomplete),
        record_count=len(records), row_count=len(rows), conflicts=find_conflicts(records),
        hosts=sorted(map(host_text, hosts)) if hosts - {None} else [],
        shared_cells=sum(len(cell_hosts) > 1 for cell_hosts in hosts_by_cell.values()),
        plan=plan, plan_lines=plan_lines(plan.targets, columns, {r["target"] for r in records},
                                         {t for row in plan.rows for r in row.recommendations
                                          for t in (*r.targets, *r.claimed)}),
        plan_architectures=observed_architectures(columns),
        panel_data=packed(document),
        trend_href=trend_href, page_script=page_script("report.js"), patterns=sorted({row.pattern for row in rows}, key=pattern_sort_key),
        engine_agreement=list(engine_agreement),
        generated_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path


def _panel_extra(row: VariantRow, column: Column, cell: Cell) -> dict[str, Any]:
    """What the page knows about an observed cell beyond its record: the upstream claim it is judged against when
    the record carries none, the backend's note, the hosts' conflict."""
    extra: dict[str, Any] = {"note": row.note_for(column.backend)}
    if cell.record["expectation"] is None and cell.claim is not None:
        extra.update(claim=cell.claim, agrees=cell.agrees)
    if cell.conflict:
        extra["conflict"] = cell.conflict.outcomes
    return extra


def build_report(results_paths: Iterable[Path | str], out_path: Path | str, cases_dir: Path | str,
                 matrix_path: Path | str | None = None, trend_href: str | None = None) -> Path:
    """Read results files, the case index of ``cases_dir`` and the targets of matrix.yaml; write the report."""
    from harness.matrix import DEFAULT_MATRIX, load_matrix

    results_paths = [Path(p) for p in results_paths]
    results = read_results(results_paths)
    for message in results.skipped:
        print(f"warning: {message}; the cell it held has no record", file=sys.stderr)
    notes = [f"Results read from {', '.join(str(p) for p in results_paths)} (the last record of a cell wins); "
             f"cases from {cases_dir}."]
    targets = load_matrix(matrix_path or DEFAULT_MATRIX)
    return render_report(results.records, targets, read_index(cases_dir), out_path, notes=notes,
                         skipped=results.skipped, trend_href=trend_href,
                         engine_agreement=engine_agreement(results.records, targets, cases_dir))
