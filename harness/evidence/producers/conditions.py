"""A claim's conditions (:class:`harness.judgement.Conditions`, as index.json carries them) as they stand on one
target: what the target is known to have (its GPU's compute capability where the platform fixes it, the oldest
driver its image runs on), for both claim producers."""
from __future__ import annotations

from typing import Any, Mapping

from harness import judgement as j
from harness.tensorrt.platforms import ANY_GPU_ARCH, compute_capability


def standing(conditions: Any, target: Any) -> tuple[tuple[str, str], ...]:
    """(state, words) per condition of a claim on ``target`` (a matrix Target, or a page's column with ``platform``);
    empty for a claim without conditions."""
    if not conditions:
        return ()
    if isinstance(conditions, j.Conditions):
        conditions = conditions.to_dict()
    arch = getattr(target, "gpu_arch", None)
    gpu = compute_capability(arch) if arch not in (None, ANY_GPU_ARCH) else None
    return j.conditions_on(conditions if isinstance(conditions, Mapping) else {}, gpu,
                           getattr(target, "min_driver", None))
