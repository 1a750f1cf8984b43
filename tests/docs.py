"""The documentation: README.md (the door) and the pages under docs/, read by the tests that keep them true. A
section is found by its title wherever it lives, so that moving it between README and a page moves nothing else."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = (README, *sorted((REPO / "docs").glob("*.md")))


def page_of(title: str) -> Path:
    """The page holding ``## title``."""
    found = [page for page in PAGES if f"\n## {title}\n" in page.read_text(encoding="utf-8")]
    assert len(found) == 1, f"## {title}: in {[p.name for p in found]} (expected exactly one page)"
    return found[0]


def section(title: str) -> str:
    """The text of ``## title`` up to the next ``## `` heading, from whichever page holds it."""
    text = page_of(title).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def all_text() -> str:
    """README and every page, one after the other."""
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
