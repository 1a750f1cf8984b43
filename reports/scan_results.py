"""A scan's results files, written by `scan` and by `diagnose --model`: scan.json (everything the page shows, for CI
and other tools) and scan.html, rendered on a second core while the JSON is written."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JSON_NAME, HTML_NAME = "scan.json", "scan.html"


def scan_data(result) -> dict[str, Any]:
    """What scan.json holds and the page shows: the scan (``ScanResult.to_dict()``) and its exit status."""
    return {**result.to_dict(), "exit_code": result.exit_status}


def write_results(data: dict[str, Any], out_dir: Path | str) -> tuple[Path, Path]:
    """Write a scan (:func:`scan_data`) to ``out_dir/scan.json`` (everything the page shows, for CI and other
    tools) and ``out_dir/scan.html``; return their paths."""
    from harness.beside import Beside

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / JSON_NAME, out_dir / HTML_NAME
    page = Beside(_render_page, data, html_path)  # on a second core while this one writes the JSON
    try:
        # no indent: json's C encoder then writes it (with an indent, its pure-Python one: seconds on a large model's);
        # no check for cycles (a fifth of its time): scan_data builds a tree of plain dicts and lists
        json_path.write_text(json.dumps(data, allow_nan=False, check_circular=False) + "\n")
    finally:
        page.wait()
    return json_path, html_path


def _render_page(data: dict[str, Any], path: Path) -> None:
    from reports.scan_page import render_scan_page  # Jinja2's import too: in the process that renders

    render_scan_page(data, path)
