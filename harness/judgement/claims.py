"""The one claim type: what upstream reported, for one target or over a range of targets; never an observation of
ours. The case library declares them (``Variant.claims``, ``Variant.range_claims``), index.json carries them
(:meth:`Claim.to_dict`), the worker judges a record against the claim for its target (a dict of that form), the
evidence layer reads them back. Standard library only."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Optional

from harness.judgement.meaning import STRENGTH_LABELS
from harness.judgement.vocabulary import CLAIM_OUTCOMES

CLAIM_STRENGTHS = tuple(STRENGTH_LABELS)  # issue-thread, write-up-only, documentation


@dataclasses.dataclass(frozen=True)
class Claim:
    """What upstream reported. A claim for one matrix target names it (``target``), and the GPU ``architecture`` the
    report ran on where the outcome depends on it (a compute capability: "8.7" for Orin, "11.0" for Thor, "10.0+" for
    every Blackwell). A claim over a range names instead the ``scope`` its source supports (a
    :class:`harness.targets.ranges.Scope`: versions from and before, platforms, architectures) and its ``basis``: who
    says it and why it holds over the range, in words a report prints ("a maintainer, no version named"); a claim for
    one target, a narrower or newer range claim and an observation of ours override it
    (:func:`harness.targets.ranges.deciding`)."""

    target: Optional[str] = None
    outcome: str = ""
    source: str = ""
    strength: str = ""
    category: Optional[str] = None
    note: str = ""
    architecture: Optional[str] = None
    scope: Any = None
    basis: str = ""

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
        if self.scope is None:
            return {"target": self.target, "outcome": self.outcome, "source": self.source, "strength": self.strength,
                    "category": self.category, "note": self.note, "architecture": self.architecture}
        return {"outcome": self.outcome, "source": self.source, "strength": self.strength,
                "scope": self.scope.to_dict(), "basis": self.basis, "category": self.category, "note": self.note}
