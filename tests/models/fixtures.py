"""Pytest fixtures over the test models: the models saved as files once per session, and the library's S cases
observed on ort-cpu (the results a user would point ``--results`` at). Import them into a test module or conftest."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from tests.models import backbone, plain_cnn, resnet18, transformer, unet

# name -> (builder, expected S matches): the corpus every scan test draws from.
CORPUS = {
    "backbone-silu": (lambda: backbone.build(False), backbone.expected(False)),
    "backbone-silu-qdq": (lambda: backbone.build(True), backbone.expected(True)),
    "backbone-mish": (lambda: backbone.build(False, "mish"), backbone.expected(False, "mish")),
    "backbone-mish-native": (lambda: backbone.build(False, "mish", opset=18), backbone.expected(False, "mish-native")),
    "backbone-mish-qdq": (lambda: backbone.build(True, "mish"), backbone.expected(True, "mish")),
    "unet": (lambda: unet.build(False), unet.expected(False)),
    "unet-qdq": (lambda: unet.build(True), unet.expected(True)),
    "transformer": (lambda: transformer.build(False), transformer.expected(False)),
    "transformer-qdq": (lambda: transformer.build(True), transformer.expected(True)),
    "plain-cnn-qdq": (plain_cnn.build, {}),
}


@pytest.fixture(scope="session")
def model_files(tmp_path_factory) -> dict[str, Path]:
    """Every corpus model saved as ``<name>.onnx``."""
    out = tmp_path_factory.mktemp("scan-models")
    paths = {}
    for name, (build, _) in CORPUS.items():
        paths[name] = out / f"{name}.onnx"
        onnx.save(build(), paths[name])
    return paths


def _observed_on_ort_cpu(out: Path, patterns: tuple[str, ...]) -> Path:
    """The library's cases of ``patterns``, generated under ``out`` and run on ort-cpu: a results file."""
    import cases
    from cases.generate import generate
    from harness.matrix import load_matrix
    from harness.orchestration.run_targets import run_targets

    generate(out / "cases", [c for c in cases.all_cases() if c.pattern in patterns])
    results = out / "results.jsonl"
    run_targets([load_matrix()["ort-cpu"]], out / "cases", results, jobs=2, progress=lambda line: None)
    return results


@pytest.fixture(scope="session")
def library_results(tmp_path_factory) -> Path:
    """The S cases and P10 (found in every FP32 model) of the library, generated and run on ort-cpu: a results file of
    observed library cells."""
    return _observed_on_ort_cpu(tmp_path_factory.mktemp("library-on-ort-cpu"),
                                ("S1", "S2", "S3", "S4", "S5", "P10"))


@pytest.fixture(scope="session")
def p6_results(tmp_path_factory) -> Path:
    """Both P6 cases (the weight Linear/Gemm and the MatMul of two activations) run on ort-cpu."""
    return _observed_on_ort_cpu(tmp_path_factory.mktemp("p6-on-ort-cpu"), ("P6",))


@pytest.fixture(scope="session")
def resnet18_qdq(tmp_path_factory) -> Path:
    """torchvision's ResNet-18 structure, FP32, quantized by ONNX Runtime's quantize_static (QDQ, per-channel)."""
    out = tmp_path_factory.mktemp("resnet18")
    onnx.save(resnet18.build(), out / "resnet18.onnx")
    return resnet18.quantize(out / "resnet18.onnx", out / "resnet18-qdq.onnx")
