"""Render the compatibility matrix as one self-contained HTML file (inline CSS and JS, nothing fetched)."""
from __future__ import annotations

import datetime
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jinja2

from harness.store.merge import find_conflicts
from harness.store.results_file import read_results, record_host, variant_on_target
from harness.worker.record import OBSERVED_OUTCOMES, OUTCOMES
from reports.tables import (
    CLAIMED, OBSERVED, TARGET_UNAVAILABLE, VariantRow, cell_grid, host_text, matrix_columns, matrix_rows,
    rows_from_variants, target_summary,
)

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE = "report.html.j2"
OUTCOME_SYMBOLS = {
    "pass": "✓", "fallback": "↓", "mismatch": "≠", "fail": "✗",
    "unavailable": "⊘", "timeout": "◷", "crash": "‼", "infra-error": "⚠",
}
OUTCOME_MEANINGS = {
    "pass": "ran within tolerance, every expected-INT8 node in INT8",
    "fallback": "within tolerance, but expected-INT8 nodes ran wider",
    "mismatch": "ran, output outside the tolerance vs FP32",
    "fail": "the backend refused the model (parse/build/run error)",
    "unavailable": "cannot exist on this target (e.g. API missing)",
    "timeout": "killed at the harness's time limit",
    "crash": "the cell's process died (signal, abort)",
    "infra-error": "harness/environment failed: says nothing of the pattern",
}
STRENGTH_LABELS = {"issue-thread": "issue thread", "write-up-only": "write-up only", "documentation": "documentation"}


def cosine_text(value: float | None) -> str:
    """Cosine rounded down to 4 decimals, so 0.99996 never reads as a perfect 1.0000."""
    if value is None:
        return "–"
    return f"{math.floor(value * 1e4) / 1e4:.4f}"


def sqnr_text(value: float | None) -> str:
    """SQNR in dB; records store an exact match (infinite SQNR) as null."""
    return "∞ dB" if value is None else f"{value:.1f} dB"


def json_text(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)


def web_link(url: str | None) -> str | None:
    """``url`` when it is an http(s) link a user can follow, else None (rendered as plain text instead)."""
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else None


def template_environment() -> jinja2.Environment:
    """The Jinja environment of every report: autoescaped, strict about undefined names, with the shared filters."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(cosine=cosine_text, sqnr=sqnr_text, json_text=json_text, web_link=web_link,
                       strength=lambda s: STRENGTH_LABELS.get(s, s))
    env.globals.update(OUTCOMES=OUTCOMES, OBSERVED_OUTCOMES=OBSERVED_OUTCOMES, OUTCOME_SYMBOLS=OUTCOME_SYMBOLS,
                       OUTCOME_MEANINGS=OUTCOME_MEANINGS, OBSERVED=OBSERVED, CLAIMED=CLAIMED,
                       TARGET_UNAVAILABLE=TARGET_UNAVAILABLE)
    return env


def render_report(records: Iterable[dict[str, Any]], targets: Mapping[str, Any], claims_rows: Iterable[VariantRow],
                  out_path: Path | str, *, notes: Sequence[str] = (), skipped: Sequence[str] = ()) -> Path:
    """Write the matrix of ``records`` (columns: ``targets`` of load_matrix(); rows and upstream claims:
    ``claims_rows``) to ``out_path``. ``notes`` (e.g. the inputs) and ``skipped`` (results lines left out, from
    :func:`harness.store.results_file.read_results`) are shown under the title. Records from several hosts (their
    ``provenance.host``) split a target into one column per host; cells whose hosts disagree are conflicts."""
    records = list(records)
    rows = matrix_rows(claims_rows, records)
    columns = matrix_columns(targets, records)
    grid = cell_grid(records, rows, columns)
    groups = [
        (case_rows[0], [(row, [grid.at[row.key, col.id] for col in columns]) for row in case_rows])
        for case_rows in (list(g) for _, g in itertools.groupby(rows, key=lambda row: row.case))
    ]
    hosts_by_cell: dict[tuple[str, str, str], set[str | None]] = {}
    for record in records:
        hosts_by_cell.setdefault(variant_on_target(record), set()).add(record_host(record))
    hosts = set().union(*hosts_by_cell.values())
    html = template_environment().get_template(TEMPLATE).render(
        columns=columns, groups=groups, summary=target_summary(grid), notes=list(notes), skipped=list(skipped),
        record_count=len(records), row_count=len(rows), conflicts=find_conflicts(records),
        hosts=sorted(map(host_text, hosts)) if hosts - {None} else [],
        shared_cells=sum(len(cell_hosts) > 1 for cell_hosts in hosts_by_cell.values()),
        generated_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path


def build_report(results_paths: Iterable[Path | str], out_path: Path | str,
                 matrix_path: Path | str | None = None) -> Path:
    """Read results files, load the targets of matrix.yaml and the claims of the case library, write the report."""
    import cases  # noqa: F401  (importing the package registers the case library)
    from cases.model import iter_variants
    from harness.matrix import DEFAULT_MATRIX, load_matrix

    results_paths = [Path(p) for p in results_paths]
    results = read_results(results_paths)
    for message in results.skipped:
        print(f"warning: {message}; the cell it held has no record", file=sys.stderr)
    notes = [f"Results read from {', '.join(str(p) for p in results_paths)} (the last record of a cell wins)."]
    targets = load_matrix(matrix_path or DEFAULT_MATRIX)
    return render_report(results.records, targets, rows_from_variants(iter_variants()), out_path,
                         notes=notes, skipped=results.skipped)
