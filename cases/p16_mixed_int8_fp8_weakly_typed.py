"""P16: a weakly typed network that mixes INT8 and FP8 Q/DQ is rejected on Blackwell (SM 10.0 and later) with Error
Code 9; it must be built strongly typed. And FP8 Q/DQ at all needs a GPU with FP8 (Ada, Hopper, Blackwell): Ampere,
Orin included, rejects it.

Upstream:

* https://github.com/justincdavis/trtutils/pull/163 (merged 2026-05): trtutils adds opt-in strongly typed builds,
  "required on Blackwell (SM 10.0+) where weakly-typed INT8+FP8 mixes are a hard TensorRT error"; on Blackwell its
  weakly typed INT8+FP8 path now fails early pointing at ``strongly_typed=True`` "instead of a raw TRT error code 9",
  and its weakly typed INT8/FP8 precision tests skip there. The TensorRT version is not stated (10.x). A library
  maintainer's account, not an NVIDIA statement.
* https://github.com/NVIDIA/Model-Optimizer/issues/70: TensorRT 10.3.0.26 on an RTX A6000 (Ampere, SM 8.6): ``Error
  Code 9: API Usage Error (Networks with FP8 Q/DQ layers require hardware with FP8 support.)`` for an FP8 Q/DQ model;
  a ModelOpt maintainer: FP8 is available from Ada and Hopper on. Orin (SM 8.7) is Ampere.

Graph (ours): input (1, 16, 32, 32) -> INT8 Q/DQ -> Conv 3x3 16 -> 32 (INT8 weight, per channel) -> Relu -> FP8 E4M3
Q/DQ -> Conv 3x3 32 -> 32 (FP8 weight, per channel) -> output, opset 19, torch.onnx names with ModelOpt quantizers.
"""
from __future__ import annotations

from typing import Any

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases._backend_notes import ORT_DROPS_RELU_BEFORE_FP8_Q
from cases.model import Built, Case, Claim, Knobs, Match, Scope, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

PULL = "https://github.com/justincdavis/trtutils/pull/163"
NO_FP8_HARDWARE = "https://github.com/NVIDIA/Model-Optimizer/issues/70"

CHANNELS_IN, CHANNELS, SIZE = 16, 32, 32
CONVS = ("/backbone/conv1/Conv", "/backbone/conv2/Conv")
REPORTED = {"precisions": ("int8", "fp8")}

_BLACKWELL = ("trtutils maintainer (PR #163): on Blackwell (SM 10.0+) a weakly typed INT8+FP8 mix is a hard TensorRT "
              "error (Error Code 9); TensorRT 10.x, version not stated.")
# trtutils' PR names no TensorRT version (10.x, merged 2026-05): its claims sit on 10.16, the 10.x of NGC's 26.04,
# and hold only on Blackwell hosts of that x86 target.
BLACKWELL_WEAK = Claim(target="trt1016-x86", outcome="fail", source=PULL, strength="issue-thread", architecture="10.0+",
                       note=_BLACKWELL, conditions=Conditions(support="maintainer"))
BLACKWELL_STRONG = Claim(target="trt1016-x86", outcome="pass", source=PULL, strength="issue-thread",
                         architecture="10.0+", note="trtutils PR #163: strongly typed builds are what Blackwell needs "
                         "for INT8+FP8 Q/DQ networks; its Q/DQ fixture builds on that path.")
FP8_ON_AMPERE = Claim(target="trt103-x86", outcome="fail", source=NO_FP8_HARDWARE, strength="issue-thread",
                      architecture="8.6", category="unsupported-op",
                      note="TensorRT 10.3.0.26 on an RTX A6000 (SM 8.6): 'Networks with FP8 Q/DQ layers require "
                      "hardware with FP8 support.' (Error Code 9, API Usage Error); INT8 built.",
                      conditions=Conditions(support="maintainer"))

# Orin is Ampere (SM 8.7), which a ModelOpt maintainer's answer in #70 places outside FP8
# ("FP8 is available only from Ada, Hopper"), with the TensorRT of that report (10.3).
FP8_ON_ORIN = Claim(
    target="trt103-orin", outcome="fail", category="unsupported-op", source=NO_FP8_HARDWARE, strength="issue-thread",
    architecture="8.7",
    note="Model-Optimizer #70 (TensorRT 10.3.0.26, RTX A6000, SM 8.6): 'Networks with FP8 Q/DQ layers require hardware "
    "with FP8 support.'; a ModelOpt maintainer: FP8 only from Ada and Hopper. Orin is Ampere (SM 8.7): the same check "
    "applies, though no thread reports this graph on Orin.",
    conditions=Conditions(support="maintainer"),
)


# trtutils PR #163: its maintainer on every Blackwell GPU (SM 10.0 and later) with TensorRT 10.x, no version named.
_BLACKWELL_10X = Scope(since="10.0", before="11.0", architectures=("10.0+",))
_ON_BLACKWELL = "a library maintainer on every Blackwell GPU (SM 10.0+), TensorRT 10.x, no version named"


