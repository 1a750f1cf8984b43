"""A model as a cases directory of one cell, the unit the harness runs: ``DIR/index.json``, ``DIR/<case>/<name>.onnx``
and ``.npz`` (inputs, calibration batches for a model without Q/DQ, reference outputs from ``onnx.reference``)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import onnx
import onnx_graphsurgeon as gs

from cases.generate import make_data, new_index, variant_entry, write_npz
from cases.matching import QDQ_OPS
from cases.model import Knobs, Tolerance, Variant
from harness.scan.loading import default_opset
from harness.scan.reproducers import COMPUTE_OPS, user_model_tolerance

CASE_ID = "reduce"
BASE_TOLERANCE = Tolerance(
    min_cosine=0.99, max_abs_error=1e-3,
    reason="A user's model under reduction: a cosine of 0.99 against the FP32 reference, and an absolute bound scaled "
    "to the reference outputs' range (the scan's reproducer rule).")


class CandidateError(ValueError):
    """A model that cannot become a cell (dynamic input sizes, a graph the reference evaluator cannot run)."""


@dataclasses.dataclass(frozen=True)
class _CandidateCase:
    """What :func:`cases.generate.make_data` and :func:`~cases.generate.variant_entry` read of a case, for a model
    that is no library case (a library Case subclass would register itself)."""

    id: str
    mode: str
    opset: int
    tolerance: Tolerance = BASE_TOLERANCE
    batch_count: int = 8
    title: str = "A model under reduction"

    def mode_of(self, variant: Variant) -> str:
        return self.mode

    def opset_of(self, variant: Variant) -> int:
        return self.opset


def build_mode(model: onnx.ModelProto) -> str:
    """explicit-qdq when the model has Q/DQ nodes (it runs as given), else implicit-int8 (the backend calibrates)."""
    return "explicit-qdq" if any(n.op_type in QDQ_OPS for n in model.graph.node) else "implicit-int8"


def write_cell(model_path: Path, cases_dir: Path, name: str, description: str = "") -> dict:
    """Write ``model_path`` as the only cell of ``cases_dir`` (case ``reduce``, variant ``name``); return its entry."""
    model = onnx.load(str(model_path))
    mode = build_mode(model)
    case = _CandidateCase(id=CASE_ID, mode=mode, opset=default_opset(model))
    variant = Variant(name=name, role="failing", description=description or f"{Path(model_path).name} as a cell",
                      params={"model": str(model_path)}, knobs=Knobs(), mode=mode, opset=case.opset)
    try:
        data = make_data(case, variant, model)
    except Exception as err:  # the reference evaluator raises many kinds; the cell cannot exist without references
        raise CandidateError(f"{model_path}: its inputs or reference outputs cannot be made: {type(err).__name__}: "
                             f"{err}") from err
    (Path(cases_dir) / case.id).mkdir(parents=True, exist_ok=True)
    model_bytes = model.SerializeToString(deterministic=True)
    (Path(cases_dir) / case.id / f"{name}.onnx").write_bytes(model_bytes)
    data_path = Path(cases_dir) / case.id / f"{name}.npz"
    write_npz(data_path, data)
    expected = tuple(n.name for n in model.graph.node if n.op_type in COMPUTE_OPS)  # as `scan --run` expects
    entry = variant_entry(case, variant, model, expected, model_bytes, data_path.read_bytes())
    entry["tolerance"] = user_model_tolerance(case.tolerance, data)._asdict()
    index = new_index({"reduce": str(model_path), "onnx": onnx.__version__, "onnx_graphsurgeon": gs.__version__})
    index["cases"].append({"id": case.id, "title": case.title, "pattern": "reduce", "links": [], "backend_notes": {},
                           "variants": [entry]})
    (Path(cases_dir) / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return entry
