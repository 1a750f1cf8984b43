"""Worker images: one tag per target, built with the docker SDK from ``containers/<recipe>/`` plus its wheelhouse.

Every fact of a build comes from the target's matrix.yaml entry: the recipe, the build args (base image, version,
the name of a file passed by path) and the build's network. The build context is assembled here: the recipe's
files, ``wheelhouse/`` (this target's wheels) and ``provided/`` with the files the user passes by path (the L4T
TensorRT tarball). Builds run with networking off unless the target says otherwise (``build_network``), so a
wheelhouse that lacks a wheel fails the build instead of reaching out.
"""
from __future__ import annotations

import collections
import dataclasses
import fnmatch
import os
import re
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

import docker
import docker.errors
import requests

from harness.orchestration.docker.wheelhouse import DEFAULT_WHEELHOUSE, REQUIREMENTS_FILE
from harness.matrix import REFUSED_IMAGE, Target
from harness.shipped import shipped_path

RECIPES_DIR = shipped_path("containers")
IMAGE_REPOSITORY = "trt-matrix/worker"
LABEL_TARGET = "org.trt-matrix.target"
LABEL_BASE_IMAGE = "org.trt-matrix.base-image"
BASE_IMAGE_ENV = "BASE_IMAGE"
BUILD_LOG_TAIL_LINES = 40
WHEELHOUSE_IN_CONTEXT = "wheelhouse"
PROVIDED_IN_CONTEXT = "provided"
VERSION_ARGS = {"onnxruntime": "ORT_VERSION", "tensorrt": "TENSORRT_VERSION"}  # the build arg of a target's version


@dataclasses.dataclass(frozen=True)
class ProvidedFile:
    """A file no repository can hold (a licensed download) that a target names in matrix.yaml: the user passes it by
    path, the harness puts it into the build context as ``provided/<name>`` and tells the recipe its name."""

    key: str  # the target's matrix.yaml key holding the file name
    build_arg: str
    option: str
    env: str
    how_to_get: str  # {name} is the file name


PROVIDED_FILES = (
    ProvidedFile(
        key="tensorrt_tarball", build_arg="TENSORRT_TARBALL", option="--tensorrt-tarball",
        env="TRT_MATRIX_TENSORRT_TARBALL",
        how_to_get="download {name} from NVIDIA's TensorRT download page (needs a developer login)"),
)


class ImageBuildError(RuntimeError):
    """A worker image could not be built; ``log_tail`` holds the last lines of the build output."""

    def __init__(self, message: str, log_tail: str = ""):
        super().__init__(message)
        self.log_tail = log_tail

    def describe(self) -> str:
        """The message and, when the build ran, its last log lines."""
        if not self.log_tail:
            return str(self)
        return f"{self}\nlast lines of the build log:\n{self.log_tail}"


class MissingBuildInput(ImageBuildError):
    """Something the build context needs is not here (recipe, wheelhouse, a file passed by path)."""


@dataclasses.dataclass(frozen=True)
class BuildInputs:
    """Where a build takes its pieces from; defaults follow the repository layout and the environment."""

    recipes_dir: Path = RECIPES_DIR
    wheelhouse_dir: Path = DEFAULT_WHEELHOUSE
    base_image: str | None = None
    provided_files: tuple[Path, ...] = ()
    network: str | None = None

    @classmethod
    def from_env(cls) -> "BuildInputs":
        """BASE_IMAGE, TRT_MATRIX_WHEELHOUSE and each provided file's env var (e.g. TRT_MATRIX_TENSORRT_TARBALL)."""
        files = tuple(Path(os.environ[f.env]) for f in PROVIDED_FILES if os.environ.get(f.env))
        wheelhouse = Path(os.environ.get("TRT_MATRIX_WHEELHOUSE") or DEFAULT_WHEELHOUSE)
        return cls(wheelhouse_dir=wheelhouse, base_image=os.environ.get(BASE_IMAGE_ENV) or None, provided_files=files)


def image_tag(target: Target) -> str:
    return f"{IMAGE_REPOSITORY}:{target.id}"


def describe_image(image) -> str:
    """``<image id> <repo digests, or tags when it was built here>``: the value of TRT_MATRIX_IMAGE."""
    names = image.attrs.get("RepoDigests") or image.tags or ["untagged"]
    return f"{image.id} {','.join(names)}"


def find_image(client: docker.DockerClient, target: Target):
    """The target's image on this engine, or None when it was never built there."""
    try:
        return client.images.get(image_tag(target))
    except docker.errors.ImageNotFound:
        return None


