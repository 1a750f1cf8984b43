"""The Jinja environment every page is rendered with: the templates folder, autoescaped, strict about undefined names,
compiled templates cached, and the names every page's templates share. A page adds its own names (the matrix report:
:func:`reports.html.template_environment`; the scan page: :func:`reports.scan_page.render_scan_page`), so rendering
one page imports only what that page shows."""
from __future__ import annotations

import functools
from pathlib import Path

import jinja2

from harness import judgement

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
OUTCOME_SYMBOLS = {outcome: m.symbol for outcome, m in judgement.MEANINGS.items()}
TARGET_UNAVAILABLE = "target-unavailable"  # a target that cannot exist: a report's cell kind and both pages' CSS class


def web_link(url: str | None) -> str | None:
    """``url`` when it is an http(s) link a user can follow, else None (rendered as plain text instead)."""
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else None


@functools.lru_cache(maxsize=1)
def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Jinja's cache of compiled templates in this user's own temporary directory (compiling the scan page's
    templates costs more than rendering a small scan), checked against each template's source; None where that
    directory cannot be made safely (the templates are then compiled each time)."""
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


def page_environment() -> jinja2.Environment:
    """The environment with what every page's templates use: the verdict vocabulary (``J``), the outcomes' symbols,
    :data:`TARGET_UNAVAILABLE` and the ``web_link`` filter."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, bytecode_cache=_bytecode_cache(),
    )
    env.filters["web_link"] = web_link
    env.globals.update(J=judgement, OUTCOME_SYMBOLS=OUTCOME_SYMBOLS, TARGET_UNAVAILABLE=TARGET_UNAVAILABLE)
    return env
