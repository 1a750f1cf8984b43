"""`harness reduce` end to end in a container, on a real failure: the fast neural style transfer network (46 nodes,
FP32, implicit INT8) fails on ort1.15-cpu, whose quantize_static raises IndexError on InstanceNormalization. The
reduction runs every check in ONE container kept alive, removes it at the end, ends at a tenth of the nodes or
fewer, and the case module it writes reproduces the failure through `generate` and `run` on ort1.15-cpu.

Needs Docker and the ort1.15-cpu image (built from BASE_IMAGE when missing): fails under CI=true without them."""
from __future__ import annotations

import onnx
import pytest

from harness.reduction.session import CONTAINER_PREFIX
from tests.harness.commands.test_main import harness
from tests.harness.reduction.reproduce import reproduce_case, same_failure, summary
from tests.models import style_transfer

TARGET = "ort1.15-cpu"
RESIDUAL_BLOCKS = 5


@pytest.fixture(scope="module")
def reduction(ort_images, tmp_path_factory):
    assert TARGET in ort_images
    model = tmp_path_factory.mktemp("model") / "style-transfer.onnx"
    onnx.save(style_transfer.build(RESIDUAL_BLOCKS), model)
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
