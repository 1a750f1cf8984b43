"""The library side of a diagnosis: every signature's pattern is a case of the library that cites the signature's
report, a build's version finds its targets, and a command's flags are removed from the version the table says."""
import pytest

import cases  # noqa: F401  (registers the library)
from cases.model import all_cases, library_signatures
from harness.diagnosis.library import removed_flags, targets_of_build
from harness.matrix import load_matrix

MATRIX = list(load_matrix().values())


@pytest.mark.parametrize("signature", library_signatures().failures + library_signatures().forms, ids=lambda s: s.id)
def test_every_signature_names_a_case_of_the_library_that_cites_its_report(signature):
    """Otherwise a diagnosis would name a pattern with no evidence to give."""
    assert any(case.pattern == signature.pattern and signature.source in case.links for case in all_cases()), signature


@pytest.mark.parametrize(("version", "platform", "targets"), [
    ("8.6.2", "Jetson AGX Orin (sm_87)", ["trt86-orin"]),
    ("8.6.1", None, ["trt86-x86", "trt86-orin"]),  # no platform stated: both
    ("8.6.1", "a discrete GPU (sm_80: x86_64 or an SBSA server)", ["trt86-x86"]),
    ("10.7.0", None, ["trt107-x86", "trt107-orin", "trt107-orin-dla"]),  # a DLA target is a TensorRT target too
    ("10.5.0", None, []),  # no target of that release
    (None, "Jetson AGX Orin (sm_87)", []),
])
def test_a_build_finds_the_targets_of_its_version_and_platform(version, platform, targets):
    assert targets_of_build(version, platform, MATRIX) == targets


def test_a_flag_is_removed_from_the_version_the_table_says_on_tensorrt_targets_only():
    command = {"tool": "trtexec", "flags": ["--onnx", "--explicitBatch", "--int8"]}
    found = {(f["flag"], f["target"]) for f in removed_flags([command], MATRIX)}
    major = {t.id: int(t.version.split(".")[0]) for t in MATRIX if t.backend == "tensorrt" and t.version}
    assert {"trt11-x86", "trt114-orin-dla", "trt107-orin-dla"} <= set(major)  # 11.x and DLA targets are TensorRT's
    # --explicitBatch is gone from 10.0 on (11.x too), --int8 from 11.0 on; 8.x and 9.2 keep both; ort has no flags
    assert found == ({("--explicitBatch", target) for target, m in major.items() if m >= 10}
                     | {("--int8", target) for target, m in major.items() if m >= 11})
    polygraphy = {"tool": "polygraphy", "flags": ["--workspace"]}  # a trtexec flag under another tool's name
    assert removed_flags([polygraphy], MATRIX) == []


def test_a_known_message_in_text_that_shows_no_stopped_build_names_its_pattern_as_a_message_only():
    from harness.diagnosis.library import signature_matches
    from harness.tensorrt.classify import classify_log

    skip = ("[E] Error[9]: Error Code: 9: Skipping tactic 0x0000000000000000 due to exception [type.cpp:infer_type:145] "
            "Could not infer output types for operation:    43: quantize: x")  # Model-Optimizer#118's form
    end = "[E] Error[10]: Could not find any implementation for node {ForeignNode[/conv/Conv...x]}."
    alone, ended = (signature_matches({"failure": classify_log(text, library_signatures()).to_dict()})
                    for text in (skip, f"{skip}\n{end}"))
    assert [(m["pattern"], m["strength"]) for m in alone] == [("P17", "known-message")]
    assert [(m["pattern"], m["strength"]) for m in ended] == [("P17", "known-failure")]
