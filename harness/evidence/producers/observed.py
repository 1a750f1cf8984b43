"""Observed: the records of this harness for the form on the target (every host's latest), and, for the form the
user's model has, the records of the user's own extracted layers (``--run``)."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources
from harness.evidence.observations import Observation


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    found = []
    if scope == j.VARIANT and sources.layers is not None:
        found += [observed(o, j.YOUR_LAYER) for occurrence in sources.layers for o in occurrence]
    if form.variant:
        found += [observed(o, scope) for o in sources.observations.of(form.case, form.variant, target.id)]
    return found


def observed(observation: Observation, scope: str) -> Evidence:
    record = observation.record
    failure = record.get("failure") or {}
    return Evidence(j.OBSERVED, scope, record["case"], record["variant"], record["target"], record["outcome"],
                    failure.get("category"), observation.source, tuple(record.get("fallback_nodes") or ()),
                    tuple((record.get("details") or {}).get("dla_fallback_nodes") or ()), host=observation.host,
                    note=failure.get("message") or "", item=record)
