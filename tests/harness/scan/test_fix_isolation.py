"""harness.scan.fix_isolation: which places' rewrites a fix keeps when the fixed model fails a check, with a check
that fails on chosen places, and how many checks it takes."""
from __future__ import annotations

import pytest

from harness.scan.fix_isolation import isolate
from harness.scan.fix_places import FixFailed


def failing_on(*culprits: str, together: tuple[str, ...] = ()):
    """A check that fails a subset holding any of ``culprits``, or all of ``together``; it records what it checked."""
    checked = []

    def check(subset: list[str]) -> FixFailed | None:
        checked.append(list(subset))
        bad = [p for p in subset if p in culprits]
        if together and set(together) <= set(subset):
            bad.append("+".join(together))
        return FixFailed("(the whole model)", "fp32-function", f"broken by {bad}") if bad else None
    return check, checked


def places(n: int) -> list[str]:
    return [f"/block{i}/Add" for i in range(n)]


def first_failure(check, subset):
    failure = check(subset)
    assert failure is not None
    return failure


@pytest.mark.parametrize("n, culprit", [(1, 0), (2, 1), (8, 0), (8, 5), (13, 12)])
def test_one_culprit_is_dropped_the_rest_kept_in_order_within_twice_log2_checks(n, culprit):
    check, checked = failing_on(places(n)[culprit])
    found = isolate(places(n), first_failure(check, places(n)), check)
    assert [p for p, _ in found.dropped] == [places(n)[culprit]]
    assert found.kept == [p for p in places(n) if p != places(n)[culprit]]
    assert found.checks == len(checked) - 1 <= 2 * max(1, (n - 1).bit_length())
    (_, failure), = found.dropped
    assert f"broken by ['{places(n)[culprit]}']" in failure.message  # the failure of the place itself


def test_every_place_failing_drops_them_all_in_at_most_2n_minus_2_checks():
    names = places(7)
    check, checked = failing_on(*names)
    found = isolate(names, first_failure(check, names), check)
    assert found.kept == [] and [p for p, _ in found.dropped] == names
    assert found.checks == len(checked) - 1 <= 2 * len(names) - 2


def test_two_places_that_fail_only_together_keep_the_first_and_drop_the_second():
    names = places(4)
    check, _ = failing_on(together=(names[1], names[3]))
    found = isolate(names, first_failure(check, names), check)
    assert [p for p, _ in found.dropped] == [names[3]]
    assert found.kept == [names[0], names[1], names[2]] and check(found.kept) is None


def test_the_kept_places_are_the_last_set_that_passed():
    names = places(6)
    check, checked = failing_on(names[2], names[4])
    found = isolate(names, first_failure(check, names), check)
    passed = [subset for subset in list(checked) if check(subset) is None]
    assert passed[-1] == found.kept == [names[0], names[1], names[3], names[5]]
