"""The wheelhouse: every wheel a target's image installs, downloaded on a host that reaches PyPI.

Image builds run with networking off and install only from ``wheelhouse/<target>/`` (``pip install --no-index``),
so they work air-gapped. The wheels must fit the Python, glibc and CPU of the recipe's base image, not this host's,
hence the ``--python-version/--platform`` download below, for the ``python`` and ``glibc`` matrix.yaml gives the
target's base image. Each wheelhouse holds a ``requirements.txt``: the exact list the recipe installs.
"""
from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
from pathlib import Path

from harness.matrix import JETSON_PLATFORMS, Target
from harness.shipped import checkout_root
from harness.worker.errors import InputError

# wheelhouse/ of the repository in a checkout; installed, ~/trt-matrix/wheelhouse (where the nightly keeps it).
DEFAULT_WHEELHOUSE = (checkout_root() or Path.home() / "trt-matrix") / "wheelhouse"
REQUIREMENTS_FILE = "requirements.txt"
NVIDIA_INDEX = "https://pypi.nvidia.com"
OLDEST_MANYLINUX_GLIBC = 17  # manylinux2014 == manylinux_2_17


# What goes with an ONNX Runtime release: the newest onnx of the same season, so the IR version of a model onnx
# writes (the quantizer writes one) is one this ORT still loads; numpy<2 before ORT 1.19; scipy while ORT's entropy
# calibrator still imported it (1.20 carries its own). (first ORT minor release, requirements); the last row not
# newer than the target's version wins.
ORT_COMPANIONS = (
    ((1, 15), ("onnx==1.14.1", "numpy<2", "scipy")),
    ((1, 16), ("onnx==1.14.1", "numpy<2", "scipy")),
    ((1, 17), ("onnx==1.15.0", "numpy<2", "scipy")),
    ((1, 18), ("onnx==1.16.2", "numpy<2", "scipy")),
    ((1, 19), ("onnx==1.16.2", "numpy", "scipy")),
    ((1, 20), ("onnx==1.17.0", "numpy")),
    ((1, 22), ("onnx==1.18.0", "numpy")),
    ((1, 24), ("onnx", "numpy")),
)

# What goes with a TensorRT release, (first TensorRT release, requirements); the last row not newer than the
# target's version wins. Polygraphy 0.48+ supports TensorRT >= 8.5 only; TensorRT 10 needs >= 0.49.6 (platforms.md);
# 11.0 removed APIs that Polygraphy 0.49 reads while building any engine (IBuilderConfig.int8_calibrator,
# ILayer.precision_is_set): 11.x needs >= 0.50.3 (compat.POLYGRAPHY_MINIMUM_FOR_TENSORRT_11), and 0.53.6 is the newest
# release on PyPI (`pip index versions polygraphy`, late 2026; Polygraphy declares no dependencies, only Python >= 3.8).
# onnx 1.16.2 is the newest onnx that still installs on Python 3.8 (JetPack 5) and has wheels for the Python 3.12 of the
# 2026 images (cp312, x86_64 and aarch64); numpy 1.x, which the TensorRT 8-10 bindings were built against, has them too.
TENSORRT_COMPANIONS = (
    ((8, 0), ("polygraphy==0.49.26", "onnx==1.16.2", "numpy<2")),
    ((10, 0), ("polygraphy==0.53.6", "onnx==1.16.2", "numpy<2")),
    # 11.x: the same pins, kept as a row of its own because its Polygraphy must know 11 (a test holds it to the minimum).
    ((11, 0), ("polygraphy==0.53.6", "onnx==1.16.2", "numpy<2")),
)


def tensorrt_requirements(version: str) -> tuple[str, ...]:
    """polygraphy, onnx and numpy pins for TensorRT ``version`` (TENSORRT_COMPANIONS)."""
    wanted = (_version_tuple(version) + (0,))[:2]
    rows = [row for row in TENSORRT_COMPANIONS if row[0] <= wanted]
    if not rows:
        known = ", ".join(".".join(map(str, row[0])) for row in TENSORRT_COMPANIONS)
        raise WheelhouseError(f"TensorRT {version} is older than every release TENSORRT_COMPANIONS in "
                              f"harness/orchestration/docker/wheelhouse.py pins polygraphy/onnx/numpy for ({known}).")
    return rows[-1][1]


class WheelhouseError(InputError):
    """A wheelhouse cannot be prepared for a target; the message says what is missing and how to fix it."""


