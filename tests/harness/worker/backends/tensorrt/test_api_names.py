"""Static check of the TensorRT package's source: every TensorRT name it uses unconditionally exists in every
recorded API surface (reference/trt-api/*.json), and every name it looks up by feature detection is declared
and exists in some version.

These tests read the source text, so the mutation run leaves them out (pyproject.toml, [tool.mutmut]): mutmut's copy
of a module holds the text of every mutant at once.
"""
import ast
from pathlib import Path

import harness.worker.backends.tensorrt as trt_package
from harness.worker.backends.tensorrt import build_config, calibrator, compat, network
from tests.trt_contract.standin import api_exists, recorded_versions

RECORDED_VERSIONS = recorded_versions()


# Every module of the TensorRT package (backend, capture, compat, gpu, doctor, ...): where TensorRT is called.
BACKEND_SOURCES = tuple(sorted(Path(trt_package.__file__).parent.glob("*.py")))


def backend_trees():
    return [ast.parse(path.read_text(), filename=str(path)) for path in BACKEND_SOURCES]


def tensorrt_attribute_chains(tree) -> set[str]:
    """Every whole ``trt.X`` / ``trt.X.Y`` in the source, as "X" / "X.Y" (``trt.X.Y`` is not also counted as "X");
    ``tensorrt.X`` too, a use through the lazy declaration instead of the module handed in."""
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    chains = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in ("trt", "tensorrt"):
            chains.add(".".join(reversed(parts)))
    return chains


def feature_detected_names(tree) -> set[str]:
    """String names handed to tensorrt_api / require_api."""
    names = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("tensorrt_api", "require_api")
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
            names.add(node.args[1].value)
    return names


def test_unconditional_tensorrt_names_exist_in_every_version():
    chains = set().union(*map(tensorrt_attribute_chains, backend_trees()))
    assert chains <= set(compat.TENSORRT_API_REQUIRED), chains - set(compat.TENSORRT_API_REQUIRED)
    missing = {(api, v) for api in compat.TENSORRT_API_REQUIRED for v in RECORDED_VERSIONS
               if not api_exists(v, api)}
    assert not missing, f"used without feature detection but absent from a version: {sorted(missing)}"


def test_feature_detected_names_are_declared_and_exist_in_some_version():
    declared = set(compat.TENSORRT_API_DETECTED)
    looked_up = set().union(*map(feature_detected_names, backend_trees()))
    looked_up |= set(calibrator.CALIBRATOR_CLASSES.values()) | set(network.LAYER_PRECISION_TYPES.values())
    looked_up |= set(build_config.PRECISION_CONSTRAINT_FLAGS.values()) | set(compat.IMPLICIT_QUANTIZATION_API)
    looked_up |= set(build_config.DLA_API) | {"Builder.platform_has_fast_int8", "Builder.num_DLA_cores"}  # gpu.py
    assert looked_up <= declared, looked_up - declared
    never = [api for api in declared if not any(api_exists(v, api) for v in RECORDED_VERSIONS)]
    assert not never, f"feature-detected names no version has (a typo?): {never}"

