"""What a case library's index.json declares for the verdict engine beyond its claims for one target, read from the
index form (the scan, diagnose and the planning view read cases there; reports never import cases): a variant's
range claims and needs, a case's not-applicable backends, and what they give the evidence layer's producers
(:mod:`harness.evidence`: not applicable, a target's fact, a range claim):

* :func:`not_applicable_basis` (case entry, target): why the case's finding cannot concern the target's backend;
* :func:`fact_basis` (variant entry, target): the fact of the target that stops the variant's library cell;
  :func:`model_fact_basis` the fact that stops a user's model of the form (only what the model itself needs, not the
  knobs the case's cell is built with: what the scan and the planning view judge by);
* :func:`range_claim_basis` (variant entry, target): the range claim that covers the target, the narrowest first.

Every reader names the entry and field of a malformed index in its ValueError.
"""
from __future__ import annotations

from typing import Any, Mapping

from harness import judgement as j
from harness.targets.facts import CANNOT_EXPRESS, NEEDS, NO_DEVICE, REFUSES_BUILD, Fact, blocks, blocks_model
from harness.targets.ranges import TargetLike, covering, range_claim_from_dict


# The evidence word a stopping fact gives the engine's fact basis (harness.judgement.BASES): a refused build fails, a
# form whose knob or device does not exist on the target cannot exist there.
FACT_OUTCOMES = {REFUSES_BUILD: j.FAIL, CANNOT_EXPRESS: j.UNAVAILABLE, NO_DEVICE: j.UNAVAILABLE}


def fact_outcome(fact: Fact) -> str:
    """The fact basis's evidence word for a fact that stops a form."""
    return FACT_OUTCOMES[fact.effect]


def range_claims(entry: Mapping[str, Any], where: str = "variant") -> tuple[j.Claim, ...]:
    """The range claims of a variant entry of index.json (none in an index written before they existed)."""
    found = entry.get("range_claims", [])
    if not isinstance(found, list):
        raise ValueError(f"{where}: field 'range_claims' must be a list, found a {type(found).__name__}")
    return tuple(range_claim_from_dict(item, f"{where}.range_claims[{k}]") for k, item in enumerate(found))


def needs(entry: Mapping[str, Any], where: str = "variant") -> tuple[str, ...]:
    """What a variant entry's form needs of a target (harness.targets.facts.NEEDS); none in an older index."""
    found = entry.get("needs", [])
    if not isinstance(found, list) or not all(isinstance(need, str) for need in found):
        raise ValueError(f"{where}: field 'needs' must be a list of names among {NEEDS}, found {found!r}")
    unknown = sorted(set(found) - set(NEEDS))
    if unknown:
        raise ValueError(f"{where}.needs: {unknown} are not among {NEEDS}")
    return tuple(found)


def not_applicable(case_entry: Mapping[str, Any], backend: str, where: str = "case") -> str | None:
    """Why a case entry's finding cannot concern ``backend`` (the case's own words), or None."""
    found = case_entry.get("not_applicable", {})
    if not isinstance(found, Mapping) or not all(isinstance(v, str) for v in found.values()):
        raise ValueError(f"{where}: field 'not_applicable' must map a backend name to why, found {found!r}")
    return found.get(backend)


def not_applicable_basis(case_entry: Mapping[str, Any], target: TargetLike, where: str = "case") -> str | None:
    """Why the case's finding is not applicable on ``target`` (listed, never the headline), or None."""
    return not_applicable(case_entry, target.backend, where)


def fact_basis(variant_entry: Mapping[str, Any], target: Any, gpu_arch: str | None = None,
               where: str = "variant") -> Fact | None:
    """The fact of ``target`` (a matrix Target) that stops the variant's library cell (a knob it is built with
    included), with its source and remedy; None when nothing it needs is missing there (or not known)."""
    return blocks(needs(variant_entry, where), target, gpu_arch)


def model_fact_basis(variant_entry: Mapping[str, Any], target: Any, gpu_arch: str | None = None,
                     where: str = "variant") -> Fact | None:
    """The fact of ``target`` that stops a user's model of the variant's form (the model's own needs: a calibrator
    for a model without Q/DQ, FP8/FP4 types and GPUs), with its source and remedy; None otherwise."""
    return blocks_model(needs(variant_entry, where), target, gpu_arch)


def range_claim_basis(variant_entry: Mapping[str, Any], target: TargetLike, gpu_arch: str | None = None,
                      where: str = "variant") -> j.Claim | None:
    """The range claim of the variant that covers ``target``, the narrowest (then newest) first; None where none
    does. The engine asks it only where no observation and no claim for the target decided."""
    covered = covering(range_claims(variant_entry, where), target, gpu_arch)
    return covered[0] if covered else None
