"""Claimed over a range: the form's range claim that covers the target, the narrowest (then newest) first
(:func:`harness.targets.ranges.covering`), where its conditions (:class:`harness.judgement.Conditions`) do not rule
the target out; it gates only where they are all known to hold there."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources, matrix_target
from harness.evidence.producers.conditions import standing
from harness.targets.declared import range_claim_basis


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    if not form.entry or not matrix_target(target):
        return []
    claim = range_claim_basis(form.entry, target, where=form.where)
    if claim is None:
        return []
    states = standing(claim.conditions, target)
    if not j.covers_target(states):
        return []
    scope_text = claim.scope.describe()
    return [Evidence(j.RANGE_CLAIMED, scope, form.case, form.variant, target.id, claim.outcome, claim.category,
                     claim.source, strength=claim.strength, note=claim.note, said=f"{scope_text}: {claim.basis}",
                     conditions=(scope_text, *(words for _, words in states)), gates=j.claim_gates(states),
                     item=claim)]
