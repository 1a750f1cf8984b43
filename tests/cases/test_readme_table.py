"""The README's case table stays in step with the case library: one row per registered case, nothing else."""
from __future__ import annotations

import pathlib
import re

import pytest

from cases import all_cases

README = pathlib.Path(__file__).resolve().parents[2] / "docs" / "cases.md"  # the case catalogue
SECTION = "## The case library"
HEADER = "| pattern | case | what it is | variants | upstream |"
LINK = re.compile(r"\]\((https://[^)\s]+)\)")


def table_rows() -> dict[str, dict]:
    """The case table of README.md's case-library section, keyed by case id."""
    text = README.read_text()
    assert SECTION in text, f"README.md has no '{SECTION}' section"
    lines = text.split(SECTION, 1)[1].splitlines()
    assert HEADER in lines, f"README.md '{SECTION}' has no table with the header {HEADER!r}"
    rows = {}
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        pattern, case, title, variants, upstream = (cell.strip() for cell in line.strip().strip("|").split("|"))
        case_id = case.strip("`")
        assert case_id not in rows, f"README.md lists {case_id} twice"
        rows[case_id] = {"pattern": pattern, "title": title, "variants": variants, "links": LINK.findall(upstream)}
    return rows


ROWS = table_rows()


def test_every_row_is_a_registered_case_and_every_case_has_a_row():
    registered = {case.id for case in all_cases()}
    assert sorted(set(ROWS) - registered) == [], "README.md has rows for cases that do not exist"
    assert sorted(registered - set(ROWS)) == [], "registered cases missing from the README.md table"


@pytest.mark.parametrize("case", all_cases(), ids=lambda case: case.id)
def test_row_states_the_cases_pattern_variant_count_and_upstream_links(case):
    row = ROWS.get(case.id)
    assert row is not None, f"README.md's case table has no row for {case.id}"
    assert row["pattern"] == case.pattern
    assert row["variants"] == str(len(case.variants)), f"{case.id} has {len(case.variants)} variants"
    assert sorted(row["links"]) == sorted(case.links)
    assert row["title"], f"{case.id}: say what it is"
