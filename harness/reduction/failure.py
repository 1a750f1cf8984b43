"""The failure a reduction keeps: what the whole model did on the target, and whether a candidate does the same."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from harness import judgement
from harness.exit_codes import EXIT_BROKEN, EXIT_OK, EXIT_USAGE
from harness.worker import record as rec

KEEP_CHOICES = ("category", "node")
# Outcomes a reduction can keep: evidence that the backend did something wrong with the model (judgement's answer is
# not "works"). A pass has nothing to reduce; infra-error and unavailable say nothing about the model.
KEPT_OUTCOMES = tuple(o for o in judgement.EVIDENCE_OUTCOMES if judgement.answer(o) != judgement.WORKS)


def works(outcome: str) -> bool:
    """Whether ``outcome`` says the model works on the target (nothing to reduce)."""
    return judgement.answer(outcome) == judgement.WORKS


def broken(outcome: str) -> bool:
    """Whether ``outcome`` says the harness or environment broke (no result about the model)."""
    return judgement.meaning(outcome).broken


_ERROR_KIND = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)(?=:)")  # "IndexError: ..." / "NotImplemented: ..."


class NothingToReduce(Exception):
    """The whole model did not fail on the target in a way a reduction can keep; ``outcome`` says how it ended."""

    def __init__(self, message: str, outcome: str):
        super().__init__(message)
        self.outcome = outcome

    @property
    def exit_status(self) -> int:
        """ok when the model works there (nothing to reduce), broken when the harness or environment broke, else
        usage (e.g. the target reports the model unavailable)."""
        return EXIT_OK if works(self.outcome) else EXIT_BROKEN if broken(self.outcome) else EXIT_USAGE


@dataclasses.dataclass(frozen=True)
class KeptFailure:
    """Outcome, failure category, the error's kind (the exception or status name its message starts with) and, with
    ``--keep node``, the failing node: a candidate reproduces the failure when all of them are equal."""

    outcome: str
    category: str | None
    error_kind: str | None
    node: str | None
    keep: str
    message: str = ""  # the whole model's message, for the user; never compared

    def reproduced_by(self, record: rec.Record) -> bool:
        return self.key == KeptFailure.observed(record, self.keep).key

    @property
    def key(self) -> tuple:
        return (self.outcome, self.category, self.error_kind) + ((self.node,) if self.keep == "node" else ())

    @classmethod
    def observed(cls, record: rec.Record, keep: str) -> "KeptFailure":
        """What ``record`` shows, in the terms a reduction compares."""
        failure = record.get("failure") or {}
        message = failure.get("message") or ""
        kind = _ERROR_KIND.match(message)
        return cls(outcome=record["outcome"], category=failure.get("category"), error_kind=kind.group(1) if kind else
                   None, node=failure.get("node"), keep=keep, message=message)

    @classmethod
    def of_whole_model(cls, record: rec.Record, keep: str) -> "KeptFailure":
        """The failure to keep from the whole model's record, or NothingToReduce saying why there is none."""
        if keep not in KEEP_CHOICES:
            raise ValueError(f"--keep {keep!r}: choose one of {', '.join(KEEP_CHOICES)}")
        outcome = record["outcome"]
        if works(outcome):
            raise NothingToReduce(f"the model passes on {record['target']}: nothing to reduce", outcome)
        if outcome not in KEPT_OUTCOMES:
            failure = record.get("failure") or {}
            raise NothingToReduce(f"the model ended {outcome} on {record['target']} ({failure.get('category')}: "
                                  f"{failure.get('message')}): that says nothing about the model, so there is no "
                                  "failure to keep", outcome)
        kept = cls.observed(record, keep)
        if keep == "node" and not kept.node:
            raise NothingToReduce(f"--keep node: the failure on {record['target']} ({outcome}, {kept.category}) names "
                                  "no node; reduce with --keep category", outcome)
        return kept

    def describe(self) -> str:
        parts = [self.outcome] + [p for p in (self.category, self.error_kind) if p]
        text = " / ".join(parts)
        return text + (f" at node {self.node!r}" if self.keep == "node" else "")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KeptFailure":
        return cls(**data)


def describe_record(record: rec.Record) -> str:
    """``outcome (category): message``, on one line."""
    failure = record.get("failure") or {}
    text = record["outcome"] + (f" ({failure['category']})" if failure.get("category") else "")
    return text + (f": {' '.join(failure['message'].split())[:200]}" if failure.get("message") else "")
