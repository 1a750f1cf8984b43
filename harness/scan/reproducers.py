"""The user's own layers as reproducers: each matched subgraph cut out of the model and written in the layout the
harness runs (``DIR/index.json``, ``DIR/<case>/<name>.onnx`` and ``.npz`` with inputs, calibration batches for
implicit-INT8 forms and reference outputs from ``onnx.reference``), then run on the chosen targets.

Occurrences of one finding whose nodes have the same ops, attributes and shapes share one reproducer; at most
``limit`` reproducers are written per finding, and every occurrence says which reproducer (if any) checks it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from cases.matching import QDQ_OPS
from cases.model import Knobs, Tolerance, Variant
from harness.matrix import Target
from harness.scan.extraction import ExtractionError, Extractor
from harness.scan.loading import LoadedModel
from harness.scan.matching import Finding, Occurrence
from harness.evidence.observations import Observations, read_observations

DEFAULT_LIMIT = 8
RESULTS = "results.jsonl"
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")  # the nodes a reproducer expects in INT8
# A quarter of the largest reference output: quantization error (clipping included) stays well inside it for the
# user's own weights, a wrong result does not; the case's cosine bound flags drift.
RANGE_FRACTION = 0.25
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclasses.dataclass
class Reproducer:
    """What became of one occurrence: its reproducer (own or shared), or why it has none."""

    finding: Finding
    occurrence: Occurrence
    name: str | None = None  # the reproducer's variant name in the cases directory
    shared_with: str | None = None  # the anchor of the occurrence whose reproducer this one shares
    problem: str | None = None  # why it has no reproducer
    notes: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shared_with": self.shared_with, "problem": self.problem, "notes": self.notes}


@dataclasses.dataclass
class ReproducerSet:
    cases_dir: Path
    reproducers: list[Reproducer]

    @property
    def written(self) -> list[Reproducer]:
        return [r for r in self.reproducers if r.name and r.shared_with is None]

    def of(self, finding: Finding) -> list[Reproducer]:
        return [r for r in self.reproducers if r.finding is finding]


def write_reproducers(loaded: LoadedModel, findings: Sequence[Finding], cases_dir: Path,
                      limit: int = DEFAULT_LIMIT) -> ReproducerSet:
    """Cut every occurrence of ``findings`` out of ``loaded`` into ``cases_dir`` (replacing its index.json)."""
    cases_dir = Path(cases_dir)
    cases_dir.mkdir(parents=True, exist_ok=True)
    extractor = Extractor(loaded)
    from cases.generate import new_index  # with onnx's reference evaluator: imported for --run only

    index = new_index({"scan": str(loaded.path), "onnx": onnx.__version__, "onnx_graphsurgeon": gs.__version__})
    reproducers, names = [], {}  # case id -> the reproducer names taken in its directory
    for finding in findings:
        entry = next((c for c in index["cases"] if c["id"] == finding.case.id), None)
        if entry is None:
            entry = {"id": finding.case.id, "title": finding.case.title, "pattern": finding.case.pattern,
                     "links": list(finding.case.links), "backend_notes": dict(finding.case.backend_notes),
                     "variants": []}
            index["cases"].append(entry)
        by_signature: dict[str, Reproducer] = {}
        written = 0
        for occurrence in finding.occurrences:
            reproducer = Reproducer(finding, occurrence)
            reproducers.append(reproducer)
            if not occurrence.nodes:
                reproducer.problem = ("not extracted: a pattern of the whole model, not of a subgraph; the library's "
                                      "cells of this case are its evidence")
                continue
            signature = _signature(extractor, occurrence)
            first = by_signature.setdefault(signature, reproducer)
            if first is not reproducer:
                reproducer.name, reproducer.problem = first.name, first.problem
                reproducer.shared_with = first.occurrence.anchor
                continue
            if written >= limit:
                reproducer.problem = f"not extracted: {limit} reproducers of this finding already (--max-reproducers)"
                continue
            name = _unique(_slug(occurrence.anchor), names.setdefault(finding.case.id, set()))
            try:
                entry["variants"].append(_write(extractor, finding, occurrence, name, cases_dir, reproducer.notes))
            except (ExtractionError, ValueError, RuntimeError) as err:
                reproducer.problem = f"not extracted: {err}"
                continue
            reproducer.name = name
            written += 1
    index["cases"] = [c for c in index["cases"] if c["variants"]]
    (cases_dir / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return ReproducerSet(cases_dir, reproducers)


def _write(extractor: Extractor, finding: Finding, occurrence: Occurrence, name: str, cases_dir: Path,
           notes: list[str]) -> dict[str, Any]:
    extracted = extractor.extract(occurrence.nodes)
    notes.extend(extracted.notes)
    model = extracted.model
    case = finding.case
    mode = "explicit-qdq" if any(n.op_type in QDQ_OPS for n in model.graph.node) else "implicit-int8"
    role = finding.variant.role if finding.variant else "failing"
    variant = Variant(name=name, role=role, description=f"{case.id} at {occurrence.anchor} in "
                      f"{extractor.loaded.path.name}, cut out with its shapes, weights and Q/DQ scales.",
                      params={"model": str(extractor.loaded.path), "nodes": list(occurrence.nodes)},
                      knobs=Knobs(), mode=mode, opset=extractor.loaded.opset)
    model_bytes = model.SerializeToString(deterministic=True)
    (cases_dir / case.id).mkdir(exist_ok=True)
    (cases_dir / case.id / f"{name}.onnx").write_bytes(model_bytes)
    from cases.generate import make_data, variant_entry, write_npz

    data = make_data(case, variant, model)
    data_path = cases_dir / case.id / f"{name}.npz"
    write_npz(data_path, data)
    expected = tuple(n.name for n in model.graph.node if n.op_type in COMPUTE_OPS)
    entry = variant_entry(case, variant, model, expected, model_bytes, data_path.read_bytes())
    entry["tolerance"] = user_model_tolerance(case.tolerance, data)._asdict()
    return entry


def user_model_tolerance(library: Tolerance, data: dict[str, np.ndarray]) -> Tolerance:
    peak = max((float(np.abs(v).max()) for k, v in data.items() if k.startswith("reference/") and v.size), default=0)
    bound = max(library.max_abs_error, round(RANGE_FRACTION * peak, 6))
    return Tolerance(
        min_cosine=library.min_cosine, max_abs_error=bound,
        reason=f"The user's own layer on N(0, 1) inputs: the case's cosine bound ({library.min_cosine}), and at most "
        f"{RANGE_FRACTION:g} of the largest reference output ({peak:.4g}) off, or the case's own bound "
        f"({library.max_abs_error:g}) when larger: quantization error stays inside it, a wrong result does not.",
    )


def _signature(extractor: Extractor, occurrence: Occurrence) -> str:
    """Ops, attributes and input shapes of the occurrence's nodes, in order: equal signatures, equal reproducers."""
    parts = []
    for name in occurrence.nodes:
        node = extractor.nodes[name]
        attrs = sorted((k, repr(v)) for k, v in node.attrs.items())
        shapes = [(None if getattr(t, "shape", None) is None else list(t.shape), _dtype_name(t)) for t in node.inputs]
        parts.append(repr((node.op, attrs, shapes)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _dtype_name(tensor: Any) -> str | None:
    """The numpy name of a tensor's type, the same whether graphsurgeon holds it as a numpy or an ONNX type."""
    dtype = getattr(tensor, "dtype", None)
    if dtype is None:
        return None
    if isinstance(dtype, int):
        return onnx.helper.tensor_dtype_to_np_dtype(dtype).name
    return np.dtype(dtype).name


def _slug(name: str) -> str:
    return _UNSAFE.sub("-", name).strip("-.") or "node"


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}-{number}", number + 1
    taken.add(candidate)
    return candidate


def run_reproducers(reproducers: ReproducerSet, targets: Sequence[Target], run_targets: Callable[..., list[Any]], *,
                    jobs: int, timeout_s: float, progress: Callable[[str], None]) -> tuple[Observations, list[Any]]:
    """Run every written reproducer on ``targets`` with ``run_targets`` (the harness's, handed in by the command: local
    and docker targets alike) into a fresh ``results.jsonl`` beside them; return what was observed and the run
    summaries."""
    results = reproducers.cases_dir / RESULTS
    results.unlink(missing_ok=True)
    if not reproducers.written:
        return Observations([], [], {}), []
    summaries = run_targets(list(targets), reproducers.cases_dir, results, jobs=jobs, timeout_s=timeout_s, force=True,
                            progress=progress)
    return read_observations([results]), summaries
