"""What pasting TensorRT output into an issue thread adds to it, removed: the classifier and the layer reader read a
paste as TensorRT wrote it.

Pure Python (standard library only): it runs inside worker containers and in the host's tests.
"""
from __future__ import annotations

import html
import re

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_QUOTE_MARKERS = re.compile(r"^[ \t]*>(?:[ \t]?>)*[ \t]?")
_CODE_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[\w+.-]*[ \t]*$")
_INLINE_CODE_TICKS = re.compile(r"^[ \t]*`+|`+[ \t]*$")
_ELISION = re.compile(r"^\s*[\[(]?(?:\.{3,}|\u2026)[\])]?\s*$")  # "...", "[...]", "(…)"


def unpasted(text: str) -> str:
    """``text`` without what a paste added, line for line: HTML-escaped characters (``&gt;`` of a quote copied from a
    page's source), ANSI colour codes, GitHub quote markers (``> ``, nested ``> > ``), markdown code fences (the fence
    line becomes blank) and the backticks of inline code at either end of a line. Line ends (CRLF, CR) become
    ``\\n``; no line is added, dropped or joined, so line numbers stay those of the paste."""
    if "&" in text:
        text = html.unescape(text)
    lines = []
    for line in text.splitlines():
        line = _QUOTE_MARKERS.sub("", _ANSI_ESCAPE.sub("", line), count=1)
        lines.append("" if _CODE_FENCE.match(line) else _INLINE_CODE_TICKS.sub("", line))
    return "\n".join(lines) + ("\n" if text.endswith(("\n", "\r")) else "")


def is_elision(line: str) -> bool:
    """Whether ``line`` only marks lines the paste left out (``...``, ``......``, ``[...]``, ``…``): it continues no
    wrapped line."""
    return bool(_ELISION.match(line))
