"""`python -m harness scan`, black-box through the real command: bad input, a clean model, verdicts and exit codes,
and --run end to end on ort-cpu."""
from __future__ import annotations

import json

import onnx
import pytest

from tests.harness.commands.test_main import harness
from tests.models.fixtures import library_results, model_files  # noqa: F401


def scan(*args, check=False):
    return harness("scan", *map(str, args), check=check)


def scan_json(out) -> dict:
    return json.loads((out / "scan.json").read_text())


def bad_inputs(tmp_path, model_files):
    """(path, what the message must say) for each kind of bad input."""
    text = tmp_path / "notes.onnx"
    text.write_text("not a model\n")
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(model_files["backbone-silu"].read_bytes()[:3000])
    future = tmp_path / "future.onnx"
    model = onnx.load(model_files["plain-cnn-qdq"])
    model.opset_import[0].version = onnx.defs.onnx_opset_version() + 1
    onnx.save(model, future)
    external = tmp_path / "external" / "model.onnx"
    external.parent.mkdir()
    onnx.save(onnx.load(model_files["backbone-silu"]), external, save_as_external_data=True, location="weights.bin",
              size_threshold=0)
    (external.parent / "weights.bin").unlink()
    invalid = tmp_path / "invalid.onnx"
    model = onnx.load(model_files["plain-cnn-qdq"])
    model.graph.node[3].input[0] = "no_such_tensor"  # read, written by nobody: onnx's checker refuses it
    onnx.save(model, invalid)
    return {
        "not-onnx": (text, "not an ONNX file"),
        "truncated": (truncated, "truncated ONNX file: it ends inside the model's 'graph' field"),
        "opset-too-new": (future, f"opset {onnx.defs.onnx_opset_version() + 1} is newer than the installed onnx"),
        "missing-external-data": (external, "external data file 'weights.bin' of tensor"),
        "missing-file": (tmp_path / "nothing.onnx", "no such file"),
        "invalid": (invalid, "not a valid ONNX model"),
    }


@pytest.mark.parametrize("kind", ["not-onnx", "truncated", "opset-too-new", "missing-external-data", "missing-file",
                                  "invalid"])
def test_bad_input_is_one_line_naming_the_file_and_the_problem_exit_2(kind, tmp_path, model_files):
    path, problem = bad_inputs(tmp_path, model_files)[kind]
    result = scan(path, "--out", tmp_path / "out")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {path}: ") and problem in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "scan.json").exists()


def test_an_unknown_target_or_results_path_is_exit_2(tmp_path, model_files):
    result = scan(model_files["plain-cnn-qdq"], "--targets", "trt99-mars", "--out", tmp_path)
    assert result.returncode == 2 and "--targets 'trt99-mars': not a target of" in result.stderr
    result = scan(model_files["plain-cnn-qdq"], "--run-on", "ort-cpu", "--out", tmp_path)
    assert result.returncode == 2 and "add --run" in result.stderr
    result = scan(model_files["plain-cnn-qdq"], "--results", tmp_path / "nope.jsonl", "--out", tmp_path)
    assert result.returncode == 2 and f"error: {tmp_path / 'nope.jsonl'}: no such results file" in result.stderr


