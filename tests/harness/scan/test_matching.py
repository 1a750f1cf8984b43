"""Finding the library's patterns in real models: the corpus of tests/models, each with known matches."""
from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs
import pytest

import cases  # noqa: F401  (registers the library)
from cases.model import Match, Variant
from harness.scan.loading import load_model
from harness.scan.matching import find_patterns
from tests.models.fixtures import CORPUS

S_CASES = ("s1-conv-silu", "s2-instancenorm", "s3-depthwise-qdq", "s4-bn-mish", "s5-qdq-resnet-block")


def s_matches(path) -> dict[str, list[tuple[str, str]]]:
    """Case id -> [(anchor, variant)] of the S cases found in the model at ``path`` (other cases are ignored: the
    library grows while these tests stand)."""
    found = find_patterns(load_model(path).graph)
    assert found.problems == []
    out: dict[str, list[tuple[str, str]]] = {}
    for finding in found.findings:
        if finding.case.id in S_CASES:
            out.setdefault(finding.case.id, []).extend((o.anchor, finding.variant.name) for o in finding.occurrences)
    return {case: sorted(pairs) for case, pairs in out.items()}


@pytest.mark.parametrize("name", CORPUS)
def test_the_corpus_models_hold_exactly_their_known_patterns(name, model_files):
    expected = {case: sorted(pairs) for case, pairs in CORPUS[name][1].items()}
    assert s_matches(model_files[name]) == expected


def test_matches_name_the_users_own_nodes(model_files):
    found = find_patterns(load_model(model_files["backbone-silu-qdq"]).graph)
    block = next(f for f in found.findings if f.label == "s5-qdq-resnet-block/downsample-shortcut")
    (occurrence,) = block.occurrences
    assert occurrence.anchor == "/backbone/layer2/layer2.0/Add"
    assert "/backbone/layer2/layer2.0/downsample/downsample.0/Conv" in occurrence.nodes
    assert "/backbone/layer2/layer2.0/relu_1/Relu" in occurrence.nodes


def test_occurrences_of_one_form_are_one_finding(model_files):
    found = find_patterns(load_model(model_files["backbone-silu-qdq"]).graph)
    identity = next(f for f in found.findings if f.label == "s5-qdq-resnet-block/identity-shortcut-residual-quantizer")
    assert [o.anchor for o in identity.occurrences] == [f"/backbone/layer1/layer1.{i}/Add" for i in range(2)]


class _Probe:
    """A case-like object for the scanner alone (a real Case subclass would join the library for every test)."""

    mode = "implicit-int8"
    variants = (Variant("form", "failing", ""),)
    whole_model = False

    def __init__(self, case_id, find):
        self.id, self._find = case_id, find

    def find(self, graph):
        return self._find(graph)

    def mode_of(self, variant):
        return self.mode


def test_a_failing_matcher_is_reported_and_the_other_cases_still_searched(model_files):
    graph = load_model(model_files["backbone-silu"]).graph
    broken = _Probe("zz-broken", lambda graph: 1 / 0)
    from cases.s1_conv_silu import ConvSilu

    found = find_patterns(graph, [broken, ConvSilu])
    assert [f.case.id for f in found.findings] == ["s1-conv-silu"] * 3
    assert found.problems == ["case zz-broken: its matcher failed (ZeroDivisionError: division by zero); its "
                              "pattern was not searched"]


def test_a_matcher_naming_unknown_nodes_or_variants_is_reported(model_files):
    graph = load_model(model_files["backbone-silu"]).graph
    ghost = _Probe("zz-ghost", lambda graph: [Match("zz-ghost", ("/no/such/Node",))])
    wrong = _Probe("zz-wrong", lambda graph: [Match("zz-wrong", ("/backbone/stem/conv/Conv",), variant="nope")])
    found = find_patterns(graph, [ghost, wrong])
    assert found.findings == []
    assert "named nodes the model does not have: ['/no/such/Node']" in found.problems[0]
    assert "named variant 'nope', which the case does not declare" in found.problems[1]


def test_unnamed_nodes_are_matched_under_the_name_tensorrt_gives_them(tmp_path):
    """onnx-tensorrt calls an unnamed node node_of_<first output>, as the S3 log shows."""
    from cases.s3_depthwise_qdq import REPORTED, DepthwiseQdq

    variant = next(v for v in DepthwiseQdq.variants if v.params == REPORTED)
    model = gs.export_onnx(DepthwiseQdq.build(variant).graph)
    for node in model.graph.node:
        node.name = ""
    onnx.save(model, tmp_path / "unnamed.onnx")
    loaded = load_model(tmp_path / "unnamed.onnx")
    (finding,) = find_patterns(loaded.graph).findings
    assert finding.occurrences[0].anchor == "node_of_output"
    assert any("had no name" in note for note in loaded.notes)
