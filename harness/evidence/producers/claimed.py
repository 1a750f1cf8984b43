"""Claimed: the upstream claim for exactly the target (a claim naming a GPU architecture only on a target of that
GPU: :func:`harness.store.claims.target_claim`), where its conditions (:class:`harness.judgement.Conditions`) do not
rule the target out; it gates only where they are all known to hold there."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources
from harness.evidence.producers.conditions import standing
from harness.store.claims import target_claim


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    claim = target_claim(form.claims, target.id, target.platform)
    if not claim:
        return []
    states = standing(claim.get("conditions"), target)
    if not j.covers_target(states):
        return []
    conditions = (f"GPU compute capability {claim['architecture']}",) if claim.get("architecture") else ()
    return [Evidence(j.CLAIMED, scope, form.case, form.variant, claim["target"], claim["outcome"], claim["category"],
                     claim["source"], strength=claim["strength"], note=claim["note"],
                     conditions=conditions + tuple(words for _, words in states), gates=j.claim_gates(states),
                     item=claim)]
