"""Load and validate ``matrix.yaml``: the targets of the compatibility matrix.

Every error names the file, the key and what is allowed, so a typo in a target never turns into a silent skip.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from harness import user_cache
from harness.shipped import shipped_path
from harness.tensorrt.platforms import GPU_ARCH_FORM, JETSON_PLATFORMS, PLATFORM_ARCH, PLATFORMS
from harness.worker.errors import InputError

# The matrix this installation has: the repository's in a checkout, the copy built into the package once installed.
DEFAULT_MATRIX = shipped_path("matrix.yaml")
MATRIX_NAME = "matrix.yaml"
RUNNERS = ("local", "docker")
GPU_ACCESS = ("none", "all-gpus", "nvidia-runtime")
BUILD_NETWORKS = ("none", "default", "host")
DOCKER_HOST_SCHEMES = ("unix://", "tcp://", "ssh://", "npipe://")
_ID = re.compile(r"^[a-z0-9][a-z0-9.\-]*$")
TARGET_KEYS = {
    "title": str, "backend": str, "runner": str, "platform": str, "version": str, "available": bool, "reason": str,
    "default": bool, "session_config": dict,
    "recipe": str, "base_image": str, "python": str, "glibc": str, "gpu": str, "docker_host": str,
    "build_network": str, "tensorrt_wheel": str, "tensorrt_tarball": str, "cuda": str, "min_driver": int,
    "gpu_arch": str, "dla_core": int, "jetpack": str, "sources": dict,
}
_REQUIRED = ("title", "backend", "runner", "platform")
# What an available docker target's image is built from: the recipe, the version it pins, the base image and the
# Python and glibc the wheelhouse is downloaded for.
_DOCKER_REQUIRED = ("version", "recipe", "base_image", "python", "glibc")
_TENSORRT_ONLY = ("tensorrt_wheel", "tensorrt_tarball")
_FORMS = {  # key: (pattern, what it looks like)
    "python": (re.compile(r"^3\.\d+$"), 'a quoted "3.MINOR" such as "3.10"'),
    "glibc": (re.compile(r"^2\.\d+$"), 'a quoted "2.MINOR" such as "2.35"'),
    "tensorrt_wheel": (re.compile(r"^tensorrt==\S+$"), "a pin such as tensorrt==9.2.0.post12.dev5"),
    "tensorrt_tarball": (re.compile(r"^[^/\\]+\.tar\.gz$"), "a file name (no directory) ending in .tar.gz"),
    "gpu_arch": (GPU_ARCH_FORM, 'a quoted "sm_MAJORMINOR" such as "sm_87", or "any"'),
    "jetpack": (re.compile(r"^\d+\.\d+(\.\d+)?$"), 'a quoted JetPack release such as "6.1" or "7.2.2"'),
}
# A fact's source: its confidence ([C] read on an NVIDIA page, [I] from an issue or a downstream project, [U] not
# confirmed) and where it comes from (a link, or platforms.md / platforms-2026.md).
SOURCE_FORM = re.compile(r"^\[(C|I|U)\] \S")
# Base images that must never be used: the `-igpu` NGC tags ended after 26.02, and a 26.02 `-igpu` image links
# libnvdla_compiler.so, which JetPack 7 lacks, so its TensorRT fails to import (platforms-2026.md).
REFUSED_IMAGE = re.compile(r"-igpu(?:$|[^\w])")
HOST_KEYS = {"title": str, "labels": list, "targets": list, "shards": int, "architectures": list}
_HOST_REQUIRED = ("title", "labels", "targets")
_ARCH = re.compile(r"^sm_\d{2,3}$")


class MatrixError(InputError):
    """matrix.yaml is not usable; the message names the file, the key and what is allowed."""


class Target(NamedTuple):
    id: str
    title: str
    backend: str
    runner: str
    platform: str
    version: str | None = None
    available: bool = True
    reason: str | None = None
    recipe: str | None = None
    docker_host: str | None = None
    gpu: str = "none"
    default: bool = False
    session_config: Mapping[str, str] = MappingProxyType({})
    base_image: str | None = None
    python: str | None = None
    glibc: str | None = None
    build_network: str = "none"
    tensorrt_wheel: str | None = None
    tensorrt_tarball: str | None = None
    cuda: str | None = None
    min_driver: int | None = None
    gpu_arch: str = "any"  # the GPU architecture the target expects (sm_87), or any: whatever the host has
    dla_core: int | None = None  # build for this DLA core, GPU fallback allowed (TensorRT on Jetson AGX Orin)
    jetpack: str | None = None  # the JetPack release of the Jetson the target runs on
    sources: Mapping[str, str] = MappingProxyType({})  # fact key -> "[C|I|U] where from"

    def to_job(self) -> dict[str, Any]:
        """The plain dict a worker receives (it has no yaml and no record class), its mappings copied."""
        return {**self._asdict(), "session_config": dict(self.session_config), "sources": dict(self.sources)}


class HostKind(NamedTuple):
    """A kind of host the nightly job runs on: its self-hosted runner labels and the targets it runs."""

    id: str
    title: str
    labels: tuple[str, ...]
    targets: tuple[str, ...]
    shards: int = 1  # machines of this kind the night's cells are split over (harness nightly --shard K/N)
    # GPU architectures this kind must cover every night (sm_89): one job each, on a runner labelled with it
    architectures: tuple[str, ...] = ()


class MatrixFile(NamedTuple):
    """The targets file a command reads, and how it was chosen: "--matrix", "current directory" or "installed"."""

    path: Path
    chosen_by: str


def find_matrix(given: Path | None, cwd: Path | None = None) -> MatrixFile:
    """The targets file of a command: ``--matrix PATH`` when given, else ``matrix.yaml`` of the current directory, else
    the one this installation has (DEFAULT_MATRIX)."""
    if given is not None:
        return MatrixFile(Path(given), "--matrix")
    here = Path(cwd or Path.cwd()) / MATRIX_NAME
    if here.is_file():
        return MatrixFile(here, "current directory")
    return MatrixFile(DEFAULT_MATRIX, "installed")


_SAY_ON_READ: dict[Path, str] = {}


def say_on_first_read(path: Path, line: str) -> None:
    """Print ``line`` on stderr the first time ``path`` is read (a command naming the targets file it used)."""
    _SAY_ON_READ[Path(path)] = line


def _yaml_mapping(path: Path, text: str) -> Any:
    """``text`` (the file ``path``) parsed as safe YAML, by libyaml's C parser where PyYAML has it (ten times its
    Python parser's speed: every command reads the matrix first). The parse is kept with the text in this user's
    cache (:mod:`harness.user_cache`), when JSON holds it exactly: the next command whose file has the same text
    (compared whole) reads it back without importing PyYAML (a fifth of a small model's scan spent before its first
    step)."""
    cached = user_cache.entry_path("matrix", text.encode("utf-8", "surrogatepass"))
    try:
        kept = user_cache.read_entry(cached)
        if kept["text"] == text:
            return kept["parsed"]
    except (KeyError, TypeError):  # none kept, or not this text's: parsed below
        pass
    import yaml

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        raise MatrixError(f"{path}: not valid YAML: {err}") from None
    user_cache.write_entry(cached, {"text": text, "parsed": data})
    return data


def _read(path: Path) -> dict[str, Any]:
    path = Path(path)
    line = _SAY_ON_READ.pop(path, None)
    if line:
        print(line, file=sys.stderr, flush=True)
    try:
        data = _yaml_mapping(path, path.read_text())
    except FileNotFoundError:
        raise MatrixError(f"{path}: no such file. Pass --matrix PATH, or run where a matrix.yaml is.") from None
    except IsADirectoryError:
        raise MatrixError(f"{path}: is a directory; --matrix names the targets file (matrix.yaml).") from None
    except UnicodeDecodeError as err:
        raise MatrixError(f"{path}: not a text file ({err.reason} at byte {err.start}); expected matrix.yaml.") from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), dict) or not data["targets"]:
        raise MatrixError(f"{path}: the top level must be a mapping with a non-empty mapping 'targets'.")
    unknown_top = sorted(set(data) - {"targets", "hosts"})
    if unknown_top:
        raise MatrixError(f"{path}: unknown top-level key(s) {unknown_top}; only 'targets' and 'hosts' are allowed.")
    return data


def load_matrix(path: Path = DEFAULT_MATRIX) -> dict[str, Target]:
    """Targets by id, in file order."""
    data = _read(path)
    targets = {target_id: _target(Path(path), target_id, body) for target_id, body in data["targets"].items()}
    defaults = [t.id for t in targets.values() if t.default]
    if len(defaults) > 1:
        raise MatrixError(f"{path}: key 'default' is true for {defaults}; at most one target can be the default.")
    return targets


def load_hosts(path: Path = DEFAULT_MATRIX) -> dict[str, HostKind]:
    """The ``hosts`` section: host kinds by id, in file order (empty when the file has none)."""
    data = _read(path)
    targets = load_matrix(path)
    hosts = data.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise MatrixError(f"{path}: 'hosts' must be a mapping of host kinds (e.g. x86-gpu: {{labels, targets}}).")
    return {host_id: _host(Path(path), host_id, body, targets) for host_id, body in hosts.items()}


def _host(path: Path, host_id: Any, body: Any, targets: dict[str, Target]) -> HostKind:
    where = f"{path}: hosts.{host_id}"
    _check_entry(where, host_id, body, HOST_KEYS, _HOST_REQUIRED, "a host kind", "orin-jp6.0")
    if "shards" in body and (isinstance(body["shards"], bool) or body["shards"] < 1):
        raise MatrixError(f"{where}.shards: must be a whole number of 1 or more, found {body['shards']!r}.")
    architectures = body.get("architectures", [])
    if not all(isinstance(a, str) and _ARCH.match(a) for a in architectures) or len(set(architectures)) != len(
            architectures):
        raise MatrixError(f"{where}.architectures: must be a list of distinct GPU architectures like sm_89, found "
                          f"{architectures!r}.")
    for key in ("labels", "targets"):
        if not body[key] or not all(isinstance(item, str) and item for item in body[key]):
            raise MatrixError(f"{where}.{key}: must be a non-empty list of strings, found {body[key]!r}.")
    unknown = [t for t in body["targets"] if t not in targets]
    if unknown:
        raise MatrixError(f"{where}.targets: {unknown} are not targets of this file; known: {', '.join(targets)}.")
    return HostKind(id=host_id, title=body["title"], labels=tuple(body["labels"]), targets=tuple(body["targets"]),
                    shards=body.get("shards", 1), architectures=tuple(architectures))


def _target(path: Path, target_id: Any, body: Any) -> Target:
    where = f"{path}: targets.{target_id}"
    _check_entry(where, target_id, body, TARGET_KEYS, _REQUIRED, "a target id", "trt86-orin")
    _one_of(where, body, "runner", RUNNERS)
    _one_of(where, body, "platform", PLATFORMS)
    _one_of(where, body, "gpu", GPU_ACCESS)
    _one_of(where, body, "build_network", BUILD_NETWORKS)
    from harness.worker.backends import BACKENDS

    if body["backend"] not in BACKENDS and ":" not in body["backend"]:
        raise MatrixError(f"{where}.backend: {body['backend']!r} is not one of {sorted(BACKENDS)} (or a module:Class path).")
    if body.get("available", True) is False and not body.get("reason"):
        raise MatrixError(f"{where}: 'available: false' needs a 'reason' saying why the cell cannot exist.")
    if body["runner"] == "docker" and body.get("available", True):
        missing = [key for key in _DOCKER_REQUIRED if key not in body]
        if missing:
            raise MatrixError(f"{where}: a docker target needs {', '.join(map(repr, missing))} (what its image is "
                              "built from: a directory under containers/, the base image, its Python and glibc).")
    for key in _TENSORRT_ONLY:
        if key in body and (body["backend"] != "tensorrt" or body["runner"] != "docker"):
            raise MatrixError(f"{where}.{key}: only docker targets of backend tensorrt take it.")
    for key, (pattern, form) in _FORMS.items():
        if key in body and not pattern.match(body[key]):
            raise MatrixError(f"{where}.{key}: {body[key]!r} is not {form}.")
    host = body.get("docker_host")
    if host is not None and not host.startswith(DOCKER_HOST_SCHEMES):
        raise MatrixError(f"{where}.docker_host: {host!r} must start with one of {DOCKER_HOST_SCHEMES}.")
    _check_jetson_and_dla(where, body)
    for key, value in body.get("sources", {}).items():
        if key not in TARGET_KEYS or not isinstance(value, str) or not SOURCE_FORM.match(value):
            raise MatrixError(f"{where}.sources.{key}: a source names a key of this target and reads \"[C|I|U] LINK "
                              f"or platforms.md\" ([C] confirmed by NVIDIA, [I] issue, [U] unconfirmed), found {value!r}.")
    for key, value in body.get("session_config", {}).items():
        if not isinstance(value, str):
            raise MatrixError(f"{where}.session_config.{key}: values are strings (ORT config entries), found {value!r}.")
    return Target(id=target_id, **{"gpu_arch": PLATFORM_ARCH.get(body["platform"], "any"), **body})


def _check_jetson_and_dla(where: str, body: dict) -> None:
    """A Jetson target's architecture is its platform's, and only Jetson targets name a JetPack; a DLA core is asked of
    TensorRT targets only; no base image is a refused `-igpu` tag."""
    platform = body["platform"]
    expected = PLATFORM_ARCH.get(platform)
    if expected and body.get("gpu_arch", expected) != expected:
        raise MatrixError(f"{where}.gpu_arch: every {platform} has {expected}, found {body['gpu_arch']!r}.")
    if "jetpack" in body and platform not in JETSON_PLATFORMS:
        raise MatrixError(f"{where}.jetpack: only Jetson targets (platform {' or '.join(JETSON_PLATFORMS)}) run on "
                          "a JetPack release.")
    if "dla_core" in body and (body["backend"] != "tensorrt" or body["dla_core"] < 0):
        raise MatrixError(f"{where}.dla_core: a DLA core number (0 or more) of a tensorrt target, found "
                          f"{body['dla_core']!r} on backend {body['backend']!r}.")
    image = body.get("base_image", "")
    if REFUSED_IMAGE.search(image):
        raise MatrixError(f"{where}.base_image: {image!r} is an `-igpu` tag: those ended after 26.02 and a 26.02 "
                          "`-igpu` image fails on JetPack 7 (its TensorRT links libnvdla_compiler.so, which JetPack 7 "
                          "lacks). Use the SBSA image of the same tag (without -igpu), as JetPack 7 does.")


def _check_entry(where: str, entry_id: Any, body: Any, keys: dict[str, type], required: tuple[str, ...], kind: str,
                 example: str) -> None:
    """An id of the allowed form, and a mapping of known keys of the right types with the required ones present."""
    if not isinstance(entry_id, str) or not _ID.match(entry_id):
        raise MatrixError(f"{where}: {kind} must be lower-case letters, digits, '.' and '-' (e.g. {example}).")
    if not isinstance(body, dict):
        raise MatrixError(f"{where}: must be a mapping of keys {sorted(keys)}.")
    for key, value in body.items():
        if key not in keys:
            raise MatrixError(f"{where}.{key}: unknown key. Allowed keys: {', '.join(sorted(keys))}.")
        expected = keys[key]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            hint = " (quote it)" if expected is str and isinstance(value, (int, float)) else ""
            raise MatrixError(f"{where}.{key}: must be a {expected.__name__}, found {type(value).__name__} {value!r}"
                              f"{hint}.")
    for key in required:
        if key not in body:
            raise MatrixError(f"{where}: missing required key {key!r}.")


def _one_of(where: str, body: dict, key: str, allowed: tuple[str, ...]) -> None:
    if key in body and body[key] not in allowed:
        raise MatrixError(f"{where}.{key}: {body[key]!r} is not allowed; use one of {', '.join(allowed)}.")


def default_target(targets: dict[str, Target]) -> Target:
    return next((t for t in targets.values() if t.default), next(iter(targets.values())))
