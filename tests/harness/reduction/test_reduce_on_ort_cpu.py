"""`harness reduce` end to end on ort-cpu, black-box through the real command, on a real failure: a 102-node Q/DQ
CNN whose one GELU runs in float64 (ONNX Runtime's CPU provider has no double Erf kernel). The reduction keeps that
failure, ends at a tenth of the nodes or fewer, and its case module reproduces it through `generate` and `run`;
an interrupted reduction resumes from its replay without running its checks again."""
from __future__ import annotations

import json
import signal
import time

import onnx
import pytest

from cases import get_case
from cases.generate import export_model

from harness.reduction.state import read_steps
from tests.harness.commands.test_main import harness, interruptible_harness
from tests.harness.commands.test_reduce import with_dynamic_batch
from tests.harness.reduction.reproduce import reproduce_case, same_failure, summary
from tests.models import f64_gelu

BLOCKS = 10


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "f64-gelu.onnx"
    onnx.save(f64_gelu.build(BLOCKS), path)
    return path


@pytest.fixture(scope="module")
def reduction(model, tmp_path_factory):
    out = tmp_path_factory.mktemp("reduction")
    result = harness("reduce", str(model), "--target", "ort-cpu", "--out", str(out), timeout=900)
    return out, result


def test_the_failure_kept_is_the_whole_models_own(reduction):
    out, result = reduction
    kept = summary(out)["failure_kept"]
    assert (kept["outcome"], kept["category"], kept["error_kind"]) == ("fail", "no-implementation", "NotImplemented")
    assert f"{f64_gelu.double_scope(BLOCKS)}/Erf" in kept["message"]
    assert "failure to keep: fail / no-implementation / NotImplemented" in result.stdout


def test_the_reduced_model_is_at_most_a_tenth_and_fails_the_same_way(reduction):
    out, result = reduction
    data = summary(out)
    assert data["nodes_before"] == 10 * BLOCKS + 2 and data["nodes_after"] * 10 <= data["nodes_before"]
    reduced = onnx.load(out / "reduced.onnx")
    assert "Erf" in [n.op_type for n in reduced.graph.node]
    assert data["reduced_reproduces"] is True
    assert f"reduced {data['nodes_before']} -> {data['nodes_after']} nodes" in result.stdout


def test_every_check_is_printed_with_its_time_and_recorded(reduction):
    out, result = reduction
    steps = summary(out)["steps"]
    assert steps == read_steps(out) and [s["check"] for s in steps] == list(range(1, len(steps) + 1))
    assert {s["phase"] for s in steps} == {"bisect", "linear"}
    assert any(s["reproduced"] for s in steps) and not all(s["reproduced"] for s in steps)
    for step in steps:
        verdict = "same failure" if step["reproduced"] else "not the same"
        assert (f"check {step['check']} ({step['phase']}): {step['nodes']} nodes -> {step['outcome']} -> {verdict} "
                f"({step['seconds']:.1f} s)") in result.stdout
    records = [json.loads(line) for line in (out / "checks.jsonl").read_text().splitlines()]
    assert len(records) == len(steps) + 1  # one per check, and the reduced model checked once more


def test_the_case_module_reproduces_the_failure_through_generate_and_run(reduction, tmp_path):
    out, _ = reduction
    data = summary(out)
    record, skeleton = reproduce_case(out, "ort-cpu", tmp_path)
    assert same_failure(record, data["failure_kept"]), record["failure"]
    assert skeleton.returncode == 0, skeleton.stdout + skeleton.stderr
    source = (out / f"case_{data['case_id'].replace('-', '_')}.py").read_text()
    assert "Observation(target='ort-cpu', outcome='fail', category='no-implementation'" in source
    assert "Claim" not in source.replace("no Claim", "")


def test_an_interrupted_reduction_resumes_without_running_its_checks_again(model, reduction, tmp_path):
    out = tmp_path / "interrupted"
    process = interruptible_harness("reduce", str(model), "--target", "ort-cpu", "--out", str(out))
    deadline = time.monotonic() + 300
    while len(read_steps(out)) < 4 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    done_before = len(read_steps(out))
    assert not (out / "reduced.onnx").exists() and (out / "replay-bisect.json").is_file()

    resumed = harness("reduce", str(model), "--target", "ort-cpu", "--out", str(out), timeout=900)
    assert "resuming the reduction" in resumed.stdout and "resuming from" in resumed.stdout
    full = summary(reduction[0])
    data = summary(out)
    assert data["nodes_after"] == full["nodes_after"] and data["reduced_reproduces"]
    # The replayed checks were not run again: the resumed run ran only the checks the interrupted one had not.
    assert data["checks"] <= full["checks"] + 1 and data["checks"] - done_before < full["checks"]


def test_a_model_that_passes_has_nothing_to_reduce(tmp_path):
    control = get_case("control-qdq-conv-relu")  # passes on ort-cpu: its Q/DQ conv runs as QLinearConv
    model = tmp_path / "control.onnx"
    onnx.save(export_model(control, control.variants[0])[0], model)
    result = harness("reduce", str(model), "--target", "ort-cpu", "--out", str(tmp_path / "out"))
    assert result.returncode == 0
    assert "passes on ort-cpu: nothing to reduce" in result.stdout
    assert not (tmp_path / "out" / "reduced.onnx").exists()


def test_keep_node_keeps_the_node_the_failure_names(model, tmp_path):
    out = tmp_path / "by-node"
    harness("reduce", str(model), "--target", "ort-cpu", "--keep", "node", "--out", str(out), timeout=900)
    data = summary(out)
    erf = f"{f64_gelu.double_scope(BLOCKS)}/Erf"
    assert data["failure_kept"]["node"] == erf and data["reduced_reproduces"]
    assert erf in [n.name for n in onnx.load(out / "reduced.onnx").graph.node]
    assert all(step["outcome"].endswith(f"at node {erf!r}") for step in data["steps"] if step["reproduced"])


def test_a_model_exported_with_a_dynamic_batch_is_reduced_at_batch_1_and_says_so(tmp_path):
    model = tmp_path / "f64-gelu-dynamic.onnx"
    onnx.save(with_dynamic_batch(f64_gelu.build(4)), model)
    out = tmp_path / "out"
    result = harness("reduce", str(model), "--target", "ort-cpu", "--out", str(out), timeout=900)
    note = ("input 'images' has the shape ['batch', 8, 8, 8]: symbolic dimensions set to 1, as `scan --run` does: "
            "[1, 8, 8, 8] (--input-shape images:1x8x8x8 with other sizes to choose them)")
    assert result.stdout.startswith(note + "\n")
    data = summary(out)
    assert data["model"] == str(model) and data["input_shapes"] == {"images": [1, 8, 8, 8]}
    assert data["input_notes"] == [note] and data["model_run"] == str(out / "static-inputs.onnx")
    assert data["reduced_reproduces"] and data["nodes_after"] < data["nodes_before"] == 42
    assert "Erf" in [n.op_type for n in onnx.load(out / "reduced.onnx").graph.node]
