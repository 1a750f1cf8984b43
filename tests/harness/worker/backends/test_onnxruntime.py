"""ONNX Runtime backend: precision is read from the kernels ORT really runs, and failures are classified."""
import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from harness.worker.backends.ort_kernels import map_kernels
from harness.worker.casedata import load_cells
from harness.worker.job import run_job
from tests.conftest import read_records
from tests.harness.commands.test_main import harness


def run_control(cases_dir, tmp_path, session_config):
    records = []
    target = {"id": "ort", "backend": "onnxruntime", "session_config": session_config}
    run_job({"target": target, "cases_dir": str(cases_dir), "cells": None, "jobs": 1, "timeout_s": 60,
             "work_dir": str(tmp_path)}, records.append)
    return {(r["case"], r["variant"]): r for r in records}


def test_implicit_int8_conv_runs_as_an_int8_kernel_and_matches_the_fp32_reference(control_cases_dir, tmp_path):
    records = run_control(control_cases_dir, tmp_path, {"session.qdqisint8allowed": "1"})
    record = records[("control-implicit-conv-relu", "conv-relu")]
    assert record["precision"]["/conv/Conv"] == "int8"
    assert record["outcome"] == "pass" and record["fallback_nodes"] == []
    assert record["metrics"]["cosine"] > 0.99 and record["metrics"]["within_tolerance"]
    assert record["details"]["ort_settings"]["quantize_static"]["calibrate_method"] == "Entropy"
    assert record["environment"]["onnxruntime_version"]


def test_without_the_int8_session_option_x86_ort_leaves_the_s1_conv_in_fp32(tmp_path):
    """Observed ORT behaviour: on x86 the CPU EP fuses a signed-INT8 Conv followed by SiLU only when allowed to."""
    import cases
    from cases.generate import generate

    s1 = cases.get_case("s1-conv-silu")
    failing = next(v.name for v in s1.variants if v.role == "failing")
    generate(tmp_path / "s1", [s1])
    by_option = {}
    for option in ("0", "1"):
        records = run_control(tmp_path / "s1", tmp_path / f"work{option}", {"session.qdqisint8allowed": option})
        by_option[option] = records[("s1-conv-silu", failing)]
    assert by_option["0"]["precision"]["/model.0/conv/Conv"] == "fp32"
    assert by_option["0"]["outcome"] == "fallback" and "/model.0/conv/Conv" in by_option["0"]["fallback_nodes"]
    assert by_option["1"]["precision"]["/model.0/conv/Conv"] == "int8"


def index_entry(cases_dir, cell):
    """The cell's variant entry in index.json, and a function that writes the edited index back."""
    index = json.loads((cases_dir / "index.json").read_text())
    variant = next(v for c in index["cases"] if c["id"] == cell["case"] for v in c["variants"]
                   if v["name"] == cell["variant"])
    return variant, lambda: (cases_dir / "index.json").write_text(json.dumps(index))


def rehashed(cases_dir, cell, field):
    """Make index.json describe the edited ``field`` file of ``cell`` (so it runs rather than being refused)."""
    variant, save = index_entry(cases_dir, cell)
    variant[f"{field}_sha256"] = hashlib.sha256(Path(cell[field]).read_bytes()).hexdigest()
    save()


def run_command(cases_dir, tmp_path):
    result = harness("run", "--target", "ort-cpu", "--cases", str(cases_dir), "--results", str(tmp_path / "r.jsonl"),
                     env={"TRT_MATRIX_WORK_DIR": str(tmp_path / "work")}, check=False)
    return result, {(r["case"], r["variant"]): r for r in read_records(tmp_path / "r.jsonl")}


def test_a_failing_session_is_a_classified_fail_at_the_build_stage_with_orts_traceback(cases_copy, tmp_path):
    cell = next(c for c in load_cells(cases_copy) if c["mode"] == "explicit-qdq")
    model = onnx.load(cell["model"])
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    conv.domain = "com.example.missing"  # an op no execution provider implements
    model.opset_import.append(onnx.helper.make_opsetid("com.example.missing", 1))
    onnx.save(model, cell["model"])
    rehashed(cases_copy, cell, "model")
    records = run_control(cases_copy, tmp_path, {"session.qdqisint8allowed": "1"})
    record = records[(cell["case"], cell["variant"])]
    assert record["outcome"] == "fail" and record["stage"] == "build"
    assert record["failure"]["category"] == "parser"  # an unknown op, as TensorRT's parser failures are classified
    assert "com.example.missing:Conv" in record["failure"]["message"]
    assert "Traceback" in record["log"] and "onnxruntime_inference_collection.py" in record["log"]
    assert record["details"]["raised_in"].startswith("onnxruntime/capi/onnxruntime_inference_collection.py:")


