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
                "nodes": list(self.occurrence.nodes), "nodes_added": r.nodes_added, "nodes_removed": r.nodes_removed,
                "outputs_added": r.outputs_added, "build_time": r.build_time or None, "note": r.note,
                "tolerance": dataclasses.asdict(r.tolerance) if r.tolerance else "bit-equal"}


@dataclasses.dataclass
class PlaceNotFixed:
    """A place of a finding that none of the chosen workarounds could be rewritten into, and why."""

    finding: Finding
    occurrence: Occurrence
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"finding": self.finding.label, "place": self.occurrence.anchor,
                "reason": f"at {self.occurrence.anchor}: {self.reason}"}


class FixFailed(Exception):
    """A rewrite or a check of the fixed model failed; ``place`` and ``check`` say where and which."""

    def __init__(self, place: str, check: str, message: str):
        super().__init__(f"{place}: {check}: {message}")
        self.place, self.check, self.message = place, check, message
