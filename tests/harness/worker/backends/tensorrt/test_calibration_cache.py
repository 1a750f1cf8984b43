"""Calibration caches: TensorRT's text format, its TRT-<version code>-<algorithm> header, and every way a file can fail
to be one. The header and line format come from caches written by TensorRT (reference log F19: TRT-100700-MinMax...;
NVIDIA/Deep-Learning-Accelerator-SW#26: TRT-8600-EntropyCalibration2 with 'input: 3d23ac36' lines)."""
import struct

import pytest

from harness.worker.backends.tensorrt.calibration_cache import (
    KNOWN_ALGORITHMS,
    CalibrationCacheError,
    after_build,
    check_cache,
    parse_cache,
    read_cache,
    scale_of_range,
    version_code,
    version_from_code,
    write_cache,
)

# The head of the cache in NVIDIA/Deep-Learning-Accelerator-SW#26 (a TensorRT 10.3.0 report).
DLA_SW_CACHE = (b"TRT-8600-EntropyCalibration2\n"
                b"input: 3d23ac36\n"
                b"/init_block/pool/MaxPool_output_0: 3e5b2be4\n"
                b"/stage1/unit1/body/conv1/activ/Relu_output_0: 3e540b45\n")


@pytest.mark.parametrize(("version", "code"), [
    ("8.6.1", "8601"), ("8.6.0", "8600"), ("8.5.2", "8502"), ("7.2.2", "7202"), ("10.0.1", "100001"),
    ("10.7.0", "100700"), ("10.16.1", "101601"), ("10.3.0.26", "100300"),
])
def test_version_codes_both_ways(version, code):
    assert version_code(version) == code
    assert version_from_code(code) == ".".join(version.split(".")[:3])


@pytest.mark.parametrize("code", ["8XXX", "1", "86", "080601", "110400", "4999", "1007000", ""])
def test_codes_that_name_no_version(code):
    assert version_from_code(code) is None


@pytest.mark.parametrize("version", ["11.4.0.106", "4.0.1", "8.10.0"])
def test_versions_that_write_no_cache(version):
    with pytest.raises(ValueError, match=version):
        version_code(version)


def test_the_header_of_the_reference_log_f19_names_10_7(reference_dir):
    line = next(l for l in (reference_dir / "trt-logs" / "F19.log").read_text().splitlines() if "Calibration Cache" in l)
    header = line.rsplit(": ", 1)[1]
    cache = parse_cache(f"{header}\nimages: 3c010204\n".encode(), "F19")
    assert (cache.version, cache.algorithm, cache.header) == ("10.7.0", "MinMaxCalibration", header)


def test_a_cache_of_an_upstream_report_reads_with_its_scales(tmp_path):
    path = tmp_path / "calibration.cache"
    path.write_bytes(DLA_SW_CACHE)
    cache = read_cache(path)
    assert (cache.version, cache.code, cache.algorithm) == ("8.6.0", "8600", "EntropyCalibration2")
    assert list(cache.scales) == ["input", "/init_block/pool/MaxPool_output_0",
                                  "/stage1/unit1/body/conv1/activ/Relu_output_0"]
    assert cache.scales["input"] == pytest.approx(struct.unpack(">f", bytes.fromhex("3d23ac36"))[0])
    assert cache.scales["input"] == pytest.approx(0.03996, rel=1e-3)


def test_write_then_read_gives_the_header_and_scales_back(tmp_path):
    scales = {"input": scale_of_range(4.0), "(Unnamed Layer* 8) [Constant]_output": scale_of_range(0.0)}
    written = write_cache(tmp_path / "c.cache", "10.3.0", "MinMaxCalibration", scales)
    assert (tmp_path / "c.cache").read_text().splitlines()[0] == "TRT-100300-MinMaxCalibration"
    assert written.header == "TRT-100300-MinMaxCalibration" and written.version == "10.3.0"
    assert written.scales == pytest.approx({"input": 4.0 / 127, "(Unnamed Layer* 8) [Constant]_output": 1.0 / 127})
    assert set(KNOWN_ALGORITHMS) == {"EntropyCalibration2", "MinMaxCalibration"}


@pytest.mark.parametrize(("content", "message"), [
    (b"", "the file is empty"),
    (b"TRT-8601-EntropyCalibration2\n", "cut short: the header"),
    (b"TRT-8601-EntropyCalibration2\ninput: 3c008912\nconv1: 3d8", "cut short: line 3 'conv1: 3d8'"),
    (b"TRT-8601-EntropyCalibration2\ninput: 3c00\nconv1: 3d895e44\n", "damaged: line 2"),
    (b"TRT-8XXX-EntropyCalibration2\ninput: 3c008912\n", "'8XXX' is not a version code"),
    (b"TRT-110400-EntropyCalibration2\ninput: 3c008912\n", "no TensorRT from 11.0 writes"),
    (b'{"Layers": []}\n', "not a TensorRT calibration cache: its first line"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "binary, not text"),
])
def test_a_bad_cache_is_a_clear_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "model.calib"
    path.write_bytes(content)
    with pytest.raises(CalibrationCacheError) as error:
        read_cache(path)
    assert str(error.value).startswith(f"calibration cache {path}: ")
    assert message in str(error.value)


def test_a_missing_cache_file_is_a_clear_error_too(tmp_path):
    with pytest.raises(CalibrationCacheError, match=r"calibration cache .*nothing\.cache: cannot be read"):
        read_cache(tmp_path / "nothing.cache")


def test_check_names_what_differs(tmp_path):
    path = tmp_path / "old.cache"
    path.write_bytes(DLA_SW_CACHE)
    cache = read_cache(path)
    same = check_cache(cache, "8.6.0", "entropy2")
    assert same.mismatches == () and same.describe().endswith("they match")
    on_10_3 = check_cache(cache, "10.3.0.26", "entropy2")
    assert on_10_3.mismatches == ("version",) and on_10_3.running == "10.3.0"
    assert "written by TensorRT 8.6.0" in on_10_3.describe() and "this is TensorRT 10.3.0" in on_10_3.describe()
    both = check_cache(cache, "10.3.0", "minmax")
    assert both.mismatches == ("version", "algorithm")
    assert both.to_dict()["mismatches"] == ["version", "algorithm"]
    assert both.describe().endswith(
        "this is TensorRT 10.3.0 with a calibrator of the MinMaxCalibration algorithm: the version and the algorithm "
        "differ")
    assert check_cache(cache, "8.6.0", None).algorithm_matches is None


def test_after_build_says_whether_tensorrt_used_the_cache_or_wrote_its_own(tmp_path):
    path = tmp_path / "calibration.cache"
    assert after_build(path, None)["state"] == "none"
    path.write_bytes(DLA_SW_CACHE)
    assert after_build(path, DLA_SW_CACHE)["state"] == "used"
    write_cache(path, "10.3.0", "EntropyCalibration2", {"input": 0.03})
    rewritten = after_build(path, DLA_SW_CACHE)
    assert (rewritten["state"], rewritten["written_by"], rewritten["header"]) == (
        "written", "10.3.0", "TRT-100300-EntropyCalibration2")
    path.write_bytes(b"")
    assert after_build(path, DLA_SW_CACHE)["state"] == "unreadable"
