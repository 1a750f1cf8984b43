"""The one claim type: what upstream reported, for one target or over a range of targets; never an observation of
ours. The case library declares them (``Variant.claims``, ``Variant.range_claims``), index.json carries them
(:meth:`Claim.to_dict`), the worker judges a record against the claim for its target (a dict of that form), the
evidence layer reads them back. Standard library only."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from harness.judgement.meaning import STRENGTH_LABELS
from harness.judgement.vocabulary import CLAIM_OUTCOMES

CLAIM_STRENGTHS = tuple(STRENGTH_LABELS)  # issue-thread, write-up-only, documentation

# Who stands behind a claim, beyond its source's strength (Conditions.support), weakest first. Only a claim more
# than one report stands behind can stop a CI gate (:func:`Conditions.gates`).
ONE_REPORT = "one-report"  # one reporter's model, not reproduced by anyone else
REPRODUCED = "reproduced"  # seen by more than one user, or reproduced or confirmed by a maintainer
MAINTAINER = "maintainer"  # a maintainer (of TensorRT or of the tool that meets it) states it as how TensorRT behaves
DOCUMENTED = "documented"  # the vendor's documentation or source says it
SUPPORTS = {ONE_REPORT: "one report, not reproduced", REPRODUCED: "reproduced", MAINTAINER: "a maintainer's statement",
            DOCUMENTED: "documented"}

# How a condition stands on a target: known to hold, known not to (the claim does not cover the target), or not
# known there (the claim is shown, labelled, and does not gate).
CONDITION_HOLDS, CONDITION_DIFFERS, CONDITION_NOT_KNOWN = "holds", "differs", "not-known-here"


def _capability(text: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in text.rstrip("+").split("."))


@dataclasses.dataclass(frozen=True)
class Conditions:
    """Where a claim's source says it holds, beyond its target or scope: who stands behind it and what of the
    reporter's environment and form the outcome may rest on. Evaluated on a target by the evidence layer's claim
    producers (:meth:`on`); a condition known not to hold there takes the claim off the target, one not known there
    leaves it shown, labelled, and not gating.

    - ``support``: :data:`ONE_REPORT`, :data:`REPRODUCED`, :data:`MAINTAINER` or :data:`DOCUMENTED`;
    - ``gpu``: the compute capability the report ran on ("7.5") where nobody said the outcome depends on it (a claim
      that does depend on it names ``Claim.architecture`` instead), with ``gpu_name`` ("Quadro T2000");
    - ``driver``: the NVIDIA driver the report ran on ("470.129.06"): on a target whose image needs a newer driver
      (``min_driver``) an environment failure cannot arise (the claim does not cover it), another failure is only
      not known to;
    - ``environment``: what of the environment failed, for a failure caused by it rather than by the graph (a driver,
      an allocator): such a claim is a fact of that environment, never of a graph elsewhere;
    - ``form``: what of the reporter's form the library form cannot show and the scan cannot read (a calibrator, a
      channel count not stated), in words; never known to hold on a user's model.
    """

    support: str
    gpu: Optional[str] = None
    gpu_name: str = ""
    driver: Optional[str] = None
    environment: str = ""
    form: str = ""

    def __post_init__(self):
        if self.support not in SUPPORTS:
            raise ValueError(f"conditions: support {self.support!r} is not one of {tuple(SUPPORTS)}")
        if self.gpu is not None and not re.fullmatch(r"\d+\.\d+", self.gpu):
            raise ValueError(f"conditions: gpu {self.gpu!r} is not a compute capability such as '7.5'")
        if self.driver is not None and not re.fullmatch(r"\d+(\.\d+)*", self.driver):
            raise ValueError(f"conditions: driver {self.driver!r} is not a driver version such as '470.129.06'")
        if self.environment and self.driver is None:
            raise ValueError("conditions: an environment cause names the driver it was seen on")

    def on(self, gpu_arch: Optional[str] = None, min_driver: Optional[int] = None) -> Tuple[Tuple[str, str], ...]:
        """Each condition on a target, as (state, words): ``gpu_arch`` the compute capability the target's GPU is
        known to have ("8.7"; None: any GPU), ``min_driver`` the oldest driver its image runs on (None: not known).
        A one-report claim's support is a condition never known to hold on another model."""
        found = []
        if self.support == ONE_REPORT:
            found.append((CONDITION_NOT_KNOWN, SUPPORTS[ONE_REPORT]))
        if self.gpu is not None:
            gpu = f"compute capability {self.gpu}"
            gpu = f"{self.gpu_name} ({gpu})" if self.gpu_name else gpu
            if gpu_arch is None:
                found.append((CONDITION_NOT_KNOWN, f"reported on a {gpu}, this target's GPU not known"))
            elif _capability(gpu_arch) == _capability(self.gpu):
                found.append((CONDITION_HOLDS, f"reported on a {gpu}, as this target's"))
            else:
                found.append((CONDITION_NOT_KNOWN,
                              f"reported on a {gpu}, a different GPU from this target's ({gpu_arch})"))
        if self.driver is not None:
            cause = f" ({self.environment})" if self.environment else ""
            major = int(self.driver.split(".")[0])
            if min_driver is not None and min_driver > major:
                # A target whose image cannot run on the report's driver: an environment failure cannot arise there;
                # another failure seen on that driver is only not known to arise on a newer one.
                found.append((CONDITION_DIFFERS if self.environment else CONDITION_NOT_KNOWN,
                              f"reported on driver {self.driver}{cause}; this target's image needs driver "
                              f"{min_driver} or newer"))
            else:
                found.append((CONDITION_NOT_KNOWN,
                              f"reported on driver {self.driver}{cause}, this target's driver not known"))
        if self.form:
            found.append((CONDITION_NOT_KNOWN, self.form))
        return tuple(found)

    def to_dict(self) -> Dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Any, where: str = "conditions") -> "Conditions":
        """The conditions an index.json item describes; a ValueError naming ``where`` and the field otherwise."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: conditions are an object, found {type(data).__name__}")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown or "support" not in data:
            raise ValueError(f"{where}: " + (f"unknown field(s) {unknown}" if unknown else "missing field 'support'"))
        try:
            return cls(**data)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}: {error}") from None


def conditions_on(conditions: Optional[Mapping[str, Any]], gpu_arch: Optional[str] = None,
                  min_driver: Optional[int] = None) -> Tuple[Tuple[str, str], ...]:
    """:meth:`Conditions.on` of a claim's conditions as index.json carries them (None: a claim without any, which
    holds wherever its target or scope does)."""
    return () if not conditions else Conditions.from_dict(conditions).on(gpu_arch, min_driver)


def covers_target(states: Iterable[Tuple[str, str]]) -> bool:
    """Whether a claim whose conditions stand as ``states`` (:meth:`Conditions.on`) speaks of the target at all."""
    return all(state != CONDITION_DIFFERS for state, _ in states)


def claim_gates(states: Iterable[Tuple[str, str]]) -> bool:
    """The gate rule: a claim may stop a CI gate (``scan --fail-on``) on a target only where every condition of it
    is known to hold there; a single report inherited by a look-alike, a GPU, driver or form not known to be the
    reporter's, is shown, labelled, and does not gate."""
    return all(state == CONDITION_HOLDS for state, _ in states)