def recipe_dockerfile(target: Target, recipes_dir: Path) -> Path:
    if not target.recipe:
        raise MissingBuildInput(f"Target {target.id!r} has no 'recipe' in matrix.yaml, so there is nothing to build.")
    dockerfile = Path(recipes_dir) / target.recipe / "Dockerfile"
    if not dockerfile.is_file():
        raise MissingBuildInput(f"Target {target.id!r}: recipe {target.recipe!r} has no Dockerfile at {dockerfile}.")
    return dockerfile


def _instructions(dockerfile_text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile_text)
    pairs = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            pairs.append((word.upper(), rest.strip()))
    return pairs


def rendered_instructions(dockerfile_text: str, buildargs: dict[str, str]) -> list[tuple[str, str]]:
    """The Dockerfile's instructions with ``${NAME}`` of a declared ARG replaced as Docker does: the build arg, else
    the ARG's default (shell expansions such as ``${NAME%%.*}`` and other variables are left as written)."""
    values = {name: default or "" for name, default in declared_args(dockerfile_text).items()}
    values.update(buildargs)
    return [(word, re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), rest))
            for word, rest in _instructions(dockerfile_text)]


def declared_args(dockerfile_text: str) -> dict[str, str | None]:
    """ARG names of a Dockerfile with their defaults (None when it has none)."""
    args = {}
    for instruction, rest in _instructions(dockerfile_text):
        if instruction == "ARG":
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip().strip('"') if default else None
    return args


def copied_sources(dockerfile_text: str) -> list[str]:
    """Context paths the Dockerfile COPYs or ADDs (copies from another build stage are not context paths)."""
    sources = []
    for instruction, rest in _instructions(dockerfile_text):
        if instruction not in ("COPY", "ADD"):
            continue
        words = rest.split()
        if any(w.startswith("--from") for w in words):
            continue
        paths = [w for w in words if not w.startswith("--")]
        sources += paths[:-1]
    return sources


@dataclasses.dataclass(frozen=True)
class BuildPlan:
    """Everything a build of one target sends to the engine, worked out before any engine is asked."""

    dockerfile: Path
    context: dict[str, Path | None]  # name in the build context -> file or directory here (None: an empty directory)
    buildargs: dict[str, str]
    base_image: str | None
    network: str


def plan_build(target: Target, inputs: BuildInputs) -> BuildPlan:
    """The build of ``target``; raises MissingBuildInput naming anything absent (recipe, wheelhouse, a file)."""
    dockerfile = recipe_dockerfile(target, inputs.recipes_dir)
    text = dockerfile.read_text()
    return BuildPlan(dockerfile=dockerfile, context=_context_entries(target, inputs, dockerfile.parent, text),
                     buildargs=build_args(target, inputs, text), base_image=effective_base_image(target, inputs),
                     network=inputs.network or target.build_network)


@dataclasses.dataclass(frozen=True)
class BuildDescription:
    """What ``containers build TARGET --dry-run`` shows: the build a target would send, with anything still missing
    named instead of raised."""

    target: Target
    dockerfile: Path
    base_image: str | None
    buildargs: dict[str, str]
    network: str
    wheelhouse: Path
    wheelhouse_ready: bool  # its requirements.txt is there
    requirements: tuple[str, ...]
    extra_index_url: str | None
    provided: dict[str, Path | None]  # file the target names -> the path passed for it (None: not passed yet)
    steps: list[tuple[str, str]]  # the recipe's instructions with the build args filled in

    def lines(self) -> list[str]:
        target = self.target
        wheelhouse_state = "ready" if self.wheelhouse_ready else (
            f"missing: run `trt-matrix containers wheelhouse --target {target.id}` on a host that reaches PyPI")
        lines = [f"target:      {target.id} ({target.title})", f"image:       {image_tag(target)}",
                 f"recipe:      {self.dockerfile}", f"base image:  {self.base_image}",
                 f"build args:  {' '.join(f'{k}={v}' for k, v in self.buildargs.items())}",
                 f"network:     {self.network} (the RUN steps' network)",
                 f"wheelhouse:  {self.wheelhouse} ({wheelhouse_state})",
                 f"  installs:  {' '.join(self.requirements)}"
                 + (f" (TensorRT from {self.extra_index_url})" if self.extra_index_url else "")]
        for name, path in self.provided.items():
            lines.append(f"provided:    {name}: " + (str(path) if path else "not passed yet (--tensorrt-tarball PATH or "
                                                      "TRT_MATRIX_TENSORRT_TARBALL=PATH)"))
        lines.append("build steps:")
        lines += [f"  {word} {' '.join(rest.split())}" for word, rest in self.steps]
        return lines


