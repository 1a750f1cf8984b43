"""The facts of a matrix target: what its TensorRT release and its GPU can and cannot do, each with its source and
how sure it is, read from what the project records (never typed again here):

* the binding API recorded for each TensorRT release (``TRT_API_DIR``, tensorrt-VERSION.json): whether a release has
  ``BuilderFlag.INT8`` and the calibrators, ``BuilderFlag.FP8``/``FP4``, ``NetworkDefinitionCreationFlag
  .STRONGLY_TYPED``, the precision-constraint flags, ``IBuilderConfig.set_calibration_profile``;
* implicit quantization's lifecycle (:mod:`~harness.tensorrt.quantization_lifecycle`), where DLA
  exists and how a release types networks (:mod:`~harness.tensorrt.release_facts`);
* the target's platform and GPU architecture (matrix.yaml, :mod:`harness.matrix`).

A form of a case declares what it needs (:data:`NEEDS`: ``cases.model.Case.needs_of``). Some needs are the model's
own (:data:`MODEL_NEEDS`: a graph without Q/DQ needs a calibrator to get INT8, FP8 and FP4 Q/DQ need their type and a
GPU that has it); the others are how the case's cell is built (builder flags, a strong-typing request, precision
constraints, a calibration profile, a DLA core). :func:`blocks` says which fact of a target stops the library's cell
of a form; :func:`blocks_model` which stops a user's model of that form (only the model's own needs: the user may
build it without the reporter's knobs). A fact's ``effect`` says what an absent capability does:
:data:`REFUSES_BUILD` (the model cannot be built there: the calibrator API is gone, or TensorRT refuses the GPU),
:data:`CANNOT_EXPRESS` (the knob the cell's build sets does not exist there: that cell cannot exist, while the graph
may build without it) or :data:`NO_DEVICE` (the device the cell builds for does not exist there: DLA). The verdict
engine maps those to its own verdicts; this module names none.

A release without a recorded surface is placed between the two recorded ones around it when they agree
(``bracketed``), by a documented edge where the recorded ones differ (``documented``), or from the nearest recorded
surface of the same release line (``nearest``); where none of these applies the fact is ``not known`` and stops
nothing.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Iterable, NamedTuple

from harness import user_cache
from harness.shipped import shipped_path
from harness.targets.ranges import TargetLike
from harness.tensorrt import quantization_lifecycle as lifecycle
from harness.tensorrt import release_facts
from harness.tensorrt.platforms import compute_capability
from harness.tensorrt.versions import version_tuple

# The recorded binding API of each TensorRT release (tensorrt-VERSION.json; reference/SOURCES.md says where from).
TRT_API_DIR = shipped_path("reference/trt-api")

# What a form can need of a target (cases declare them: cases.model.NEEDS lists the same names).
IMPLICIT_INT8 = "implicit-int8"  # BuilderFlag.INT8 and a calibrator (or a calibration cache handed to one)
CALIBRATION_PROFILE = "calibration-profile"  # IBuilderConfig.set_calibration_profile (implicit INT8, dynamic shapes)
FP8_BUILDER_FLAG = "fp8-builder-flag"  # BuilderFlag.FP8 (weakly typed)
FP4_BUILDER_FLAG = "fp4-builder-flag"  # BuilderFlag.FP4 (weakly typed)
FP8_QDQ = "fp8-qdq"  # FP8 Q/DQ nodes in the graph: a GPU with FP8
FP4_QDQ = "fp4-qdq"  # FP4 Q/DQ nodes in the graph: the FP4 type and a GPU with FP4
STRONG_TYPING = "strong-typing"  # NetworkDefinitionCreationFlag.STRONGLY_TYPED
PRECISION_CONSTRAINTS = "precision-constraints"  # BuilderFlag.OBEY/PREFER_PRECISION_CONSTRAINTS, ILayer.precision
DLA = "dla"  # a DLA core on the target's platform and release
INT64_TYPE = "int64-type"  # not a need: whether INT64 tensors stay INT64 (10.0 on) or are cast down to INT32
NEEDS = (DLA, IMPLICIT_INT8, CALIBRATION_PROFILE, FP8_BUILDER_FLAG, FP4_BUILDER_FLAG, STRONG_TYPING,
         PRECISION_CONSTRAINTS, FP8_QDQ, FP4_QDQ)  # the order blocking() checks them in: device, API, GPU
MODEL_NEEDS = (IMPLICIT_INT8, FP8_QDQ, FP4_QDQ)  # what the model itself needs, whatever knobs a build sets

# What a fact's value is.
PRESENT, DEPRECATED, ABSENT, NOT_KNOWN = "present", "deprecated", "absent", "not known"
# What an absent capability does to a form that needs it.
REFUSES_BUILD = "refuses-build"  # the model cannot be built there (no calibrator API, or the GPU lacks the type)
CANNOT_EXPRESS = "cannot-express"  # the build knob does not exist there: the cell cannot exist as declared
NO_DEVICE = "no-device"  # the device the form builds for does not exist on the target (DLA)
# How a fact was established.
RECORDED = "recorded"  # this release's recorded API surface (same MAJOR.MINOR)
BRACKETED = "bracketed"  # the recorded surfaces of the releases before and after agree
DOCUMENTED = "documented"  # an NVIDIA page or the project's reference data states it
ISSUE = "issue"  # an issue thread states it (TensorRT's own error text there, a maintainer's answer), no NVIDIA page
NEAREST = "nearest"  # the nearest recorded surface of the same release line
UNPLACED = "unplaced"  # no recorded surface and no documented edge places the release: the fact is not known
INFERRED = "inferred"  # absent from the oldest recorded surface, so from older ones (APIs were added, not removed, before 11)

RELEASE_NOTES_10_8 = "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-10/10.8.0.html"
# TensorRT 10.3.0.26 on an RTX A6000 (SM 8.6): "Networks with FP8 Q/DQ layers require hardware with FP8 support" (Error
# Code 9); a ModelOpt maintainer there: FP8 from Ada and Hopper on.
FP8_HARDWARE = "https://github.com/NVIDIA/Model-Optimizer/issues/70"
PLATFORMS_MD = "reference/platforms.md (Python API changes: STRONGLY_TYPED from 9.2)"
FP8_MIN_CAPABILITY = (8, 9)  # Ada; Hopper and Blackwell after it
FP4_MIN_CAPABILITY = (10, 0)  # Blackwell (data centre 10.x, Thor 11.0, workstation 12.x)
TO_EXPLICIT = "`trt-matrix scan --to-explicit` writes the Q/DQ model"


class Fact(NamedTuple):
    """One thing a target can or cannot do: ``what`` (a NEEDS name, or ``network-typing``), its ``value``
    (present, deprecated, absent, not known), the sentence a report prints, where it comes from (links, or recorded
    files under the repository), how it was established, what an absent one does to a form that needs it, and what
    to do about it."""

    what: str
    value: str
    statement: str
    sources: tuple[str, ...]
    certainty: str
    effect: str | None = None  # REFUSES_BUILD, CANNOT_EXPRESS or NO_DEVICE when value is ABSENT
    remedy: str = ""

    @property
    def stops(self) -> bool:
        """Whether a form that needs this cannot be built on the target."""
        return self.value == ABSENT and self.effect is not None

    def cited(self) -> str:
        return f"{self.statement} ({self.certainty}; sources: {', '.join(self.sources)})"


class TargetFacts(NamedTuple):
    """The facts of one target, by ``what``. A target of another backend (ONNX Runtime) has none: nothing here is
    about it."""

    target: str
    facts: dict[str, Fact]

    def get(self, what: str) -> Fact | None:
        return self.facts.get(what)

    def blocking(self, needs: Iterable[str]) -> Fact | None:
        """The first fact that stops a form needing ``needs`` (the device first, then the API, then the GPU)."""
        wanted = _checked_needs(needs)
        for need in sorted(wanted, key=NEEDS.index):
            fact = self.facts.get(need)
            if fact is not None and fact.stops:
                return fact
        return None

    def blocking_model(self, needs: Iterable[str]) -> Fact | None:
        """The first fact that stops a user's model of a form needing ``needs``: only the model's own needs
        (MODEL_NEEDS) count, as the user may build it without the knobs the case's cell sets."""
        return self.blocking(need for need in _checked_needs(needs) if need in MODEL_NEEDS)

    def about(self, needs: Iterable[str]) -> list[Fact]:
        """Every fact bearing on ``needs``, stopping or not (a deprecation a report should mention)."""
        return [self.facts[need] for need in sorted(_checked_needs(needs), key=NEEDS.index) if need in self.facts]


