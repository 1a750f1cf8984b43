"""The build-log classifier on verbatim TensorRT log excerpts (reference/trt-logs, labelled in labels.json).

Every excerpt's source link is in labels.json next to its label ("source"); the table below maps those labels to
what the classifier must say, so a new excerpt without a label, or a relabelled one, fails here.
"""
import json
import re

import pytest

from cases import library_signatures
from harness.tensorrt import classify
from harness.tensorrt.classify import (
    ROOT_CAUSE_CATEGORIES,
    UNRECOGNIZED_FAILURE,
    WARNING_KINDS,
    DlaFallback,
    LogLine,
    dla_fallbacks,
    parse_log_line,
    pasted_commands,
    version_from_log,
)

SIGNATURES = library_signatures()  # every case's log signatures, as the commands and the worker hand them in
KNOWN_FAILURES, KNOWN_FORMS = SIGNATURES.failures, SIGNATURES.forms


def classify_log(text):
    return classify.classify_log(text, SIGNATURES)


def known_forms(text, classification=None):
    return classify.known_forms(text, SIGNATURES, classification)


def not_a_log(text):
    return classify.not_a_log(text, SIGNATURES)

# labels.json label -> (primary category, non-zero warning counts in that excerpt).
EXPECTED_BY_LABEL = {
    "BUILD_NO_IMPL + BUILD_FAIL_TAIL": ("no-implementation", {}),
    "BUILD_NO_IMPL (two-line form)": ("no-implementation", {}),
    "BUILD_NO_IMPL (Python logger form `[TRT] [E] 10:`)": ("no-implementation", {}),
    "BUILD_NO_IMPL, TRT 10.1 format (no file::line)": ("no-implementation", {}),
    "TACTIC_SKIP + BUILD_NO_IMPL + backend-strategy failure": ("no-implementation", {"tactic-skipped": 2}),
    "QUANT_MODE_WARN (10.x wording) + TACTIC_SKIP": (None, {"calibrator-ignored": 1, "tactic-skipped": 2}),
    "QUANT_MODE_WARN (8.x wording) + BUILD_INTERNAL_ASSERT": ("internal-assert", {"calibrator-ignored": 1}),
    "INT64_WEIGHTS + QUANT_MODE_WARN (INT8 without calibrator)": (None, {"int64-downcast": 1, "calibrator-ignored": 1}),
    "INT64_WEIGHTS + MISSING_SCALE": (None, {"int64-downcast": 1, "missing-scale": 4}),
    "CALIB_INFO + MISSING_SCALE (cache header carries version)": (None, {"missing-scale": 3}),
    "MISSING_SCALE on LayerNorm weights (transformer silent fallback)": (None, {"missing-scale": 3}),
    "MISSING_SCALE (seed 2, InstanceNorm model, implicit INT8)": (None, {"missing-scale": 4}),
    "MISSING_SCALE + PRECISION_CONSTRAINT_IGNORED (custom-logger format, no `[TRT]` tag)": (
        None,
        {"missing-scale": 1, "precision-constraint-ignored": 2},
    ),
    "VERBOSE_FUSION + CUDA_RUNTIME (seed 5, QDQ residual ConvEltwiseSumFusion)": ("cuda-runtime", {}),
    "TACTIC_SKIP + BUILD_NO_IMPL (Myelin OOM)": ("no-implementation", {"tactic-skipped": 1}),
    "VERSION_BANNER + option dump (10.x trtexec; InstanceNorm plugin flag)": (None, {}),
    'LAYER_INFO_TEXT (verbose "Engine Layer Information", Int8 layers)': (None, {}),
    "LAYER_INFO_JSON (`--exportLayerInfo`, Int8 conv)": (None, {}),
    "LAYER_NAMES_ONLY (exportLayerInfo without detailed verbosity → no precision available)": (None, {}),
}

# The label vocabulary of labels.json, read as what the classifier reports; the table above must agree with it.
CATEGORY_BY_LABEL_TOKEN = {
    "BUILD_NO_IMPL": "no-implementation",
    "BUILD_INTERNAL_ASSERT": "internal-assert",
    "CUDA_RUNTIME": "cuda-runtime",
}
WARNING_BY_LABEL_TOKEN = {
    "MISSING_SCALE": "missing-scale",
    "INT64_WEIGHTS": "int64-downcast",
    "QUANT_MODE_WARN": "calibrator-ignored",
    "PRECISION_CONSTRAINT_IGNORED": "precision-constraint-ignored",
    "TACTIC_SKIP": "tactic-skipped",
}

# The node each no-implementation excerpt names, spelled exactly as the log spells it (without the final period).
NO_IMPLEMENTATION_NODES = {
    "F01": "w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid, node_of_swish.mul)",
    "F03": "weights + node_of_weights_quantized + node_of_output",
    "F04": "/model.1/conv/Conv + PWN(PWN(/model.1/act/Sigmoid), /model.1/act/Mul)",
    "F08": "{ForeignNode[/transformer/attention_4/Slice_4_output_0[Constant].../transformer/Reshape_6]}",
    "F09": "conv1.weight + /conv1/weight_quantizer/QuantizeLinear + /conv1/Conv",
    "F29": "{ForeignNode[(Unnamed Layer* 1590) [Shuffle]...Reshape_11153 + Transpose_11154]}",
}

VERSIONS = {"F01": "8.5.2", "F29": "8.5.1", "F33": "10.3.0"}


@pytest.fixture(scope="module")
def labels(reference_dir):
    return json.loads((reference_dir / "trt-logs" / "labels.json").read_text(encoding="utf-8"))


def excerpt_line(reference_dir, log_id: str, containing: str) -> str:
    """The one line of an excerpt that contains ``containing``."""
    lines = [l for l in (reference_dir / "trt-logs" / f"{log_id}.log").read_text().splitlines() if containing in l]
    assert len(lines) >= 1, f"{log_id}.log has no line containing {containing!r}"
    return lines[0]


def test_every_label_has_an_excerpt(reference_dir, labels):
    missing = [log_id for log_id in labels if not (reference_dir / "trt-logs" / f"{log_id}.log").is_file()]
    assert missing == []


def test_every_label_has_an_expectation(labels):
    unmapped = [entry["labels"] for entry in labels.values() if entry["labels"] not in EXPECTED_BY_LABEL]
    assert unmapped == [], "add these labels to EXPECTED_BY_LABEL"


@pytest.mark.parametrize("label", sorted(EXPECTED_BY_LABEL))
def test_expectation_table_agrees_with_the_label_vocabulary(label):
    tokens = set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", label))
    category, warnings = EXPECTED_BY_LABEL[label]
    named_categories = {CATEGORY_BY_LABEL_TOKEN[t] for t in tokens if t in CATEGORY_BY_LABEL_TOKEN}
    assert named_categories == ({category} if category else set())
    assert set(warnings) == {WARNING_BY_LABEL_TOKEN[t] for t in tokens if t in WARNING_BY_LABEL_TOKEN}


def test_classifies_every_excerpt_as_labelled(trt_log, labels):
    label = labels[trt_log.stem]["labels"]  # KeyError: the excerpt has no entry in labels.json
    category, warnings = EXPECTED_BY_LABEL[label]
    result = classify_log(trt_log.read_text(encoding="utf-8"))
    assert result.category == category
    assert result.warnings == {kind: warnings.get(kind, 0) for kind in WARNING_KINDS}
    if category is None:
        assert (result.node, result.message) == (None, None)
    else:
        assert result.message