@dataclasses.dataclass(frozen=True)
class WheelhouseSpec:
    """What to download for one target: requirements, and the interpreter and CPU the wheels must fit."""

    target: str
    requirements: tuple[str, ...]
    python_version: str
    glibc: str
    machine: str
    extra_index_url: str | None = None

    @property
    def abi(self) -> str:
        return "cp" + self.python_version.replace(".", "")

    def platform_tags(self) -> list[str]:
        newest = int(self.glibc.split(".")[1])
        tags = [f"manylinux2014_{self.machine}", f"linux_{self.machine}"]
        return tags + [f"manylinux_2_{minor}_{self.machine}" for minor in range(OLDEST_MANYLINUX_GLIBC, newest + 1)]


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def onnxruntime_requirements(version: str) -> tuple[str, ...]:
    """onnxruntime==VERSION with the packages of its season (ORT_COMPANIONS)."""
    wanted = _version_tuple(version)[:2]
    rows = [row for row in ORT_COMPANIONS if row[0] <= wanted]
    if not rows:
        oldest = ".".join(map(str, ORT_COMPANIONS[0][0]))
        raise WheelhouseError(
            f"ONNX Runtime {version} is older than {oldest}, the oldest release the case library is checked against "
            "(the oldest with Python 3.11 wheels; cases use opsets up to 18 with native Mish). ORT_COMPANIONS in "
            "harness/orchestration/docker/wheelhouse.py lists the releases with a known onnx/numpy pairing.")
    return (f"onnxruntime=={version}",) + rows[-1][1]


def wheelhouse_spec(target: Target, python_version: str | None = None, machine: str | None = None) -> WheelhouseSpec:
    """The downloads ``target``'s recipe installs, for its base image's Python and glibc and the target's CPU.

    ``python_version`` is for a base image passed with --base-image whose Python is not the target's ``python``.
    """
    if target.runner != "docker" or not target.recipe:
        raise WheelhouseError(f"Target {target.id!r} is not a docker target with a recipe (runner: {target.runner}); "
                              "only docker targets have a wheelhouse.")
    missing = [key for key in ("version", "python", "glibc") if not getattr(target, key)]
    if missing:
        raise WheelhouseError(f"Target {target.id!r} has no {', '.join(missing)} in matrix.yaml; the wheelhouse pins "
                              "the backend version and is downloaded for the base image's Python and glibc "
                              '(e.g. version: "1.20.1", python: "3.11", glibc: "2.36").')
    extra_index = None
    if target.backend == "onnxruntime":
        requirements = onnxruntime_requirements(target.version)
    elif target.backend == "tensorrt":
        requirements = tensorrt_requirements(target.version)
        if target.tensorrt_wheel:  # a base image without TensorRT: the wheel comes from NVIDIA's index
            requirements = (target.tensorrt_wheel,) + requirements
            extra_index = NVIDIA_INDEX
    else:
        raise WheelhouseError(f"Target {target.id!r}: backend {target.backend!r} has no wheelhouse recipe; "
                              "only onnxruntime and tensorrt targets run in containers.")
    return WheelhouseSpec(
        target=target.id, requirements=requirements, python_version=python_version or target.python,
        glibc=target.glibc, machine=machine or default_machine(target), extra_index_url=extra_index)


def default_machine(target: Target) -> str:
    """The CPU the target's containers run on: aarch64 on Jetson (Orin, Thor), x86_64 on x86 targets, this host's
    otherwise."""
    if target.platform in JETSON_PLATFORMS:
        return "aarch64"
    if target.platform == "x86_64":
        return "x86_64"
    import platform

    return platform.machine()


def pip_download_command(spec: WheelhouseSpec, dest: Path) -> list[str]:
    """``pip download`` of the requirements plus pip itself (TensorRT recipes bootstrap pip from its wheel)."""
    command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version", spec.python_version,
               "--implementation", "cp", "--abi", spec.abi, "--dest", str(dest)]
    for tag in spec.platform_tags():
        command += ["--platform", tag]
    if spec.extra_index_url:
        command += ["--pre", "--extra-index-url", spec.extra_index_url]
    return command + list(spec.requirements) + ["pip"]


def requirements_text(spec: WheelhouseSpec) -> str:
    header = (f"# trt-matrix wheelhouse of target {spec.target}: Python {spec.python_version} ({spec.abi}), "
              f"{spec.machine}, glibc <= {spec.glibc}\n")
    return header + "".join(f"{line}\n" for line in spec.requirements)


def fill_wheelhouse(spec: WheelhouseSpec, dest: Path, log=print) -> Path:
    """Download ``spec`` into ``dest`` (created) and write its requirements.txt; raise WheelhouseError on failure."""
    dest.mkdir(parents=True, exist_ok=True)
    command = pip_download_command(spec, dest)
    log(f"{spec.target}: {shlex.join(command)}")
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-25:])
        hint = (f" The TensorRT wheel comes from {spec.extra_index_url}: run this on a host that reaches it, then "
                f"copy {dest} to the build host." if spec.extra_index_url else "")
        raise WheelhouseError(f"{spec.target}: pip download failed (exit status {completed.returncode}).{hint}\n"
                              f"last lines of pip's output:\n{tail}")
    (dest / REQUIREMENTS_FILE).write_text(requirements_text(spec))
    wheels = sorted(p.name for p in dest.glob("*.whl"))
    log(f"{spec.target}: {len(wheels)} wheel(s) in {dest}")
    return dest
