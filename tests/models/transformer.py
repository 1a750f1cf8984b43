"""A small pre-norm transformer encoder block: LayerNormalization, multi-head self-attention (4 heads, INT64
Reshapes), a GELU MLP (Erf), two residual Adds. Input 1x16x64 tokens. No S pattern applies to it (S5 needs
convolutions): a scan must not raise a false alarm on its Q/DQ residual Adds."""
from __future__ import annotations

import numpy as np
import onnx

from tests.models.layers import Net

TOKENS, WIDTH, HEADS = 16, 64, 4


def build(qdq: bool) -> onnx.ModelProto:
    net = Net(f"transformer{'-qdq' if qdq else ''}", 17, qdq)
    x = net.input("tokens", (1, TOKENS, WIDTH))
    y = _layernorm(net, x, "/block/ln1", "block.ln1")
    heads = net.const("/block/attn/heads_shape", [1, TOKENS, HEADS, WIDTH // HEADS], np.int64)
    q, k, v = (net.node("Transpose", f"/block/attn/{n}", [net.node("Reshape", f"/block/attn/{n}", [
        net.linear(y, f"/block/attn/{n}_proj", f"block.attn.{n}_proj", WIDTH, WIDTH), heads])],
        {"perm": [0, 2, 1, 3]}) for n in "qkv")
    k_t = net.node("Transpose", "/block/attn/k_t", [k], {"perm": [0, 1, 3, 2]})
    scores = net.node("MatMul", "/block/attn/scores", [net.quantize(q, "/block/attn/q_quantizer"),
                                                       net.quantize(k_t, "/block/attn/k_quantizer")])
    scores = net.node("Div", "/block/attn/scale", [scores, net.const("/block/attn/sqrt_d", np.sqrt(WIDTH // HEADS))])
    probs = net.node("Softmax", "/block/attn", [scores], {"axis": -1})
    context = net.node("MatMul", "/block/attn/context", [net.quantize(probs, "/block/attn/p_quantizer"),
                                                         net.quantize(v, "/block/attn/v_quantizer")])
    context = net.node("Transpose", "/block/attn/merge", [context], {"perm": [0, 2, 1, 3]})
    tokens_shape = net.const("/block/attn/tokens_shape", [1, TOKENS, WIDTH], np.int64)
    context = net.node("Reshape", "/block/attn/merge", [context, tokens_shape])
    x = net.node("Add", "/block/residual1", [x, net.linear(context, "/block/attn/out_proj", "block.attn.out_proj",
                                                           WIDTH, WIDTH)])
    y = _layernorm(net, x, "/block/ln2", "block.ln2")
    y = net.act(net.linear(y, "/block/mlp/fc1", "block.mlp.fc1", WIDTH, 4 * WIDTH), "/block/mlp/act", "gelu")
    y = net.linear(y, "/block/mlp/fc2", "block.mlp.fc2", 4 * WIDTH, WIDTH)
    net.output(net.node("Add", "/block/residual2", [x, y]))
    return net.model()


def _layernorm(net, x, scope, param):
    scale = net.const(f"{param}.weight", np.ones(WIDTH))
    shift = net.const(f"{param}.bias", np.zeros(WIDTH))
    return net.node("LayerNormalization", scope, [x, scale, shift], {"axis": -1, "epsilon": 1e-5})


def expected(qdq: bool) -> dict[str, list[tuple[str, str]]]:
    return {}
