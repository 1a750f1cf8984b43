"""P15: precision builder flags on a graph without Q/DQ (and TensorRT 11's FP16 request), its fixes, and the matcher."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases.p15_precision_flag_without_qdq import CONVS
from cases.p15_precision_flag_without_qdq import PrecisionFlagWithoutQdq as P15

variant = P15.variant
Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
OPS = {
    "as-reported": ["Conv", "Relu", "Conv"], "fp4-flag": ["Conv", "Relu", "Conv"],
    "fp16-flag-trt11": ["Conv", "Relu", "Conv"],
    "explicit-fp8-qdq": [Q, DQ, Q, DQ, "Conv", "Relu", *QDQ, Q, DQ, "Conv"],
    "fp16-graph": ["Cast", "Conv", "Relu", "Conv", "Cast"],
    "partly-fp8": [Q, DQ, Q, DQ, "Conv", "Relu", "Conv"],
}


def test_declaration_flags_and_claims():
    assert (P15.pattern, P15.mode, P15.opset) == ("P15", "float", 19)
    assert P15.unmatchable_forms == ("as-reported", "fp16-flag-trt11")
    flags = {v.name: (v.knobs.fp8, v.knobs.fp4, v.knobs.fp16, v.knobs.strongly_typed) for v in P15.variants}
    assert flags == {"as-reported": (True, False, False, False), "fp4-flag": (False, True, False, False),
                     "fp16-flag-trt11": (False, False, True, False), "explicit-fp8-qdq": (False, False, False, True),
                     "fp16-graph": (False, False, False, True), "partly-fp8": (True, False, False, False)}
    assert {P15.mode_of(v) for v in P15.variants if "fp8" in v.name and v.name != "as-reported"} == {"explicit-qdq"}
    (thor,) = variant("as-reported").claims
    assert (thor.target, thor.outcome, thor.architecture) == ("trt1013-thor", "fallback", "11.0")
    (flag,), (cast,) = variant("fp16-flag-trt11").claims, variant("fp16-graph").claims
    assert (flag.target, flag.outcome, cast.target, cast.outcome) == ("trt11-x86", "fallback", "trt11-x86", "pass")
    assert cast.source == "https://github.com/roboflow/rf-detr/pull/1454"
    # TensorRT 11 has no FP16 flag on any GPU (#1453 found it on SM 8.9 and 8.6): no architecture narrows them.
    assert flag.architecture is None and cast.architecture is None


@pytest.mark.parametrize("v", P15.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_its_nodes_and_asks_every_conv_for_the_flags_precision(v):
    built = P15.build(v)
    assert [n.op for n in built.graph.nodes] == OPS[v.name]
    assert built.expected_int8 == () and built.expected_precision == dict.fromkeys(CONVS, v.params["asked"])


def test_fp8_qdq_is_e4m3_per_tensor_on_inputs_and_per_channel_on_weights():
    by_name = {n.name: n for n in P15.build(variant("explicit-fp8-qdq")).graph.nodes}
    for conv in CONVS:
        x_dq, w_dq = (t.inputs[0] for t in by_name[conv].inputs[:2])
        assert x_dq.op == w_dq.op == DQ and x_dq.inputs[0].inputs[0].op == Q
        assert x_dq.inputs[2].values.dtype == w_dq.inputs[2].values.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
        assert x_dq.inputs[1].values.shape == () and w_dq.inputs[1].values.shape == (32,) and w_dq.attrs["axis"] == 0
    assert by_name["/features/relu/Relu"].outputs[0].outputs[0].op == Q  # the Q/DQ of conv2's input after the Relu


def test_the_fp16_graph_keeps_fp32_inputs_and_outputs_and_fp16_weights():
    graph = P15.build(variant("fp16-graph")).graph
    first, *_, last = graph.nodes
    assert first.inputs[0] is graph.inputs[0] and first.attrs["to"] == 10
    assert last.outputs[0] is graph.outputs[0] and last.attrs["to"] == 1
    assert {n.inputs[1].values.dtype for n in graph.nodes if n.op == "Conv"} == {np.dtype(np.float16)}


def test_partly_fp8_leaves_the_second_conv_without_qdq():
    by_name = {n.name: n for n in P15.build(variant("partly-fp8")).graph.nodes}
    assert by_name[CONVS[0]].inputs[0].inputs[0].op == DQ
    assert by_name[CONVS[1]].inputs[0].inputs[0].op == "Relu" and not by_name[CONVS[1]].inputs[1].inputs


def test_find_the_unquantized_layer_of_an_fp8_network_and_nothing_without_fp8(user_graph, fp32_conv_relu_graph):
    (match,) = P15.find(user_graph(P15, variant("partly-fp8"), rename=True))
    assert match.variant == "partly-fp8" and match.nodes == ("user_node_6",)
    for name in ("as-reported", "explicit-fp8-qdq", "fp16-graph"):
        assert P15.find(user_graph(P15, variant(name))) == []
    assert P15.find(fp32_conv_relu_graph) == []


def test_onnx_runtime_drops_the_relu_before_an_fp8_quantize_as_the_backend_note_says():
    """cases/_backend_notes.py: measured, not assumed. When ONNX Runtime fixes its Relu + Q fusion for FP8 this fails,
    and the note (and the mismatches it explains) must go."""
    import onnxruntime as ort

    from cases.generate import export_model, make_data

    v = variant("explicit-fp8-qdq")
    model, _ = export_model(P15, v)
    data = make_data(P15, v, model)
    (reference,) = [x for k, x in data.items() if k.startswith("reference/")]
    errors = {}
    for level in ("ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED"):
        options = ort.SessionOptions()
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        options.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        (out,) = session.run(None, {"input": data["input/input"]})
        errors[level] = float(np.abs(out - reference).max())
    assert errors["ORT_ENABLE_BASIC"] < 1e-4  # ONNX Runtime computes the graph right when the fusion does not run
    assert errors["ORT_ENABLE_EXTENDED"] > 1.0  # and loses the Relu when it does (the harness runs this level)
