"""Calibration caches: TensorRT's text format, its TRT-<version code>-<algorithm> header, and every way a file can fail
to be one. The header and line format come from caches written by TensorRT (reference log F19: TRT-100700-MinMax...;
NVIDIA/Deep-Learning-Accelerator-SW#26: TRT-8600-EntropyCalibration2 with 'input: 3d23ac36' lines)."""
import struct

import pytest

from harness.tensorrt.calibration_cache import (
    KNOWN_ALGORITHMS,
    CalibrationCacheError,
    after_build,
    check_cache,
    headers_in_text,
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
    # The edges of the format: the oldest and newest majors that write caches, the largest minor (9 before 10.0, 99
    # from it) and patch (99) their codes hold.
    ("5.1.5", "5105"), ("5.0.0", "5000"), ("10.0.0", "100000"), ("8.9.0", "8900"), ("8.6.99", "8699"),
    ("10.99.99", "109999"), ("10.3.99", "100399"), ("9.2.0", "9200"), ("9.9.9", "9909"),
])
def test_version_codes_both_ways(version, code):
    assert version_code(version) == code
    assert version_from_code(code) == ".".join(version.split(".")[:3])


@pytest.mark.parametrize("code", ["8XXX", "1", "86", "080601", "110400", "4999", "1007000", ""])
def test_codes_that_name_no_version(code):
    assert version_from_code(code) is None


@pytest.mark.parametrize(("version", "code"), [("10", "100000"), ("10.3", "100300"), ("8", "8000"), ("8.6", "8600")])
def test_a_version_of_one_or_two_parts_has_zero_for_the_missing_ones(version, code):
    assert version_code(version) == code


def test_parts_after_the_patch_are_ignored_whatever_they_hold():
    """A fourth part is never read, not even one too long for int() (Python refuses over 4300 digits)."""
    assert version_code("10.3.0." + "7" * 5000) == "100300"


@pytest.mark.parametrize("version", ["11.4.0.106", "4.0.1", "4.9.9", "8.10.0", "9.10.0", "8.6.100", "10.3.100",
                                     "10.100.0", "", "dev"])
def test_versions_that_write_no_cache(version):
    with pytest.raises(ValueError) as error:
        version_code(version)
    assert str(error.value) == f"TensorRT {version} has no calibration cache version code (majors 5 to 10 write caches)"


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


@pytest.mark.parametrize("name", ["", "conv\n1"])
def test_a_tensor_name_that_cannot_be_one_line_is_refused_before_writing(tmp_path, name):
    path = tmp_path / "c.cache"
    with pytest.raises(ValueError) as error:
        write_cache(path, "10.3.0", "EntropyCalibration2", {"input": 0.03, name: 0.05})
    assert str(error.value) == f"calibration cache {path}: tensor name {name!r} cannot be written on one line"
    assert not path.exists()


def test_a_cache_is_utf_8_whatever_the_locale(tmp_path, ascii_locale):
    path = tmp_path / "c.cache"
    written = write_cache(path, "10.3.0", "EntropyCalibration2", {"Eingabe_\u00fc": 0.5})
    assert path.read_bytes() == b"TRT-100300-EntropyCalibration2\nEingabe_\xc3\xbc: 3f000000\n"
    assert list(written.scales) == ["Eingabe_\u00fc"]


def test_a_missing_cache_file_is_a_clear_error_too(tmp_path):
    path = tmp_path / "nothing.cache"
    with pytest.raises(CalibrationCacheError) as error:
        read_cache(path)
    assert str(error.value) == f"calibration cache {path}: cannot be read: No such file or directory"


def test_an_empty_cache_file_says_what_a_cache_holds(tmp_path):
    path = tmp_path / "empty.cache"
    path.write_bytes(b"")
    with pytest.raises(CalibrationCacheError) as error:
        read_cache(path)
    assert str(error.value) == (f"calibration cache {path}: the file is empty (0 bytes); a cache holds a "
                                "TRT-<version>-<algorithm> header and one line per tensor")


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


def test_the_check_record_names_the_file_its_header_and_both_algorithms(tmp_path):
    path = tmp_path / "old.cache"
    path.write_bytes(DLA_SW_CACHE)
    description = (f"calibration cache {path} was written by TensorRT 8.6.0 with the EntropyCalibration2 algorithm "
                   "(header TRT-8600-EntropyCalibration2); this is TensorRT 10.3.0 with a calibrator of the "
                   "MinMaxCalibration algorithm: the version and the algorithm differ")
    assert check_cache(read_cache(path), "10.3.0.26", "minmax").to_dict() == {
        "file": str(path), "header": "TRT-8600-EntropyCalibration2", "written_by": "8.6.0",
        "algorithm": "EntropyCalibration2", "running": "10.3.0", "calibrator_algorithm": "MinMaxCalibration",
        "version_matches": False, "algorithm_matches": False, "mismatches": ["version", "algorithm"],
        "description": description,
    }


@pytest.mark.parametrize(("running", "as_read"), [("10", "10.0.0"), ("10.3", "10.3.0"), ("8.6", "8.6.0")])
def test_a_running_version_of_one_or_two_parts_has_zero_for_the_missing_ones(tmp_path, running, as_read):
    path = tmp_path / "old.cache"
    path.write_bytes(DLA_SW_CACHE)
    check = check_cache(read_cache(path), running, "entropy2")
    assert check.running == as_read
    assert check.version_matches is (as_read == "8.6.0")
    assert f"; this is TensorRT {as_read} with a calibrator" in check.describe()


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


