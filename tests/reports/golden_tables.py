"""What the matrix report says about a fixed results file, as plain data, and the golden copy of it.

The fixture ``golden/ort-cpu-run.jsonl`` is a real run (ONNX Runtime on CPU: control-qdq-conv-relu, s1-conv-silu and
s4-bn-mish; trt92-orin, which matrix.yaml marks unavailable, on s4-bn-mish); ``golden/cases/index.json`` is the case
index of the library it ran (the report reads rows and claims from it, never from the case library's code). ``golden/matrix-tables.json`` is what
`python -m harness report` said about it: column ids, row keys, each cell's kind and text, and the per-target counts
of observed outcomes. Only the rows of the cases the fixture ran are kept, so adding a case to the library does not
change the golden; timestamps and markup are not compared.

After a change to the page made on purpose, regenerate the golden and review its diff:

    PYTHONPATH=$PWD python -m tests.reports.golden_tables
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.reports.conftest import parse_html

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RESULTS = HERE / "golden" / "ort-cpu-run.jsonl"
CASES = HERE / "golden" / "cases"
GOLDEN = HERE / "golden" / "matrix-tables.json"
# Summary columns that count cells of the whole case library, not of the fixture's cases.
LIBRARY_WIDE_COUNTS = ("claimed, not run", "not run")


def render(out: Path) -> str:
    """The report on RESULTS, written by the real command."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "harness", "report", "--results", str(RESULTS), "--cases", str(CASES),
                    "--out", str(out)],
                   cwd=REPO, env=env, check=True, capture_output=True, text=True)
    return out.read_text(encoding="utf-8")


def cell_kind(td) -> str:
    """What a matrix cell is, from its class: an observed outcome (o-<outcome>), a claim, no record, or no target."""
    name = td.attrs["class"].split()[0]
    return name[2:] if name.startswith("o-") else {"cl": "claimed", "nr": "not-run", "na": "cannot-exist"}[name]


def report_tables(html: str, cases: set[str]) -> dict[str, Any]:
    """Columns, rows of ``cases`` with each cell's kind and text, and observed-outcome counts per column."""
    page = parse_html(html)
    matrix = page.find("table", cls="matrix")
    columns = [th.attrs["data-target"] for th in matrix.find_all("th", cls="colhead")]
    rows = {}
    for tr in matrix.find_all("tr"):
        if tr.attrs.get("data-case") not in cases:
            continue
        cells = tr.find_all("td")
        assert len(cells) == len(columns), f"row {tr.attrs['data-case']}/{tr.attrs['data-variant']}: cells vs columns"
        rows[f"{tr.attrs['data-case']}/{tr.attrs['data-variant']}"] = {
            column: f"{cell_kind(td)}: {(td.find_all('summary') or [td])[0].text}" for column, td in zip(columns, cells)
        }
    summary = {
        tr.attrs["data-target"]: {td.attrs["data-count"]: int(td.text) for td in tr.find_all("td")
                                  if td.attrs["data-count"] not in LIBRARY_WIDE_COUNTS}
        for tr in page.find("table", cls="summary").find_all("tr") if "data-target" in tr.attrs
    }
    return {"columns": columns, "rows": rows, "summary": summary}


def fixture_cases() -> set[str]:
    return {json.loads(line)["case"] for line in RESULTS.read_text().splitlines() if line.strip()}


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tables = report_tables(render(Path(tmp) / "index.html"), fixture_cases())
    GOLDEN.write_text(json.dumps(tables, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(REPO)}: {len(tables['rows'])} rows x {len(tables['columns'])} columns")


if __name__ == "__main__":
    main()
