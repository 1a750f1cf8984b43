"""A file's kind comes from its content: every kind under one uninformative name, a damaged file of each kind, and
files of no kind."""
import pytest

from harness.diagnosis.identify import identify
from harness.diagnosis.kinds import DAMAGED, KINDS, NO_KIND, READ
from tests.harness.diagnosis.conftest import NO_KIND as NO_KIND_FILES
from tests.harness.diagnosis.conftest import write


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_is_told_from_its_content_not_its_name(tmp_path, kinds, kind):
    found = identify(write(tmp_path, kinds[kind]))
    assert (found.kind, found.status, found.problem) == (kind, READ, None)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_damaged_file_keeps_its_kind_and_says_what_is_wrong(tmp_path, damaged, kind):
    found = identify(write(tmp_path, damaged[kind]))
    assert (found.kind, found.status) == (kind, DAMAGED)
    assert found.problem


@pytest.mark.parametrize("name", sorted(NO_KIND_FILES))
def test_a_file_of_no_kind_says_why(tmp_path, name):
    found = identify(write(tmp_path, NO_KIND_FILES[name]))
    assert (found.kind, found.status) == (None, NO_KIND)
    assert found.problem


def test_a_damaged_log_keeps_its_lines_without_the_binary_bytes(tmp_path, damaged, kinds):
    found = identify(write(tmp_path, damaged["tensorrt-log"]))
    assert found.text == kinds["tensorrt-log"].decode()
    assert "2048 of its" in found.problem


def test_a_pasted_layer_list_is_engine_layers_and_a_log_with_layer_lines_is_a_log(tmp_path, reference):
    layer_lines = (reference / "trt-logs" / "F36.log").read_text()
    assert identify(write(tmp_path, layer_lines.encode())).kind == "engine-layers"
    failing = "[12/06/2022-19:26:21] [E] Error[10]: Could not find any implementation for node Conv_1.\n"
    found = identify(write(tmp_path, (failing + layer_lines).encode()))
    assert found.kind == "tensorrt-log" and len(found.content.layers) == 4


def test_a_log_line_starting_with_a_bracket_is_no_json(tmp_path, reference):
    """trtexec lines start with "[10/14/2023-...": a log, not damaged JSON."""
    assert identify(write(tmp_path, (reference / "trt-logs" / "F29.log").read_bytes())).kind == "tensorrt-log"


def test_a_polygraphy_command_is_a_command_line(tmp_path):
    found = identify(write(tmp_path, b"python3 -m polygraphy convert model.onnx --int8 --calibration-cache c.cache "
                                     b"-o model.engine\n"))
    assert (found.kind, found.content) == ("command-line", ["python3 -m polygraphy convert model.onnx --int8 "
                                                            "--calibration-cache c.cache -o model.engine"])


def test_a_log_quoted_in_an_issue_comment_is_still_a_log_and_a_quoted_layer_list_still_layers(tmp_path, reference):
    quoted = lambda name: "".join(f"> {line}\n" for line in (reference / "trt-logs" / name).read_text().splitlines())
    log = identify(write(tmp_path, quoted("F04.log").encode(), "comment.md"))
    assert (log.kind, log.status) == ("tensorrt-log", READ)
    layer_list = identify(write(tmp_path, quoted("F36.log").encode(), "comment.md"))
    assert (layer_list.kind, len(layer_list.content.layers)) == ("engine-layers", 4)


def test_a_model_this_onnx_cannot_read_is_an_onnx_model_of_no_readable_kind_not_damaged(tmp_path, backbone_model):
    import onnx

    model = onnx.load(backbone_model)
    model.opset_import[0].version = 99
    path = tmp_path / "future.bin"
    onnx.save(model, path)
    found = identify(path)
    assert (found.kind, found.status) == ("onnx-model", NO_KIND) and "opset 99" in found.problem


@pytest.mark.parametrize("kind", ["tensorrt-log", "engine-layers", "engine-build-metadata", "command-line"])
@pytest.mark.parametrize("paste", ["fenced", "quoted-fence", "html-escaped-quote"])
def test_a_file_of_each_text_kind_pasted_from_an_issue_thread_keeps_its_kind(tmp_path, kinds, kind, paste):
    text = kinds[kind].decode()
    pasted = {"fenced": f"```\n{text}```\n",
              "quoted-fence": "".join(f"> {line}\n" for line in f"```\n{text}```".splitlines()),
              "html-escaped-quote": "".join(f"&gt; {line}\n" for line in text.splitlines())}[paste]
    found = identify(write(tmp_path, pasted.encode(), "comment.md"))
    assert (found.kind, found.status) == (kind, READ), found.problem
