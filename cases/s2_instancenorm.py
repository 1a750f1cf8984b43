"""S2: a multi-input InstanceNormalization model under implicit INT8 with an entropy calibrator.

Upstream: https://github.com/NVIDIA/TensorRT/issues/3659 (open). The reported model has 4 inputs, an INT64 initializer
that the parser casts down to INT32, and ``OnnxParserFlag.NATIVE_INSTANCENORM`` set; the build log is full of
"Missing scale and zero-point for tensor ... expect fall back to non-int8 implementation" for Constant and Shuffle
layers. Its layer names are not in the thread, so ours are torch.onnx-style names of our own: each input ``image_<i>``
goes through branch ``branch_<i>`` (Conv -> InstanceNormalization -> Relu), the branches are summed with Add, and a
Reshape with an INT64 shape initializer flattens the spatial axes.
"""
from __future__ import annotations

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Match, Tolerance, Variant
from harness.tensorrt.signatures import KnownForm
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3659"

CHANNELS = 16
SIZE = 16
SHAPE_INITIALIZER = "flatten_shape"
REPORTED = {"inputs": 4, "int64_reshape": True}
# Pointwise activations a branch may end in after the normalization (the reported branch has Relu).
ACTIVATIONS = ("Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Elu", "Selu", "Clip")

FALLBACK_CLAIM = Claim(
    target="trt86-x86",
    outcome="fallback",
    source=ISSUE,
    strength="write-up-only",
    conditions=Conditions(support="one-report"),
    note=(
        "The thread shows INT64 -> INT32 cast warnings and 'Missing scale and zero-point ... fall back to non-int8' "
        "for Constant and Shuffle layers; the TensorRT version (8.6.1) and the advice to try 9.2/9.3 come from a "
        "write-up only. The warnings name constants and shuffles, not the convs: convs observed in INT8 do not "
        "contradict the log. The thread's CUDA memcpy 'invalid argument' came from the user's own calibrator."
    ),
)


def _instancenorm_params(prefix: str, channels: int) -> list[gs.Constant]:
    """InstanceNormalization per-channel scale and B, named like torch parameters."""
    rng = g.rng_for(prefix)
    return [
        gs.Constant(f"{prefix}.weight", rng.uniform(0.8, 1.2, size=channels).astype(np.float32)),
        gs.Constant(f"{prefix}.bias", rng.uniform(-0.1, 0.1, size=channels).astype(np.float32)),
    ]


