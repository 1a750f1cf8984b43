"""P9: a YOLO-style end-to-end head with TopK under implicit INT8: ``checkSanity.cpp::checkLinks`` on TensorRT 10.3.

Upstream facts:

* https://github.com/ultralytics/ultralytics/issues/23841: exporting YOLO26n to an INT8 engine in the
  ``ultralytics/ultralytics:latest-jetson-jetpack6`` container (TensorRT 10.3.0, Jetson Orin) fails while TensorRT
  optimizes the calibration graph: ``[checkSanity.cpp::checkLinks::218] Error Code 2: Internal Error (Assertion
  item.second != nullptr failed. region should have been removed from Graph::regions)``.
* https://github.com/NVIDIA/TensorRT/issues/4797: the same assertion with TensorRT 10.3.0 on Jetson Orin (JetPack
  R36.5) for another opset-19 model, with every calibrator (EntropyCalibrator2, Entropy, MinMax, trtexec); FP16 builds.
* https://github.com/marcoslucianops/DeepStream-Yolo/issues/675: the DeepStream form of the same line (TensorRT 10.3,
  Orin Nano, DeepStream 7.1).
* https://github.com/ultralytics/ultralytics/pull/24368: Ultralytics moves JetPack 6 from TensorRT 10.3 to 10.7 to
  fix the YOLO26 INT8 build; a maintainer's comment there: on x86 every TensorRT 10.x except 10.2.0 builds the YOLO26
  end-to-end head in INT8 with the TopK ops falling back to FP (its log writes ``TRT-100700-MinMaxCalibration``).
* https://github.com/ultralytics/ultralytics/pull/20345: Ultralytics calibrates with MinMax since 8.3.x, so the
  reported exports used MINMAX_CALIBRATION.

Graph: the YOLO26 end-to-end (NMS-free) head as Ultralytics' one-to-one post-processing exports it, at one scale:
box and class 1x1 convs, flatten to anchors, sigmoid scores, per-anchor max, ``TopK`` over anchors, ``GatherElements``
of boxes and class scores, ``TopK`` again over the flattened (anchor, class) scores, then ``Div``/``Mod`` to split the
index into anchor and class and one more gather: output ``(1, k, 6)`` = box, score, class. Names follow the log of
PR 24368 (``/model.23/TopK``, ``/model.23/TopK_1``); the stem is the torch.onnx ``/model.0`` Conv + SiLU. Box decoding
(distance to box around anchor points) is left out: it does not touch the TopK path.

One addition of ours: a constant per-anchor logit offset (``/model.23/Add``) ranks k chosen anchors far apart and
every other anchor far below them. Without it, near-equal scores would swap ranks under any INT8 rounding and every
backend's output would differ from the reference by reordered rows, which says nothing about the pattern.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Match, Scope, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure, KnownForm
from harness.judgement.claims import Conditions

ULTRALYTICS_ISSUE = "https://github.com/ultralytics/ultralytics/issues/23841"
TENSORRT_ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4797"
DEEPSTREAM_ISSUE = "https://github.com/marcoslucianops/DeepStream-Yolo/issues/675"
FIX_PR = "https://github.com/ultralytics/ultralytics/pull/24368"
MINMAX_PR = "https://github.com/ultralytics/ultralytics/pull/20345"

SIZE = 14  # 49 anchors: ONNX's reference GatherElements (np.choose) takes fewer than 64 along the axis
STEM_CHANNELS = 16
CLASSES = 4
ANCHORS = (SIZE // 2) ** 2
MAX_DET = 8
HEAD = "/model.23"
STEM_CONV = "/model.0/conv/Conv"
BOX_CONV = f"{HEAD}/cv2.0/cv2.0.2/Conv"
CLASS_CONV = f"{HEAD}/cv3.0/cv3.0.2/Conv"
# The k chosen (anchor, class) pairs and their logit offsets: sigmoid 0.95 down to 0.27, at least 0.05 apart, far
# above the INT8 step of a [-8, 3] tensor (about 0.07 in logits); every other (anchor, class) sits at -8.
CHOSEN_ANCHORS = (5, 17, 26, 38, 47, 30, 11, 42)
CHOSEN_LOGITS = (3.0, 2.2, 1.6, 1.0, 0.5, 0.0, -0.5, -1.0)
BACKGROUND_LOGIT = -8.0
REPORTED = {"head": "end2end"}

ASSERT_CLAIM = Claim(
    target="trt103-orin",
    outcome="fail",
    category="internal-assert",
    source=ULTRALYTICS_ISSUE,
    strength="issue-thread",
    note=(
        "YOLO26n INT8 export in the JetPack 6 container, TensorRT 10.3.0: checkSanity.cpp::checkLinks::218 "
        "'region should have been removed from Graph::regions' while optimizing the calibration graph. Fixed by "
        f"TensorRT 10.7 per {FIX_PR} (no 10.7 target in this matrix). The reporter's model is YOLO26n, not this "
        "minimal head: what in the graph trips the assertion is not known."
    ),
    conditions=Conditions(support="reproduced"),
)
X86_TOPK_FALLBACK_CLAIM = Claim(
    target="trt100-x86",
    outcome="pass",
    source=FIX_PR,
    strength="issue-thread",
    note=(
        "A maintainer: on x86 every TensorRT 10.x except 10.2.0 builds YOLO26's end-to-end head in INT8, the TopK ops "
        "falling back to FP ('Missing scale and zero-point' for the TopK outputs) with negligible accuracy loss. TopK "
        "has no INT8 type in any onnx-tensorrt operator table, so it is not an expected-INT8 node here; what 'except "
        "10.2.0' means for 10.2 is not stated, so trt102-x86 has no claim."
    ),
)
ALL_CALIBRATORS_CLAIM = Claim(
    target="trt103-orin",
    outcome="fail",
    category="internal-assert",
    source=TENSORRT_ISSUE,
    strength="issue-thread",
    note="TensorRT 10.3.0 on Jetson Orin: the checkLinks assertion with every calibrator type, EntropyCalibrator2 "
    "among them, for a different (opset 19) model; FP16 builds.",
    conditions=Conditions(support="reproduced"),
)


def _score_prior() -> gs.Constant:
    prior = np.full((1, CLASSES, ANCHORS), BACKGROUND_LOGIT, dtype=np.float32)
    for rank, (anchor, logit) in enumerate(zip(CHOSEN_ANCHORS, CHOSEN_LOGITS)):
        prior[0, rank % CLASSES, anchor] = logit
    return gs.Constant(f"{HEAD}/score_prior", prior)


def _int64(name: str, values) -> gs.Constant:
    return gs.Constant(name, np.array(values, dtype=np.int64))


def _gather_rows(graph, table, index, width: int, suffix: str) -> gs.Variable:
    """``table[:, index, :]`` as torch.onnx exports ``gather(dim=1, index.unsqueeze(-1).repeat(1, 1, width))``."""
    rows = g.node(graph, "Unsqueeze", f"{HEAD}/Unsqueeze{suffix}", [index, _int64(f"{HEAD}/axes{suffix}", [-1])],
                  f"{HEAD}/Unsqueeze{suffix}_output_0")
    shape = _int64(f"{HEAD}/expand_shape{suffix}", [1, MAX_DET, width])
    rows = g.node(graph, "Expand", f"{HEAD}/Expand{suffix}", [rows, shape], f"{HEAD}/Expand{suffix}_output_0")
    return g.node(graph, "GatherElements", f"{HEAD}/GatherElements{suffix}", [table, rows],
                  f"{HEAD}/GatherElements{suffix}_output_0", {"axis": 1})


def _topk(graph, x, suffix: str) -> tuple[gs.Variable, gs.Variable]:
    values, indices = gs.Variable(f"{HEAD}/TopK{suffix}_output_0"), gs.Variable(f"{HEAD}/TopK{suffix}_output_1")
    k = _int64(f"{HEAD}/k{suffix}", [MAX_DET])
    graph.nodes.append(gs.Node("TopK", name=f"{HEAD}/TopK{suffix}", inputs=[x, k], outputs=[values, indices],
                               attrs={"axis": -1, "largest": 1, "sorted": 1}))
    return values, indices


def _head_convs(graph, images) -> tuple[gs.Variable, gs.Variable]:
    """The /model.0 stem (Conv + SiLU) and the box (cv2) and class (cv3) 1x1 convs of the head."""
    stem_weight = g.conv_weight("model.0.conv.weight", (STEM_CHANNELS, 3, 3, 3))
    attrs = g.conv_attrs(3, stride=2, pad=1)
    x = g.torch_node(graph, "Conv", "/model.0/conv", [images, stem_weight, g.bias("model.0.conv.bias", STEM_CHANNELS)],
                     attrs)
    x = g.torch_node(graph, "Mul", "/model.0/act", [x, g.torch_node(graph, "Sigmoid", "/model.0/act", [x])])
    box_weight = g.conv_weight("model.23.cv2.0.2.weight", (4, STEM_CHANNELS, 1, 1))
    boxes = g.torch_node(graph, "Conv", f"{HEAD}/cv2.0/cv2.0.2",
                         [x, box_weight, g.bias("model.23.cv2.0.2.bias", 4)], g.conv_attrs(1))
    # Class weights a tenth of the usual spread: the data moves class logits by about +-0.1, less than the offsets.
    class_values = g.rng_for("model.23.cv3.0.2.weight").normal(0.0, 0.1 / np.sqrt(STEM_CHANNELS),
                                                                  size=(CLASSES, STEM_CHANNELS, 1, 1))
    class_weight = gs.Constant("model.23.cv3.0.2.weight", class_values.astype(np.float32))
    logits = g.torch_node(graph, "Conv", f"{HEAD}/cv3.0/cv3.0.2",
                          [x, class_weight, g.bias("model.23.cv3.0.2.bias", CLASSES)], g.conv_attrs(1))
    return boxes, logits


class TopkHead(Case):
    id = "p9-topk-head"
    title = "YOLO26-style end-to-end head (TopK, GatherElements, TopK) under implicit INT8 calibration"
    pattern = "P9"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="checklinks-region-not-removed", category="internal-assert",
            message=r"region should have been removed from Graph::regions",
            source="https://github.com/ultralytics/ultralytics/issues/23841",
            example=("[checkSanity.cpp::checkLinks::218] Error Code 2: Internal Error (Assertion item.second != nullptr failed. "
                     "region should have been removed from Graph::regions)")),
        KnownForm(
            id="topk-output-missing-scale", kind="missing-scale",
            form=r"(?:Missing scale and zero-point|Missing dynamic range) for tensor \S*TopK", flags=re.IGNORECASE,
            source="https://github.com/ultralytics/ultralytics/pull/24368",
            note="TopK outputs without INT8 scales: the YOLO head of P9, whose TopK runs in float on 10.x",
            example=("[TRT] [W] Missing scale and zero-point for tensor /model.23/TopK_output_1, expect fall back to non-int8 "
                     "implementation for any layer consuming or producing given tensor")),
    )
    links = (ULTRALYTICS_ISSUE, TENSORRT_ISSUE, DEEPSTREAM_ISSUE, FIX_PR, MINMAX_PR)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=0.5,
        reason=(
            "INT8 against the FP32 reference. The output rows are box regressions (about N(0, 1)), a score in "
            "[0.27, 0.95] and a class index. The score offsets keep the TopK ranks apart, so INT8 rounding moves "
            "values, not rows: ONNX Runtime's quantize_static gave at most 0.04 off and cosine > 0.9996 over the "
            "variants. 0.5 (half a class index) flags a reordered or wrong row; the cosine flags drift."
        ),
    )
    variants = (
        Variant(
            name="as-reported",
            range_claims=(Claim(
                outcome="pass", source=FIX_PR, strength="issue-thread",
                scope=Scope(since="10.0", before="11.0", except_versions=("10.2",), platforms=("x86_64",)),
                basis="an Ultralytics maintainer on every TensorRT 10.x on x86 but 10.2.0",
                note="YOLO26's end-to-end head builds INT8 with the TopK ops falling back to FP ('Missing scale and "
                "zero-point'), which the TopK of this case is not asked to run in INT8."),),
            role="failing",
            description="Stem Conv + SiLU, box and class 1x1 convs, 49 anchors, 4 classes, TopK(8) over anchors, "
            "GatherElements, TopK(8) over (anchor, class), Div/Mod, gather: output (1, 8, 6); MinMax calibrator as "
            "Ultralytics uses.",
            params=REPORTED,
            knobs=Knobs(calibrator="minmax"),
            claims=(ASSERT_CLAIM, X86_TOPK_FALLBACK_CLAIM, Claim(
                target="trt107-orin", outcome="pass", source=FIX_PR, strength="issue-thread",
                note="Ultralytics moves JetPack 6 from TensorRT 10.3 to 10.7 to fix the YOLO26 INT8 build (MinMax "
                "calibrator); the TopK ops fall back to FP as on x86.")),
        ),
        Variant(
            name="no-topk",
            role="workaround",
            varies="as-reported", inherits=False,
            description="The head without its end-to-end post-processing (Ultralytics' end2end=False): boxes and "
            "scores of all 49 anchors, (1, 49, 8), NMS left to the application.",
            params={"head": "raw"},
            knobs=Knobs(calibrator="minmax"),
        ),
        Variant(
            name="single-topk",
            role="sweep",
            varies="as-reported", inherits=False,  # One TopK and one gather fewer: other ops
            description="As reported, up to the first TopK and the box gather only: output (1, 8, 5) = box, score.",
            params={"head": "single-topk"},
            knobs=Knobs(calibrator="minmax"),
        ),
        Variant(
            name="calibrator-entropy2",
            role="sweep",
            varies="as-reported", inherits=True,  # Another calibrator, same graph
            description=f"As reported, calibrated with EntropyCalibrator2 ({TENSORRT_ISSUE} saw the assertion with "
            "every calibrator).",
            params=REPORTED,
            claims=(ALL_CALIBRATORS_CLAIM,),
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime never builds a calibration graph: TensorRT's checkLinks assertion cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no analogue of TensorRT's calibration-graph assertion: its quantize_static calibrates by "
            "running the float model and never builds a calibration graph. The cell shows that the head computes and "
            "that its convs run in INT8 (TopK, like in TensorRT, stays float)."
        ),
    }
    remedy = (
        "On JetPack 6 (TensorRT 10.3) build the INT8 engine with TensorRT 10.7 (Ultralytics PR #24368 moves to it), or "
        "export the head without its TopK post-processing (end2end=False) and run NMS outside, or build FP16."
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        head = variant.params["head"]
        graph = gs.Graph(name=TopkHead.id, opset=TopkHead.opset)
        images = g.graph_input("images", (1, 3, SIZE, SIZE))
        graph.inputs.append(images)
        boxes, logits = _head_convs(graph, images)
        boxes = g.torch_node(graph, "Reshape", HEAD, [boxes, _int64(f"{HEAD}/box_shape", [1, 4, ANCHORS])])
        logits = g.node(graph, "Reshape", f"{HEAD}/Reshape_1", [logits, _int64(f"{HEAD}/cls_shape",
                                                                                [1, CLASSES, ANCHORS])],
                        f"{HEAD}/Reshape_1_output_0")
        logits = g.torch_node(graph, "Add", HEAD, [logits, _score_prior()])
        scores = g.torch_node(graph, "Sigmoid", HEAD, [logits])
        boxes = g.torch_node(graph, "Transpose", HEAD, [boxes], {"perm": [0, 2, 1]})
        scores = g.node(graph, "Transpose", f"{HEAD}/Transpose_1", [scores], f"{HEAD}/Transpose_1_output_0",
                        {"perm": [0, 2, 1]})
        expected = (STEM_CONV, BOX_CONV, CLASS_CONV)
        if head == "raw":
            out = g.node(graph, "Concat", f"{HEAD}/Concat", [boxes, scores], "output0", {"axis": -1})
            g.mark_output(graph, out, (1, ANCHORS, 4 + CLASSES))
            return Built(graph, expected_int8=expected)
        best = g.torch_node(graph, "ReduceMax", HEAD, [scores], {"axes": [-1], "keepdims": 0})
        best_scores, anchor_index = _topk(graph, best, "")
        top_boxes = _gather_rows(graph, boxes, anchor_index, 4, "")
        if head == "single-topk":
            score = g.node(graph, "Unsqueeze", f"{HEAD}/Unsqueeze_1", [best_scores, _int64(f"{HEAD}/axes_1", [-1])],
                           f"{HEAD}/Unsqueeze_1_output_0")
            out = g.node(graph, "Concat", f"{HEAD}/Concat", [top_boxes, score], "output0", {"axis": -1})
            g.mark_output(graph, out, (1, MAX_DET, 5))
            return Built(graph, expected_int8=expected)
        top_scores = _gather_rows(graph, scores, anchor_index, CLASSES, "_1")
        flat = g.torch_node(graph, "Flatten", HEAD, [top_scores], {"axis": 1})
        score, pair_index = _topk(graph, flat, "_1")
        classes = _int64(f"{HEAD}/num_classes", CLASSES)
        slot = g.torch_node(graph, "Div", HEAD, [pair_index, classes])
        label = g.torch_node(graph, "Mod", HEAD, [pair_index, classes], {"fmod": 0})
        final_boxes = _gather_rows(graph, top_boxes, slot, 4, "_2")
        score = g.node(graph, "Unsqueeze", f"{HEAD}/Unsqueeze_3", [score, _int64(f"{HEAD}/axes_3", [-1])],
                       f"{HEAD}/Unsqueeze_3_output_0")
        label = g.torch_node(graph, "Cast", HEAD, [label], {"to": 1})
        label = g.node(graph, "Unsqueeze", f"{HEAD}/Unsqueeze_4", [label, _int64(f"{HEAD}/axes_4", [-1])],
                       f"{HEAD}/Unsqueeze_4_output_0")
        out = g.node(graph, "Concat", f"{HEAD}/Concat", [final_boxes, score, label], "output0", {"axis": -1})
        g.mark_output(graph, out, (1, MAX_DET, 6))
        # The convs: TopK has no INT8 implementation in any onnx-tensorrt operator table (FP and integer types only).
        return Built(graph, expected_int8=expected)

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return ("no-topk removes the model's TopK post-processing, which changes its outputs; --fix never does "
                "(export without end-to-end NMS)")

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Every TopK fed by a conv (a detection head ranking anchors), with the TopKs downstream of it."""
        matches = []
        for topk in m.nodes_of(graph, "TopK"):
            upstream = m.ancestors(*topk.inputs)
            if any(n.op == "TopK" for n in upstream):
                continue  # part of the match of the TopK before it
            convs = [n for n in upstream if n.op == "Conv"]
            if not convs:
                continue
            later = [n for n in m.descendants(*topk.outputs) if n.op == "TopK"]
            matches.append(Match(
                case=cls.id,
                nodes=(topk.name, *(n.name for n in later), convs[0].name),
                variant="as-reported" if later else "single-topk",
                note=("TopK over conv outputs (a detection head's top-k selection): TensorRT 10.3 asserts in "
                      "checkSanity.cpp::checkLinks while calibrating such heads on Jetson (fixed in 10.7)"),
            ))
        return matches
