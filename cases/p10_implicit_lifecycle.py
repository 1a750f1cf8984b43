"""P10: implicit quantization (a calibrator build) is deprecated from TensorRT 10.1 and removed in 11.0.

Upstream facts:

* https://github.com/NVIDIA/TensorRT/issues/4095: an IInt8EntropyCalibrator2 build that worked with TensorRT 10.0.1
  warns from 10.1 on that implicit quantization is deprecated and superseded by explicit quantization.
* https://github.com/NVIDIA/TensorRT/issues/4292: a reply: ``setDynamicRange`` (the other implicit-quantization API)
  is deprecated since 10.1, superseded by explicit quantization.
* https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp: the Python binding of
  ``IBuilderConfig.int8_calibrator`` is wrapped in ``utils::deprecateMember(..., "Deprecated in TensorRT 10.1.
  Superseded by explicit quantization.")``, and ``utils::issueDeprecationWarning`` (python/src/utils.cpp) raises a
  Python ``DeprecationWarning`` reading "Use <that text> instead.".
* https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html: TensorRT 11 removed
  weak typing and with it the calibrators and ``BuilderFlag.INT8``; the recorded binding API of 11.4.0.106 has none of
  them (harness.worker.trt.quantization_lifecycle checks that against every recorded version).
* https://github.com/ultralytics/ultralytics/issues/24729: an INT8 export with TensorRT 11.0.0.114 stops at
  ``AttributeError: module 'tensorrt' has no attribute 'IInt8Calibrator'``: what a calibrator build meets on 11.x.

Graph: the plainest thing a calibrator quantizes, Conv 3x3 + ReLU (torch.onnx names), and its migration: the same
graph with Q/DQ nodes, which every version builds (strongly typed on 11).
"""
from __future__ import annotations

from typing import Any

from cases import _graphs as g
from cases._graphs import gs
from cases.matching import has_qdq
from cases.model import Built, Case, Claim, Knobs, Match, Scope, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure

DEPRECATION_ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4095"
DYNAMIC_RANGE_ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4292"
BINDING_SOURCE = "https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp"
MIGRATION_GUIDE = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html"
CALIBRATOR_REMOVED_ISSUE = "https://github.com/ultralytics/ultralytics/issues/24729"
# The calibrator algorithm enum gone with the classes on 11.x, as torch2trt meets it at import.
CALIBRATION_ALGO_TYPE_REMOVED = "https://github.com/Jonah-May-OSS/wyoming-whisper-trt/pull/1020"

CHANNELS_IN, CHANNELS_OUT, SIZE = 16, 32, 16
CONV = "/conv/Conv"


def _deprecated_but_working(target: str, version: str) -> Claim:
    return Claim(
        target=target,
        outcome="pass",
        source=BINDING_SOURCE,
        strength="documentation",
        note=(
            f"TensorRT {version} is past 10.1: setting IBuilderConfig.int8_calibrator raises a DeprecationWarning "
            "('Use Deprecated in TensorRT 10.1. Superseded by explicit quantization. instead.'); the build still "
            f"calibrates. A user's report of the warning: {DEPRECATION_ISSUE}."
        ),
    )


# The documented lifecycle (harness.tensorrt.quantization_lifecycle): a calibrator build works on every
# release before 11.0 (deprecated, still building, from 10.1); 11.0 removed it, which the target's facts say.
_CALIBRATOR_RELEASES = Scope(before="11.0")
_LIFECYCLE = "NVIDIA's binding source: implicit quantization works before 11.0, deprecated (still building) from 10.1"


