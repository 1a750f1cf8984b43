"""Release numbers read as tuples that order as releases do."""
import pytest

from harness.tensorrt.versions import version_tuple


@pytest.mark.parametrize("version, parsed", [("0.49.26", (0, 49, 26)), ("9.2.0.post12", (9, 2, 0)),
                                             ("0.50.3rc1", (0, 50, 3)), ("10.16.1.11", (10, 16, 1, 11)),
                                             ("dev", ())])
def test_version_tuple(version, parsed):
    assert version_tuple(version) == parsed


def test_version_tuples_order_releases_as_numbers():
    assert version_tuple("0.50.2") < version_tuple("0.50.3") <= version_tuple("0.50.3.post1") < version_tuple("0.100")
