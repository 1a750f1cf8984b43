"""Every alternative of every classifier signature has a log line that exercises it, at error severity (and, for the
warnings, at warning severity), and classifies as that signature says.

The lines restate upstream wording as facts: the message text TensorRT, the ONNX parser, CUDA or the C runtime prints,
with where it was reported (``SOURCES``); they are not copied logs. A new alternative without a line here fails
``test_every_alternative_of_every_signature_has_a_line``.
"""
import re

import pytest

from cases import library_signatures
from harness.tensorrt import classify
from harness.tensorrt.classify import UNRECOGNIZED_FAILURE

SOURCES = {
    "onnx-tensorrt#465": "https://github.com/onnx/onnx-tensorrt/issues/465",
    "onnx-tensorrt#520": "https://github.com/onnx/onnx-tensorrt/issues/520",
    "TensorRT#814": "https://github.com/NVIDIA/TensorRT/issues/814",
    "TensorRT#954": "https://github.com/NVIDIA/TensorRT/issues/954",
    "TensorRT#4217": "https://github.com/NVIDIA/TensorRT/issues/4217",
    "tensorrt_demos#521": "https://github.com/jkjung-avt/tensorrt_demos/issues/521",
    "TrojanXu#2": "https://github.com/TrojanXu/onnxparser-trt-plugin-sample/issues/2",
    "CenterNet-3D#3": "https://github.com/Qjizhi/TensorRT-CenterNet-3D/issues/3",
    "TensorRT#1574": "https://github.com/NVIDIA/TensorRT/issues/1574",
    "TensorRT#1864": "https://github.com/NVIDIA/TensorRT/issues/1864",
    "TensorRT#3040": "https://github.com/NVIDIA/TensorRT/issues/3040",
    "TensorRT#3220": "https://github.com/NVIDIA/TensorRT/issues/3220",
    "TensorRT#3919": "https://github.com/NVIDIA/TensorRT/issues/3919",
    "TensorRT#4053": "https://github.com/NVIDIA/TensorRT/issues/4053",
    "TensorRT#3640": "https://github.com/NVIDIA/TensorRT/issues/3640",
    "TensorRT python bindings": "https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp",
    "ultralytics#23841": "https://github.com/ultralytics/ultralytics/issues/23841",
    "DeepStream-Yolo#603": "https://github.com/marcoslucianops/DeepStream-Yolo/issues/603",
    "TensorRT-YOLO#95": "https://github.com/laugh12321/TensorRT-YOLO/issues/95",
    "TensorRT#4832": "https://github.com/NVIDIA/TensorRT/issues/4832",
    "Model-Optimizer#118": "https://github.com/NVIDIA/Model-Optimizer/issues/118",
    "Model-Optimizer#70": "https://github.com/NVIDIA/Model-Optimizer/issues/70",
    "TensorRT-LLM#1428": "https://github.com/NVIDIA/TensorRT-LLM/issues/1428",
    "TensorRT-Model-Connect#1326": "https://github.com/NVIDIA/TensorRT-Model-Connect/pull/1326",
    "TensorRT#3788": "https://github.com/NVIDIA/TensorRT/issues/3788",
    "TensorRT#4106": "https://github.com/NVIDIA/TensorRT/issues/4106",
    "ultralytics#18012": "https://github.com/ultralytics/ultralytics/issues/18012",
    "DeepStream-Yolo#27": "https://github.com/marcoslucianops/DeepStream-Yolo/issues/27",
    "issue 42": "the wording trt-matrix's issue 42 quotes as the one Jetson users paste most; no public thread of it "
                "was found",
    "ultralytics#24729": "https://github.com/ultralytics/ultralytics/issues/24729",
    "ultralytics#19518": "https://github.com/ultralytics/ultralytics/issues/19518",
    "retinanet-examples#101": "https://github.com/NVIDIA/retinanet-examples/issues/101",
    "TensorRT#828": "https://github.com/NVIDIA/TensorRT/issues/828",
    "TRT 10 build notes": "TensorRT 10.x trtexec output quoted in public build notes; no first-party thread found",
    "reference": "reference/trt-logs (labels.json has each excerpt's link)",
    "api-names": "error names of the CUDA runtime, cuDNN and cuBLAS APIs (cudaError_t, cudnnStatus_t, cublasStatus_t)",
    "runtime": "messages of the Linux shell, glibc, libstdc++ and CPython when a process dies",
    # Open: no upstream line for this alternative is on record in this repository (reference/) yet; the
    # line restates the classifier's own phrase. Replace it with a sourced line when one is found.
    "unsourced": "the classifier's own phrase; no upstream log line on record",
}

