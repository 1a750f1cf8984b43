"""The data a reproducer case declares, and the registry that defining a case fills.

A case is a subclass of :class:`Case`: class attributes say what it is (id, title, upstream links, build mode,
opset), ``variants`` lists its variants as data, and one small function, ``build(variant)``, returns the
onnx-graphsurgeon graph of a variant. Defining the subclass registers it (see :func:`all_cases`).
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, ClassVar, Iterable, NamedTuple, Sequence

# The variant roles, the precisions a case can ask an expected node to run in (Built.expected_precision), the claim
# type (for one target, or over a range with a Scope) and the outcomes and strengths a claim can name are
# harness.judgement's.
from harness.judgement.claims import CLAIM_STRENGTHS, Claim  # noqa: F401
from harness.judgement.vocabulary import CLAIM_OUTCOMES, REQUESTED_PRECISIONS, VARIANT_ROLES  # noqa: F401
from harness.targets.facts import (CALIBRATION_PROFILE, DLA, FP4_BUILDER_FLAG, FP8_BUILDER_FLAG, IMPLICIT_INT8, NEEDS,
                                   PRECISION_CONSTRAINTS, STRONG_TYPING)
from harness.targets.ranges import Scope  # noqa: F401 (what a case declares a range claim's scope with)
from harness.tensorrt.signatures import KnownFailure, KnownForm, LogSignatures

# implicit-int8: a float graph and a calibrator; explicit-qdq: Q/DQ nodes in the graph; float: a float graph without
# Q/DQ and without a calibrator, whose precision is asked for only through builder flags (knobs fp16/fp8/fp4) or the
# graph's own types (an FP16 graph, strongly typed).
BUILD_MODES = ("implicit-int8", "explicit-qdq", "float")
CALIBRATORS = ("entropy2", "minmax")
# Header algorithm names of TensorRT calibration caches ("TRT-8601-EntropyCalibration2"), as seen in real caches.
CACHE_ALGORITHMS = ("EntropyCalibration2", "MinMaxCalibration")


class Observation(NamedTuple):
    """What this project saw a case do on one target, never an upstream claim: the failure a ``trt-matrix reduce`` run
    kept (outcome, failure category, the error's kind and node) on the target it ran on. It has no source link and
    never reaches a record's ``expectation``; the case's own test asserts it, by generating and running the case."""

    target: str
    outcome: str
    category: str | None
    error_kind: str | None = None
    node: str | None = None
    message: str = ""
    made_by: str = "trt-matrix reduce"


class Tolerance(NamedTuple):
    """How close a target's output must be to the FP32 reference, and why that much."""

    min_cosine: float
    max_abs_error: float
    reason: str


@dataclasses.dataclass(frozen=True)
class Knobs:
    """Workaround knobs a variant sets for the backend (TensorRT reads all; ONNX Runtime those that apply)."""

    calibrator: str = "entropy2"
    native_instancenorm: bool | None = None
    extra_outputs: tuple[str, ...] = ()
    precision_constraints: str | None = None  # None, "prefer" or "obey"
    layer_precisions: tuple[tuple[str, str], ...] = ()  # (ONNX node name, precision)
    fp16: bool = False
    fp8: bool = False  # BuilderFlag.FP8 (weakly typed networks, TensorRT 10.x)
    fp4: bool = False  # BuilderFlag.FP4 (weakly typed networks, TensorRT 10.8+)
    # The device of a case about DLA, which wins over the target's: dla_core builds for that DLA core (Jetson AGX Orin
    # has 0 and 1) on every Orin target; gpu_only builds for the GPU even on a DLA target (dla_core in matrix.yaml);
    # neither: the target's device (its dla_core with GPU fallback, else the GPU).
    dla_core: int | None = None
    gpu_fallback: bool = False  # BuilderFlag.GPU_FALLBACK: layers DLA cannot run go to the GPU (DLA cells only)
    gpu_only: bool = False
    strongly_typed: bool = False
    # Optimization profiles, in order: each a tuple of (input name, min shape, opt shape, max shape) per dynamic input.
    profiles: tuple[tuple[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...], ...] = ()
    calibration_profile: int | None = None  # index into profiles TensorRT calibrates with; None: none set (TRT's default)
    # (TensorRT version, cache algorithm) of a calibration cache to reuse: the harness writes a cache with that header
    # ("TRT-8601-EntropyCalibration2" for ("8.6.1", "EntropyCalibration2")) before the build; the version "running"
    # stands for the version the cell runs on.
    calibration_cache: tuple[str, str] | None = None
    cache_only: bool = False  # hand TensorRT the cache and no calibration batches (as `trtexec --calib=FILE` does)

    def __post_init__(self):
        if self.calibrator not in CALIBRATORS:
            raise ValueError(f"Knobs: calibrator {self.calibrator!r} is not one of {CALIBRATORS}")
        if self.gpu_fallback and self.dla_core is None:
            raise ValueError("Knobs: gpu_fallback only means something for a DLA build: set dla_core")
        if self.gpu_only and self.dla_core is not None:
            raise ValueError(f"Knobs: gpu_only and dla_core {self.dla_core} ask for two devices: set one")
        if self.dla_core is not None and self.dla_core not in (0, 1):
            raise ValueError(f"Knobs: dla_core {self.dla_core!r} is not 0 or 1 (the DLA cores of a Jetson AGX Orin)")
        if self.precision_constraints not in (None, "prefer", "obey"):
            raise ValueError(f"Knobs: precision_constraints {self.precision_constraints!r} is not None, 'prefer' or 'obey'")
        for index, profile in enumerate(self.profiles):
            for name, *shapes in profile:
                if len({len(s) for s in shapes}) != 1 or any(
                    not lo <= mid <= hi for lo, mid, hi in zip(*shapes)
                ):
                    raise ValueError(f"Knobs: profiles[{index}] input {name!r}: min {shapes[0]}, opt {shapes[1]} and "
                                     f"max {shapes[2]} must have one rank and min <= opt <= max in every dimension")
        if self.calibration_profile is not None and not 0 <= self.calibration_profile < len(self.profiles):
            raise ValueError(f"Knobs: calibration_profile {self.calibration_profile} names no profile "
                             f"(there are {len(self.profiles)})")
        if self.calibration_cache is not None:
            version, algorithm = self.calibration_cache
            if not (version == "running" or re.fullmatch(r"\d+\.\d+\.\d+", version)) or (
                    algorithm not in CACHE_ALGORITHMS):
                raise ValueError(f"Knobs: calibration_cache {self.calibration_cache!r} must be (a TensorRT version "
                                 f"'MAJOR.MINOR.PATCH' or 'running', one of {CACHE_ALGORITHMS})")
        if self.cache_only and self.calibration_cache is None:
            raise ValueError("Knobs: cache_only needs a calibration_cache to hand TensorRT instead of batches")

    def changed(self) -> dict[str, Any]:
        """The knobs set to something other than their default, as :meth:`to_dict` writes them."""
        return dict(self._changed)

    @functools.cached_property
    def _changed(self) -> dict[str, Any]:  # read for every workaround of every verdict: made once per Knobs
        defaults = _default_knobs()
        return {name: value for name, value in self.to_dict().items() if value != defaults[name]}

    def to_dict(self) -> dict[str, Any]:
        out = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}  # each value immutable
        out["extra_outputs"] = list(self.extra_outputs)
        out["layer_precisions"] = dict(self.layer_precisions)
        out["profiles"] = [
            {name: {"min": list(lo), "opt": list(opt), "max": list(hi)} for name, lo, opt, hi in profile}
            for profile in self.profiles
        ]
        out["calibration_cache"] = None if self.calibration_cache is None else {
            "version": self.calibration_cache[0], "algorithm": self.calibration_cache[1]}
        return out


