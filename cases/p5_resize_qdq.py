"""P5: nearest x2 Resize between two quantized convs (an FPN / U-Net upsampling path), with and without Q/DQ before it.

Upstream: https://github.com/NVIDIA/TensorRT/issues/2976 (TensorRT 8.4, closed): the reporter's first Resize did not
run INT8 under QAT; a maintainer: no Q/DQ is needed before a Resize, TensorRT should run it INT8 by itself for
``Resize -> Q/DQ -> Conv``; a commenter saw the Resize input converted to FP16/FP32 (slower than FP16 overall) and
the same with ConvTranspose; the reporter noted that the same graph without any Q/DQ, built with ``--best``, runs the
Resize INT8. https://github.com/NVIDIA/TensorRT/issues/3542 (8.4.2.4, RTX 3090) tried Q/DQ on the upsample input.
Both are 8.4, outside our matrix: the variants carry no claims. The maintainer's
statement in #2976 has no version, but the reporter and a commenter in the same thread saw the Resize run FP16/FP32,
so it is no range claim either.

Graph: Q/DQ -> Conv(3x3, 32 -> 32) -> [Q/DQ] -> Resize(nearest, scales 1,1,2,2) -> Q/DQ -> Conv(3x3, 32 -> 32) on
1x32x16x16, the Resize as torch.onnx exports ``nn.Upsample(scale_factor=2)`` at opset 13 (empty roi, constant
scales, ``asymmetric`` / ``floor``). Names are ours, torch.onnx style for a detector neck, with pytorch-quantization
quantizers; the Q/DQ before the Resize is named for the Resize it feeds.
"""
from __future__ import annotations

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases._graphs import gs
from cases.model import AlreadyInForm, Built, Case, FixResult, Knobs, Match, NoRewrite, Tolerance, Variant

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/2976"
UPSAMPLE_INPUT_QDQ = "https://github.com/NVIDIA/TensorRT/issues/3542"

SIZE = 16
LATERAL = "/neck/lateral/conv/Conv"
RESIZE = "/neck/upsample/Resize"
SMOOTH = "/neck/smooth/conv/Conv"
REPORTED = {"channels": 32, "qdq_before_resize": False, "mode": "nearest"}


