"""``python -m harness scan MODEL --to-explicit``, black-box: an implicit-INT8 YOLO-style backbone and ResNet-18 become
explicit Q/DQ models that TensorRT 11 takes (symmetric INT8, float per-channel weights with a Q/DQ pair, Q/DQ only
where INT8 kernels run, no library failing form left where it is not expected to build as asked), run on ort-cpu, go
through the TensorRT 11.4 backend path of the contract stand-in, and come with accuracy figures against FP32."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import cases  # noqa: F401
from cases.model import get_case
from tests.harness.scan.test_fixing import run, scan
from tests.models import backbone, f64_gelu, resnet, vit
from tests.trt_contract.backend_run import answers_that_let_the_path_continue, network_shaped_like_the_model
from tests.trt_contract.backend_run import run as run_cell
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt

TRT11 = "11.4.0.106"


@pytest.fixture(scope="module")
def fp32_models(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("fp32-models")
    paths = {"yolo-backbone": out / "yolo-backbone.onnx", "resnet18": out / "resnet18.onnx"}
    onnx.save(backbone.build(False), str(paths["yolo-backbone"]))
    onnx.save(resnet.build(False), str(paths["resnet18"]))
    return paths


def final_model(out: Path) -> Path:
    """The model to ship: the fixed one when --fix rewrote something, else the quantizer's."""
    return out / "fixed.onnx" if (out / "fixed.onnx").exists() else out / "explicit.onnx"


