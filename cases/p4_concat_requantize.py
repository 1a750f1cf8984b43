"""P4: Concat of quantized branches (Conv, Conv, ConvTranspose), re-quantized after; equal vs unequal scales.

Upstream: https://github.com/NVIDIA/TensorRT/issues/2597 (closed): a Concat of a ConvTranspose and two convs with a
Q after it; TensorRT clones that Q into both convs (INT8-in INT8-out) but not into the ConvTranspose, which stays
INT8-in FP32-out. https://github.com/NVIDIA/TensorRT/issues/4366 (open): with explicit Q/DQ TensorRT moves the Q in
front of the Concat (one Quantize per input, then a Reformat), about 30 % slower than the implicit-quantization plan,
where the Concat is a plain copy. https://github.com/NVIDIA/TensorRT/issues/4401 (open): no Q/DQ placement around a
UNet's Concat -> Conv reproduced the implicit plan. None of the three states a TensorRT version in what we could
read, so the variants carry no claims.

Graph (the pattern's minimal form): two Q/DQ convs on ``input`` (1x16x16x16) and a Q/DQ ConvTranspose (k2, s2) on
``input_low`` (1x16x8x8) -> Concat(axis 1) -> Q/DQ -> Conv(1x1, 48 -> 32). The ConvTranspose weight is quantized per
tensor, keeping P2's axis question out of this case. Names are ours, torch.onnx style for a detector neck
(``/neck/...``), with pytorch-quantization quantizers; the Q/DQ after the Concat is the fusing conv's input quantizer,
as pytorch-quantization places it.
"""
from __future__ import annotations

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Match, Tolerance, Variant

DECONV_NOT_FUSED = "https://github.com/NVIDIA/TensorRT/issues/2597"
SLOWER_THAN_IMPLICIT = "https://github.com/NVIDIA/TensorRT/issues/4366"
NO_PLACEMENT_WORKS = "https://github.com/NVIDIA/TensorRT/issues/4401"

CHANNELS = 16
SIZE = 16
OUT_CHANNELS = 32
BRANCHES = ("branch_a", "branch_b", "branch_up")
FUSE_CONV = "/neck/fuse/conv/Conv"
# Per-input scales of the unequal variant, as multiples of the scale after the Concat. At 0.75x the Q clips beyond +-3
# (0.3 % of the unit-variance branch outputs); the reference evaluation clips the same values.
UNEQUAL = (1.0, 1.5, 0.75)
REPORTED = {"branch_up": "convtranspose", "input_qdq": None, "output_qdq": True}


