"""Release facts a TensorRT 10 -> 11 or JetPack 6 -> 7 move meets: where Orin's DLA exists, what trtexec and the
builder lost in 11.0. Each answer cites NVIDIA's page."""
import pytest

from harness.tensorrt.versions import version_tuple
from harness.tensorrt.release_facts import (
    REMOVED_COMMAND_FLAGS,
    dla_absent,
    network_typing,
    trtexec_option_removed,
)
from tests.trt_contract.standin import api_exists


@pytest.mark.parametrize("version", ["8.5.2", "8.6.2", "10.0.1", "10.3.0", "10.7.0", "11.4.1", "11.4.1.5", "11.5"])
def test_orin_has_dla_up_to_10_7_and_again_from_11_4_1(version):
    assert dla_absent(version, "orin") is None


@pytest.mark.parametrize("version, says", [
    ("10.8.0", "10.7 was the last release with DLA"), ("10.13.3", "10.7 was the last"),
    ("10.16", "10.16 SBSA build for Orin"), ("11.0.0", "unavailable in 11.0 through 11.3"),
    ("11.3.0", "11.0 through 11.3"), ("11.4.0.106", "11.4.0 had it on Windows on ARM only"),
])
def test_orin_releases_without_dla_say_why_with_nvidias_page(version, says):
    fact = dla_absent(version, "orin")
    assert fact is not None and says in fact.statement and fact.confidence == "C"
    assert all(source.startswith("https://docs.nvidia.com/deeplearning/tensorrt/") for source in fact.sources)
    assert fact.cited().endswith(", ".join(fact.sources))


@pytest.mark.parametrize("version", ["10.13.3", "10.16", "11.4.1"])
def test_thor_and_x86_never_have_dla_and_a_local_target_leaves_it_to_the_device(version):
    assert dla_absent(version, "any") is None and dla_absent(version, None) is None
    assert "Jetson Thor has no DLA" in dla_absent(version, "thor").statement
    assert "platform x86_64 has none" in dla_absent(version, "x86_64").statement


@pytest.mark.parametrize("option", ["--int8", "--fp16", "--best", "--calib=cache.bin"])
def test_trtexec_lost_its_precision_options_in_11(option):
    assert trtexec_option_removed(option, "10.16.1") is None
    fact = trtexec_option_removed(option, "11.4.1")
    assert option.split("=")[0] in fact.statement and "removed in 11.0" in fact.statement
    assert fact.sources == ("https://docs.nvidia.com/deeplearning/tensorrt/11.4.1/api/migration/"
                            "tensorrt-10x-to-11x-trtexec.html",)
    assert trtexec_option_removed("--saveEngine=x.plan", "11.4.1") is None
    assert trtexec_option_removed(option, "11") is not None  # a target naming the major only (trt11-x86)


def test_trtexec_lost_its_implicit_batch_options_in_10():
    assert trtexec_option_removed("--explicitBatch", "8.6.1") is None
    fact = trtexec_option_removed("--explicitBatch", "10.0.1")
    assert "removed in 10.0" in fact.statement and "tensorrt-8x-to-10x-trtexec" in fact.sources[0]


def test_networks_are_strongly_typed_only_from_11():
    assert "strongly typed networks only" in network_typing("11.0.0").statement
    assert "weakly by default" in network_typing("10.16.1").statement


def test_each_removed_command_flag_has_its_source_and_a_polygraphy_flag_sets_an_api_gone_from_11():
    """trtexec's removals are the migration guides' lists; a Polygraphy flag is removed with the builder API it sets,
    read from the recorded API surfaces (10.16.1.11 has it, 11.4.0.106 does not)."""
    assert {(f.flag, f.removed_in) for f in REMOVED_COMMAND_FLAGS if f.tool == "trtexec"} >= {
        ("--workspace", "10.0"), ("--explicitBatch", "10.0"), ("--int8", "11.0"), ("--fp16", "11.0"),
        ("--best", "11.0"), ("--calib", "11.0")}
    for flag in REMOVED_COMMAND_FLAGS:
        assert flag.source.startswith("https://docs.nvidia.com/") and flag.flag.startswith("--"), flag
        assert version_tuple(flag.removed_in)[0] in (10, 11) and flag.instead, flag
        if flag.tool == "polygraphy":
            assert api_exists("10.16.1.11", flag.needs) and not api_exists("11.4.0.106", flag.needs), flag