def test_names_the_node_without_implementation_as_the_log_spells_it(trt_log):
    result = classify_log(trt_log.read_text(encoding="utf-8"))
    expected = NO_IMPLEMENTATION_NODES.get(trt_log.stem)
    assert result.node == expected
    if expected is not None:
        assert f"for node {expected}." in trt_log.read_text(encoding="utf-8")


def test_version_from_log(trt_log):
    assert version_from_log(trt_log.read_text(encoding="utf-8")) == VERSIONS.get(trt_log.stem)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("&&&& RUNNING TensorRT.trtexec [TensorRT v100001] # trtexec --onnx=m.onnx", "10.0.1"),
        ("&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=m.onnx", "8.6.1"),
        ("&&&& RUNNING TensorRT.trtexec [TensorRT v101100] # trtexec", "10.11.0"),
        ("[I] TensorRT version: 8.6.1.6", "8.6.1"),
        ("[I] TensorRT version: 10.3", "10.3.0"),
        ("[I] Building an engine", None),
        # the spellings pasted fragments of 2024-2026 carry
        ("The TensorRT version is 8.6.1.6", "8.6.1"),
        ("built with TensorRT v8601 on the Orin", "8.6.1"),
        ("TensorRT Version: 10.3", "10.3.0"),
        ("TensorRT: starting export with TensorRT 10.0.0b6...", "10.0.0"),
        ("C:\\TensorRT-8.6.1.6\\bin\\trtexec.exe --onnx=m.onnx", "8.6.1"),
        ("pip install tensorrt==10.8.0.43", "10.8.0"),
        ("FAILED TensorRT.trtexec [TensorRT v8510] # trtexec --loadEngine=a.dla", "8.5.10"),
    ],
)
def test_version_from_banner_codes(text, version):
    assert version_from_log(text) == version


def test_result_carries_every_warning_kind_even_when_zero():
    result = classify_log("")
    assert result.to_dict() == {
        "category": None,
        "node": None,
        "message": None,
        "warnings": dict.fromkeys(WARNING_KINDS, 0),
        "known_failure": None,
        "failure_shown": False,
        "stage": None,
    }


# Surface forms: a message body taken verbatim from an excerpt, re-wrapped in each logger's prefix (the prefixes
# are those the excerpts and failure-patterns.md show). The body must come out the same and classify the same.
ERROR_FORMS = {
    "trtexec": "[10/14/2023-15:37:16] [E] Error[{code}]: {body}",
    "trtexec 10.1+": "[E] Error[{code}]: Error Code: {code}: {body}",
    "python logger": "[05/07/2024-17:13:08] [TRT] [E] {code}: {body}",
    "TRT 7 python logger": "[TensorRT] ERROR: {body}",
    "deepstream": "ERROR: [TRT]: {code}: {body}",
    "custom logger": "[2022-11-08 06:01:58 ERROR] {body}",
}
WARNING_FORMS = {
    "trtexec": "[08/14/2025-19:28:56] [W] [TRT] {body}",
    "python logger": "[02/12/2024-00:29:48] [TRT] [W] {body}",
    "TRT 7 python logger": "[TensorRT] WARNING: {body}",
    "deepstream": "WARNING: [TRT]: {body}",
    "custom logger": "[2022-11-08 06:01:58 WARNING] {body}",
}
# (excerpt, text after which the body starts, error code): bodies with and without an 8.x source location.
ERROR_BODIES = {
    "no-implementation, 8.x location": ("F01", "Error[10]: ", "10"),
    "no-implementation, no location": ("F04", "[E] 10: ", "10"),
    "internal assert": ("F11", "Error[2]: ", "2"),
    "cuda runtime": ("F25", "Error[1]: ", "1"),
}


@pytest.mark.parametrize("form", sorted(ERROR_FORMS))
@pytest.mark.parametrize("body_name", sorted(ERROR_BODIES))
def test_error_surface_forms_classify_the_same(reference_dir, form, body_name):
    log_id, body_starts_after, code = ERROR_BODIES[body_name]
    original = excerpt_line(reference_dir, log_id, body_starts_after)
    body = original.split(body_starts_after, 1)[1]
    rewrapped = ERROR_FORMS[form].format(code=code, body=body)

    assert parse_log_line(rewrapped) == parse_log_line(original)
    assert parse_log_line(rewrapped).severity == "error"
    assert classify_log(rewrapped) == classify_log(original)
    assert classify_log(rewrapped).category in ROOT_CAUSE_CATEGORIES


@pytest.mark.parametrize("form", sorted(WARNING_FORMS))
@pytest.mark.parametrize(
    ("log_id", "body_starts_after", "kind"),
    [
        ("F22", "[TRT] [W] ", "missing-scale"),
        ("F16", "[W] [TRT] ", "int64-downcast"),
        ("F23", "WARNING] ", "precision-constraint-ignored"),
        ("F11", "[W] [TRT] ", "calibrator-ignored"),
        ("F29", "[W] [TRT] ", "tactic-skipped"),
    ],
)
def test_warning_surface_forms_count_the_same(reference_dir, form, log_id, body_starts_after, kind):
    original = excerpt_line(reference_dir, log_id, body_starts_after)
    rewrapped = WARNING_FORMS[form].format(body=original.split(body_starts_after, 1)[1])

    assert parse_log_line(rewrapped) == parse_log_line(original)
    assert parse_log_line(rewrapped).severity == "warning"
    result = classify_log(rewrapped)
    assert result.category is None
    assert {k: v for k, v in result.warnings.items() if v} == {kind: 1}


def test_8x_location_and_10x_error_code_forms_give_the_same_body(reference_dir):
    eight = excerpt_line(reference_dir, "F03", "[optimizer.cpp::computeCosts::3897]")
    ten = "[E] Error[10]: Error Code: 10: " + excerpt_line(reference_dir, "F03", "Error[10]: Could").split(": ", 1)[1]
    assert parse_log_line(eight).body == (
        "Error Code 10: Internal Error (Could not find any implementation for node "
        "weights + node_of_weights_quantized + node_of_output.)"
    )
    assert parse_log_line(ten).body == (
        "Could not find any implementation for node weights + node_of_weights_quantized + node_of_output."
    )
    assert classify_log(eight).node == classify_log(ten).node == NO_IMPLEMENTATION_NODES["F03"]


@pytest.mark.parametrize(
    ("line", "severity", "body"),
    [
        ("[I] [TRT] Graph optimization time: 0.13 seconds.", "info", "Graph optimization time: 0.13 seconds."),
        ("[07/05/2024-15:26:02] [V] [TRT] Running: ConvEltwiseSumFusion", "verbose", "Running: ConvEltwiseSumFusion"),
        ("[F] [TRT] Assertion x failed.", "internal-error", "Assertion x failed."),
        ("[TensorRT] INTERNAL ERROR: Assertion x failed.", "internal-error", "Assertion x failed."),
        ("Skipping this backend strategy.", None, "Skipping this backend strategy."),
        ("", None, ""),
        (
            "[W] [TRT] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights.",
            "warning",
            "Your ONNX model has been generated with INT64 weights.",
        ),
    ],
)
def test_parse_log_line(line, severity, body):
    assert parse_log_line(line) == LogLine(severity=severity, body=body)


