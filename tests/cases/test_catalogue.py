"""docs/cases.md's case catalogue is the one scripts/case_catalogue.py writes from the case library: one row and one
section per registered case, nothing else, with each case's pattern, variants, upstream claims and links."""
from __future__ import annotations

import difflib
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

from cases import all_cases

REPO = pathlib.Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "cases.md"
SCRIPT = REPO / "scripts" / "case_catalogue.py"
HEADER = "| pattern | case | what it is | variants | upstream |"
LINK = re.compile(r"\[([^\]]+)\]\((https://[^)\s]+)\)")

spec = importlib.util.spec_from_file_location("case_catalogue", SCRIPT)
catalogue = importlib.util.module_from_spec(spec)
spec.loader.exec_module(catalogue)


def table_rows(text: str) -> dict[str, dict]:
    """The case table of the page ``text``, keyed by case id."""
    lines = text.splitlines()
    assert HEADER in lines, f"docs/cases.md has no table with the header {HEADER!r}"
    rows = {}
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        pattern, case, title, variants, upstream = (cell.strip() for cell in line.strip().strip("|").split("|"))
        case_id = re.fullmatch(r"\[`([\w-]+)`\]\(#([\w-]+)\)", case)
        assert case_id and case_id[1] == case_id[2], f"{case}: a case id linking to its own section"
        assert case_id[1] not in rows, f"docs/cases.md lists {case_id[1]} twice"
        rows[case_id[1]] = {"pattern": pattern, "title": title, "variants": variants,
                            "links": [url for _, url in LINK.findall(upstream)]}
    return rows


TEXT = PAGE.read_text(encoding="utf-8")
ROWS = table_rows(TEXT)


def test_the_page_is_the_catalogue_the_library_writes():
    expected = catalogue.written(TEXT)
    diff = "".join(list(difflib.unified_diff(TEXT.splitlines(True), expected.splitlines(True), "docs/cases.md",
                                             "from the case library"))[:40])
    assert TEXT == expected, f"docs/cases.md differs from the case library: run `{catalogue.COMMAND}`\n{diff}"


def test_every_row_is_a_registered_case_and_every_case_has_a_row_and_a_section():
    registered = {case.id for case in all_cases()}
    assert sorted(set(ROWS) - registered) == [], "docs/cases.md has rows for cases that do not exist"
    assert sorted(registered - set(ROWS)) == [], "registered cases missing from the docs/cases.md table"
    sections = re.findall(r"^### `([\w-]+)`$", TEXT, re.M)
    assert sorted(sections) == sorted(registered)
    assert sections == list(ROWS), "the sections follow the table's order"


@pytest.mark.parametrize("case", all_cases(), ids=lambda case: case.id)
def test_row_states_the_cases_pattern_variant_count_and_upstream_links(case):
    row = ROWS[case.id]
    assert row["pattern"] == case.pattern
    assert row["variants"] == str(len(case.variants)), f"{case.id} has {len(case.variants)} variants"
    assert sorted(row["links"]) == sorted(case.links)
    assert row["title"], f"{case.id}: say what it is"


@pytest.mark.parametrize("case", all_cases(), ids=lambda case: case.id)
def test_section_lists_every_variant_with_its_role_and_claims_and_every_log_signature(case):
    section = TEXT.split(f"\n### `{case.id}`\n", 1)[1].split("\n### ", 1)[0]
    listed = dict(re.findall(r"^\| `([\w.-]+)` \| (\w+) \|", section, re.M))
    assert listed == {v.name: v.role for v in case.variants}
    roles = [listed[name] for name in re.findall(r"^\| `([\w.-]+)` \|", section, re.M)]
    assert roles == sorted(roles, key=catalogue.ROLES.index), "failing forms first, then workarounds, then sweeps"
    for variant in case.variants:
        row = re.search(rf"^\| `{re.escape(variant.name)}` \|.*$", section, re.M)[0]
        for claim in (*variant.claims, *variant.range_claims):
            where = f"`{claim.target}`" if claim.target else claim.scope.describe()
            assert f"`{claim.outcome}` " in row and where in row and claim.source in row, (variant.name, claim)
        if not (variant.claims or variant.range_claims):
            assert row.endswith("| none |"), f"{variant.name}: no upstream claim, said as none"
    for signature in case.log_signatures:
        assert f"- `{signature.id}`: " in section and signature.source in section
    assert (case.remedy or "none stated") in section


def test_link_labels_come_from_the_url_or_a_declared_label():
    assert catalogue.label("https://github.com/NVIDIA/TensorRT/issues/3640") == "#3640"
    assert catalogue.label("https://github.com/NVIDIA/TensorRT/pull/12") == "#12"
    assert catalogue.label("https://github.com/roboflow/rf-detr/pull/1454") == "roboflow/rf-detr#1454"
    assert catalogue.label("https://github.com/NVIDIA/Model-Optimizer/issues/70") == "NVIDIA/Model-Optimizer#70"
    assert (catalogue.label("https://github.com/NVIDIA/TensorRT/blob/release/8.6/include/NvInfer.h")
            == "TensorRT 8.6 NvInfer.h")
    assert catalogue.label("https://example.org/docs/quantization.html") == "quantization.html"


def test_every_link_of_the_library_that_is_not_a_github_thread_has_a_declared_label():
    urls = {url for case in all_cases() for url in
            (*case.links, *(signature.source for signature in case.log_signatures),
             *(claim.source for variant in case.variants for claim in (*variant.claims, *variant.range_claims)))}
    undeclared = sorted(url for url in urls if not catalogue.GITHUB_THREAD.match(url) and url not in catalogue.LABELS)
    assert undeclared == [], f"give these a short label in LABELS of scripts/case_catalogue.py: {undeclared}"


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO)


def test_the_script_reports_a_stale_page_with_the_command_and_writes_it(tmp_path):
    page = tmp_path / "cases.md"
    first = next(iter(ROWS))
    page.write_text(TEXT.replace(f"[`{first}`]", "[`old-case-name`]", 1), encoding="utf-8")
    stale = run_script("--page", str(page))
    assert stale.returncode == 1
    assert f"+| {ROWS[first]['pattern']} | [`{first}`]" in stale.stdout  # the diff shows the line as it should be
    assert f"run `{catalogue.COMMAND} --page {page}`" in stale.stdout
    assert run_script("--write", "--page", str(page)).returncode == 0
    assert page.read_text(encoding="utf-8") == TEXT
    assert run_script("--page", str(page)).returncode == 0


def test_the_script_names_the_missing_markers(tmp_path):
    page = tmp_path / "cases.md"
    page.write_text(TEXT.replace("<!-- /case sections -->", ""), encoding="utf-8")
    result = run_script("--page", str(page))
    assert result.returncode == 2
    assert "<!-- /case sections -->" in result.stderr and str(page) in result.stderr
