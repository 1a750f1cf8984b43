"""Every cell of the library on ort-cpu: the recorded precision of each node agrees with what ORT ran.

The check is independent of the backend's mapping and type reading: ORT's optimized model of each cell is run
again, unoptimized, with every tensor made an output, and the element type of the data each recorded kernel really
read at run time (its largest input that is not an initializer, i.e. not a scale or zero point) gives the precision.
"""
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

import cases
from harness.worker.casedata import load_arrays, load_cells
from tests.conftest import read_records
from tests.harness.commands.test_main import harness

BOUNDARY_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
PRECISION_OF_DTYPE = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "int8", np.dtype(np.float32): "fp32",
                      np.dtype(np.float64): "fp32", np.dtype(np.float16): "fp16"}


@pytest.fixture(scope="module")
def library_on_ort(generated_cases, tmp_path_factory):
    """The whole library generated, run on ort-cpu through the command: (cells, records, work dir of the cells)."""
    cases_dir = generated_cases("library", cases.all_cases())
    out = tmp_path_factory.mktemp("library-on-ort")
    harness("run", "--target", "ort-cpu", "--cases", str(cases_dir), "--results", str(out / "r.jsonl"),
            env={"TRT_MATRIX_WORK_DIR": str(out / "work")})
    records = {(r["case"], r["variant"]): r for r in read_records(out / "r.jsonl")}
    return load_cells(cases_dir), records, out / "work" / "ort-cpu"