def test_tactic_skip_at_error_severity_is_not_the_failure(reference_dir):
    skip = excerpt_line(reference_dir, "F09", "Skipping tactic")
    assert parse_log_line(skip).severity == "error"
    assert classify_log(skip).category is None
    assert classify_log(skip).warnings["tactic-skipped"] == 1


def test_root_cause_wins_over_the_consequence_that_follows_it(reference_dir):
    text = (reference_dir / "trt-logs" / "F11.log").read_text(encoding="utf-8")
    result = classify_log(text)
    assert result.category == "internal-assert"
    assert "outScales.size() == 1" in result.message  # not "engine != nullptr", which only says the build ended


def test_consequences_alone_are_a_failure_of_unrecognized_kind(reference_dir):
    tail = [l for l in (reference_dir / "trt-logs" / "F01.log").read_text().splitlines() if "Error[" not in l]
    result = classify_log("\n".join(tail))
    assert result.category == UNRECOGNIZED_FAILURE
    assert result.message == "Engine could not be created from network"


def test_unmatched_error_line_is_a_failure_of_unrecognized_kind():
    result = classify_log("[E] [TRT] Something TensorRT has never said before.")
    assert (result.category, result.message) == (UNRECOGNIZED_FAILURE, "Something TensorRT has never said before.")


def test_known_root_cause_wins_over_an_earlier_unrecognized_error(reference_dir):
    text = "[E] [TRT] Something TensorRT has never said before.\n" + excerpt_line(reference_dir, "F25", "Cuda Runtime")
    assert classify_log(text).category == "cuda-runtime"


def test_out_of_memory_warning_is_not_a_failure_but_an_error_is():
    warning = "[W] [TRT] Requested amount of GPU memory (4362077693 bytes) could not be allocated."
    assert classify_log(warning).category is None
    assert classify_log(warning.replace("[W]", "[E]")).category == "out-of-memory"


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # onnx-tensorrt parser failure, wording of https://github.com/onnx/onnx-tensorrt/issues/465
        ('While parsing node number 2 [Mish -> "001_convolutional_mish"]:', "parser"),
        ("[8] No importer registered for op: Mish", "parser"),
        ("[E] [TRT] ModelImporter.cpp:773: In node 0 (importConv): UNSUPPORTED_NODE: Assertion failed: x", "parser"),
        ("[E] Failed to parse onnx file", "parser"),
        ("Segmentation fault (core dumped)", "crash"),
        ("[E] Error[2]: [calibrator.cpp::calibrateEngine::1181] Error Code 2: Internal Error (Calibration failure "
         "occurred with no scaling factors detected.)", "calibration"),
        ("pycuda._driver.LogicError: cuMemcpyHtoDAsync failed: invalid argument", "cuda-runtime"),
        ("RuntimeError: the build script gave up", UNRECOGNIZED_FAILURE),
        ("[TensorRT] ERROR: Internal error: could not find any implementation for node (Unnamed Layer* 4) "
         "[Convolution], try increasing the workspace size with IBuilder::setMaxWorkspaceSize()", "no-implementation"),
    ],
)
def test_failure_kinds_beyond_the_excerpts(text, category):
    assert classify_log(text).category == category


def test_trt7_wording_names_the_node_without_the_workspace_hint():
    text = (
        "[TensorRT] ERROR: Internal error: could not find any implementation for node (Unnamed Layer* 4) "
        "[Convolution], try increasing the workspace size with IBuilder::setMaxWorkspaceSize()"
    )
    assert classify_log(text).node == "(Unnamed Layer* 4) [Convolution]"


def test_legacy_and_deprecation_warnings_are_counted():
    text = "\n".join(
        [
            "[TensorRT] WARNING: Missing dynamic range for tensor 125, expect fall back to non-int8 implementation",
            "build.py:31: DeprecationWarning: Use explicit quantization instead.",
        ]
    )
    result = classify_log(text)
    assert result.category is None
    assert {k: v for k, v in result.warnings.items() if v} == {"missing-scale": 1, "deprecated-api": 1}


@pytest.mark.parametrize(
    "before",
    [
        "[E] Error[1]: [myelinBuilderUtils.cpp::operator()::371] ",  # trtexec, 8.x bracketed location
        "[05/07/2024-17:13:08] [TRT] [E] 9: [graphShapeAnalyzer.cpp::processCheck::862] ",  # Python logger
        "ERROR: [TRT]: 2: builder.cpp:12: ",  # DeepStream, leading location
        "Error message: [optimizer.cpp::computeCosts::4048] ",  # a continuation line with no severity (F09's form)
        "",
    ],
)
def test_internal_error_family_is_never_the_catch_all_whatever_precedes_it(before):
    # Constructed envelope with an inner message no rule knows; the envelope wording is that of F09/F11/F29.
    result = classify_log(before + "Error Code 9: Internal Error (Some condition TensorRT checks was not met.)")
    assert result.category == "internal-assert" != UNRECOGNIZED_FAILURE
    assert result.message.endswith("Error Code 9: Internal Error (Some condition TensorRT checks was not met.)")


def test_internal_error_envelope_keeps_its_inner_root_cause_and_consequences_stay_consequences(reference_dir):
    assert classify_log(excerpt_line(reference_dir, "F29", "[E]")).category == "no-implementation"
    tail = "[E] Error[2]: [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error (Assertion engine != nullptr failed. )"
    unknown = "[E] [TRT] Something TensorRT has never said before."
    result = classify_log(unknown + "\n" + tail)  # the envelope of "the build ended" is no root cause
    assert (result.category, result.message) == (UNRECOGNIZED_FAILURE, "Something TensorRT has never said before.")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "it is empty"),
        ("\n  \n", "only white space"),
        ("\x00\x01\x02PK\x03\x04" + "\ufffd" * 40, "binary data"),
        ('{"Layers": ["Conv_0"]}', "engine inspector JSON"),
        ("hello\nthis is a shopping list\n", "no line carries a logger's severity tag"),
    ],
)
def test_input_that_is_not_a_tensorrt_log_says_why(text, reason):
    assert reason in not_a_log(text)


def test_every_reference_build_log_looks_like_a_tensorrt_log(trt_log):
    text = trt_log.read_text(encoding="utf-8")
    if trt_log.stem in ("F41", "F42"):  # --exportLayerInfo JSON, not a build log
        assert "engine inspector JSON" in not_a_log(text)
    else:
        assert not_a_log(text) is None
    assert not_a_log("Segmentation fault (core dumped)") is None  # a crash tail alone is still build output


NOT_A_LOG = ("no line carries a logger's severity tag ([E], [W], ERROR:, ...), a timestamp, a [TRT] tag or a TensorRT "
             "message this classifier knows")
TRT_LINE = "[I] [TRT] Loaded engine size: 12 MiB\n"  # 37 characters


