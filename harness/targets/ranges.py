"""Claims that hold over a range: the :class:`Scope` a source supports (TensorRT versions from and before, platforms,
GPU architectures), which matrix targets it covers, and which evidence decides when several speak about one target.

A claim (:class:`harness.judgement.Claim`) names one target, or carries a Scope instead, declared where its source
says the behaviour holds across versions or platforms: a maintainer explaining how TensorRT works without naming a
version, the developer guide, release notes that say "since". Such a claim over a range is a range claim.

Precedence (:func:`deciding`), first that applies wins:

1. an observation of ours on the target;
2. a claim for exactly that target;
3. of the range claims that cover the target, the narrowest (fewest versions, platforms and architectures), and
   among equally narrow ones the one whose range starts at the newest version (a newer contrary claim).

A target a scope cannot place (no version: ``ort-cpu``, ``trt-local``; an architecture-bound scope on a target whose
GPU is ``any``) is not covered: a range claim never guesses.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Mapping, NamedTuple, Protocol, Sequence, TypeVar

from harness.judgement import Claim, Conditions
from harness.tensorrt.platforms import PLATFORMS, compute_capability
from harness.tensorrt.versions import version_tuple

TENSORRT = "tensorrt"
ANY_PLATFORM = "any"  # matrix.yaml's platform of a target that runs wherever it is started
_RELEASE = re.compile(r"^\d+\.\d+$")  # a scope's version bound: "MAJOR.MINOR"
_ARCHITECTURE = re.compile(r"^\d+\.\d+\+?$")  # "8.7" exactly, "10.0+" that one and every later architecture
PLACEABLE_PLATFORMS = tuple(p for p in PLATFORMS if p != ANY_PLATFORM)  # a scope names real platforms only
# Where an open end of a scope counts to when scopes are compared for width: the TensorRT releases a claim can be
# about (7.x, the last before the matrix's oldest, to a 12.x not yet released).
OPEN_SINCE, OPEN_BEFORE = "7.0", "12.0"
_EVERY_ARCHITECTURE = 1000  # breadth of a scope open in architecture


class TargetLike(Protocol):
    """What a scope and a target's facts read of a target: ``harness.matrix.Target`` has it."""

    id: str
    backend: str
    platform: str
    version: str | None
    gpu_arch: str
    available: bool


@dataclasses.dataclass(frozen=True)
class Scope:
    """Where a range claim holds: a backend's versions from ``since`` (inclusive) to ``before`` (exclusive), minus
    ``except_versions``, on ``platforms`` (empty: every platform) and GPU ``architectures`` (compute capabilities,
    "8.7" or "10.0+"; empty: every architecture). Versions are "MAJOR.MINOR"; None leaves that end open."""

    since: str | None = None
    before: str | None = None
    except_versions: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()
    backend: str = TENSORRT

    def __post_init__(self):
        for name in ("since", "before"):
            value = getattr(self, name)
            if value is not None and not _RELEASE.match(value):
                raise ValueError(f"Scope.{name}: {value!r} is not a release 'MAJOR.MINOR' such as '10.1' (or None)")
        bad = [v for v in self.except_versions if not _RELEASE.match(v)]
        if bad:
            raise ValueError(f"Scope.except_versions: {bad} are not releases 'MAJOR.MINOR' such as '10.2'")
        if self.since and self.before and _release(self.since) >= _release(self.before):
            raise ValueError(f"Scope: since {self.since} is not before {self.before}: the range is empty")
        bad = [p for p in self.platforms if p not in PLACEABLE_PLATFORMS]
        if bad:
            raise ValueError(f"Scope.platforms: {bad} are not among {PLACEABLE_PLATFORMS}")
        bad = [a for a in self.architectures if not _ARCHITECTURE.match(a)]
        if bad:
            raise ValueError(f"Scope.architectures: {bad} are not compute capabilities such as '8.7' or '10.0+'")
        if not self.backend:
            raise ValueError("Scope.backend: name the backend the scope is about (e.g. 'tensorrt')")

    def covers(self, target: TargetLike, gpu_arch: str | None = None) -> bool:
        """Whether ``target`` (a matrix Target) lies in this scope. ``gpu_arch`` ("sm_120") is the GPU a column ran
        on, for a target whose own ``gpu_arch`` is ``any``; without it such a target is covered only by a scope that
        names no architecture."""
        if target.backend != self.backend or not target.available:
            return False
        if self.since or self.before or self.except_versions:
            if not target.version:
                return False
            release = _release(target.version)
            if self.since and release < _release(self.since):
                return False
            if self.before and release >= _release(self.before):
                return False
            if any(release == _release(v) for v in self.except_versions):
                return False
        if self.platforms and target.platform not in self.platforms:
            return False
        if self.architectures:
            capability = compute_capability(gpu_arch or target.gpu_arch)
            if capability is None or not any(_architecture_matches(a, capability) for a in self.architectures):
                return False
        return True

    def breadth(self) -> tuple[int, int, int]:
        """How wide the scope is, for precedence: (releases spanned, an open end counting to OPEN_SINCE or
        OPEN_BEFORE; platforms, none named counting as all; architectures, none named or an open "N+" as all)."""
        low, high = _release(self.since or OPEN_SINCE), _release(self.before or OPEN_BEFORE)
        span = (high[0] * 100 + high[1]) - (low[0] * 100 + low[1]) - len(self.except_versions)
        platforms = len(self.platforms) or len(PLACEABLE_PLATFORMS)
        closed = [a for a in self.architectures if not a.endswith("+")]
        architectures = len(closed) if closed and len(closed) == len(self.architectures) else _EVERY_ARCHITECTURE
        return span, platforms, architectures

    def describe(self) -> str:
        """The scope in words: "TensorRT 8.0 and later, every platform"."""
        name = "TensorRT" if self.backend == TENSORRT else self.backend
        if self.since and self.before:
            versions = f"{name} {self.since} up to (not including) {self.before}"
        elif self.since:
            versions = f"{name} {self.since} and later"
        elif self.before:
            versions = f"{name} before {self.before}"
        else:
            versions = f"every {name} version"
        if self.except_versions:
            versions += f" except {', '.join(self.except_versions)}"
        platforms = ", ".join(self.platforms) if self.platforms else "every platform"
        architectures = f", GPU compute capability {' or '.join(self.architectures)}" if self.architectures else ""
        return f"{versions}, {platforms}{architectures}"

    def to_dict(self) -> dict[str, Any]:
        return {"since": self.since, "before": self.before, "except_versions": list(self.except_versions),
                "platforms": list(self.platforms), "architectures": list(self.architectures), "backend": self.backend}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "scope") -> "Scope":
        """The Scope an index.json ``scope`` object describes; a ValueError naming ``where`` when it cannot be."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: a scope is an object with since, before, platforms, architectures, found "
                             f"{type(data).__name__}")
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"{where}: unknown scope field(s) {unknown}")
        try:
            return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}: {error}") from None


RANGE_CLAIM_FIELDS = ("outcome", "source", "strength", "scope", "basis", "category", "note",
                      "conditions")  # index.json's


def range_claim_from_dict(data: Mapping[str, Any], where: str = "range claim") -> Claim:
    """The range claim (a :class:`harness.judgement.Claim` with a scope) an index.json item describes
    (:meth:`~harness.judgement.Claim.to_dict`); a ValueError naming ``where`` and the field when it cannot be one."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a range claim is an object, found {type(data).__name__}")
    missing = [f for f in RANGE_CLAIM_FIELDS[:5] if f not in data]
    unknown = sorted(set(data) - set(RANGE_CLAIM_FIELDS))
    if missing or unknown:
        raise ValueError(f"{where}: " + "; ".join(
            part for part in (f"missing field(s) {missing}" if missing else "",
                              f"unknown field(s) {unknown}" if unknown else "") if part))
    try:
        conditions = data.get("conditions")
        return Claim(**{**data, "scope": Scope.from_dict(data["scope"], f"{where}.scope"),
                        "conditions": None if conditions is None else Conditions.from_dict(conditions,
                                                                                            f"{where}.conditions")})
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None


