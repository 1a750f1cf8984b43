"""Real containers: ONNX Runtime targets run the control cases inside their images, and every way a container run
can break (killed mid-run, whole-run timeout, unreachable engine, unbuildable image, refused record) still gives one
record per cell and a report that renders.
"""
from __future__ import annotations

import re
import threading

import docker.errors
import pytest

from harness.orchestration.docker.containers import ContainerLimits, run_in_container, run_targets_concurrently
from harness.matrix import Target
from harness.store.results_file import ResultsWriter
from harness.worker.casedata import load_cells
from tests.conftest import read_records

BACKENDS_MODULE = "tests.harness.orchestration.docker.container_test_backends"
UNREACHABLE_ENGINE = "tcp://127.0.0.1:1"


def run_to_file(target, cases_dir, results, **kwargs) -> list[dict]:
    """run_in_container with the same validating writer harness.run uses; returns the stored records."""
    with ResultsWriter(results) as writer:
        run_in_container(target, cases_dir, load_cells(cases_dir), writer.append, progress=lambda line: None,
                         work_dir=results.parent / "work", **kwargs)
    return read_records(results)


def assert_report_renders(results, cases_dir, tmp_path, *needles: str) -> None:
    from reports.html import build_report

    html = build_report([results], tmp_path / "report.html", cases_dir).read_text()
    for needle in needles:
        assert needle in html


def with_backend(target: Target, backend_class: str) -> Target:
    """The same target and image, with a test backend shipped into the container."""
    return target._replace(backend=f"{BACKENDS_MODULE}:{backend_class}", version=None)


@pytest.fixture(scope="session")
def every_case_dir(tmp_path_factory):
    """The whole case library, generated once."""
    import cases
    from cases.generate import generate

    out = tmp_path_factory.mktemp("every-case")
    generate(out, cases.all_cases())
    return out


def test_two_onnxruntime_versions_run_every_case_side_by_side(ort_images, every_case_dir, tmp_path):
    results = tmp_path / "results.jsonl"
    cells = load_cells(every_case_dir)
    with ResultsWriter(results) as writer:
        for target in ort_images.values():
            run_in_container(target, every_case_dir, cells, writer.append, jobs=2, progress=lambda line: None,
                             work_dir=tmp_path / "work" / target.id)
    records = read_records(results)
    assert len(records) == len(cells) * len(ort_images)
    for record in records:
        target, environment = ort_images[record["target"]], record["environment"]
        assert record["outcome"] not in ("infra-error", "unavailable"), record["failure"]
        assert environment["onnxruntime_version"] == target.version
        assert environment["container_image"].startswith("sha256:")
        assert f"trt-matrix/worker:{target.id}" in environment["container_image"]
        assert record["env_mismatch"] is None
    assert_report_renders(results, every_case_dir, tmp_path, *ort_images, *(t.version for t in ort_images.values()))


def test_a_wrong_nominal_version_is_flagged_as_env_mismatch(ort_images, control_cases_dir, tmp_path):
    target = next(iter(ort_images.values()))
    claimed = target._replace(version="1.99.0")
    records = run_to_file(claimed, control_cases_dir, tmp_path / "r.jsonl")
    assert {r["env_mismatch"] for r in records} == {f"nominal version 1.99.0, observed {target.version}"}


def test_a_container_killed_mid_run_keeps_finished_records(ort_images, docker_client, control_cases_dir, tmp_path):
    target = with_backend(next(iter(ort_images.values())), "SleepAfterFirstCellBackend")
    results = tmp_path / "r.jsonl"
    started = []  # this run's container id, from the runner's "container <id> started" line (the engine is shared)
    first_record_out = threading.Event()

    def progress(line):
        started.extend(re.findall(r"container (\w+) started", line))

    with ResultsWriter(results) as writer:
        def on_record(record):
            writer.append(record)
            if not first_record_out.is_set():  # kill the container from outside once its first record is out
                first_record_out.set()
                threading.Thread(target=lambda: docker_client.containers.get(started[0]).kill()).start()

        run_in_container(target, control_cases_dir, load_cells(control_cases_dir), on_record, progress=progress,
                         work_dir=tmp_path / "work")
    records = read_records(results)
    assert len(records) == len(load_cells(control_cases_dir))
    assert records[0]["outcome"] == "pass"
    for record in records[1:]:
        assert record["outcome"] == "infra-error"
        assert "killed (exit status 137" in record["failure"]["message"]
        assert record["environment"]["container_image"]  # the container's own observation, from its first record
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(started[0])  # removed
    assert_report_renders(results, control_cases_dir, tmp_path, "infra-error", "exit status 137")