@pytest.mark.parametrize(("text", "reason"), [
    ("", "it is empty"),
    (" \n\t\n", "it holds only white space"),
    ('  {"Layers": ["Conv_0"]}', "it looks like engine inspector JSON, not a build log: read it with `trt-matrix "
                                 "layers`"),
    ("hello\nthis is a shopping list\n", NOT_A_LOG),
    ("[I] loaded the model\n", None),  # a severity tag alone, no TensorRT mark, no known message
    ("Loaded the model\n[I] done\n", None),
    ("this is a shopping list\nMissing scale and zero-point for tensor x, expect fall back\n", None),
    ("this is a shopping list\nsomething: could not find any implementation for node conv\n", None),
], ids=["empty", "white-space", "json", "prose", "severity-tag", "severity-tag-later", "known-warning",
        "known-failure"])
def test_not_a_log_reason_in_full(text, reason):
    assert not_a_log(text) == reason


def test_binary_data_is_at_most_5_percent_odd_characters():
    """5 undecodable or control characters in 100 are damage a log can have; 6 are binary data."""
    log = (TRT_LINE * 3)[:95]
    assert not_a_log(log + "\ufffd" * 5) is None
    assert not_a_log(log + "\x01" * 5) is None
    assert not_a_log(log[:-1] + "\ufffd" * 6) == ("it holds binary data (6 of its 100 characters are not text), not a "
                                                   "text log")
    assert not_a_log(log[:-1] + "\x02" * 6) == ("it holds binary data (6 of its 100 characters are not text), not a "
                                                "text log")


def test_a_single_nul_character_is_binary_data():
    assert not_a_log(TRT_LINE * 10 + "\x00") == "it holds binary data (1 of its 371 characters are not text), not a text log"


def test_tabs_form_feeds_and_colour_escapes_are_text():
    coloured = "\x1b[31m[E] [TRT]\x1b[0m\tbuild failed\r\n\f" * 20
    assert not_a_log(coloured) is None


@pytest.mark.parametrize(("line", "severity", "body"), [
    ("[F] [TRT] 2: Assertion x failed.", "internal-error", "Assertion x failed."),
    ("[E] [TRT] 10: Could not find any implementation for node c.", "error", "Could not find any implementation for node c."),
    ("[W] [TRT] 10: tensors are cast", "warning", "10: tensors are cast"),
    ("[E] [TRT] a.cpp:1: b.cpp:2: message", "error", "b.cpp:2: message"),
    ("[E] x\r\n", "error", "x"),
], ids=["internal-error-code", "error-code", "warning-keeps-number", "one-leading-location", "crlf"])
def test_parse_log_line_strips_codes_only_from_failures_and_one_leading_location(line, severity, body):
    assert parse_log_line(line) == LogLine(severity=severity, body=body)


@pytest.mark.parametrize(("text", "version"), [
    ("&&&& RUNNING TensorRT.trtexec [TensorRT v8001] # trtexec", "8.0.1"),
    ("&&&& RUNNING TensorRT.trtexec [TensorRT v8205] # trtexec", "8.2.5"),
    ("[I] TensorRT version: 10.3\n&&&& RUNNING TensorRT.trtexec [TensorRT v8601]", "10.3.0"),
])
def test_version_from_banner_code_digits_and_first_mention(text, version):
    assert version_from_log(text) == version


@pytest.mark.parametrize(("line", "node"), [
    ("[E] Error[9]: Error Code 9: Internal Error (node_of_onnx::Shape_2609: could not find any supported formats "
     "consistent with input/output data types)", "node_of_onnx::Shape_2609"),
    ("[E] [TRT] /backbone/Conv_3: could not find any supported formats consistent with input/output data types",
     "/backbone/Conv_3"),
    ("[TensorRT] ERROR: ../builder/tacticOptimizer.cpp (1715) - TRTInternal Error in computeCosts: 0 (Could not find "
     "any implementation for node conv1 + relu1.)", "conv1 + relu1"),
    ("[E] [TRT] Could not find any implementation for node (Unnamed Layer* 4) [Convolution].)",
     "(Unnamed Layer* 4) [Convolution]"),
    ("[TensorRT] ERROR: Could not find any implementation for node conv_b)", "conv_b"),
    ("[E] [TRT] Could not find any implementation for node conv1 )", "conv1"),
    ("[E] [TRT] Could not find any implementation for node conv1 .", "conv1"),
    ("[E] [TRT] 9: Could not find any supported formats consistent with input/output data types", None),
], ids=["formats-in-envelope", "formats-bare", "trt7-wrapped", "unnamed-layer", "unopened-parenthesis",
        "space-before-parenthesis", "space-before-period", "formats-without-node"])
def test_no_implementation_names_the_node_in_each_wording(line, node):
    result = classify_log(line)
    assert (result.category, result.node) == ("no-implementation", node)

# ---- known upstream failures and the warnings of P10, P11, P13 ----------------------------------------

