"""A small ViT as torch.onnx exports one with a dynamic batch and image size (timm's ``dynamic_img_size``): an 8x8
patch-embedding Conv, the learned 4x4 grid of position embeddings resized (bicubic) to the image's own grid, whose
side is computed from the token count (Shape, Gather, Cast, Sqrt, Cast back: ``int(math.sqrt(N))``), then a pre-norm
encoder block (LayerNormalization, 4-head self-attention through INT64 Reshapes built from Shape, a GELU MLP) and a
final LayerNormalization. FP32, no Q/DQ; input ``images`` batch x 3 x height x width.

ONNX Runtime's symbolic shape inference cannot follow the Sqrt: the resized grid gets dimensions of its own, and the
Add of tokens and position embeddings then broadcasts two unrelated symbolic dimensions, where it stops ("Incomplete
symbolic shape inference"), as it does on ViTs, Swins and detectors exported this way."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from tests.models.layers import Net

PATCH, GRID, WIDTH, HEADS = 8, 4, 32, 4
SIZE = PATCH * GRID


def build() -> onnx.ModelProto:
    net = Net("vit-dynamic", 17, qdq=False)
    images = net.input("images", ("batch", 3, "height", "width"))
    i64 = lambda name, value: net.const(name, value, np.int64)  # noqa: E731
    x = net.conv(images, "/patch_embed/proj", "patch_embed.proj", 3, WIDTH, k=PATCH, stride=PATCH)
    x = net.node("Transpose", "/patch_embed", [net.node("Reshape", "/patch_embed", [
        x, i64("/patch_embed/flat_shape", [0, WIDTH, -1])])], {"perm": [0, 2, 1]})
    shape = net.node("Shape", "/blocks", [x])
    batch, tokens = (net.node("Gather", f"/blocks/{name}", [shape, i64(f"/blocks/{name}_index", index)],
                              {"axis": 0}) for name, index in (("batch", 0), ("tokens", 1)))
    count = net.node("Cast", "/pos_embed/count", [tokens], {"to": onnx.TensorProto.FLOAT})
    side = net.node("Cast", "/pos_embed/side", [net.node("Sqrt", "/pos_embed", [count])], {"to": onnx.TensorProto.INT64})
    side = net.node("Unsqueeze", "/pos_embed/side", [side, i64("/pos_embed/axes", [0])])
    grid = net.const("pos_embed", np.random.default_rng(0).normal(0, 0.02, (1, GRID, GRID, WIDTH)))
    grid = net.node("Transpose", "/pos_embed/grid", [grid], {"perm": [0, 3, 1, 2]})
    sizes = net.node("Concat", "/pos_embed/sizes", [i64("/pos_embed/lead", [1, WIDTH]), side, side], {"axis": 0})
    resized = net.node("Resize", "/pos_embed", [grid, gs.Variable.empty(), gs.Variable.empty(), sizes],
                       {"mode": "cubic"})
    position = net.node("Reshape", "/pos_embed/flat", [
        net.node("Transpose", "/pos_embed/flat", [resized], {"perm": [0, 2, 3, 1]}),
        i64("/pos_embed/flat_shape", [1, -1, WIDTH])])
    x = net.node("Add", "/pos_drop", [x, position])
    x = _block(net, x, batch, tokens, i64)
    net.output(_layernorm(net, x, "/norm", "norm"))
    return net.model()


def _block(net, x, batch, tokens, i64):
    unsqueeze = lambda v, name: net.node("Unsqueeze", name, [v, i64(f"{name}/axes", [0])])  # noqa: E731
    lead = [unsqueeze(batch, "/blocks/attn/batch"), unsqueeze(tokens, "/blocks/attn/tokens")]
    heads = net.node("Concat", "/blocks/attn/heads_shape", [*lead, i64("/blocks/attn/heads", [HEADS, -1])],
                     {"axis": 0})
    y = _layernorm(net, x, "/blocks/norm1", "blocks.norm1")
    q, k, v = (net.node("Transpose", f"/blocks/attn/{n}", [net.node("Reshape", f"/blocks/attn/{n}", [
        net.linear(y, f"/blocks/attn/{n}_proj", f"blocks.attn.{n}_proj", WIDTH, WIDTH), heads])],
        {"perm": [0, 2, 1, 3]}) for n in "qkv")
    k_t = net.node("Transpose", "/blocks/attn/k_t", [k], {"perm": [0, 1, 3, 2]})
    scores = net.node("Div", "/blocks/attn/scale", [net.node("MatMul", "/blocks/attn/scores", [q, k_t]),
                                                   net.const("/blocks/attn/sqrt_d", np.sqrt(WIDTH // HEADS))])
    context = net.node("MatMul", "/blocks/attn/context", [net.node("Softmax", "/blocks/attn", [scores],
                                                                   {"axis": -1}), v])
    merged = net.node("Concat", "/blocks/attn/merge_shape", [*lead, i64("/blocks/attn/width", [WIDTH])], {"axis": 0})
    context = net.node("Reshape", "/blocks/attn/merge", [
        net.node("Transpose", "/blocks/attn/merge", [context], {"perm": [0, 2, 1, 3]}), merged])
    x = net.node("Add", "/blocks/residual1", [x, net.linear(context, "/blocks/attn/proj", "blocks.attn.proj", WIDTH,
                                                            WIDTH)])
    y = _layernorm(net, x, "/blocks/norm2", "blocks.norm2")
    y = net.act(net.linear(y, "/blocks/mlp/fc1", "blocks.mlp.fc1", WIDTH, 2 * WIDTH), "/blocks/mlp/act", "gelu")
    return net.node("Add", "/blocks/residual2", [x, net.linear(y, "/blocks/mlp/fc2", "blocks.mlp.fc2", 2 * WIDTH,
                                                                WIDTH)])


def _layernorm(net, x, scope, param):
    return net.node("LayerNormalization", scope, [x, net.const(f"{param}.weight", np.ones(WIDTH)),
                                                  net.const(f"{param}.bias", np.zeros(WIDTH))],
                    {"axis": -1, "epsilon": 1e-6})
