"""Parts of the container runner that need no Docker engine: wheelhouse specs, build inputs, output caps, intake."""
from __future__ import annotations

import json

import pytest

from harness.orchestration.docker.images import BuildInputs, MissingBuildInput, build_args, build_image
from harness.orchestration.docker.intake import OversizedLine, RecordIntake, capped_lines
from harness.orchestration.docker.wheelhouse import WheelhouseError, pip_download_command, wheelhouse_spec
from harness.matrix import load_matrix
from harness.store.results_file import RecordError, validate_record
from harness.worker import record as rec
from harness.worker.casedata import load_cells
from harness.worker.environment import observe

MATRIX = load_matrix()


def test_ort_wheelhouse_pins_the_backend_and_its_season():
    spec = wheelhouse_spec(MATRIX["ort1.15-cpu"])
    assert spec.requirements[:3] == ("onnxruntime==1.15.1", "onnx==1.14.1", "numpy<2")
    assert (spec.python_version, spec.machine, spec.abi) == ("3.11", "x86_64", "cp311")
    assert "manylinux_2_36_x86_64" in spec.platform_tags() and "manylinux_2_37_x86_64" not in spec.platform_tags()
    assert "numpy<2" not in wheelhouse_spec(MATRIX["ort1.31-cpu"]).requirements


def test_tensorrt_wheelhouses_fit_the_base_image_not_this_host():
    jetpack5 = wheelhouse_spec(MATRIX["trt85-orin"])
    assert (jetpack5.python_version, jetpack5.machine, jetpack5.glibc) == ("3.8", "aarch64", "2.31")
    assert any(r.startswith("polygraphy==0.49") for r in jetpack5.requirements)
    command = pip_download_command(wheelhouse_spec(MATRIX["trt92-x86"]), dest=__import__("pathlib").Path("/x"))
    assert "tensorrt==9.2.0.post12.dev5" in command and "https://pypi.nvidia.com" in command and command[-1] == "pip"


def test_wheelhouse_follows_the_python_and_glibc_the_matrix_gives_the_base_image():
    spec = wheelhouse_spec(MATRIX["trt86-orin"]._replace(python="3.12", glibc="2.39"))
    assert (spec.python_version, spec.abi, spec.glibc) == ("3.12", "cp312", "2.39")
    assert "manylinux_2_39_aarch64" in spec.platform_tags()
    assert wheelhouse_spec(MATRIX["trt86-orin"], python_version="3.11").abi == "cp311"  # --python-version wins


def test_wheelhouse_refuses_a_target_it_cannot_serve():
    with pytest.raises(WheelhouseError, match="only docker targets"):
        wheelhouse_spec(MATRIX["ort-cpu"])
    with pytest.raises(WheelhouseError, match="no python, glibc in matrix.yaml"):
        wheelhouse_spec(MATRIX["trt86-x86"]._replace(python=None, glibc=None))
    with pytest.raises(WheelhouseError, match="older than 1.15"):
        wheelhouse_spec(MATRIX["ort1.15-cpu"]._replace(version="1.12.0"))


def test_missing_wheelhouse_is_named_before_the_engine_is_asked(tmp_path):
    with pytest.raises(MissingBuildInput, match=r"containers wheelhouse --target ort1.20-cpu") as caught:
        build_image(None, MATRIX["ort1.20-cpu"], BuildInputs(wheelhouse_dir=tmp_path))
    assert str(tmp_path / "ort1.20-cpu") in str(caught.value)


def test_missing_tensorrt_tarball_says_how_to_pass_it(tmp_path):
    (tmp_path / "trt100-orin").mkdir()
    (tmp_path / "trt100-orin" / "requirements.txt").write_text("polygraphy\n")
    with pytest.raises(MissingBuildInput) as caught:
        build_image(None, MATRIX["trt100-orin"], BuildInputs(wheelhouse_dir=tmp_path))
    message = str(caught.value)
    assert "--tensorrt-tarball" in message and "TRT_MATRIX_TENSORRT_TARBALL" in message and "developer login" in message
    assert MATRIX["trt100-orin"].tensorrt_tarball in message