# Messages as the upstream reports print them (source link of each in KNOWN_FAILURES), as (location, body): the
# location is the 8.x-10.x "[file.cpp::function::line]" prefix, "" where the report shows none.
KNOWN_MESSAGES = {
    "checklinks-region-not-removed": (  # ultralytics#23841, DeepStream-Yolo#675, TensorRT#4797 (TensorRT 10.3)
        "[checkSanity.cpp::checkLinks::218] ",
        "Error Code 2: Internal Error (Assertion item.second != nullptr failed. region should have been removed from "
        "Graph::regions)",
    ),
    "qdq-weights-not-fused": (  # TensorRT#1864 (8.2.3)
        "[qdqGraphOptimizer.cpp::reportWeightlessTwoInputConvolutionAsError::217] ",
        "Error Code 2: Internal Error (Conv_9 + Relu_11: Could not fuse 2nd input (kernel weights) of CONVOLUTION)",
    ),
    "qdq-add-inputs-expr": (  # TensorRT#1574 (8.0.1.6)
        "[graphOptimizer.cpp::sameExprValues::587] ", "Error Code 2: Internal Error (Assertion lhs.expr failed.)",
    ),
    "qdq-pointwise-out-scales": (  # TensorRT#2664, the reference excerpt F11
        "[pointWiseV2Builder.cpp::toExpr::325] ",
        "Error Code 2: Internal Error (Assertion outScales.size() == 1 failed. )",
    ),
    "qdq-combine-in-out-scale": (  # TensorRT#3220 (8.5.3)
        "[weightConvertors.cpp::combineInOutScale::369] ",
        "Error Code 2: Internal Error (Assertion p.quantizations.isOutputSet(0) failed. )",
    ),
    "qdq-int8-candidates-removed": (  # TensorRT#3040 (8.6.1), the issue title's form: no location
        "",
        "Assertion !n->candidateRequirements.empty() failed. All of the candidates were removed, which points to the "
        "node being incorrectly marked as an int8 node.",
    ),
    "qdq-quantized-constant-placement": (  # TensorRT#3919 (10.0.1)
        "[qdqGraphOptimizer.cpp::matchQuantizedConstantPluginOrDQ::4004] ",
        "Error Code 2: Internal Error (L__self___conv1.weight: Quantized constant is only allowed before DQ or "
        "PLUGIN_V2 node)",
    ),
    "foreign-node-no-implementation": (  # TensorRT#3972 (10.1), the reference excerpt F08
        "",
        "Could not find any implementation for node {ForeignNode[/transformer/attention_4/Slice_4_output_0[Constant]..."
        "/transformer/Reshape_6]}.",
    ),
    "dequantize-type-not-inferred": (  # TensorRT#4832 (10.16.2.10, Orin), the part of the operand text it shows
        "",
        "Error Code 9: [type.cpp:186: infer_type] Could not infer output types for operation: 291: dequantize: "
        "Dequantized input0-(f32[1,16,512,512]) | input0 reshape out_transpose_out reshape out slice_U28 out-(i8[]) "
        "No matching rules found for input operand types",
    ),
    "quantize-type-not-inferred": (  # Model-Optimizer#118 (10.7), as an error rather than a skipped tactic
        "",
        "[type.cpp:infer_type:145] Could not infer output types for operation:    40: quantize: "
        "/maxpool/MaxPool_output_0_QuantizeLinear_Output'-(fp8[7,64,192,256][]so[], mem_prop=0) No matching rules "
        "found for input operand types",
    ),
    "fp8-needs-fp8-hardware": (  # Model-Optimizer#70 (10.3.0.26, RTX A6000)
        "",
        "IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (Networks with FP8 Q/DQ layers require "
        "hardware with FP8 support.)",
    ),
    "fp4-blockwise-quantize-rejected": (  # TensorRT-Model-Connect#1326 (11.1.0.106, 11.3.0.99): shape.cpp:3350
        "",
        "Blockwise quantization requires output type to be int8 or fp8e4m3",
    ),
    "calibrator-class-removed": (  # ultralytics#24729 (11.0.0.114)
        "",
        "AttributeError: module 'tensorrt' has no attribute 'IInt8Calibrator'",
    ),
    "conv-silu-no-implementation": (  # TensorRT#3640 (8.6.2, JetPack 6.0)
        "[optimizer.cpp::computeCosts::3869] ",
        "Error Code 10: Internal Error (Could not find any implementation for node /model.0/conv/Conv + "
        "PWN(PWN(/model.0/act/Sigmoid), /model.0/act/Mul).)",
    ),
    "qdq-conv-swish-no-implementation": (  # TensorRT#3385 (8.5.2, Orin), the reference excerpt F01
        "[optimizer.cpp::computeCosts::3728] ",
        "Error Code 10: Internal Error (Could not find any implementation for node w + node_of_dqconv.dwconv + "
        "PWN(node_of_swish.sigmoid, node_of_swish.mul).)",
    ),
    "cuda-runtime-operation-not-supported": (  # TensorRT#3980 (10.0.1), the reference excerpt F25
        "[defaultAllocator.cpp::deallocateAsync::64] ", "Error Code 1: Cuda Runtime (operation not supported)",
    ),
    "calibration-algo-type-removed": (  # wyoming-whisper-trt#1020 (11.0), torch2trt's calibrator at import
        "", "AttributeError: module 'tensorrt' has no attribute 'CalibrationAlgoType'",
    ),
    "precision-builder-flag-removed": (  # ComfyUI-Rife-Tensorrt#25, ultralytics#24735 (11.x)
        "", "AttributeError: type object 'tensorrt_bindings.tensorrt.BuilderFlag' has no attribute 'FP16'",
    ),
}
ERROR_CODES = {"foreign-node-no-implementation": "10", "conv-silu-no-implementation": "10",
               "qdq-conv-swish-no-implementation": "10", "cuda-runtime-operation-not-supported": "1",
               "dequantize-type-not-inferred": "9", "quantize-type-not-inferred": "9", "fp8-needs-fp8-hardware": "9"}
# Forms a 10.x Python or DeepStream log prints Error Code 2 messages in: the location right after the tag, no number
# (ultralytics#23841: "[TRT] [E] [checkSanity.cpp::checkLinks::218] Error Code 2: ...", DeepStream-Yolo#675:
# "ERROR: [TRT]: [checkSanity.cpp::checkLinks::218] Error Code 2: ...").
LOCATION_FIRST_FORMS = {
    "python logger, location first": "[03/09/2026-10:00:00] [TRT] [E] {body}",
    "deepstream, location first": "ERROR: [TRT]: {body}",
}


def known_failure_lines(failure_id: str):
    """(form name, line) for every surface form, with and without the source location, of one known message."""
    location, body = KNOWN_MESSAGES[failure_id]
    code = ERROR_CODES.get(failure_id, "2")
    for with_location in (True, False):
        text = f"{location}{body}" if with_location else body
        for form, template in {**ERROR_FORMS, **LOCATION_FIRST_FORMS}.items():
            yield f"{form}, {'with' if with_location else 'without'} location", template.format(code=code, body=text)


def test_every_known_failure_has_its_upstream_message():
    assert set(KNOWN_MESSAGES) <= {known.id for known in KNOWN_FAILURES}
    assert all(known.source.startswith("https://github.com/") for known in KNOWN_FAILURES)


@pytest.mark.parametrize("failure_id", sorted(KNOWN_MESSAGES))
def test_a_known_message_is_named_in_every_surface_form(failure_id):
    known = next(k for k in KNOWN_FAILURES if k.id == failure_id)
    for form, line in known_failure_lines(failure_id):
        result = classify_log(line)
        assert (result.category, result.known_failure) == (known.category, known), form
        assert result.to_dict()["known_failure"] == {"id": known.id, "pattern": known.pattern, "source": known.source}


def test_the_10_1_form_without_internal_error_envelope_keeps_the_category():
    """10.1+ error recorders print the bare message; a known one is still an internal assert, not the catch-all."""
    line = "[E] Error[2]: Error Code: 2: Conv_9 + Relu_11: Could not fuse 2nd input (kernel weights) of CONVOLUTION"
    assert classify_log(line).category == "internal-assert"
    assert classify_log(line).known_failure.id == "qdq-weights-not-fused"


def test_checklinks_wins_over_the_failed_build_tail_and_counts_no_warning():
    text = "\n".join([
        "[03/09/2026-10:00:00] [TRT] [W] Calibration Profile is not defined. Calibrating with Profile 0",
        "[03/09/2026-10:00:01] [TRT] [E] [checkSanity.cpp::checkLinks::218] Error Code 2: Internal Error (Assertion "
        "item.second != nullptr failed. region should have been removed from Graph::regions)",
        "[03/09/2026-10:00:01] [TRT] [E] [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error "
        "(Assertion engine != nullptr failed. )",
    ])
    result = classify_log(text)
    assert (result.category, result.known_failure.pattern) == ("internal-assert", "P9")
    assert "Graph::regions" in result.message
    assert {k: v for k, v in result.warnings.items() if v} == {"calibration-profile-default": 1}


def test_reference_excerpts_are_the_known_failures_their_sources_report(reference_dir, labels):
    """F08 (#3972) and F29 (#2606) are ForeignNode failures; F11 (#2664) the pointwise out-scales assertion; F01
    (#3385) P1's Q/DQ conv + Swish, F04 (a sibling of #3640) S1's Conv + SiLU, F25 (#3980) S5's Cuda Runtime error."""
    named = {}
    for path in sorted((reference_dir / "trt-logs").glob("*.log")):
        known = classify_log(path.read_text(encoding="utf-8")).known_failure
        if known is not None:
            named[path.stem] = known.id
    assert named == {"F08": "foreign-node-no-implementation", "F29": "foreign-node-no-implementation",
                     "F11": "qdq-pointwise-out-scales", "F01": "qdq-conv-swish-no-implementation",
                     "F04": "conv-silu-no-implementation", "F25": "cuda-runtime-operation-not-supported"}
    assert labels["F08"]["source"] == ["https://github.com/NVIDIA/TensorRT/issues/3972"]


