"""Facts read from a log's device lines and from a command line: what is printed is read, nothing is guessed."""
import pytest

from harness.diagnosis.kinds.command_line import command_facts
from harness.diagnosis.kinds.engine_layers import layer_facts
from harness.diagnosis.kinds.tensorrt_log import gpu_facts
from harness.tensorrt.layers import EngineLayer, LayersRead


@pytest.mark.parametrize(("text", "expected"), [
    ("[I] Selected Device: NVIDIA A100-SXM4-80GB\n[I] Compute Capability: 8.0\n[I] SMs: 108\n",
     ("NVIDIA A100-SXM4-80GB", "8.0", "a discrete GPU (sm_80: x86_64 or an SBSA server)")),
    ('[I] Available Devices:\n[I]   Device 0: "Orin" UUID: GPU-0\n[I] Compute Capability: 8.7\n',
     ("Orin", "8.7", "Jetson AGX Orin (sm_87)")),
    ("TRT 8.6.11 on a Quadro T2000 (sm_75)", (None, "7.5", "a discrete GPU (sm_75: x86_64 or an SBSA server)")),
    ("[I] Compute Capability: 11.0\n", (None, "11.0", "Jetson Thor (sm_110)")),
    ("built on JetPack 6.0 with trtexec", (None, None, "Jetson (JetPack is named)")),
    ("C:\\TensorRT\\bin\\trtexec.exe --onnx=m.onnx", (None, None, "Windows")),
    ("[V] [TRT] Tactic: sm80_xmma_fprop_implicit_gemm_f32f32 Time: 0.1", (None, None, None)),  # a tactic, no device
])
def test_device_facts_are_read_where_the_log_prints_them(text, expected):
    facts = gpu_facts(text)
    assert (facts["gpu"], facts["compute_capability"], facts["platform"]) == expected


def test_a_trtexec_command_gives_its_flags_model_and_the_narrowest_precision_it_asks_for():
    facts = command_facts("/usr/src/tensorrt/bin/trtexec --onnx=a.onnx --fp16 --best --calib=c.cache")
    assert (facts["tool"], facts["subcommand"], facts["models"], facts["requested_precision"]) == (
        "trtexec", None, ["a.onnx"], "int8")
    assert facts["flags"] == ["--onnx", "--fp16", "--best", "--calib"]


def test_a_polygraphy_command_gives_its_subcommand_and_positional_model():
    facts = command_facts("CUDA_VISIBLE_DEVICES=0 python3 -m polygraphy convert 'my model.onnx' --fp16 -o m.engine")
    assert (facts["tool"], facts["subcommand"], facts["models"], facts["flags"], facts["requested_precision"]) == (
        "polygraphy", "convert", ["my model.onnx"], ["--fp16"], "fp16")


@pytest.mark.parametrize(("requested", "left"), [
    ("int8", ["/conv2/Conv", "/conv3/Conv", "/head/Gemm"]),  # fp8 is another format of int8's width; fp16, fp32 wider
    ("fp8", ["/conv1/Conv", "/conv3/Conv", "/head/Gemm"]),  # and int8 of fp8's: not what was asked either
    ("fp16", ["/head/Gemm"]),  # narrower layers are judged by the tolerance, not named here
])
def test_layers_that_left_the_requested_precision_follow_the_records_fallback_rule(requested, left):
    layers = [EngineLayer(name, "Convolution", precision, False, (name,), None)
              for name, precision in (("/conv1/Conv", "int8"), ("/conv2/Conv", "fp8"), ("/conv3/Conv", "fp16"),
                                      ("/head/Gemm", "fp32"), ("/act/Sigmoid", "unknown"))]
    facts = layer_facts(LayersRead(layers, "engine inspector JSON"), requested, "the test")
    assert [layer["name"] for layer in facts["left_requested_precision"]] == left
    assert facts["unknown_precision"] == 1  # never counted as left: unverified
