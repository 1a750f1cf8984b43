"""Claimed: the upstream claim for exactly the target (a claim naming a GPU architecture only on a target of that
GPU: :func:`harness.store.claims.target_claim`)."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources
from harness.store.claims import target_claim


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    claim = target_claim(form.claims, target.id, target.platform)
    if not claim:
        return []
    conditions = (f"GPU compute capability {claim['architecture']}",) if claim.get("architecture") else ()
    return [Evidence(j.CLAIMED, scope, form.case, form.variant, claim["target"], claim["outcome"], claim["category"],
                     claim["source"], strength=claim["strength"], note=claim["note"], conditions=conditions,
                     item=claim)]
