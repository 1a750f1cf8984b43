"""The nightly as a fleet, simulated with real processes on ort-cpu: machines of one host kind as separate `harness
nightly` processes (their own runs directories, their own --machine), shards of one night, GPU architectures (a
stand-in nvidia-smi on PATH says which GPU a machine has: no GPU exists here), contributed runs, merged and added to
the history by the real commands."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


from tests.conftest import REPO, read_records
from tests.harness.commands.test_main import harness
from tests.harness.orchestration.test_nightly import run_dir_of

NIGHT1, NIGHT2 = "2026-11-20", "2026-11-21"
QDQ = ("control-qdq-conv-relu", "conv-relu", "ort-cpu")


def stand_in_gpu(tmp_path: Path, name: str, compute_capability: str) -> dict[str, str]:
    """An environment whose PATH has an nvidia-smi answering for one GPU (a stand-in: no GPU exists here)."""
    bin_dir = tmp_path / f"gpu-{compute_capability}"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{name}, {compute_capability}, 570.86.15'\n")
    smi.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def machine_night(cases: Path, runs: Path, machine: str, date: str, *extra: str,
                  env: dict[str, str] | None = None) -> subprocess.Popen:
    """One machine's `harness nightly` of the host kind x86-gpu's series (here on ort-cpu), started now."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "harness", "nightly", "--target", "ort-cpu", "--cases", str(cases),
                             "--runs", str(runs), "--host", "x86-gpu", "--machine", machine, "--date", date,
                             "--jobs", "1", *extra], cwd=REPO, env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finished(*processes: subprocess.Popen) -> list[Path]:
    """The run directories of ``processes``, once each has exited 0."""
    found = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out + err
        found.append(run_dir_of(subprocess.CompletedProcess([], 0, out, err)))
    return found


def cells_of(results: Path) -> list[tuple[str, str, str]]:
    return [(r["case"], r["variant"], r["target"]) for r in read_records(results)]


def test_two_machines_run_the_two_shards_of_a_night_and_the_merge_has_every_cell_once_naming_both(
        control_cases_dir, tmp_path):
    a = machine_night(control_cases_dir, tmp_path / "gpu-a", "gpu-a", NIGHT1, "--shard", "1/2")
    b = machine_night(control_cases_dir, tmp_path / "gpu-b", "gpu-b", NIGHT1, "--shard", "2/2")
    run_a, run_b = finished(a, b)
    assert (run_a.name.endswith("_gpu-a_1of2"), run_b.name.endswith("_gpu-b_2of2")) == (True, True)
    shard_a, shard_b = cells_of(run_a / "results.jsonl"), cells_of(run_b / "results.jsonl")
    assert shard_a and shard_b and not set(shard_a) & set(shard_b)
    manifest = json.loads((run_a / "run.json").read_text())
    assert (manifest["host"], manifest["machine"], manifest["shard"]) == ("x86-gpu", "gpu-a", "1/2")

    tonight = tmp_path / "tonight"  # as the publish job downloads the artifacts: side by side
    for run in (run_a, run_b):
        shutil.copytree(run, tonight / run.name)
    result = harness("merge", str(tonight), "--out", str(tmp_path / "site"))
    merged = cells_of(tmp_path / "site" / "results.jsonl")
    assert sorted(merged) == sorted(shard_a + shard_b) and len(merged) == len(set(merged)) == 3
    assert "machine gpu-a, shard 1/2" in result.stdout and "machine gpu-b, shard 2/2" in result.stdout
    sources = json.loads((tmp_path / "site" / "merge.json").read_text())["sources"]
    assert sorted((s["machine"], s["shard"]) for s in sources) == [("gpu-a", "1/2"), ("gpu-b", "2/2")]
    page = (tmp_path / "site" / "index.html").read_text()
    assert "x86-gpu on gpu-a, shard 1/2" in page and "x86-gpu on gpu-b, shard 2/2" in page


def test_shards_balance_by_the_durations_given_and_agree_on_the_split(control_cases_dir, tmp_path):
    durations = tmp_path / "durations.json"
    rows = [{"case": c, "variant": v, "target": t, "duration_s": 30.0 if (c, v, t) == QDQ else 1.0}
            for c, v, t in cells_of_library(control_cases_dir)]
    durations.write_text(json.dumps({"format": "trt-matrix/durations/1", "cells": rows}))
    procs = [machine_night(control_cases_dir, tmp_path / f"m{k}", f"m{k}", NIGHT1, "--shard", f"{k}/2",
                           "--durations", str(durations)) for k in (1, 2)]
    first, second = (cells_of(run / "results.jsonl") for run in finished(*procs))
    assert first == [QDQ]  # the long cell alone; the two short ones on the other machine
    assert len(second) == 2 and QDQ not in second


