"""P20: an INT8 network on Orin's DLA with one layer DLA cannot run: with GPU fallback that layer leaves the DLA (and
the network is split); without it the build fails; and some TensorRT builds for Orin have no DLA at all.

Upstream (documentation, not an issue thread; the facts as failure-patterns.md reads these pages):

* https://docs.nvidia.com/deeplearning/tensorrt/11.3.0/api/migration/tensorrt-10x-to-11x-jetson.html: the Jetson
  migration guide of TensorRT 11.3: DLA support is missing from TensorRT 10.8 to 11.4.0 and from the 10.16 Orin
  (SBSA) build.
* https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-11/11.4.1.html: TensorRT 11.4.1
  brings DLA back on Jetson AGX Orin.
* failure-patterns.md (P20): INT8 layers DLA cannot take fall back to the GPU (TensorRT 8.5 to 10.7 on Orin, and
  11.4.1 on); which layer types DLA lacks is in the DLA section of each version's developer guide. This case uses a
  bicubic Resize, which DLA's supported-layer list does not name (our reading of it, not a report about this graph).

Graph (ours, a small segmentation head, torch.onnx names): input (1, 16, 32, 32) -> Conv 3x3 16 -> 32 -> Relu ->
MaxPool 2x2 -> Conv 3x3 32 -> 32 -> Relu -> Resize x2 (cubic) -> Conv 3x3 32 -> 16 -> output (1, 16, 32, 32), implicit
INT8 (a calibrator: DLA's classic INT8 path).

Devices: each variant chooses its own with knobs, and that choice wins over the target's. The DLA variants
(``dla_core=0``, with or without ``gpu_fallback``) build for DLA core 0 on every Orin target, the plain GPU ones
(trt86-orin, trt103-orin ...) as much as the DLA ones (trt103-orin-dla ...), so both columns show the same DLA build
and the JetPack 5 / 6.0 releases without a DLA target are covered too; ``gpu-only`` (``gpu_only``) builds for the GPU
even on a DLA target. A DLA variant is ``unavailable`` with NVIDIA's reason where the release or platform has no DLA
(10.8 to 11.4.0 and the 10.16 Orin build, Thor, x86). TensorRT 11 removed implicit quantization, so on 11.4.1, which
has DLA again, every cell of this implicit case is ``unavailable`` too.

No claim for one target: the documentation says where DLA exists, and the harness already makes a DLA cell
``unavailable`` there with the same pages (harness/tensorrt/release_facts.py, read as target facts by
harness/targets/facts.py); no report covers this graph on a release that has DLA. One range claim: the DLA guide says,
for every release, that without GPU fallback a layer DLA cannot run is an error, and its supported-layer page lists
nearest and linear Resize only, so ``dla-no-fallback`` fails on Orin's releases with DLA (8.5 to 10.7). What the cubic
Resize runs in once it falls back to the GPU is not documented: ``as-reported`` carries no claim.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Match, Scope, Tolerance, Variant
from harness.tensorrt.signatures import DLA_FALLBACK_LINE, KnownFailure, KnownForm

MIGRATION = "https://docs.nvidia.com/deeplearning/tensorrt/11.3.0/api/migration/tensorrt-10x-to-11x-jetson.html"
RETURNED = "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-11/11.4.1.html"
NO_FALLBACK_ERROR = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.1/inference-library/dla-runtime-configuration.html"
DLA_LAYERS = "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/dla-layer-restrictions.html"
# Reports whose logs show the pattern: YOLO11 head layers switched to the GPU on AGX Orin; a DLA ForeignNode without
# implementation on Xavier NX (8.5.2, INT8, GPU fallback on).
YOLO11_FALLBACK = "https://github.com/ultralytics/ultralytics/issues/18012"
DLA_NODE_FAILURE = "https://github.com/NVIDIA/TensorRT/issues/3847"

CHANNELS_IN, CHANNELS, SIZE = 16, 32, 32
CONVS = ("/head/conv1/Conv", "/head/conv2/Conv", "/head/conv3/Conv")
RESIZE = "/head/upsample/Resize"
REPORTED = {"resize": "cubic"}
DLA_LACKS = {"cubic"}  # Resize modes outside DLA's supported-layer list (nearest and linear are in it)

class OrinDlaFallback(Case):
    id = "p20-orin-dla-fallback"
    title = "Orin DLA INT8 network with a layer DLA lacks: GPU fallback, failure without it, DLA absent in some builds"
    pattern = "P20"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(  # P8's message, in a DLA build: the DLA subgraph (a ForeignNode) has no implementation
            id="dla-foreign-node-no-implementation", category="no-implementation",
            message=r"could not find any implementation for node \{ForeignNode\[", flags=re.IGNORECASE,
            source=DLA_NODE_FAILURE,
            instead_of="foreign-node-no-implementation", when_text=r"--useDLACore|\bDLA\b|\[DlaLayer\]",
            example="Error Code 10: Internal Error (Could not find any implementation for node "
                    "{ForeignNode[/cnn/cnn.0/Conv]} on DLA core 0.)"),
        KnownForm(
            id="dla-layer-to-gpu", kind="dla-fallback", form=DLA_FALLBACK_LINE, source=YOLO11_FALLBACK,
            note=("layers DLA cannot run left the DLA for the GPU (GPU fallback on): the engine builds, split between "
                  "DLA and GPU; which layers and why is in the lines themselves"),
            example="[TRT] [W] Layer '/model.23/Concat_4' (CONCATENATION): Unsupported on DLA. Switching this "
                    "layer's device type to GPU."),
    )
    links = (MIGRATION, RETURNED, NO_FALLBACK_ERROR, DLA_LAYERS, YOLO11_FALLBACK, DLA_NODE_FAILURE)
    mode = "implicit-int8"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.995,
        max_abs_error=0.3,
        reason=(
            "Compared with the FP32 reference: calibrated INT8 on three 3x3 convs (inputs of about unit variance, "
            "|w| below 0.3) clips tails and rounds each input to 1/127 of its range, a few hundredths per conv; the "
            "bicubic upsampling overshoots edges by up to 10 %, which INT8 of its input does not change much. A DLA "
            "or GPU split that mixes up layers, or a wrong Resize mode, moves outputs by about 1."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no DLA: which layers leave Orin's DLA cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no DLA: the dla_core and gpu_fallback knobs do not apply, and every cell runs on the CPU "
            "with its own static INT8 quantization (a cubic Resize stays float there). These cells show the graph "
            "quantizes and computes; which layers DLA takes is the Orin targets' question."
        ),
        "tensorrt": (
            "Each variant's knobs choose its device on every target: the DLA variants build for DLA core 0 on plain "
            "Orin GPU targets as on the DLA targets (same build in both columns), gpu-only builds for the GPU on both; "
            "a DLA variant is unavailable where the release or platform has no DLA. Implicit INT8: unavailable on "
            "TensorRT 11, 11.4.1's restored DLA included."
        ),
    }
    remedy = (
        "Replace or remove the layers DLA lacks (here a nearest or bilinear Resize) or let them fall back to the GPU "
        "knowingly (each DLA/GPU switch costs a copy); check that the TensorRT build has DLA (not 10.8 to 11.4.0, not "
        "the 10.16 Orin SBSA build; 11.4.1 has it again)."
    )
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="Conv -> Relu -> MaxPool -> Conv -> Relu -> cubic Resize x2 -> Conv, implicit INT8 on DLA core "
            "0 with GPU fallback: the Resize leaves the DLA.",
            params=REPORTED,
            knobs=Knobs(dla_core=0, gpu_fallback=True),
        ),
        Variant(
            name="dla-no-fallback",
            # The DLA guide, for every release with DLA on Orin (8.5 to 10.7; 11.4.1 has no calibrator): without GPU
            # fallback a layer DLA cannot run is an error, and DLA's Resize is nearest or linear only.
            range_claims=(Claim(
                outcome="fail", source=NO_FALLBACK_ERROR, strength="documentation",
                scope=Scope(since="8.5", before="10.8", platforms=("orin",)),
                basis="the DLA guide: without GPU fallback a layer DLA cannot run is an error, no version bound",
                note=f"DLA runs Resize in nearest or linear mode only ({DLA_LAYERS}); a cubic Resize with GPU "
                "fallback off fails the build."),),
            role="sweep",
            description="As reported without GPU fallback: a layer DLA lacks fails the build.",
            params=REPORTED,
            knobs=Knobs(dla_core=0),
            varies="as-reported",
        ),
        Variant(
            name="gpu-only",
            role="sweep",
            description="As reported on the GPU (DLA off), on DLA targets too.",
            params=REPORTED,
            knobs=Knobs(gpu_only=True),
            varies="as-reported",
        ),
        Variant(
            name="nearest-resize",
            role="sweep",
            description="As reported with a nearest Resize, a mode DLA runs: the whole network can stay on DLA.",
            params={"resize": "nearest"},
            knobs=Knobs(dla_core=0, gpu_fallback=True),
            varies="as-reported",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        graph = gs.Graph(name=OrinDlaFallback.id, opset=OrinDlaFallback.opset)
        x = g.graph_input("input", (1, CHANNELS_IN, SIZE, SIZE))
        graph.inputs.append(x)
        y = _conv(graph, x, "conv1", CHANNELS_IN, CHANNELS)
        y = g.torch_node(graph, "Relu", "/head/relu1", [y])
        y = g.torch_node(graph, "MaxPool", "/head/pool", [y], {"ceil_mode": 0, "kernel_shape": [2, 2],
                                                                "pads": [0, 0, 0, 0], "strides": [2, 2]})
        y = _conv(graph, y, "conv2", CHANNELS, CHANNELS)
        y = g.torch_node(graph, "Relu", "/head/relu2", [y])
        scales = gs.Constant("/head/upsample/scales", np.array([1, 1, 2, 2], dtype=np.float32))
        mode = variant.params["resize"]
        attrs = ({"coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.75, "mode": "cubic"}
                 if mode == "cubic" else
                 {"coordinate_transformation_mode": "asymmetric", "cubic_coeff_a": -0.75, "mode": "nearest",
                  "nearest_mode": "floor"})
        y = g.torch_node(graph, "Resize", "/head/upsample", [y, gs.Variable.empty(), scales], attrs)
        y = _conv(graph, y, "conv3", CHANNELS, CHANNELS_IN)
        g.mark_output(graph, y, (1, CHANNELS_IN, SIZE, SIZE))
        return Built(graph, expected_int8=(*CONVS, RESIZE))

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """A Resize in a mode DLA's supported-layer list does not name, between convs: on a DLA build it leaves the
        DLA (GPU fallback) or fails the build."""
        found = []
        for resize in m.nodes_of(graph, "Resize"):
            mode = m.attr(resize, "mode", "nearest")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            if mode not in DLA_LACKS or m.ancestor(resize.inputs[0], "Conv", max_nodes=6) is None:
                continue
            found.append(Match(
                case=cls.id, nodes=(resize.name,), variant="as-reported",
                note=f"{mode} Resize {resize.name}: DLA's supported layers do not include this mode, so on Orin's DLA "
                     "it runs on the GPU (with GPU fallback) or fails the build (without).",
            ))
        return found


def _conv(graph: gs.Graph, x, name: str, channels_in: int, channels: int) -> gs.Variable:
    weight = g.conv_weight(f"head.{name}.weight", (channels, channels_in, 3, 3))
    return g.torch_node(graph, "Conv", f"/head/{name}", [x, weight, g.bias(f"head.{name}.bias", channels)],
                        g.conv_attrs(3, pad=1))
