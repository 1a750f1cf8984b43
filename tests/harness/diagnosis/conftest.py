"""Files of every kind `diagnose` reads, a damaged one of each kind, and files of no kind, all under names that say
nothing of their kind (the kind is told from the content)."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from harness.tensorrt.calibration_cache import write_cache
from tests.harness.tensorrt.conftest import existing_reference_dir
from tests.models.backbone import build as build_backbone

SCALES = {"input": 0.02, "/conv1/Conv_output_0": 0.05}


@pytest.fixture(scope="session")
def reference() -> Path:
    return existing_reference_dir()


@pytest.fixture(scope="session")
def backbone_model(tmp_path_factory) -> Path:
    """The scan's test backbone without Q/DQ: its stem Conv + SiLU is S1 (implicit INT8)."""
    path = tmp_path_factory.mktemp("model") / "backbone.onnx"
    onnx.save(build_backbone(qdq=False), path)
    return path


def _cache_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "written.cache"
    write_cache(path, "8.6.1", "EntropyCalibration2", SCALES)
    return path.read_bytes()


@pytest.fixture()
def kinds(tmp_path, reference, backbone_model) -> dict[str, bytes]:
    """kind -> the content of a readable file of that kind."""
    return {
        "tensorrt-log": (reference / "trt-logs" / "F01.log").read_bytes(),
        "engine-layers": (reference / "engine-layers" / "a100-resnet-qat.graph.json").read_bytes(),
        "engine-build-metadata": (reference / "engine-layers" / "a100-resnet-qat.build.metadata.json").read_bytes(),
        "calibration-cache": _cache_bytes(tmp_path),
        "command-line": b"# the build that failed\n$ /usr/src/tensorrt/bin/trtexec --onnx=model.onnx \\\n"
                        b"    --int8 --workspace=1024 --saveEngine=model.plan\n",
        "onnx-model": backbone_model.read_bytes(),
    }


@pytest.fixture()
def damaged(kinds) -> dict[str, bytes]:
    """kind -> the content of a damaged file of that kind."""
    log = kinds["tensorrt-log"]
    first_line = log.index(b"\n") + 1
    return {
        "tensorrt-log": log[:first_line] + b"\x00" * 2048 + log[first_line:],  # overwritten while written
        "engine-layers": b'{"Layers": [{"Name": 12, "LayerType": "Reformat"}]}',
        "engine-build-metadata": kinds["engine-build-metadata"][:40],
        "calibration-cache": b"TRT-8601-EntropyCalibration2\ninput: 3c00zz12\n/conv1/Conv_output_0: 3d4ccccd\n",
        "command-line": b'trtexec --onnx="model.onnx --int8\n',
        "onnx-model": kinds["onnx-model"][:len(kinds["onnx-model"]) // 2],
    }


NO_KIND = {
    "empty": b"",
    "prose": b"dear diary, the build failed again\n",
    "image": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
    "other-json": b'{"foo": 1, "bar": [1, 2]}',
}


def write(tmp_path: Path, content: bytes, name: str = "upload.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path
