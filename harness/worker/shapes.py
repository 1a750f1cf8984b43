"""The JSON shapes that travel between the host and a worker: a cell, the target it runs on, and a job.

They are plain dicts (they cross into containers as JSON), typed here so a signature says which keys a value has.
The record a cell ends in is :class:`harness.worker.record.Record`. Standard library only, Python 3.8 and later
(a JetPack 5 container runs 3.8).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, TypedDict, Union


# A claim for one target as index.json carries it: harness.judgement.Claim.to_dict() (target, outcome, source,
# strength, category, note, architecture); never an observation.
ClaimDict = Dict[str, Any]


class Tolerance(TypedDict):
    min_cosine: float
    max_abs_error: float
    reason: str


class Cell(TypedDict, total=False):
    """One (case, variant) of a cases directory, as :func:`harness.worker.casedata.load_cells` reads it: the variant's
    entry of index.json plus its case id and links, with absolute model and data paths."""

    case: str
    variant: str
    name: str
    role: str
    description: str
    mode: str  # implicit-int8 or explicit-qdq
    model: str
    model_sha256: str
    data: str
    data_sha256: str
    knobs: Dict[str, Any]
    claims: List[ClaimDict]
    expected_int8: List[str]  # ONNX nodes that must run in INT8
    expected_precision: Dict[str, str]  # every expected node -> the precision asked for (int8, fp8, fp4, fp16, bf16)
    tolerance: Tolerance
    inputs: Dict[str, Any]
    outputs: Dict[str, Any]
    calibration_batches: int
    params: Dict[str, Any]
    links: List[str]


class JobTarget(TypedDict, total=False):
    """A target as a worker receives it: ``harness.matrix.Target.to_job()`` (only id and backend are always read)."""

    id: str
    backend: str  # onnxruntime, tensorrt, or module:Class
    version: Optional[str]
    title: str
    runner: str
    platform: str
    available: bool
    reason: Optional[str]
    session_config: Dict[str, str]
    gpu_arch: str  # sm_87, or any
    dla_core: Optional[int]  # build for this DLA core, GPU fallback allowed


class Job(TypedDict, total=False):
    """What a worker runs: cells of a cases directory on one target (``python -m harness.worker JOB.json``)."""

    target: JobTarget
    cases_dir: str
    cells: Optional[List[List[str]]]  # [case, variant] pairs; None: every cell of the cases directory
    jobs: int
    timeout_s: float
    work_dir: str


VariantKey = Tuple[str, str]


def variant_key(cell_or_record: Union[Cell, Dict[str, Any]]) -> VariantKey:
    """(case, variant): a row of the matrix, and the name of a cell within a job (whose target is fixed)."""
    return cell_or_record["case"], cell_or_record["variant"]
