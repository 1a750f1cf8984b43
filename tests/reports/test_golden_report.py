"""No unintended change in what the matrix report says: the report on a fixed real run matches the golden tables.

A page changed on purpose: regenerate with `PYTHONPATH=$PWD python -m tests.reports.golden_tables` and review the
diff of tests/reports/golden/matrix-tables.json.
"""
import json

from tests.reports.golden_tables import GOLDEN, fixture_cases, render, report_tables


def test_report_on_the_fixed_run_says_what_the_golden_says(tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    tables = report_tables(render(tmp_path / "index.html"), fixture_cases())
    assert tables["columns"] == golden["columns"]
    assert list(tables["rows"]) == list(golden["rows"])
    for row, cells in golden["rows"].items():
        assert tables["rows"][row] == cells, f"row {row}"
    assert tables["summary"] == golden["summary"]


def test_the_golden_covers_observed_claimed_unavailable_and_empty_cells():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    kinds = {text.split(":")[0] for cells in golden["rows"].values() for text in cells.values()}
    assert {"pass", "fallback", "unavailable", "claimed", "cannot-exist", "not-run"} <= kinds