@functools.lru_cache(maxsize=1)
def _default_knobs() -> dict[str, Any]:
    """The default knobs as :meth:`Knobs.to_dict` writes them (asked once per workaround of every verdict)."""
    return Knobs().to_dict()


@dataclasses.dataclass(frozen=True)
class Variant:
    """One graph of a case: the failing form, a workaround, a point of a sweep, or a control.

    A workaround or sweep names the failing form it ``varies``; it ``inherits`` that form's evidence (the scan's
    reported-form tier) only when it keeps the form's structure. A variant of another structure is a form of its own.
    """

    name: str
    role: str
    description: str
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    knobs: Knobs = Knobs()
    claims: tuple[Claim, ...] = ()  # claims for one target each
    range_claims: tuple[Claim, ...] = ()  # claims over a range of targets (a Scope, a source, a basis)
    # What the graph itself needs of a target beyond what mode and knobs say (Case.needs_of adds those): FP8 or FP4
    # Q/DQ nodes ("fp8-qdq", "fp4-qdq"), names of harness.targets.facts.NEEDS.
    needs: tuple[str, ...] = ()
    mode: str | None = None  # overrides the case's build mode (e.g. a Q/DQ workaround of an implicit case)
    opset: int | None = None  # overrides the case's opset (e.g. an op that only exists from a later opset)
    varies: str | None = None  # the failing variant of the same case this sweep or workaround varies; None: a form of its own
    inherits: bool = False  # the varied form's evidence stands for this variant when it has none of its own (only a sweep that keeps the failing form's structure: same ops, edges and Q/DQ placement, other sizes, scales, batch)

    def __post_init__(self):
        if self.role not in VARIANT_ROLES:
            raise ValueError(f"Variant {self.name!r}: role {self.role!r} is not one of {VARIANT_ROLES}")
        if self.mode is not None and self.mode not in BUILD_MODES:
            raise ValueError(f"Variant {self.name!r}: mode {self.mode!r} is not one of {BUILD_MODES}")
        if self.opset is not None and (not isinstance(self.opset, int) or self.opset < 1):
            raise ValueError(f"Variant {self.name!r}: opset {self.opset!r} is not a positive int")
        if not self.name or any(c in self.name for c in "/\\ "):
            raise ValueError(f"Variant {self.name!r}: a name must be non-empty, without '/', '\\' or spaces")
        if self.varies is not None and not (isinstance(self.varies, str) and self.varies):
            raise ValueError(f"Variant {self.name!r}: varies {self.varies!r} must name a failing variant, or be None")
        if not isinstance(self.inherits, bool):
            raise ValueError(f"Variant {self.name!r}: inherits {self.inherits!r} must be True or False")
        if self.inherits and self.varies is None:
            raise ValueError(f"Variant {self.name!r}: inherits=True needs varies: the failing variant whose evidence "
                             "it inherits")
        if self.role == "failing" and self.varies is not None:
            raise ValueError(f"Variant {self.name!r}: a failing variant is the form others vary; its varies must be "
                             f"None, not {self.varies!r}")
        unknown_needs = sorted(set(self.needs) - set(NEEDS))
        if unknown_needs:
            raise ValueError(f"Variant {self.name!r}: needs {unknown_needs} are not among {NEEDS}")
        for claim in self.claims:
            if not isinstance(claim, Claim) or claim.ranged:
                raise ValueError(f"Variant {self.name!r}: claims holds Claim objects for one target each (a claim "
                                 "with a scope goes in range_claims)")
        for claim in self.range_claims:
            if not isinstance(claim, Claim) or not claim.ranged:
                raise ValueError(f"Variant {self.name!r}: range_claims holds Claim objects with a scope only (a claim "
                                 "for one target goes in claims)")
        if self.inherits and self.role != "sweep":
            raise ValueError(f"Variant {self.name!r}: a {self.role} never inherits the failing form's evidence (only a "
                             "sweep that keeps that form's structure does); inherits must be False")