@dataclasses.dataclass(frozen=True)
class Claim:
    """What upstream reported. A claim for one matrix target names it (``target``), and the GPU ``architecture`` the
    report ran on where the outcome depends on it (a compute capability: "8.7" for Orin, "11.0" for Thor, "10.0+" for
    every Blackwell). A claim over a range names instead the ``scope`` its source supports (a
    :class:`harness.targets.ranges.Scope`: versions from and before, platforms, architectures) and its ``basis``: who
    says it and why it holds over the range, in words a report prints ("a maintainer, no version named"); a claim for
    one target, a narrower or newer range claim and an observation of ours override it
    (:func:`harness.targets.ranges.deciding`). Either kind says in ``conditions`` (:class:`Conditions`) where its
    source holds beyond that: who stands behind it, the GPU and driver the report ran on, an environment cause, what
    of the form is not known; a claim that can fail a target declares them (docs/claims.md)."""

    target: Optional[str] = None
    outcome: str = ""
    source: str = ""
    strength: str = ""
    category: Optional[str] = None
    note: str = ""
    architecture: Optional[str] = None
    scope: Any = None
    basis: str = ""
    conditions: Optional[Conditions] = None  # where its source says it holds beyond target or scope (Conditions)

    def __post_init__(self):
        where = self._where()
        if (self.target is None) == (self.scope is None):
            raise ValueError(f"{where}: name either the target it is about or the scope it holds over, not "
                             f"{'both' if self.target else 'neither'}")
        if self.outcome not in CLAIM_OUTCOMES:
            raise ValueError(f"{where}: outcome {self.outcome!r} is not one of {CLAIM_OUTCOMES}")
        if self.strength not in CLAIM_STRENGTHS:
            raise ValueError(f"{where}: strength {self.strength!r} is not one of {CLAIM_STRENGTHS}")
        if not isinstance(self.source, str) or not self.source.startswith("https://"):
            raise ValueError(f"{where}: source must be a https:// link, got {self.source!r}")
        if self.architecture is not None and not re.fullmatch(r"\d+\.\d+\+?", self.architecture):
            raise ValueError(f"{where}: architecture {self.architecture!r} is not a compute capability such as "
                             "'8.7' or '10.0+'")
        if self.conditions is not None and not isinstance(self.conditions, Conditions):
            raise ValueError(f"{where}: conditions must be a harness.judgement.Conditions")
        if self.scope is not None:
            if not callable(getattr(self.scope, "covers", None)):
                raise ValueError(f"{where}: scope must be a harness.targets.ranges.Scope")
            if self.architecture is not None:
                raise ValueError(f"{where}: a range claim names its architectures in its scope")
            if not isinstance(self.basis, str) or not self.basis:
                raise ValueError(f"{where}: say in basis who states it and why it holds over the range")

    def _where(self) -> str:
        if self.scope is None:
            return f"Claim for {self.target!r}"
        describe = getattr(self.scope, "describe", None)
        return f"range claim ({describe() if callable(describe) else repr(self.scope)})"

    @property
    def ranged(self) -> bool:
        """A claim over a range (a scope), not for one target."""
        return self.scope is not None

    def covers(self, target: Any, gpu_arch: Optional[str] = None) -> bool:
        """Whether this range claim speaks about ``target`` (a matrix Target; ``gpu_arch`` the GPU of an ``any``
        column)."""
        return self.scope.covers(target, gpu_arch)

    def label(self) -> str:
        """How a report names a range claim: "range claim for TensorRT 8.0 and later, every platform (a maintainer,
        no version named)"."""
        return f"range claim for {self.scope.describe()} ({self.basis})"

    def to_dict(self) -> Dict[str, Any]:
        """The index.json form: an item of a variant entry's ``claims`` (for one target) or ``range_claims``."""
        conditions = {} if self.conditions is None else {"conditions": self.conditions.to_dict()}
        if self.scope is None:
            return {"target": self.target, "outcome": self.outcome, "source": self.source, "strength": self.strength,
                    "category": self.category, "note": self.note, "architecture": self.architecture, **conditions}
        return {"outcome": self.outcome, "source": self.source, "strength": self.strength,
                "scope": self.scope.to_dict(), "basis": self.basis, "category": self.category, "note": self.note,
                **conditions}
