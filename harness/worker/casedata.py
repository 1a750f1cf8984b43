"""Read a generated cases directory (``index.json`` + ``.onnx`` + ``.npz``) into cells a backend can run."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from harness.tensorrt.signatures import LogSignatures
from harness.worker.errors import InputError
from harness.worker.record import REQUESTED_PRECISIONS
from harness.worker.shapes import Cell

INDEX_FORMAT = "trt-matrix/cases/1"
_VARIANT_FIELDS = {
    "name": str, "mode": str, "model": str, "data": str, "knobs": dict, "claims": list,
    "expected_int8": list, "tolerance": dict, "inputs": dict, "outputs": dict, "calibration_batches": int,
    "model_sha256": str, "data_sha256": str,
}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class CasesDirError(InputError):
    """A cases directory that cannot be used; the message names the file and the field."""


def load_cells(cases_dir: Path) -> list[Cell]:
    """Every (case, variant) of ``cases_dir`` as a flat cell dict with absolute model/data paths."""
    cases_dir = Path(cases_dir)
    index_path = cases_dir / "index.json"
    if not index_path.is_file():
        raise CasesDirError(
            f"{index_path}: no index.json. A cases directory is written by `trt-matrix generate --out DIR`."
        )
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CasesDirError(f"{index_path}: not valid JSON ({err}). Regenerate it with `trt-matrix generate`.")
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        found = index.get("format") if isinstance(index, dict) else type(index).__name__
        raise CasesDirError(f"{index_path}: field 'format' is {found!r}, expected {INDEX_FORMAT!r}.")
    if not isinstance(index.get("cases"), list):
        raise CasesDirError(f"{index_path}: field 'cases' must be a list of cases.")
    try:  # every pattern's log signatures, which the backend classifies TensorRT's log with
        signatures = index.get("log_signatures") or {}
        LogSignatures.from_json(signatures, f"{index_path}: field 'log_signatures'")
    except ValueError as err:
        raise CasesDirError(str(err)) from None
    cells = []
    for i, case in enumerate(index["cases"]):
        where = f"{index_path}: cases[{i}]"
        if not isinstance(case, dict) or not isinstance(case.get("id"), str) or not isinstance(case.get("variants"), list):
            raise CasesDirError(f"{where}: a case needs a string 'id' and a list 'variants'.")
        for j, variant in enumerate(case["variants"]):
            cells.append(_cell(cases_dir, f"{where} ({case['id']}).variants[{j}]", case, variant)
                         | {"log_signatures": signatures})
    return cells


def _cell(cases_dir: Path, where: str, case: dict, variant: Any) -> Cell:
    if not isinstance(variant, dict):
        raise CasesDirError(f"{where}: a variant must be an object.")
    for field, kind in _VARIANT_FIELDS.items():
        if not isinstance(variant.get(field), kind):
            raise CasesDirError(
                f"{where}: field {field!r} must be a {kind.__name__}, found {type(variant.get(field)).__name__}."
            )
    asked = variant.get("expected_precision")
    if asked is not None and not (isinstance(asked, dict) and all(
            isinstance(node, str) and p in REQUESTED_PRECISIONS for node, p in asked.items())):
        raise CasesDirError(f"{where}: field 'expected_precision' must map node names to one of "
                            f"{REQUESTED_PRECISIONS}, found {str(asked)[:120]}.")
    for field in ("model", "data"):
        if not _SHA256.match(variant[f"{field}_sha256"]):
            raise CasesDirError(f"{where}: field '{field}_sha256' must be 64 lower-case hex digits, found "
                                f"{variant[f'{field}_sha256'][:80]!r}.")
        path = cases_dir / variant[field]
        if path.is_dir():
            raise CasesDirError(f"{where}: field {field!r} names {path}, which is a directory, not a file.")
        if not path.is_file():
            raise CasesDirError(f"{where}: field {field!r} names {path}, which does not exist.")
    return {
        **variant,
        "case": case["id"],
        "variant": variant["name"],
        "links": case.get("links", []),
        "model": str((cases_dir / variant["model"]).resolve()),
        "data": str((cases_dir / variant["data"]).resolve()),
    }


def damaged_input(cell: Cell) -> str | None:
    """Why the cell's model or data file is not the one index.json describes (naming the file), or None.

    Every cell checks this before it runs: a truncated, edited or swapped file must give an infra-error, never an
    outcome about the pattern.
    """
    for field in ("model", "data"):
        path, expected = Path(cell[field]), cell[f"{field}_sha256"]
        if not path.is_file():
            return f"{path}: {'a directory' if path.is_dir() else 'no such file'} where index.json names the {field}"
        digest = hashlib.sha256()
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != expected:
            size = path.stat().st_size
            state = "empty (0 bytes)" if size == 0 else f"{size} bytes, sha256 {digest.hexdigest()[:16]}..."
            return (f"{path}: {state}, not the {field} index.json describes (sha256 {expected[:16]}...): the file "
                    "was truncated, edited or swapped after `trt-matrix generate` wrote it; generate the cases directory again")
    return None


def load_arrays(cell: Cell) -> dict[str, Any]:
    """The cell's arrays: ``inputs``, ``calibration`` (a list of batches) and ``reference`` outputs."""
    with np.load(cell["data"], allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    inputs = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("input/")}
    reference = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("reference/")}
    calibration = [
        {k.split("/", 2)[2]: v for k, v in arrays.items() if k.startswith(f"calib/{i}/")}
        for i in range(cell["calibration_batches"])
    ]
    missing = [name for name in cell["inputs"] if name not in inputs]
    if missing:
        raise CasesDirError(f"{cell['data']}: no array for the model input(s) {missing}.")
    return {"inputs": inputs, "calibration": calibration, "reference": reference}
