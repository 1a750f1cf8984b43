"""What TensorRT's ONNX parser accepts, per version, as documented: the opset range, the operators and the types each
takes (onnx-tensorrt's ``docs/operators.md`` on each release branch, tabled in :mod:`.onnx_operators`), the rules
of QuantizeLinear and DequantizeLinear, and where DLA differs. Every fact names its source (document and branch).

A TensorRT version is read from the documents of its release branches: the one written for it (same major.minor),
or else the two around it, a fact holding only where both say it. Above the newest document read, what the newest
accepts is taken as still accepted, and a refusal holds only where every document read refuses (and, for
quantization, TensorRT 11's own guide says it). Where they do not, the documents are silent (:data:`SILENT`), which
is never taken as accepted.

Standard library only: the checker (:mod:`.parser_check`) reads the user's graph through the scan's index.
"""
from __future__ import annotations

import functools
import re
from typing import NamedTuple

from harness.tensorrt.onnx_operators import TABLES

ONNX_TENSORRT = "https://github.com/onnx/onnx-tensorrt/blob/{branch}/docs/operators.md"
GUIDE_11 = "https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/inference-library/work-quantized-types.html"
GUIDE_1011 = "https://docs.nvidia.com/deeplearning/tensorrt/10.11.0/inference-library/work-quantized-types.html"
DLA_LAYERS = "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/dla-layer-restrictions.html"

ACCEPTED, REFUSED, SILENT = "accepted", "refused", "silent"


class OperatorDocument(NamedTuple):
    """onnx-tensorrt's ``docs/operators.md`` on one release branch: the TensorRT version it is written for, the
    opset range it states (``opset_min`` None: it states only an upper bound) and the table of that branch."""

    version: str
    branch: str  # the onnx-tensorrt branch (10.15's is main at the 10.15 GA release, read 2026-11)
    opset_min: int | None
    opset_max: int

    @property
    def source(self) -> str:
        return ONNX_TENSORRT.format(branch="main" if self.branch.endswith("main") else f"release/{self.branch}")

    @property
    def table(self) -> dict[str, tuple[str, ...] | None]:
        return TABLES[self.branch]

    def cited(self) -> str:
        return f"onnx-tensorrt docs/operators.md, branch {self.branch} (TensorRT {self.version}): {self.source}"


DOCUMENTS = (  # the header line of each: "supports operators up to Opset N" / "in the inclusive range of opset A to B"
    OperatorDocument("8.5", "8.5-GA", None, 17),
    OperatorDocument("8.6", "8.6-GA", None, 17),
    OperatorDocument("9.2", "9.2", None, 19),
    OperatorDocument("10.0", "10.0-GA", 9, 20),
    OperatorDocument("10.1", "10.1-GA", 9, 20),  # its header still names 10.0; the table is 10.1's
    OperatorDocument("10.15", "10.15-main", 9, 24),
)

# ONNX element types (onnx.TensorProto.DataType) by the names the documents use
ELEMENT_NAMES = {1: "FP32", 2: "UINT8", 3: "INT8", 6: "INT32", 7: "INT64", 9: "BOOL", 10: "FP16", 11: "DOUBLE",
                 16: "BF16", 17: "FP8", 18: "FP8", 19: "FP8", 20: "FP8", 21: "UINT4", 22: "INT4", 23: "FP4"}

OPSET_NOT_CHECKED = ("the parser checks no upper opset: ModelImporter.cpp on onnx-tensorrt release/8.6-GA and "
                     "release/10.1-GA only warns below opset 7: "
                     "https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/ModelImporter.cpp")
IMPORTER_CHECKS = ("the importer asserts it too (\"TensorRT only supports symmetric quantization\", and a UINT8 "
                   "input or zero point is an invalid type): builtin_op_importers.cpp on release/8.6-GA, "
                   "https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/builtin_op_importers.cpp, and "
                   "onnxOpImporters.cpp on release/10.1-GA")
# Not in the documents' tables: what TensorRT's parser said in public reports, verbatim error and thread
ACTIVATION_INPUT_ONLY = ("TensorRT 8.x's parser, on a DequantizeLinear of stored INT8 weights (no Q before it): "
                         "\"only activation types allowed as input to this layer\" "
                         "(https://github.com/microsoft/onnxruntime/issues/14229, 2023-01; on a quantized bias: "
                         "https://github.com/onnx/onnx-tensorrt/issues/850, 2022-06)")
STORED_WEIGHTS_SINCE = (10, 0)  # 10.0's release notes: weights stored quantized (INT4 weight-only) are dequantized
REMEDY_STORED_WEIGHTS = ("store the weights float with a Q/DQ pair: ONNX Runtime quantize_static(..., extra_options="
                         "{'AddQDQPairToWeight': True}), or NVIDIA ModelOpt's ONNX PTQ, or from the FP32 model "
                         "`scan --to-explicit`")
UINT8_READ_AS_INT8_SINCE = (10, 0)
UINT8_READ_AS_INT8 = ("the importer reads a UINT8 zero point as INT8, with a warning, from release/10.0-GA on "
                      "(onnxOpImporters.cpp, https://github.com/onnx/onnx-tensorrt/blob/release/10.0-GA/"
                      "onnxOpImporters.cpp): what the model quantizes above 127 would saturate")