def test_an_unknown_assertion_is_no_known_failure():
    result = classify_log("[E] Error[2]: [foo.cpp::bar::1] Error Code 2: Internal Error (Assertion x > 0 failed. )")
    assert (result.category, result.known_failure) == ("internal-assert", None)


NEW_WARNING_BODIES = {
    # The 10.1+ DeprecationWarning of IBuilderConfig.int8_calibrator (pyCore.cpp + utils.cpp of NVIDIA/TensorRT).
    "implicit-quantization-deprecated": "DeprecationWarning: Use Deprecated in TensorRT 10.1. Superseded by explicit "
                                        "quantization. instead.",
    # DeepStream-Yolo#603 (TensorRT 10.3), TensorRT#4053, ultralytics#10165.
    "calibration-profile-default": "Calibration Profile is not defined. Calibrating with Profile 0",
    "calibration-cache-rejected": "Calibration table does not match calibrator algorithm type",
}


@pytest.mark.parametrize("form", sorted(WARNING_FORMS))
@pytest.mark.parametrize("kind", sorted(NEW_WARNING_BODIES))
def test_p10_p11_p13_warnings_are_counted_in_every_surface_form(form, kind):
    result = classify_log(WARNING_FORMS[form].format(body=NEW_WARNING_BODIES[kind]))
    expected = {kind: 1} | ({"deprecated-api": 1} if kind == "implicit-quantization-deprecated" else {})
    assert result.category is None
    assert {k: v for k, v in result.warnings.items() if v} == expected


@pytest.mark.parametrize("line", [
    # Python's warnings module on stderr, and the capture's line in the cell's tensorrt.log.
    "/work/build.py:31: DeprecationWarning: Use Deprecated in TensorRT 10.1. Superseded by explicit quantization. "
    "instead.",
    "[W] [python] DeprecationWarning: Use Deprecated in TensorRT 10.1. Superseded by explicit quantization. instead. "
    "(build_config.py:40)",
    # A compiler on NvInfer.h of TensorRT 10.8 (laugh12321/TensorRT-YOLO#95).
    "/opt/TensorRT-10.8.0.43/include/NvInfer.h:8300:38: warning: 'IInt8MinMaxCalibrator' is deprecated "
    "[-Wdeprecated-declarations]",
])
def test_the_implicit_quantization_deprecation_outside_tensorrt_loggers(line):
    result = classify_log(line)
    assert result.category is None and result.warnings["implicit-quantization-deprecated"] == 1


def test_a_rejected_cache_at_error_severity_is_a_calibration_failure():
    result = classify_log("[E] [TRT] Calibration table does not match calibrator algorithm type")
    assert result.category == "calibration"
    assert result.warnings["calibration-cache-rejected"] == 1


def test_a_build_without_implementation_after_untyped_qdq_skips_names_the_skip_reason():
    """TensorRT#4832: every tactic was skipped for an untyped dequantize and the build failed. The log below puts that
    skip line (the 10.7 form of Model-Optimizer#118, with a dequantize) before the 10.x end of such a build, a
    ForeignNode without implementation: the known failure is P14's, not P8's ForeignNode."""
    skip = ("[E] Error[9]: Error Code: 9: Skipping tactic 0x0000000000000000 due to exception "
            "[type.cpp:186: infer_type] Could not infer output types for operation: 291: dequantize: Dequantized "
            "input0-(f32[1,16,512,512]) | input0 reshape out_transpose_out reshape out slice_U28 out-(i8[]) No "
            "matching rules found for input operand types")
    end = ("[E] Error[10]: Error Code: 10: Could not find any implementation for node "
           "{ForeignNode[/stem/Reshape.../head/conv/Conv]}.")
    result = classify_log(f"{skip}\n{skip}\n{end}")
    assert result.category == "no-implementation" and result.message.startswith("Could not find any implementation")
    assert (result.known_failure.id, result.known_failure.pattern) == ("dequantize-type-not-inferred", "P14")
    assert result.warnings["qdq-type-not-inferred"] == 2 and result.warnings["tactic-skipped"] == 2
    assert classify_log(end).known_failure.id == "foreign-node-no-implementation"  # without the skips: P8's
    assert classify_log(skip).category is None  # a skipped tactic alone is no failure


def test_untyped_quantize_skips_do_not_rename_another_failure():
    skip = ("[E] Error[9]: Error Code: 9: Skipping tactic 0x0000000000000000 due to exception "
            "[type.cpp:infer_type:145] Could not infer output types for operation:    40: quantize: "
            "/maxpool/MaxPool_output_0_QuantizeLinear_Output'")
    oom = "[E] [TRT] Requested amount of GPU memory (4362077693 bytes) could not be allocated."
    result = classify_log(f"{skip}\n{oom}")
    assert (result.category, result.known_failure) == ("out-of-memory", None)


# ---- known forms: a pattern's shape, which the model must confirm --------------------------------------------------


FORM_LINES = [
    ("[E] Error[10]: Could not find any implementation for node weights + node_of_weights_quantized + node_of_output.",
     "qdq-weights-layer-no-implementation"),
    ("[TRT] [W] Missing scale and zero-point for tensor /model.23/TopK_output_1, expect fall back to non-int8 "
     "implementation for any layer consuming or producing given tensor", "topk-output-missing-scale"),
    ("[TRT] [W] Missing scale and zero-point for tensor encoder.layer.2.attention.output.LayerNorm.bias_output, expect "
     "fall back to non-int8 implementation for any layer consuming or producing given tensor",
     "layernorm-missing-scale"),
    ("[TensorRT] WARNING: Missing dynamic range for tensor (Unnamed Layer* 12) [Shuffle]_output, expect fall back to "
     "non-int8 implementation for any layer consuming or producing given tensor",
     "unnamed-constant-shuffle-missing-scale"),
    # TensorRT#3579: S3's three parts and the residual Add fused after them
    ("[01/02/2024-22:10:33] [TRT] [E] 10: Could not find any implementation for node SandGlass4.8.weight + "
     "/SandGlass4/SandGlass4.8/_weight_quantizer/QuantizeLinear + /SandGlass4/SandGlass4.8/Conv + /Add.",
     "qdq-weights-layer-residual-no-implementation"),
    ("[12/04/2024-11:57:45] [TRT] [W] Layer '/model.23/Concat_4' (CONCATENATION): Unsupported on DLA. Switching this "
     "layer's device type to GPU.", "dla-layer-to-gpu"),
]


@pytest.mark.parametrize(("text", "form_id"), FORM_LINES, ids=[form_id for _, form_id in FORM_LINES])
def test_a_known_form_names_its_pattern_and_counts_its_lines(text, form_id):
    (known, count), = known_forms(text + "\n" + text)
    assert (known.id, count) == (form_id, 1 if known.kind == "no-implementation" else 2)
    assert known.source.startswith("https://github.com/") and known.note