def _checked_needs(needs: Iterable[str]) -> set[str]:
    wanted = set(needs)
    unknown = sorted(wanted - set(NEEDS))
    if unknown:
        raise ValueError(f"unknown need(s) {unknown}: a form needs some of {NEEDS}")
    return wanted


def target_facts(target: TargetLike, gpu_arch: str | None = None) -> TargetFacts:
    """The facts of ``target`` (a matrix Target). ``gpu_arch`` ("sm_120") is the GPU a column of an x86 target ran
    on; without it the GPU facts of a target whose ``gpu_arch`` is ``any`` are not known."""
    return _facts(target.id, target.backend, target.version, target.platform, gpu_arch or target.gpu_arch)


@functools.lru_cache(maxsize=None)
def _facts(target_id: str, backend: str, version: str | None, platform: str, arch: str) -> TargetFacts:
    """:func:`target_facts` of what it depends on, once per target: a scan asks for them per finding and target."""
    if backend != "tensorrt" or not version:
        return TargetFacts(target_id, {})
    facts = {DLA: _dla(version, platform), **_api_facts(version)}
    facts[FP8_QDQ] = _hardware(FP8_QDQ, "FP8", arch, FP8_MIN_CAPABILITY, "Ada, Hopper, Blackwell", (FP8_HARDWARE,),
                               "keep INT8 Q/DQ on this GPU (FP8 needs SM 8.9 or later; Orin is SM 8.7)", ISSUE)
    fp4_type = _API_FP4_TYPE.fact(version)
    facts[FP4_QDQ] = fp4_type if fp4_type.stops else _hardware(
        FP4_QDQ, "FP4", arch, FP4_MIN_CAPABILITY, "Blackwell", (RELEASE_NOTES_10_8,),
        "keep FP8 or INT8 Q/DQ on this GPU (FP4 needs a Blackwell GPU, SM 10.0 or later)", DOCUMENTED)
    facts["network-typing"] = _network_typing(version)
    return TargetFacts(target_id, facts)


