"""Every word of a verdict, an outcome and a precision, spelled once, with their orders and groups.

Standard library only, Python 3.8 and later, and no import of the project: the worker imports it inside containers
(``harness.worker.record`` builds every record from these words). What the words *mean* is the rest of the package's.
"""
from __future__ import annotations

# How a cell ends: a record's ``outcome`` (the record schema's enum, in its order).
PASS, FALLBACK, MISMATCH, UNVERIFIED, FAIL, UNAVAILABLE, TIMEOUT, CRASH, INFRA_ERROR = (
    "pass", "fallback", "mismatch", "unverified", "fail", "unavailable", "timeout", "crash", "infra-error")
OUTCOMES = (PASS, FALLBACK, MISMATCH, UNVERIFIED, FAIL, UNAVAILABLE, TIMEOUT, CRASH, INFRA_ERROR)
# Evidence about the pattern: judged against upstream claims (``agrees``) inside the container.
OBSERVED_OUTCOMES = (PASS, FALLBACK, MISMATCH, FAIL, CRASH, TIMEOUT)
FAILURE_OUTCOMES = (FAIL, CRASH, TIMEOUT)  # what a claimed ``fail`` agrees with (a timeout has no category)
LOST_CELL_OUTCOMES = (CRASH, TIMEOUT)  # a cell whose process ended without handing back a record

# What an upstream claim can say (cases.model imports them): the observed words, and ``unsupported`` (the backend
# refuses the operator or the API).
UNSUPPORTED = "unsupported"
CLAIM_OUTCOMES = (PASS, FAIL, FALLBACK, MISMATCH, UNSUPPORTED)  # mismatch: built, output wrong (P19)

# Precisions a backend can run a node in, narrowest first, with their width in bits. The order is total (INT8 before
# FP8, FP16 before BF16: a node with several is named by the first); the widths say what a fallback is
# (harness.worker.record.fell_back): another precision than asked and not a narrower one.
FP4, INT8, FP8, FP16, BF16, FP32, UNKNOWN_PRECISION = "fp4", "int8", "fp8", "fp16", "bf16", "fp32", "unknown"
PRECISION_BITS = {FP4: 4, INT8: 8, FP8: 8, FP16: 16, BF16: 16, FP32: 32}
PRECISION_ORDER = tuple(PRECISION_BITS)  # narrowest first
FLOAT_PRECISIONS = tuple(p for p in PRECISION_ORDER if p != INT8)
# The record schema's enum (its order): ``unknown`` is a precision the backend did not show (an unverified node).
PRECISIONS = (INT8, FP16, FP32, BF16, FP8, FP4, UNKNOWN_PRECISION)
REQUESTED_PRECISIONS = (INT8, FP8, FP4, FP16, BF16)  # what a cell can ask for (cases.model's, in index.json)

# A variant's role in its case: the verdicts judge the failing form as reported (the controls, for the control
# pattern), then its workarounds; sweep points are counted beside.
FAILING_ROLE, WORKAROUND_ROLE, SWEEP_ROLE, CONTROL_ROLE = "failing", "workaround", "sweep", "control"
VARIANT_ROLES = (FAILING_ROLE, WORKAROUND_ROLE, SWEEP_ROLE, CONTROL_ROLE)

# What an outcome or a claim says about deploying the pattern on the target, best first.
WORKS, FALLS_BACK, FAILS, CANNOT_EXIST = "works", "falls-back", "fails", "cannot-exist"
ANSWERS = (WORKS, FALLS_BACK, FAILS, CANNOT_EXIST)

# What a not-applicable finding answers: the case says the target's backend has no analogue of the pattern (not one
# of ANSWERS: no outcome gives it; the scan lists such a finding as clear on that target, never as its headline).
DOES_NOT_CONCERN = "does-not-concern"

# What a piece of evidence is about (scan.json's ``scope``), closest to the user's layer first: the user's own layer
# cut out and run, the library variant the matcher named, the case's reported (failing) form.
YOUR_LAYER, VARIANT, REPORTED_FORM = "your-layer", "variant", "reported-form"
SCOPES = (YOUR_LAYER, VARIANT, REPORTED_FORM)

# How a verdict is known: its evidence bases (harness.judgement.bases.BASES says their precedence, what each may give
# and how a page shows it).
OBSERVED, CLAIMED = "observed", "claimed"
NOT_APPLICABLE, FACT, RANGE_CLAIMED, PREDICTED = "not-applicable", "fact", "range-claimed", "rule-predicted"
PARSER = "parser-fact"  # what the ONNX parser of the target's TensorRT version refuses in the model, as documented

# The scan's verdicts (one user's model on one target), worst first.
BLOCKED, LIKELY, VERIFIED, CLEAR = "blocked", "likely", "verified", "clear"
SCAN_VERDICTS = (BLOCKED, FALLBACK, UNAVAILABLE, UNVERIFIED, LIKELY, VERIFIED, CLEAR)
SCAN_GOOD = (LIKELY, VERIFIED)  # expected to build in the precision asked
SCAN_FAILING = (BLOCKED, FALLBACK)  # expected not to, or not all as asked: the scan lists the workarounds
SCAN_WORKAROUND_VERDICTS = (*SCAN_FAILING, UNVERIFIED)  # the verdicts a finding lists the library's workarounds for
SCAN_NOTHING_TO_FIX = (*SCAN_GOOD, CLEAR)  # --fix leaves a finding with one of these alone

# The planning view's verdicts (one pattern on one target) that observation gives, best first; a cell decided on
# another basis is that basis (harness.judgement.bases.PLANNING_VERDICTS places them).
WORKS_AS_REPORTED, WORKAROUND, PRECISION_FALLBACK, FAILS_AS_REPORTED, PRECISION_UNVERIFIED, NOT_RUN, \
    CANNOT_EXIST_HERE = WORKS, WORKAROUND_ROLE, FALLBACK, FAILS, UNVERIFIED, "not-run", CANNOT_EXIST
OBSERVED_PLANNING_VERDICTS = (WORKS_AS_REPORTED, WORKAROUND, PRECISION_FALLBACK, FAILS_AS_REPORTED)
UNDECIDED_PLANNING_VERDICTS = (PRECISION_UNVERIFIED, NOT_RUN, CANNOT_EXIST_HERE)  # after every basis's
PLANNING_GOOD = (WORKS_AS_REPORTED, WORKAROUND)  # something observed works on the target
PLANNING_PREFERENCE = (WORKS_AS_REPORTED, WORKAROUND, PRECISION_FALLBACK)  # the target to pick per pattern, best first

# The gates. `trt-matrix run --fail-on LEVEL`, mildest first: a cell fails it when its outcome is evidence at least as
# severe as the level's. `trt-matrix scan --fail-on LEVEL`: the scan exits 1 when a target's verdict is at least as bad
# as the level (in SCAN_VERDICTS' worst-first order).
RUN_FAIL_ON_LEVELS = (FALLBACK, MISMATCH, FAIL)
SCAN_FAIL_ON_LEVELS = (BLOCKED, FALLBACK, UNVERIFIED)
SCAN_FAIL_ON_DEFAULT = BLOCKED