def test_a_model_without_any_known_pattern_is_clean(tmp_path, model_files, library_results):
    result = scan(model_files["plain-cnn-qdq"], "--results", library_results, "--out", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no known INT8 failure pattern of the library in this model" in result.stdout
    data = scan_json(tmp_path)
    assert data["findings"] == [] and data["model"]["mode"] == "explicit-qdq"
    assert {t["verdict"] for t in data["targets"] if t["available"]} == {"clear"}
    assert 'data-clean="true"' in (tmp_path / "scan.html").read_text()


def test_a_claimed_failure_fails_the_scan_and_names_the_users_nodes(tmp_path, model_files, library_results):
    result = scan(model_files["backbone-silu"], "--results", library_results, "--out", tmp_path, "--verbose")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "S1 s1-conv-silu/size-64 [sweep]: 1 place(s): /backbone/stem/conv/Conv" in result.stdout
    # On the TensorRT 11 targets the fact that 11 has no calibrator stops the model. S1 is claimed to fail on
    # trt86-orin, reproduced there, but on a model and calibrator not the user's: shown blocked, labelled, no gate.
    assert ("expected to fail (--fail-on blocked) on 4 target(s): trt11-x86, trt114-orin, trt114-orin-dla, "
            "trt114-thor") in result.stderr
    orin = next(line for line in result.stdout.splitlines() if line.strip().startswith("trt86-orin"))
    assert "blocked" in orin and "(claimed)" in orin and "claimed upstream (issue thread), not observed here" in orin
    assert "not a CI gate here" in orin
    assert "not failing (--fail-on blocked) on 1 target(s) whose verdict rests on upstream claims" in result.stderr
    assert result.stderr.rstrip().endswith("--fail-on unverified stops at them): trt86-orin")
    targets = {t["target"]: t for t in scan_json(tmp_path)["targets"]}
    assert (targets["trt86-orin"]["verdict"], targets["trt86-orin"]["gate_verdict"]) == ("blocked", "unverified")
    assert "workaround for s1-conv-silu: conv-output-marked (likely, claimed upstream)" in result.stdout
    targets = {t["target"]: t for t in scan_json(tmp_path)["targets"]}
    assert (targets["ort-cpu"]["verdict"], targets["ort-cpu"]["basis"]) == ("likely", "observed")
    assert str(library_results) in targets["ort-cpu"]["reason"]
    assert targets["trt92-orin"]["verdict"] == "unavailable"


def test_targets_and_fail_on_choose_what_fails(tmp_path, model_files, library_results):
    model = model_files["backbone-silu"]
    assert scan(model, "--results", library_results, "--targets", "ort-cpu", "--out", tmp_path).returncode == 0
    assert [t["target"] for t in scan_json(tmp_path)["targets"]] == ["ort-cpu"]
    result = scan(model, "--targets", "trt86-x86", "--fail-on", "unverified", "--out", tmp_path)
    assert result.returncode == 1 and "trt86-x86" in result.stderr


def test_run_checks_the_users_own_layers_on_ort_cpu(tmp_path, model_files):
    result = scan(model_files["backbone-silu-qdq"], "--run", "--run-on", "ort-cpu", "--targets", "trt86-x86",
                  "--out", tmp_path, "--fail-on", "fallback")
    data = scan_json(tmp_path)
    reproducers = tmp_path / "reproducers"
    assert (reproducers / "index.json").is_file() and (reproducers / "results.jsonl").is_file()
    assert data["run"]["targets"] == ["ort-cpu"]
    assert [t["target"] for t in data["targets"]] == ["trt86-x86", "ort-cpu"]  # where it ran is predicted too
    records = [json.loads(line) for line in (reproducers / "results.jsonl").read_text().splitlines()]
    assert len(records) == data["run"]["reproducers"] and all(r["target"] == "ort-cpu" for r in records)
    assert sorted((r["case"], r["variant"]) for r in records if r["case"].startswith(("s3-", "s5-"))) == [
        ("s3-depthwise-qdq", "backbone-dw-conv-Conv"), ("s5-qdq-resnet-block", "backbone-layer1-layer1.0-Add"),
        ("s5-qdq-resnet-block", "backbone-layer2-layer2.0-Add")]
    block = next(f for f in data["findings"] if f["variant"] == "identity-shortcut-residual-quantizer")
    first, second = block["occurrences"]
    assert first["reproducer"]["name"] == "backbone-layer1-layer1.0-Add"
    assert second["reproducer"]["shared_with"] == "/backbone/layer1/layer1.0/Add"
    # Each finding's ort-cpu verdict is what its own layers did there, read from the records themselves.
    outcome = {(r["case"], r["variant"]): r["outcome"] for r in records}
    for finding in data["findings"]:
        layers = {outcome[(finding["case"], o["reproducer"]["name"])] for o in finding["occurrences"]}
        expected = "verified" if layers == {"pass"} else "fallback" if layers <= {"pass", "fallback"} else "blocked"
        verdict = finding["verdicts"]["ort-cpu"]
        assert (verdict["verdict"], verdict["basis"]) == (expected, "observed"), finding["case"]
        assert verdict["evidence"][0]["scope"] == "your-layer"
        assert verdict["evidence"][0]["source"] == str(reproducers / "results.jsonl")
    # S3 is claimed to fail on TensorRT 8.6 x86 by one report on another GPU: shown blocked, not gating; a
    # maintainer's range claim that a residual Add without Q/DQ on its identity falls back (P3) gates --fail-on
    # fallback there, and ort-cpu fails with it when some layer of the user's did not pass there.
    trt86 = next(t for t in data["targets"] if t["target"] == "trt86-x86")
    assert (trt86["verdict"], trt86["gate_verdict"]) == ("blocked", "fallback")
    s3 = next(f for f in data["findings"] if f["case"] == "s3-depthwise-qdq")["verdicts"]["trt86-x86"]
    assert (s3["verdict"], s3["gates"]) == ("blocked", False) and "one report, not reproduced" in s3["reason"]
    ort_fails = any(f["verdicts"]["ort-cpu"]["verdict"] != "verified" for f in data["findings"])
    assert result.returncode == 1 and data["failing_targets"] == ["trt86-x86"] + (["ort-cpu"] if ort_fails else [])


def test_run_verifies_an_implicit_model_on_ort_cpu(tmp_path, model_files):
    result = scan(model_files["backbone-silu"], "--run", "--out", tmp_path, "--targets", "ort-cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    data = scan_json(tmp_path)
    (ort,) = data["targets"]
    # the user's own S1 layers ran here; P10 (the model as a whole needs a calibrator) is not applicable to ONNX
    # Runtime (its case says so): listed, not the headline
    assert {f["finding"]: f["verdict"] for f in ort["findings"]} == {
        "p10-implicit-lifecycle/calibrator-entropy2": "clear", "s1-conv-silu/channels-32": "verified",
        "s1-conv-silu/channels-64": "verified", "s1-conv-silu/size-64": "verified"}
    records = [json.loads(line) for line in (tmp_path / "reproducers" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["variant"] for r in records) == ["backbone-dw-conv-Conv", "backbone-pw-conv-Conv",
                                                     "backbone-stem-conv-Conv"]
    assert all(r["mode"] == "implicit-int8" and r["outcome"] == "pass" for r in records)


def test_an_out_directory_that_cannot_be_written_is_exit_2(tmp_path, model_files):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = scan(model_files["backbone-silu"], "--out", blocker / "scan")
    assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    result = scan(model_files["backbone-silu"], "--run", "--out", blocker / "scan")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_damaged_results_still_give_verdicts_and_exit_3(tmp_path, model_files, library_results):
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(library_results.read_text() + "{not a record\n" + library_results.read_text()[:40])
    result = scan(model_files["backbone-silu"], "--results", damaged, "--targets", "ort-cpu", "--out", tmp_path / "o")
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"warning: {damaged}:" in result.stderr and "the verdicts rest on what could be read" in result.stderr
    data = scan_json(tmp_path / "o")
    assert data["evidence_damaged"] and data["exit_code"] == 3
    assert data["targets"][0]["verdict"] == "likely"  # the good records were still read


def test_a_silent_fp8_loss_observed_on_onnx_runtime_is_listed_never_the_headline(tmp_path, generated_cases):
    """A user's FP8 GEMM with per-token and per-channel scales (P18's form) scanned against records where that form
    ran within tolerance but its FP8 MatMul ran FP32 on ONNX Runtime: P18's case says ONNX Runtime has no FP8 GEMM to
    fall back from, so the finding is listed there as not applicable (the record beside it), never the target's
    headline, and --fail-on fallback does not stop at it."""
    import cases

    p18 = cases.get_case("p18-fp8-gemm-mixed-scales")
    cases_dir = generated_cases("p18-only", [p18])
    results = tmp_path / "results.jsonl"
    harness("run", "--target", "ort-cpu", "--cases", str(cases_dir), "--results", str(results), "-k",
            "p18-fp8-gemm-mixed-scales/as-reported")
    model = cases_dir / p18.id / "as-reported.onnx"
    plain = scan(model, "--results", results, "--targets", "ort-cpu", "--out", tmp_path / "plain")
    assert plain.returncode == 0
    (finding,) = [f for f in scan_json(tmp_path / "plain")["findings"] if f["case"] == p18.id]
    verdict = finding["verdicts"]["ort-cpu"]
    assert (verdict["verdict"], verdict["basis"]) == ("clear", "not-applicable")
    assert "ONNX Runtime has no FP8 GEMM" in verdict["reason"]
    seen = [e for e in verdict["evidence"] if e["kind"] == "observed"]
    assert seen and "/model/layers.0/mlp/up_proj/MatMul not in the precision asked" in seen[0]["text"]
    gated = scan(model, "--results", results, "--targets", "ort-cpu", "--fail-on", "fallback", "--out",
                 tmp_path / "gated")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    summary = scan_json(tmp_path / "gated")["model"]
    assert "FP8 (E4M3)" in summary["mode_text"] and "INT8" not in summary["mode_text"]
