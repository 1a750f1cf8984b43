"""What TensorRT releases changed for someone moving a model between them, as data, each fact with NVIDIA's page:
where Jetson AGX Orin's DLA exists, the command-line flags 10.0 and 11.0 removed (trtexec's, Polygraphy's), and weak
typing's end in 11.0.

Implicit quantization's lifecycle (deprecated 10.1, removed 11.0) is
:mod:`~harness.tensorrt.quantization_lifecycle`. Standard library only (runs inside worker images).
"""
from __future__ import annotations

from typing import NamedTuple

from harness.tensorrt.versions import version_tuple

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


class ReleaseFact(NamedTuple):
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


class RemovedCommandFlag(NamedTuple):
    """A flag of a TensorRT command-line tool that a TensorRT release removed: a command using it fails there."""

    tool: str  # "trtexec" or "polygraphy"
    flag: str
    removed_in: str  # the first TensorRT version without it, "MAJOR.MINOR"
    instead: str  # what to use from that version on
    source: str
    needs: str | None = None  # the TensorRT API the flag sets (Polygraphy), gone from the version it was removed in


TRTEXEC_MIGRATION_10 = (
    "https://docs.nvidia.com/deeplearning/tensorrt/11.4.1/api/migration/tensorrt-8x-to-10x-trtexec.html")
_STRONGLY_TYPED = "a strongly typed build: the precision comes from the graph (explicit Q/DQ, casts)"
_EXPLICIT_SCALES = "calibrate offline and write Q/DQ nodes into the ONNX model (explicit quantization, no cache)"
# The one table of removed command-line flags of trtexec and Polygraphy (an unknown option fails the tool): the
# migration guides' lists. `trt-matrix diagnose` checks command lines against the targets with it. 11.x's BuilderFlag has
# no INT8, FP16, BF16 or FP8 (reference/trt-api/tensorrt-11.4.0.106.json) and IInt8Calibrator is gone:
# Polygraphy's precision flags set those builder flags.
REMOVED_COMMAND_FLAGS = (
    RemovedCommandFlag("trtexec", "--workspace", "10.0", "--memPoolSize=workspace:<MiB>", TRTEXEC_MIGRATION_10),
    RemovedCommandFlag("trtexec", "--explicitBatch", "10.0",
                       "nothing: every network is explicit batch (listed removed in 10.0 by platforms.md of the "
                       "reference data)", TRTEXEC_MIGRATION_10),
    RemovedCommandFlag("trtexec", "--minTiming", "10.0", "--avgTiming", TRTEXEC_MIGRATION_10),
    RemovedCommandFlag("trtexec", "--batch", "10.0", "explicit batch shapes (--shapes)", TRTEXEC_MIGRATION_10),
    RemovedCommandFlag("trtexec", "--maxBatch", "10.0", "explicit batch shapes (--minShapes/--optShapes/--maxShapes)",
                       TRTEXEC_MIGRATION_10),
    RemovedCommandFlag("trtexec", "--int8", "11.0", "INT8 comes from the model's Q/DQ nodes (explicit quantization) "
                       "in a strongly typed network", TRTEXEC_MIGRATION_11),
    RemovedCommandFlag("trtexec", "--fp16", "11.0", "FP16 comes from the network's tensor types (strongly typed "
                       "network)", TRTEXEC_MIGRATION_11),
    RemovedCommandFlag("trtexec", "--best", "11.0", "precisions come from the network's tensor types (strongly typed "
                       "network)", TRTEXEC_MIGRATION_11),
    RemovedCommandFlag("trtexec", "--calib", "11.0", _EXPLICIT_SCALES, TRTEXEC_MIGRATION_11),
    RemovedCommandFlag("polygraphy", "--int8", "11.0", _STRONGLY_TYPED, MIGRATION_11, "BuilderFlag.INT8"),
    RemovedCommandFlag("polygraphy", "--fp16", "11.0", _STRONGLY_TYPED, MIGRATION_11, "BuilderFlag.FP16"),
    RemovedCommandFlag("polygraphy", "--bf16", "11.0", _STRONGLY_TYPED, MIGRATION_11, "BuilderFlag.BF16"),
    RemovedCommandFlag("polygraphy", "--fp8", "11.0", _STRONGLY_TYPED, MIGRATION_11, "BuilderFlag.FP8"),
    RemovedCommandFlag("polygraphy", "--calibration-cache", "11.0", _EXPLICIT_SCALES, MIGRATION_11,
                       "IBuilderConfig.int8_calibrator"),
)


def flag_removed(flag: RemovedCommandFlag, version: str) -> bool:
    """Whether TensorRT ``version`` is ``flag``'s removal release or later; a bare major ("11": any 11.x, as matrix.yaml
    names a target that follows the newest release) counts as MAJOR.0."""
    return (version_tuple(version) + (0,))[:2] >= version_tuple(flag.removed_in)[:2]


def trtexec_option_removed(option: str, version: str) -> ReleaseFact | None:
    """Why trtexec of TensorRT ``version`` rejects ``option`` ("--int8"), or None where it still takes it."""
    name = option.split("=", 1)[0]
    removed = next((f for f in REMOVED_COMMAND_FLAGS if f.tool == "trtexec" and f.flag == name), None)
    if removed is None or not flag_removed(removed, version):
        return None
    return ReleaseFact(f"trtexec of TensorRT {version} has no {name} (removed in {removed.removed_in}): "
                       f"{removed.instead}.", (removed.source,))


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
