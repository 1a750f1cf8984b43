"""P7: the attention block under implicit PTQ (native and decomposed LayerNorm) and explicit Q/DQ, and the matcher."""
from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p7_transformer_block import ATTN, MATMULS
from cases.p7_transformer_block import TransformerBlock as P7

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
ATTENTION = ["MatMul", "MatMul", "MatMul", "Transpose", "MatMul", "Softmax", "MatMul"]
DECOMPOSED_LN = ["ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"]
EXPLICIT = ["LayerNormalization", *QDQ, DQ, "MatMul", DQ, "MatMul", DQ, "MatMul", "Transpose", *QDQ, *QDQ, "MatMul",
            "Softmax", *QDQ, *QDQ, "MatMul"]
OPS = {
    "implicit-ln17": ["LayerNormalization", *ATTENTION],
    "explicit-qdq": EXPLICIT,
    "explicit-qdq-strongly-typed": EXPLICIT,
    "implicit-decomposed-ln": [*DECOMPOSED_LN, *ATTENTION],
    "implicit-ln17-fp16": ["LayerNormalization", *ATTENTION],
    "implicit-ln17-minmax": ["LayerNormalization", *ATTENTION],
    "implicit-ln17-batch-4": ["LayerNormalization", *ATTENTION],
}


variant = P7.variant


def by_name(name):
    return {n.name: n for n in P7.build(variant(name)).graph.nodes}


def test_declaration():
    assert (P7.pattern, P7.mode, P7.opset) == ("P7", "implicit-int8", 17)
    assert "https://github.com/NVIDIA/TensorRT/issues/2485" in P7.links
    assert "says nothing about TensorRT" in P7.backend_notes["onnxruntime"]


@pytest.mark.parametrize("v", P7.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P7.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P7.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P7, v)
    assert model.opset_import[0].version == P7.opset_of(v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_modes_opsets_and_knobs():
    assert {v.name: (P7.mode_of(v), P7.opset_of(v)) for v in P7.variants} == {
        "implicit-ln17": ("implicit-int8", 17), "explicit-qdq": ("explicit-qdq", 17),
        "explicit-qdq-strongly-typed": ("explicit-qdq", 17), "implicit-decomposed-ln": ("implicit-int8", 13),
        "implicit-ln17-fp16": ("implicit-int8", 17), "implicit-ln17-minmax": ("implicit-int8", 17),
        "implicit-ln17-batch-4": ("implicit-int8", 17),
    }
    assert variant("explicit-qdq-strongly-typed").knobs.strongly_typed
    assert variant("implicit-ln17-fp16").knobs.fp16 and variant("implicit-ln17-minmax").knobs.calibrator == "minmax"


@pytest.mark.parametrize("v", P7.variants, ids=lambda v: v.name)
def test_attention_wiring(v):
    nodes = by_name(v.name)
    q, k, val = (nodes[f"{ATTN}/{x}/MatMul"] for x in "qkv")
    transpose, scores, softmax, context = (nodes[f"{ATTN}/{x}"] for x in ("Transpose", "MatMul", "Softmax",
                                                                          "MatMul_1"))

    def source(tensor):  # the node behind a tensor, skipping one Q/DQ pair
        node = tensor.inputs[0]
        return node.inputs[0].inputs[0].inputs[0].inputs[0] if node.op == DQ else node

    assert transpose.attrs == {"perm": [0, 2, 1]} and source(transpose.inputs[0]) is k
    assert source(scores.inputs[0]) is q and source(scores.inputs[1]) is transpose
    assert softmax.inputs == scores.outputs and softmax.attrs == {"axis": -1}
    assert source(context.inputs[0]) is softmax and source(context.inputs[1]) is val
    norm = q.inputs[0]
    assert norm is k.inputs[0] is val.inputs[0]  # one normalized tensor feeds q, k and v
    assert P7.build(v).expected_int8 == MATMULS
    shape = (v.params["batch"], 64, 32)
    graph = P7.build(v).graph
    assert graph.inputs[0].shape == shape and graph.outputs[0].shape == shape


def test_explicit_qdq_sits_on_every_matmul_input_and_nowhere_in_implicit_variants():
    nodes = by_name("explicit-qdq")
    for name in MATMULS:
        for tensor in nodes[name].inputs:
            assert tensor.inputs[0].op == DQ, (name, tensor.name)
    weight_dq = nodes[f"{ATTN}/q/MatMul"].inputs[1].inputs[0]
    assert weight_dq.attrs == {"axis": 1} and weight_dq.inputs[0].values.dtype.name == "int8"
    for v in P7.variants:
        if P7.mode_of(v) == "implicit-int8":
            assert not any(n.op in (Q, DQ) for n in P7.build(v).graph.nodes)


def test_claims():
    claims = {c.target: c for c in variant("implicit-ln17").claims}
    assert set(claims) == {"trt86-x86", "trt85-orin"}
    assert (claims["trt86-x86"].outcome, claims["trt86-x86"].strength) == ("fallback", "issue-thread")
    assert (claims["trt85-orin"].outcome, claims["trt85-orin"].strength) == ("unsupported", "documentation")
    assert all(not v.claims for v in P7.variants if v.name != "implicit-ln17")


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("implicit-ln17", "implicit-ln17"), ("explicit-qdq", "explicit-qdq"),
    ("implicit-decomposed-ln", "implicit-decomposed-ln"), ("implicit-ln17-batch-4", "implicit-ln17"),
])
def test_find_names_the_form(user_graph, name, expected):
    (match,) = P7.find(user_graph(P7, variant(name)))
    assert match.case == P7.id and match.variant == expected
    assert match.nodes[:3] == (f"{ATTN}/Softmax", f"{ATTN}/MatMul", f"{ATTN}/MatMul_1")
    # the norm the form was read from: the LayerNormalization, or the ReduceMean that starts its decomposition
    norm = "ReduceMean" if expected == "implicit-decomposed-ln" else "LayerNormalization"
    assert match.nodes[3:] == (f"/blocks.0/norm1/{norm}",)


