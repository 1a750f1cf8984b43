"""`harness reduce` end to end in a container, on a real failure: the fast neural style transfer network (46 nodes,
FP32, implicit INT8) fails on ort1.15-cpu, whose quantize_static raises IndexError on InstanceNormalization. The
reduction runs every check in ONE container kept alive, removes it at the end, ends at a tenth of the nodes or
fewer, and the case module it writes reproduces the failure through `generate` and `run` on ort1.15-cpu. Interrupted
(Ctrl-C), it removes its container, and the same command resumes in a new one without running the checks again.

Needs Docker and the ort1.15-cpu image (built from BASE_IMAGE when missing): fails under CI=true without them."""
from __future__ import annotations

import signal
import time

import onnx
import pytest

from harness.reduction.session import CONTAINER_PREFIX
from harness.reduction.state import read_steps
from tests.harness.commands.test_main import harness, interruptible_harness
from tests.harness.reduction.reproduce import reproduce_case, same_failure, summary
from tests.models import style_transfer

TARGET = "ort1.15-cpu"
RESIDUAL_BLOCKS = 5


@pytest.fixture(scope="module")
def model(ort_images, tmp_path_factory):
    assert TARGET in ort_images
    path = tmp_path_factory.mktemp("model") / "style-transfer.onnx"
    onnx.save(style_transfer.build(RESIDUAL_BLOCKS), path)
    return path


@pytest.fixture(scope="module")
def reduction(model, tmp_path_factory):
    out = tmp_path_factory.mktemp("reduction")
    result = harness("reduce", str(model), "--target", TARGET, "--out", str(out), timeout=1800)
    return out, result


def test_the_whole_model_fails_there_for_a_real_reason_and_that_failure_is_kept(reduction):
    out, result = reduction
    kept = summary(out)["failure_kept"]
    assert (kept["outcome"], kept["category"], kept["error_kind"]) == ("fail", "runtime-error", "IndexError")
    assert "failure to keep: fail / runtime-error / IndexError" in result.stdout


def test_the_reduced_model_is_at_most_a_tenth_and_fails_the_same_way(reduction):
    out, _ = reduction
    data = summary(out)
    assert data["nodes_before"] == style_transfer.node_count(RESIDUAL_BLOCKS)
    assert data["nodes_after"] * 10 <= data["nodes_before"] and data["reduced_reproduces"] is True
    ops = [n.op_type for n in onnx.load(out / "reduced.onnx").graph.node]
    assert "InstanceNormalization" in ops


def test_one_container_ran_every_check_and_is_gone(reduction, docker_client):
    out, result = reduction
    data = summary(out)
    assert data["runner"] == "container" and data["checks"] >= 3
    started = [line for line in result.stdout.splitlines() if f"container {CONTAINER_PREFIX}" in line]
    assert len(started) == 1, started
    name = started[0].split("container ", 1)[1].split(" ", 1)[0]
    assert not docker_client.containers.list(all=True, filters={"name": name})


def test_the_case_module_reproduces_the_failure_through_generate_and_run(reduction, tmp_path):
    out, _ = reduction
    data = summary(out)
    record, skeleton = reproduce_case(out, TARGET, tmp_path, timeout=900)
    assert same_failure(record, data["failure_kept"]), record["failure"]
    assert skeleton.returncode == 0, skeleton.stdout + skeleton.stderr


def test_an_interrupted_reduction_removes_its_container_and_resumes_in_a_new_one(model, reduction, docker_client,
                                                                               tmp_path):
    out = tmp_path / "interrupted"
    process = interruptible_harness("reduce", str(model), "--target", TARGET, "--out", str(out))
    deadline = time.monotonic() + 600
    while len(read_steps(out)) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)  # Ctrl-C in the middle of the bisection
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stdout + stderr
    [name] = [line.split("container ", 1)[1].split(" ", 1)[0] for line in stdout.splitlines()
              if f"container {CONTAINER_PREFIX}" in line]
    assert not docker_client.containers.list(all=True, filters={"name": name})  # removed, not left running
    done_before = len(read_steps(out))

    resumed = harness("reduce", str(model), "--target", TARGET, "--out", str(out), timeout=1800)
    assert "resuming the reduction" in resumed.stdout
    [again] = [line for line in resumed.stdout.splitlines() if f"container {CONTAINER_PREFIX}" in line]
    assert name not in again  # a new container for the resumed run
    full, data = summary(reduction[0]), summary(out)
    assert data["nodes_after"] == full["nodes_after"] and data["reduced_reproduces"] is True
    assert data["checks"] - done_before < full["checks"]  # the replayed checks were not run again