def cells_of_library(cases: Path) -> list[tuple[str, str, str]]:
    index = json.loads((cases / "index.json").read_text())
    return [(case["id"], variant["name"], "ort-cpu") for case in index["cases"] for variant in case["variants"]]


def test_two_machines_that_both_run_everything_are_both_kept_and_their_disagreement_is_shown(
        control_cases_dir, tmp_path):
    run_a, run_b = finished(machine_night(control_cases_dir, tmp_path / "a", "gpu-a", NIGHT1),
                            machine_night(control_cases_dir, tmp_path / "b", "gpu-b", NIGHT1))
    result = harness("merge", str(run_a), str(run_b), "--out", str(tmp_path / "site"))
    assert len(read_records(tmp_path / "site" / "results.jsonl")) == 6  # three cells, from each machine
    assert "left out" not in result.stdout and "machine gpu-a" in result.stdout and "machine gpu-b" in result.stdout

    # Machine b's ONNX Runtime ran the Q/DQ conv in float tonight: the same cell, one architecture, one night.
    records = read_records(run_b / "results.jsonl")
    changed = next(r for r in records if (r["case"], r["variant"], r["target"]) == QDQ)
    changed.update(outcome="fallback", fallback_nodes=["/conv/Conv"])
    (run_b / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run_b / "files.json").unlink()  # an edited copy is no longer the run its seal describes
    result = harness("merge", str(run_a), str(run_b), "--out", str(tmp_path / "site2"))
    assert ("conflict: control-qdq-conv-relu/conv-relu on ort-cpu: x86-gpu on gpu-a: pass, x86-gpu on gpu-b: "
            "fallback") in result.stdout
    assert len(read_records(tmp_path / "site2" / "results.jsonl")) == 6

    # The history keeps both machines' runs of a night; the next night (b carries its record over: its inputs did
    # not change) the comparison says the two machines disagree, beside the newest record's change.
    history = harness("history", str(tmp_path / "history"), "--add", str(run_a), str(run_b), "--out",
                      str(tmp_path / "trend.html"))
    assert "ort-cpu@x86-gpu: first run" in history.stdout
    night2 = finished(machine_night(control_cases_dir, tmp_path / "a", "gpu-a", NIGHT2),
                      machine_night(control_cases_dir, tmp_path / "b", "gpu-b", NIGHT2))
    again = harness("history", str(tmp_path / "history"), "--add", *map(str, night2), "--out",
                    str(tmp_path / "trend.html"), check=False)
    assert ("machines disagree: control-qdq-conv-relu/conv-relu on ort-cpu@x86-gpu: gpu-a pass, gpu-b fallback (the "
            "newest record speaks)") in again.stdout
    [series] = [line for line in again.stdout.splitlines() if line.startswith("ort-cpu@x86-gpu:")]
    assert " + " in series  # each night is both machines' runs