def data_read_by_kernels(optimized: onnx.ModelProto, inputs: dict) -> dict[str, str]:
    """Per kernel label: the precision of the largest non-initializer tensor it read when the model ran."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(optimized)
    names = sorted({t for n in exposed.graph.node for t in n.output if t} - {o.name for o in exposed.graph.output})
    exposed.graph.output.extend(onnx.ValueInfoProto(name=t) for t in names)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(exposed.SerializeToString(), options, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    values = {**inputs, **dict(zip(outputs, session.run(outputs, inputs)))}
    read = {}
    for index, node in enumerate(optimized.graph.node):
        arrays = [np.asarray(values[t]) for t in node.input if t in values]
        if arrays:
            data = max(arrays, key=lambda a: a.size)
            read[node.name or f"{node.op_type}#{index}"] = PRECISION_OF_DTYPE.get(data.dtype, f"other:{data.dtype}")
    return read


def precision_of(seen: list) -> str:
    """A node run by kernels that read ``seen``: INT8 when all read INT8 data, float when any read float."""
    floats = [p for p in seen if p in ("fp16", "fp32")]
    if floats:
        return max(floats, key=("fp16", "fp32").index)
    return "int8" if seen and all(p == "int8" for p in seen) else "unknown"


def neighbours(model: onnx.ModelProto) -> dict[str, set[str]]:
    """Per node name: the names of the nodes it reads from or writes to."""
    producer = {t: n.name for n in model.graph.node for t in n.output}
    found = {n.name: set() for n in model.graph.node}
    for node in model.graph.node:
        for t in node.input:
            if t in producer:
                found[node.name].add(producer[t])
                found[producer[t]].add(node.name)
    return found


def sharing(record: dict, kernel: str, node: str) -> bool:
    """Whether ``node`` is recorded as run by ``kernel`` too: ORT merged them into one group of kernels."""
    return kernel in record["details"]["ort_kernels"].get(node, ())


def test_every_recorded_precision_is_the_type_of_the_data_the_kernels_that_ran_the_node_read(library_on_ort):
    cells, records, work = library_on_ort
    disagreements, checked = [], 0
    for cell in cells:
        record = records[(cell["case"], cell["variant"])]
        cell_dir = work / cell["case"] / cell["variant"]
        given = onnx.load(cell_dir / "quantized.onnx" if cell["mode"] == "implicit-int8" else cell["model"])
        optimized = onnx.load(cell_dir / "optimized.onnx")
        read = data_read_by_kernels(optimized, load_arrays(cell)["inputs"])
        kernel_names = [n.name for n in optimized.graph.node if n.name]
        # Nodes ORT's transpose optimizer creates are named by their op type ('Transpose'), or after the node they
        # replace with a suffix ('/stem/Reshape_new_reshape'): neither names another node of the model.
        op_named = {n.name for n in optimized.graph.node if n.name == n.op_type}
        near = neighbours(given)
        for node in given.graph.node:
            if node.op_type in BOUNDARY_OPS:
                continue
            checked += 1
            where = (cell["case"], cell["variant"], node.name)
            recorded, kernels = record["precision"].get(node.name), record["details"]["ort_kernels"].get(node.name)
            if recorded is None or kernels is None:
                disagreements.append((*where, "no precision recorded"))
                continue
            named_after = [k for k in kernel_names if k == node.name or k.startswith(node.name + "/")]
            if named_after and not set(named_after) <= set(kernels):
                disagreements.append((*where, f"ORT ran it in {named_after}, recorded {kernels}"))
            strangers = [k for k in kernels if "#" not in k and k not in named_after and k not in op_named
                         and not any(k == m or k.startswith(m + "/") for m in near[node.name])
                         and not sharing(record, k, k.split("_new_")[0])]
            if strangers:
                disagreements.append((*where, f"kernels {strangers} are named after no node next to it"))
            seen = [read.get(k) for k in kernels]
            if recorded == "unknown" and not record["details"]["precision_unknown"].get(node.name):
                disagreements.append((*where, "unknown without a reason"))
            if recorded != precision_of(seen):
                disagreements.append((*where, f"recorded {recorded}, its kernels {kernels} read {seen}"))
    assert checked > 500
    assert disagreements == [], "\n".join(map(str, disagreements))


def test_every_expected_node_of_the_library_has_an_established_precision_on_ort(library_on_ort):
    _, records, _ = library_on_ort
    unverified = {key: r["details"]["unverified_nodes"] for key, r in records.items()
                  if r["details"]["unverified_nodes"]}
    assert unverified == {}
    assert all(r["outcome"] in ("pass", "fallback", "mismatch", "fail") for r in records.values())


def test_every_fp8_or_fp16_request_of_the_library_is_compared_with_what_ort_ran(library_on_ort):
    """ONNX Runtime's CPU EP has no FP8 or FP16 convolution or GEMM: an FP8 Q/DQ conv runs as an FP32 conv on
    dequantized values, an FP16 request on a float graph runs FP32. Every such cell that stays within tolerance is a
    fallback whose pairs say what was asked and what ran, never a pass."""
    _, records, _ = library_on_ort
    asked_beyond_int8 = {key: r for key, r in records.items()
                         if any(p != "int8" for p in r["requested_precision"].values())}
    assert {key[0] for key in asked_beyond_int8} >= {"p15-precision-flag-without-qdq", "p18-fp8-gemm-mixed-scales"}
    for key, record in asked_beyond_int8.items():
        assert record["outcome"] in ("fallback", "mismatch"), key
        if record["outcome"] == "fallback":
            pairs = record["details"]["fallback_precision"]
            assert pairs and all(p["got"] == record["precision"][node] for node, p in pairs.items()), key
            assert all(pairs[node]["asked"] == record["requested_precision"][node] for node in pairs), key


def test_the_cells_issue_20_found_wrong_now_say_what_ort_ran(library_on_ort):
    _, records, work = library_on_ort
    for variant in ("linear-per-channel-axis-1", "linear-per-tensor", "linear-batch-4", "linear-per-channel-axis-0"):
        record = records[("p6-linear-int8", variant)]  # a float Gemm '<MatMul>/MatMulAddFusion' read DQ output
        assert record["outcome"] == "fallback" and record["fallback_nodes"] == ["/mlp/fc1/MatMul"]
        assert record["details"]["ort_kernels"]["/mlp/fc1/MatMul"] == ["/mlp/fc1/MatMul/MatMulAddFusion"]
    record = records[("p8-attention-myelin", "qdq-matmuls")]
    assert record["outcome"] == "fallback" and "/attn/proj/MatMul" in record["fallback_nodes"]
    resize = "/neck/upsample/Resize"  # ORT dropped the DQ/Q around it and ran the Resize on INT8 data
    record = records[("p5-resize-qdq", "qdq-before-resize")]
    assert record["precision"][resize] == "int8" and resize not in record["fallback_nodes"]
    optimized = onnx.load(work / "p5-resize-qdq" / "qdq-before-resize" / "optimized.onnx")
    assert next(n for n in optimized.graph.node if n.name == resize).op_type == "Resize"
