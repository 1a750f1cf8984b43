"""P13: implicit INT8 calibration of a network with a dynamic batch: which profile calibrates, at which shape.

With dynamic input shapes TensorRT calibrates with one optimization profile, the *calibration profile*
(``IBuilderConfig.set_calibration_profile``), and only at that profile's kOPT shape; calibration data must have that
shape. Without a calibration profile the first optimization profile is used, with the warning "Calibration Profile is
not defined. Calibrating with Profile 0". Upstream facts:

* https://github.com/NVIDIA/TensorRT/issues/2561 (TensorRT 8.4): profile (1, 4, 8) for the batch, no calibration
  profile, calibrator batches of 128: "what is the true batch size of the calibrator?" A maintainer answers with the
  developer guide (https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html#int8-calib-dynamic-shapes):
  calibration runs at kOPT of the calibration profile, and the calibration input must match it.
* https://github.com/NVIDIA/TensorRT/issues/4481: a profile of batch 1 (min = opt = max) and calibrator batches of
  32 build without an error, to the reporter's surprise.
* https://github.com/NVIDIA/TensorRT/issues/1528 (Jetson): with a calibration profile of 1x3x32x32 / 1x3x480x480 /
  1x3x544x960, calibration asserts (``assertRegionTightlyFitsTensor``).
* https://github.com/marcoslucianops/DeepStream-Yolo/issues/603 (DeepStream 7.1, TensorRT 10.3) and
  https://github.com/NVIDIA/TensorRT/issues/4053 print the "Calibrating with Profile 0" warning.

Graph: a dynamic-batch Conv 3x3 + ReLU (``images`` of shape (batch, 3, 16, 16)). The variants differ only in their
profiles, calibration profile and calibration batch size; inference runs at batch 4. The harness records the shape
each calibration batch had and the kOPT shape TensorRT calibrates with, so a cell says how much of the data TensorRT
saw.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cases import _graphs as g
from cases._graphs import gs
from cases.matching import has_qdq
from cases.model import Built, Case, Claim, FixResult, Knobs, Match, NoRewrite, Scope, Tolerance, Variant

BATCH_QUESTION = "https://github.com/NVIDIA/TensorRT/issues/2561"
LARGER_BATCHES = "https://github.com/NVIDIA/TensorRT/issues/4481"
PROFILE_ASSERT = "https://github.com/NVIDIA/TensorRT/issues/1528"
DEEPSTREAM_WARNING = "https://github.com/marcoslucianops/DeepStream-Yolo/issues/603"
PROFILE_0_WARNING = "https://github.com/NVIDIA/TensorRT/issues/4053"
DEVELOPER_GUIDE = "https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html#int8-calib-dynamic-shapes"

CHANNELS_IN, CHANNELS_OUT, SIZE = 3, 16, 16
CALIBRATION_BATCH = 8
INFERENCE_BATCH = 4
INPUT = "images"


def _shape(batch: int) -> tuple[int, int, int, int]:
    return (batch, CHANNELS_IN, SIZE, SIZE)


def _profile(low: int, opt: int, high: int):
    return ((INPUT, _shape(low), _shape(opt), _shape(high)),)


def _params(calibration_batch: int = CALIBRATION_BATCH) -> dict:
    return {"input_shapes": {INPUT: list(_shape(INFERENCE_BATCH))},
            "calibration_shapes": {INPUT: list(_shape(calibration_batch))}}


# The developer guide states how dynamic-shape calibration works without a version bound: every release with
# calibrators (before 11.0), every platform.
_CALIBRATOR_RELEASES = Scope(before="11.0")
_GUIDE = "the developer guide, how every release with calibrators calibrates dynamic shapes"


class DynamicBatchCalibration(Case):
    id = "p13-dynamic-batch-calibration"
    title = "Dynamic-batch Conv + ReLU under implicit INT8: which optimization profile calibrates, at what shape"
    pattern = "P13"
    links = (BATCH_QUESTION, LARGER_BATCHES, PROFILE_ASSERT, DEEPSTREAM_WARNING, PROFILE_0_WARNING, DEVELOPER_GUIDE)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=1.0,
        reason=(
            "INT8 against the FP32 reference: Conv 3 -> 16, 3x3 + ReLU on N(0, 1) inputs, outputs in about [0, 4]. "
            "Calibrating on one sample of each batch instead of all eight still sees 8 images of 768 values each. "
            "ONNX Runtime (which always reads whole batches) gave at most 0.09 off and cosine > 0.9998; 1.0 (a quarter "
            "of the range) flags a wrong result, not a thinner calibration set."
        ),
    )
    variants = (
        Variant(
            name="no-calibration-profile",
            range_claims=(Claim(
                outcome="pass", source=DEVELOPER_GUIDE, strength="documentation", scope=_CALIBRATOR_RELEASES, basis=_GUIDE,
                note="Without a calibration profile TensorRT warns and calibrates with profile 0 at its kOPT shape: the build "
                "succeeds, on a fraction of the data."),),
            role="failing",
            description="One profile, batch 1 / 1 / 8 (min / opt / max), no calibration profile, calibration batches "
            "of 8: TensorRT calibrates with profile 0 at kOPT batch 1, one sample of every batch of 8.",
            params=_params(),
            knobs=Knobs(profiles=(_profile(1, 1, 8),)),
            claims=(Claim(
                target="trt86-x86",
                outcome="pass",
                source=DEVELOPER_GUIDE,
                strength="documentation",
                note=("Without a calibration profile TensorRT warns 'Calibration Profile is not defined. Calibrating "
                      "with Profile 0' and calibrates at that profile's kOPT shape (the guide a maintainer cites in "
                      f"{BATCH_QUESTION}); the build succeeds, on a fraction of the data."),
            ),),
        ),
        Variant(
            name="calibration-profile-set",
            range_claims=(Claim(
                outcome="pass", source=DEVELOPER_GUIDE, strength="documentation", scope=_CALIBRATOR_RELEASES, basis=_GUIDE,
                note="With a calibration profile TensorRT calibrates at its kOPT shape, which matches the batches."),),
            role="workaround",
            varies="no-calibration-profile", inherits=False,
            description="Two profiles, batch 1 / 1 / 8 for inference and 8 / 8 / 8 set as the calibration profile: "
            "TensorRT calibrates on whole batches of 8.",
            params=_params(),
            knobs=Knobs(profiles=(_profile(1, 1, 8), _profile(8, 8, 8)), calibration_profile=1),
        ),
        Variant(
            name="opt-is-calibration-batch",
            role="sweep",
            varies="no-calibration-profile", inherits=False,  # Another profile: the profiles are the pattern's subject
            description="One profile, batch 1 / 8 / 8, no calibration profile: profile 0 calibrates, and its kOPT is "
            "the calibration batch, so the warning is harmless.",
            params=_params(),
            knobs=Knobs(profiles=(_profile(1, 8, 8),)),
        ),
        Variant(
            name="calibration-batch-1",
            role="sweep",
            # Other profiles and calibration batches: they are the pattern's subject
            varies="no-calibration-profile", inherits=False,
            description="Calibration batches of 1 with a 1 / 1 / 1 calibration profile next to the 1 / 4 / 8 "
            "inference profile: what many calibrators do.",
            params=_params(calibration_batch=1),
            knobs=Knobs(profiles=(_profile(1, 4, 8), _profile(1, 1, 1)), calibration_profile=1),
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no optimization or calibration profiles: which profile calibrates cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no optimization or calibration profiles: quantize_static reads every calibration batch "
            "whole, whatever its batch size, and the session takes any batch. The profile knobs do not apply (listed "
            "as not applicable); the cell shows the dynamic-batch graph quantizes and computes."
        ),
    }
    remedy = (
        "Set a calibration profile (IBuilderConfig.set_calibration_profile) whose kOPT shape is the shape of your "
        "calibration batches: without one TensorRT calibrates with profile 0 at its kOPT and reads only that much of "
        "each batch."
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        graph = gs.Graph(name=DynamicBatchCalibration.id, opset=DynamicBatchCalibration.opset)
        images = gs.Variable(INPUT, dtype=np.float32, shape=("batch", CHANNELS_IN, SIZE, SIZE))
        graph.inputs.append(images)
        weight = g.conv_weight("conv.weight", (CHANNELS_OUT, CHANNELS_IN, 3, 3))
        y = g.torch_node(graph, "Conv", "/conv", [images, weight, g.bias("conv.bias", CHANNELS_OUT)],
                         g.conv_attrs(3, pad=1))
        g.mark_output(graph, g.torch_node(graph, "Relu", "/act", [y]), ("batch", CHANNELS_OUT, SIZE, SIZE))
        return Built(graph, expected_int8=("/conv/Conv",))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return None if workaround.knobs.calibration_profile is not None else f"{workaround.name} sets no profile"

    @classmethod
    def fix(cls, graph: Any, match: Match, workaround: Variant) -> FixResult:
        """Nothing in the file: the workaround is a build setting, said in the report."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        return FixResult(build_time="add a second optimization profile whose min = opt = max = your calibration "
                         "batch shape and set it as the calibration profile (IBuilderConfig.set_calibration_profile; "
                         "trtexec --calibProfile) before calibrating; the ONNX file cannot carry it")

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Every graph input whose batch (first) dimension is not fixed, in a model without Q/DQ nodes."""
        if has_qdq(graph):
            return []  # explicit quantization: no calibrator, no calibration profile
        matches = []
        for tensor in graph.inputs:
            shape = getattr(tensor, "shape", None)
            if not shape or (isinstance(shape[0], int) and shape[0] > 0):
                continue
            readers = [node.name for node in tensor.outputs]
            matches.append(Match(
                case=cls.id,
                nodes=tuple(readers),
                variant="no-calibration-profile",
                note=(f"input {tensor.name} has a dynamic batch ({shape[0]!r}) and the model has no Q/DQ: a calibrator "
                      "calibrates with one profile at its kOPT shape; set the calibration profile to your batches"),
            ))
        return matches
