"""ONNX Runtime backend: precision is read from the kernels ORT really runs, and failures are classified."""
import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from harness.worker.backends.onnxruntime import kernel_precision, precision_from_optimized
from harness.worker.casedata import load_cells
from harness.worker.job import run_job


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


def test_a_failing_session_is_a_classified_fail_at_the_build_stage(cases_copy, tmp_path):
    cell = next(c for c in load_cells(cases_copy) if c["mode"] == "explicit-qdq")
    model = onnx.load(cell["model"])
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    conv.domain = "com.example.missing"  # an op no execution provider implements
    model.opset_import.append(onnx.helper.make_opsetid("com.example.missing", 1))
    onnx.save(model, cell["model"])
    index = json.loads((cases_copy / "index.json").read_text())  # the edited model is the one the index describes
    variant = next(v for c in index["cases"] if c["id"] == cell["case"] for v in c["variants"]
                   if v["name"] == cell["variant"])
    variant["model_sha256"] = hashlib.sha256(Path(cell["model"]).read_bytes()).hexdigest()
    (cases_copy / "index.json").write_text(json.dumps(index))
    records = run_control(cases_copy, tmp_path, {"session.qdqisint8allowed": "1"})
    record = records[(cell["case"], cell["variant"])]
    assert record["outcome"] == "fail" and record["stage"] == "build"
    assert record["failure"]["category"] == "parser"  # an unknown op, as TensorRT's parser failures are classified
    assert "com.example.missing:Conv" in record["failure"]["message"]


def test_a_node_fused_away_takes_the_precision_of_the_kernel_that_absorbed_it():
    x = gs.Variable("x", np.float32, (1, 4))
    y = gs.Variable("y", np.float32, (1, 4))
    z = gs.Variable("z", np.float32, (1, 4))
    original = gs.export_onnx(gs.Graph(nodes=[gs.Node("Abs", "first", inputs=[x], outputs=[y]),
                                              gs.Node("Relu", "second", inputs=[y], outputs=[z])],
                                       inputs=[x], outputs=[z]))
    optimized = gs.export_onnx(gs.Graph(nodes=[gs.Node("QLinearAbs", "first", inputs=[x], outputs=[z])],
                                        inputs=[x], outputs=[z]))
    precision, fused_into = precision_from_optimized(original, optimized)
    assert precision == {"first": "int8", "second": "int8"}
    assert fused_into == {"second": "first"}


def test_kernel_names_map_to_precisions():
    assert kernel_precision("QLinearConv") == "int8"
    assert kernel_precision("ConvInteger") == "int8"
    assert kernel_precision("Conv") == "fp32"
    assert kernel_precision("FusedConv") == "fp32"