class InstanceNorm(Case):
    id = "s2-instancenorm"
    title = "Multi-input Conv + InstanceNormalization + ReLU with an INT64 Reshape, implicit INT8"
    pattern = "S2"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownForm(
            id="unnamed-constant-shuffle-missing-scale", kind="missing-scale",
            form=(r"(?:Missing scale and zero-point|Missing dynamic range) for tensor "
                  r"\(Unnamed Layer\* \d+\) \[(?:Constant|Shuffle)\]_output"),
            source="https://github.com/NVIDIA/TensorRT/issues/3659",
            note=("TensorRT's own Constant and Shuffle layers without INT8 scales, as S2 reports: those tensors stay in "
                  "float; any model whose parser added such layers shows it"),
            example=("[TensorRT] WARNING: Missing dynamic range for tensor (Unnamed Layer* 12) [Shuffle]_output, expect fall back "
                     "to non-int8 implementation for any layer consuming or producing given tensor")),
    )
    links = (ISSUE,)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=2.5,
        reason=(
            "Implicit INT8 against the FP32 reference. InstanceNormalization rescales every channel to unit variance, "
            "so each branch output lies in about [0, 4] whatever the input scale, and the sum of 4 branches in about "
            "[0, 10]. The largest errors are tail values clipped by the calibrated range: fake-quantizing every "
            "activation with a 99.9th-percentile range gave at most 2.24 off (4 inputs) and cosine > 0.999, so 2.5 "
            "(a quarter of the range) flags wrong results, not clipping; the cosine flags drift."
        ),
    )
    variants = (
        Variant(
            name="as-reported",
            role="failing",
            description="4 inputs, INT64 Reshape shape initializer, native InstanceNormalization (parser flag on).",
            params=REPORTED,
            knobs=Knobs(native_instancenorm=True),
            claims=(FALLBACK_CLAIM,),
        ),
        Variant(
            name="plugin-instancenorm",
            role="sweep",
            # The parser's InstanceNormalization plugin: another implementation of the layer
            varies="as-reported", inherits=False,
            description="As reported, with the parser's InstanceNormalization plugin (NATIVE_INSTANCENORM off).",
            params=REPORTED,
            knobs=Knobs(native_instancenorm=False),
        ),
        Variant(
            name="no-int64-reshape",
            role="sweep",
            varies="as-reported", inherits=False,  # Without the Reshape: other ops
            description="As reported, without the Reshape and so without any INT64 initializer.",
            params={**REPORTED, "int64_reshape": False},
            knobs=Knobs(native_instancenorm=True),
        ),
        Variant(
            name="inputs-2",
            role="sweep",
            varies="as-reported", inherits=False,  # Two branches fewer: other ops and edges
            description="As reported, with 2 inputs and branches.",
            params={**REPORTED, "inputs": 2},
            knobs=Knobs(native_instancenorm=True),
        ),
        Variant(
            name="inputs-1",
            role="sweep",
            varies="as-reported", inherits=False,  # A single branch and no Add: other ops and edges
            description="As reported, with a single input and branch (no Add).",
            params={**REPORTED, "inputs": 1},
            knobs=Knobs(native_instancenorm=True),
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=InstanceNorm.id, opset=InstanceNorm.opset)
        branches, convs = [], []
        for i in range(p["inputs"]):
            image = g.graph_input(f"image_{i}", (1, 3, SIZE, SIZE))
            graph.inputs.append(image)
            scope = f"/branch_{i}"
            weight = g.conv_weight(f"branch_{i}.conv.weight", (CHANNELS, 3, 3, 3))
            conv_bias = g.bias(f"branch_{i}.conv.bias", CHANNELS)
            y = g.torch_node(graph, "Conv", f"{scope}/conv", [image, weight, conv_bias], g.conv_attrs(3, pad=1))
            norm_params = _instancenorm_params(f"branch_{i}.norm", CHANNELS)
            y = g.torch_node(graph, "InstanceNormalization", f"{scope}/norm", [y, *norm_params], {"epsilon": 1e-5})
            branches.append(g.torch_node(graph, "Relu", f"{scope}/act", [y]))
            convs.append(f"{scope}/conv/Conv")
        y = branches[0]
        for i, branch in enumerate(branches[1:]):
            name = "/Add" if i == 0 else f"/Add_{i}"  # torch.onnx numbers repeated ops of one scope
            y = g.node(graph, "Add", name, [y, branch], f"{name}_output_0")
        shape = (1, CHANNELS, SIZE, SIZE)
        if p["int64_reshape"]:
            shape = (1, CHANNELS, SIZE * SIZE)
            shape_initializer = gs.Constant(SHAPE_INITIALIZER, np.array(shape, dtype=np.int64))
            y = g.node(graph, "Reshape", "/Reshape", [y, shape_initializer], "/Reshape_output_0")
        g.mark_output(graph, y, shape)
        # Only the convs: whether InstanceNormalization (plugin or native layer) has INT8 kernels at all is not
        # documented, and the thread's fallback warnings concern the Constant/Shuffle layers, not the convs.
        return Built(graph, expected_int8=tuple(convs))

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every InstanceNormalization of an implicit-INT8 model (no Q/DQ), with the Conv before it and the pointwise
        activation after it when there are; the variant is chosen by the model's input count and INT64 Reshape."""
        if m.has_qdq(graph):
            return []
        norms = list(m.nodes_of(graph, "InstanceNormalization"))
        if not norms:
            return []
        inputs = sum(not m.is_constant(t) for t in graph.inputs)
        params = {"inputs": inputs, "int64_reshape": _has_int64_reshape(graph)}
        variant, differences = m.nearest_variant(InstanceNorm.variants, params)
        note = (f"InstanceNormalization in an implicit-INT8 model with {inputs} input(s) and "
                f"{'an' if params['int64_reshape'] else 'no'} INT64 Reshape shape")
        if differences:
            note += "; nearest library variant differs in " + ", ".join(differences)
        found = []
        for norm in norms:
            conv = m.producer(norm.inputs[0])
            activation = m.only_consumer(norm.outputs[0])
            nodes = [norm]
            if conv is not None and conv.op == "Conv":
                nodes.append(conv)
            if activation is not None and activation.op in ACTIVATIONS:
                nodes.append(activation)
            found.append(Match(case=InstanceNorm.id, nodes=tuple(n.name for n in nodes), variant=variant.name,
                               note=note))
        return found


def _has_int64_reshape(graph) -> bool:
    """A Reshape whose shape is an INT64 constant (the parser casts it down to INT32, as the thread's log warns)."""
    for reshape in m.nodes_of(graph, "Reshape"):
        shape = reshape.inputs[1] if len(reshape.inputs) > 1 else None
        if shape is not None and m.is_constant(shape) and getattr(shape, "dtype", None) == np.int64:
            return True
    return False