# (signature, line, source). A signature is a root-cause category, "consequence" or a warning kind.
FAILURE_LINES = [
    ("consequence", "[E] Error[2]: Error Code 2: Internal Error (Assertion engine != nullptr failed. )", "reference"),
    ("consequence", "[E] Error[2]: Error Code 2: Internal Error (Engine generation failed because all backend "
                    "strategies failed.)", "reference"),
    ("consequence", "[E] Engine generation failed with backend strategy 2.", "reference"),
    ("consequence", "[E] Engine could not be created from network", "reference"),
    ("consequence", "[E] Building engine failed", "reference"),
    ("consequence", "[E] Failed to create engine from model or file.", "reference"),
    ("consequence", "[E] Engine set up failed", "TensorRT#954"),
    ("consequence", "[E] Invalid Engine. Please ensure the engine was built correctly", "TensorRT#3788"),
    ("consequence", "[E] FAILED | Runtime: 128.925s | Command: /root/bin/polygraphy run a.onnx --trt", "TensorRT#3788"),
    ("consequence", "[E] Inference set up failed", "TensorRT#4106"),
    ("consequence", "[E] Engine deserialization failed.", "TensorRT#4106"),
    ("consequence", "[E] Got invalid engine!", "TensorRT#4106"),
    ("consequence", "[TensorRT] ERROR: Network validation failed.", "TensorRT#814"),
    ("consequence", "ERROR: failed to build the TensorRT engine!", "tensorrt_demos#521"),
    ("consequence", "&&&& FAILED TensorRT.trtexec [TensorRT v8501] # trtexec --onnx=model.onnx", "reference"),
    ("no-implementation", "[E] Error[10]: Could not find any implementation for node /conv/Conv.", "reference"),
    ("no-implementation", "[E] Error[9]: Error Code 9: Internal Error (node_of_onnx::Shape_2609: could not find any "
                          "supported formats consistent with input/output data types)", "TensorRT#4217"),
    ("parser", 'While parsing node number 2 [Mish -> "001_convolutional_mish"]:', "onnx-tensorrt#465"),
    ("parser", "[8] No importer registered for op: Mish", "onnx-tensorrt#465"),
    ("parser", "ERROR: ModelImporter.cpp:134 In function parseGraph:", "onnx-tensorrt#520"),
    ("parser", "UNSUPPORTED_NODE: No importer registered for op: GridSampler", "TrojanXu#2"),
    ("parser", "[E] [TRT] ModelImporter.cpp:726: ERROR: builtin_op_importers.cpp:1177 In node 3 (parseNode): "
               "Invalid Node - /Reshape", "unsourced"),
    ("parser", "ERROR: failed to parse onnx file", "CenterNet-3D#3"),
    ("parser", "ERROR: could not parse input engine.", "onnx-tensorrt#520"),
    ("parser", "[E] [TRT] Unsupported ONNX data type: UINT8 (2)", "unsourced"),
    ("parser", "[E] [TRT] Unsupported operator: NonMaxSuppression", "unsourced"),
    ("parser", "[E] [TRT] This version of TensorRT: opset 19 is not supported", "unsourced"),
    ("out-of-memory", "[E] [TRT] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)",
     "unsourced"),
    ("out-of-memory", "[E] Error[2]: Error Code 2: OutOfMemory (no further information)", "unsourced"),
    ("out-of-memory", "[E] [TRT] Requested amount of GPU memory (4362077693 bytes) could not be allocated.",
     "unsourced"),
    ("out-of-memory", "[E] [TRT] Insufficient GPU memory for the tactic workspace.", "unsourced"),
    ("out-of-memory", "[E] cudaErrorMemoryAllocation", "api-names"),
    ("out-of-memory", "MemoryError: Unable to allocate 2.00 GiB for an array", "runtime"),
    ("out-of-memory", "terminate called after throwing an instance of 'std::bad_alloc'", "runtime"),
    ("calibration", "[E] Error[2]: [calibrator.cpp::calibrateEngine::1181] Error Code 2: Internal Error (Calibration "
                    "failure occurred with no scaling factors detected.)", "unsourced"),
    ("calibration", "[E] [TRT] no scaling factors detected", "unsourced"),
    ("calibration", "[E] [TRT] Calibration failed: the calibrator returned no batch", "unsourced"),
    ("calibration", "[E] Failed to read the calibration cache calib.cache", "unsourced"),
    ("calibration", "[E] [TRT] The calibration cache is invalid for this network", "unsourced"),
    ("calibration", "[E] [TRT] Calibration table does not match calibrator algorithm type", "TRT 10 build notes"),
    ("cuda-runtime", "[E] Error[1]: Error Code 1: Cuda Runtime (operation not supported)", "reference"),
    ("cuda-runtime", "[E] [TRT] 1: [cudaDriverHelpers.cpp::operator()::29] Error Code 1: Cuda Driver (invalid "
                     "resource handle)", "unsourced"),
    ("cuda-runtime", "[E] [TRT] Cuda Error in execute: 719 (unspecified launch failure)", "unsourced"),
    ("cuda-runtime", "[E] [TRT] CUDA error 700 launching kernel", "unsourced"),
    ("cuda-runtime", "[E] cudaErrorIllegalAddress", "api-names"),
    ("cuda-runtime", "[E] [TRT] CUDA initialization failure with error: 35", "unsourced"),
    ("cuda-runtime", "[E] [TRT] CUDNN_STATUS_MAPPING_ERROR", "api-names"),
    ("cuda-runtime", "[E] [TRT] CUBLAS_STATUS_NOT_INITIALIZED", "api-names"),
    ("cuda-runtime", "pycuda._driver.LogicError: cuMemcpyHtoDAsync failed: invalid argument", "reference"),
    ("internal-assert", "[E] Error[2]: Error Code 2: Internal Error (Assertion outScales.size() == 1 failed. )",
     "reference"),
    ("internal-assert", "[E] Error[9]: Error Code 9: Internal Error (Some condition TensorRT checks was not met.)",
     "unsourced"),
    # The known upstream failures (the cases' log_signatures), each in the wording of its report.
    ("internal-assert", "[TRT] [E] [checkSanity.cpp::checkLinks::218] Error Code 2: Internal Error (Assertion "
                        "item.second != nullptr failed. region should have been removed from Graph::regions)",
     "ultralytics#23841"),
    ("internal-assert", "[TRT] [E] 2: [qdqGraphOptimizer.cpp::reportWeightlessTwoInputConvolutionAsError::217] Error "
                        "Code 2: Internal Error (Conv_9 + Relu_11: Could not fuse 2nd input (kernel weights) of "
                        "CONVOLUTION)", "TensorRT#1864"),
    ("internal-assert", "[TensorRT] ERROR: 2: [graphOptimizer.cpp::sameExprValues::587] Error Code 2: Internal Error "
                        "(Assertion lhs.expr failed.)", "TensorRT#1574"),
    ("internal-assert", "[E] Error[2]: [weightConvertors.cpp::combineInOutScale::369] Error Code 2: Internal Error "
                        "(Assertion p.quantizations.isOutputSet(0) failed. )", "TensorRT#3220"),
    ("internal-assert", "[E] Error[2]: Assertion !n->candidateRequirements.empty() failed. All of the candidates were "
                        "removed, which points to the node being incorrectly marked as an int8 node.", "TensorRT#3040"),
    ("internal-assert", "Error[2]: [qdqGraphOptimizer.cpp::matchQuantizedConstantPluginOrDQ::4004] Error Code 2: "
                        "Internal Error (L__self___conv1.weight: Quantized constant is only allowed before DQ or "
                        "PLUGIN_V2 node)", "TensorRT#3919"),
    ("no-implementation", "[E] Error[10]: Error Code: 10: Could not find any implementation for node "
                          "{ForeignNode[/transformer/attention_4/Slice_4_output_0[Constant].../transformer/Reshape_6]}.",
     "reference"),
    # The 2025-2026 reports (failure-patterns.md P14-P20). #4832 quotes its line with the middle elided ("..."); the
    # operand text here is the part it shows. Model-Optimizer#70's and TensorRT-LLM#1428's lines are the two wordings
    # of the FP8 hardware check (10.3 and the TensorRT of TRT-LLM 0.9).
    ("no-implementation", "[E] Error[9]: Error Code 9: [type.cpp:186: infer_type] Could not infer output types for "
                          "operation: 291: dequantize: Dequantized input0-(f32[1,16,512,512]) | input0 reshape "
                          "out_transpose_out reshape out slice_U28 out-(i8[]), MyelinPW(42188) - Input Dequantization 0 "
                          "scale weightsHalf-0.35498H:(f16[]) No matching rules found for input operand types",
     "TensorRT#4832"),
    ("no-implementation", "[E] Error[9]: Error Code: 9: [type.cpp:infer_type:145] Could not infer output types for "
                          "operation:    40: quantize: /maxpool/MaxPool_output_0_QuantizeLinear_Output'-(fp8[7,64,192,"
                          "256][]so[], mem_prop=0) | /maxpool/MaxPool_output_0'-(f32[7,64,192,256][]so[3,2,1,0]p[0,0,0,"
                          "0], mem_prop=0), No matching rules found for input operand types", "Model-Optimizer#118"),
    ("unsupported-op", "[09/11/2024-21:49:27] [E] Error[9]: IBuilder::buildSerializedNetwork: Error Code 9: API Usage "
                       "Error (Networks with FP8 Q/DQ layers require hardware with FP8 support.)", "Model-Optimizer#70"),
    ("unsupported-op", "[04/09/2024-16:26:41] [TRT] [E] 9: [standardEngineBuilder.cpp::buildEngine::2266] Error Code 9: "
                       "Internal Error (Networks with FP8 precision require hardware with FP8 support.)",
     "TensorRT-LLM#1428"),
    ("unsupported-op", "[E] [TRT] [shape.cpp:3350] Blockwise quantization requires output type to be int8 or fp8e4m3",
     "TensorRT-Model-Connect#1326"),
    ("unsupported-api", "AttributeError: module 'tensorrt' has no attribute 'IInt8Calibrator'", "ultralytics#24729"),
    ("unsupported-api", "ERROR \u274c TensorRT: export failure 5.5s: module 'tensorrt' has no attribute "
                        "'IInt8Calibrator'", "ultralytics#24729"),
    ("no-implementation", "[TRT] [E] 10: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not "
                          "find any implementation for node /model.0/conv/Conv + PWN(PWN(/model.0/act/Sigmoid), "
                          "/model.0/act/Mul).)", "TensorRT#3640"),
    ("no-implementation", "[E] Error[10]: [optimizer.cpp::computeCosts::3728] Error Code 10: Internal Error (Could not "
                          "find any implementation for node w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid, "
                          "node_of_swish.mul).)", "reference"),
    ("no-implementation", "[TRT] [E] IBuilder::buildSerializedNetwork: Error Code 10: Internal Error (Could not find "
                          "any implementation for node /model.0/conv/Conv + PWN(PWN(/model.0/act/Sigmoid), "
                          "PWN(/model.0/act/Mul)).)", "ultralytics#19518"),
    ("no-implementation", "../builder/tacticOptimizer.cpp (3142) - Misc Error in getFormatRequirements: -1 (Unable to "
                          "find valid implementation for layer (Unnamed Layer* 0) [Convolution] + (Unnamed Layer* 2) "
                          "[Activation] + (Unnamed Layer* 3) [Pooling])", "retinanet-examples#101"),
    ("internal-assert", "[09/29/2020-17:08:38] [E] [TRT] ../builder/cudnnBuilder2.cpp (1757) - Assertion Error in "
                        "operator(): 0 (et.region->getType() == RegionType::kNVM)", "TensorRT#828"),
    ("consequence", "TensorRT: export failure \u274c 9.4s: 'NoneType' object does not support the context manager "
                    "protocol", "ultralytics#19518"),
    ("cuda-runtime", "[E] Error[1]: [defaultAllocator.cpp::deallocateAsync::64] Error Code 1: Cuda Runtime (operation "
                     "not supported)", "reference"),
    ("crash", "Segmentation fault (core dumped)", "runtime"),
    ("crash", "Aborted (core dumped)", "runtime"),
    ("crash", "Fatal Python error: Segmentation fault", "runtime"),
    ("crash", "Fatal Python error: Aborted", "runtime"),
    ("crash", "Received signal SIGSEGV", "runtime"),
    ("crash", "terminate called after throwing an instance of 'nvinfer1::InternalError'", "runtime"),
    ("crash", "double free or corruption (!prev)", "runtime"),
    ("crash", "free(): invalid pointer", "runtime"),
    ("crash", "*** stack smashing detected ***: terminated", "runtime"),
    ("crash", "Illegal instruction", "runtime"),
    ("crash", "Aborted", "runtime"),
    ("crash", "Killed", "runtime"),
    ("crash", "Bus error", "runtime"),
]
WARNING_LINES = [
    ("dla-fallback", "[W] [TRT] Layer '/model.23/Concat_4' (CONCATENATION): Unsupported on DLA. Switching this "
                     "layer's device type to GPU.", "ultralytics#18012"),
    ("dla-fallback", "[W] [TRT] Validation failed for DLA layer: /model.10/m/m.0/attn/Reshape. Switching to GPU "
                     "fallback.", "ultralytics#18012"),
    ("dla-fallback", "[W] [TRT] Default DLA is enabled but layer leaky_1 is not supported on DLA, falling back to GPU.",
     "DeepStream-Yolo#27"),
    ("dla-fallback", "[W] [TRT] DLA supports only 8 subgraphs per DLA core. Switching to GPU for layer conv_6",
     "DeepStream-Yolo#27"),
    ("dla-fallback", "[W] [TRT] /backbone/conv1/Conv cannot run in INT8 mode due to missing scale and zero point. This "
                     "node will not run on DLA", "issue 42"),
    ("missing-scale", "[W] [TRT] Missing scale and zero-point for tensor /act/Relu_output_0, expect fall back to "
                      "non-int8 implementation for any layer consuming or producing given tensor", "reference"),
    ("missing-scale", "[TensorRT] WARNING: Missing dynamic range for tensor 125, expect fall back to non-int8 "
                      "implementation for any layer consuming or producing given tensor", "reference"),
    ("int64-downcast", "[W] [TRT] onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, "
                       "while TensorRT does not natively support INT64. Attempting to cast down to INT32.",
     "reference"),
    ("precision-constraint-ignored", "[W] [TRT] No implementation of layer Conv_70 obeys the requested constraints "
                                     "in strict mode. No conforming implementation was found i.e. requested layer "
                                     "computation precision and output precision types are ignored, using the fastest "
                                     "implementation.", "reference"),
    ("calibrator-ignored", "[W] [TRT] Calibrator won't be used in explicit precision mode. Use quantization aware "
                           "training to generate network with Quantize/Dequantize nodes.", "reference"),
    ("calibrator-ignored", "[W] [TRT] Calibrator won't be used in explicit quantization mode.", "unsourced"),
    ("calibrator-ignored", "[W] [TRT] Calibrator is not being used. Users must provide dynamic range for all tensors "
                           "that are not Int32 or Bool.", "reference"),
    ("tactic-skipped", "[W] [TRT] Skipping tactic 0x0000000000000000 due to exception", "reference"),
    ("deprecated-api", "build.py:31: DeprecationWarning: Use explicit quantization instead.", "unsourced"),
    ("implicit-quantization-deprecated", "[W] [python] DeprecationWarning: Use Deprecated in TensorRT 10.1. Superseded "
                                         "by explicit quantization. instead. (build_config.py:52)",
     "TensorRT python bindings"),
    ("implicit-quantization-deprecated", "NvInfer.h:8300:38: warning: 'IInt8MinMaxCalibrator' is deprecated "
                                         "[-Wdeprecated-declarations]", "TensorRT-YOLO#95"),
    ("calibration-profile-default", "WARNING: [TRT]: Calibration Profile is not defined. Calibrating with Profile 0",
     "DeepStream-Yolo#603"),
    ("calibration-cache-rejected", "[W] [TRT] Calibration table does not match calibrator algorithm type",
     "TRT 10 build notes"),
    ("qdq-type-not-inferred", "[12/17/2024-08:28:27] [E] Error[9]: Error Code: 9: Skipping tactic 0x0000000000000000 "
                              "due to exception [type.cpp:infer_type:145] Could not infer output types for operation:"
                              "    40: quantize: /maxpool/MaxPool_output_0_QuantizeLinear_Output'-(fp8[7,64,192,256]"
                              "[]so[], mem_prop=0)", "Model-Optimizer#118"),
]


