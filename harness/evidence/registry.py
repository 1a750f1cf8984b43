"""The producers, one per evidence basis, and :func:`evidence_for`, the one function every caller gathers evidence
with (the scan per finding and workaround, ``diagnose`` and ``--fix`` through the scan's prediction, the planning
view per variant and target)."""
from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources
from harness.evidence.producers import (claimed, not_applicable, observed, parser, predicted, range_claimed,
                                       target_fact)


class Producer(NamedTuple):
    """The basis (a name of :data:`harness.judgement.BASES`) and the function that gives its evidence for one form on
    one target: ``produce(form, target, sources, scope) -> list[Evidence]``, every piece with ``kind`` the basis."""

    basis: str
    produce: Callable[[Form, Any, Sources, str], list[Evidence]]


PRODUCERS = (
    Producer(j.PARSER, parser.produce),
    Producer(j.NOT_APPLICABLE, not_applicable.produce),
    Producer(j.FACT, target_fact.produce),
    Producer(j.OBSERVED, observed.produce),
    Producer(j.CLAIMED, claimed.produce),
    Producer(j.RANGE_CLAIMED, range_claimed.produce),
    Producer(j.PREDICTED, predicted.produce),
)
_ORDER = {tier: k for k, tier in enumerate(j.TIERS)}


def evidence_for(form: Form, target: Any, sources: Sources = Sources(), stand_ins: Iterable[Form] = ()) -> list[Evidence]:
    """The evidence about ``form`` on ``target`` (a matrix Target, or a page's column with ``id``, ``backend`` and
    ``platform``) from ``sources``, scope ``variant`` (the user's own layers, when ``sources.layers`` holds them, scope
    ``your-layer``); and the evidence of the forms that stand in for it when it has none of its own (``stand_ins``: the
    failing forms a sweep inherits from, or all of them when the user's form was not named), scope
    ``reported-form``, from the bases about one form only (not those ``across_scopes``: what is known of the target
    is said once, of the form in question). In the engine's order (:data:`harness.judgement.TIERS`), each tier in
    the order its producer gave."""
    stand_ins = tuple(stand_ins)
    found = []
    for producer in PRODUCERS:
        found += producer.produce(form, target, sources, j.VARIANT)
        if not j.BASIS[producer.basis].across_scopes:
            for other in stand_ins:
                found += producer.produce(other, target, sources, j.REPORTED_FORM)
    return sorted(found, key=lambda e: _ORDER[(e.scope, e.kind)])
