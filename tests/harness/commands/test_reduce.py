"""`python -m harness reduce`, black-box: its help, bad input refused before anything runs (exit 2), and the input
sizes of a model exported with a dynamic batch. The reductions themselves are tested end to end in
tests/harness/reduction/."""
from __future__ import annotations

import onnx
import pytest

from cases import get_case
from cases.generate import export_model
from tests.harness.commands.test_main import harness
from tests.models import f64_gelu


def with_dynamic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` as torch.onnx exports it with ``dynamic_axes={"input": {0: "batch"}}``: the first dimension of
    every input and output symbolic, shapes inferred again."""
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    del model.graph.value_info[:]
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_help_teaches_the_steps_resume_and_exit_codes():
    out = harness("reduce", "--help").stdout
    for words in ("polygraphy debug reduce", "bisect first, then linear", "--keep", "--container-per-check",
                  "--keep-weights", "resumes", "reduce.json", "case_<id>.py", "Exit status", "--input-shape",
                  "symbolic dimension", "as `scan --run` does"):
        assert words in out, words


def test_a_file_that_is_no_model_is_refused(tmp_path):
    text = tmp_path / "notes.onnx"
    text.write_text("not a model\n")
    result = harness("reduce", str(text), "--target", "ort-cpu", "--out", str(tmp_path / "out"), check=False)
    assert result.returncode == 2 and "not an ONNX file" in result.stderr
    assert not (tmp_path / "out" / "session.json").exists()


def test_an_unknown_target_is_refused_with_the_known_ones(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(f64_gelu.build(1), model)
    result = harness("reduce", str(model), "--target", "ort-gpu", check=False)
    assert result.returncode == 2 and "--target 'ort-gpu': not a target of" in result.stderr
    assert "ort-cpu" in result.stderr.split("nearest: ", 1)[1]


def test_a_damaged_session_file_in_the_output_directory_is_named(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(f64_gelu.build(1), model)
    out = tmp_path / "out"
    out.mkdir()
    (out / "session.json").write_text("{not json")
    result = harness("reduce", str(model), "--target", "ort-cpu", "--out", str(out), check=False)
    assert result.returncode == 3 and f"{out / 'session.json'}: not a reduction's session file" in result.stderr


def test_input_shape_gives_a_dynamic_batch_its_size_and_says_so(tmp_path):
    control = get_case("control-qdq-conv-relu")  # passes on ort-cpu: the whole model runs once, nothing to reduce
    model = tmp_path / "control-dynamic.onnx"
    exported = export_model(control, control.variants[0])[0]
    onnx.save(with_dynamic_batch(exported), model)
    name = exported.graph.input[0].name
    dims = [d.dim_value for d in exported.graph.input[0].type.tensor_type.shape.dim]
    shape = "x".join(map(str, [2, *dims[1:]]))
    out = tmp_path / "out"
    result = harness("reduce", str(model), "--target", "ort-cpu", "--input-shape", f"{name}:{shape}", "--out",
                     str(out), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"input {name!r} has the shape ['batch', {', '.join(map(str, dims[1:]))}]: it runs with [2, " \
        in result.stdout and "nothing to reduce" in result.stdout
    static = onnx.load(out / "static-inputs.onnx")
    assert [d.dim_value for d in static.graph.input[0].type.tensor_type.shape.dim] == [2, *dims[1:]]
    assert onnx.load(model).graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"  # the user's file


@pytest.mark.parametrize("given, message", [
    ("images", "is not NAME:D1xD2..."),
    ("images:1x8x0x8", "is not NAME:D1xD2..."),
    ("pixels:1x8x8x8", "--input-shape names ['pixels'], which is not an input of"),
    ("images:1x8x8", "does not fit input 'images'"),
    ("images:1x3x8x8", "does not fit input 'images'"),
])
def test_an_input_shape_that_does_not_fit_is_refused_before_anything_runs(given, message, tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(with_dynamic_batch(f64_gelu.build(1)), model)
    out = tmp_path / "out"
    result = harness("reduce", str(model), "--target", "ort-cpu", "--input-shape", given, "--out", str(out),
                     check=False)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "internal error" not in result.stderr and not (out / "session.json").exists()
    if "not an input" in message:
        assert "its inputs: images ['batch', 8, 8, 8]" in result.stderr