@pytest.mark.parametrize("text", [
    # an activation fused after the conv: not the weights-quantizer-consumer form
    "[E] Error[10]: Could not find any implementation for node conv1.weight + QuantizeLinear_7 + Conv_9 + "
    "PWN(Relu_10).",
    # the form's words at warning severity are no failure
    "[W] Could not find any implementation for node weights + node_of_weights_quantized + node_of_output.",
    # a TopK tensor named in another message: only a TopK output without scales counts
    "[I] [TRT] Layer /model.23/TopK_output_1 runs in INT8",
])
def test_no_known_form_in_other_lines(text):
    assert known_forms(text) == []


def test_every_known_form_has_a_line_above():
    assert sorted(form_id for _, form_id in FORM_LINES) == sorted(known.id for known in KNOWN_FORMS)



# Pasted fragments of 2024-2026 (issue 42). Lines from the threads of reference/pasted-fragments/labels.json unless a
# comment says otherwise.

@pytest.mark.parametrize(("line", "severity", "body"), [
    # Python logging's default format, torch_tensorrt's logger (pytorch/TensorRT#3140)
    ("ERROR:torch_tensorrt [TensorRT Conversion Context]:ITensor::getDimensions: Error Code 4: Internal Error (x)",
     "error", "ITensor::getDimensions: Error Code 4: Internal Error (x)"),
    ("WARNING:torch_tensorrt.dynamo.conversion:Unable to import quantization op.", "warning",
     "Unable to import quantization op."),
    # loguru (pytorch/TensorRT#3180)
    ("2024-08-30 23:24:09.688 | ERROR    | Process-6 | /usr/local/lib/python3.10/dist-packages/torch_tensorrt/"
     "logging.py:24 - ITensor::getDimensions: Error Code 4: API Usage Error (y)", "error",
     "ITensor::getDimensions: Error Code 4: API Usage Error (y)"),
    # Polygraphy's own tags: extra verbose and critical (NVIDIA/TensorRT#3788)
    ("[X] Setting TensorRT Optimization Profiles", "verbose", "Setting TensorRT Optimization Profiles"),
    ("[!] Invalid Engine. Please ensure the engine was built correctly", "error",
     "Invalid Engine. Please ensure the engine was built correctly"),
])
def test_other_loggers_and_polygraphy_tags_are_read(line, severity, body):
    assert parse_log_line(line) == LogLine(severity, body)


def test_a_polygraphy_fragment_without_trt_is_tensorrt_output():
    text = "[X] Setting TensorRT Optimization Profiles\n[V] Loaded Module: tensorrt | Version: 10.3.0\n"
    assert not_a_log(text) is None


@pytest.mark.parametrize(("text", "known_id", "pattern"), [
    ("AttributeError: module 'tensorrt' has no attribute 'CalibrationAlgoType'", "calibration-algo-type-removed",
     "P10"),
    ("AttributeError: type object 'tensorrt_bindings.tensorrt.BuilderFlag' has no attribute 'FP16'",
     "precision-builder-flag-removed", "P15"),
    ("AttributeError: type object 'tensorrt.BuilderFlag' has no attribute 'INT8'", "precision-builder-flag-removed",
     "P15"),
])
def test_tensorrt_11_removals_met_from_python_name_their_pattern(text, known_id, pattern):
    result = classify_log(text)
    assert (result.category, result.known_failure.id, result.known_failure.pattern, result.failure_shown) == (
        "unsupported-api", known_id, pattern, True)


def test_another_removed_api_is_unsupported_api_without_a_pattern():
    # ultralytics#9510, TensorRT 10.0.0b6: the exporter's failure line names the removed attribute
    line = ("TensorRT: export failure ❌ 3.7s: 'tensorrt_bindings.tensorrt.IBuilderConfig' object has no attribute "
            "'max_workspace_size'")
    result = classify_log(line)
    assert (result.category, result.known_failure, result.failure_shown) == ("unsupported-api", None, True)
    # a flag TensorRT 11 kept is not a removed precision flag
    assert classify_log("AttributeError: type object 'tensorrt.BuilderFlag' has no attribute 'REFIT_X'"
                        ).known_failure is None


@pytest.mark.parametrize(("text", "stage"), [
    # trtexec running an engine it built: the failure comes after "Starting inference" (NVIDIA/TensorRT#3995)
    ("[I] Building engine\n[V] Using enqueueV3.\n[I] Starting inference\n"
     "[E] Error[1]: [runner.cpp::execute::718] Error Code 1: Myelin (Final synchronize failed (700))\n", "run"),
    # a DLA standalone loadable given to --loadEngine (NVIDIA/TensorRT#4106)
    ("[E] Error[4]: [runtime.cpp::deserializeCudaEngine::65] Error Code 4: Internal Error (Engine deserialization "
     "failed.)\n&&&& FAILED TensorRT.trtexec [TensorRT v8510] # trtexec --verbose --loadEngine=dla_fusion.dla\n", "run"),
    # one line: the run-time API names itself (Yolo-V11-cpp-TensorRT#6)
    ("IExecutionContext::enqueueV3: Error Code 3: API Usage Error (Parameter check failed, condition: x != nullptr.)",
     "run"),
    # inference lines of an earlier run, then a build that fails: the last mark before the failure decides
    ("[I] Starting inference\n[I] Building engine\n[E] Error[10]: Could not find any implementation for node a.\n",
     "build"),
    ("[E] Error[10]: Could not find any implementation for node a.\n", "build"),
])
def test_build_time_and_run_time_failures_are_told_apart(text, stage):
    result = classify_log(text)
    assert result.category is not None and result.stage == stage


def test_no_failure_has_no_stage():
    assert classify_log("[I] Starting inference\n").stage is None


def test_a_parser_failure_names_its_node():
    # mmdeploy#2758: the node's printout follows "While parsing node number"
    text = ('[TRT] [E] ModelImporter.cpp:963: While parsing node number 4448 [TRTBatchedNMS -> '
            '"/TRTBatchedNMS_output_0"]:\n[TRT] [E] ModelImporter.cpp:964: --- Begin node ---\n'
            'input: "/Unsqueeze_76_output_0"\nname: "/TRTBatchedNMS"\nop_type: "TRTBatchedNMS"\n')
    assert (classify_log(text).category, classify_log(text).node) == ("parser", "/TRTBatchedNMS")
    # without the printout, the operator and the output it names
    first = text.splitlines()[0]
    assert classify_log(first).node == 'TRTBatchedNMS -> /TRTBatchedNMS_output_0'
    # TensorRT 10's Python error: "In node N with name: X and operator: Y"
    named = ("In node 11 with name: /dense_motion_network/GridSample and operator: GridSample3D "
             "(checkFallbackPluginImporter): INVALID_NODE: creator && \"Plugin not found\"")
    assert (classify_log(named).category, classify_log(named).node) == ("parser", "/dense_motion_network/GridSample")