def _release(version: str) -> tuple[int, int]:
    """(MAJOR, MINOR) of a version ("10.16.1.11" -> (10, 16); a bare major "11", a target that follows the newest
    release, counts as 11.0)."""
    numbers = version_tuple(version)
    if not numbers:
        raise ValueError(f"{version!r} is not a version MAJOR.MINOR...")
    return (numbers + (0,))[:2]


def _architecture_matches(spec: str, capability: str) -> bool:
    wanted = tuple(int(p) for p in spec.rstrip("+").split("."))
    have = tuple(int(p) for p in capability.split("."))
    return have >= wanted if spec.endswith("+") else have == wanted


Claimed = TypeVar("Claimed")


def covering(claims: Iterable[Claimed], target: TargetLike, gpu_arch: str | None = None) -> list[Claimed]:
    """The range claims (objects with a ``scope``) that cover ``target``, the one that decides first."""
    found = [claim for claim in claims if claim.scope.covers(target, gpu_arch)]
    return sorted(found, key=lambda claim: (claim.scope.breadth(),
                                            tuple(-n for n in _release(claim.scope.since or "0.0"))))


class Decision(NamedTuple):
    """Which evidence decides for one (variant, target): ``basis`` is "observation", "claim" or "range-claim";
    ``evidence`` the deciding item; ``overridden`` the range claims that covered the target and yielded."""

    basis: str
    evidence: Any
    overridden: tuple[Any, ...] = ()


OBSERVATION, TARGET_CLAIM, RANGE_CLAIM = "observation", "claim", "range-claim"


def deciding(target: TargetLike, observations: Sequence[Any] = (), claims: Sequence[Any] = (),
             range_claims: Iterable[Any] = (), gpu_arch: str | None = None) -> Decision | None:
    """The evidence that decides for ``target``, by the module's precedence: the first of ``observations`` (ours on
    this target), else the first of ``claims`` (claims for exactly this target, as the caller found them), else the
    first range claim covering the target (:func:`covering`); None where nothing speaks. The range claims that
    covered the target but did not decide come back in ``overridden`` (a report may list them as superseded)."""
    covered = covering(range_claims, target, gpu_arch)
    if observations:
        return Decision(OBSERVATION, observations[0], tuple(covered))
    if claims:
        return Decision(TARGET_CLAIM, claims[0], tuple(covered))
    if covered:
        return Decision(RANGE_CLAIM, covered[0], tuple(covered[1:]))
    return None
