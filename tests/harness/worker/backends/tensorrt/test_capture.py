"""What a cell's run leaves in its directory: every TensorRT message with its severity in ``tensorrt.log``, Python
warnings once each with their count, Polygraphy's messages in ``polygraphy.log``; and the digest a record carries.
On the contract stand-in (its ILogger is the binding's class; the messages below are written by the tests)."""
import warnings

import pytest

from harness.worker.backends.tensorrt.capture import CellCapture, TensorRTLogFile, process_logger
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


def test_the_log_file_writes_one_tagged_line_per_line_of_a_message_and_counts_messages(tmp_path):
    log = TensorRTLogFile()
    log.open(tmp_path / "tensorrt.log")
    log.write("ERROR", "first line\nsecond line")
    log.write("INTERNAL_ERROR", "")
    log.write("SOMETHING_NEW", "x", "python")
    log.write("ERROR", "again")
    log.close()
    log.write("WARNING", "after close: counted, not written")
    assert (tmp_path / "tensorrt.log").read_text() == ("[E] [TRT] first line\n[E] [TRT] second line\n[F] [TRT] \n"
                                                       "[?] [python] x\n[E] [TRT] again\n")
    assert log.counts == {"ERROR": 2, "INTERNAL_ERROR": 1, "SOMETHING_NEW": 1, "WARNING": 1}
    log.open(tmp_path / "next.log")
    assert log.counts == {} and log.path == tmp_path / "next.log"
    log.close()
    log.close()  # closing twice is harmless


def test_one_logger_per_tensorrt_module_and_it_never_raises_into_tensorrt(tmp_path, capsys):
    standin = ContractStandIn.for_version("10.3.0")
    logger = process_logger(standin.module)
    assert process_logger(standin.module) is logger
    assert isinstance(logger, standin.module.ILogger)
    assert process_logger(ContractStandIn.for_version("8.6.1").module) is not logger
    logger.file.open(tmp_path / "tensorrt.log")
    logger.log(standin.module.ILogger.Severity.VERBOSE, "by enum")
    logger.log("Severity.WARNING", "by its text")
    logger.file._file.close()  # a write now fails: the message goes to stderr instead
    logger.log(standin.module.ILogger.Severity.ERROR, "lost")
    assert (tmp_path / "tensorrt.log").read_text() == "[V] [TRT] by enum\n[W] [TRT] by its text\n"
    assert "trt-matrix: could not record a TensorRT message (I/O operation on closed file.): lost" in \
        capsys.readouterr().err


