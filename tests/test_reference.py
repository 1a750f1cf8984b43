"""reference/ holds the data the tests check against, and each file keeps its source next to it: SOURCES.md names
every file with its link."""
import re

from tests.conftest import REFERENCE


def test_every_reference_file_is_named_in_sources_md_with_a_source():
    sources = (REFERENCE / "SOURCES.md").read_text(encoding="utf-8")
    rows = {match[1]: match[2] for match in re.finditer(r"^\| `([^`]+)` \| ([^|]+) \|", sources, re.M)}
    files = sorted(str(path.relative_to(REFERENCE)) for path in REFERENCE.rglob("*")
                   if path.is_file() and path.name != "SOURCES.md")
    assert files, f"no reference data in {REFERENCE}"
    unnamed = [name for name in files if name not in rows and f"`{name}`" not in sources]
    assert not unnamed, f"reference/SOURCES.md does not name {unnamed}: add each with its source link"
    unsourced = [name for name, source in rows.items() if not re.search(r"https?://", source)]
    assert not unsourced, f"reference/SOURCES.md gives no link for {unsourced}"