def test_a_failure_inside_orts_quantizer_is_a_fail_whose_record_shows_orts_code_raised_it(cases_copy, tmp_path):
    cell = next(c for c in load_cells(cases_copy) if c["mode"] == "implicit-int8")
    arrays = dict(np.load(cell["data"]))
    for key in [k for k in arrays if k.startswith("calib/")]:  # batches the model cannot take: ORT's calibrator fails
        arrays[key] = arrays[key][:, :3]
    np.savez(cell["data"], **arrays)
    rehashed(cases_copy, cell, "data")
    result, records = run_command(cases_copy, tmp_path)
    record = records[(cell["case"], cell["variant"])]
    assert result.returncode == 0, result.stderr  # a result about the case, not a broken run
    assert (record["outcome"], record["stage"], record["failure"]["category"]) == ("fail", "build", "runtime-error")
    assert "Traceback" in record["log"] and "onnxruntime/quantization/" in record["log"]
    assert record["details"]["raised_in"].startswith("onnxruntime/")


def test_a_bug_in_harness_code_around_ort_is_an_infra_error_with_its_traceback_and_exit_status_3(cases_copy, tmp_path):
    cell = next(c for c in load_cells(cases_copy) if c["mode"] == "implicit-int8")
    variant, save = index_entry(cases_copy, cell)
    variant["knobs"]["calibrator"] = "percentile"  # a calibrator the ORT backend has no mapping for: our KeyError
    save()
    result, records = run_command(cases_copy, tmp_path)
    record = records[(cell["case"], cell["variant"])]
    assert result.returncode == 3
    assert (record["outcome"], record["failure"]["category"]) == ("infra-error", "harness")
    assert record["failure"]["message"] == "KeyError: 'percentile'" and record["agrees"] is None
    assert "harness/worker/backends/onnxruntime.py" in record["log"] and "KeyError" in record["log"]
    assert "infra-error (harness): KeyError: 'percentile'" in result.stdout


def graph(nodes, inputs, outputs):
    return gs.export_onnx(gs.Graph(nodes=nodes, inputs=inputs, outputs=outputs))


def test_a_node_fused_away_takes_the_precision_of_the_kernel_that_absorbed_it_read_from_what_that_kernel_reads():
    x, y, z, q = (gs.Variable(n, np.float32, (1, 4)) for n in "xyzq")
    original = graph([gs.Node("MatMul", "fc", inputs=[x, x], outputs=[y]), gs.Node("Relu", "act", inputs=[y], outputs=[z])],
                     [x], [z])
    # ORT names a fusion after the node it heads; the name says nothing about precision, the input types do
    optimized = graph([gs.Node("QuantizeLinear", "q", inputs=[x], outputs=[q]),
                       gs.Node("FusedMatMul", "fc/Fusion", inputs=[q, q], outputs=[z])], [x], [z])
    for read, precision in (("tensor(int8)", "int8"), ("tensor(float)", "fp32"), ("tensor(float8e4m3fn)", "fp8"),
                            ("tensor(float8e5m2)", "fp8"), ("tensor(float16)", "fp16")):
        ran = map_kernels(original, optimized, {"x": "tensor(float)", "q": read, "z": "tensor(float)"})
        assert ran.precision == {"fc": precision, "act": precision}
        assert ran.kernels == {"fc": ["fc/Fusion"], "act": ["fc/Fusion"]}


def test_a_node_orts_merged_with_an_identical_one_is_unknown_not_the_precision_of_its_neighbour():
    x, a, b, c, d, out = (gs.Variable(n, np.float32, (1, 4)) for n in ("x", "a", "b", "c", "d", "out"))
    original = graph([gs.Node("Abs", "abs_1", inputs=[x], outputs=[a]), gs.Node("Abs", "abs_2", inputs=[x], outputs=[b]),
                      gs.Node("Relu", "use_1", inputs=[a], outputs=[c]), gs.Node("Relu", "use_2", inputs=[b], outputs=[d]),
                      gs.Node("Add", "sum", inputs=[c, d], outputs=[out])], [x], [out])
    optimized = graph([gs.Node("Abs", "abs_1", inputs=[x], outputs=[a]), gs.Node("Relu", "use_1", inputs=[a], outputs=[c]),
                       gs.Node("Relu", "use_2", inputs=[a], outputs=[d]), gs.Node("Add", "sum", inputs=[c, d], outputs=[out])],
                      [x], [out])
    ran = map_kernels(original, optimized, {t: "tensor(float)" for t in ("x", "a", "c", "d", "out")})
    assert ran.precision["abs_2"] == "unknown" and ran.kernels["abs_2"] == []
    assert "removed" in ran.unknown_because["abs_2"]
    assert ran.precision["use_2"] == "fp32" and ran.kernels["use_2"] == ["use_2"]


