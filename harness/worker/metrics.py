"""Accuracy of a target's outputs against the FP32 reference: cosine similarity, max abs error, SQNR."""
from __future__ import annotations

from typing import Any

import numpy as np


def compare_output(actual: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    a = np.asarray(actual, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != r.shape:
        raise ValueError(f"output has {a.size} values, the reference {r.size}")
    noise = float(np.sum((a - r) ** 2))
    signal = float(np.sum(r**2))
    norms = float(np.linalg.norm(a) * np.linalg.norm(r))
    return {
        "cosine": float(np.dot(a, r) / norms) if norms > 0 else float(np.array_equal(a, r)),
        "max_abs_error": float(np.max(np.abs(a - r))) if a.size else 0.0,
        "sqnr_db": float(10 * np.log10(signal / noise)) if noise > 0 else float("inf"),
    }


def compare(outputs: dict[str, Any], reference: dict[str, Any], tolerance: dict[str, Any]) -> dict[str, Any]:
    """Per-output metrics, the worst of each, and whether the worst is within ``tolerance``."""
    missing = sorted(set(reference) - set(outputs))
    if missing:
        raise ValueError(f"the backend returned no value for output(s) {missing}; it returned {sorted(outputs)}")
    per_output = {name: compare_output(outputs[name], ref) for name, ref in sorted(reference.items())}
    worst = {
        "cosine": min(m["cosine"] for m in per_output.values()),
        "max_abs_error": max(m["max_abs_error"] for m in per_output.values()),
        "sqnr_db": min(m["sqnr_db"] for m in per_output.values()),
    }
    within = worst["cosine"] >= tolerance["min_cosine"] and worst["max_abs_error"] <= tolerance["max_abs_error"]
    return {
        **{k: _json_float(v) for k, v in worst.items()},
        "within_tolerance": bool(within),
        "tolerance": tolerance,
        "outputs": {name: {k: _json_float(v) for k, v in m.items()} for name, m in per_output.items()},
    }


def _json_float(value: float) -> float | None:
    """JSON has no inf/nan: an exact match (infinite SQNR) is stored as None and shown as such."""
    return value if np.isfinite(value) else None
