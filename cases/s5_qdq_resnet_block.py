"""S5: a pytorch-quantization (explicit Q/DQ) ResNet BasicBlock: "Cuda Runtime (operation not supported)".

Upstream: https://github.com/NVIDIA/TensorRT/issues/3980 (closed, no root cause). The verbose log fuses
``backbone_2d.stage_4.1.conv2.weight + /backbone_2d/stage_4/stage_4.1/conv2/_weight_quantizer/QuantizeLinear +
/backbone_2d/stage_4/stage_4.1/conv2/Conv`` with ``/backbone_2d/stage_4/stage_4.1/Add +
/backbone_2d/stage_4/stage_4.1/act_1/Relu`` (ConvEltwiseSumFusion), then fails in ``deallocateAsync``. Names follow
that log: pytorch-quantization's ``_input_quantizer``/``_weight_quantizer`` per QuantConv2d, torch.onnx scopes, and
``act``/``act_1`` for the block's one ReLU module called twice. ``bn1``/``bn2``, ``downsample.0/1`` and
``residual_quantizer`` are the names of pytorch-quantization's quantized torchvision ResNet (``RESNET_EXAMPLE``); the
log does not show them.

BasicBlock: Q/DQ -> Conv -> BN -> ReLU -> Q/DQ -> Conv -> BN -> Add(identity) -> ReLU, identity = Conv1x1(stride 2)
-> BN in a down-sampling block, optionally through a residual quantizer (Q/DQ) before the Add. BatchNormalization
stays a node as in the pattern. The log's block, stage_4.1, does not down-sample; the down-sampling variants use
stage_4.0, the block of a stage that down-samples in ResNet-style stages.
"""
from __future__ import annotations


from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Match, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3980"
RESNET_EXAMPLE = (
    "https://github.com/NVIDIA/TensorRT/blob/release/8.6/tools/pytorch-quantization/examples/torchvision/models/"
    "classification/resnet.py"
)

SIZE = 16
# How far back from the block's last conv the matcher looks for the block input (the identity shortcut's source).
BLOCK_REACH = 12
CHANNELS = 32  # channel count not in the log: small enough for the reference evaluator
DOWNSAMPLE_IN_CHANNELS = 16

CUDA_RUNTIME_CLAIM = Claim(
    target="trt100-x86",
    outcome="fail",
    category="cuda-runtime",
    source=ISSUE,
    strength="issue-thread",
    note=(
        "TensorRT 10.0.1, RTX A6000, driver 470.129.06, CUDA 11.8, opset 13: repeated 'Cuda Runtime (operation not "
        "supported)' from defaultAllocator.cpp::deallocateAsync. Unconfirmed hypothesis: that old driver does not "
        "support stream-ordered allocation (cudaFreeAsync), so a current driver may not reproduce it. Whether the "
        "reporter's model had residual quantizers is not known."
    ),
    conditions=Conditions(
        support="one-report", gpu="8.6", gpu_name="RTX A6000", driver="470.129.06",
        environment="the allocator: 'Cuda Runtime (operation not supported)' from cudaFreeAsync in "
                    "defaultAllocator.cpp::deallocateAsync, CUDA 11.8 on a 470 driver",
    ),
)


def _block_scope(downsample: bool) -> tuple[str, str]:
    """The torch.onnx scope and the parameter prefix of the block."""
    index = 0 if downsample else 1
    return f"/backbone_2d/stage_4/stage_4.{index}", f"backbone_2d.stage_4.{index}"


