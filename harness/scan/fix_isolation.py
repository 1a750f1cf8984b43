"""Which rewrites ``scan --fix`` keeps when the fixed model fails a check: the places whose rewrite makes it fail are
found by bisection and dropped, each with the failure its rewrite caused; the rest is kept only as a set that passed
every check.

:func:`isolate` halves the places that fail together and checks each half on top of those kept so far; a half that
passes is kept, a half that fails is halved again, and a single place that fails is dropped. It checks at most
``2 * len(places) - 2`` sets after the first failure (a failing half is not checked again when its sibling passed):
one culprit among N places costs about ``2 * log2(N)`` checks, never an exponential number.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Generic, Sequence, TypeVar

from harness.scan.fix_places import FixFailed

Place = TypeVar("Place")


@dataclasses.dataclass
class Isolated(Generic[Place]):
    """The places kept (the last set that passed every check, in the original order), those dropped with the
    failure of the check that had them on top of the kept ones, and how many sets were checked to tell them apart."""

    kept: list[Place]
    dropped: list[tuple[Place, FixFailed]]
    checks: int


def isolate(places: Sequence[Place], failure: FixFailed,
            check: Callable[[list[Place]], FixFailed | None]) -> Isolated[Place]:
    """Split ``places``, whose rewrites together failed with ``failure``, into those kept and those dropped;
    ``check(subset)`` rewrites and checks just ``subset`` (None when it passes)."""
    kept: list[Place] = []
    dropped: list[tuple[Place, FixFailed]] = []
    checks = 0

    def settle(suspects: list[Place], known: FixFailed | None) -> None:
        nonlocal checks, kept
        failed = known
        if failed is None:
            checks += 1
            failed = check(kept + suspects)
        if failed is None:
            kept = kept + suspects
            return
        if len(suspects) == 1:
            dropped.append((suspects[0], failed))
            return
        half = len(suspects) // 2
        before = len(dropped)
        settle(suspects[:half], None)
        # the first half kept whole: the kept set plus the second half is the set that just failed
        settle(suspects[half:], failed if len(dropped) == before else None)

    settle(list(places), failure)
    return Isolated(kept, dropped, checks)