class ConcatRequantize(Case):
    id = "p4-concat-requantize"
    title = "Concat of quantized Conv/ConvTranspose branches, re-quantized after (equal vs unequal scales)"
    pattern = "P4"
    links = (DECONV_NOT_FUSED, SLOWER_THAN_IMPLICIT, NO_PLACEMENT_WORKS)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.995,
        max_abs_error=4 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Explicit variants are compared with the reference evaluation of the same Q/DQ graph: a branch output "
            "re-quantized by a different accumulation order moves one step, and the 1x1 fusing conv sums 48 such "
            "inputs with weights |w| < 0.5, so a few steps of the activation scale. The implicit variant is compared "
            "with FP32: calibrated ranges clip tails of the three branch outputs. ONNX Runtime measured at most "
            "0.075 (2.4 steps) on the implicit variant and nothing on the explicit ones."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's CPU EP makes a conv INT8 only when a QuantizeLinear directly follows it and keeps "
            "ConvTranspose in float, so the TensorRT-style forms show float branches there for ONNX Runtime's reasons; "
            "the Quantize/Reformat layers and their cost that #4366 reports have no ONNX Runtime analogue."
        ),
    }
    variants = (
        Variant(
            name="requantized-after",
            role="failing",
            description="Conv, Conv, ConvTranspose outputs (float) -> Concat(axis 1) -> Q/DQ -> Conv(1x1): the placement "
            "of #2597 and #4366.",
            params=REPORTED,
        ),
        Variant(
            name="inputs-qdq-equal-scales",
            role="sweep",
            varies="requantized-after", inherits=False,  # Another Q/DQ placement
            description="As requantized-after, each Concat input also through a Q/DQ with the scale of the Q/DQ after "
            "the Concat, so the Concat can be an INT8 copy.",
            params={**REPORTED, "input_qdq": "equal"},
        ),
        Variant(
            name="inputs-qdq-unequal-scales",
            role="sweep",
            varies="requantized-after", inherits=False,  # Another Q/DQ placement
            description=f"As inputs-qdq-equal-scales, the input scales {UNEQUAL} times the scale after the Concat: the "
            "Concat must re-quantize.",
            params={**REPORTED, "input_qdq": "unequal"},
        ),
        Variant(
            name="inputs-qdq-no-requant",
            role="sweep",
            varies="requantized-after", inherits=False,  # Another Q/DQ placement
            description="Equal-scale Q/DQ on every Concat input and none after it: the fusing conv reads dequantized "
            "values through the Concat.",
            params={**REPORTED, "input_qdq": "equal", "output_qdq": False},
        ),
        Variant(
            name="conv-branches-only",
            role="sweep",
            varies="requantized-after", inherits=False,  # A Conv in place of the ConvTranspose: another op
            description="As requantized-after with the ConvTranspose branch replaced by a third conv on a 16x16 input: "
            "tells #2597's ConvTranspose apart from the Concat.",
            params={**REPORTED, "branch_up": "conv"},
        ),
        Variant(
            name="implicit-baseline",
            role="sweep",
            varies="requantized-after", inherits=False,  # No Q/DQ at all, implicit INT8: another build mode
            description="The same float graph without any Q/DQ, implicit INT8 with a calibrator: the plan #4366 "
            "compares explicit quantization against (a plain-copy Concat).",
            params={**REPORTED, "output_qdq": False},
            mode="implicit-int8",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        explicit = ConcatRequantize.mode_of(variant) == "explicit-qdq"
        graph = gs.Graph(name=ConcatRequantize.id, opset=ConcatRequantize.opset)
        x = g.graph_input("input", (1, CHANNELS, SIZE, SIZE))
        deconv = p["branch_up"] == "convtranspose"
        low_size = SIZE // 2 if deconv else SIZE
        x_low = g.graph_input("input_low", (1, CHANNELS, low_size, low_size))
        graph.inputs.extend([x, x_low])

        outputs, layers = [], []
        for branch, source in zip(BRANCHES, (x, x, x_low)):
            scope = f"/neck/{branch}"
            upsample = branch == "branch_up" and deconv
            kind = "deconv" if upsample else "conv"
            layer_input = source
            if explicit:
                layer_input = g.torch_fake_quantize(graph, source, f"{scope}/{kind}/_input_quantizer",
                                                    g.UNIT_ACTIVATION_SCALE)
            if upsample:
                weight = g.dense_weight(f"neck.{branch}.deconv.weight", (CHANNELS, CHANNELS, 2, 2), fan_in=CHANNELS)
                attrs = {"dilations": [1, 1], "group": 1, "kernel_shape": [2, 2], "pads": [0, 0, 0, 0],
                         "strides": [2, 2]}
                weight_scale, axis, op = g.per_tensor_scale(weight.values), None, "ConvTranspose"
            else:
                weight = g.conv_weight(f"neck.{branch}.conv.weight", (CHANNELS, CHANNELS, 3, 3))
                attrs, axis, op = g.conv_attrs(3, pad=1), 0, "Conv"
                weight_scale = g.per_channel_scale(weight.values)
            if explicit:
                weight = g.torch_fake_quantize(graph, weight, f"{scope}/{kind}/_weight_quantizer", weight_scale, axis)
            outputs.append(g.torch_node(graph, op, f"{scope}/{kind}", [layer_input, weight], attrs))
            layers.append(f"{scope}/{kind}/{op}")

        if p["input_qdq"] is not None:
            factors = UNEQUAL if p["input_qdq"] == "unequal" else (1.0, 1.0, 1.0)
            outputs = [g.torch_fake_quantize(graph, y, f"/neck/cat_quantizer_{i}",
                                             np.float32(f * g.UNIT_ACTIVATION_SCALE))
                       for i, (y, f) in enumerate(zip(outputs, factors))]
        y = g.torch_node(graph, "Concat", "/neck", outputs, {"axis": 1})
        if p["output_qdq"]:
            y = g.torch_fake_quantize(graph, y, "/neck/fuse/conv/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        weight = g.conv_weight("neck.fuse.conv.weight", (OUT_CHANNELS, 3 * CHANNELS, 1, 1))
        if explicit:
            weight = g.torch_fake_quantize(graph, weight, "/neck/fuse/conv/_weight_quantizer",
                                           g.per_channel_scale(weight.values), axis=0)
        y = g.torch_node(graph, "Conv", "/neck/fuse/conv", [y, weight], g.conv_attrs(1))
        g.mark_output(graph, y, (1, OUT_CHANNELS, SIZE, SIZE))
        # The branch layers and the fusing conv compute; the Concat itself is a copy in any precision.
        return Built(graph, expected_int8=(*layers, FUSE_CONV))

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every Concat that joins two or more quantized Conv/ConvTranspose outputs and has Q/DQ on its inputs or
        its output; the variant says which, and whether the input scales are equal."""
        found = []
        for concat in m.nodes_of(graph, "Concat"):
            layers = [m.quantized_layer_behind(t) for t in concat.inputs]
            layers = [layer for layer in layers if layer is not None]
            if len(layers) < 2:
                continue
            scales = [m.dequantize_scale(t) if m.qdq_before(t) else None for t in concat.inputs]
            requantized = bool(m.qdq_after(concat.outputs[0]))
            if all(s is None for s in scales):
                if not requantized:
                    continue
                variant = "requantized-after"
            elif any(s is None for s in scales):
                variant = None
            elif all(np.array_equal(s, scales[0]) for s in scales):
                variant = "inputs-qdq-equal-scales" if requantized else "inputs-qdq-no-requant"
            else:
                variant = "inputs-qdq-unequal-scales"
            deconvs = [layer.name for layer in layers if layer.op == "ConvTranspose"]
            found.append(Match(
                case=cls.id, nodes=(concat.name, *(layer.name for layer in layers)), variant=variant,
                note=f"Concat {concat.name} of {len(layers)} quantized layers"
                     f"{' including ConvTranspose ' + ', '.join(deconvs) if deconvs else ''}: explicit Q/DQ around a "
                     "Concat costs TensorRT extra Quantize/Reformat layers, and a ConvTranspose input stays FP32-out.",
            ))
        return found
