"""Write a scan's results: ``scan.json`` (everything the page shows, for CI and other tools) and ``scan.html``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reports.scan_page import render_scan_page

JSON_NAME, HTML_NAME = "scan.json", "scan.html"


def write_results(data: dict[str, Any], out_dir: Path | str) -> tuple[Path, Path]:
    """Write a scan (``ScanResult.to_dict()``) to ``out_dir/scan.json`` and ``out_dir/scan.html``; return their
    paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / JSON_NAME
    json_path.write_text(json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n")
    return json_path, render_scan_page(data, out_dir / HTML_NAME)