class Match(NamedTuple):
    """One place in a user's model that has a case's pattern, named by the user's own nodes (the scanner's unit)."""

    case: str
    nodes: tuple[str, ...]  # the user's node names that make the pattern, the anchor node first
    variant: str | None = None  # the library variant this occurrence has the form of (e.g. a workaround), if any
    note: str = ""  # what makes it that pattern here, in a sentence


@dataclasses.dataclass(frozen=True)
class Built:
    """What a case's ``build`` returns: the onnx_graphsurgeon.Graph, the ONNX nodes that must run in INT8, and the
    nodes asked for another precision (``{node: "fp8"}``; an FP8 Q/DQ conv, an FP16 graph, a builder flag)."""

    graph: Any
    expected_int8: tuple[str, ...] = ()
    expected_precision: dict[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        wrong = {node: p for node, p in self.expected_precision.items() if p not in REQUESTED_PRECISIONS[1:]}
        if wrong:
            raise ValueError(f"Built: expected_precision {wrong} must name precisions of {REQUESTED_PRECISIONS[1:]} "
                             "(INT8 nodes go in expected_int8, which records compare today)")
        both = sorted(set(self.expected_int8) & set(self.expected_precision))
        if both:
            raise ValueError(f"Built: nodes {both} are in expected_int8 and asked for another precision")

    @property
    def requested(self) -> dict[str, str]:
        """Every expected node and the precision it is asked for, INT8 ones included, in build order."""
        return {**dict.fromkeys(self.expected_int8, "int8"), **self.expected_precision}


class FixTolerance(NamedTuple):
    """How far a rewrite may move the model's original outputs in FP32, per output: at least ``min_cosine`` to the
    original, and a max abs error at most ``max_relative_error`` of the output's largest magnitude; and why."""

    min_cosine: float
    max_relative_error: float
    reason: str


class FixResult(NamedTuple):
    """What one ``Case.fix`` did at one place of a user's graph (the user's node and tensor names)."""

    nodes_added: Sequence[str] = ()
    nodes_removed: Sequence[str] = ()
    outputs_added: Sequence[str] = ()
    # None: the rewrite only adds outputs or Identity nodes, or computes offline what a node computed: the original
    # outputs must stay bit-equal. Otherwise the tolerance the rewrite declares.
    tolerance: FixTolerance | None = None
    build_time: str = ""  # a knob the ONNX file cannot carry: applied at build time, said in the report
    note: str = ""  # what was done, in a sentence


class NoRewrite(Exception):
    """A case cannot rewrite a place into a workaround form; the message says why (raised before any edit)."""


class AlreadyInForm(NoRewrite):
    """The place already has the workaround's form: there is nothing to rewrite (not a place left unfixed)."""


_REGISTRY: dict[str, type["Case"]] = {}


class Case:
    """Base class of every reproducer case; subclassing registers the case."""

    id: ClassVar[str]
    title: ClassVar[str]
    pattern: ClassVar[str]  # the failure-patterns.md id: S1..S5, or "control"
    links: ClassVar[tuple[str, ...]]
    mode: ClassVar[str]
    opset: ClassVar[int]
    tolerance: ClassVar[Tolerance]
    variants: ClassVar[tuple[Variant, ...]]
    batch_count: ClassVar[int] = 8  # calibration batches written for implicit-int8 cases
    # backend name -> what a cell of this case observed on that backend does and does not show (e.g. that ONNX
    # Runtime has no analogue of a TensorRT fusion); the report prints it in that backend's cells.
    backend_notes: ClassVar[dict[str, str]] = {}
    # backend name -> why this case's finding cannot concern that backend (the case says it has no analogue there,
    # e.g. TensorRT's calibrator lifecycle on ONNX Runtime): its finding is "not applicable" on every target of the
    # backend, listed and never the headline.
    not_applicable: ClassVar[dict[str, str]] = {}
    # True for a pattern of the whole model rather than of a subgraph (P10: any model without Q/DQ needs a
    # calibrator): its matches name no nodes, and the scanner reports them without cutting out a reproducer.
    whole_model: ClassVar[bool] = False
    # What to do about the pattern, in a line: the workaround upstream confirmed, or the migration it asks for.
    remedy: ClassVar[str] = ""
    # A case made by `trt-matrix reduce` from a failure seen here, before anyone reported it upstream: what was seen, on
    # which target. Such a case has no links until its upstream issue exists.
    observed: ClassVar[Observation | None] = None
    # What the pattern looks like in a TensorRT log: the messages upstream reports name (KnownFailure) and the weaker
    # forms (KnownForm: a failing node's name, warning lines), each with its report and an example line. The
    # classifier reads them from the library's table (library_signatures), never from a list of its own.
    log_signatures: ClassVar[tuple[KnownFailure | KnownForm, ...]] = ()
    # The diagnose file kinds (harness/diagnosis/kinds) whose content is evidence of the pattern on its own: P11's
    # "calibration-cache" (a cache's header against each target's TensorRT).
    evidence_files: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for attr in ("id", "title", "pattern", "links", "mode", "opset", "tolerance", "variants"):
            if not hasattr(cls, attr):
                raise TypeError(f"Case {cls.__name__} ({cls.__module__}) must declare the class attribute {attr!r}")
        if cls.mode not in BUILD_MODES:
            raise TypeError(f"Case {cls.id}: mode {cls.mode!r} is not one of {BUILD_MODES}")
        names = [v.name for v in cls.variants]
        if len(set(names)) != len(names):
            raise TypeError(f"Case {cls.id}: variant names repeat: {sorted(n for n in names if names.count(n) > 1)}")
        failing = [v.name for v in cls.variants if v.role == "failing"]
        for v in cls.variants:
            if v.varies is not None and v.varies not in failing:
                raise TypeError(f"Case {cls.id}, variant {v.name}: field 'varies' names {v.varies!r}, which is not a "
                                f"failing variant of {cls.id} (its failing variants: {', '.join(failing) or 'none'})")
        for backend, why in cls.not_applicable.items():
            if not (isinstance(backend, str) and backend and isinstance(why, str) and why):
                raise TypeError(f"Case {cls.id}: not_applicable maps a backend name to why the finding cannot concern "
                                f"it, found {backend!r}: {why!r}")
        cls.log_signatures = tuple(_own_signature(cls, signature) for signature in cls.log_signatures)
        if cls.id in _REGISTRY:
            raise TypeError(f"Case id {cls.id!r} is declared twice: {_REGISTRY[cls.id].__module__} and {cls.__module__}")
        _REGISTRY[cls.id] = cls

    @staticmethod
    def build(variant: Variant) -> "Built":
        """Return the graph of ``variant`` and the nodes that must run in INT8."""
        raise NotImplementedError

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Every occurrence of this case's pattern in ``graph`` (an onnx_graphsurgeon.Graph of a user's model).

        A control has no pattern and finds nothing; every pattern case overrides this next to its ``build``.
        """
        return []

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        """Why ``fix`` cannot rewrite a user's model (places of the library form ``form``, None when the matcher
        could not tell) into ``workaround``'s form; None when it can. A case with a rewrite overrides this and
        ``fix`` next to its ``find``."""
        return f"case {cls.id} declares no rewrite into its workaround forms"

    @classmethod
    def fix(cls, graph: Any, match: Match, workaround: Variant) -> FixResult:
        """Rewrite the place ``match`` of ``graph`` (a user's onnx_graphsurgeon graph) into ``workaround``'s form, in
        place. Raises :class:`NoRewrite` naming the place when it cannot, before changing anything."""
        raise NoRewrite(cls.rewrite_problem(workaround) or f"case {cls.id}: no rewrite for {workaround.name}")

    @classmethod
    def variant(cls, name: str) -> Variant:
        """The variant called ``name``."""
        for variant in cls.variants:
            if variant.name == name:
                return variant
        raise KeyError(f"Case {cls.id} has no variant {name!r}. Its variants: {', '.join(v.name for v in cls.variants)}")

    @classmethod
    def needs_of(cls, variant: Variant) -> tuple[str, ...]:
        """What ``variant`` needs of a target (:func:`needs_of`, with this case's build mode for it)."""
        return needs_of(variant, cls.mode_of(variant))

    @classmethod
    def mode_of(cls, variant: Variant) -> str:
        return variant.mode or cls.mode

    @classmethod
    def opset_of(cls, variant: Variant) -> int:
        return variant.opset or cls.opset


def needs_of(variant: Variant, mode: str) -> tuple[str, ...]:
    """What ``variant``, built in ``mode``, needs of a target (harness.targets.facts.NEEDS, in that order): what its
    build mode and knobs ask of TensorRT's API or device, and what its graph declares (``variant.needs``)."""
    knobs = variant.knobs
    asked = set(variant.needs)
    if mode == "implicit-int8":
        asked.add(IMPLICIT_INT8)
        if knobs.calibration_profile is not None:
            asked.add(CALIBRATION_PROFILE)
    asked |= {need for need, wanted in ((FP8_BUILDER_FLAG, knobs.fp8), (FP4_BUILDER_FLAG, knobs.fp4),
                                        (STRONG_TYPING, knobs.strongly_typed), (DLA, knobs.dla_core is not None),
                                        (PRECISION_CONSTRAINTS, bool(knobs.precision_constraints or
                                                                     knobs.layer_precisions)))
              if wanted}
    return tuple(need for need in NEEDS if need in asked)


def all_cases() -> list[type[Case]]:
    """Every registered case, in id order (importing :mod:`cases` registers the library)."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def library_signatures(cases: Iterable[type[Case]] | None = None) -> LogSignatures:
    """The log classifier's table: every case's log signatures (default: the library's), known failures in case
    order."""
    declared = [s for case in (cases if cases is not None else all_cases()) for s in case.log_signatures]
    return LogSignatures(tuple(s for s in declared if isinstance(s, KnownFailure)),
                         tuple(s for s in declared if isinstance(s, KnownForm)))


def _own_signature(case: type[Case], signature: Any) -> KnownFailure | KnownForm:
    """``signature`` with the case's pattern; a TypeError naming the case when it is not a signature of it."""
    if not isinstance(signature, (KnownFailure, KnownForm)):
        raise TypeError(f"Case {case.id}: log_signatures holds {signature!r}, not a KnownFailure or KnownForm")
    if signature.pattern not in ("", case.pattern):
        raise TypeError(f"Case {case.id}: log signature {signature.id} names pattern {signature.pattern}, not the "
                        f"case's {case.pattern}")
    if signature.source not in case.links:
        raise TypeError(f"Case {case.id}: log signature {signature.id} cites {signature.source}, which is not among "
                        "the case's links")
    return signature._replace(pattern=case.pattern)


def get_case(case_id: str) -> type[Case]:
    try:
        return _REGISTRY[case_id]
    except KeyError:
        raise KeyError(f"No case with id {case_id!r}. Known cases: {', '.join(sorted(_REGISTRY)) or '(none)'}") from None


def iter_variants(cases: Iterable[type[Case]] | None = None):
    """Yield (case, variant) pairs for ``cases`` (default: the whole library)."""
    for case in cases if cases is not None else all_cases():
        for variant in case.variants:
            yield case, variant
