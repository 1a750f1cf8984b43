"""`python -m harness facts`, black-box: what a planner choosing between JetPack 6 and 7 reads of each target."""
import json

from tests.harness.commands.test_main import harness


def test_facts_help_teaches_the_comparison():
    out = harness("facts", "--help").stdout
    assert out.startswith("usage: python -m harness facts")
    assert "python -m harness facts trt107-orin trt1016-orin trt114-orin" in out and "--gpu-arch" in out


def test_facts_lists_every_tensorrt_target_that_exists_one_line_each():
    out = harness("facts").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.startswith("  trt")}
    assert "trt92-orin" not in rows and "ort-cpu" not in rows and "trt1016-orin-dla" not in rows
    # target, JetPack, GPU, implicit INT8, strong typing, FP8 flag, FP8 Q/DQ, FP4 Q/DQ, DLA, INT64
    assert rows["trt114-orin"][3] == "no" and rows["trt107-orin"][3] == "deprecated"
    assert rows["trt100-orin"][3] == "yes"
    assert rows["trt1016-orin"][8] == "no" and rows["trt114-orin"][8] == "yes"
    assert rows["trt1016-thor"][6] == "yes" and rows["trt1016-orin"][6] == "no"
    assert rows["trt1016-x86"][6] == "?"  # whatever GPU the host has


def test_facts_of_named_targets_say_where_they_differ_with_sources_and_remedies():
    out = harness("facts", "trt107-orin", "trt1016-orin", "trt114-orin").stdout
    assert "Where they differ: implicit INT8, FP8 flag, DLA" in out
    section = out.split("\ntrt114-orin: ")[1]
    assert "implicit-int8: no. TensorRT 11.4.1 has no implicit quantization" in section
    assert "--to-explicit" in section
    assert "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html" in section


def test_facts_take_the_gpu_of_an_x86_host():
    ada = harness("facts", "trt1016-x86", "--gpu-arch", "sm_89", "--json").stdout
    ampere = harness("facts", "trt1016-x86", "--gpu-arch", "sm_86", "--json").stdout
    assert json.loads(ada)["trt1016-x86"]["fp8-qdq"]["value"] == "present"
    assert json.loads(ampere)["trt1016-x86"]["fp8-qdq"]["effect"] == "refuses-build"


def test_facts_of_an_unknown_target_or_gpu_name_the_mistake():
    result = harness("facts", "trt107-orn", check=False)
    assert result.returncode == 2 and "trt107-orin" in result.stderr
    result = harness("facts", "--gpu-arch", "8.9", check=False)
    assert result.returncode == 2 and "sm_89" in result.stderr