def test_nodes_merged_with_identical_ones_are_unknown_even_when_their_consumer_survives_under_its_name():
    """ORT's common-subexpression elimination (seen in P9): abs_2 -> neg_2 duplicate abs_1 -> neg_1 and vanish; the
    Gather that read neg_2 now reads neg_1's output. Nothing of the pair ran next to the Gather."""
    x, a, b, c1, c2, e, f, out = (gs.Variable(n, np.float32, (1, 4)) for n in ("x", "a", "b", "c1", "c2", "e", "f", "out"))
    data = gs.Variable("data", np.int8, (1, 4))
    gathered = gs.Variable("gathered", np.int8, (1, 4))
    shared = [gs.Node("Abs", "abs_1", inputs=[x], outputs=[a]), gs.Node("Neg", "neg_1", inputs=[a], outputs=[c1]),
              gs.Node("Relu", "use_1", inputs=[c1], outputs=[e])]
    tail = [gs.Node("Cast", "cast", inputs=[gathered], outputs=[f]), gs.Node("Add", "sum", inputs=[e, f], outputs=[out])]
    original = graph([*shared, gs.Node("Abs", "abs_2", inputs=[x], outputs=[b]),
                      gs.Node("Neg", "neg_2", inputs=[b], outputs=[c2]),
                      gs.Node("Gather", "gather", inputs=[data, c2], outputs=[gathered]), *tail], [x, data], [out])
    optimized = graph([*shared, gs.Node("Gather", "gather", inputs=[data, c1], outputs=[gathered]), *tail],
                      [x, data], [out])
    types = {t: "tensor(float)" for t in ("x", "a", "c1", "e", "f", "out")}
    types.update(data="tensor(int8)", gathered="tensor(int8)")
    ran = map_kernels(original, optimized, types)
    for merged in ("abs_2", "neg_2"):  # not the INT8 Gather next to them
        assert (ran.precision[merged], ran.kernels[merged]) == ("unknown", []), merged
    assert ran.precision["gather"] == "int8" and ran.kernels["gather"] == ["gather"]


def test_a_tensor_orts_types_do_not_cover_makes_the_node_that_reads_it_unknown():
    x, y = gs.Variable("x", np.float32, (1, 4)), gs.Variable("y", np.float32, (1, 4))
    model = graph([gs.Node("Relu", "act", inputs=[x], outputs=[y])], [x], [y])
    ran = map_kernels(model, model, {"y": "tensor(float)"})
    assert ran.precision == {"act": "unknown"} and "no type for x" in ran.unknown_because["act"]


def test_nchwc_kernels_orts_highest_level_puts_in_are_mapped_back_with_the_precision_they_read(tmp_path):
    """At ORT_ENABLE_ALL (not the level the backend uses) ORT runs a float Conv -> Relu -> Conv as NCHWc kernels
    named after tensors, between ReorderInput and ReorderOutput: each node maps to that region, in float."""
    import onnxruntime

    from harness.worker.backends.ort_kernels import tensor_types

    x, c, r, y = gs.Variable("x", np.float32, (1, 16, 16, 16)), *(gs.Variable(n, np.float32) for n in "cry")
    weights = [gs.Constant(f"w{i}", np.full((32, cin, 3, 3), 0.01, np.float32)) for i, cin in ((1, 16), (2, 32))]
    model = graph([gs.Node("Conv", "conv1", inputs=[x, weights[0]], outputs=[c], attrs={"pads": [1, 1, 1, 1]}),
                   gs.Node("Relu", "relu", inputs=[c], outputs=[r]),
                   gs.Node("Conv", "conv2", inputs=[r, weights[1]], outputs=[y], attrs={"pads": [1, 1, 1, 1]})], [x], [y])
    model.opset_import[0].version = 13
    onnx.save(model, tmp_path / "model.onnx")
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    options.log_severity_level = 3
    onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), options, providers=["CPUExecutionProvider"])
    optimized = onnx.load(tmp_path / "optimized.onnx")
    ops = {n.op_type for n in optimized.graph.node if n.domain == "com.microsoft.nchwc"}
    assert {"ReorderInput", "ReorderOutput", "Conv"} <= ops  # what this test is about happened
    ran = map_kernels(model, optimized, tensor_types(optimized))
    assert ran.precision == {"conv1": "fp32", "relu": "fp32", "conv2": "fp32"} and ran.unknown_because == {}
    nchwc = {n.name for n in optimized.graph.node}
    assert all(ran.kernels[node] and set(ran.kernels[node]) <= nchwc for node in ("conv1", "relu", "conv2"))


def test_a_knob_orts_cannot_apply_is_listed_dla_core_0_included():
    from harness.worker.backends.onnxruntime import knob_is_set

    knobs = {"dla_core": 0, "fp8": True, "fp16": False, "gpu_fallback": False, "layer_precisions": {},
             "profiles": [], "precision_constraints": None, "calibrator": "entropy2"}
    assert [k for k, v in knobs.items() if knob_is_set(v)] == ["dla_core", "fp8", "calibrator"]