def test_a_cell_capture_records_tensorrt_python_warnings_and_polygraphy_and_restores_polygraphy(tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    with installed_as_tensorrt(standin):
        from polygraphy.logger import G_LOGGER

        severity, colors = G_LOGGER.module_severity, G_LOGGER.colors
        capture = CellCapture(standin.module, tmp_path)
        assert capture.tensorrt_text() == "" and capture.polygraphy_text() == ""
        with capture:
            assert G_LOGGER.colors is False
            process_logger(standin.module).log(standin.module.ILogger.Severity.ERROR, "10: no implementation")
            process_logger(standin.module).log(standin.module.ILogger.Severity.INFO, "building")
            for _ in range(3):
                warnings.warn("IInt8EntropyCalibrator2 is deprecated", DeprecationWarning)
            warnings.warn("another", UserWarning)
            G_LOGGER.warning("Polygraphy speaking")
        assert (G_LOGGER.module_severity, G_LOGGER.colors) == (severity, colors)
    lines = capture.tensorrt_text().splitlines()
    assert lines[:2] == ["[E] [TRT] 10: no implementation", "[I] [TRT] building"]
    assert lines[2].startswith("[W] [python] DeprecationWarning: IInt8EntropyCalibrator2 is deprecated (test_capture.py:")
    assert lines[3].startswith("[W] [python] UserWarning: another (test_capture.py:") and len(lines) == 4
    assert [(w["category"], w["message"], w["count"]) for w in capture.python_warnings] == [
        ("DeprecationWarning", "IInt8EntropyCalibrator2 is deprecated", 3), ("UserWarning", "another", 1)]
    assert capture.python_warnings[0]["where"].startswith("test_capture.py:")
    assert "Polygraphy speaking" in capture.polygraphy_text()
    assert capture.summary() == {
        "log_files": {"tensorrt": str(tmp_path / "tensorrt.log"), "polygraphy": str(tmp_path / "polygraphy.log")},
        "tensorrt_messages": {"ERROR": 1, "INFO": 1, "WARNING": 2}, "python_warnings": capture.python_warnings}
    assert capture.digest("the build failed") == "\n".join([
        "[E] [TRT] 10: no implementation", lines[2], lines[3], "[failure] the build failed",
        f"[full logs, every severity: {tmp_path / 'tensorrt.log'} and {tmp_path / 'polygraphy.log'}]"])
    assert capture.digest() == "\n".join([
        "[E] [TRT] 10: no implementation", lines[2], lines[3],
        f"[full logs, every severity: {tmp_path / 'tensorrt.log'} and {tmp_path / 'polygraphy.log'}]"])


def test_a_polygraphy_that_hands_out_another_logger_is_an_environment_problem(tmp_path, monkeypatch):
    from harness.worker.backends.base import EnvironmentProblem

    standin = ContractStandIn.for_version("10.3.0")
    with installed_as_tensorrt(standin):
        from polygraphy.backend.trt import util

        monkeypatch.setattr(util, "get_trt_logger", lambda: object())
        with pytest.raises(EnvironmentProblem) as problem:
            with CellCapture(standin.module, tmp_path):
                pass
    assert str(problem.value).startswith(
        "This Polygraphy does not hand out the TensorRT logger kept in polygraphy.backend.trt.util.TRT_LOGGER, so "
        "TensorRT's messages could not be captured.\nThe 'tensorrt' backend drives TensorRT through Polygraphy")
    process_logger(standin.module).file.write("ERROR", "after the failed start")
    assert (tmp_path / "tensorrt.log").read_text() == ""  # the file was closed again


def test_logs_with_bytes_that_are_not_utf8_are_still_read(tmp_path):
    """TensorRT and Polygraphy print node names as the model spells them; one in another encoding must not make the
    cell's logs unreadable: its bytes read as U+FFFD, the rest of the line (UTF-8 included) as written."""
    capture = CellCapture(ContractStandIn.for_version("10.3.0").module, tmp_path)
    line = "[E] [TRT] Could not find any implementation for node conv_µ_".encode() + b"\xe9t\xff\n"
    capture.tensorrt_log.write_bytes(line)
    capture.polygraphy_log.write_bytes(b"[E] " + line)
    expected = "[E] [TRT] Could not find any implementation for node conv_\u00b5_\ufffdt\ufffd\n"
    assert capture.tensorrt_text() == expected
    assert capture.polygraphy_text() == "[E] " + expected


def test_both_logs_are_utf_8_whatever_the_locale(tmp_path, ascii_locale):
    """A node name outside ASCII, from TensorRT and from Polygraphy, on a machine whose locale is not UTF-8."""
    standin = ContractStandIn.for_version("10.3.0")
    with installed_as_tensorrt(standin):
        from polygraphy.logger import G_LOGGER

        with CellCapture(standin.module, tmp_path) as capture:
            process_logger(standin.module).log(standin.module.ILogger.Severity.ERROR, "node conv_\u00b5 failed")
            G_LOGGER.warning("tensor conv_\u00b5_output")
    assert capture.tensorrt_text() == "[E] [TRT] node conv_\u00b5 failed\n"
    assert "tensor conv_\u00b5_output" in capture.polygraphy_text()


def test_a_log_file_before_it_is_opened_counts_messages_writes_none_and_closes_harmlessly(tmp_path):
    log = TensorRTLogFile()
    assert log.path is None and log.counts == {}
    log.write("WARNING", "before any cell")
    log.close()
    assert log.counts == {"WARNING": 1}


def test_a_capture_that_never_started_summarises_to_nothing(tmp_path):
    capture = CellCapture(ContractStandIn.for_version("10.3.0").module, tmp_path)
    assert capture.summary()["python_warnings"] == []


@pytest.mark.parametrize("severity", ["ILogger.Severity.ERROR", "ERROR"])
def test_a_severity_given_as_text_is_tagged_by_its_last_part(tmp_path, severity):
    """Bindings print the enum with or without its class path; a bare name has no dot at all."""
    standin = ContractStandIn.for_version("8.6.1")
    logger = process_logger(standin.module)
    logger.file.open(tmp_path / "tensorrt.log")
    logger.log(severity, "message")
    logger.file.close()
    assert (tmp_path / "tensorrt.log").read_text() == "[E] [TRT] message\n"