def test_a_cut_node_name_is_completed_from_the_timing_runner_line_of_the_same_layer():
    # NVIDIA/TensorRT#3579: the error line is cut; the verbose lines above it name the layer in full
    full = ("SandGlass4.8.weight + /SandGlass4/SandGlass4.8/_weight_quantizer/QuantizeLinear + "
            "/SandGlass4/SandGlass4.8/Conv + /Add")
    text = (f"[TRT] [V] --------------- Timing Runner: {full} (CaskConvolution[0x80000009])\n"
            f"[TRT] [E] 10: Could not find any implementation for node {full[:70]}\n")
    result = classify_log(text)
    assert result.node == full
    assert [(known.id, known.pattern) for known, _ in known_forms(text, result)] == [
        ("qdq-weights-layer-residual-no-implementation", "S3")]


def test_a_dla_builds_foreign_node_is_p20_not_p8():
    line = "[E] Error[10]: Could not find any implementation for node {ForeignNode[/cnn/cnn.0/Conv]}."
    assert classify_log(line).known_failure.pattern == "P8"
    dla = f"&&&& RUNNING TensorRT.trtexec [TensorRT v8502] # trtexec --onnx=m.onnx --int8 --useDLACore=0\n{line}\n"
    assert (classify_log(dla).known_failure.id, classify_log(dla).known_failure.pattern) == (
        "dla-foreign-node-no-implementation", "P20")


def test_dla_fallbacks_name_each_layer_and_the_reason_the_log_gives():
    text = "\n".join([
        # ultralytics#18012
        "[12/04/2024-11:57:45] [TRT] [W] /model.23/Concat_4: DLA only supports concatenation on the C dimension.",
        "[12/04/2024-11:57:45] [TRT] [W] Layer '/model.23/Concat_4' (CONCATENATION): Unsupported on DLA. Switching "
        "this layer's device type to GPU.",
        "[12/04/2024-11:57:45] [TRT] [W] Layer '(Unnamed Layer* 388) [Shuffle]' (SHUFFLE): Unsupported on DLA. "
        "Switching this layer's device type to GPU.",
        "[12/04/2024-11:57:45] [TRT] [W] This version of DLA does not support reshape layers directly connected to "
        "Slice or Concat",
        "[12/04/2024-11:57:45] [TRT] [W] Validation failed for DLA layer: /model.10/m/m.0/attn/Reshape. Switching to "
        "GPU fallback.",
        "[12/04/2024-11:57:45] [TRT] [W] Splitting DLA subgraph at: /model.10/m/m.0/attn/Reshape because DLA "
        "validation failed for this layer.",
        # the message the issue quotes as the one Jetson users paste most (issue 42; no thread of it was found)
        "[W] [TRT] /backbone/conv1/Conv cannot run in INT8 mode due to missing scale and zero point. This node will "
        "not run on DLA",
        # DeepStream-Yolo#27 (2021), DeepStream's logger
        "WARNING: [TRT]: DLA supports only 8 subgraphs per DLA core. Switching to GPU for layer conv_6",
    ])
    assert dla_fallbacks(text) == [
        DlaFallback("/model.23/Concat_4", "CONCATENATION", "DLA only supports concatenation on the C dimension"),
        DlaFallback("(Unnamed Layer* 388) [Shuffle]", "SHUFFLE", None),
        DlaFallback("/model.10/m/m.0/attn/Reshape", None,
                    "This version of DLA does not support reshape layers directly connected to Slice or Concat"),
        DlaFallback("/backbone/conv1/Conv", None, "missing scale and zero point"),
        DlaFallback("conv_6", None, "DLA supports only 8 subgraphs per DLA core"),
    ]
    result = classify_log(text)
    assert (result.category, result.warnings["dla-fallback"]) == (None, 5)
    assert [(known.id, count) for known, count in known_forms(text, result)] == [("dla-layer-to-gpu", 5)]


@pytest.mark.parametrize(("text", "command"), [
    # in a fence after a "$ " prompt, continued with backslashes
    ("```\n$ /usr/src/tensorrt/bin/trtexec --onnx=m.onnx \\\n    --int8 \\\n    --explicitBatch\n```\n",
     "/usr/src/tensorrt/bin/trtexec --onnx=m.onnx --int8 --explicitBatch"),
    # in inline backticks inside a sentence (NVIDIA/TensorRT#3847)
    ("Tried building the engine with the command `trtexec --onnx=model_gn.onnx --int8 --useDLACore=0`\n",
     "trtexec --onnx=model_gn.onnx --int8 --useDLACore=0"),
    # after a PowerShell prompt (NVIDIA/TensorRT#4432)
    ("PS C:\\Users\\me\\>trtexec.exe --onnx=models/car.onnx --fp16\n", "trtexec.exe --onnx=models/car.onnx --fp16"),
    # Polygraphy's failure tail names its command (NVIDIA/TensorRT#3788); output redirected to a file
    ("[E] FAILED | Runtime: 128.925s | Command: /root/bin/polygraphy run a.onnx --trt --int8\n",
     "/root/bin/polygraphy run a.onnx --trt --int8"),
    ("trtexec --onnx=truck.onnx --fp16 --useDLACore=0 > model_gn.log\n", "trtexec --onnx=truck.onnx --fp16 --useDLACore=0"),
])
def test_commands_pasted_beside_the_output_are_read(text, command):
    assert pasted_commands(text) == [command]


def test_trtexec_banner_is_not_a_pasted_command():
    assert pasted_commands("&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=m.onnx\n") == []


def test_what_dla_cannot_run_said_at_error_severity_is_a_reason_not_the_failure():
    # DeepStream-Yolo#27: the builder names what DLA cannot run at ERROR severity, then the layer falls back
    text = ("ERROR: [TRT]: leaky_1: ActivationLayer (with ActivationType = LEAKY_RELU) not supported for DLA.\n"
            "WARNING: [TRT]: Default DLA is enabled but layer leaky_1 is not supported on DLA, falling back to GPU.\n")
    result = classify_log(text)
    assert (result.category, result.failure_shown, result.warnings["dla-fallback"]) == (None, False, 1)
    assert dla_fallbacks(text) == [
        DlaFallback("leaky_1", None, "ActivationLayer (with ActivationType = LEAKY_RELU) not supported for DLA")]
    # a build that then fails says so on a line of its own
    failed = text + "ERROR: [TRT]: Network validation failed.\n"
    assert (classify_log(failed).category, classify_log(failed).failure_shown) == ("runtime-error", True)


def test_python_logging_marks_tensorrt_output_only_for_a_tensorrt_logger():
    # Model-Optimizer#38: ModelOpt's own quantization log is Python logging, not TensorRT output
    assert not_a_log("INFO:root:Quantization Mode: int8\nINFO:root:Total number of nodes: 507\n") is not None
    assert not_a_log("ERROR:torch_tensorrt [TensorRT Conversion Context]:INetworkDefinition::addConvolutionNd: x\n") \
        is None
    assert not_a_log("2024-08-30 23:24:09.688 | ERROR    | Process-6 | /usr/lib/torch_tensorrt/logging.py:24 - x\n") \
        is None


def test_an_invalid_node_names_the_parser_failures_node():
    # NVIDIA/TensorRT#3728 (8.6.1)
    text = ("[TRT] [E] ModelImporter.cpp:777: ERROR: ModelImporter.cpp:195 In function parseGraph:\n"
            "[6] Invalid Node - /Where\n")
    assert (classify_log(text).category, classify_log(text).node) == ("parser", "/Where")