def assert_tensorrt_style_quantization(model: onnx.ModelProto) -> None:
    """Signed INT8, zero points 0, float weights with a Q/DQ pair (per channel on axis 0 for convs), Q/DQ on the
    inputs of convs and matrix products (and where --fix put the library's workaround forms: the identity or the
    output of a residual Add), only standard ops."""
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    quantizers = [n for n in model.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    assert quantizers
    for node in quantizers:
        zero_point = initializers[node.input[2]]
        assert zero_point.dtype == np.int8 and not zero_point.any(), node.name
    # no DequantizeLinear of weights stored INT8: TensorRT 8.x's parser refuses it (parser rule dq-stored-weights)
    assert not [n.name for n in quantizers if n.op_type == "DequantizeLinear" and n.input[0] in initializers]
    weight_qs = [n for n in quantizers if n.op_type == "QuantizeLinear" and n.input[0] in initializers]
    assert weight_qs and all(initializers[n.input[0]].dtype == np.float32 for n in weight_qs)
    conv_weight_qs = [n for n in weight_qs if initializers[n.input[0]].ndim == 4]
    assert conv_weight_qs and all(initializers[n.input[1]].size > 1 and onnx.helper.get_node_attr_value(n, "axis") == 0
                                  for n in conv_weight_qs)  # per output channel
    readers = {o: n.op_type for n in model.graph.node for o in n.input}
    dq_outputs = [n.output[0] for n in quantizers if n.op_type == "DequantizeLinear"]
    assert {readers.get(o) for o in dq_outputs} <= {"Conv", "MatMul", "Gemm", "Add", "Relu", None}
    assert {n.domain for n in model.graph.node} == {""} and {o.domain for o in model.opset_import} == {""}


def builds_on_tensorrt_11(model_path: Path, tmp_path: Path, control_cases_dir) -> dict:
    """The TensorRT backend's path (parse, strongly typed network, build, inspect) for the model as an explicit-qdq
    cell, against the TensorRT 11.4 CONTRACT STAND-IN: the calls it makes, never a TensorRT result."""
    from harness.worker.casedata import load_cells

    template = next(c for c in load_cells(control_cases_dir) if c["mode"] == "explicit-qdq")
    model = onnx.load(str(model_path))
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "inputs.npz"
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    np.savez(data, **{f"input/{name}": np.zeros(shape, np.float32) for name, shape in shapes.items()})
    cell = {**template, "case": "your-model", "variant": "explicit", "model": str(model_path), "data": str(data),
            "inputs": {n: {"dtype": "float32", "shape": s} for n, s in shapes.items()}, "expected_int8": [],
            "outputs": {o.name: {"dtype": "float32", "shape": []} for o in model.graph.output}}
    standin = ContractStandIn.for_version(TRT11)
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        network_shaped_like_the_model(standin, cell)
        execution = run_cell(cell, tmp_path)
    assert standin.calls_to("OnnxParser.parse_from_file") and standin.calls_to("Builder.build_serialized_network")
    return execution.details


@pytest.mark.parametrize("name", ["yolo-backbone", "resnet18"])
def test_an_implicit_model_becomes_an_explicit_one_for_tensorrt_11(name, fp32_models, tmp_path, control_cases_dir):
    out = tmp_path / "out"
    code, stdout, stderr = scan(fp32_models[name], "--targets", "ort-cpu", "trt102-x86", "--to-explicit", "--out",
                                out)
    assert code == 0, stdout + stderr
    assert "WARNING: no --calibration-data: the scales come from N(0, 1) random inputs" in stderr
    data = json.loads((out / "scan.json").read_text())
    explicit = data["explicit"]
    assert explicit["settings"]["ActivationSymmetric"]["value"] is True and explicit["calibration"]["warning"]
    # nothing the ONNX parser refuses or leaves open (10.2: dq-stored-weights was open for stored INT8 weights)
    assert not [e for t in data["targets"] for e in t.get("model_evidence", []) if e["kind"] == "parser-fact"]
    page = (out / "scan.html").read_text()
    assert "--to-explicit: <code>explicit.onnx</code>" in page and "WARNING: no --calibration-data" in page
    shipped = final_model(out)
    assert_tensorrt_style_quantization(onnx.load(str(shipped)))
    figures = explicit["accuracy"][shipped.name]
    (output,) = figures.values()
    assert output["cosine"] > 0.99 and output["sqnr_db"] > 15 and output["max_abs_error"] > 0  # quantized, close
    print(f"{name}: {shipped.name} vs FP32: {output}")  # the figures of the closing note
    again = tmp_path / "again"
    scan(shipped, "--targets", "ort-cpu", "trt102-x86", "--out", again)
    failing_forms = {(f["case"], f["variant"]) for f in json.loads((again / "scan.json").read_text())["findings"]
                     if f["role"] == "failing"}
    # Only forms of cases without any workaround in the library remain (S5's residual quantizer, which P3 asks for),
    # each named in the report with that reason where nothing is known of it (ort-cpu); where the scan expects it to
    # build as asked (trt102-x86: likely) there is nothing to fix, and the reason says that instead
    assert all(not any(v.role == "workaround" for v in get_case(case).variants) for case, _ in failing_forms)
    not_fixed = {n["finding"]: n["reason"] for g in data["fix"]["groups"] for n in g["not_fixed"]}
    verdicts = {(f["case"], f["variant"]): f["verdicts"] for f in data["findings"]}
    for case, form in failing_forms:
        expected = {"ort-cpu": f"{case} has no workaround form in the library"}
        if verdicts[(case, form)]["trt102-x86"]["verdict"] == "likely":
            expected["trt102-x86"] = "nothing to fix: likely here"
        else:
            expected["ort-cpu, trt102-x86"] = expected.pop("ort-cpu")
        assert not_fixed[f"{case}/{form}"] == (next(iter(expected.values())) if len(expected) == 1 else
                                               "; ".join(f"on {t}: {r}" for t, r in expected.items()))
    feeds = {"images" if name == "yolo-backbone" else "input": np.zeros((1, 3, 64, 64), np.float32)}
    assert all(np.isfinite(v).all() for v in run(shipped, feeds).values())
    details = builds_on_tensorrt_11(shipped, tmp_path / "trt11", control_cases_dir)
    assert details["tensorrt_calls"]["network"]


def test_calibration_data_from_a_directory_holds_out_its_last_fifth(fp32_models, tmp_path):
    batches = tmp_path / "calibration"
    batches.mkdir()
    rng = np.random.default_rng(3)
    for i in range(5):
        np.savez(batches / f"batch-{i:02d}.npz", input=rng.uniform(0, 1, (1, 3, 64, 64)).astype(np.float32))
    out = tmp_path / "out"
    code, stdout, stderr = scan(fp32_models["resnet18"], "--targets", "ort-cpu", "--to-explicit",
                                "--calibration-data", batches, "--out", out)
    assert code == 0, stdout + stderr
    calibration = json.loads((out / "scan.json").read_text())["explicit"]["calibration"]
    assert calibration == {"source": str(batches), "calibration_batches": 4, "held_out_batches": 1, "warning": None}
    assert "WARNING" not in stderr


def test_calibration_data_that_does_not_fit_the_inputs_is_named_and_nothing_is_quantized(fp32_models, tmp_path):
    batches = tmp_path / "calibration"
    batches.mkdir()
    np.savez(batches / "a.npz", input=np.zeros((1, 3, 64, 64), np.float32))
    np.savez(batches / "b.npz", input=np.zeros((1, 3, 32, 32), np.float32))
    out = tmp_path / "out"
    code, _, stderr = scan(fp32_models["resnet18"], "--to-explicit", "--calibration-data", batches, "--out", out)
    assert code == 2
    assert f"{batches / 'b.npz'}: array 'input' has shape [1, 3, 32, 32], the model's input 'input' takes " \
           "[1, 3, 64, 64]" in stderr
    assert not (out / "explicit.onnx").exists()


def test_a_model_that_already_has_qdq_is_sent_to_fix(tmp_path):
    model = tmp_path / "resnet18-qdq.onnx"
    onnx.save(resnet.build(True), str(model))
    code, _, stderr = scan(model, "--to-explicit", "--out", tmp_path / "out")
    assert code == 2 and "--to-explicit takes an implicit-INT8 model without Q/DQ" in stderr and "--fix" in stderr


def calibration_batches(directory: Path, shape: tuple[int, ...], name: str, count: int = 5) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    for i in range(count):
        np.savez(directory / f"batch-{i:02d}.npz", **{name: rng.standard_normal(shape).astype(np.float32)})
    return directory


def test_a_vit_whose_shapes_onnx_runtime_cannot_follow_is_quantized_without_symbolic_shape_inference(tmp_path):
    """ONNX Runtime's symbolic shape inference stops "incomplete" on the ViT (dynamic batch and image size, position
    embeddings resized to the image's grid): --to-explicit retries without it, says so, and leaves nothing behind in
    the current directory or beside the output."""
    model = tmp_path / "vit.onnx"
    onnx.save(vit.build(), str(model))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "out"
    code, stdout, stderr = scan(model, "--targets", "ort-cpu", "trt102-x86", "--to-explicit", "--calibration-data",
                                calibration_batches(tmp_path / "calibration", (1, 3, 32, 32), "images"), "--out", out,
                                cwd=cwd)
    assert code == 0, stdout + stderr
    (note,) = json.loads((out / "scan.json").read_text())["explicit"]["notes"]
    assert "symbolic shape inference failed on this model (Exception: Incomplete symbolic shape inference" in note
    assert "retried without it (skip_symbolic_shape=True)" in note and note in stdout
    assert list(cwd.iterdir()) == []  # no sym_shape_infer_temp.onnx, no <uuid>.data
    assert sorted(p.name for p in out.iterdir()) == ["explicit.onnx", "scan.html", "scan.json"]
    explicit = onnx.load(str(out / "explicit.onnx"))
    assert_tensorrt_style_quantization(explicit)
    writer = {o: n.op_type for n in explicit.graph.node for o in n.output}
    products = [n for n in explicit.graph.node if n.op_type in ("Conv", "MatMul")]
    assert len(products) == 9 and all(writer.get(n.input[0]) == "DequantizeLinear" for n in products), [
        n.name for n in products if writer.get(n.input[0]) != "DequantizeLinear"]  # attention included: shapes known
    feeds = {"images": np.random.default_rng(0).standard_normal((2, 3, 48, 48)).astype(np.float32)}
    outputs = run(out / "explicit.onnx", feeds)
    assert outputs[explicit.graph.output[0].name].shape == (2, 49, 32)  # still dynamic: a 7 x 7 grid of patches
    figures = json.loads((out / "scan.json").read_text())["explicit"]["accuracy"]["explicit.onnx"]
    assert next(iter(figures.values()))["cosine"] > 0.99


def test_without_sympy_the_pre_processing_runs_without_symbolic_shape_inference(fp32_models, tmp_path):
    """A fresh install where sympy cannot be imported (ONNX Runtime's symbolic shape inference needs it): the model
    is still quantized, and the note names the missing module."""
    blocker = tmp_path / "no-sympy" / "sympy"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('sympy is not installed here (test)')\n")
    out = tmp_path / "out"
    code, stdout, stderr = scan(fp32_models["resnet18"], "--targets", "ort-cpu", "--to-explicit", "--out", out,
                                pythonpath=[blocker.parent])
    assert code == 0, stdout + stderr
    (note,) = json.loads((out / "scan.json").read_text())["explicit"]["notes"]
    assert "ImportError: sympy is required for symbolic shape inference" in note
    assert_tensorrt_style_quantization(onnx.load(str(final_model(out))))


def test_a_model_onnx_runtime_cannot_run_is_named_with_the_library_the_step_and_what_to_try(tmp_path):
    """An FP32 model with a GELU in float64 (ONNX Runtime's CPU provider has no double Erf): calibration cannot run
    it. Exit 2 with the library, the step and advice, not an internal error; nothing left behind."""
    model = tmp_path / "f64-gelu.onnx"
    onnx.save(f64_gelu.build(2, qdq=False), str(model))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "out"
    code, stdout, stderr = scan(model, "--targets", "ort-cpu", "--to-explicit", "--out", out, cwd=cwd)
    assert code == 2, stdout + stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert "error: onnxruntime.quantization.quantize_static failed on this model at calibration and quantization" \
        in stderr
    assert "Erf" in stderr and "What to try: calibration runs the model on ONNX Runtime's CPU provider" in stderr
    assert list(cwd.iterdir()) == [] and list(out.iterdir()) == []  # no explicit.onnx, no temporary directory