@pytest.mark.parametrize("name", ["implicit-ln17", "implicit-decomposed-ln"])
def test_find_reads_the_form_from_a_norm_however_far_upstream(user_graph, name):
    """A ViT's in-projection, bias Add, reshapes and q/k/v Gathers put its LayerNorm 40 nodes above the score MatMul:
    the form follows the norm, not a window (issue 28: an opset-17 ViT was named implicit-decomposed-ln)."""
    graph = user_graph(P7, variant(name))
    norm_out = next(n for n in graph.nodes if n.name.startswith("/blocks.0/norm1/") and (
        n.op == "LayerNormalization" or n.name.endswith("Add_1"))).outputs[0]
    readers = list(norm_out.outputs)
    tensor = norm_out
    for index in range(40):
        out = gs.Variable(f"far_{index}")
        graph.nodes.append(gs.Node("Identity", f"far_{index}", inputs=[tensor], outputs=[out]))
        tensor = out
    for reader in readers:
        reader.inputs[reader.inputs.index(norm_out)] = tensor
    graph.toposort()
    (match,) = P7.find(graph)
    assert match.variant == name


def test_find_names_no_form_without_a_norm_upstream(user_graph):
    graph = user_graph(P7, variant("implicit-ln17"))
    norm = next(n for n in graph.nodes if n.op == "LayerNormalization")
    for reader in list(norm.outputs[0].outputs):  # the projections read the tokens directly
        reader.inputs[reader.inputs.index(norm.outputs[0])] = norm.inputs[0]
    graph.cleanup()
    (match,) = P7.find(graph)
    assert match.variant is None and len(match.nodes) == 3


def test_find_works_on_any_node_names(user_graph):
    (match,) = P7.find(user_graph(P7, variant("explicit-qdq"), rename=True))
    assert match.variant == "explicit-qdq" and all(n.startswith("user_node_") for n in match.nodes)


def test_find_nothing_without_attention(fp32_conv_relu_graph, user_graph):
    assert P7.find(fp32_conv_relu_graph) == []
    graph = user_graph(P7, variant("implicit-ln17"))
    softmax = next(n for n in graph.nodes if n.op == "Softmax")
    softmax.op = "Relu"  # no Softmax between the MatMuls: not an attention core
    softmax.attrs.clear()
    assert P7.find(graph) == []