class ImplicitLifecycle(Case):
    whole_model = True  # any model without Q/DQ has the pattern
    id = "p10-implicit-lifecycle"
    title = "A calibrator build through implicit quantization's lifecycle: supported, deprecated (10.1), removed (11.0)"
    pattern = "P10"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="calibrator-class-removed", category="unsupported-api",
            message=r"module 'tensorrt' has no attribute 'IInt8\w*Calibrator\w*'",
            source="https://github.com/ultralytics/ultralytics/issues/24729",
            example="AttributeError: module 'tensorrt' has no attribute 'IInt8Calibrator'"),
        KnownFailure(  # the calibrator's algorithm enum, removed with it in TensorRT 11
            id="calibration-algo-type-removed", category="unsupported-api",
            message=r"module 'tensorrt' has no attribute 'CalibrationAlgoType'",
            source=CALIBRATION_ALGO_TYPE_REMOVED,
            example="AttributeError: module 'tensorrt' has no attribute 'CalibrationAlgoType'"),
    )
    links = (DEPRECATION_ISSUE, DYNAMIC_RANGE_ISSUE, BINDING_SOURCE, MIGRATION_GUIDE, CALIBRATOR_REMOVED_ISSUE,
             CALIBRATION_ALGO_TYPE_REMOVED)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=1.5,
        reason=(
            "INT8 against the FP32 reference: Conv 16 -> 32, 3x3 + ReLU on N(0, 1) inputs, outputs in about [0, 4]. "
            "The largest errors are tail values clipped by the calibrated range: ONNX Runtime's entropy calibration "
            "gave 1.08 off (cosine 0.9997), MinMax 0.05; 1.5 (over a third of the range) flags wrong results, not "
            "clipping, and the cosine flags drift. The Q/DQ variant is compared with the reference evaluation of its "
            "own Q/DQ graph (0.03 off, rounding steps)."
        ),
    )
    variants = (
        Variant(
            name="calibrator-entropy2",
            range_claims=(Claim(
                outcome="pass", source=BINDING_SOURCE, strength="documentation", scope=_CALIBRATOR_RELEASES, basis=_LIFECYCLE,
                note="A calibrator build works until 10.0 and warns (DeprecationWarning) from 10.1 to 10.x; 11.0 has none."),),
            role="failing",
            description="Conv 16 -> 32, 3x3 + ReLU on a 1x16x16x16 input, BuilderFlag.INT8 with an "
            "IInt8EntropyCalibrator2 (the calibrator of the report): deprecated from 10.1, unsupported on 11.",
            params={"qdq": False},
            claims=(
                Claim(target="trt100-x86", outcome="pass", source=DEPRECATION_ISSUE, strength="issue-thread",
                      note="The reporter's IInt8EntropyCalibrator2 build worked with TensorRT 10.0.1 and began to warn "
                      "with 10.1; platform and GPU are not stated (x86 assumed)."),
                _deprecated_but_working("trt102-x86", "10.2.0"),
                _deprecated_but_working("trt103-orin", "10.3.0"),
            ),
        ),
        Variant(
            name="calibrator-minmax",
            role="sweep",
            # Another calibrator class, same graph: every calibrator shares the lifecycle
            varies="calibrator-entropy2", inherits=True,
            description="As the failing form, with IInt8MinMaxCalibrator: every calibrator class shares the lifecycle.",
            params={"qdq": False},
            knobs=Knobs(calibrator="minmax"),
        ),
        Variant(
            name="explicit-qdq",
            range_claims=(Claim(
                outcome="pass", source=MIGRATION_GUIDE, strength="documentation", scope=Scope(since="8.0"),
                basis="the migration guide: explicit Q/DQ is the quantization every release builds from 8.0 (strongly typed on "
                "11), no version bound",
                note="The migration itself: a Conv + ReLU with Q/DQ nodes and no calibrator."),),
            role="workaround",
            varies="calibrator-entropy2", inherits=False,
            description="The migration: the same Conv + ReLU with Q/DQ nodes (per-tensor input, per-channel weight on "
            "axis 0, quantized conv output), built without a calibrator; strongly typed on 11.",
            params={"qdq": True},
            mode="explicit-qdq",
            opset=13,
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no analogue of TensorRT's implicit-quantization lifecycle: its own calibration is "
        "neither deprecated nor removed, so a model without Q/DQ has nothing to migrate there."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no analogue of TensorRT's implicit-quantization lifecycle: its own calibration "
            "(quantize_static) is neither deprecated nor removed. The cell shows the graph quantizes and computes, "
            "not how a TensorRT version treats a calibrator."
        ),
    }
    remedy = (
        "Migrate to explicit quantization: calibrate offline and write Q/DQ nodes into the ONNX (e.g. TensorRT Model "
        "Optimizer's ONNX PTQ), then build without a calibrator (strongly typed on 11). A calibrator build warns from "
        "10.1 and does not exist in 11.0."
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        graph = gs.Graph(name=ImplicitLifecycle.id, opset=ImplicitLifecycle.opset_of(variant))
        x = g.graph_input("input", (1, CHANNELS_IN, SIZE, SIZE))
        graph.inputs.append(x)
        weight = g.conv_weight("conv.weight", (CHANNELS_OUT, CHANNELS_IN, 3, 3))
        if variant.params["qdq"]:
            x = g.torch_fake_quantize(graph, x, "/conv/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
            weight = g.torch_fake_quantize(graph, weight, "/conv/_weight_quantizer", g.per_channel_scale(weight.values),
                                           axis=0)
        y = g.torch_node(graph, "Conv", "/conv", [x, weight, g.bias("conv.bias", CHANNELS_OUT)], g.conv_attrs(3, pad=1))
        if variant.params["qdq"]:
            y = g.torch_fake_quantize(graph, y, "/act/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        g.mark_output(graph, g.torch_node(graph, "Relu", "/act", [y]), (1, CHANNELS_OUT, SIZE, SIZE))
        return Built(graph, expected_int8=(CONV,))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return ("the workaround is the migration to explicit Q/DQ: use --to-explicit")

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """The whole model, when it has no Q/DQ node: TensorRT can then make it INT8 only through a calibrator."""
        if not graph.nodes or has_qdq(graph):
            return []
        return [Match(
            case=cls.id,
            nodes=(),
            variant="calibrator-entropy2",
            note=("no Q/DQ node: INT8 in TensorRT needs a calibrator (implicit quantization), deprecated from 10.1 "
                  "and removed in 11.0; migrate to Q/DQ"),
        )]