def test_build_args_are_only_those_the_recipe_declares():
    ort = MATRIX["ort1.20-cpu"]
    text = "ARG BASE_IMAGE=python:3.11-slim\nFROM ${BASE_IMAGE}\nARG ORT_VERSION\n"
    assert build_args(ort, BuildInputs(base_image="local/python"), text) == {
        "BASE_IMAGE": "local/python", "ORT_VERSION": "1.20.1"}
    trt = MATRIX["trt86-x86"]
    assert build_args(trt, BuildInputs(), "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n") == {"BASE_IMAGE": trt.base_image}
    assert build_args(trt, BuildInputs(), "FROM scratch\n") == {}


def test_capped_lines_never_hold_an_oversized_line():
    data = b"ok\n" + b"x" * 50 + b"\n\nlast"
    for size in (1, 4, 100):
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        lines = list(capped_lines(chunks, max_bytes=20))
        assert [line if isinstance(line, str) else line.size for line in lines] == ["ok", 50, "", "last"]
        assert isinstance(lines[1], OversizedLine) and lines[1].head.startswith("x" * 20)


@pytest.fixture()
def intake_parts(control_cases_dir, tmp_path):
    target = MATRIX["ort1.15-cpu"]
    cells = load_cells(control_cases_dir)
    stored = []

    def on_record(record):  # what harness.run does: validate, then append
        validate_record(record)
        stored.append(record)

    return target, cells, stored, RecordIntake(target, cells, on_record, lambda line: None, tmp_path, "test://", 10_000)


def valid_record(target, cell):
    return rec.build(cell, target.to_job(), outcome="pass", stage="compare", duration_s=0.1, environment=observe({}))


def test_intake_stores_each_cell_once_and_fills_the_rest_with_infra_errors(intake_parts):
    target, cells, stored, intake = intake_parts
    line = "@@record " + json.dumps(valid_record(target, cells[0]))
    intake.take_line(line, "log stream")
    intake.take_line(line[len("@@record "):], "results file")  # the same record again, from the archive
    intake.take_line("[1/3 0.1s] a progress line", "log stream")
    intake.fail_missing("The worker exited with status 1.")
    assert [r["outcome"] for r in stored] == ["pass"] + ["infra-error"] * (len(cells) - 1)
    assert all("status 1" in r["failure"]["message"] for r in stored[1:])


def test_intake_replaces_a_schema_invalid_record_and_keeps_its_text(intake_parts, tmp_path):
    target, cells, stored, intake = intake_parts
    bad = valid_record(target, cells[0])
    bad["precision"] = {"conv": "int3"}
    intake.take_line("@@record " + json.dumps(bad), "log stream")
    (record,) = stored
    assert record["outcome"] == "infra-error" and record["failure"]["category"] == "harness"
    kept = list((tmp_path / "rejected-records").iterdir())
    assert len(kept) == 1 and json.loads(kept[0].read_text())["precision"] == {"conv": "int3"}
    assert str(kept[0]) in record["failure"]["message"]
    with pytest.raises(RecordError):
        validate_record(bad)


def test_intake_names_the_cap_an_oversized_record_broke(intake_parts):
    target, cells, stored, intake = intake_parts
    intake.take_line(OversizedLine(50_000, "@@record {\"agrees\": null"), "log stream")
    intake.fail_missing("The worker exited normally (status 0) without a record for this cell.")
    assert len(stored) == len(cells)
    assert all("over the cap of 10000 bytes" in r["failure"]["message"] for r in stored)


def test_intake_ignores_records_this_run_did_not_ask_for(intake_parts):
    target, cells, stored, intake = intake_parts
    other = valid_record(MATRIX["ort1.31-cpu"], cells[0])
    intake.take_line(json.dumps(other), "results file")
    assert stored == [] and len(intake.missing()) == len(cells)