def describe_build(target: Target, inputs: BuildInputs) -> BuildDescription:
    """The build of ``target`` as :func:`plan_build` would send it, for reading: a missing wheelhouse or file passed by
    path is reported in the description, not raised (a missing recipe still raises MissingBuildInput)."""
    from harness.orchestration.docker.wheelhouse import wheelhouse_spec

    dockerfile = recipe_dockerfile(target, inputs.recipes_dir)
    text = dockerfile.read_text()
    buildargs = build_args(target, inputs, text)
    spec = wheelhouse_spec(target)
    wheelhouse = Path(inputs.wheelhouse_dir) / target.id
    provided = {}
    for entry in PROVIDED_FILES:
        name = getattr(target, entry.key)
        if name:
            provided[name] = next((p for p in inputs.provided_files if p.name == name and p.is_file()), None)
    return BuildDescription(
        target=target, dockerfile=dockerfile, base_image=effective_base_image(target, inputs), buildargs=buildargs,
        network=inputs.network or target.build_network, wheelhouse=wheelhouse,
        wheelhouse_ready=(wheelhouse / REQUIREMENTS_FILE).is_file(), requirements=spec.requirements,
        extra_index_url=spec.extra_index_url, provided=provided, steps=rendered_instructions(text, buildargs))


def _context_entries(target: Target, inputs: BuildInputs, recipe_dir: Path,
                     dockerfile_text: str) -> dict[str, Path | None]:
    """Name in the build context -> file or directory on this host; raises MissingBuildInput naming what is absent."""
    entries: dict[str, Path | None] = {p.name: p for p in sorted(recipe_dir.iterdir())}
    provided = _provided_files(target, inputs)
    copies_provided = False
    for source in copied_sources(dockerfile_text):
        top = source.strip("/").split("/")[0]
        if fnmatch.filter(entries, top):  # in the recipe directory (a COPY source may be a glob)
            continue
        if top == WHEELHOUSE_IN_CONTEXT:
            entries[top] = _wheelhouse(target, inputs)
        elif top == PROVIDED_IN_CONTEXT:
            copies_provided = True
        else:
            raise MissingBuildInput(f"Target {target.id!r}: {recipe_dir / 'Dockerfile'} copies {source!r}, which is "
                                    f"neither in {recipe_dir} nor {WHEELHOUSE_IN_CONTEXT}/ nor {PROVIDED_IN_CONTEXT}/ "
                                    "(the files passed by path).")
    if provided and not copies_provided:
        raise MissingBuildInput(f"Target {target.id!r}: matrix.yaml names {', '.join(provided)}, but "
                                f"{recipe_dir / 'Dockerfile'} does not COPY {PROVIDED_IN_CONTEXT}/, where it is put.")
    if copies_provided:
        entries[PROVIDED_IN_CONTEXT] = None
        entries.update({f"{PROVIDED_IN_CONTEXT}/{name}": path for name, path in provided.items()})
    return entries


def _provided_files(target: Target, inputs: BuildInputs) -> dict[str, Path]:
    """The files passed by path that the target names in matrix.yaml, by name; raises MissingBuildInput."""
    found = {}
    for provided in PROVIDED_FILES:
        name = getattr(target, provided.key)
        if not name:
            continue
        path = next((p for p in inputs.provided_files if p.name == name), None)
        if path is not None and path.is_file():
            found[name] = path
            continue
        if path is not None:
            given = f" ({path} is not a file)"
        elif inputs.provided_files:
            given = f" (given: {', '.join(map(str, inputs.provided_files))}; none has that name)"
        else:
            given = ""
        raise MissingBuildInput(
            f"Target {target.id!r} needs {name!r} (its {provided.key} in matrix.yaml){given}. It cannot be downloaded "
            f"here: {provided.how_to_get.format(name=name)}, then pass it by path with `trt-matrix containers "
            f"build {target.id} {provided.option} PATH` or set {provided.env}=PATH.")
    return found


def _wheelhouse(target: Target, inputs: BuildInputs) -> Path:
    directory = Path(inputs.wheelhouse_dir) / target.id
    if not (directory / REQUIREMENTS_FILE).is_file():
        raise MissingBuildInput(
            f"Target {target.id!r}: no wheelhouse at {directory} ({REQUIREMENTS_FILE} missing). Image builds are "
            f"air-gapped and install only from it: run `trt-matrix containers wheelhouse --target {target.id}` "
            "on a host that reaches PyPI (or copy that directory here from one).")
    return directory


