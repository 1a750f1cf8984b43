"""What TensorRT releases changed for someone moving a model between them, as data, each fact with NVIDIA's page:
where Jetson AGX Orin's DLA exists, and what TensorRT 11.0 removed (trtexec's precision options, weak typing).

Implicit quantization's lifecycle (deprecated 10.1, removed 11.0) is
:mod:`~harness.worker.backends.tensorrt.quantization_lifecycle`. Standard library only (runs inside worker images).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.worker.backends.tensorrt.compat import version_tuple

DLA_JETSON_MIGRATION_11_3 = (
    "https://docs.nvidia.com/deeplearning/tensorrt/11.3.0/api/migration/tensorrt-10x-to-11x-jetson.html")
DLA_WORKING_WITH_11_4_1 = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.1/inference-library/work-with-dla.html"
RELEASE_NOTES_11_4_1 = (
    "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-11/11.4.1.html")
RELEASE_NOTES_10_16_1 = (
    "https://docs.nvidia.com/deeplearning/tensorrt/10.16.1/getting-started/release-notes-10/10.16.1.html")
TRTEXEC_MIGRATION_11 = (
    "https://docs.nvidia.com/deeplearning/tensorrt/11.4.1/api/migration/tensorrt-10x-to-11x-trtexec.html")
MIGRATION_11 = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html"

LAST_DLA_RELEASE_BEFORE_11 = (10, 7)  # TensorRT 10.7 was the last release with DLA, until 11.4.1
DLA_RESTORED_IN = (11, 4, 1)  # on Jetson AGX Orin only, under JetPack 7.2.2 or later
ELEVEN = (11, 0)


@dataclass(frozen=True)
class ReleaseFact:
    """One statement about a TensorRT release, with the pages it comes from and how sure it is: C read on an NVIDIA
    page, I from an issue or a downstream project, U not confirmed."""

    statement: str
    sources: tuple[str, ...]
    confidence: str = "C"

    def cited(self) -> str:
        return f"{self.statement} [{self.confidence}] Sources: {', '.join(self.sources)}"


def dla_absent(version: str, platform: str | None) -> ReleaseFact | None:
    """Why TensorRT ``version`` has no DLA on ``platform`` (orin, thor, x86_64), or None where NVIDIA documents it:
    Jetson AGX Orin with TensorRT up to 10.7 (JetPack 6 and its tarballs) and from 11.4.1 (JetPack 7.2.2 or later).
    A platform not known (``any``, None: a local target) is left to the DLA cores the device counts."""
    if platform in (None, "any"):
        return None
    if platform == "thor":
        return ReleaseFact("Jetson Thor has no DLA: every DLA cell on Thor is unavailable.",
                           (DLA_WORKING_WITH_11_4_1, RELEASE_NOTES_11_4_1))
    if platform != "orin":
        return ReleaseFact(f"DLA is a Jetson AGX Orin engine; platform {platform or 'unknown'} has none.",
                           (DLA_WORKING_WITH_11_4_1,))
    release = version_tuple(version)
    if release[:2] <= LAST_DLA_RELEASE_BEFORE_11 or release >= DLA_RESTORED_IN:
        return None
    if release[:2] < ELEVEN:
        return ReleaseFact(
            f"TensorRT {version} has no DLA on Jetson AGX Orin: 10.7 was the last release with DLA before 11.4.1, and "
            "the 10.16 SBSA build for Orin (JetPack 7.2) has none.",
            (DLA_JETSON_MIGRATION_11_3, RELEASE_NOTES_10_16_1))
    return ReleaseFact(
        f"TensorRT {version} has no DLA on Jetson AGX Orin: DLA was unavailable in 11.0 through 11.3, 11.4.0 had it on "
        "Windows on ARM only, and 11.4.1 restores it on AGX Orin under JetPack 7.2.2 or later.",
        (DLA_WORKING_WITH_11_4_1, DLA_JETSON_MIGRATION_11_3))


# trtexec options TensorRT 11.0 removed (an unknown option fails trtexec): option -> what replaces it.
TRTEXEC_OPTIONS_REMOVED_IN_11 = {
    "--int8": "INT8 comes from the model's Q/DQ nodes (explicit quantization) in a strongly typed network",
    "--fp16": "FP16 comes from the network's tensor types (strongly typed network)",
    "--best": "precisions come from the network's tensor types (strongly typed network)",
    "--calib": "calibrate offline and write Q/DQ nodes into the ONNX model (explicit quantization)",
}


def trtexec_option_removed(option: str, version: str) -> ReleaseFact | None:
    """Why trtexec of TensorRT ``version`` rejects ``option`` ("--int8"), or None where it still takes it."""
    replacement = TRTEXEC_OPTIONS_REMOVED_IN_11.get(option.split("=", 1)[0])
    if replacement is None or version_tuple(version)[:2] < ELEVEN:
        return None
    name = option.split("=", 1)[0]
    return ReleaseFact(f"trtexec of TensorRT {version} has no {name} (removed in 11.0): {replacement}.",
                       (TRTEXEC_MIGRATION_11,))


def network_typing(version: str) -> ReleaseFact:
    """How TensorRT ``version`` types a network: weakly by default with builder precision flags before 11.0, strongly
    (tensor types from the model, no precision flags) as the only kind from 11.0."""
    if version_tuple(version)[:2] >= ELEVEN:
        return ReleaseFact(f"TensorRT {version} builds strongly typed networks only: 11.0 removed weak typing and "
                           "the precision builder flags (BuilderFlag.INT8, FP16); precisions come from the model's "
                           "types and Q/DQ nodes.", (MIGRATION_11,))
    return ReleaseFact(f"TensorRT {version} types networks weakly by default (builder precision flags choose "
                       "kernels); strong typing is opt-in where NetworkDefinitionCreationFlag.STRONGLY_TYPED exists "
                       "(9.x on), and the only kind from 11.0.", (MIGRATION_11,))
