"""`python -m harness run | report | generate`, black-box: the report reads the case index of --cases (never the case
library's code) and shows its remedies, backend notes and claims; damaged inputs give infra-error records naming the
file (never a verdict about the pattern), bad arguments are refused at parse time, and errors are one line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, read_records
from tests.harness.commands.test_main import harness
from tests.harness.worker.test_isolation import add_bad_cell
from tests.reports.conftest import ISSUE, make_record, write_jsonl

NOTE = "ONNX Runtime has no analogue of the Conv + PWN fusion: a pass here says nothing about TensorRT."
REMEDY = "Mark /model.0/act/Sigmoid's output as a network output: it breaks the fusion."


def cases_dir(tmp_path):
    """A cases directory holding only an index.json (all the report reads) with one S1 case."""
    index = {"format": "trt-matrix/cases/1", "cases": [{
        "id": "s1-conv-silu", "title": "YOLO stem Conv + SiLU", "pattern": "S1", "links": [ISSUE],
        "backend_notes": {"onnxruntime": NOTE}, "remedy": REMEDY,
        "variants": [
            {"name": "as-reported", "role": "failing", "description": "the stem as reported", "mode": "implicit-int8",
             "claims": [{"target": "trt86-orin", "outcome": "fail", "source": ISSUE, "strength": "issue-thread",
                         "category": "no-implementation", "note": ""}]},
            {"name": "sigmoid-output-marked", "role": "workaround", "description": "the workaround",
             "mode": "implicit-int8", "claims": []}]}]}
    out = tmp_path / "cases"
    out.mkdir()
    (out / "index.json").write_text(json.dumps(index))
    return out


def test_the_report_shows_the_index_remedy_claims_and_backend_notes(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [make_record("s1-conv-silu", "as-reported", "ort-cpu")])
    harness("report", "--results", str(results), "--cases", str(cases_dir(tmp_path)), "--out", str(tmp_path / "i.html"))
    html = (tmp_path / "i.html").read_text()
    assert REMEDY.replace("'", "&#39;") in html and ISSUE in html and "YOLO stem Conv + SiLU" in html
    assert NOTE in html and "ℹ ONNX Runtime note" in html


def test_a_missing_index_is_a_usage_error_naming_the_file(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [make_record("s1-conv-silu", "as-reported", "ort-cpu")])
    result = harness("report", "--results", str(results), "--cases", str(tmp_path / "nowhere"), "--out",
                     str(tmp_path / "i.html"), check=False)
    assert result.returncode == 2 and f"{tmp_path / 'nowhere' / 'index.json'}: no such file" in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "index.json").write_text(json.dumps({"format": "trt-matrix/cases/1", "cases": [{"id": "x"}]}))
    result = harness("report", "--results", str(results), "--cases", str(broken), "--out", str(tmp_path / "i.html"),
                     check=False)
    assert result.returncode == 2 and "cases[0] (x): field 'title' must be a str, found missing" in result.stderr
    assert "Traceback" not in result.stderr


def test_rendering_never_imports_the_case_library(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [make_record("s1-conv-silu", "as-reported", "ort-cpu")])
    script = (f"import sys; from reports.html import build_report; "
              f"build_report([{str(results)!r}], {str(tmp_path / 'i.html')!r}, {str(cases_dir(tmp_path))!r}); "
              f"print(sorted(m for m in sys.modules if m.split('.')[0] in ('cases', 'onnx_graphsurgeon')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.stdout.strip() == "[]"


def cells(cases_dir):
    index = json.loads((cases_dir / "index.json").read_text())
    return {f"{c['id']}/{v['name']}": v for c in index["cases"] for v in c["variants"]}


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda model, data, other: model.write_bytes(model.read_bytes()[:100]), "100 bytes"),
        (lambda model, data, other: model.write_bytes(other.read_bytes()), "not the model index.json describes"),
        (lambda model, data, other: data.write_bytes(data.read_bytes()[:-50]), "not the data index.json describes"),
    ],
    ids=["truncated-model", "swapped-model", "truncated-data"],
)
def test_a_damaged_input_is_an_infra_error_naming_the_file_never_a_verdict(cases_copy, tmp_path, damage, reason):
    entries = cells(cases_copy)
    damaged = entries["control-qdq-conv-relu/conv-relu"]
    model, data = cases_copy / damaged["model"], cases_copy / damaged["data"]
    damage(model, data, cases_copy / entries["control-implicit-conv-relu/conv-relu"]["model"])
    results = tmp_path / "r.jsonl"
    result = harness("run", "--cases", str(cases_copy), "--results", str(results), "--jobs", "1", check=False)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    by_cell = {f"{r['case']}/{r['variant']}": r for r in read_records(results)}
    record = by_cell.pop("control-qdq-conv-relu/conv-relu")
    assert record["outcome"] == "infra-error" and record["agrees"] is None
    named = str(data if "data" in reason else model.resolve())
    assert record["failure"]["message"].startswith(f"damaged input: {Path(named).resolve()}: ")
    assert reason in record["failure"]["message"]
    progress = next(l for l in result.stdout.splitlines() if "control-qdq-conv-relu/conv-relu: " in l)
    assert "infra-error (environment): damaged input: " in progress and str(Path(named).resolve()) in progress
    assert {r["outcome"] for r in by_cell.values()} == {"pass"}  # the undamaged cells still ran


def matrix_with(tmp_path, backend: str) -> Path:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(f"targets:\n  probe:\n    title: probe\n    backend: {backend}\n    runner: local\n"
                      "    platform: any\n")
    return matrix


def test_a_timeout_never_names_a_stage_an_earlier_run_reached(cases_copy, tmp_path):
    add_bad_cell(cases_copy, "bad-stall")
    results = tmp_path / "r.jsonl"
    first = ("--matrix", str(matrix_with(tmp_path, "onnxruntime")), "run", "--target", "probe")
    harness(*first, "--cases", str(cases_copy), "--results", str(results), "-k", "*bad-stall")
    assert read_records(results)[0]["stage"] == "compare"  # the work dir's stage file now says "compare"
    stall = ("--matrix", str(matrix_with(tmp_path, "tests.harness.worker.misbehaving_backends:StallAtStartBackend")),
             "run", "--target", "probe")
    harness(*stall, "--cases", str(cases_copy), "--results", str(results), "-k", "*bad-stall", "--force",
            "--timeout", "2")
    record = read_records(results)[-1]
    assert (record["outcome"], record["stage"]) == ("timeout", "generate")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--jobs", "0", "argument --jobs: 0 is not allowed: give 1 or more"),
     ("--jobs", "two", "argument --jobs: 'two' is not a whole number"),
     ("--timeout", "0", "argument --timeout: 0 is not allowed: give a number of seconds above 0"),
     ("--timeout", "-1", "argument --timeout: -1 is not allowed"),
     ("--timeout", "nan", "argument --timeout: nan is not allowed")],
)
def test_cell_options_are_checked_at_parse_time(control_cases_dir, tmp_path, option, value, message):
    result = harness("run", "--cases", str(control_cases_dir), "--results", str(tmp_path / "r.jsonl"), option, value,
                     check=False)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_a_k_that_selects_no_cell_is_an_error_listing_the_closest_names(control_cases_dir, tmp_path):
    result = harness("run", "--cases", str(control_cases_dir), "--results", str(tmp_path / "r.jsonl"), "-k",
                     "contrl-qdq", check=False)
    assert result.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert (f"error: -k 'contrl-qdq' matches none of the 3 name(s) in {control_cases_dir / 'index.json'}; closest: "
            "control-qdq-conv-relu/conv-relu") in result.stderr


def test_generate_with_a_k_that_selects_no_case_lists_the_closest_case_ids(tmp_path):
    result = harness("generate", "--out", str(tmp_path / "cases"), "-k", "s1-conv-silo", check=False)
    assert result.returncode == 2 and "closest: s1-conv-silu" in result.stderr
    assert not (tmp_path / "cases").exists()


@pytest.mark.parametrize(
    "args",
    [("generate", "--out", "{file}", "-k", "control"), ("run", "--cases", "{cases}", "--results", "{dir}"),
     ("report", "--results", "{dir}", "--cases", "{cases}"),
     ("report", "--results", "{results}", "--cases", "{cases}", "--out", "{dir}")],
    ids=["generate-out-file", "run-results-dir", "report-results-dir", "report-out-dir"],
)
def test_a_path_of_the_wrong_kind_is_one_error_line_naming_it(control_cases_dir, tmp_path, args):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "results.jsonl").write_text("")
    paths = {"file": tmp_path / "file", "dir": tmp_path / "dir", "cases": control_cases_dir,
             "results": tmp_path / "results.jsonl"}
    argv = [a.format(**paths) for a in args]
    result = harness(*argv, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    named = next(p for a, p in zip(args, argv) if a in ("{file}", "{dir}"))
    assert named in result.stderr and ("is a directory" in result.stderr or "is a file" in result.stderr)



@pytest.fixture(scope="module")
def fp8_gemm_results(generated_cases, tmp_path_factory):
    """P18 (an FP8 GEMM) and the Q/DQ control generated, and run on ort-cpu by the real command without a gate."""
    import cases

    cases_dir = generated_cases("p18-and-control", [cases.get_case("p18-fp8-gemm-mixed-scales"),
                                                    cases.get_case("control-qdq-conv-relu")])
    results = tmp_path_factory.mktemp("fp8-gemm") / "results.jsonl"
    ran = harness("run", "--target", "ort-cpu", "--cases", str(cases_dir), "--results", str(results), check=False)
    return cases_dir, results, ran


def test_an_fp8_request_run_wider_is_a_fallback_with_the_asked_and_got_precisions(fp8_gemm_results):
    _, results, ran = fp8_gemm_results
    assert ran.returncode == 0, ran.stderr  # no --fail-on: the run is not a gate
    record = next(r for r in read_records(results) if (r["case"], r["variant"]) == ("p18-fp8-gemm-mixed-scales",
                                                                                   "as-reported"))
    matmul = "/model/layers.0/mlp/up_proj/MatMul"
    # ONNX Runtime's CPU EP has no FP8 GEMM: it runs the MatMul in FP32 on dequantized values, within tolerance
    assert record["requested_precision"] == {matmul: "fp8"} and record["precision"][matmul] == "fp32"
    assert (record["outcome"], record["fallback_nodes"]) == ("fallback", [matmul])
    assert record["details"]["fallback_precision"] == {matmul: {"asked": "fp8", "got": "fp32"}}


@pytest.mark.parametrize("level, selected, status", [
    ("fallback", "p18-fp8-gemm-mixed-scales/as-reported", 1),
    ("mismatch", "p18-fp8-gemm-mixed-scales/as-reported", 0),
    ("fail", "p18-fp8-gemm-mixed-scales/as-reported", 0),
    ("fallback", "control-qdq-conv-relu/*", 0),
])
def test_fail_on_makes_a_silent_precision_loss_exit_1(fp8_gemm_results, level, selected, status):
    cases_dir, results, _ = fp8_gemm_results
    # every selected cell is already recorded: the gate reads their latest records, as a resumed run would
    gated = harness("run", "--target", "ort-cpu", "--cases", str(cases_dir), "--results", str(results), "-k",
                    selected, "--fail-on", level, check=False)
    assert gated.returncode == status, gated.stderr
    named = ("--fail-on fallback: p18-fp8-gemm-mixed-scales/as-reported on ort-cpu: fallback "
             "(/model/layers.0/mlp/up_proj/MatMul fp8 -> fp32)")
    assert (named in gated.stderr) == (status == 1)


def test_fail_on_refuses_a_level_that_is_not_one(control_cases_dir, tmp_path):
    refused = harness("run", "--cases", str(control_cases_dir), "--results", str(tmp_path / "r.jsonl"), "--fail-on",
                      "unverified", check=False)
    assert refused.returncode == 2 and "fallback|mismatch|fail" in refused.stderr