ZERO_POINT_RULE = {"QuantizeLinear": "`y_zero_point` must be 0", "DequantizeLinear": "`x_zero_point` must be zero"}
SYMMETRIC_SINCE_11 = (f"TensorRT 11.0's quantization guide: TensorRT uses a symmetric quantization scheme; "
                      f"quantized types INT8, INT4 (weight-only), FP8 E4M3, FP4 E2M1: {GUIDE_11}")
INT4_WEIGHT_ONLY = f"TensorRT's quantization guide: INT4 is weight-only quantization: {GUIDE_1011}"
DLA_PRECISIONS = ("FP16", "INT8")  # the precisions the DLA layer table lists for every layer
DLA_SOURCE = f"TensorRT's DLA Supported Layers and Restrictions (layers run FP16 or INT8): {DLA_LAYERS}"

REMEDY_SYMMETRIC = ("re-quantize symmetric, signed INT8: ONNX Runtime quantize_static(..., "
                    "activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, extra_options={"
                    "'ActivationSymmetric': True, 'WeightSymmetric': True}), or NVIDIA ModelOpt's ONNX PTQ "
                    "(python -m modelopt.onnx.quantization), or from the FP32 model `trt-matrix scan --to-explicit`")
REMEDY_BIAS = ("leave the bias float: ONNX Runtime quantize_static(..., extra_options={'QuantizeBias': False}), or "
               "NVIDIA ModelOpt's ONNX PTQ, which quantizes no bias")
REMEDY_OPSET = "export at an opset the parser takes (torch.onnx.export(..., opset_version=N))"
REMEDY_OPERATOR = ("a TensorRT version whose parser takes the operator, or an export that writes it as supported "
                   "operators (a lower opset decomposes many of them)")


class Fact(NamedTuple):
    """What the documents say of one question on one version: ACCEPTED, REFUSED or SILENT, and which said it."""

    state: str
    source: str  # the documents (cited) that settle it, or why nothing does

    @property
    def refused(self) -> bool:
        return self.state == REFUSED


@functools.lru_cache(maxsize=None)
def parsed(version: str) -> tuple[int, int]:
    """(major, minor) of "10.16.1", "11", "8.6"."""
    numbers = [int(n) for n in re.findall(r"\d+", version)[:2]]
    return (numbers + [0, 0])[0], (numbers + [0, 0])[1]


@functools.lru_cache(maxsize=None)
def documents_for(version: str) -> tuple[tuple[OperatorDocument, ...], str]:
    """The documents that settle facts of ``version`` (all must agree), and how they were chosen (kept per version:
    every fact of a scan asks it)."""
    wanted = parsed(version)
    exact = [d for d in DOCUMENTS if parsed(d.version) == wanted]
    if exact:
        return (exact[0],), f"the {exact[0].branch} branch, written for TensorRT {exact[0].version}"
    below = [d for d in DOCUMENTS if parsed(d.version) < wanted]
    above = [d for d in DOCUMENTS if parsed(d.version) > wanted]
    if below and above:
        return (below[-1], above[0]), (f"no branch written for TensorRT {version}: the {below[-1].branch} and "
                                       f"{above[0].branch} branches around it, where both say the same")
    if below:
        return DOCUMENTS, (f"no branch written for TensorRT {version} was read (the newest is "
                           f"{DOCUMENTS[-1].branch}): what it accepts, and what every branch read refuses")
    return (), f"TensorRT {version} predates every branch read ({DOCUMENTS[0].branch} is the oldest)"


def _agreed(documents: tuple[OperatorDocument, ...], state_of) -> Fact:
    """ACCEPTED or REFUSED where every document says the same (``state_of(document)``), else SILENT."""
    if not documents:
        return Fact(SILENT, "no document read covers this version")
    if documents == DOCUMENTS:  # a version above the newest document read
        newest = state_of(DOCUMENTS[-1])
        if newest == ACCEPTED:
            return Fact(ACCEPTED, f"accepted by the newest branch read: {DOCUMENTS[-1].cited()}")
        if newest == REFUSED and all(state_of(d) == REFUSED for d in documents):
            return Fact(REFUSED, f"refused on every branch read, {DOCUMENTS[0].branch} to {DOCUMENTS[-1].branch}: "
                                 f"{DOCUMENTS[-1].cited()}")
        return Fact(SILENT, f"no document read for this version; the newest, {DOCUMENTS[-1].cited()}, refuses it "
                            "but an older branch did not" if newest == REFUSED else
                    f"no document read for this version lists it ({DOCUMENTS[-1].branch} is the newest)")
    states = {state_of(d) for d in documents}
    cited = "; ".join(d.cited() for d in documents)
    if len(states) == 1 and SILENT not in states:
        return Fact(states.pop(), cited)
    return Fact(SILENT, f"the documents disagree or are silent: {cited}")