def effective_base_image(target: Target, inputs: BuildInputs) -> str | None:
    """--base-image / BASE_IMAGE env, else the target's base_image in matrix.yaml; an `-igpu` tag is refused here too
    (matrix.yaml refuses it in a target), whichever way it comes."""
    image = inputs.base_image or target.base_image
    if image and REFUSED_IMAGE.search(image):
        raise MissingBuildInput(f"Target {target.id!r}: base image {image!r} is an `-igpu` tag: those ended after 26.02 "
                                "and a 26.02 `-igpu` image fails on JetPack 7 (its TensorRT links "
                                "libnvdla_compiler.so, which JetPack 7 lacks). Pass the SBSA image of the same tag.")
    return image


def build_args(target: Target, inputs: BuildInputs, dockerfile_text: str) -> dict[str, str]:
    """The target's facts as the build args the Dockerfile declares: BASE_IMAGE, its version (ORT_VERSION or
    TENSORRT_VERSION) and the name of each file passed by path (TENSORRT_TARBALL)."""
    declared = declared_args(dockerfile_text)
    values = {"BASE_IMAGE": effective_base_image(target, inputs), VERSION_ARGS.get(target.backend): target.version}
    values.update({provided.build_arg: getattr(target, provided.key) for provided in PROVIDED_FILES})
    return {name: value for name, value in values.items() if name in declared and value}


def _write_context(entries: dict[str, Path | None], fileobj) -> None:
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for name, path in entries.items():
            if path is None:
                directory = tarfile.TarInfo(name)
                directory.type, directory.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(directory)
            else:
                tar.add(path, arcname=name, recursive=True)
    fileobj.seek(0)


def build_image(client: docker.DockerClient, target: Target, inputs: BuildInputs,
                log: Callable[[str], None] = print):
    """Build ``target``'s image and return it; raise ImageBuildError (with the log tail) when it cannot be built."""
    plan = plan_build(target, inputs)
    dockerfile, base = plan.dockerfile, plan.base_image
    base_present = base is not None and _image_present(client, base)
    log(f"{target.id}: building {image_tag(target)} from {dockerfile.parent} (base image {base}"
        f"{'' if base_present else ', not on this engine yet: the build will try to pull it'}; network {plan.network})")
    tail: collections.deque[str] = collections.deque(maxlen=BUILD_LOG_TAIL_LINES)
    labels = {LABEL_TARGET: target.id, LABEL_BASE_IMAGE: base or ""}
    with tempfile.TemporaryFile() as context:
        _write_context(plan.context, context)
        try:
            stream = client.api.build(fileobj=context, custom_context=True, tag=image_tag(target), rm=True,
                                      forcerm=True, network_mode=plan.network, buildargs=plan.buildargs,
                                      labels=labels, decode=True)
            for chunk in stream:
                for line in chunk.get("stream", "").splitlines():
                    if line.strip():
                        tail.append(line)
                        log(f"{target.id} build | {line}")
                if "error" in chunk:
                    tail.append(chunk["error"].strip())
                    raise ImageBuildError(_failure_message(target, dockerfile, chunk["error"], base, base_present),
                                          "\n".join(tail))
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise ImageBuildError(f"Target {target.id!r}: the Docker engine refused or dropped the build of "
                                  f"{image_tag(target)}: {err}", "\n".join(tail)) from err
    image = client.images.get(image_tag(target))
    log(f"{target.id}: built {describe_image(image)}")
    return image


def _failure_message(target: Target, dockerfile: Path, error: str, base: str | None, base_present: bool) -> str:
    message = f"Target {target.id!r}: building {image_tag(target)} from {dockerfile} failed: {error.strip()}"
    if not base_present:
        message += (f". The base image {base} is not on this engine and pulling it may be what failed: pull it where "
                    "its registry is reachable (docker pull, then docker save | docker load here), or pass another "
                    f"with `--base-image IMG` / {BASE_IMAGE_ENV}=IMG.")
    return message


def _image_present(client: docker.DockerClient, name: str) -> bool:
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(client: docker.DockerClient, target: Target, inputs: BuildInputs,
                 log: Callable[[str], None] = print):
    """The target's image: the one already on the engine, else a fresh build."""
    image = find_image(client, target)
    if image is not None:
        return image
    log(f"{target.id}: {image_tag(target)} is not built on this engine yet; building it now")
    return build_image(client, target, inputs, log)
