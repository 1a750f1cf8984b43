"""`classify`, `layers` and `diagnose` through the real command on every fragment of the pasted-fragment corpus
(reference/pasted-fragments): TensorRT output as users paste it into issue threads (quoted, wrapped, elided, without
tags, layer lines without their header), each fragment labelled in labels.json with its link.

A fragment that carries a known failure's message names its pattern, also when the fragment alone cannot prove that
the build failed (``failure_shown`` False): then diagnose names the pattern and its evidence but applies it to no
target.
"""
import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.commands.test_main import harness

CORPUS = REPO / "reference" / "pasted-fragments"
LABELS = json.loads((CORPUS / "labels.json").read_text(encoding="utf-8"))
FRAGMENTS = sorted(LABELS)
LOGS = [name for name in FRAGMENTS if LABELS[name]["kind"] == "tensorrt-log"]
LAYER_LISTS = [name for name in FRAGMENTS if LABELS[name]["kind"] == "engine-layers"]


def fragment(name: str) -> str:
    return str(CORPUS / f"{name}.txt")


def test_the_corpus_has_sixty_fragments_or_more_each_with_its_link_and_label():
    assert len(FRAGMENTS) >= 60
    assert {path.stem for path in CORPUS.glob("*.txt")} == set(FRAGMENTS)
    for name, label in LABELS.items():
        assert label["source"].startswith("https://"), name
        assert label["where"] and label["pasted_as"], name
        assert label["kind"] in ("tensorrt-log", "engine-layers"), name
        assert (label["pattern"] is None) == (label["known_failure"] is None), name
    assert LAYER_LISTS and [name for name in LOGS if LABELS[name]["pattern"] and not LABELS[name]["failure_shown"]]


@pytest.mark.parametrize("name", FRAGMENTS)
def test_classify_gives_each_fragment_its_label(name):
    label = LABELS[name]
    result = json.loads(harness("classify", fragment(name)).stdout)
    known = result["known_failure"] or {}
    assert (result["category"], known.get("id"), known.get("pattern"), result["failure_shown"]) == (
        label["category"], label["known_failure"], label["pattern"], label["failure_shown"])
    assert {kind: count for kind, count in result["warnings"].items() if count} == label["warnings"]
    if "node" in label:
        assert result["node"] == label["node"]
    if "stage" in label:  # build or run: the labels of 2024-2026 say which the thread concluded
        assert result["stage"] == label["stage"]


@pytest.mark.parametrize("name", LAYER_LISTS)
def test_layers_reads_each_pasted_layer_list(name):
    expected = LABELS[name]["layers"]
    result = harness("layers", fragment(name))
    layers = json.loads(result.stdout)
    compute = [layer["precision"] for layer in layers if not layer["is_boundary"]]
    assert len(layers) == expected["count"]
    assert len(layers) - len(compute) == expected["boundaries"]
    assert {precision: compute.count(precision) for precision in set(compute)} == expected["compute_by_precision"]
    assert f"{fragment(name)}: {expected['count']} layer" in result.stderr