@functools.lru_cache(maxsize=None)
def _api_facts(version: str) -> dict[str, Fact]:
    """The facts of a release's API whatever its platform and GPU (the calibrator and the API features), once per
    release: a matrix holds each release on several platforms."""
    return {IMPLICIT_INT8: _implicit(version), **{feature.what: feature.fact(version) for feature in _API_FEATURES}}


@functools.lru_cache(maxsize=None)
def _network_typing(version: str) -> Fact:
    """How a release types networks (weakly by default, or strongly only), once per release."""
    typing = release_facts.network_typing(version)
    return Fact("network-typing", "strong only" if version_tuple(version)[:1] >= (11,) else "weak by default",
                typing.statement, typing.sources, DOCUMENTED)


def blocks(needs: Iterable[str], target: TargetLike, gpu_arch: str | None = None) -> Fact | None:
    """The fact of ``target`` that stops the library's cell of a form needing ``needs``, or None:
    ``blocks({"implicit-int8"}, trt11)`` is the fact that TensorRT 11 has no calibrator."""
    return target_facts(target, gpu_arch).blocking(needs)


def blocks_model(needs: Iterable[str], target: TargetLike, gpu_arch: str | None = None) -> Fact | None:
    """The fact of ``target`` that stops a user's model of a form needing ``needs`` (its own needs only), or None:
    an INT8 + FP8 Q/DQ model built weakly typed is not stopped on TensorRT 11 by the missing BuilderFlag.FP8 (it
    builds strongly typed there), but is on Orin by its GPU."""
    return target_facts(target, gpu_arch).blocking_model(needs)


