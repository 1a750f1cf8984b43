"""The evidence behind the observed cells of a report, as one JSON document embedded (compressed) in the page.

Each cell of the matrix carries only its face (and a short text panel for readers without JavaScript); the full
panel (log excerpt, per-node precision, metrics, environment, knobs) is drawn from this document when the cell is
opened. Values that many records share (an environment, a tolerance, the knobs of a variant) are stored once in
``shared`` and referenced as ``{"$": index}``, so the page grows with what differs between cells.
"""
from __future__ import annotations

import base64
import gzip
import json
from typing import Any

PANEL_FORMAT = "trt-matrix/panels/1"
# Record fields the cell's row and column already say, left out of the document.
IMPLIED = ("schema", "case", "variant", "target", "backend")
# Record fields (and metrics fields) whose values repeat across cells: stored once.
SHARED = ("environment", "knobs", "expected_int8", "details", "expectation", "warnings")
SHARED_METRICS = ("tolerance",)
SHARED_EXTRA = ("claim", "note")


class PanelData:
    """Collects the records of the observed cells, in the page's cell order (the script numbers the observed cells of
    the matrix in document order: the n-th one reads entry n); ``add`` returns the index."""

    def __init__(self) -> None:
        self.cells: list[dict[str, Any]] = []
        self.shared: list[Any] = []
        self._shared_index: dict[str, int] = {}

    def _share(self, value: Any) -> Any:
        if value in (None, {}, []):
            return value
        key = json.dumps(value, sort_keys=True, separators=(",", ":"))
        if key not in self._shared_index:
            self._shared_index[key] = len(self.shared)
            self.shared.append(value)
        return {"$": self._shared_index[key]}

    def add(self, record: dict[str, Any], extra: dict[str, Any] | None = None) -> int:
        """Store ``record`` (and ``extra`` facts the page adds, e.g. the claim it was judged against). Empty fields
        (null, {}, []) are left out: the panel reads a missing field as empty."""
        compact = {key: value for key, value in record.items() if key not in IMPLIED and value not in (None, {}, [])}
        for key in SHARED:
            if key in compact:
                compact[key] = self._share(compact[key])
        if compact.get("metrics"):
            metrics = dict(compact["metrics"])
            outputs = metrics.get("outputs") or {}
            if len(outputs) == 1 and all(metrics.get(k) == v for k, v in next(iter(outputs.values())).items()):
                del metrics["outputs"]  # one output: its metrics are the record's own
            compact["metrics"] = {key: self._share(value) if key in SHARED_METRICS else value
                                  for key, value in metrics.items()}
        extra = {key: value for key, value in (extra or {}).items() if value is not None}
        for key in SHARED_EXTRA:
            if key in extra:
                extra[key] = self._share(extra[key])
        if extra:
            compact["page"] = extra
        self.cells.append(compact)
        return len(self.cells) - 1

    def document(self) -> dict[str, Any]:
        return {"format": PANEL_FORMAT, "shared": self.shared, "cells": self.cells}


def packed(document: dict[str, Any]) -> str:
    """``document`` as the page embeds it: JSON, gzip-compressed (fixed mtime: the same data gives the same bytes),
    base64-encoded. Base64 has no character that could end the <script> element it sits in or open markup; the
    browser unpacks it with DecompressionStream. Compressed, the evidence costs a fraction of its JSON: records
    repeat their keys and much of their text."""
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def unpacked(text: str) -> dict[str, Any]:
    """The document :func:`packed` wrote (for readers outside a browser)."""
    return json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8"))
