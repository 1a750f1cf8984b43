"""Render a scan (the JSON a ``python -m harness scan`` writes) as one self-contained HTML page in the look of the
matrix report: verdict per target, the model, and each finding with its occurrences, evidence and workarounds."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import judgement as j
from reports.html import template_environment

TEMPLATE = "scan.html.j2"


def render_scan_page(scan: dict[str, Any], out_path: Path | str) -> Path:
    """Write the page of ``scan`` (the dict of :meth:`harness.scan.scanner.ScanResult.to_dict`) to ``out_path``."""
    env = template_environment()
    env.filters["json_text"] = lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False)  # a variant's knobs
    env.globals.update(VERDICT_SYMBOLS=j.SCAN_VERDICT_SYMBOLS, VERDICT_MEANINGS=j.SCAN_VERDICT_MEANINGS,
                       VERDICT_COLOURS=j.SCAN_VERDICT_COLOURS, WORKAROUND_VERDICTS=j.SCAN_WORKAROUND_VERDICTS)
    html = env.get_template(TEMPLATE).render(scan=scan, model=scan["model"])
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path
