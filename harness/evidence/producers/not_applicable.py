"""Not applicable: the case's word that the target's backend has no analogue of its pattern."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources
from harness.targets.declared import not_applicable_basis


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    reason = not_applicable_basis({"not_applicable": form.not_applicable}, target, f"case {form.case}")
    if not reason:
        return []
    return [Evidence(j.NOT_APPLICABLE, scope, form.case, form.variant, target.id, j.NOT_APPLICABLE, None,
                     form.links[0] if form.links else "", said=f"{target.backend}: {reason}", item=reason)]