def test_a_third_architecture_s_record_is_compared_with_its_own_series_only(control_cases_dir, tmp_path):
    ampere = stand_in_gpu(tmp_path, "NVIDIA RTX A4000", "8.6")
    ada = stand_in_gpu(tmp_path, "NVIDIA L4", "8.9")
    hopper = stand_in_gpu(tmp_path, "NVIDIA H100", "9.0")  # the server added on Friday
    night1 = finished(machine_night(control_cases_dir, tmp_path / "a", "gpu-a", NIGHT1, env=ampere),
                      machine_night(control_cases_dir, tmp_path / "b", "gpu-b", NIGHT1, env=ada))
    night2 = finished(machine_night(control_cases_dir, tmp_path / "a", "gpu-a", NIGHT2, env=ampere),
                      machine_night(control_cases_dir, tmp_path / "b", "gpu-b", NIGHT2, env=ada),
                      machine_night(control_cases_dir, tmp_path / "c", "gpu-c", NIGHT2, "--gpu-arch", "sm_90",
                                    env=hopper))
    assert json.loads((night2[2] / "run.json").read_text())["gpu_arch"] == "sm_90"
    # The new architecture's first night: the Q/DQ conv falls back there (its record, edited: the stand-in).
    hopper_run = night2[2]
    records = read_records(hopper_run / "results.jsonl")
    next(r for r in records if (r["case"], r["variant"], r["target"]) == QDQ).update(
        outcome="fallback", fallback_nodes=["/conv/Conv"])
    (hopper_run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (hopper_run / "files.json").unlink()

    result = harness("history", str(tmp_path / "history"), "--add", *map(str, night1 + night2), "--out",
                     str(tmp_path / "trend.html"), "--junit", str(tmp_path / "j.xml"), check=False)
    assert result.returncode == 0, result.stdout + result.stderr  # no regression: sm_90 has nothing to compare with
    assert "ort-cpu@x86-gpu/sm_90: first run" in result.stdout
    for series in ("ort-cpu@x86-gpu/sm_86", "ort-cpu@x86-gpu/sm_89"):
        [line] = [line for line in result.stdout.splitlines() if line.startswith(series + ":")]
        assert line.endswith(": 3 unchanged"), line
    assert "fallback" not in result.stdout.replace("sm_90", "")  # never compared with another architecture's records
    assert "machines disagree" not in result.stdout
    assert "ort-cpu @ x86-gpu (sm_90)" in (tmp_path / "trend.html").read_text()


def test_a_runner_labelled_with_another_architecture_than_its_gpu_stops_before_running(control_cases_dir, tmp_path):
    process = machine_night(control_cases_dir, tmp_path / "runs", "gpu-a", NIGHT1, "--gpu-arch", "sm_89",
                            env=stand_in_gpu(tmp_path, "NVIDIA RTX A4000", "8.6"))
    out, err = process.communicate(timeout=300)
    assert process.returncode == 2
    assert "machine gpu-a has NVIDIA RTX A4000, architecture sm_86" in err and "runner's architecture label" in err
    assert not (tmp_path / "runs").exists() or not any(p for p in (tmp_path / "runs").iterdir()
                                                       if not p.name.startswith("."))


def test_a_contributed_run_is_shown_as_such_and_one_changed_byte_is_refused_naming_the_file(
        control_cases_dir, tmp_path):
    [own] = finished(machine_night(control_cases_dir, tmp_path / "own", "gpu-a", NIGHT1))
    full = {**os.environ, "PYTHONPATH": str(REPO)}
    contributed = run_dir_of(harness("nightly", "--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs",
                                     str(tmp_path / "jane"), "--host", "orin-nano-jane", "--date", NIGHT1,
                                     "--contributor", "Jane Doe (github: @jane)", env=full))
    seal = json.loads((contributed / "files.json").read_text())
    assert seal["contributor"] == "Jane Doe (github: @jane)" and seal["machine"]["name"] == "orin-nano-jane"
    assert {"run.json", "results.jsonl", "cases-index.json"} <= set(seal["files"])

    result = harness("merge", str(own), str(contributed), "--out", str(tmp_path / "site"))
    assert "contributed by Jane Doe (github: @jane) on orin-nano-jane" in result.stdout
    assert "contributed by Jane Doe" in (tmp_path / "site" / "index.html").read_text()
    sources = json.loads((tmp_path / "site" / "merge.json").read_text())["sources"]
    assert [s["contributed"] is not None for s in sources] == [False, True] or \
           [s["contributed"] is not None for s in sources] == [True, False]

    results = contributed / "results.jsonl"
    data = bytearray(results.read_bytes())
    at = data.index(b'"pass"') + 1
    data[at] = ord("P")  # one byte: "pass" -> "Pass"
    results.write_bytes(bytes(data))
    refused = harness("merge", str(own), str(contributed), "--out", str(tmp_path / "site2"), check=False)
    assert refused.returncode == 3
    assert f"{results}: its SHA-256 differs from the one files.json lists" in refused.stderr
    assert "orin-nano-jane" not in {r["provenance"]["host"] for r in read_records(tmp_path / "site2" / "results.jsonl")}
    alone = harness("merge", str(contributed), "--out", str(tmp_path / "site3"), check=False)
    assert alone.returncode == 2 and str(results) in alone.stderr and "every run was refused" in alone.stderr
    history = harness("history", str(tmp_path / "history"), "--add", str(own), str(contributed), check=False)
    assert history.returncode == 3 and str(results) in history.stderr
    assert not (tmp_path / "history" / contributed.name).exists()


def test_a_planned_job_with_no_run_is_reported_not_run_never_passed(control_cases_dir, tmp_path):
    [run] = finished(machine_night(control_cases_dir, tmp_path / "a", "gpu-a", NIGHT1, "--shard", "1/2"))
    plan = {"include": [{"host": "x86-gpu", "arch": "", "shard": "1/2"}, {"host": "x86-gpu", "arch": "", "shard": "2/2"}],
            "not_run": [{"host": "orin-jp6.0", "arch": "", "shard": "",
                         "reason": "no online runner carries the labels self-hosted, linux, ARM64, jetson-orin"}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    outputs = tmp_path / "outputs"
    result = harness("merge", str(run), "--out", str(tmp_path / "site"), "--plan", str(tmp_path / "plan.json"),
                     check=False, env={"GITHUB_OUTPUT": str(outputs)})
    assert result.returncode == 3
    assert "not run: x86-gpu shard 2/2: not run (planned, but no run of it was merged" in result.stdout
    assert "not run: orin-jp6.0: not run (no online runner carries the labels" in result.stdout
    assert "not_run=2" in outputs.read_text().splitlines()
    page = (tmp_path / "site" / "index.html").read_text()
    assert "Not run: orin-jp6.0" in page and "Not run: x86-gpu shard 2/2" in page
