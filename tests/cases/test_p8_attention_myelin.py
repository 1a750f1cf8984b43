"""P8: a pre-norm attention block (LayerNorm, MatMul, Softmax, MatMul) as torch.onnx exports it, its Q/DQ workaround and
its sweeps, and the matcher that finds the block in a user's model."""
from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p8_attention_myelin import MATMULS, AttentionMyelin
from cases.p9_topk_head import TopkHead

# In exported (topologically sorted) order: the three projections, their biases, then k^T, q k^T, scale, Softmax, @ v,
# the output projection and the residual Add.
ATTENTION_OPS = ["MatMul", "MatMul", "MatMul", "Add", "Add", "Add", "Transpose", "MatMul", "Mul", "Softmax", "MatMul",
                 "MatMul", "Add", "Add"]
DECOMPOSED_LAYERNORM = ["ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"]


variant = AttentionMyelin.variant


def model_of(name) -> onnx.ModelProto:
    return export_model(AttentionMyelin, variant(name))[0]


def graph_of(name) -> gs.Graph:
    """The variant as a user's exported model reads in onnx-graphsurgeon (what the scanner's matchers see)."""
    return gs.import_onnx(model_of(name))


def ops(name) -> list[str]:
    return [node.op_type for node in model_of(name).graph.node]


def node(graph, name):
    return next(n for n in graph.nodes if n.name == name)


def test_declaration():
    assert (AttentionMyelin.pattern, AttentionMyelin.mode, AttentionMyelin.opset) == ("P8", "implicit-int8", 17)
    assert "https://github.com/NVIDIA/TensorRT/issues/3972" in AttentionMyelin.links
    assert "Q/DQ" in AttentionMyelin.remedy and "onnxruntime" in AttentionMyelin.backend_notes
    (claim,) = variant("as-reported").claims
    assert (claim.target, claim.outcome, claim.strength, claim.source) == (
        "trt86-x86", "fallback", "issue-thread", "https://github.com/NVIDIA/TensorRT/issues/3230")


@pytest.mark.parametrize("name", [v.name for v in AttentionMyelin.variants])
def test_every_variant_passes_the_full_checker_and_strict_shape_inference(name):
    model = model_of(name)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


@pytest.mark.parametrize(("name", "expected"), [
    ("as-reported", ["LayerNormalization", *ATTENTION_OPS]),
    ("int8-fp16", ["LayerNormalization", *ATTENTION_OPS]),
    ("layernorm-decomposed", [*DECOMPOSED_LAYERNORM, *ATTENTION_OPS]),
    ("no-layernorm", ATTENTION_OPS),
])
def test_exact_op_lists(name, expected):
    assert ops(name) == expected


def test_the_attention_core_is_matmul_softmax_matmul_under_a_layernorm():
    graph = graph_of("as-reported")
    softmax = node(graph, "/attn/Softmax")
    scale = softmax.inputs[0].inputs[0]
    assert scale.op == "Mul" and scale.inputs[0].inputs[0].name == "/attn/MatMul"
    assert [c.name for c in softmax.outputs[0].outputs] == ["/attn/MatMul_1"]
    norm = node(graph, "/norm1/LayerNormalization")
    assert {c.name for c in norm.outputs[0].outputs} == {"/attn/q/MatMul", "/attn/k/MatMul", "/attn/v/MatMul"}
    assert node(graph, "/attn/Transpose").inputs[0].inputs[0].name == "/attn/k/Add"
    residual = node(graph, "/Add")
    assert residual.inputs[0].name == "x" and residual.inputs[1].inputs[0].name == "/attn/proj/Add"
    assert AttentionMyelin.build(variant("as-reported")).expected_int8 == MATMULS
    assert sorted(MATMULS) == sorted(n.name for n in graph.nodes if n.op == "MatMul")


def test_the_workaround_quantizes_both_inputs_of_every_matmul_and_adds_nothing_else():
    graph = graph_of("qdq-matmuls")
    assert variant("qdq-matmuls").mode == "explicit-qdq" and variant("qdq-matmuls").role == "workaround"
    matmuls = [n for n in graph.nodes if n.op == "MatMul"]
    assert len(matmuls) == 6
    for matmul in matmuls:
        assert [t.inputs[0].op for t in matmul.inputs] == ["DequantizeLinear", "DequantizeLinear"], matmul.name
    float_ops = [op for op in ops("qdq-matmuls") if op not in ("QuantizeLinear", "DequantizeLinear")]
    assert sorted(float_ops) == sorted(["LayerNormalization", *ATTENTION_OPS])
    assert ops("qdq-matmuls").count("QuantizeLinear") == 12  # two per MatMul


def test_decomposed_layernorm_is_torch_onnx_before_opset_17():
    model = model_of("layernorm-decomposed")
    assert model.opset_import[0].version == 13 and "LayerNormalization" not in ops("layernorm-decomposed")
    graph = graph_of("layernorm-decomposed")
    assert node(graph, "/norm1/Div").inputs[1].inputs[0].op == "Sqrt"
    assert {c.name for c in node(graph, "/norm1/Add_1").outputs[0].outputs} == {
        "/attn/q/MatMul", "/attn/k/MatMul", "/attn/v/MatMul"}


def test_sweeps_change_one_thing():
    assert variant("int8-fp16").knobs.fp16 and not variant("as-reported").knobs.fp16
    assert variant("int8-fp16").params == variant("as-reported").params
    assert {c.name for c in node(graph_of("no-layernorm"), "/attn/q/MatMul").inputs[:1]} == {"x"}


@pytest.mark.parametrize(("name", "found"), [("as-reported", "as-reported"), ("int8-fp16", "as-reported"),
                                             ("layernorm-decomposed", "layernorm-decomposed")])
def test_the_matcher_finds_the_block_and_names_its_form(name, found):
    (match,) = AttentionMyelin.find(graph_of(name))
    assert (match.case, match.variant) == (AttentionMyelin.id, found)
    assert match.nodes[:3] == ("/attn/Softmax", "/attn/MatMul", "/attn/MatMul_1")
    assert match.nodes[3] == ("/norm1/LayerNormalization" if found == "as-reported" else "/norm1/Div")


@pytest.mark.parametrize("name", ["no-layernorm", "qdq-matmuls"])
def test_the_matcher_needs_a_layernorm_and_an_unquantized_block(name):
    """Without a LayerNorm upstream the block is not the reported shape; with Q/DQ it is the workaround."""
    assert AttentionMyelin.find(graph_of(name)) == []


def test_the_matcher_finds_nothing_in_a_detection_head():
    graph = gs.import_onnx(export_model(TopkHead, TopkHead.variants[0])[0])
    assert AttentionMyelin.find(graph) == []
