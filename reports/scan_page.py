"""Render a scan (the JSON a ``python -m harness scan`` writes) as one self-contained HTML page in the look of the
matrix report: verdict per target, the model, and each finding with its occurrences, evidence and workarounds."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reports.html import template_environment

TEMPLATE = "scan.html.j2"
VERDICT_SYMBOLS = {"blocked": "✗", "fallback": "↓", "unavailable": "⊘", "unverified": "?", "likely": "✓",
                   "verified": "✔", "clear": "○"}
VERDICT_MEANINGS = {
    "blocked": "observed or claimed to fail, mismatch, crash or hang: expect no INT8 engine",
    "fallback": "builds, but nodes expected in INT8 run in another precision",
    "unavailable": "the target cannot run this at all (the reason is given)",
    "unverified": "no observation and no upstream claim either way",
    "likely": "passed on the library's minimal graph, or claimed upstream to pass",
    "verified": "your own layer, cut out of the model, passed here",
    "clear": "no known failure pattern of the library in the model",
}
# The outcome colour each verdict borrows from the matrix report (layout.html.j2).
VERDICT_COLOURS = {"blocked": "fail", "fallback": "fallback", "unavailable": "unavailable", "unverified": "infra-error",
                   "likely": "pass", "verified": "pass", "clear": "pass"}


def render_scan_page(scan: dict[str, Any], out_path: Path | str) -> Path:
    """Write the page of ``scan`` (the dict of :meth:`harness.scan.scanner.ScanResult.to_dict`) to ``out_path``."""
    env = template_environment()
    env.filters["json_text"] = lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False)  # a variant's knobs
    env.globals.update(VERDICT_SYMBOLS=VERDICT_SYMBOLS, VERDICT_MEANINGS=VERDICT_MEANINGS,
                       VERDICT_COLOURS=VERDICT_COLOURS)
    html = env.get_template(TEMPLATE).render(scan=scan, model=scan["model"])
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path
