"""P2: ConvTranspose with explicit Q/DQ: the per-channel weight axis, Cin != Cout, BatchNorm and ReLU after it.

Upstream, in order of TensorRT version:

* https://github.com/NVIDIA/TensorRT/issues/1694 (TensorRT 8.2 era, closed): deconvolution in INT8 gives wrong results;
  a maintainer: pytorch-quantization quantizes ConvTranspose weights along axis 1 (the output channels of the ONNX
  weight layout (Cin, Cout/groups, kH, kW)) where TensorRT's implementation expects axis 0; workaround: quantize them
  along axis 0.
* https://github.com/NVIDIA/TensorRT/issues/2280 (JetPack 4.6.1, closed): ``Could not find any implementation for
  node backbone.ida_up.up_1.weight + QuantizeLinear_629_quantize_scale_node + ConvTranspose_631``; reproduced by a
  maintainer on 8.4, passing on an 8.5 development build.
* https://github.com/NVIDIA/TensorRT/issues/1699 (8.2.0.6, RTX 2080): the Q/DQ ConvTranspose does not fuse with the
  BatchNorm after it and runs INT8-in FP32-out; a maintainer suggested Q/DQ before the BN.
* https://github.com/NVIDIA/TensorRT/issues/3412 (open; version not stated): a maintainer: no support for
  Q/DQ + ConvTranspose + BN fusion; Q/DQ + 2D ConvTranspose + activation should fuse. The reporter folds BN by hand.
* https://github.com/NVIDIA/TensorRT/issues/4366 (open; its version is not in what we could read): Q/DQ -> ConvTranspose
  -> activation -> Q/DQ does not fuse and gives invalid output.

None of these names a version of our matrix with its platform (8.2-8.4, an unnamed 8.5 build, unknown versions), so
the variants carry no claim for one target. #3412 is a maintainer saying, in 2023 without a version, that TensorRT
has no Q/DQ + ConvTranspose + BatchNorm fusion: a range claim (8.6, the release of that time, and later) that the
as-reported form does not end INT8 (#1699 explains the INT8-in FP32-out it leaves). The weight-axis question of #1694
(8.2 era) and the workarounds get no range claim: no source says how later releases treat them.

Names: the ConvTranspose, its weight and its quantizers follow #2280's layer name in today's torch.onnx +
pytorch-quantization naming (``/backbone/ida_up/up_1/ConvTranspose``, ``backbone.ida_up.up_1.weight``,
``.../_weight_quantizer/QuantizeLinear``). The geometry is the pattern's, not #2280's (whose shapes are not in the
thread): kernel 2, stride 2, 64 -> 32 channels on a 1x64x16x16 input. BatchNorm ``bn_1``, ReLU ``act_1`` and the
trailing quantizer (the next layer's ``node_1/_input_quantizer``) are our names.
"""
from __future__ import annotations

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Match, Scope, Tolerance, Variant

WRONG_RESULTS = "https://github.com/NVIDIA/TensorRT/issues/1694"
NO_IMPLEMENTATION = "https://github.com/NVIDIA/TensorRT/issues/2280"
QDQ_BEFORE_BN = "https://github.com/NVIDIA/TensorRT/issues/1699"
NO_BN_FUSION = "https://github.com/NVIDIA/TensorRT/issues/3412"
ACTIVATION_NOT_MERGED = "https://github.com/NVIDIA/TensorRT/issues/4366"

SCOPE = "/backbone/ida_up"
DECONV = f"{SCOPE}/up_1/ConvTranspose"
WEIGHT = "backbone.ida_up.up_1.weight"
SIZE = 16
EPSILON = 1e-5
# pytorch-quantization's per-channel axis for ConvTranspose weights is 1 (#1694): the failing form as exported.
REPORTED = {"in_channels": 64, "out_channels": 32, "groups": 1, "weight_axis": 1, "bn": "node", "qdq_before_bn": False}


