"""Reading upstream claims: the one reader of claims from a cases directory's ``index.json`` (the report's and the
scan's), and which claim a page shows for a target. What a claim means is :mod:`harness.judgement`'s."""
from __future__ import annotations

from typing import Any, Mapping

from harness.judgement import CLAIM_ANSWERS, CLAIM_FIELDS, STRENGTH_LABELS, Conditions, claim_for
from harness.tensorrt.platforms import ANY_GPU_ARCH, PLATFORM_ARCH, compute_capability
from harness.worker.errors import InputError


class ClaimsError(InputError):
    """Claims in an index.json that cannot be read (bad input from the user's cases directory); the message names the
    file and the field."""


def target_claim(claims, target_id: str, platform: str | None = None,
                 gpu_arch: str | None = None) -> Mapping[str, Any] | None:
    """The upstream claim a page or the scan shows for ``target_id``. A claim naming a GPU architecture counts where
    the GPU is known: the architecture the records ran on (``gpu_arch``, "sm_120"), else the one the platform fixes
    (Orin, Thor); on a target of any GPU (x86) with no records, only a claim naming none (the others speak of some
    hosts only, and judge the records of those hosts)."""
    arch = gpu_arch if gpu_arch not in (None, ANY_GPU_ARCH) else PLATFORM_ARCH.get(platform or "")
    return claim_for(claims, target_id, compute_capability(arch))


def variant_claims(entry: Mapping[str, Any], where: str) -> tuple[dict[str, Any], ...]:
    """The upstream claims of one variant entry of ``index.json`` (``where`` names it in errors), as dicts with
    ``target``, ``outcome``, ``source``, ``strength``, ``category`` and ``note``."""
    claims = entry.get("claims", [])
    if not isinstance(claims, list):
        raise ClaimsError(f"{where}: field 'claims' must be a list, found a {type(claims).__name__}")
    read = []
    for k, claim in enumerate(claims):
        if not isinstance(claim, dict) or not all(isinstance(claim.get(f), str) for f in CLAIM_FIELDS):
            raise ClaimsError(f"{where}.claims[{k}]: a claim needs the strings 'target', 'outcome', 'source' and "
                              "'strength'")
        for field, known in (("outcome", CLAIM_ANSWERS), ("strength", STRENGTH_LABELS)):
            if claim[field] not in known:
                raise ClaimsError(f"{where}.claims[{k}]: field {field!r} is {claim[field]!r}, not one of "
                                  f"{tuple(known)}")
        if claim.get("conditions") is not None:
            try:
                Conditions.from_dict(claim["conditions"], f"{where}.claims[{k}].conditions")
            except ValueError as error:
                raise ClaimsError(str(error)) from None
        read.append({"category": None, "note": "", **claim})
    return tuple(read)


def index_claims(index: Mapping[str, Any], where: str) -> dict[tuple[str, str], tuple[dict[str, Any], ...]]:
    """Per (case, variant), the upstream claims of a parsed ``index.json`` (what ``trt-matrix generate``
    writes, or the same built in memory by ``cases.generate.declared_index``)."""
    found = {}
    for i, case in enumerate(index.get("cases", [])):
        for j, variant in enumerate(case.get("variants", [])):
            found[(case["id"], variant["name"])] = variant_claims(
                variant, f"{where}: cases[{i}] ({case['id']}).variants[{j}]")
    return found