def _quant_conv(graph, x, scope: str, prefix: str, shape: tuple[int, ...], stride: int) -> gs.Variable:
    """A pytorch-quantization QuantConv2d without bias: input and per-channel (axis 0) weight Q/DQ, then Conv."""
    x_dq = g.torch_fake_quantize(graph, x, f"{scope}/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
    weight = g.conv_weight(f"{prefix}.weight", shape)
    w_dq = g.torch_fake_quantize(
        graph, weight, f"{scope}/_weight_quantizer", g.per_channel_scale(weight.values), axis=0
    )
    kernel = shape[-1]
    return g.torch_node(graph, "Conv", scope, [x_dq, w_dq], g.conv_attrs(kernel, stride=stride, pad=kernel // 2))


def _batchnorm(graph, x, scope: str, prefix: str, channels: int) -> gs.Variable:
    return g.torch_node(
        graph, "BatchNormalization", scope, [x, *g.batchnorm_params(prefix, channels)], {"epsilon": 1e-5}
    )


class QdqResnetBlock(Case):
    id = "s5-qdq-resnet-block"
    title = "pytorch-quantization Q/DQ ResNet BasicBlock (residual Add fused into the conv)"
    pattern = "S5"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="cuda-runtime-operation-not-supported", category="cuda-runtime",
            message=r"Cuda Runtime \(operation not supported\)",
            source="https://github.com/NVIDIA/TensorRT/issues/3980",
            example="[defaultAllocator.cpp::deallocateAsync::64] Error Code 1: Cuda Runtime (operation not supported)"),
    )
    links = (ISSUE, RESNET_EXAMPLE)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=2 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph: INT8 convs multiply the same integers; "
            "TensorRT folds BN into the conv scales, so a re-quantized activation can round a tie the other way, "
            "moving an output by one activation step times |w| (|w| < 2 here): 2 activation steps."
        ),
    )
    variants = (
        Variant(
            name="identity-shortcut-residual-quantizer",
            role="failing",
            description="stage_4.1: 32 channels, 16x16, identity shortcut through a residual quantizer into the Add "
            "(whether the reporter's model had one is not known).",
            params={"downsample": False, "residual_quantizer": True},
            claims=(CUDA_RUNTIME_CLAIM,),
        ),
        Variant(
            name="identity-shortcut",
            role="sweep",
            # No residual quantizer: another Q/DQ placement
            varies="identity-shortcut-residual-quantizer", inherits=False,
            description="stage_4.1 without the residual quantizer: the Add's identity input is float.",
            params={"downsample": False, "residual_quantizer": False},
        ),
        Variant(
            name="downsample-shortcut-residual-quantizer",
            role="sweep",
            varies="identity-shortcut-residual-quantizer", inherits=False,  # A Conv -> BN shortcut: other ops
            description="stage_4.0: 16 -> 32 channels, stride 2, shortcut Conv1x1(stride 2) -> BN through a residual "
            "quantizer.",
            params={"downsample": True, "residual_quantizer": True},
        ),
        Variant(
            name="downsample-shortcut",
            role="sweep",
            # A Conv -> BN shortcut and no residual quantizer: other ops and Q/DQ placement
            varies="identity-shortcut-residual-quantizer", inherits=False,
            description="stage_4.0 with the Conv1x1 -> BN shortcut and no residual quantizer.",
            params={"downsample": True, "residual_quantizer": False},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        scope, prefix = _block_scope(p["downsample"])
        in_channels = DOWNSAMPLE_IN_CHANNELS if p["downsample"] else CHANNELS
        stride = 2 if p["downsample"] else 1
        graph = gs.Graph(name=QdqResnetBlock.id, opset=QdqResnetBlock.opset)
        x = g.graph_input("input", (1, in_channels, SIZE, SIZE))
        graph.inputs.append(x)

        y = _quant_conv(graph, x, f"{scope}/conv1", f"{prefix}.conv1", (CHANNELS, in_channels, 3, 3), stride)
        y = _batchnorm(graph, y, f"{scope}/bn1", f"{prefix}.bn1", CHANNELS)
        y = g.torch_node(graph, "Relu", f"{scope}/act", [y])
        y = _quant_conv(graph, y, f"{scope}/conv2", f"{prefix}.conv2", (CHANNELS, CHANNELS, 3, 3), 1)
        y = _batchnorm(graph, y, f"{scope}/bn2", f"{prefix}.bn2", CHANNELS)

        convs = [f"{scope}/conv1/Conv", f"{scope}/conv2/Conv"]
        identity = x
        if p["downsample"]:
            ds_scope, ds_prefix = f"{scope}/downsample/downsample.0", f"{prefix}.downsample.0"
            identity = _quant_conv(graph, x, ds_scope, ds_prefix, (CHANNELS, in_channels, 1, 1), stride)
            identity = _batchnorm(
                graph, identity, f"{scope}/downsample/downsample.1", f"{prefix}.downsample.1", CHANNELS
            )
            convs.append(f"{ds_scope}/Conv")
        if p["residual_quantizer"]:
            identity = g.torch_fake_quantize(graph, identity, f"{scope}/residual_quantizer", g.UNIT_ACTIVATION_SCALE)
        y = g.torch_node(graph, "Add", scope, [y, identity])
        out_size = SIZE // stride
        g.mark_output(graph, g.torch_node(graph, "Relu", f"{scope}/act_1", [y]), (1, CHANNELS, out_size, out_size))
        # The convs: the Add and the final ReLU fuse into conv2 (the log's ConvEltwiseSumFusion), BN folds into its
        # conv, so the convs' precision is what the engine shows.
        return Built(graph, expected_int8=tuple(convs))

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every residual Add of Q/DQ convs: one input a quantized Conv (through BatchNormalization or not), the other
        the block input (identity shortcut, through a residual Q/DQ or not) or a quantized Conv of the block input
        (down-sampling shortcut); the main branch back to the block input, and a ReLU after the Add, are included."""
        found = []
        for add in m.nodes_of(graph, "Add"):
            block = _residual_block(add)
            if block is not None:
                found.append(_match(graph, add, *block))
        return found


def _branch_conv(tensor):
    """(quantized Conv, BatchNormalizations walked through) when ``tensor`` comes from one, else None."""
    conv, batchnorms = m.producer_skipping(tensor, "BatchNormalization")
    return (conv, batchnorms) if conv is not None and m.is_quantized_conv(conv) else None


def _residual_block(add):
    """(main conv, its BNs, path from the block input, shortcut nodes, downsample, residual quantizer) or None."""
    if len(add.inputs) != 2 or any(m.is_constant(t) for t in add.inputs):
        return None
    for main_input, shortcut_input in (add.inputs, add.inputs[::-1]):
        main = _branch_conv(main_input)
        if main is None:
            continue
        conv, batchnorms = main
        shortcut, residual_quantizer = m.through_qdq(shortcut_input)
        downsample = _branch_conv(shortcut)
        # A quantized Conv on the shortcut is a down-sampling shortcut when it reads the block's input; when it does
        # not, it is the previous block's last layer (MobileNetV2 ends a block with Conv + BN, no ReLU) and the
        # shortcut is the identity.
        for downsample in ((downsample, None) if downsample is not None else (None,)):
            if downsample is not None:
                ds_conv, ds_batchnorms = downsample
                block_input = m.through_qdq(ds_conv.inputs[0])[0]
                shortcut_nodes = [*residual_quantizer, *ds_batchnorms, ds_conv,
                                  *m.quantizer_before(ds_conv.inputs[0]), *m.quantizer_before(ds_conv.inputs[1])]
            else:
                block_input, shortcut_nodes = shortcut, list(residual_quantizer)
            path = m.path_between(block_input, conv.inputs[0], BLOCK_REACH)
            if path is not None and not (downsample is not None and downsample[0] in path):
                break
        else:
            continue
        return conv, batchnorms, path, shortcut_nodes, downsample is not None, bool(residual_quantizer)
    return None


def _match(graph, add, conv, batchnorms, path, shortcut_nodes, downsample: bool, residual_quantizer: bool) -> Match:
    params = {"downsample": downsample, "residual_quantizer": residual_quantizer}
    variant, _ = m.nearest_variant(QdqResnetBlock.variants, params, required=tuple(params))
    relu = m.only_consumer(add.outputs[0])
    after = [relu] if relu is not None and relu.op == "Relu" else []
    main_branch = [*path, conv, *batchnorms]
    weight_quantizers = [q for n in main_branch if n.op == "Conv" for q in m.quantizer_before(n.inputs[1])]
    nodes = [add, *main_branch, *weight_quantizers, *shortcut_nodes, *after]
    names = tuple(dict.fromkeys(n.name for n in nodes))
    shortcut = "a down-sampling Q/DQ conv" if downsample else "the block input"
    quantizer = "through" if residual_quantizer else "without"
    note = f"residual Add of a Q/DQ conv and {shortcut} ({quantizer} a residual quantizer)"
    if not after:
        note += "; no ReLU after the Add (the reported block fuses Add + ReLU into the conv)"
    return Match(case=QdqResnetBlock.id, nodes=names, variant=variant.name, note=note)