def _implicit(version: str) -> Fact:
    status = lifecycle.implicit_quantization(version)
    value = {lifecycle.SUPPORTED: PRESENT, lifecycle.DEPRECATED: DEPRECATED, lifecycle.REMOVED: ABSENT}[status.status]
    api = _IMPLICIT_API.presence(version)
    sources = tuple(dict.fromkeys(status.sources + api.files))
    # the statement without the lifecycle's advice: the fact's remedy says it (with how), and both are shown
    return Fact(IMPLICIT_INT8, value, f"{status.statement}.", sources, DOCUMENTED,
                REFUSES_BUILD if value == ABSENT else None,
                f"{status.advice} ({TO_EXPLICIT})" if status.advice else "")


def _dla(version: str, platform: str) -> Fact:
    absent = release_facts.dla_absent(version, platform)
    if absent is not None:
        return Fact(DLA, ABSENT, absent.statement, absent.sources, DOCUMENTED, NO_DEVICE,
                    "build for the GPU, or use a release with DLA on Jetson AGX Orin (up to 10.7; 11.4.1 and later "
                    "under JetPack 7.2.2+)")
    if platform == "orin":
        return Fact(DLA, PRESENT, f"TensorRT {version} has DLA on Jetson AGX Orin.",
                    (release_facts.DLA_JETSON_MIGRATION_11_3, release_facts.DLA_WORKING_WITH_11_4_1), DOCUMENTED)
    return Fact(DLA, NOT_KNOWN, f"Whether platform {platform!r} has DLA is not known before the device counts its "
                "cores.", (), DOCUMENTED)


def _hardware(what: str, precision: str, arch: str, minimum: tuple[int, int], families: str,
              sources: tuple[str, ...], remedy: str, certainty: str) -> Fact:
    capability = compute_capability(arch)
    needed = f"{minimum[0]}.{minimum[1]}"
    if capability is None:
        return Fact(what, NOT_KNOWN, f"{precision} needs a GPU of compute capability {needed} or later ({families}); "
                    "this target's GPU is whatever the host has.", sources, certainty)
    has = tuple(int(p) for p in capability.split(".")) >= minimum
    return Fact(what, PRESENT if has else ABSENT,
                f"{precision} Q/DQ needs a GPU of compute capability {needed} or later ({families}); this target's "
                f"GPU is SM {capability}" + ("." if has else f", which has no {precision}: TensorRT refuses the "
                                                             "network."),
                sources, certainty, None if has else REFUSES_BUILD, "" if has else remedy)


class Presence(NamedTuple):
    """Whether a release has an API, how that was established, and the recorded files it was read from."""

    present: bool | None
    certainty: str
    files: tuple[str, ...]
    how: str


