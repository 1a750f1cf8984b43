"""P9: the YOLO26-style end-to-end head (TopK, GatherElements, TopK) under implicit INT8, its raw-head workaround and
sweeps, and the matcher that finds a TopK in a user's detection head."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p9_topk_head import (
    ANCHORS,
    BACKGROUND_LOGIT,
    BOX_CONV,
    CHOSEN_ANCHORS,
    CHOSEN_LOGITS,
    CLASS_CONV,
    CLASSES,
    MAX_DET,
    STEM_CONV,
    TopkHead,
)
from cases.p10_implicit_lifecycle import ImplicitLifecycle

HEAD = ["Conv", "Sigmoid", "Mul", "Conv", "Conv", "Reshape", "Reshape", "Add", "Transpose", "Sigmoid", "Transpose"]
FIRST_TOPK = ["ReduceMax", "TopK", "Unsqueeze", "Unsqueeze", "Expand", "Expand", "GatherElements", "GatherElements"]
END_TO_END = [*HEAD, *FIRST_TOPK, "Flatten", "TopK", "Div", "Mod", "Unsqueeze", "Unsqueeze", "Cast", "Expand",
              "Unsqueeze", "GatherElements", "Concat"]


variant = TopkHead.variant


def model_of(name) -> onnx.ModelProto:
    return export_model(TopkHead, variant(name))[0]


def graph_of(name) -> gs.Graph:
    return gs.import_onnx(model_of(name))


def node(graph, name):
    return next(n for n in graph.nodes if n.name == name)


def test_declaration_and_claims():
    assert (TopkHead.pattern, TopkHead.mode, TopkHead.opset) == ("P9", "implicit-int8", 17)
    assert "https://github.com/ultralytics/ultralytics/issues/23841" in TopkHead.links
    assert "10.7" in TopkHead.remedy and "end2end=False" in TopkHead.remedy
    assert "onnxruntime" in TopkHead.backend_notes
    claims = {(c.target, c.outcome, c.category, c.strength) for c in variant("as-reported").claims}
    assert claims == {("trt103-orin", "fail", "internal-assert", "issue-thread"),
                      ("trt100-x86", "pass", None, "issue-thread"),
                      ("trt107-orin", "pass", None, "issue-thread")}  # Ultralytics moves JetPack 6 to 10.7 (PR 24368)
    (entropy,) = variant("calibrator-entropy2").claims
    assert (entropy.target, entropy.source) == ("trt103-orin", "https://github.com/NVIDIA/TensorRT/issues/4797")
    # Ultralytics calibrates with MinMax: the reported form and its workaround use it, the sweep changes only that.
    assert [v.knobs.calibrator for v in TopkHead.variants] == ["minmax", "minmax", "minmax", "entropy2"]


@pytest.mark.parametrize("name", [v.name for v in TopkHead.variants])
def test_every_variant_passes_the_full_checker_and_strict_shape_inference(name):
    model = model_of(name)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    assert TopkHead.build(variant(name)).expected_int8 == (STEM_CONV, BOX_CONV, CLASS_CONV)


@pytest.mark.parametrize(("name", "expected"), [
    ("as-reported", END_TO_END),
    ("calibrator-entropy2", END_TO_END),
    ("single-topk", [*HEAD, "ReduceMax", "TopK", "Unsqueeze", "Unsqueeze", "Expand", "GatherElements", "Concat"]),
    ("no-topk", [*HEAD, "Concat"]),
])
def test_exact_op_lists(name, expected):
    assert [n.op_type for n in model_of(name).graph.node] == expected


def test_two_topks_rank_anchors_then_anchor_class_pairs_as_the_log_names_them():
    graph = graph_of("as-reported")
    first, second = node(graph, "/model.23/TopK"), node(graph, "/model.23/TopK_1")
    assert first.inputs[0].inputs[0].op == "ReduceMax"
    assert first.inputs[0].inputs[0].inputs[0].inputs[0].name == "/model.23/Transpose_1"  # scores per anchor
    assert int(first.inputs[1].values[0]) == MAX_DET and first.attrs["sorted"] == 1
    for unsqueeze in first.outputs[1].outputs:  # the anchor indices gather boxes and class scores
        (expand,) = unsqueeze.outputs[0].outputs
        (gather,) = expand.outputs[0].outputs
        assert (unsqueeze.op, expand.op, gather.op, gather.attrs["axis"]) == ("Unsqueeze", "Expand", "GatherElements", 1)
    assert len(first.outputs[1].outputs) == 2
    assert second.inputs[0].inputs[0].op == "Flatten"
    division, modulo = (c for c in second.outputs[1].outputs)
    assert {division.op, modulo.op} == {"Div", "Mod"}
    assert int(division.inputs[1].values) == CLASSES == int(modulo.inputs[1].values)
    assert [t.shape for t in graph.outputs] == [[1, MAX_DET, 6]]


def test_the_score_offsets_rank_the_chosen_pairs_far_apart_and_above_everything_else():
    prior = node(graph_of("as-reported"), "/model.23/Add").inputs[1].values
    assert prior.shape == (1, CLASSES, ANCHORS)
    chosen = {(rank % CLASSES, anchor): logit for rank, (anchor, logit) in enumerate(zip(CHOSEN_ANCHORS,
                                                                                          CHOSEN_LOGITS))}
    for (cls, anchor), logit in chosen.items():
        assert prior[0, cls, anchor] == logit
    others = np.ones_like(prior, dtype=bool)
    for cls, anchor in chosen:
        others[0, cls, anchor] = False
    assert np.all(prior[others] == BACKGROUND_LOGIT)
    assert min(np.diff(sorted(CHOSEN_LOGITS))) >= 0.5  # a rank gap far above an INT8 step of the logits


def test_the_reference_output_keeps_the_chosen_pairs_in_rank_order(tmp_path):
    from cases.generate import generate

    generate(tmp_path, [TopkHead])
    with np.load(tmp_path / TopkHead.id / "as-reported.npz") as data:
        (output,) = [data[k] for k in data.files if k.startswith("reference/")]
    labels = output[0, :, 5]
    assert labels.tolist() == [rank % CLASSES for rank in range(MAX_DET)]
    assert np.all(np.diff(output[0, :, 4]) < 0)  # scores strictly descending


def test_the_matcher_finds_the_first_topk_with_the_ones_after_it():
    (match,) = TopkHead.find(graph_of("as-reported"))
    assert (match.variant, match.nodes) == ("as-reported", ("/model.23/TopK", "/model.23/TopK_1", CLASS_CONV))
    (single,) = TopkHead.find(graph_of("single-topk"))
    assert (single.variant, single.nodes) == ("single-topk", ("/model.23/TopK", CLASS_CONV))


def test_the_matcher_finds_nothing_without_topk_or_without_a_conv_before_it():
    assert TopkHead.find(graph_of("no-topk")) == []
    assert TopkHead.find(gs.import_onnx(export_model(ImplicitLifecycle, ImplicitLifecycle.variants[0])[0])) == []
    graph = gs.Graph(opset=17)
    x, k = gs.Variable("x", np.float32, (1, 10)), gs.Constant("k", np.array([3], dtype=np.int64))
    values, indices = gs.Variable("v", np.float32, (1, 3)), gs.Variable("i", np.int64, (1, 3))
    graph.nodes.append(gs.Node("TopK", name="plain", inputs=[x, k], outputs=[values, indices]))
    graph.inputs, graph.outputs = [x], [values, indices]
    assert TopkHead.find(graph) == []  # a TopK of raw inputs is no detection head
