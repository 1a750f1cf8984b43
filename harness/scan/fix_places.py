"""What ``scan --fix`` did at one place of the model (:class:`PlaceFix`), a place it had to leave as it is
(:class:`PlaceNotFixed`) and how a fix fails (:class:`FixFailed`): made by the rewrite (:mod:`harness.scan.fixing`)
and read by the checks (:mod:`harness.scan.fix_checks`)."""
from __future__ import annotations

import dataclasses
from typing import Any

from cases.model import FixResult, Variant
from harness.scan.matching import Finding, Occurrence


@dataclasses.dataclass
class PlaceFix:
    """One place rewritten: the finding's form, the workaround, and what the rewrite did."""

    finding: Finding
    occurrence: Occurrence
    workaround: Variant
    result: FixResult

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {"case": self.finding.case.id, "pattern": self.finding.case.pattern,
                "form": self.finding.variant.name if self.finding.variant else None,
                "workaround": self.workaround.name, "place": self.occurrence.anchor,
                "nodes": list(self.occurrence.nodes), "nodes_added": list(r.nodes_added),
                "nodes_removed": list(r.nodes_removed), "outputs_added": list(r.outputs_added),
                "build_time": r.build_time or None, "note": r.note,
                "tolerance": r.tolerance._asdict() if r.tolerance else "bit-equal"}


@dataclasses.dataclass
class PlaceNotFixed:
    """A place of a finding that none of the chosen workarounds could be rewritten into, or whose rewrite made the
    fixed model fail a check (``failed``: which check and its figures), and why; or (``already``) a place left as it
    is because it already has the form of one of the chosen workarounds, which does not make the fix partial."""

    finding: Finding
    occurrence: Occurrence
    reason: str
    failed: dict[str, Any] | None = None
    already: bool = False  # the place already has a chosen workaround's form: nothing needed fixing there

    @classmethod
    def dropped(cls, place: PlaceFix, failure: "FixFailed") -> "PlaceNotFixed":
        """``place`` taken out of the fixed model because, rewritten, it made the model fail ``failure``'s check."""
        return cls(place.finding, place.occurrence, f"dropped: rewritten into {place.workaround.name}, the fixed model "
                   f"fails the {failure.check} check: {failure.detail}",
                   {"check": failure.check, "rewritten_into": place.workaround.name, "message": failure.detail,
                    **({"outputs": failure.figures} if failure.figures else {})})

    def to_dict(self) -> dict[str, Any]:
        return {"finding": self.finding.label, "place": self.occurrence.anchor,
                "reason": f"at {self.occurrence.anchor}: {self.reason}",
                **({"failed_check": self.failed} if self.failed else {})}


class FixFailed(Exception):
    """A rewrite or a check of the fixed model failed; ``place`` and ``check`` say where and which. ``detail``: the
    failure without the list of places rewritten (what a place dropped for it is told); ``figures``: per output, the
    numbers of a failed comparison; ``targets``: when the failure is a verdict the fixed model makes worse, the
    targets it is worse on (the others may still take the fix)."""

    def __init__(self, place: str, check: str, message: str, detail: str | None = None,
                 figures: dict[str, Any] | None = None, targets: tuple[str, ...] = ()):
        super().__init__(f"{place}: {check}: {message}")
        self.place, self.check, self.message = place, check, message
        self.detail, self.figures, self.targets = detail or message, figures, targets