def operator_fact(version: str, op: str) -> Fact:
    """Whether the parser of ``version`` takes ONNX operator ``op`` (its table's Supported column)."""
    def state(document: OperatorDocument) -> str:
        if op not in document.table:
            return SILENT
        return REFUSED if document.table[op] is None else ACCEPTED
    return _agreed(documents_for(version)[0], state)


def operator_types(version: str, op: str) -> tuple[tuple[str, ...] | None, str]:
    """The types ``op`` takes on ``version`` (those every settling document lists), None where none settles it."""
    documents = documents_for(version)[0]
    documents = documents[-1:] if documents == DOCUMENTS else documents
    lists = [d.table.get(op) for d in documents]
    if not documents or any(types is None for types in lists):
        return None, "no document lists its types"
    common = tuple(t for t in lists[0] if all(t in other for other in lists[1:]))
    return common, "; ".join(d.cited() for d in documents)


def opset_fact(version: str, opset: int) -> Fact:
    """Whether the parser of ``version`` is documented to take a model of default-domain ``opset``: ACCEPTED inside
    the documented range; outside it SILENT, not refused: the range is what the document supports, and the parser
    itself refuses no opset (it only warns below 7, :data:`OPSET_NOT_CHECKED`), while an operator whose definition
    changed after the range may fail to import."""
    def state(document: OperatorDocument) -> str:
        inside = opset <= document.opset_max and (document.opset_min is None or opset >= document.opset_min)
        return ACCEPTED if inside else SILENT
    fact = _agreed(documents_for(version)[0], state)
    if fact.state == SILENT:
        return Fact(SILENT, f"outside the documented range ({fact.source}); {OPSET_NOT_CHECKED}")
    return fact


def opset_range(version: str) -> str:
    """The opset range the settling documents state, in words."""
    documents = documents_for(version)[0]
    if not documents:
        return "unknown"
    if documents == DOCUMENTS:
        documents = documents[-1:]
    return " / ".join(f"{d.opset_min or '?'} to {d.opset_max} ({d.branch})" for d in documents)


def quantized_type_fact(version: str, op: str, element: str) -> Fact:
    """Whether a ``op`` (QuantizeLinear or DequantizeLinear) of quantized type ``element`` (INT8, UINT8, FP8, INT4,
    FP4, INT32...) is taken: the DequantizeLinear row's Supported Types name the quantized types (a Q writes what its
    DQ reads); above the newest branch read, TensorRT 11's guide names them too."""
    documents, _ = documents_for(version)

    def state(document: OperatorDocument) -> str:
        return ACCEPTED if element in (document.table.get("DequantizeLinear") or ()) else REFUSED
    fact = _agreed(documents, state)
    if element == "UINT8" and parsed(version) >= UINT8_READ_AS_INT8_SINCE:
        return Fact(SILENT, f"not in the DequantizeLinear row ({fact.source}), but {UINT8_READ_AS_INT8}")
    if element == "UINT8" and fact.refused:
        return Fact(REFUSED, f"{fact.source}; {IMPORTER_CHECKS}")
    if parsed(version) >= (11, 0) and fact.state == SILENT:
        return Fact(ACCEPTED if element in ("INT8", "FP8", "INT4", "FP4") else REFUSED, SYMMETRIC_SINCE_11)
    return fact


def float_type_fact(version: str, element: str) -> Fact:
    """Whether a QuantizeLinear's input (and a Q/DQ's scale) may be of float type ``element`` (FP32, FP16, BF16): the
    QuantizeLinear row's Supported Types."""
    def state(document: OperatorDocument) -> str:
        return ACCEPTED if element in (document.table.get("QuantizeLinear") or ()) else REFUSED
    return _agreed(documents_for(version)[0], state)


def stored_weights_fact(version: str, element: str) -> Fact:
    """Whether a DequantizeLinear may read weights stored quantized (an initializer of type ``element``) rather
    than the output of a QuantizeLinear: refused before 10.0 (the parser's own error, in public reports); INT4 from
    10.0 is the documented weight-only quantization; otherwise silent."""
    if parsed(version) < (9, 0):
        return Fact(REFUSED, ACTIVATION_INPUT_ONLY)
    if parsed(version) >= STORED_WEIGHTS_SINCE and element in ("INT4", "FP4"):
        return Fact(ACCEPTED, INT4_WEIGHT_ONLY)
    return Fact(SILENT, f"no document read says whether TensorRT {version} takes it; {ACTIVATION_INPUT_ONLY}")


def zero_point_fact(version: str) -> Fact:
    """A non-zero zero point (asymmetric quantization) is refused: the Q/DQ rows' Restrictions on every branch
    read, and TensorRT 11's guide (symmetric quantization only)."""
    documents, _ = documents_for(version)
    if not documents:
        return Fact(SILENT, "no document read covers this version")
    cited = "; ".join(d.cited() for d in documents)
    if parsed(version) >= (11, 0):
        cited = f"{cited}; {SYMMETRIC_SINCE_11}"
    return Fact(REFUSED, f"{ZERO_POINT_RULE['QuantizeLinear']}, {ZERO_POINT_RULE['DequantizeLinear']}: {cited}; "
                         f"{IMPORTER_CHECKS}")
