"""Classify a TensorRT build log: the failure that stopped the build, and the INT8-related warnings it printed.

Pure Python (standard library only): it runs inside worker containers and in the host's tests.

TensorRT prints the same event in many surface forms, depending on who owns the logger:

======================  ================================================================================
trtexec                 ``[10/14/2023-15:37:16] [E] Error[10]: [optimizer.cpp::computeCosts::3728] ...``
Python ``trt.Logger``   ``[05/07/2024-17:13:08] [TRT] [E] 10: ...``
TRT 7 Python logger     ``[TensorRT] ERROR: ...``
custom loggers          ``[2022-11-08 06:01:58 WARNING] ...``
DeepStream              ``ERROR: [TRT]: 10: ...``
TRT 10.1+ recorder      ``[E] Error[10]: Error Code: 10: ...`` (no source location)
CI logs (GitHub etc.)   ``2026-11-24T10:00:00.123Z [E] ...`` (the runner's timestamp before the logger's line)
Polygraphy              ``[E] ...``, ``[X] ...`` (extra verbose), ``[!] ...`` (critical), no ``[TRT]``
Python logging          ``ERROR:torch_tensorrt [TensorRT Conversion Context]:...``
loguru                  ``2024-08-30 23:24:09.688 | ERROR    | Process-6 | .../logging.py:24 - ...``
======================  ================================================================================

``parse_log_line`` strips all of that down to the message body; every rule below keys on bodies only.

Text pasted from an issue thread is read too (``pasted.unpasted``): GitHub quote markers (``> ``, nested, or
HTML-escaped ``&gt;``), markdown code fences and the backticks of inline code, ANSI colour codes and CRLF line ends
are removed first, and lines a terminal or a person wrapped are joined when the lines as they stand name no failure
(a message continues on a line with no logger decoration of its own: ``... for operation:`` then
``291: dequantize: ...``).

Priority rule for the primary failure (``LogClassification.category``):

1. "Skipping tactic" lines are never the failure, whatever their severity (trtexec prints them as ``Error[9]``):
   TensorRT tries the next tactic. They are counted in ``warnings["tactic-skipped"]``.
2. Only lines of severity error or internal-error, or lines with no recognisable severity (continuations of a
   multi-line message, crash output, Python tracebacks), can be failure evidence. Warning, info and verbose
   lines never are: an out-of-memory *warning* is TensorRT retrying with less memory, not a failed build.
3. Evidence is either a root cause (one of ``ROOT_CAUSE_CATEGORIES``) or a consequence of an earlier failure
   (``Assertion engine != nullptr failed``, "all backend strategies failed", trtexec's "Engine could not be
   created" tail, ``&&&& FAILED``).
4. The primary category is the EARLIEST root cause in the log. So in a log where a tactic was skipped because
   Myelin ran out of memory and then no implementation was left for the node, the build failed with
   ``no-implementation`` (the memory shortage is the likely reason no tactic was left; the skips are counted).
5. A message of a known upstream failure (a ``KnownFailure``) is a root cause of its category even without the words
   above. TensorRT's own ``Error Code N: Internal Error (...)`` messages that name no cause above are the root cause
   ``internal-assert`` (TensorRT reporting an internal failure), whatever prefix or source location stands before
   them (``[file.cpp::function::line]``, ``file.cpp:12:``, ``Error message:``, none): never the catch-all below.
6. Error lines that match no rule, and Python exception lines, make the category ``runtime-error`` (the
   record vocabulary's catch-all) when no root cause was found; so does a log holding only consequences.
7. ``None`` means the text shows no failure. It does not prove the build succeeded (the log may be cut short):
   callers combine it with the exit status and the presence of the engine file.
8. ``failure_shown`` says whether the text shows that a build stopped, or only carries a failure's message: it is
   shown by a line of severity error or internal-error (tactic skips excepted), a consequence line (rule 3, or a
   tool's "export failure"), a crash or a Python exception. A fragment copied from an issue without its tags
   (``Error Code 9: ... infer_type ...``) is classified by its message, with ``failure_shown`` False: the message is
   the failure's, but the fragment alone does not prove the build failed.

Known upstream failures (``LogClassification.known_failure``) and known forms are what each failure pattern declares
it looks like in a log, in its case (``cases/<pattern>.py``, ``Case.log_signatures``); the caller hands the table in
(:class:`~harness.tensorrt.signatures.LogSignatures`: the library's, or the one a generated cases directory carries).
When the primary failure's message is one that an upstream report names, the classification names it, with the
failure pattern and the report. It keys on the message body, so every surface form and release (with or without the
``file.cpp::function::line`` location) gives the same known failure. One exception to "the primary failure's
message": when a build ends with no implementation for a node (or a known failure that yields to a skip reason, a
Myelin ForeignNode's) after tactics were skipped for a known failure's message (``KnownFailure.skip_reason``: Myelin
could not type a Q or DQ), the known failure is that reason, the first one skipped; and when the text shows no failure
at all but a tactic was skipped for such a reason (a pasted ``[E] Error[9]: ... Skipping tactic ... infer_type ...``
line), the classification names that known failure with category None and ``failure_shown`` False: the signature is
there, the failure is not (the build may still end with an engine, slower:
https://github.com/NVIDIA/Model-Optimizer/issues/118).

Known forms (:func:`known_forms`) are weaker: the failing node's name or warning lines have the form a pattern gives (a
Q/DQ weights layer without implementation, TopK or LayerNorm tensors without scales), but other models can show the
same form; each names its pattern, report and what it cannot tell apart.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from harness.tensorrt.pasted import is_elision, unpasted
from harness.tensorrt.signatures import DLA_FALLBACK_LINE, NO_SIGNATURES, KnownFailure, KnownForm, LogSignatures

UNRECOGNIZED_FAILURE = "runtime-error"
WARNING_KINDS = (
    "missing-scale",
    "int64-downcast",
    "precision-constraint-ignored",
    "calibrator-ignored",
    "tactic-skipped",
    "deprecated-api",
    "implicit-quantization-deprecated",
    "calibration-profile-default",
    "calibration-cache-rejected",
    "qdq-type-not-inferred",
    "dla-fallback",
)
_FAILURE_SEVERITIES = (None, "error", "internal-error")

_SEVERITY_BY_TAG = {
    "F": "internal-error",
    "INTERNAL ERROR": "internal-error",
    "INTERNAL_ERROR": "internal-error",
    "E": "error",
    "ERROR": "error",
    "W": "warning",
    "WARN": "warning",
    "WARNING": "warning",
    "I": "info",
    "INFO": "info",
    "V": "verbose",
    "VERBOSE": "verbose",
    # Polygraphy's own tags ([X] extra verbose, [!] critical) and Python logging's level names.
    "X": "verbose",
    "!": "error",
    "CRITICAL": "internal-error",
    "DEBUG": "verbose",
}

# One leading decoration of a log line; parse_log_line strips them one after the other.
_LINE_DECORATION = re.compile(
    r"""^\s*(?:
        # loguru: "2024-08-30 23:24:09.688 | ERROR    | Process-6 | /path/logging.py:24 - " (torch_tensorrt's logger)
        \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?\s*\|\s*(?P<loguru>[A-Z]+)\s*\|(?:[^|\n]*\|)*?[^|\n]*?:\d+\ -(?=\s)
        # Python logging's default format: "ERROR:torch_tensorrt [TensorRT Conversion Context]:"
      | (?P<pylog>CRITICAL|ERROR|WARNING|INFO|DEBUG):[A-Za-z_][\w.]*(?:\ \[[^\]\n]+\])?:
        # [10/14/2023-15:37:16], or [2022-11-08 06:01:58 WARNING] with the severity inside the bracket
      | \[\d{1,4}[/-]\d{1,2}[/-]\d{1,4}[-T\ ]\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?:\s+(?P<stamp_severity>[A-Za-z_ ]+?))?\]
      | \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?(?=\s)                 # 2026-11-24T10:00:00.123Z (CI logs)
      | \[(?P<letter>[FEWIVX!])\]                                             # [E] (trtexec, Polygraphy: [X], [!])
      | \[(?:TRT|TensorRT)\]:?                                                # [TRT], [TensorRT], DeepStream's [TRT]:
      | (?P<word>INTERNAL[\ _]ERROR|ERROR|WARNING|WARN|INFO|VERBOSE):(?=\s|$)  # ERROR: (DeepStream, TRT 7 Python)
      | (?P<cut>INTERNAL[\ _]ERROR|ERROR|WARNING|WARN|INFO|VERBOSE)\](?=\s)  # [ERROR] cut at its start by a paste
    )\s*""",
    re.VERBOSE,
)
# Error-recorder prefixes that come before the message itself: "Error[10]: ", "Error Code: 10: ".
_RECORDER_PREFIX = re.compile(r"^(?:Error\[\d+\]:|Error Code:\s*\d+:)\s*")
# The bare error code of the Python logger and DeepStream ("[TRT] [E] 10: ..."); only stripped on error lines.
_BARE_ERROR_CODE = re.compile(r"^\d+:\s+")
# Source locations: 8.x "[optimizer.cpp::computeCosts::3728] " anywhere; "onnx2trt_utils.cpp:374: ",
# "ModelImporter.cpp:134 " and TRT 7 "../builder/tacticOptimizer.cpp (1715) - " at the start.
_BRACKETED_LOCATION = re.compile(r"\[[^\[\]\s]+?::[^\[\]\s]*::\d+\]\s*")
_LEADING_LOCATION = re.compile(r"^[\w./\\:-]*?[\w-]+\.(?:cpp|cu|cc|cxx|hpp|h)(?::\d+:?| \(\d+\) -)\s+")

_TACTIC_SKIP = re.compile(r"Skipping tactic", re.IGNORECASE)
_WARNING_PATTERNS = {
    "missing-scale": re.compile(r"Missing scale and zero-point for tensor|Missing dynamic range for tensor", re.I),
    "int64-downcast": re.compile(r"INT64 weights|cast(?:ing)? down to INT32", re.I),
    "precision-constraint-ignored": re.compile(
        r"obeys the requested constraints|requested\b.*\bprecision\b.*\bignored", re.I
    ),
    "calibrator-ignored": re.compile(
        r"Calibrator won't be used in explicit (?:precision|quantization) mode|Calibrator is not being used", re.I
    ),
    "tactic-skipped": _TACTIC_SKIP,
    "deprecated-api": re.compile(r"\bDeprecationWarning\b"),
    # 10.1+: the Python binding's DeprecationWarning of the calibrator API ("Use Deprecated in TensorRT 10.1.
    # Superseded by explicit quantization. instead.", NVIDIA/TensorRT python/src/infer/pyCore.cpp and utils.cpp), and a
    # compiler's warning for the C++ classes ("'IInt8EntropyCalibrator2' is deprecated", NvInfer.h of 10.8, in
    # https://github.com/laugh12321/TensorRT-YOLO/issues/95).
    "implicit-quantization-deprecated": re.compile(
        r"Deprecated in TensorRT 10\.1\. Superseded by explicit quantization|'IInt8\w*Calibrator\w*' is deprecated"
    ),
    # No calibration profile set for a dynamic-shape network: TensorRT calibrates with profile 0
    # (https://github.com/marcoslucianops/DeepStream-Yolo/issues/603, https://github.com/NVIDIA/TensorRT/issues/4053).
    "calibration-profile-default": re.compile(r"Calibration Profile is not defined\. Calibrating with Profile \d+"),
    # A calibration cache TensorRT will not use (its header names another calibrator algorithm). Wording of TensorRT
    # 10.x logs quoted in public build notes; no first-party thread with it was found.
    "calibration-cache-rejected": re.compile(r"Calibration table does not match calibrator algorithm type", re.I),
    # Myelin could not type a Q or DQ (FP8 after a MaxPool, INT8 moved before an FP16-scaled DQ): counted on every
    # line, also the "Skipping tactic" ones, which are never the failure (a build can end with an engine, slower:
    # https://github.com/NVIDIA/Model-Optimizer/issues/118).
    "qdq-type-not-inferred": re.compile(r"Could not infer output types for operation:\s*\d+:\s*(?:de)?quantize:"),
    "dla-fallback": re.compile(DLA_FALLBACK_LINE),
}

_CONSEQUENCE = re.compile(
    r"Assertion engine != nullptr failed"
    r"|all backend strategies failed"
    r"|Engine generation failed"
    r"|Engine could not be created"
    r"|\bBuild(?:ing)? engine failed"
    r"|Failed to create engine"
    r"|Engine set up failed"
    r"|Network validation failed"
    r"|failed to build (?:the )?(?:trt |tensorrt )?(?:serialized )?(?:network|engine)"
    r"|^&&&& FAILED\b"
    r"|Invalid Engine\. Please ensure the engine was built correctly"  # Polygraphy
    r"|^FAILED \| Runtime: "  # Polygraphy's "[E] FAILED | Runtime: 12.3s | Command: ..." tail
    r"|Inference set up failed|Engine deserialization failed|Got invalid engine"  # trtexec, loading an engine
    r"|\bexport failure\b",  # Ultralytics' exporter: "TensorRT: export failure ❌ 9.4s: ..."
    re.IGNORECASE,
)
# The process died: the build stopped, whatever tags the line lost (rule 8).
_PROCESS_DIED = re.compile(
    r"Segmentation fault|\bcore dumped\b|\bSIG(?:SEGV|ABRT|BUS|ILL|FPE|KILL)\b|Fatal Python error"
    r"|terminate called after throwing|double free or corruption|free\(\): invalid|stack smashing detected"
    r"|Illegal instruction|^Aborted\b|^Killed\b|^Bus error\b"
)
# Checked in this order on one line: the first category whose pattern matches owns the line.
_ROOT_CAUSE_PATTERNS = (
    (
        "no-implementation",
        re.compile(
            r"could not find any implementation for node"
            r"|could not find any supported formats consistent with input/output data types"
            r"|Unable to find valid implementation for layer",  # TRT 6-7: "Misc Error in getFormatRequirements"
            re.IGNORECASE,
        ),
    ),
    (
        "parser",
        re.compile(
            r"While parsing node number"
            r"|No importer registered for op"
            r"|In function (?:parseGraph|parseNode|importNode|importInputs|import\w+)\b"
            r"|\b(?:UNSUPPORTED_NODE\w*|UNSUPPORTED_GRAPH|INVALID_NODE|INVALID_GRAPH|INVALID_VALUE"
            r"|MODEL_DESERIALIZE_FAILED)\b"
            r"|Invalid Node -"
            r"|Failed to parse (?:the )?ONNX"
            r"|could not parse (?:the )?(?:ONNX|input|model)"
            r"|Unsupported ONNX (?:data type|opset|IR version)"
            r"|Unsupported (?:operator|op)\b"
            r"|\bopset\b.*\bnot supported\b",
            re.IGNORECASE,
        ),
    ),
    (
        "out-of-memory",
        re.compile(
            r"\bout of memory\b|\bOutOfMemory\b|could not be allocated|insufficient (?:GPU |device |host )?memory"
            r"|cudaErrorMemoryAllocation|\bMemoryError\b|std::bad_alloc",
            re.IGNORECASE,
        ),
    ),
    (
        "calibration",
        re.compile(
            r"Calibration failure|no scaling factors detected|calibration (?:failed|error)"
            r"|failed to (?:read|load|write|run) (?:the )?calibrat"
            r"|calibration cache\b.*\b(?:invalid|corrupt|mismatch|incompatible)"
            r"|Calibration table does not match calibrator algorithm type",
            re.IGNORECASE,
        ),
    ),
    (
        "cuda-runtime",
        re.compile(
            r"\bCuda Runtime\b|\bCuda Driver\b|\bCuda Error in\b|\bCUDA (?:error|failure)\b|\bcudaError\w*"
            r"|CUDA initialization failure|\bCUDNN_STATUS_\w+|\bCUBLAS_STATUS_\w+"
            r"|\bcu(?:da)?Memcpy\w*\b.*\b(?:failed|invalid argument)",
            re.IGNORECASE,
        ),
    ),
    # "Assertion x failed" (8.x+), TRT 7's "Assertion Error in operator(): 0 (condition)"
    ("internal-assert", re.compile(r"\bAssertion\b.*\bfailed\b|\bAssertion Error in\b", re.IGNORECASE)),
    ("crash", _PROCESS_DIED),
)
# "Error Code 2: Internal Error (...)": TensorRT's internal-error envelope; its inner text may name a root cause above.
_INTERNAL_ERROR = re.compile(r"\bError Code \d+: Internal Error\b")
INTERNAL_ERROR_CATEGORY = "internal-assert"
ROOT_CAUSE_CATEGORIES = tuple(category for category, _ in _ROOT_CAUSE_PATTERNS)
# "RuntimeError: ...", "pycuda._driver.LogicError: ...": a Python exception ended the build script.
_PYTHON_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): ")

_NO_IMPLEMENTATION_NODE = re.compile(
    r"could not find any implementation for node (?P<node>.+?)(?:, try increasing the workspace size.*)?$",
    re.IGNORECASE,
)
_ERROR_ENVELOPE = re.compile(r"Error Code \d+: [^()]*?\((?P<inner>.*)\)\.?\s*$")
_UNABLE_TO_FIND_NODE = re.compile(r"Unable to find valid implementation for layer (?P<node>.+)$")
_UNSUPPORTED_FORMATS_NODE = re.compile(
    r"^(?P<node>.+?): could not find any supported formats consistent with input/output data types", re.IGNORECASE
)

_WRAPPED_LINES_JOINED = 8  # a message wrapped over more lines than this is not one message
# A line without decoration that starts something of its own rather than continuing a wrapped message.
_STARTS_ITS_OWN_LINE = re.compile(
    r"Traceback \(|File \"|Layer\(\w+\): |&&&&|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): ")

_VERSION_BANNER = re.compile(r"\bTensorRT v(?P<code>\d{4,6})\b")
# "TensorRT version: 10.3.0", "The TensorRT version is 8.6.1.6", "TensorRT Version: 10.3", "starting export with
# TensorRT 10.0.0b6" (Ultralytics), "tensorrt==8.6.1" / "tensorrt 10.8.0.43" (pip), a "TensorRT-8.6.1.6" install path.
_VERSION_LINE = re.compile(r"(?:TensorRT version(?::|\s+is)|export with TensorRT|\btensorrt(?:==|\s+)(?=\d+\.\d)"
                           r"|\bTensorRT-(?=\d+\.\d+\.\d))\s*(?P<version>\d+\.\d+(?:\.\d+)*)", re.IGNORECASE)
# Text only TensorRT's tools write: its logger tags, trtexec's "&&&&" lines and name, a layer information line (log
# form or the inspector's one-line form).
_TENSORRT_MARK = re.compile(r"\[TRT\]|\[TensorRT|TensorRT|&&&&|\btrtexec\b|\bLayer\(\w+\): |, LayerType: \w"
                            r"|\[(?:Gpu|Dla)Layer\] |\bIExecutionContext::|\bIBuilder::|\bINetworkDefinition::")
_ENGINE_JSON_START = re.compile(r'^\s*(?:\{\s*"(?:Layers|Bindings|Name)"|\[\s*[{"])')
_BINARY_SHARE = 0.05  # more undecodable or control characters than this: not text


@dataclass(frozen=True)
class LogLine:
    """One log line without its transport decoration; ``severity`` is None when the line names none."""

    severity: str | None
    body: str


@dataclass(frozen=True)
class LogClassification:
    """What a build log says: the primary failure (None if none) and counts of the INT8-related warnings."""

    category: str | None
    node: str | None
    message: str | None
    warnings: dict[str, int]
    known_failure: KnownFailure | None = None  # the upstream report the failure message matches, if one does
    failure_shown: bool = False  # the text shows a build that stopped, not only a failure's message (rule 8)
    stage: str | None = None  # "build" or "run" (the engine failed while loaded or run); None without a failure

    def to_dict(self) -> dict[str, object]:
        known = None if self.known_failure is None else {
            "id": self.known_failure.id, "pattern": self.known_failure.pattern, "source": self.known_failure.source}
        return {"category": self.category, "node": self.node, "message": self.message, "warnings": dict(self.warnings),
                "known_failure": known, "failure_shown": self.failure_shown, "stage": self.stage}


@dataclass(frozen=True)
class _Evidence:
    role: str  # "root", "unrecognized" or "consequence"
    category: str
    body: str
    shown: bool  # the line shows a build that stopped (rule 8)


def parse_log_line(line: str) -> LogLine:
    """Strip timestamp, severity tag, ``[TRT]`` tag, error-recorder code and source location from one line."""
    rest = line  # the line end goes with the body's final strip()
    severity = None
    while True:
        decoration = _LINE_DECORATION.match(rest)
        if decoration is None or decoration.end() == 0:
            break
        tag = (decoration.group("stamp_severity") or decoration.group("letter") or decoration.group("word")
               or decoration.group("cut") or decoration.group("loguru") or decoration.group("pylog"))
        if severity is None and tag is not None:
            severity = _SEVERITY_BY_TAG.get(tag.strip().upper())
        rest = rest[decoration.end():]
    while True:
        prefix = _RECORDER_PREFIX.match(rest)
        if prefix is None and severity in ("error", "internal-error"):
            prefix = _BARE_ERROR_CODE.match(rest)
        if prefix is None:
            break
        rest = rest[prefix.end():]
    rest = _BRACKETED_LOCATION.sub("", rest)
    rest = _LEADING_LOCATION.sub("", rest)  # one: the pattern is anchored at the start
    return LogLine(severity=severity, body=rest.strip())


def classify_log(text: str, signatures: LogSignatures = NO_SIGNATURES) -> LogClassification:
    """The primary failure category of a TensorRT build log and its warning counts (rules: module docstring); the
    known failures are those of ``signatures`` (the library's: ``cases.model.library_signatures()``)."""
    raw_lines = unpasted(text).splitlines()
    lines = [parse_log_line(line) for line in raw_lines]
    evidence_of: dict[LogLine, _Evidence | None] = {}  # a line not joined to another is read once for both passes
    direct = tuple(known for known in signatures.failures if not known.instead_of)
    result = _classify(lines, evidence_of, direct)
    if result.known_failure is None or result.category is None:
        joined_lines = _joined_lines(raw_lines, lines)
        joined = _classify(joined_lines, evidence_of, direct, count_warnings=False) \
            if len(joined_lines) < len(lines) else result
        if (joined.known_failure is not None and result.known_failure is None) or (
                result.category is None and joined.category is not None):
            result = dataclasses.replace(joined, warnings=result.warnings)  # warnings count physical lines
    return _read_in_context(result, raw_lines, lines, signatures)


def _classify(lines: list[LogLine], evidence_of: dict[LogLine, _Evidence | None],
              known_failures: tuple[KnownFailure, ...], count_warnings: bool = True) -> LogClassification:
    warnings = dict.fromkeys(WARNING_KINDS, 0)
    evidence: list[_Evidence] = []
    skipped_for: KnownFailure | None = None  # the first known failure a skipped tactic names
    for line in lines:
        for kind, pattern in _WARNING_PATTERNS.items() if count_warnings else ():
            if pattern.search(line.body):
                warnings[kind] += 1
        if _TACTIC_SKIP.search(line.body) and skipped_for is None:
            skipped_for = next((known for known in known_failures if known.skip_reason
                                and known.search(line.body)), None)
        if line.severity not in _FAILURE_SEVERITIES or _TACTIC_SKIP.search(line.body) or (
                "DLA" in line.body and _DLA_LAYER_UNSUPPORTED.search(line.body)):
            continue
        if line not in evidence_of:
            evidence_of[line] = _failure_evidence(line, known_failures)
        found = evidence_of[line]
        if found is not None:
            evidence.append(found)
    primary = _primary(evidence)
    if primary is None:  # a tactic skipped for a known reason is that failure's signature, not a failure (rule 8)
        return LogClassification(category=None, node=None, message=None, warnings=warnings,
                                 known_failure=skipped_for)
    category = primary.category  # a consequence or an unrecognized line carries UNRECOGNIZED_FAILURE
    node = _node_without_implementation(primary.body) if category == "no-implementation" else None
    known_failure = next((known for known in known_failures
                          if category == known.category and known.search(primary.body)), None)
    if skipped_for is not None and category == "no-implementation" and (
            known_failure is None or known_failure.yields_to_skip_reason):
        known_failure = skipped_for  # no implementation was left because every tactic was skipped for this reason
    return LogClassification(category=category, node=node, message=primary.body, warnings=warnings,
                             known_failure=known_failure, failure_shown=any(item.shown for item in evidence))


def _joined_lines(raw_lines: list[str], lines: list[LogLine]) -> list[LogLine]:
    """``lines`` (parsed from ``raw_lines``) with wrapped ones joined: a non-blank line with no logger decoration of
    its own continues the non-blank line before it, unless it starts something of its own (a traceback, a layer line,
    trtexec's ``&&&&``), up to ``_WRAPPED_LINES_JOINED`` lines in all. A line that is only an elision (``...``,
    ``[...]``) is read as a blank line."""
    messages: list[tuple[str | None, list[str]]] = []  # (severity, the bodies of its physical lines)
    for raw, line in zip(raw_lines, lines):
        body = "" if is_elision(line.body) else line.body  # "...": the paste left lines out; it ends a message
        decoration = _LINE_DECORATION.match(raw)
        continues = (messages and messages[-1][1][-1] and body and len(messages[-1][1]) < _WRAPPED_LINES_JOINED
                     and (decoration is None or decoration.end() == 0) and not _STARTS_ITS_OWN_LINE.match(body))
        if continues:
            messages[-1][1].append(body)
        else:
            messages.append((line.severity, [body]))
    return [LogLine(severity, " ".join(bodies)) for severity, bodies in messages]


def known_forms(text: str, signatures: LogSignatures,
                classification: LogClassification | None = None) -> list[tuple[KnownForm, int]]:
    """The known forms of ``signatures`` that ``text`` shows, each with how many lines show it (the failing node counts
    as one line)."""
    classification = classification or classify_log(text, signatures)
    counts = dict.fromkeys(signatures.forms, 0)
    bodies = None
    for known in signatures.forms:
        if known.kind in WARNING_KINDS:
            if bodies is None:
                bodies = [parse_log_line(line).body for line in unpasted(text).splitlines()]
            counts[known] = sum(bool(known.search(body)) for body in bodies)
        elif known.kind == classification.category and classification.node:
            counts[known] = int(bool(known.search(classification.node)))
    return [(known, count) for known, count in counts.items() if count]


def not_a_log(text: str, signatures: LogSignatures = NO_SIGNATURES,
              classification: LogClassification | None = None) -> str | None:
    """Why ``text`` (decoded with errors="replace") does not look like TensorRT output, or None when it does.

    A log looks like one when some line carries a logger's severity tag or timestamp, a TensorRT mark (``[TRT]``,
    ``TensorRT``, trtexec's ``&&&&``, a ``Layer(TYPE):`` line), or a failure, a known failure's signature or a
    warning this classifier knows; all read after what pasting added is removed (``unpasted``). ``classification``:
    the text's own, where the caller has it already (it is read once, not twice).
    """
    if not text.strip():
        return "it is empty" if not text else "it holds only white space"
    odd = sum(ch == "\ufffd" or (ch < " " and ch not in "\t\n\r\f\x1b") for ch in text)
    if "\x00" in text or odd > _BINARY_SHARE * len(text):
        return f"it holds binary data ({odd} of its {len(text)} characters are not text), not a text log"
    if _ENGINE_JSON_START.match(text):
        return "it looks like engine inspector JSON, not a build log: read it with `trt-matrix layers`"
    text = unpasted(text)
    if _TENSORRT_MARK.search(text) or any(_tensorrt_decoration(line) for line in text.splitlines()):
        return None
    result = classification or classify_log(text, signatures)
    if result.category is not None or result.known_failure is not None or any(result.warnings.values()):
        return None
    return ("no line carries a logger's severity tag ([E], [W], ERROR:, ...), a timestamp, a [TRT] tag or a "
            "TensorRT message this classifier knows")


def _tensorrt_decoration(line: str) -> bool:
    """Whether ``line`` starts with a logger's decoration that marks TensorRT output: any but Python logging's and
    loguru's, which mark it only for a TensorRT logger (torch_tensorrt's, Polygraphy's), not ``INFO:root:``."""
    decoration = _LINE_DECORATION.match(line)
    if decoration is None or decoration.end() == 0:
        return False
    if decoration.group("pylog") or decoration.group("loguru"):
        return bool(_TENSORRT_LOGGER.search(decoration.group(0)))
    return True


_TENSORRT_LOGGER = re.compile(r"tensorrt|\btrt\b|polygraphy", re.IGNORECASE)


def version_from_log(text: str) -> str | None:
    """The TensorRT version a log names ("8.5.2" from ``[TensorRT v8502]``, "10.3.0" from ``TensorRT version: 10.3.0``).

    The first mention wins. The banner code is major*1000 + minor*100 + patch up to 9.x (four digits) and
    major*10000 + minor*100 + patch from 10.0 (six digits): ``v100001`` is 10.0.1.
    """
    mentions = []
    banner = _VERSION_BANNER.search(text)
    if banner is not None:
        mentions.append((banner.start(), _version_from_banner_code(banner.group("code"))))
    line = _VERSION_LINE.search(text)
    if line is not None:
        parts = (line.group("version").split(".") + ["0", "0"])[:3]
        mentions.append((line.start(), ".".join(str(int(p)) for p in parts)))
    return min(mentions)[1] if mentions else None


def _version_from_banner_code(code: str) -> str:
    number = int(code)
    if len(code) >= 6:
        major, minor, patch = number // 10000, number // 100 % 100, number % 100
    else:
        major, minor, patch = number // 1000, number // 100 % 10, number % 100
    return f"{major}.{minor}.{patch}"


def _failure_evidence(line: LogLine, known_failures: tuple[KnownFailure, ...]) -> _Evidence | None:
    for known in known_failures:  # a known message first: a tool's "export failure: <known message>" line is its root
        if known.search(line.body):
            return _Evidence("root", known.category, line.body, _shows_a_stopped_build(line))
    if _REMOVED_API.search(line.body):  # "... export failure: 'IBuilderConfig' object has no attribute ..." too
        return _Evidence("root", REMOVED_API_CATEGORY, line.body, _shows_a_stopped_build(line))
    if _CONSEQUENCE.search(line.body):
        return _Evidence("consequence", UNRECOGNIZED_FAILURE, line.body, True)
    for category, pattern in _ROOT_CAUSE_PATTERNS:
        if pattern.search(line.body):
            return _Evidence("root", category, line.body, _shows_a_stopped_build(line))
    if _INTERNAL_ERROR.search(line.body):
        return _Evidence("root", INTERNAL_ERROR_CATEGORY, line.body, _shows_a_stopped_build(line))
    if line.severity is not None or _PYTHON_EXCEPTION.match(line.body):
        return _Evidence("unrecognized", UNRECOGNIZED_FAILURE, line.body, True)
    if _ERROR_CODE_ENVELOPE.search(line.body):  # TensorRT's error envelope pasted without its tag: its message only
        return _Evidence("unrecognized", UNRECOGNIZED_FAILURE, line.body, False)
    return None


def _shows_a_stopped_build(line: LogLine) -> bool:
    """Rule 8: an error-tagged line, a consequence line, a dead process or a Python exception shows it; a bare
    message does not."""
    return line.severity is not None or bool(_CONSEQUENCE.search(line.body) or _PROCESS_DIED.search(line.body)
                                             or _PYTHON_EXCEPTION.match(line.body))


def _primary(evidence: list[_Evidence]) -> _Evidence | None:
    for role in ("root", "unrecognized", "consequence"):
        for item in evidence:
            if item.role == role:
                return item
    return None


def _node_without_implementation(body: str) -> str | None:
    """The node a no-implementation message names, exactly as TensorRT spells it, without the final period."""
    envelope = _ERROR_ENVELOPE.search(body)
    message = envelope.group("inner") if envelope else body
    named = _NO_IMPLEMENTATION_NODE.search(message)
    if named is not None:
        return _without_trailing_punctuation(named.group("node"))
    named = _UNABLE_TO_FIND_NODE.search(message)
    if named is not None:
        return _without_trailing_punctuation(named.group("node"))
    named = _UNSUPPORTED_FORMATS_NODE.search(message)
    return named.group("node").strip() if named else None


def _without_trailing_punctuation(node: str) -> str:
    """Drop the sentence's period and any closing parenthesis the name does not open (TRT 7 wraps without a code)."""
    node = node.strip()
    while node:
        if node.endswith(")") and node.count(")") > node.count("("):
            node = node[:-1].rstrip()
        elif node.endswith("."):
            node = node[:-1].rstrip()
        else:
            break
    return node


# ---------------------------------------------------------------------------------------------------------------------
# Pasted fragments of 2024-2026 (issue 42): TensorRT 11's removals as Python meets them, DLA placement and fallbacks,
# the stage a failure happened in, the node a parser failure names, commands pasted beside the output.
# ---------------------------------------------------------------------------------------------------------------------

# A layer that leaves the DLA for the GPU, one line per layer: P20's known form declares it (cases/p20_*.py).

# A Python AttributeError on a TensorRT object or module: an API this TensorRT release does not have.
# "IExecutionContext::enqueueV3: Error Code 3: API Usage Error (...", "Error Code 1: Myelin (...": any kind of error.
_ERROR_CODE_ENVELOPE = re.compile(r"\bError Code \d+: [\w ]+ \(")
_REMOVED_API = re.compile(r"(?:module 'tensorrt'|'tensorrt[\w.]*'(?: object)?|type object 'tensorrt[\w.]*') "
                          r"has no attribute '\w+'")
REMOVED_API_CATEGORY = "unsupported-api"
# What DLA cannot run, said at error severity before the layer falls back to the GPU ("leaky_1: ActivationLayer (with
# ActivationType = LEAKY_RELU) not supported for DLA.", DeepStream-Yolo#27): a reason, not the failure; a build
# without GPU fallback fails with a line of its own.
_DLA_LAYER_UNSUPPORTED = re.compile(r"\bnot supported (?:for|on) DLA\.?$")

# The stage a failure happened in: the last of these marks at or before the failing line decides.
_RUN_MARK = re.compile(r"Starting inference|\benqueueV[23]\b|\bexecuteV2\b|\bexecute_async(?:_v[23])?\b"
                       r"|--loadEngine|\bdeserializ|Inference set up failed|Loaded engine size|IExecutionContext::"
                       r"|\binfer(?:ence)? failed", re.IGNORECASE)
_BUILD_MARK = re.compile(r"Building (?:the )?(?:TensorRT )?engine|buildSerializedNetwork|buildEngineWithConfig"
                         r"|Engine could not be created|--saveEngine|While parsing|Timing Runner|Autotuning"
                         r"|export with TensorRT|Conversion Context|Calibrat|Could not find any implementation"
                         r"|Input filename:|Parsing node", re.IGNORECASE)

_STAGE_MARK = re.compile(f"(?P<run>{_RUN_MARK.pattern})|(?P<build>{_BUILD_MARK.pattern})", re.IGNORECASE)
_WRAPPED_PREFIX = 20  # characters: a shorter first line of a wrapped message is not looked for

# The node a parser failure names: "In node 11 with name: /a/GridSample and operator: GridSample3D", "[6] Invalid Node -
# /Where", or the "name:"
# of the node printed after "While parsing node number 4448 [TRTBatchedNMS -> "/TRTBatchedNMS_output_0"]:".
_PARSER_NODE_NAMED = re.compile(r"In node -?\d+ with name: (?P<name>\S+) and operator: (?P<op>\S+)"
                                r"|Invalid Node - (?P<invalid>\S+)")
_PARSING_NODE = re.compile(r"While parsing node number \d+ \[(?P<op>[^\]\s]+)(?: -> \"(?P<output>[^\"]*)\")?\]")
_NODE_NAME_FIELD = re.compile(r'^\s*name: "(?P<name>[^"]+)"\s*$')
_TIMING_RUNNER = re.compile(r"Timing Runner: (?P<node>.+?) \(\w+(?:\[0x[0-9a-fA-F]+\])?\)\s*$")


def _read_in_context(result: LogClassification, raw_lines: list[str], lines: list[LogLine],
                     signatures: LogSignatures) -> LogClassification:
    """``result`` with what the lines around the failure add: the stage, the node a parser failure names, a failing
    node's name cut short by the paste completed from the verbose log's Timing Runner line of the same layer, and a
    known failure told from another that prints the same message by the text around it (``KnownFailure.instead_of``,
    e.g. a DLA build's ForeignNode, P20, not P8's)."""
    if result.category is None:
        return result
    changes: dict[str, object] = {"stage": _stage(result, lines)}
    if result.category == "parser" and result.node is None:
        changes["node"] = _parser_node(lines)
    elif result.node:
        runners = {m.group("node") for line in lines
                   if "Timing Runner: " in line.body and (m := _TIMING_RUNNER.search(line.body))}
        longer = sorted(name for name in runners if name.startswith(result.node) and len(name) > len(result.node))
        if longer:
            changes["node"] = longer[0]
    known = result.known_failure
    if known is not None:
        instead = next((other for other in signatures.failures if other.instead_of == known.id
                        and any(re.search(other.when_text, line) for line in raw_lines)), None)
        if instead is not None:
            changes["known_failure"] = instead
    return dataclasses.replace(result, **changes)


def _stage(result: LogClassification, lines: list[LogLine]) -> str:
    """"run" when the last build or run mark at or before the failing line is a run mark, else "build"."""
    failing = next((i for i, line in enumerate(lines) if line.body == result.message), None)
    if failing is None:  # a message joined from wrapped lines starts with its first physical line
        failing = next((i for i, line in enumerate(lines) if len(line.body) >= _WRAPPED_PREFIX
                        and result.message and result.message.startswith(line.body)), len(lines) - 1)
    for line in reversed(lines[:failing + 1]):
        mark = _STAGE_MARK.search(line.body)
        if mark is not None:
            return "run" if mark.group("run") else "build"
    return "build"


def _parser_node(lines: list[LogLine]) -> str | None:
    for line in lines:
        named = _PARSER_NODE_NAMED.search(line.body)
        if named is not None:
            return named.group("name") or named.group("invalid")
    for index, line in enumerate(lines):
        parsing = _PARSING_NODE.search(line.body)
        if parsing is None:
            continue
        for following in lines[index + 1:index + 40]:
            field = _NODE_NAME_FIELD.match(following.body)
            if field is not None:
                return field.group("name")
        return f"{parsing.group('op')} -> {parsing.group('output')}" if parsing.group("output") else parsing.group("op")
    return None


@dataclass(frozen=True)
class DlaFallback:
    """A layer TensorRT moved from the DLA to the GPU, and the reason the log gives (None where it gives none)."""

    layer: str
    layer_type: str | None
    reason: str | None


_DLA_SWITCHED = (
    re.compile(r"Layer '(?P<layer>.+)' \((?P<type>\w+)\): Unsupported on DLA\. Switching this layer's device type"),
    re.compile(r"Validation failed for DLA layer: (?P<layer>.+?)\. Switching to GPU fallback"),
    re.compile(r"Default DLA is enabled but layer (?P<layer>.+?) is not (?:supported|running) on DLA, falling back"),
    re.compile(r"^(?P<reason>DLA .+?)\. Switching to GPU for layer (?P<layer>\S+)"),
    re.compile(r"^(?P<layer>\S+) cannot run in INT8 mode due to (?P<reason>missing scale and zero point)"),
    re.compile(r"^(?P<reason>DLA .+?)\. Switching (?P<layer>\S.*) device type to GPU"),
)
# A reason line of its own before the switch: "/model.23/Concat_4: DLA only supports concatenation on the C
# dimension." (names its layer), "This version of DLA does not support reshape layers directly connected to ..."
_DLA_REASON = re.compile(r"^(?:(?P<layer>[^\s:]+): )?(?P<reason>.*\bDLA\b.*?)\.?$")
_NOT_A_DLA_REASON = re.compile(r"Switching|Splitting|falling back|Layers Running on|no layer in the network", re.I)


def dla_fallbacks(text: str) -> list[DlaFallback]:
    """The layers ``text`` says left the DLA for the GPU, in order, each once, with the reason the log gives."""
    found: dict[str, DlaFallback] = {}
    reasons: dict[str | None, str] = {}
    for raw in unpasted(text).splitlines():
        body = parse_log_line(raw).body
        switched = next((m for pattern in _DLA_SWITCHED if (m := pattern.search(body))), None)
        if switched is None:
            reason = _DLA_REASON.match(body)
            if reason is not None and not _NOT_A_DLA_REASON.search(body):
                reasons[reason.group("layer")] = reason.group("reason")
            continue
        groups = switched.groupdict()
        layer = groups["layer"]
        why = groups.get("reason") or reasons.pop(layer, None) or reasons.pop(None, None)
        if layer not in found:
            found[layer] = DlaFallback(layer, groups.get("type"), why)
    return list(found.values())


_COMMAND_IN_TEXT = re.compile(
    r"(?:^|(?<=[\s`'\"(>$#:]))(?P<command>(?:[\w.:/\\~-]*[/\\])?(?:trtexec(?:\.exe)?|polygraphy)"
    r"(?: +[^\s`|>]+)+)")


def pasted_commands(text: str) -> list[str]:
    """The trtexec and Polygraphy command lines ``text`` holds beside TensorRT's output (in a fence, in backticks,
    after a ``$ `` or ``PS C:\\>`` prompt, continued with ``\\``, after Polygraphy's ``Command:``), each once, in order;
    trtexec's own ``&&&& RUNNING`` banner is not one of them (it is read as the log's command)."""
    joined = re.sub(r"[ \t]*\\[ \t]*\r?\n[ \t]*", " ", unpasted(text))
    commands: list[str] = []
    for line in joined.splitlines():
        if line.lstrip().startswith("&&&&"):
            continue
        for match in _COMMAND_IN_TEXT.finditer(line):
            command = match.group("command").strip()
            if "--" in command and command not in commands:
                commands.append(command)
    return commands