def alternatives(pattern: re.Pattern) -> list[str]:
    """The top-level alternatives of a regular expression (split at ``|`` outside groups and character classes)."""
    pieces, depth, current, in_class, i = [], 0, "", False, 0
    text = pattern.pattern
    while i < len(text):
        char = text[i]
        if char == "\\":
            current += text[i:i + 2]
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            pieces.append(current)
            current, i = "", i + 1
            continue
        current += char
        i += 1
    return pieces + [current]


def classify_log(text):
    return classify.classify_log(text, library_signatures())


def signatures() -> list[tuple[str, re.Pattern]]:
    """(signature, pattern) of every rule of the classifier; internal-assert has two: an assertion, TensorRT's
    internal-error envelope. The known failures the cases declare carry their own example lines
    (tests/cases/test_log_signatures.py)."""
    found = [("consequence", classify._CONSEQUENCE), *classify._ROOT_CAUSE_PATTERNS,
             ("internal-assert", classify._INTERNAL_ERROR)]
    return found + list(classify._WARNING_PATTERNS.items())


def test_every_alternative_of_every_signature_has_a_line():
    lines = FAILURE_LINES + WARNING_LINES
    missing = []
    for name, pattern in signatures():
        bodies = [classify.parse_log_line(line).body for signature, line, _ in lines if signature == name]
        for alternative in alternatives(pattern):
            if not any(re.search(alternative, body, pattern.flags) for body in bodies):
                missing.append(f"{name}: {alternative}")
    assert not missing, "alternatives without a log line in this file:\n" + "\n".join(missing)
    assert {source for _, _, source in lines} <= set(SOURCES)


