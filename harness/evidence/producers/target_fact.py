"""A fact of the target that stops the form: what the user's model of the form needs (a calibrator, FP8/FP4 types, a
GPU, a DLA) and the target lacks, with its source and remedy. A model with Q/DQ (``sources.explicit``) needs no
calibrator, whatever the library's form of the pattern was built with."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources, matrix_target
from harness.targets.declared import fact_outcome, model_fact_basis
from harness.targets.facts import IMPLICIT_INT8


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    if not form.entry or not matrix_target(target):
        return []
    entry = form.entry
    if sources.explicit:
        entry = {**entry, "needs": [need for need in entry.get("needs", []) if need != IMPLICIT_INT8]}
    fact = model_fact_basis(entry, target, where=form.where)
    if fact is None:
        return []
    remedy = f"; what to do: {fact.remedy}" if fact.remedy else ""
    return [Evidence(j.FACT, scope, form.case, form.variant, target.id, fact_outcome(fact), fact.what,
                     fact.sources[0], strength=fact.certainty, said=f"{fact.cited()}{remedy}", item=fact)]