class ApiFeature(NamedTuple):
    """A capability that is a set of binding names, present or not per release; ``since``/``removed_in`` are the
    documented edges (with their source) used where the recorded surfaces around a release disagree."""

    what: str
    names: tuple[str, ...]
    absent_effect: str | None  # what an absent one does to a form that needs it; None: it stops nothing
    remedy: str
    since: tuple[tuple[int, int], str] | None = None
    removed_in: tuple[tuple[int, int], str] | None = None
    absent_means: str = "a build that asks for it cannot be made there"

    @functools.lru_cache(maxsize=None)  # the recorded surfaces are fixed: a verdict asks the same few again
    def presence(self, version: str) -> Presence:
        release = _release(version)
        surfaces = recorded_releases()
        same = [v for v in surfaces if _release(v) == release]
        if same:
            return Presence(self._has(same[-1]), RECORDED, (_file(same[-1]),), f"recorded for {same[-1]}")
        below = [v for v in surfaces if _release(v) < release]
        above = [v for v in surfaces if _release(v) > release]
        low, high = (below[-1] if below else None), (above[0] if above else None)
        if low and high and self._has(low) == self._has(high):
            return Presence(self._has(low), BRACKETED, (_file(low), _file(high)),
                            f"recorded alike for {low} and {high}, the releases around it")
        if low and high:  # the recorded releases around it differ: a documented edge between them decides
            edges = [edge for edge in (self.since, self.removed_in) if edge and _release(low) < edge[0] <= release]
            edges += [edge for edge in (self.since, self.removed_in) if edge and release < edge[0] <= _release(high)]
            if edges:
                return self._by_edges(release)
            return Presence(None, UNPLACED, (_file(low), _file(high)), f"recorded differently for {low} and {high}")
        if low:  # newer than every recorded release
            if self.removed_in and release >= self.removed_in[0]:
                return self._by_edges(release)
            if release[0] == _release(low)[0]:
                return Presence(self._has(low), NEAREST, (_file(low),), f"recorded for {low}, the newest of its line")
        if high:  # older than every recorded release
            if not self._has(high):
                return Presence(False, INFERRED, (_file(high),), f"absent from {high}, the oldest recorded")
            if self.since:
                return self._by_edges(release)
        return Presence(None, UNPLACED, (), "no recorded surface places this release")

    def _by_edges(self, release: tuple[int, int]) -> Presence:
        """Presence by the documented edges, citing the edge that decides (both where the release lies between)."""
        before_since = self.since is not None and release < self.since[0]
        removed = self.removed_in is not None and release >= self.removed_in[0]
        deciding = [edge for edge, decides in ((self.since, before_since), (self.removed_in, removed)) if decides]
        if not deciding:
            deciding = [edge for edge in (self.since,) if edge is not None] or [self.removed_in]
        return Presence(not (before_since or removed), DOCUMENTED, tuple(source for _, source in deciding),
                        "documented")

    def fact(self, version: str) -> Fact:
        found = self.presence(version)
        names = ", ".join(self.names)
        if found.present is None:
            return Fact(self.what, NOT_KNOWN, f"Whether TensorRT {version} has {names} is not known ({found.how}).",
                        found.files, found.certainty)
        if found.present:
            return Fact(self.what, PRESENT, f"TensorRT {version} has {names} ({found.how}).", found.files,
                        found.certainty)
        return Fact(self.what, ABSENT, f"TensorRT {version} has no {names} ({found.how}): {self.absent_means}.",
                    found.files, found.certainty, self.absent_effect, self.remedy)

    def _has(self, recorded: str) -> bool:
        return all(names_have(recorded_names(recorded), name) for name in self.names)


_REMOVED_IN_11 = ((11, 0), release_facts.MIGRATION_11)
_IMPLICIT_API = ApiFeature(IMPLICIT_INT8, ("BuilderFlag.INT8", "IBuilderConfig.int8_calibrator"), REFUSES_BUILD, "",
                           removed_in=_REMOVED_IN_11)
_API_FP4_TYPE = ApiFeature(FP4_QDQ, ("DataType.FP4",), REFUSES_BUILD, "TensorRT 10.8 or later (FP4 arrived in 10.8)",
                           since=((10, 8), RELEASE_NOTES_10_8))
_API_FEATURES = (
    ApiFeature(CALIBRATION_PROFILE, ("IBuilderConfig.set_calibration_profile",), CANNOT_EXPRESS,
               f"{lifecycle.MIGRATION} ({TO_EXPLICIT})", removed_in=_REMOVED_IN_11),
    ApiFeature(FP8_BUILDER_FLAG, ("BuilderFlag.FP8",), CANNOT_EXPRESS,
               "put FP8 Q/DQ nodes in the graph and build strongly typed (the only kind on TensorRT 11)",
               removed_in=_REMOVED_IN_11),
    ApiFeature(FP4_BUILDER_FLAG, ("BuilderFlag.FP4",), CANNOT_EXPRESS,
               "TensorRT 10.8 to 10.x for the flag; on 11 put FP4 Q/DQ nodes in the graph (strongly typed)",
               since=((10, 8), RELEASE_NOTES_10_8), removed_in=_REMOVED_IN_11),
    ApiFeature(STRONG_TYPING, ("NetworkDefinitionCreationFlag.STRONGLY_TYPED",), CANNOT_EXPRESS,
               "build weakly typed (builder precision flags) on this release, or use TensorRT 9.2 or later",
               since=((9, 2), PLATFORMS_MD)),
    ApiFeature(PRECISION_CONSTRAINTS, ("BuilderFlag.OBEY_PRECISION_CONSTRAINTS", "ILayer.precision"), CANNOT_EXPRESS,
               "on TensorRT 11 set precisions through the graph's types (casts, Q/DQ): a strongly typed network has "
               "no per-layer precision", removed_in=_REMOVED_IN_11),
    ApiFeature(INT64_TYPE, ("DataType.INT64",), None, "",
               absent_means="INT64 initializers and shapes are cast down to INT32 by the ONNX parser, with a warning "
               "(S2's INT64 Reshape), which stops nothing"),
)


