"""The command line, tested black-box through the real command (`python -m harness`)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REFERENCE, REPO, read_records

COMMANDS = ["generate", "list", "run", "report", "doctor", "classify", "layers", "containers", "nightly", "merge",
            "history", "diff", "scan", "diagnose", "nightly-plan"]


def interruptible_harness(*args) -> subprocess.Popen:
    """``python -m harness ARGS`` started in the background, Ctrl-C (SIGINT) reaching it as it reaches a user's: a
    shell that runs the tests as a background job starts them with SIGINT ignored, and children inherit that."""
    return subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def harness(*args, check=True, timeout=240, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(REPO), **kwargs.pop("env", {})}
    result = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                            timeout=timeout, cwd=kwargs.pop("cwd", REPO), **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def test_help_lists_every_command_and_a_typical_session():
    out = harness("--help").stdout
    for command in COMMANDS:
        assert command in out
    assert "trt-matrix run --target ort-cpu" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = harness(command, "--help")
    assert result.stdout.startswith("usage: trt-matrix " + command)
    assert "python -m harness" not in result.stdout  # the installed command is what a user types


def test_list_shows_cases_variants_and_targets_with_unavailability_reasons():
    out = harness("list").stdout
    assert "control-qdq-conv-relu/conv-relu" in out
    assert "ort-cpu" in out and "(default)" in out
    assert "trt92-orin" in out and "unavailable: TensorRT 9.x was never released for Jetson" in out


def test_run_with_an_unknown_target_fails_with_the_nearest_ones(control_cases_dir, tmp_path):
    result = harness("run", "--target", "trt86-orn", "--cases", str(control_cases_dir),
                     "--results", str(tmp_path / "r.jsonl"), check=False)
    assert result.returncode == 2
    assert "--target 'trt86-orn': not a target of" in result.stderr and "trt86-orin" in result.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_run_without_a_cases_directory_says_how_to_generate_one(tmp_path):
    result = harness("run", "--cases", str(tmp_path / "none"), "--results", str(tmp_path / "r.jsonl"), check=False)
    assert result.returncode == 2 and "trt-matrix generate --out" in result.stderr


def test_a_bad_matrix_is_a_readable_error_not_a_traceback(tmp_path):
    bad = tmp_path / "matrix.yaml"
    bad.write_text("targets:\n  t1:\n    title: T\n    backend: onnxruntime\n    runner: ssh\n    platform: any\n")
    result = harness("--matrix", str(bad), "list", check=False)
    assert result.returncode == 2
    assert f"{bad}: targets.t1.runner: 'ssh' is not allowed" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unavailable_target_still_records_every_cell_with_its_reason(control_cases_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    harness("run", "--target", "trt92-orin", "--cases", str(control_cases_dir), "--results", str(results))
    records = read_records(results)
    assert len(records) == 3
    assert all(r["outcome"] == "unavailable" and "never released for Jetson" in r["failure"]["message"]
               for r in records)


def test_a_target_without_its_backend_gives_infra_error_records_and_exit_status_3(control_cases_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    result = harness("run", "--target", "trt-local", "--cases", str(control_cases_dir), "--results", str(results),
                     check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    records = read_records(results)
    assert len(records) == 3 and all(r["outcome"] == "infra-error" for r in records)
    assert "tensorrt" in records[0]["failure"]["message"].lower()


def slow_matrix(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text("targets:\n  slow:\n    title: slow ORT\n    runner: local\n    platform: any\n"
                    "    backend: tests.harness.worker.misbehaving_backends:SlowBackend\n")
    return path


def test_an_interrupted_run_resumes_where_it_stopped(control_cases_dir, tmp_path):
    results, matrix = tmp_path / "r.jsonl", slow_matrix(tmp_path)
    args = [sys.executable, "-m", "harness", "--matrix", str(matrix), "run", "--target", "slow",
            "--cases", str(control_cases_dir), "--results", str(results), "--jobs", "1"]
    process = subprocess.Popen(args, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # as hard as an interruption gets: no cleanup runs
    process.wait()
    first = read_records(results)
    assert 1 <= len(first) < 3, "the run should have been interrupted between two cells"

    rerun = harness("--matrix", str(matrix), "run", "--target", "slow", "--cases", str(control_cases_dir),
                    "--results", str(results))
    assert f"{len(first)} already recorded and skipped" in rerun.stdout
    records = read_records(results)
    keys = [(r["case"], r["variant"]) for r in records]
    assert len(keys) == len(set(keys)) == 3
    assert records[: len(first)] == first  # nothing recorded before the interruption was lost or rewritten


def test_force_runs_recorded_cells_again(control_cases_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    harness("run", "-k", "control-qdq*", "--cases", str(control_cases_dir), "--results", str(results))
    harness("run", "-k", "control-qdq*", "--cases", str(control_cases_dir), "--results", str(results))
    assert len(read_records(results)) == 1
    harness("run", "-k", "control-qdq*", "--force", "--cases", str(control_cases_dir), "--results", str(results))
    assert len(read_records(results)) == 2


def test_classify_prints_the_category_and_node_of_a_real_log():
    log = REFERENCE / "trt-logs" / "F04.log"
    result = json.loads(harness("classify", str(log)).stdout)
    assert result["category"] == "no-implementation"
    assert result["node"] == "/model.1/conv/Conv + PWN(PWN(/model.1/act/Sigmoid), /model.1/act/Mul)"


def test_layers_prints_int8_convolutions_of_a_real_qat_engine():
    engine = REFERENCE / "engine-layers" / "a100-resnet-qat.graph.json"
    layers = json.loads(harness("layers", str(engine)).stdout)
    convolutions = [layer for layer in layers if "Convolution" in (layer.get("layer_type") or "")]
    assert convolutions and all(layer["precision"] == "int8" for layer in convolutions)


def test_doctor_reports_what_runs_here():
    report = json.loads(harness("doctor").stdout)
    assert report["onnxruntime"]["importable"] is True
    assert report["environment"]["python"].startswith("3.")
    assert "tensorrt" in report and "docker" in report


def test_a_resumed_run_after_a_torn_write_keeps_the_file_readable(control_cases_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    harness("run", "-k", "control-qdq*", "--cases", str(control_cases_dir), "--results", str(results))
    complete = results.read_text()
    results.write_text(complete + '{"schema": "trt-matrix/record/1", "case": "control-impl')  # a crash mid-write
    rerun = harness("run", "--cases", str(control_cases_dir), "--results", str(results))
    assert "unfinished last line was moved" in rerun.stderr
    records = read_records(results)  # every line parses: the fragment is gone from the results file
    assert len(records) == 3 and results.read_text().startswith(complete)
    assert (tmp_path / "r.jsonl.torn").read_text().startswith('{"schema"')


def test_a_resumed_run_moves_a_record_that_breaks_the_schema_aside_and_runs_its_cell_again(control_cases_dir,
                                                                                            tmp_path):
    results = tmp_path / "r.jsonl"
    harness("run", "--cases", str(control_cases_dir), "--results", str(results))
    lines = results.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["outcome"] = "passed-mostly"  # e.g. hand-edited, or written by another version of the harness
    lines[1] = json.dumps(broken)
    results.write_text("\n".join(lines) + "\n")

    rerun = harness("run", "--cases", str(control_cases_dir), "--results", str(results))

    assert f"warning: {results}:2: field 'outcome'" in rerun.stderr and "moved to r.jsonl.rejected" in rerun.stderr
    assert "1 cell(s) run, 2 already recorded and skipped" in rerun.stdout
    assert (tmp_path / "r.jsonl.rejected").read_text() == lines[1] + "\n"  # kept verbatim
    records = read_records(results)
    assert sorted((r["case"], r["variant"]) for r in records) == sorted({(r["case"], r["variant"]) for r in records})
    assert len(records) == 3 and all(r["outcome"] == "pass" for r in records)
    harness("report", "--results", str(results), "--cases", str(control_cases_dir), "--out", str(tmp_path / "index.html"))  # the report reads it


def test_report_over_a_torn_last_line_warns_in_one_line_like_run(control_cases_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    harness("run", "-k", "control-qdq*", "--cases", str(control_cases_dir), "--results", str(results))
    with results.open("a") as out:
        out.write('{"schema": "trt-matrix/record/1", "case": "control-impl')  # a crash mid-write
    result = harness("report", "--results", str(results), "--cases", str(control_cases_dir), "--out", str(tmp_path / "index.html"))
    assert result.stderr == (f"warning: {results}:2: torn last line (the file ends mid-record: the writer died while "
                             "writing it); the cell it held has no record\n")
    assert f"{results}:2: torn last line" in (tmp_path / "index.html").read_text()


def test_several_targets_run_in_one_command_into_one_results_file(control_cases_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    out = harness("run", "--target", "ort-cpu", "--target", "trt102-orin", "--cases", str(control_cases_dir),
                  "--results", str(results)).stdout
    assert "ort-cpu: 3 cell(s) run" in out and "trt102-orin: 3 cell(s) run" in out
    by_target = {}
    for record in read_records(results):
        by_target.setdefault(record["target"], set()).add(record["outcome"])
    assert by_target == {"ort-cpu": {"pass"}, "trt102-orin": {"unavailable"}}


def harness_with_a_bug(exception: str, *args):
    """The real command line with a bug put into the harness first: ``load_matrix`` raises ``exception``."""
    code = (f"import sys, harness.matrix as m, harness.worker.record as rec\n"
            f"def broken(*args, **kwargs):\n    raise {exception}\n"
            f"m.load_matrix = broken\n"
            f"from harness.commands.main import main\nsys.exit(main({list(args)!r}))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TRT_MATRIX_TRACEBACK", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


@pytest.mark.parametrize("exception", ['ValueError("a harness bug")', 'rec.RecordInvariantError("a harness bug")'])
def test_a_bug_that_raises_a_value_error_or_breaks_a_record_invariant_is_an_internal_error_never_usage(exception):
    result = harness_with_a_bug(exception, "list")
    assert result.returncode == 3, result.stderr
    assert "internal error of the harness" in result.stderr and "a harness bug" in result.stderr
    assert "TRT_MATRIX_TRACEBACK=1" in result.stderr and "Traceback" not in result.stderr


def test_bad_input_is_still_usage_naming_the_input(tmp_path):
    result = harness("containers", "build", "ort-cpu", check=False)  # a target, but not one that runs in docker
    assert result.returncode == 2 and "not a docker target" in result.stderr and "ort1.15-cpu" in result.stderr
    (tmp_path / "index.json").write_text("{}")
    result = harness("run", "--cases", str(tmp_path), "--results", str(tmp_path / "r.jsonl"), check=False)
    assert result.returncode == 2 and str(tmp_path / "index.json") in result.stderr


def _run_entry_point(tmp_path, before: str, *args):
    """``harness.commands.main.run`` (the `trt-matrix` script's and `python -m harness`'s entry) in a new process,
    after ``before`` (Python) ran there."""
    code = (f"import atexit, pathlib, sys, threading, time\n{before}\n"
            f"sys.argv = ['trt-matrix', *{list(args)!r}]\n"
            f"from harness.commands.main import run\nrun()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)


def test_the_command_ends_with_its_output_whole_its_exit_status_and_its_exit_handlers_run(tmp_path):
    """run() ends the process without freeing every object one by one: what it printed (more than a pipe holds),
    its exit status and what the exit handlers do are as a usual exit leaves them."""
    handler = f"atexit.register(lambda: pathlib.Path({str(tmp_path / 'handler')!r}).write_text('ran'))"
    listed = _run_entry_point(tmp_path, handler, "facts", "--json")
    assert listed.returncode == 0 and len(listed.stdout) > 65536
    assert json.loads(listed.stdout) == json.loads(harness("facts", "--json").stdout)
    assert (tmp_path / "handler").read_text() == "ran"
    missing = _run_entry_point(tmp_path, "", "scan", "missing.onnx")
    assert missing.returncode == 2 and "missing.onnx: no such file" in missing.stderr


def test_the_command_waits_for_a_thread_still_running_as_a_usual_exit_does(tmp_path):
    late = tmp_path / "late"
    thread = (f"threading.Thread(target=lambda: (time.sleep(0.5), pathlib.Path({str(late)!r}).write_text('done')))"
              ".start()")
    ended = _run_entry_point(tmp_path, thread, "list")
    assert ended.returncode == 0 and late.read_text() == "done"
