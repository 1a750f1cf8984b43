"""Implicit quantization's lifecycle per TensorRT version, on both sides of each edge, and against the recorded binding
API of every version in reference/trt-api."""
import json

import pytest

from harness.tensorrt.quantization_lifecycle import (
    DEPRECATED,
    REMOVED,
    SUPPORTED,
    implicit_quantization,
)
from tests.trt_contract.standin import TRT_API_DIR

RECORDED = sorted(TRT_API_DIR.glob("tensorrt-*.json"))


@pytest.mark.parametrize(("version", "status"), [
    ("8.5.2", SUPPORTED), ("8.6.1", SUPPORTED), ("9.2.0.post12.dev5", SUPPORTED), ("10.0.1.6", SUPPORTED),
    ("10.1.0", DEPRECATED), ("10.3.0", DEPRECATED), ("10.16.1.11", DEPRECATED),
    ("11.0.0", REMOVED), ("11.4.0.106", REMOVED), ("10", SUPPORTED), ("11", REMOVED),
])
def test_status_on_both_sides_of_each_edge(version, status):
    lifecycle = implicit_quantization(version)
    assert (lifecycle.version, lifecycle.status) == (version, status)
    assert lifecycle.warning_expected is (status == DEPRECATED)
    assert version in lifecycle.reason
    if status != SUPPORTED:
        assert "explicit quantization" in lifecycle.reason and "Q/DQ" in lifecycle.reason
    if status == SUPPORTED:
        assert lifecycle.reason.endswith("without a deprecation (it is deprecated from 10.1 and removed in 11.0).")
    if status == DEPRECATED:  # what a user sees in the log, and when it stops working
        assert ("implicit quantization is deprecated since 10.1: setting IBuilderConfig.int8_calibrator raises a "
                "DeprecationWarning, and 11.0 removes it; ") in lifecycle.reason


def implicit_api_present(module: dict) -> bool:
    """BuilderFlag.INT8, IBuilderConfig.int8_calibrator and the two calibrator classes the harness uses."""
    return ("INT8" in module["BuilderFlag"]["values"] and "int8_calibrator" in module["IBuilderConfig"]["members"]
            and "IInt8EntropyCalibrator2" in module and "IInt8MinMaxCalibrator" in module)


def test_there_are_recorded_versions_on_both_sides_of_the_removal():
    versions = [json.loads(path.read_text())["version"] for path in RECORDED]
    statuses = {implicit_quantization(v).status for v in versions}
    assert statuses == {SUPPORTED, DEPRECATED, REMOVED}, versions


@pytest.mark.parametrize("api_json", RECORDED, ids=lambda path: path.stem)
def test_removed_exactly_where_the_recorded_api_has_no_implicit_quantization(api_json):
    recorded = json.loads(api_json.read_text())
    assert (implicit_quantization(recorded["version"]).status == REMOVED) is not implicit_api_present(recorded["module"])


def test_the_record_form_lists_its_sources():
    record = implicit_quantization("10.2.0").to_dict()
    assert record["status"] == DEPRECATED and record["warning_expected"] is True
    assert all(source.startswith("https://") for source in record["sources"])
    assert any("4095" in source for source in record["sources"])
    assert json.loads(json.dumps(record)) == record  # what the record holds is what its JSON line says
    assert set(record) == {"version", "status", "warning_expected", "reason", "sources"}


@pytest.mark.parametrize("version", ["", "latest", "v"])
def test_a_version_without_numbers_is_an_error(version):
    with pytest.raises(ValueError, match="is not a TensorRT version"):
        implicit_quantization(version)
