"""`classify` and `layers` through the real command: one error line naming the file and the problem, never a
traceback, and warnings where the output would otherwise mislead."""
import json

import pytest

from tests.harness.commands.test_main import harness
from tests.harness.worker.backends.tensorrt.conftest import existing_reference_dir


@pytest.fixture(scope="module")
def reference_dir():
    return existing_reference_dir()


def assert_one_error_line(result, *parts):
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    for part in parts:
        assert str(part) in result.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "it is empty"), (bytes(range(256)) * 4, "binary data"), (b"dear diary\n", "no line carries")],
    ids=["empty", "binary", "prose"],
)
def test_classify_refuses_what_is_not_a_tensorrt_log(tmp_path, content, problem):
    log = tmp_path / "build.log"
    log.write_bytes(content)
    assert_one_error_line(harness("classify", str(log), check=False), log, "does not look like a TensorRT log",
                          problem)


def test_classify_keeps_an_internal_error_apart_from_a_plain_runtime_error(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("[E] Error[9]: [shapeMachine.cpp::eval::771] Error Code 9: Internal Error (Unexpected shape.)\n")
    assert json.loads(harness("classify", str(log)).stdout)["category"] == "internal-assert"
    log.write_text("[E] Something went wrong.\n")
    assert json.loads(harness("classify", str(log)).stdout)["category"] == "runtime-error"


@pytest.mark.parametrize("command", ["classify", "layers"])
def test_a_directory_or_a_missing_file_is_one_error_line(tmp_path, command):
    assert_one_error_line(harness(command, str(tmp_path), check=False), tmp_path, "is a directory")
    assert_one_error_line(harness(command, str(tmp_path / "nope"), check=False), tmp_path / "nope", "no such file")


@pytest.mark.parametrize(
    ("content", "problem"),
    [("[1, 2, 3]", "engine layer #0 is neither a layer name nor a layer dict"),
     ('{"foo": 1}', "engine inspector JSON must be {'Layers': [...]}"),
     ('{"Layers": [{"Name": 12, "LayerType": "Reformat"}]}', "engine layer #0: field 'Name' must be str, found int")],
    ids=["list-of-numbers", "other-object", "number-name"],
)
def test_layers_names_the_file_and_what_is_wrong_with_its_json(tmp_path, content, problem):
    engine = tmp_path / "engine.json"
    engine.write_text(content)
    assert_one_error_line(harness("layers", str(engine), check=False), f"{engine}: JSON, but not engine inspector",
                          problem)


def test_layers_reads_pasted_lines_and_says_how_many_it_read_and_skipped(tmp_path, reference_dir):
    lines = [l for l in (reference_dir / "trt-logs" / "F36.log").read_text().splitlines() if "Layer(" in l]
    paste = tmp_path / "paste.txt"
    paste.write_text("From my DeepStream app:\n" + "\n".join("INFO: [TRT]: " + l.split("] ", 1)[-1] for l in lines))
    result = harness("layers", str(paste))
    assert [layer["precision"] for layer in json.loads(result.stdout)] == ["int8"] * 4
    assert f"{paste}: 4 layer line(s) read, 1 other line(s) skipped" in result.stderr


def test_layers_with_an_unreadable_onnx_model_is_one_error_line(tmp_path, reference_dir, control_cases_dir):
    model = tmp_path / "cut.onnx"
    model.write_bytes((control_cases_dir / "control-qdq-conv-relu" / "conv-relu.onnx").read_bytes()[:50])
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    assert_one_error_line(harness("layers", str(engine), "--onnx", str(model), check=False),
                          f"--onnx {model}: not a readable ONNX model")


def test_layers_warns_when_the_onnx_model_maps_fewer_layers_than_their_names(reference_dir, control_cases_dir):
    unrelated = control_cases_dir / "control-qdq-conv-relu" / "conv-relu.onnx"
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    result = harness("layers", str(engine), "--onnx", str(unrelated))
    alone = sum(bool(layer["onnx_nodes"]) for layer in json.loads(harness("layers", str(engine)).stdout))
    assert alone > 0 and all(not layer["onnx_nodes"] for layer in json.loads(result.stdout))
    assert (f"warning: {engine}: with --onnx {unrelated}, 0 of 37 layer(s) map to a node of that model, fewer than "
            f"the {alone} the layer names give alone") in result.stderr


def _quoted(text: str, depth: int = 1) -> str:
    """``text`` as GitHub quotes it in a reply: "> " before every line, ">" alone on blank ones, once per level."""
    for _ in range(depth):
        text = "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())
    return text + "\n"


@pytest.mark.parametrize("depth", [1, 2], ids=["quote", "quote-of-a-quote"])
def test_layers_reads_a_log_block_quoted_in_a_github_comment(tmp_path, reference_dir, depth):
    """A verbose log's 'Engine Layer Information' block quoted in a reply (blank lines inside it quoted as '>')
    reads as the log itself: the block does not end at the first quoted blank line."""
    log = reference_dir / "trt-logs" / "F36.log"
    lines = log.read_text().splitlines()
    paste = tmp_path / "comment.md"
    paste.write_text(_quoted("\n\n".join(lines), depth))
    expected = json.loads(harness("layers", str(log)).stdout)
    result = harness("layers", str(paste))
    assert json.loads(result.stdout) == expected and len(expected) == 4
    assert "4 layer line(s) read" in result.stderr


@pytest.mark.parametrize(
    "prefix",
    [lambda n: f"{n + 1:>4} | ", lambda n: f"{n + 1}: ", lambda n: "[11/24/2026-10:00:00] [I] ",
     lambda n: f"2026-11-24T10:00:{n % 60:02d}.1234567Z ", lambda n: "> "],
    ids=["line-numbers", "line-numbers-colon", "trtexec-timestamp-severity", "ci-timestamp", "quote"],
)
def test_layers_reads_inspector_json_whatever_prefix_every_line_carries(tmp_path, reference_dir, prefix):
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    paste = tmp_path / "paste.txt"
    paste.write_text("\n".join(prefix(n) + line for n, line in enumerate(engine.read_text().splitlines())))
    expected = json.loads(harness("layers", str(engine)).stdout)
    result = harness("layers", str(paste))
    assert json.loads(result.stdout) == expected and len(expected) == 37
    assert "37 layer(s) read from engine inspector JSON" in result.stderr


def test_layers_reads_inspector_json_printed_inside_a_quoted_trtexec_log(tmp_path, reference_dir):
    """trtexec --dumpLayerInfo prints the JSON among other log lines: read from its {"Layers": on, to its end."""
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    log = ["[11/24/2026-10:00:00] [I] Engine built in 41.2 sec.", "[11/24/2026-10:00:00] [I] Layer Information:"]
    log += ["[11/24/2026-10:00:00] [I] " + line for line in engine.read_text().splitlines()]
    log += ["[11/24/2026-10:00:01] [I] Starting inference", "&&&& PASSED TensorRT.trtexec [TensorRT v100300]"]
    paste = tmp_path / "comment.md"
    paste.write_text(_quoted("\n".join(log)))
    assert json.loads(harness("layers", str(paste)).stdout) == json.loads(harness("layers", str(engine)).stdout)