class ConvTransposeQdq(Case):
    id = "p2-convtranspose-qdq"
    title = "Q/DQ ConvTranspose (per-channel weight axis, Cin != Cout) + BatchNorm + ReLU"
    pattern = "P2"
    links = (WRONG_RESULTS, NO_IMPLEMENTATION, QDQ_BEFORE_BN, NO_BN_FUSION, ACTIVATION_NOT_MERGED)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=1.5 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, whose output is the dequantized trailing "
            "Q: a backend computing the same integers lands on the same output step; a rounding tie flipped by "
            "accumulation order or by BN folded into the deconvolution moves an output by one step. ONNX Runtime "
            "measured at most 1 step off; 1.5 steps flags a real difference, such as weights read along the wrong "
            "axis (#1694's wrong results), which moves outputs by many steps."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime reads the weight DQ axis as ONNX defines it, so a wrong-axis result cannot appear here. Its "
            "CPU EP kept every ConvTranspose of this case in float when we ran it (1.32), even with a QuantizeLinear "
            "right after it (qdq-before-bn): these cells show ONNX Runtime's own INT8 coverage, not which axis or "
            "fusion TensorRT accepts."
        ),
    }
    variants = (
        Variant(
            name="as-reported",
            range_claims=(Claim(
                outcome="fallback", source=NO_BN_FUSION, strength="issue-thread", scope=Scope(since="8.6"),
                basis="a maintainer: no support for Q/DQ + ConvTranspose + BatchNorm fusion (2023, no version named)",
                note="The BatchNorm after the Q/DQ ConvTranspose is not fused, so the deconvolution does not end "
                "INT8 (INT8-in FP32-out, as #1699 saw on 8.2). The weight-axis question of #1694 is separate and "
                "not claimed."),),
            role="failing",
            description="1x64x16x16 -> Q/DQ -> ConvTranspose(k2, s2, 64 -> 32, weight Q/DQ per-channel on axis 1 as "
            "pytorch-quantization exports it) -> BatchNormalization -> ReLU -> Q/DQ.",
            params=REPORTED,
        ),
        Variant(
            name="weight-axis-0",
            role="workaround",
            varies="as-reported", inherits=False,
            description=f"As reported, weight quantized per channel along axis 0 (64 scales), the maintainer's "
            f"workaround in {WRONG_RESULTS}.",
            params={**REPORTED, "weight_axis": 0},
        ),
        Variant(
            name="qdq-before-bn",
            role="workaround",
            varies="as-reported", inherits=False,
            description=f"As reported, with a Q/DQ between the ConvTranspose and the BatchNorm (suggested by a "
            f"maintainer in {QDQ_BEFORE_BN}), so the deconvolution can run INT8-in INT8-out.",
            params={**REPORTED, "qdq_before_bn": True},
        ),
        Variant(
            name="bn-folded",
            role="workaround",
            varies="as-reported", inherits=False,
            description=f"As reported, with the BatchNorm folded into the ConvTranspose weights and bias by hand "
            f"({NO_BN_FUSION}): Q/DQ -> ConvTranspose -> ReLU -> Q/DQ, the form {ACTIVATION_NOT_MERGED} reports as "
            "not merged.",
            params={**REPORTED, "bn": "folded"},
        ),
        Variant(
            name="weight-per-tensor",
            role="sweep",
            # One weight scale leaves no axis to disagree on, the pattern's subject
            varies="as-reported", inherits=False,
            description="As reported, weight quantized with one scale: no axis to disagree on.",
            params={**REPORTED, "weight_axis": None},
        ),
        Variant(
            name="cin-eq-cout-axis-1",
            role="sweep",
            varies="as-reported", inherits=True,  # Other channel counts, the same ops, Q/DQ and weight axis
            description="As reported with 64 -> 64 channels: both axes have 64 scales, so a wrong axis passes the "
            "parser and only the output shows it.",
            params={**REPORTED, "out_channels": 64},
        ),
        Variant(
            name="cin-eq-cout-axis-0",
            role="sweep",
            varies="as-reported", inherits=False,  # The workaround's weight axis at other channel counts
            description="64 -> 64 channels, weight quantized along axis 0.",
            params={**REPORTED, "out_channels": 64, "weight_axis": 0},
        ),
        Variant(
            name="depthwise",
            role="sweep",
            # A grouped ConvTranspose with another weight shape: a form of its own
            varies="as-reported", inherits=False,
            description="A depthwise ConvTranspose (64 -> 64, groups 64, weight (64, 1, 2, 2) quantized along axis 0, "
            "one scale per group).",
            params={**REPORTED, "out_channels": 64, "groups": 64, "weight_axis": 0},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        cin, cout, groups = p["in_channels"], p["out_channels"], p["groups"]
        graph = gs.Graph(name=ConvTransposeQdq.id, opset=ConvTransposeQdq.opset)
        x = g.graph_input("input", (1, cin, SIZE, SIZE))
        graph.inputs.append(x)
        x = g.torch_fake_quantize(graph, x, f"{SCOPE}/up_1/_input_quantizer", g.UNIT_ACTIVATION_SCALE)

        # (Cin, Cout/groups, 2, 2); with kernel = stride every output sums Cin/groups products.
        weights = g.dense_weight(WEIGHT, (cin, cout // groups, 2, 2), fan_in=cin // groups)
        bn_params = g.batchnorm_params("backbone.ida_up.bn_1", cout)
        inputs = [weights]
        if p["bn"] == "folded":
            weights, folded_bias = _fold_batchnorm(weights, bn_params, groups)
            inputs = [weights, folded_bias]
        axis = p["weight_axis"]
        scale = g.per_tensor_scale(weights.values) if axis is None else g.per_channel_scale(weights.values, axis)
        inputs[0] = g.torch_fake_quantize(graph, weights, f"{SCOPE}/up_1/_weight_quantizer", scale, axis=axis)
        attrs = {"dilations": [1, 1], "group": groups, "kernel_shape": [2, 2], "pads": [0, 0, 0, 0], "strides": [2, 2]}
        y = g.torch_node(graph, "ConvTranspose", f"{SCOPE}/up_1", [x, *inputs], attrs)
        if p["qdq_before_bn"]:
            y = g.torch_fake_quantize(graph, y, f"{SCOPE}/bn_1/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        if p["bn"] == "node":
            y = g.torch_node(graph, "BatchNormalization", f"{SCOPE}/bn_1", [y, *bn_params], {"epsilon": EPSILON})
        y = g.torch_node(graph, "Relu", f"{SCOPE}/act_1", [y])
        y = g.torch_fake_quantize(graph, y, f"{SCOPE}/node_1/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        g.mark_output(graph, y, (1, cout, 2 * SIZE, 2 * SIZE))
        # The deconvolution is the compute node; BN and ReLU fold or fuse into it, or run in float after it.
        return Built(graph, expected_int8=(DECONV,))

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return ("every workaround of P2 changes the weights' quantization (axis, folded BatchNorm) or needs a new "
                "scale (a Q/DQ before the BatchNorm); --fix never changes the scales or weights of your layers: "
                "re-export from your quantizer with the weight quantized on axis 0 or the BatchNorm folded")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every ConvTranspose whose weight reaches it through Q/DQ; the variant follows the weight DQ axis, the
        BatchNorm after it and whether a Q/DQ sits between them."""
        found = []
        for deconv in m.nodes_of(graph, "ConvTranspose"):
            weight = deconv.inputs[1] if len(deconv.inputs) > 1 else None
            if weight is None or not m.is_quantized_weight(weight):
                continue
            axis = m.quantization_axis(weight)
            chain = [deconv]
            qdq = m.qdq_after(deconv.outputs[0])
            after = m.only_consumer(qdq[-1].outputs[0] if qdq else deconv.outputs[0])
            has_bn = after is not None and after.op == "BatchNormalization"
            if has_bn:
                chain += [*qdq, after]
            if qdq and has_bn:
                variant = "qdq-before-bn"
            elif has_bn:
                variant = {1: "as-reported", 0: "weight-axis-0", None: "weight-per-tensor"}.get(axis)
            else:
                variant = "bn-folded" if axis == 1 else None
            where = "per tensor" if axis is None else f"per channel along axis {axis}"
            found.append(Match(
                case=cls.id, nodes=tuple(n.name for n in chain), variant=variant,
                note=f"Q/DQ ConvTranspose {deconv.name}, weight quantized {where}"
                     f"{', then BatchNormalization' if has_bn else ''}: TensorRT has read the weight axis differently "
                     "from exporters and does not fuse Q/DQ + ConvTranspose + BN.",
            ))
        return found


def _fold_batchnorm(weights: gs.Constant, bn_params: list[gs.Constant], groups: int) -> tuple[gs.Constant, gs.Constant]:
    """The ConvTranspose weight and bias with the BatchNorm after it folded in (output channel axis 1 per group)."""
    gamma, beta, mean, var = (c.values for c in bn_params)
    factor = gamma / np.sqrt(var + EPSILON)
    cin, cout_per_group = weights.values.shape[:2]
    grouped = weights.values.reshape(groups, cin // groups, cout_per_group, *weights.values.shape[2:])
    folded = grouped * factor.reshape(groups, 1, cout_per_group, 1, 1)
    return (gs.Constant(weights.name, folded.reshape(weights.values.shape).astype(np.float32)),
            gs.Constant("backbone.ida_up.up_1.bias", (beta - mean * factor).astype(np.float32)))