class ResizeQdq(Case):
    id = "p5-resize-qdq"
    title = "Nearest x2 Resize between quantized convs, with and without Q/DQ before it"
    pattern = "P5"
    links = (ISSUE, UPSAMPLE_INPUT_QDQ)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.995,
        max_abs_error=0.25,
        reason=(
            "Explicit variants are compared with the reference evaluation of the same Q/DQ graph: re-quantizing the "
            "lateral conv output moves a value by one step, and the smoothing conv sums 288 inputs with |w| < 0.2, so "
            "a few steps. The implicit variant is compared with FP32: calibrated ranges clip the tails of both convs' "
            "inputs; ONNX Runtime measured at most 0.08 there and 0.01 on the explicit variants, so 0.25 flags a wrong "
            "upsampling (a shifted or misaligned copy moves values by about 1), not clipping."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime runs a Resize between DequantizeLinear and QuantizeLinear directly on INT8 data by removing "
            "the pair; the Resize keeps its op type and is read as INT8 from the INT8 tensor it reads. Its convs are "
            "INT8 only when a QuantizeLinear directly follows them. Nothing here says whether TensorRT keeps the "
            "Resize INT8."
        ),
    }
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="Q/DQ -> Conv -> Resize(nearest, x2) -> Q/DQ -> Conv: no Q/DQ before the Resize, as a "
            "maintainer recommends in #2976.",
            params=REPORTED,
        ),
        Variant(
            name="qdq-before-resize",
            role="workaround",
            varies="as-reported", inherits=False,
            description=f"As reported, with a Q/DQ between the first conv and the Resize (tried in "
            f"{UPSAMPLE_INPUT_QDQ}).",
            params={**REPORTED, "qdq_before_resize": True},
        ),
        Variant(
            name="implicit-best",
            role="workaround",
            varies="as-reported", inherits=False,
            description="The same float graph without any Q/DQ, implicit INT8 with a calibrator and FP16 allowed "
            "(trtexec --best): the build in which the #2976 reporter saw the Resize run INT8.",
            params=REPORTED,
            knobs=Knobs(fp16=True),
            mode="implicit-int8",
        ),
        Variant(
            name="bilinear",
            role="sweep",
            # Another interpolation mode: whether TensorRT runs a Resize in INT8 depends on it
            varies="as-reported", inherits=False,
            description="As reported, with a linear (bilinear) Resize, half_pixel coordinates.",
            params={**REPORTED, "mode": "linear"},
        ),
        Variant(
            name="channels-64",
            role="sweep",
            varies="as-reported", inherits=True,
            description="As reported, with 64 channels.",
            params={**REPORTED, "channels": 64},
        ),
        Variant(
            name="channels-64-qdq-before-resize",
            role="sweep",
            varies="as-reported", inherits=False,  # The qdq-before-resize workaround at 64 channels
            description="qdq-before-resize with 64 channels.",
            params={**REPORTED, "channels": 64, "qdq_before_resize": True},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        channels = p["channels"]
        explicit = ResizeQdq.mode_of(variant) == "explicit-qdq"
        graph = gs.Graph(name=ResizeQdq.id, opset=ResizeQdq.opset)
        x = g.graph_input("input", (1, channels, SIZE, SIZE))
        graph.inputs.append(x)
        y = _conv(graph, x, "lateral", channels, explicit)
        if p["qdq_before_resize"]:
            y = g.torch_fake_quantize(graph, y, "/neck/upsample/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        scales = gs.Constant("/neck/upsample/scales", np.array([1, 1, 2, 2], dtype=np.float32))
        if p["mode"] == "nearest":
            attrs = {"coordinate_transformation_mode": "asymmetric", "cubic_coeff_a": -0.75, "mode": "nearest",
                     "nearest_mode": "floor"}
        else:
            attrs = {"coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.75, "mode": "linear"}
        y = g.torch_node(graph, "Resize", "/neck/upsample", [y, gs.Variable.empty(), scales], attrs)
        y = _conv(graph, y, "smooth", channels, explicit)
        g.mark_output(graph, y, (1, channels, 2 * SIZE, 2 * SIZE))
        # The two convs and the Resize between them: the question is whether the upsampling path stays INT8.
        return Built(graph, expected_int8=(LATERAL, RESIZE, SMOOTH))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        if workaround.name != "qdq-before-resize":
            return (f"{workaround.name} changes how the whole model is quantized (implicit INT8): that is not a "
                    "rewrite of one place")
        if form is not None and form.params.get("mode", "nearest") != "nearest":  # the bilinear form
            return "the Q/DQ before a non-nearest Resize changes what it computes; --fix only moves it before nearest"
        return None

    @classmethod
    def fix(cls, graph, match: Match, workaround: Variant) -> FixResult:
        """A Q/DQ before a nearest Resize with the scale of the Q/DQ right after it: nearest resizing copies values,
        so quantizing before it with the same scale computes the same numbers."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        resize = rw.node_named(graph, match.nodes[0])
        mode = m.attr(resize, "mode", "nearest")
        if (mode.decode() if isinstance(mode, bytes) else mode) != "nearest":
            raise NoRewrite(f"{resize.name} is a {mode} Resize: a Q/DQ before it would change what it computes")
        if m.qdq_before(resize.inputs[0]):
            raise AlreadyInForm(f"{resize.name} already reads its input through Q/DQ")
        after = m.qdq_after(resize.outputs[0])
        quantizer = rw.quantizer_of(resize.outputs[0]) if after else None
        if quantizer is None:
            raise NoRewrite(f"{resize.name}'s output is not re-quantized by a Q/DQ with a constant scale")
        added = rw.qdq_between(graph, resize.inputs[0], [resize], quantizer, f"{resize.name}/input_quantizer")
        return FixResult(nodes_added=added, note=f"Q/DQ {added[0]} -> {added[1]} before {resize.name}, with the scale "
                         f"of {after[0].name} after it (nearest resizing moves no value off that grid)")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every Resize that upsamples the output of a quantized conv into a Q/DQ (the input of a quantized layer);
        the variant says whether a Q/DQ also sits before it."""
        found = []
        for resize in m.nodes_of(graph, "Resize"):
            source = m.quantized_layer_behind(resize.inputs[0])
            if source is None or not m.qdq_after(resize.outputs[0]):
                continue
            before = m.qdq_before(resize.inputs[0])
            mode = m.attr(resize, "mode", "nearest")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            variant = "qdq-before-resize" if before else "as-reported"
            if mode != "nearest":
                variant = "bilinear" if not before else None
            found.append(Match(
                case=cls.id, nodes=(resize.name, source.name, *(n.name for n in before)), variant=variant,
                note=f"{mode} Resize {resize.name} after quantized {source.name}, re-quantized after it"
                     f"{' and before it' if before else ''}: TensorRT 8.4 left such a Resize out of INT8.",
            ))
        return found


def _conv(graph: gs.Graph, x, name: str, channels: int, explicit: bool) -> gs.Variable:
    """A 3x3 conv (pad 1) of the neck; with its input and per-channel weight quantizers in the explicit variants."""
    scope = f"/neck/{name}/conv"
    weight = g.conv_weight(f"neck.{name}.conv.weight", (channels, channels, 3, 3))
    if explicit:
        x = g.torch_fake_quantize(graph, x, f"{scope}/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        weight = g.torch_fake_quantize(graph, weight, f"{scope}/_weight_quantizer",
                                       g.per_channel_scale(weight.values), axis=0)
    return g.torch_node(graph, "Conv", scope, [x, weight], g.conv_attrs(3, pad=1))
