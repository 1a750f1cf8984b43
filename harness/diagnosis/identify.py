"""The kind of a file, told from its content (never its name): each kind of :mod:`harness.diagnosis.kinds` (a
TensorRT build log, engine layers, engine build metadata, a calibration cache, a trtexec or Polygraphy command line, an
ONNX model) is offered the content in turn, and the first that detects it reads it with the project's reader of it;
what that reader refuses decides damaged (it starts as the kind and breaks) against no kind.
"""
from __future__ import annotations

from pathlib import Path

from harness.diagnosis.kinds import KINDS, NO_KIND, Content, Identified


def identify(path: Path) -> Identified:
    """Read ``path`` and tell its kind from its content. Text other than a calibration cache is read as it was before
    a paste into an issue thread added quote markers, code fences, colour codes or ``&gt;`` (``pasted.unpasted``)."""
    data = Path(path).read_bytes()
    if not data.strip():
        return Identified(path, None, NO_KIND, "it is empty" if not data else "it holds only white space")
    content = Content(path, data)
    return next(kind for kind in KINDS.values() if kind.detect(content)).read(content)
