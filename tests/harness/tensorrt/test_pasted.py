"""What a paste adds is removed before TensorRT output is read: every fragment of the pasted-fragment corpus
(reference/pasted-fragments), pasted once more the ways users paste (CRLF, colour codes, a GitHub quote, a nested or
HTML-escaped quote, a markdown fence, elisions, CI timestamps), classifies and reads as it did."""
import json

import pytest

from harness.diagnosis.identify import identify
from cases import library_signatures
from harness.tensorrt import classify
from harness.tensorrt.layers import read_layers_file, read_log_layers
from harness.tensorrt.pasted import unpasted
from tests.conftest import REPO
from tests.harness.tensorrt.repastes import CUT_PASTES, REPASTES, lines_of


def classify_log(text):
    return classify.classify_log(text, library_signatures())


def not_a_log(text):
    return classify.not_a_log(text, library_signatures())


CORPUS = REPO / "reference" / "pasted-fragments"
LABELS = json.loads((CORPUS / "labels.json").read_text(encoding="utf-8"))


PASTES = REPASTES
# The output as a CI runner prints it, a timestamp before every line. It makes each line one of its own: wrapped lines
# stop being one message.
CI_TIMESTAMPS = lines_of(lambda line: f"2026-11-24T10:00:00.1234567Z {line}")


def classification(text):
    result = classify_log(text).to_dict()
    result["warnings"] = {kind: count for kind, count in result["warnings"].items() if count}
    return result


@pytest.mark.parametrize("paste", PASTES)
@pytest.mark.parametrize("name", sorted(LABELS))
def test_a_fragment_pasted_again_classifies_as_it_did(name, paste):
    text = (CORPUS / f"{name}.txt").read_text(encoding="utf-8")
    assert classification(PASTES[paste](text)) == classification(text)


@pytest.mark.parametrize("name", [name for name, label in sorted(LABELS.items())
                                  if "wrapped" not in label["pasted_as"]])
def test_a_ci_timestamp_before_every_line_changes_nothing_either(name):
    text = (CORPUS / f"{name}.txt").read_text(encoding="utf-8")
    assert classification(CI_TIMESTAMPS(unpasted(text))) == classification(text)


@pytest.mark.parametrize("paste", PASTES)
@pytest.mark.parametrize("name", sorted(name for name, label in LABELS.items() if label["kind"] == "engine-layers"))
def test_a_layer_list_pasted_again_reads_the_same_layers(tmp_path, name, paste):
    source = CORPUS / f"{name}.txt"
    pasted = tmp_path / "paste.txt"
    pasted.write_text(PASTES[paste](source.read_text(encoding="utf-8")), encoding="utf-8", newline="")
    assert read_layers_file(pasted).layers == read_layers_file(source).layers


def test_unpasted_removes_what_a_paste_adds_and_keeps_every_line():
    text = "```log\r\n&gt; &gt; \x1b[31m[E]\x1b[0m Error[10]: x\r\n>\r\n`[W] y`\r\n```"
    assert unpasted(text).split("\n") == ["", "[E] Error[10]: x", "", "[W] y", ""]


def test_a_tagged_message_wrapped_mid_name_names_its_known_failure_once_joined():
    # the message of https://github.com/NVIDIA/TensorRT/issues/3640, wrapped by a terminal inside the node's name
    text = ("[01/29/2024-20:59:46] [TRT] [E] 10: Could not find any implementation for node /model.0/conv/Conv + "
            "PWN(PWN(/model.0/act/\nSigmoid), /model.0/act/Mul).\n")
    result = classify_log(text)
    assert (result.category, result.known_failure.id, result.failure_shown) == (
        "no-implementation", "conv-silu-no-implementation", True)
    assert classify_log(text.replace("\n", "", 1)).known_failure == result.known_failure


def test_a_line_with_its_own_decoration_or_traceback_never_continues_a_message():
    skip = ("[E] Error[9]: Error Code: 9: Skipping tactic 0x0 due to exception Could not infer output types for "
            "operation:")
    assert classify_log(f"{skip}\n[I] 291: dequantize: x\n").known_failure is None
    assert classify_log(f"{skip}\nTraceback (most recent call last):\n").category is None


def test_a_wrapped_layer_line_is_joined_until_it_ends_with_a_tensor_and_never_across_a_logger_prefix():
    wrapped = ("Layer(CaskConvolution): conv1, Tactic: 0x1, in[Float(-\n2,3,8,8)] -> \nout[Half(-2,3,8,8)]\n"
               "Layer(Reformat): r, Tactic: 0x0, out[Half(-2,3,8,8)] -> \n[V] [TRT] unrelated line\n")
    read = read_log_layers(wrapped)
    assert [(layer.name, layer.precision) for layer in read.layers] == [("conv1", "fp32"), ("r", "fp16")]
    assert read.lines_skipped == 1  # the logger's line; the continuation lines were read as part of their layer


@pytest.mark.parametrize("paste", [*REPASTES, *CUT_PASTES])
@pytest.mark.parametrize("name", sorted(LABELS))
def test_the_readers_agree_on_a_fragment_pasted_again(tmp_path, name, paste):
    """classify's gate, diagnose's identification and the layer reader on the same paste: none refuses as not
    TensorRT output what another reads. A paste that keeps every line is read; one cut mid-line may have lost all
    that told it apart (a one-line fragment cut in half), but then every reader refuses it alike."""
    text = {**REPASTES, **CUT_PASTES}[paste]((CORPUS / f"{name}.txt").read_text(encoding="utf-8"))
    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8", newline="")
    accepted = not_a_log(text) is None
    identified = identify(path)
    try:
        read_layers_file(path)
        layers_read = True
    except ValueError:
        layers_read = False
    assert accepted == (identified.kind is not None), identified.problem
    assert accepted or not layers_read
    assert accepted or paste in CUT_PASTES, f"{name} pasted {paste} is refused: {not_a_log(text)}"