@pytest.mark.parametrize("name", LOGS)
def test_layers_refuses_a_fragment_without_layer_lines_in_one_line_that_says_what_it_reads_as(name):
    label = LABELS[name]
    result = harness("layers", fragment(name), check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {fragment(name)}: ") and result.stderr.count("\n") == 1
    assert "no 'Engine Layer Information' block" in result.stderr
    names_it = label["category"] is not None or label["pattern"] is not None
    assert ("It reads as a TensorRT build log instead" in result.stderr) == names_it
    if label["pattern"]:
        assert f"(pattern {label['pattern']})" in result.stderr


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    """One `diagnose --json` over the whole corpus: file stem -> its entry."""
    out = tmp_path_factory.mktemp("diagnose")
    result = harness("diagnose", *map(fragment, FRAGMENTS), "--json", "--out", str(out), check=False)
    data = json.loads(result.stdout)
    assert result.returncode == data["exit_code"] and data["outcome"] in ("explained", "applies"), result.stderr
    return {Path(entry["path"]).stem: entry for entry in data["files"]}


@pytest.mark.parametrize("name", FRAGMENTS)
def test_diagnose_identifies_each_fragment_and_names_the_pattern_of_its_signature(diagnosed, name):
    label, entry = LABELS[name], diagnosed[name]
    assert (entry["kind"], entry["status"]) == (label["kind"], "read")
    expected = ([label["pattern"]] if label["pattern"] else []) + [pattern for _, pattern in label.get("forms", [])]
    assert [pattern["pattern"] for pattern in entry["patterns"]] == expected
    assert [signature["signature"] for pattern in entry["patterns"] for signature in pattern["signatures"]] == (
        [label["known_failure"]] if label["known_failure"] else []) + [form for form, _ in label.get("forms", [])]
    if label["kind"] == "engine-layers":
        facts = entry["facts"]
        assert (facts["layers"], facts["boundaries"], facts["compute_by_precision"]) == (
            label["layers"]["count"], label["layers"]["boundaries"], label["layers"]["compute_by_precision"])
        assert facts["devices"] == label["layers"].get("devices", {})
        return
    facts = entry["facts"]
    failure = facts["failure"]
    assert (failure["category"], failure["failure_shown"]) == (label["category"], label["failure_shown"])
    if "version" in label:
        assert facts["tensorrt_version"] == label["version"]
    if "dla_fallbacks" in label:
        assert len(facts["dla_fallbacks"]) == label["dla_fallbacks"]
        assert f"{label['dla_fallbacks']} layer(s) left the DLA for the GPU" in entry["text"]
    if "command_flags" in label:
        assert label["command_flags"] in [command["flags"] for command in facts["commands"]]
    if label.get("stage") == "run":
        assert "failed at run time, not at build" in entry["text"] and "The build failed" not in entry["text"]


@pytest.mark.parametrize("name", FRAGMENTS)
def test_classify_layers_and_diagnose_agree_that_a_fragment_is_tensorrt_output(diagnosed, name):
    """One reader of "is this TensorRT output" behind the three commands: classify reads the fragment, diagnose
    identifies it, and layers either reads its layers or says which TensorRT output it is instead."""
    classified = harness("classify", fragment(name), check=False)
    layered = harness("layers", fragment(name), check=False)
    says_tensorrt = layered.returncode == 0 or any(
        words in layered.stderr for words in ("It reads as a TensorRT build log instead",
                                              "It is TensorRT output without layer lines"))
    assert (classified.returncode == 0, diagnosed[name]["status"] == "read", says_tensorrt) == (True, True, True), (
        classified.stderr, layered.stderr)


@pytest.mark.parametrize("name", [n for n in LOGS if LABELS[n]["pattern"] and not LABELS[n]["failure_shown"]])
def test_diagnose_says_plainly_when_a_fragment_carries_a_signature_but_cannot_prove_the_build_failed(diagnosed, name):
    label, entry = LABELS[name], diagnosed[name]
    pattern = entry["patterns"][0]
    assert pattern["signatures"][0]["strength"] == "known-message" and pattern["decisive"] is False
    assert pattern["cases"], "the pattern's cases and their evidence per target are shown all the same"
    assert not any(reason.startswith(f"{label['pattern']} (") for reasons in entry["applies"].values()
                   for reason in reasons)
    assert "cannot prove the build failed" in entry["text"]
    assert f"Pattern {label['pattern']}: the message an upstream report" in entry["text"]


@pytest.mark.parametrize("name", [n for n in LOGS if LABELS[n]["pattern"] and LABELS[n]["failure_shown"]])
def test_diagnose_decides_on_a_known_failure_that_the_fragment_shows(diagnosed, name):
    pattern = diagnosed[name]["patterns"][0]
    assert pattern["signatures"][0]["strength"] == "known-failure" and pattern["decisive"] is True
    assert "The build failed: " in diagnosed[name]["text"]


ODD_PASTES = {
    "fence-only": "```\n```\n",
    "quote-markers-only": "> \n>\n> > \n",
    "elision-only": "...\n[...]\n",
    "colour-codes-only": "\x1b[0;31m\x1b[0m\n",
    "escaped-quote-only": "&gt; &gt;\n&amp;gt;\n",
    "crlf-blank-lines": "\r\n\r\n",
    "lone-timestamp": "2026-11-24T10:00:00.123Z\n[11/24/2026-10:00:00]\n",
    "unbalanced-layer-line": "Layer(Reformat): (((, Tactic: 0x, [Float(-\n)]]\n",
    "lone-surrogate-bytes": "[E] Error[10]: \udcff\n",
}


@pytest.mark.parametrize("command", ["classify", "layers", "diagnose"])
@pytest.mark.parametrize("paste", ODD_PASTES)
def test_odd_pastes_get_an_answer_or_one_error_line_never_a_crash(tmp_path, command, paste):
    path = tmp_path / "paste.txt"
    path.write_bytes(ODD_PASTES[paste].encode("utf-8", errors="surrogateescape"))
    result = harness(command, str(path), *(["--json"] if command == "diagnose" else []), check=False)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    if command == "diagnose":  # a diagnosis of the file, whatever it is (exit 3: damaged, as README's exit codes say)
        assert json.loads(result.stdout)["exit_code"] == result.returncode
    else:
        assert result.returncode in (0, 2), result.stderr
    if result.returncode == 2 and command != "diagnose":
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