@pytest.mark.parametrize("signature, line, source", FAILURE_LINES, ids=[line[:60] for _, line, _ in FAILURE_LINES])
def test_each_failure_line_classifies_as_its_signature(signature, line, source):
    result = classify_log(line)
    assert result.category == (UNRECOGNIZED_FAILURE if signature == "consequence" else signature)
    assert result.message == classify.parse_log_line(line).body


@pytest.mark.parametrize("signature, line, source", WARNING_LINES, ids=[line[:60] for _, line, _ in WARNING_LINES])
def test_each_warning_line_is_counted_once_and_is_no_failure(signature, line, source):
    result = classify_log(line)
    assert result.category is None
    assert result.warnings[signature] == 1


@pytest.mark.parametrize("signature, line, source", [entry for entry in FAILURE_LINES if entry[1].startswith("[E]")],
                         ids=lambda value: value[:50] if isinstance(value, str) else None)
def test_a_failure_line_at_warning_severity_is_no_failure(signature, line, source):
    assert classify_log(line.replace("[E]", "[W]", 1)).category is None


def test_a_line_of_the_highest_severity_alone_is_a_failure():
    result = classify_log("[F] [TRT] Something TensorRT has never said before.")
    assert (result.category, result.message) == (UNRECOGNIZED_FAILURE, "Something TensorRT has never said before.")
    assert classify.parse_log_line("[F] [TRT] x").severity == "internal-error"


def test_with_only_consequences_the_first_one_is_the_message():
    text = "\n".join(["[E] Engine could not be created from network", "[E] Building engine failed",
                      "&&&& FAILED TensorRT.trtexec [TensorRT v8501] # trtexec"])
    result = classify_log(text)
    assert (result.category, result.message) == (UNRECOGNIZED_FAILURE, "Engine could not be created from network")


def test_an_unrecognized_error_wins_over_consequences_and_a_root_cause_over_both():
    consequence, unknown = "[E] Building engine failed", "[E] [TRT] Something TensorRT has never said before."
    root = "[E] [TRT] CUDNN_STATUS_MAPPING_ERROR"
    assert classify_log(f"{consequence}\n{unknown}").message == "Something TensorRT has never said before."
    assert classify_log(f"{consequence}\n{unknown}\n{root}").category == "cuda-runtime"
    assert classify_log(f"{root}\n[E] [TRT] CUDA error 700\n").message == "CUDNN_STATUS_MAPPING_ERROR"