@functools.lru_cache(maxsize=None)  # asked per recorded surface, per API feature, per target
def _release(version: str) -> tuple[int, int]:
    numbers = version_tuple(version)
    if not numbers:
        raise ValueError(f"{version!r} is not a TensorRT version MAJOR.MINOR...")
    return (numbers + (0,))[:2]


def _file(version: str) -> str:
    return f"reference/trt-api/tensorrt-{version}.json"


@functools.lru_cache(maxsize=1)
def recorded_releases() -> tuple[str, ...]:
    """Every TensorRT version whose binding API is recorded in TRT_API_DIR, oldest first (none when the directory
    is missing: every API fact is then not known, and the documented edges decide)."""
    found = [path.name.removeprefix("tensorrt-").removesuffix(".json") for path in TRT_API_DIR.glob("tensorrt-*.json")]
    return tuple(sorted(found, key=version_tuple))


@functools.lru_cache(maxsize=None)
def recorded_api(version: str) -> dict:
    """The ``module`` section of tensorrt-VERSION.json: class, enum and function name -> entry."""
    return _module_section(*_surface_file(version))


@functools.lru_cache(maxsize=None)
def recorded_names(version: str) -> dict[str, list[str]]:
    """The names the recorded surface of ``version`` lists: class or enum -> its members and values, sorted (what
    :func:`names_have` asks), a fifth of the file, kept in this user's cache (:mod:`harness.user_cache`) by the
    file's bytes: a scan asks every recorded surface, and parsing them whole was a tenth of a small model's scan.
    The lists are kept as read back: a scan asks a few names of each, fewer than making sets of them all costs."""
    path, source = _surface_file(version)
    return user_cache.derived("trt-api-names", source, lambda: {
        kind: sorted({*entry.get("members", {}), *entry.get("values", [])})
        for kind, entry in _module_section(path, source).items()})


def _surface_file(version: str) -> tuple[Path, bytes]:
    path = TRT_API_DIR / f"tensorrt-{version}.json"
    try:
        return path, path.read_bytes()
    except OSError as error:
        raise _not_a_surface(path, error) from None


def _module_section(path: Path, source: bytes) -> dict:
    try:
        return json.loads(source)["module"]
    except (ValueError, KeyError) as error:
        raise _not_a_surface(path, error) from None


def _not_a_surface(path: Path, error: Exception) -> ValueError:
    return ValueError(f"{path}: not a recorded TensorRT API surface ({error}); the files come from NVIDIA's binding "
                      "wheels (see the README next to them)")


def names_have(names: dict[str, list[str]], dotted: str) -> bool:
    """Whether :func:`recorded_names` lists ``dotted`` ("Class", "Class.member" or "Enum.VALUE"), as
    :func:`surface_has` answers it of the whole surface."""
    kind, _, member = dotted.partition(".")
    members = names.get(kind)
    return members is not None and (not member or member in members)


def surface_has(api: dict, dotted: str) -> bool:
    """Whether a recorded surface lists ``dotted`` ("Class", "Class.member" or "Enum.VALUE")."""
    kind, _, member = dotted.partition(".")
    entry = api.get(kind)
    return entry is not None and (not member or member in entry.get("members", {}) or member in entry.get("values", []))