def test_the_whole_run_timeout_kills_the_container(ort_images, control_cases_dir, tmp_path):
    target = with_backend(next(iter(ort_images.values())), "SleepAfterFirstCellBackend")
    records = run_to_file(target, control_cases_dir, tmp_path / "r.jsonl", run_timeout_s=10)
    assert [r["outcome"] for r in records] == ["pass"] + ["infra-error"] * (len(records) - 1)
    assert all("whole-run timeout of 10 s expired" in r["failure"]["message"] for r in records[1:])


def test_a_record_that_breaks_the_schema_becomes_infra_error(ort_images, control_cases_dir, tmp_path):
    target = with_backend(next(iter(ort_images.values())), "UnknownPrecisionBackend")
    records = run_to_file(target, control_cases_dir, tmp_path / "r.jsonl")
    assert {r["outcome"] for r in records} == {"infra-error"}
    assert all("does not satisfy the record schema" in r["failure"]["message"] for r in records)
    assert len(list((tmp_path / "work" / "rejected-records").iterdir())) == len(records)


def test_records_over_the_size_cap_are_not_stored(ort_images, control_cases_dir, tmp_path):
    target = next(iter(ort_images.values()))
    records = run_to_file(target, control_cases_dir, tmp_path / "r.jsonl", limits=ContainerLimits(record_bytes=500))
    assert {r["outcome"] for r in records} == {"infra-error"}
    assert all("over the cap of 500 bytes" in r["failure"]["message"] for r in records)


def test_an_unreachable_engine_gives_infra_errors_naming_it(control_cases_dir, tmp_path):
    target = Target(id="ort-unreachable", title="nowhere", backend="onnxruntime", runner="docker", platform="any",
                    version="1.20.1", recipe="ort-cpu", docker_host=UNREACHABLE_ENGINE)
    records = run_to_file(target, control_cases_dir, tmp_path / "r.jsonl")
    assert len(records) == len(load_cells(control_cases_dir))
    assert all(r["outcome"] == "infra-error" and UNREACHABLE_ENGINE in r["failure"]["message"] for r in records)
    assert_report_renders(tmp_path / "r.jsonl", control_cases_dir, tmp_path, "infra-error", UNREACHABLE_ENGINE)


def test_an_image_that_fails_to_build_gives_infra_errors_with_the_build_log(docker_client, base_image,
                                                                          control_cases_dir, tmp_path):
    from harness.orchestration.docker.images import BuildInputs

    recipe = tmp_path / "recipes" / "broken"
    recipe.mkdir(parents=True)
    (recipe / "Dockerfile").write_text(f"ARG BASE_IMAGE={base_image}\nFROM ${{BASE_IMAGE}}\n"
                                       "RUN echo 'this step fails on purpose' && exit 3\n")
    target = Target(id="broken-recipe-test", title="broken", backend="onnxruntime", runner="docker", platform="any",
                    version="1.20.1", recipe="broken")
    records = run_to_file(target, control_cases_dir, tmp_path / "r.jsonl",
                          build_inputs=BuildInputs(recipes_dir=tmp_path / "recipes"))
    assert len(records) == len(load_cells(control_cases_dir))
    for record in records:
        assert record["outcome"] == "infra-error"
        assert "could not be built" in record["failure"]["message"]
        assert "this step fails on purpose" in record["log"]
    assert_report_renders(tmp_path / "r.jsonl", control_cases_dir, tmp_path, "infra-error", "could not be built")


def test_targets_on_different_engines_run_concurrently(ort_images, control_cases_dir, tmp_path):
    local = next(iter(ort_images.values()))
    remote = local._replace(id="ort-elsewhere", docker_host=UNREACHABLE_ENGINE)
    cells = load_cells(control_cases_dir)
    with ResultsWriter(tmp_path / "r.jsonl") as writer:
        run_targets_concurrently([local, remote], control_cases_dir, {local.id: cells, remote.id: cells},
                                 writer.append, progress=lambda line: None)
    records = read_records(tmp_path / "r.jsonl")
    by_target = {t: [r["outcome"] for r in records if r["target"] == t] for t in (local.id, remote.id)}
    assert len(by_target[local.id]) == len(by_target[remote.id]) == len(cells)
    assert "infra-error" not in by_target[local.id] and set(by_target[remote.id]) == {"infra-error"}
