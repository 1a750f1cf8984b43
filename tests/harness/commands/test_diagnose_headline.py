"""`diagnose` answers first: one headline per file before the details (a build log's failure with what the library
knows of its pattern, an engine's precisions with the layers that fell back), on verbatim TensorRT output."""
from __future__ import annotations

from tests.harness.commands.test_main import harness
from tests.harness.commands.test_diagnose import reference_dir  # noqa: F401


def test_a_failed_build_log_is_answered_in_its_first_line(reference_dir, tmp_path):
    result = harness("diagnose", str(reference_dir / "trt-logs" / "F04.log"), "--targets", "trt86-orin",
                     "--out", str(tmp_path), check=False)
    assert result.returncode == 1, result.stderr
    first, blank = result.stdout.splitlines()[:2]
    assert first == ("F04.log: failed: no-implementation at node /model.1/conv/Conv + PWN(PWN(/model.1/act/Sigmoid), "
                     "/model.1/act/Mul): S1, known to pass from 9.2 (trt92-x86, trt100-x86, trt100-orin); applies to "
                     "trt86-orin: S1 (s1-conv-silu): blocked") and blank == ""


def test_an_engine_is_answered_with_its_int8_layers_and_what_fell_back(reference_dir, tmp_path):
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    result = harness("diagnose", str(engine), "--out", str(tmp_path), check=False)
    assert result.stdout.splitlines()[0] == (
        "a100-resnet-qat.graph.json: built: 21 of 24 compute layers INT8; 3 fell back: MaxPool_12 (fp32), "
        "GlobalAveragePool_246 (fp16), copied_squeeze_after_(Unnamed Layer* 307) [ElementWise] (fp32)")
