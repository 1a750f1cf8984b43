"""P15: an FP8 or FP4 builder flag on a model without Q/DQ is accepted and builds an FP32 engine without a word; on
TensorRT 11 (no precision flags) an FP16 request on an FP32 graph builds FP32 the same way.

Upstream:

* https://github.com/NVIDIA/TensorRT/issues/4590 (open): TensorRT 10.13.3.9, CUDA 13.0, Jetson Thor (SM 11.0), Python
  API, an ONNX GPT-2 without Q/DQ. ``BuilderFlag.FP8`` / ``BuilderFlag.FP4`` are accepted and the engine is FP32
  (larger file, ``DataType.FLOAT`` outputs, FP32 weights); no error or warning. The report gives no workaround.
  FP8 and FP4 in TensorRT come from explicit quantization (failure-patterns.md, P15's fix): the workaround variant
  puts FP8 Q/DQ on the convs.
* https://github.com/roboflow/rf-detr/issues/1453 and https://github.com/roboflow/rf-detr/pull/1454: TensorRT 11 has
  no ``BuilderFlag.FP16`` (strongly typed only); RF-DETR's ``build_engine(fp16=True)`` built an FP32 engine with one
  warning on 11.2.1.2 (NVIDIA L4, SM 8.9: 0.00 % Half) and 11.3.0.99; the fix casts the ONNX graph to FP16 before the
  build, keeping FP32 graph inputs and outputs (RFDETRNano: 111.75 MB FP32 engine, 59.82 MB FP16).

Graph: a CNN without Q/DQ, input (1, 16, 32, 32) -> Conv 3x3 16 -> 32 -> Relu -> Conv 3x3 32 -> 32 (torch.onnx names).
Every conv is asked for the flag's precision (``expected_precision``): a cell whose engine runs them wider has lost
precision without a word, which is the pattern. The GPT-2 of #4590 is a MatMul network; the flag's effect does not
depend on the layer type (TensorRT takes FP8/FP4 only from Q/DQ), so the case keeps the CNN of this library.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases._backend_notes import ORT_DROPS_RELU_BEFORE_FP8_Q
from cases.model import Built, Case, Claim, Knobs, Match, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4590"
# TensorRT 11 without the precision builder flags, as Python meets it: "BuilderFlag has no attribute FP16".
FLAG_REMOVED_FIX = "https://github.com/ultralytics/ultralytics/pull/24735"
TRT11_ISSUE = "https://github.com/roboflow/rf-detr/issues/1453"
TRT11_FIX = "https://github.com/roboflow/rf-detr/pull/1454"

CHANNELS_IN, CHANNELS, SIZE = 16, 32, 32
CONVS = ("/features/conv1/Conv", "/features/conv2/Conv")
FLOAT16 = 10  # onnx.TensorProto.FLOAT16
FLOAT = 1  # onnx.TensorProto.FLOAT

_THOR = ("TensorRT 10.13.3.9, CUDA 13.0, Jetson Thor (SM 11.0), Python API on a model without Q/DQ: {flag} accepted, "
         "the engine was FP32 (DataType.FLOAT outputs, FP32 weights, larger file); no error, no warning.")
_RFDETR_FLAG = ("RF-DETR build_engine(fp16=True) on TensorRT 11.2.1.2 (NVIDIA L4, SM 8.9; an RTX 3060, SM 8.6, the same) "
                "and 11.3.0.99: TensorRT 11 has no BuilderFlag.FP16, RF-DETR built an FP32 engine with one warning "
                "(0.00 % Half layers).")
_RFDETR_CAST = ("RF-DETR's fix on TensorRT 11.3.0.99 (RTX 3060): the ONNX graph cast to FP16 before the build, FP32 "
                "inputs and outputs kept, builds an FP16 engine (59.82 MB against 111.75 MB FP32).")
# The RF-DETR claims name no GPU architecture: the report found the same on an L4 (SM 8.9) and an RTX 3060 (SM 8.6),
# and TensorRT 11 has no FP16 builder flag on any GPU. The engine built, in FP32 where FP16 was asked: a precision
# fallback, as this harness's records call it, not a build the version cannot make.
THOR_FP8 = Claim(target="trt1013-thor", outcome="fallback", source=ISSUE, strength="issue-thread", architecture="11.0",
                 note=_THOR.format(flag="BuilderFlag.FP8"), conditions=Conditions(support="one-report"))
THOR_FP4 = Claim(target="trt1013-thor", outcome="fallback", source=ISSUE, strength="issue-thread", architecture="11.0",
                 note=_THOR.format(flag="BuilderFlag.FP4"), conditions=Conditions(support="one-report"))
TRT11_FP16_FLAG = Claim(target="trt11-x86", outcome="fallback", source=TRT11_ISSUE, strength="issue-thread",
                        note=_RFDETR_FLAG, conditions=Conditions(support="reproduced"))
TRT11_FP16_GRAPH = Claim(target="trt11-x86", outcome="pass", source=TRT11_FIX, strength="issue-thread",
                         note=_RFDETR_CAST)


class PrecisionFlagWithoutQdq(Case):
    id = "p15-precision-flag-without-qdq"
    title = "FP8/FP4 builder flag (or TensorRT 11's FP16 request) on a graph without Q/DQ builds FP32 silently"
    pattern = "P15"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(  # TensorRT 11's Python module without the precision builder flags (strong typing only)
            id="precision-builder-flag-removed", category="unsupported-api",
            message=(r"type object '[\w.]*BuilderFlag' has no attribute "
                     r"'(?:FP16|BF16|INT8|FP8|INT4|FP4|STRICT_TYPES)'"),
            source=FLAG_REMOVED_FIX,
            example="AttributeError: type object 'tensorrt.BuilderFlag' has no attribute 'FP16'"),
    )
    links = (ISSUE, TRT11_ISSUE, TRT11_FIX, FLAG_REMOVED_FIX)
    mode = "float"
    opset = 19
    # The flag forms have nothing in the graph to find: a scanner cannot see a builder flag.
    unmatchable_forms = ("as-reported", "fp16-flag-trt11")
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=0.05,
        reason=(
            "Compared with the reference evaluation of the graph as built (FP32; the FP8 Q/DQ workaround through its "
            "own Q/DQ; the FP16 graph in FP16): a backend that honours the request computes the same values to FP16 "
            "rounding (|output| < 4, 0.002 per ulp at 4) or, for FP8, the same E4M3 grid the reference uses. Outputs "
            "of two 3x3 convs over 144 and 288 inputs, so accumulation order moves them by a few ulps; 0.05 flags a "
            "wrong computation, while the question of the case, which precision ran, is the precision record's."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no precision builder flags: whether TensorRT honours an FP8/FP4/FP16 request "
        "cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no precision builder flags: a float graph runs FP32 on its CPU EP whatever the cell "
            "asks, and it runs FP8 Q/DQ as quantize-dequantize around FP32 convs. These cells show the graphs are "
            "valid and compute; whether TensorRT honours an FP8/FP4/FP16 request is the TensorRT targets' question. "
            + ORT_DROPS_RELU_BEFORE_FP8_Q
        ),
    }
    remedy = (
        "Ask for FP8/FP4 through Q/DQ nodes (ModelOpt ONNX PTQ) and build strongly typed; a builder flag alone leaves "
        "a graph without Q/DQ in FP32. On TensorRT 11, cast the graph to FP16 (keeping FP32 inputs and outputs) "
        "instead of asking for FP16. Check the engine's layer precisions (inspector) after every build."
    )
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="Conv -> Relu -> Conv without Q/DQ, BuilderFlag.FP8 set, no calibrator.",
            params={"form": "float", "asked": "fp8"},
            knobs=Knobs(fp8=True),
            claims=(THOR_FP8,),
        ),
        Variant(
            name="fp4-flag",
            role="sweep",
            description="As reported with BuilderFlag.FP4 in place of FP8.",
            params={"form": "float", "asked": "fp4"},
            knobs=Knobs(fp4=True),
            claims=(THOR_FP4,),
            varies="as-reported",
            inherits=True,
        ),
        Variant(
            name="fp16-flag-trt11",
            role="failing",
            description="The same FP32 graph with FP16 asked for (the fp16 knob): TensorRT 11 has no BuilderFlag.FP16, "
            "so a tool that skips the missing flag builds FP32.",
            params={"form": "float", "asked": "fp16"},
            knobs=Knobs(fp16=True),
            claims=(TRT11_FP16_FLAG,),
        ),
        Variant(
            name="explicit-fp8-qdq",
            needs=("fp8-qdq",),
            role="workaround",
            description="FP8 E4M3 Q/DQ on each conv's input (per tensor) and weight (per channel), strongly typed: FP8 "
            "asked for through the graph.",
            params={"form": "fp8-qdq", "asked": "fp8"},
            knobs=Knobs(strongly_typed=True),
            mode="explicit-qdq",
            varies="as-reported",
        ),
        Variant(
            name="fp16-graph",
            role="workaround",
            description="The graph cast to FP16 (weights FP16, a Cast after the FP32 input and before the FP32 "
            "output), strongly typed: RF-DETR's fix for TensorRT 11.",
            params={"form": "fp16-graph", "asked": "fp16"},
            knobs=Knobs(strongly_typed=True),
            claims=(TRT11_FP16_GRAPH,),
            varies="fp16-flag-trt11",
        ),
        Variant(
            name="partly-fp8",
            needs=("fp8-qdq",),
            role="sweep",
            description="FP8 Q/DQ on the first conv only, BuilderFlag.FP8 set (weakly typed): the flag asks for FP8 in "
            "the second conv too, which has no Q/DQ.",
            params={"form": "partly-fp8", "asked": "fp8"},
            knobs=Knobs(fp8=True),
            mode="explicit-qdq",
            varies="as-reported",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        form, asked = variant.params["form"], variant.params["asked"]
        graph = gs.Graph(name=PrecisionFlagWithoutQdq.id, opset=PrecisionFlagWithoutQdq.opset)
        x = g.graph_input("input", (1, CHANNELS_IN, SIZE, SIZE))
        graph.inputs.append(x)
        half = form == "fp16-graph"
        if half:
            x = g.torch_node(graph, "Cast", "/features/input", [x], {"to": FLOAT16})
        y = _conv(graph, x, "conv1", CHANNELS_IN, quantize=form in ("fp8-qdq", "partly-fp8"), half=half)
        y = g.torch_node(graph, "Relu", "/features/relu", [y])
        y = _conv(graph, y, "conv2", CHANNELS, quantize=form == "fp8-qdq", half=half)
        if half:
            y = g.torch_node(graph, "Cast", "/features/output", [y], {"to": FLOAT})
        g.mark_output(graph, y, (1, CHANNELS, SIZE, SIZE))
        return Built(graph, expected_precision=dict.fromkeys(CONVS, asked))

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Convs, MatMuls and Gemms without Q/DQ in a network that has FP8 Q/DQ elsewhere: an FP8 (or FP4) request
        reaches only the quantized layers, the others run wider without a word. A graph without any Q/DQ gives no
        match: the builder flag that makes it this pattern is not in the graph."""
        if "fp8" not in m.dequantized_precisions(graph):
            return []
        found = []
        for layer in m.nodes_of(graph, "Conv", "MatMul", "Gemm"):
            weight = layer.inputs[1] if len(layer.inputs) > 1 else None
            if m.dequantized(layer.inputs[0]) or weight is None or m.dequantized(weight):
                continue
            found.append(Match(
                case=cls.id, nodes=(layer.name,), variant="partly-fp8",
                note=f"{layer.op} {layer.name} has no Q/DQ in a network with FP8 Q/DQ: an FP8 or FP4 builder flag does "
                     "not make it FP8, TensorRT 10.13 built such layers in FP32 without a warning.",
            ))
        return found


def _conv(graph: gs.Graph, x, name: str, channels_in: int, quantize: bool, half: bool) -> gs.Variable:
    """A 3x3 conv (pad 1) to CHANNELS; FP8 Q/DQ on its input and per-channel weight when ``quantize``; FP16 weights
    in the FP16 graph."""
    scope = f"/features/{name}"
    if quantize:
        return g.quantized_conv(graph, x, scope, f"features.{name}.weight", channels_in, CHANNELS, "fp8")
    weight = g.conv_weight(f"features.{name}.weight", (CHANNELS, channels_in, 3, 3))
    if half:
        weight = gs.Constant(weight.name, weight.values.astype(np.float16))
    return g.torch_node(graph, "Conv", scope, [x, weight], g.conv_attrs(3, pad=1))
