"""`python -m harness reduce`, black-box: its help, and bad input refused before anything runs (exit 2). The
reductions themselves are tested end to end in tests/harness/reduction/."""
from __future__ import annotations

import onnx

from tests.harness.commands.test_main import harness
from tests.models import f64_gelu


def test_help_teaches_the_steps_resume_and_exit_codes():
    out = harness("reduce", "--help").stdout
    for words in ("polygraphy debug reduce", "bisect first, then linear", "--keep", "--container-per-check",
                  "--keep-weights", "resumes", "reduce.json", "case_<id>.py", "Exit status"):
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
    assert result.returncode == 2 and "--target 'ort-gpu' is not in" in result.stderr and "ort-cpu" in result.stderr


def test_a_damaged_session_file_in_the_output_directory_is_named(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(f64_gelu.build(1), model)
    out = tmp_path / "out"
    out.mkdir()
    (out / "session.json").write_text("{not json")
    result = harness("reduce", str(model), "--target", "ort-cpu", "--out", str(out), check=False)
    assert result.returncode == 3 and f"{out / 'session.json'}: not a reduction's session file" in result.stderr