LONG_LINE = "x" * 90


@pytest.mark.parametrize(("content", "message"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a TensorRT calibration cache: it is binary, not text (a cache "
     "is a text header TRT-<version>-<algorithm> and 'tensor: hex' lines)"),
    (f"{LONG_LINE}\ninput: 3c008912\n".encode(), f"not a TensorRT calibration cache: its first line {'x' * 80!r} is "
     "no TRT-<version code>-<algorithm> header"),
    (b"TRT-8600-EntropyCalibration2 \ninput: 3c008912\n", "not a TensorRT calibration cache: its first line "
     "'TRT-8600-EntropyCalibration2 ' is no TRT-<version code>-<algorithm> header"),
    (b"TRT-8XXX-EntropyCalibration2\ninput: 3c008912\n", "header 'TRT-8XXX-EntropyCalibration2' names no TensorRT "
     "version: '8XXX' is not a version code (four digits for 5.x to 9.x, e.g. 8601, six from 10.0, e.g. 100700; no "
     "TensorRT from 11.0 writes calibration caches)"),
    (b"TRT-8601-EntropyCalibration2\n", "cut short: the header 'TRT-8601-EntropyCalibration2' is followed by no "
     "tensor scale"),
    (b"TRT-8601-EntropyCalibration2\ninput: 3c00\nconv1: 3d895e44", "damaged: line 2 'input: 3c00' is not "
     "'<tensor>: <8 hex digits>'"),
    (f"TRT-8601-EntropyCalibration2\n{LONG_LINE}: 3c00".encode(), f"cut short: line 2 {('x' * 90 + ': 3c00')[:80]!r} "
     "is not '<tensor>: <8 hex digits>'"),
    (b"TRT-8601-EntropyCalibration2\ninput: 3c00891X\n", "damaged: line 2 'input: 3c00891X' is not "
     "'<tensor>: <8 hex digits>'"),
    (b"TRT-8601-EntropyCalibration2\ninput: 3c008912  \n", "damaged: line 2 'input: 3c008912  ' is not "
     "'<tensor>: <8 hex digits>'"),
], ids=["binary", "long-first-line", "header-with-trailing-space", "no-version-code", "header-only",
        "damaged-before-the-last-line", "long-last-line", "damaged-last-line-quoted-as-written",
        "trailing-spaces-quoted-as-written"])
def test_a_bad_cache_gets_the_whole_reason_quoting_the_line_as_written(tmp_path, content, message):
    """TensorRT writes exactly 'TRT-<code>-<algorithm>' and '<tensor>: <8 hex digits>' lines; anything else is named,
    quoted as it is in the file (at most 80 characters), so an edited or damaged file is not read as a valid one."""
    path = tmp_path / "model.calib"
    path.write_bytes(content)
    with pytest.raises(CalibrationCacheError) as error:
        read_cache(path)
    assert str(error.value) == f"calibration cache {path}: {message}"


def test_a_cache_with_windows_line_ends_reads_as_the_same_cache(tmp_path):
    path = tmp_path / "windows.cache"
    path.write_bytes(DLA_SW_CACHE.replace(b"\n", b"\r\n"))
    crlf = read_cache(path)
    path.write_bytes(DLA_SW_CACHE)
    assert (crlf.header, crlf.algorithm, crlf.scales) == (read_cache(path).header, "EntropyCalibration2",
                                                          read_cache(path).scales)


def test_an_algorithm_the_harness_does_not_know_is_kept_as_written(tmp_path):
    path = tmp_path / "custom.cache"
    path.write_bytes(b"TRT-8601-MyCalibratorX\ninput: 3c008912\n")
    assert read_cache(path).algorithm == "MyCalibratorX"


def test_after_build_records_the_file_and_what_it_holds(tmp_path):
    path = tmp_path / "calibration.cache"
    path.write_bytes(DLA_SW_CACHE)
    assert after_build(path, DLA_SW_CACHE) == {"state": "used", "file": str(path)}
    write_cache(path, "10.3.0", "MinMaxCalibration", {"input": 0.03, "conv": 0.5})
    assert after_build(path, DLA_SW_CACHE) == {"state": "written", "file": str(path), "written_by": "10.3.0",
                                               "header": "TRT-100300-MinMaxCalibration", "tensors": 2}
    path.write_bytes(b"TRT-1003")
    assert after_build(path, DLA_SW_CACHE) == {
        "state": "unreadable", "file": str(path),
        "reason": f"calibration cache {path}: not a TensorRT calibration cache: its first line 'TRT-1003' is no "
                  "TRT-<version code>-<algorithm> header"}


def test_a_header_named_in_a_log_gives_its_version_and_algorithm(reference_dir):
    """F19 (ultralytics PR #24368): "Writing Calibration Cache for calibrator: TRT-100700-MinMaxCalibration"."""
    (cache,) = headers_in_text((reference_dir / "trt-logs" / "F19.log").read_text(encoding="utf-8"))
    assert (cache.version, cache.algorithm, cache.header, dict(cache.scales)) == (
        "10.7.0", "MinMaxCalibration", "TRT-100700-MinMaxCalibration", {})
    assert headers_in_text("TRT-1234567-EntropyCalibration2 and TRT-8601-EntropyCalibration2") == [
        read for read in headers_in_text("TRT-8601-EntropyCalibration2")]  # a code of no version is left out
