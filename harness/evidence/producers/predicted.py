"""Predicted from TensorRT's documented rules: what ``sources.prediction`` says of the form on the target (the user's
model's prediction at a finding's places, or the one index.json carries for the library form); each node predicted
quantized a pass, one predicted float a fallback, never a failure."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources, matrix_target


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    if sources.prediction is None or not matrix_target(target):
        return []
    basis = sources.prediction(form, target)
    if basis is None:
        return []
    return [Evidence(j.PREDICTED, scope, form.case, form.variant, target.id, basis.outcome, None,
                     f"ruleset {basis.ruleset}", nodes=basis.nodes, said=basis.said,
                     conditions=(f"ruleset {basis.ruleset}",), item=basis)]