class MixedInt8Fp8WeaklyTyped(Case):
    id = "p16-mixed-int8-fp8-weakly-typed"
    title = "INT8 and FP8 Q/DQ in one weakly typed network: rejected on Blackwell; FP8 rejected on pre-Ada GPUs"
    pattern = "P16"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="fp8-needs-fp8-hardware", category="unsupported-op",
            message=r"Networks with FP8 (?:Q/DQ layers|precision) require hardware with FP8 support",
            source="https://github.com/NVIDIA/Model-Optimizer/issues/70",
            example=("IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (Networks with FP8 Q/DQ layers require "
                     "hardware with FP8 support.)")),
    )
    links = (PULL, NO_FP8_HARDWARE)
    mode = "explicit-qdq"
    opset = 19
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=0.1,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph: a backend computing the INT8 conv on the "
            "same integers and the FP8 conv on the same E4M3 values differs by accumulation order, a few float ulps, "
            "and by a re-quantized activation one grid step off where rounding flips (E4M3 steps are 1/8 of a "
            "binade: 0.03 near 4/448*128, times 288 weights below 0.2, rarely summing past 0.05). A wrong precision "
            "or a wrong scale moves outputs (about +-3) by tens of percent."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no weak or strong typing and no GPU architecture: whether TensorRT rejects a weakly "
        "typed INT8+FP8 mix on Blackwell cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no weak or strong typing and no GPU architecture: it runs INT8 and FP8 Q/DQ in one graph "
            "on any CPU (the INT8 conv as QLinearConv, the FP8 one as FP32 between Q/DQ). These cells show the graph "
            "is valid and computes; whether TensorRT rejects the mix is the Blackwell targets' question. "
            + ORT_DROPS_RELU_BEFORE_FP8_Q
        ),
    }
    remedy = (
        "Build the network strongly typed (trtexec --stronglyTyped; NetworkDefinitionCreationFlag.STRONGLY_TYPED, the "
        "only kind on TensorRT 11). FP8 needs SM 8.9 or later: on Orin and other Ampere GPUs keep INT8 Q/DQ."
    )
    variants = (
        Variant(
            name="as-reported",
            needs=("fp8-qdq",),
            range_claims=(Claim(
                outcome="fail", source=PULL, strength="issue-thread", scope=_BLACKWELL_10X, basis=_ON_BLACKWELL,
                note="A weakly typed network mixing INT8 and FP8 Q/DQ is a hard TensorRT error (Error Code 9) on Blackwell."),),
            role="failing",
            description="INT8 Q/DQ conv -> Relu -> FP8 Q/DQ conv, weakly typed (INT8 and FP8 builder flags).",
            params=REPORTED,
            knobs=Knobs(fp8=True),
            claims=(BLACKWELL_WEAK,),
        ),
        Variant(
            name="strongly-typed",
            needs=("fp8-qdq",),
            range_claims=(Claim(
                outcome="pass", source=PULL, strength="issue-thread", scope=_BLACKWELL_10X, basis=_ON_BLACKWELL,
                note="Strongly typed builds are what Blackwell needs for INT8+FP8 Q/DQ networks."),),
            role="workaround",
            description="As reported, built strongly typed (trtutils' fix).",
            params=REPORTED,
            knobs=Knobs(strongly_typed=True),
            claims=(BLACKWELL_STRONG,),
            varies="as-reported",
        ),
        Variant(
            name="int8-only",
            role="sweep",
            description="Both convs INT8 Q/DQ, weakly typed: no mix, no FP8.",
            params={"precisions": ("int8", "int8")},
            varies="as-reported",
        ),
        Variant(
            name="fp8-only",
            needs=("fp8-qdq",),
            role="sweep",
            description="Both convs FP8 Q/DQ, weakly typed (FP8 flag): no mix; needs a GPU with FP8.",
            params={"precisions": ("fp8", "fp8")},
            knobs=Knobs(fp8=True),
            claims=(FP8_ON_AMPERE, FP8_ON_ORIN),
            varies="as-reported",
        ),
        Variant(
            name="fp8-first",
            needs=("fp8-qdq",),
            role="sweep",
            description="The mix the other way round: FP8 conv then INT8 conv, weakly typed.",
            params={"precisions": ("fp8", "int8")},
            knobs=Knobs(fp8=True),
            varies="as-reported",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        first, second = variant.params["precisions"]
        graph = gs.Graph(name=MixedInt8Fp8WeaklyTyped.id, opset=MixedInt8Fp8WeaklyTyped.opset)
        x = g.graph_input("input", (1, CHANNELS_IN, SIZE, SIZE))
        graph.inputs.append(x)
        y = g.quantized_conv(graph, x, "/backbone/conv1", "backbone.conv1.weight", CHANNELS_IN, CHANNELS, first)
        y = g.torch_node(graph, "Relu", "/backbone/relu", [y])
        y = g.quantized_conv(graph, y, "/backbone/conv2", "backbone.conv2.weight", CHANNELS, CHANNELS, second)
        g.mark_output(graph, y, (1, CHANNELS, SIZE, SIZE))
        int8 = tuple(conv for conv, p in zip(CONVS, (first, second)) if p == "int8")
        return Built(graph, expected_int8=int8,
                     expected_precision={conv: p for conv, p in zip(CONVS, (first, second)) if p != "int8"})

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Every layer whose input is FP8 Q/DQ in a network that also has INT8 Q/DQ: TensorRT rejects that mix on
        Blackwell unless the network is strongly typed (which the graph cannot tell)."""
        if not {"int8", "fp8"} <= m.dequantized_precisions(graph):
            return []
        found = []
        for layer in m.nodes_of(graph, "Conv", "ConvTranspose", "MatMul", "Gemm"):
            dq = m.dequantized(layer.inputs[0])
            if dq is None or m.quantized_precision(dq) != "fp8":
                continue
            found.append(Match(
                case=cls.id, nodes=(layer.name, dq.name), variant="as-reported",
                note=f"{layer.op} {layer.name} reads FP8 Q/DQ in a network that also has INT8 Q/DQ: on Blackwell "
                     "(SM 10.0+) TensorRT rejects the mix in a weakly typed network (Error Code 9); build strongly "
                     "typed.",
            ))
        return found

