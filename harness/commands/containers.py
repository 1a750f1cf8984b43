"""``trt-matrix containers ...``: prepare wheelhouses, build worker images, list them."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from harness.commands.options import (
    EXIT_BROKEN, EXIT_OK, CommandError, add_host_kind_argument, add_target_argument,
)
from harness.matrix import Target, load_matrix
from harness.orchestration.docker.wheelhouse import DEFAULT_WHEELHOUSE

CONTAINERS_DESCRIPTION = """\
Docker targets of matrix.yaml (runner: docker) run in one container per target, from an image built out of
containers/<recipe>/. Builds are air-gapped: they install Python packages only from wheelhouse/<target>/, which
`containers wheelhouse` downloads on a host that reaches PyPI. `trt-matrix run --target ID` builds a missing
image by itself; build it first to see the build log as it happens.

  trt-matrix containers wheelhouse --target ort1.20-cpu
  trt-matrix containers build ort1.20-cpu --base-image trt-matrix/debian-python:bookworm
  trt-matrix containers list
  trt-matrix run --target ort1.20-cpu --cases out/cases --results out/results.jsonl

The Docker engine is DOCKER_HOST (or the local socket), or the target's docker_host in matrix.yaml
(ssh://user@jetson, tcp://host:2376).
"""


def _docker_targets(args) -> dict[str, Target]:
    return {tid: t for tid, t in load_matrix(args.matrix).items() if t.runner == "docker"}


def _chosen(args, wanted: list[str] | None) -> list[Target]:
    """The docker targets ``wanted`` (main checked their ids), else every available one."""
    targets = _docker_targets(args)
    if wanted:
        return [targets[tid] for tid in wanted]
    return [t for t in targets.values() if t.available]


def _of_host_kind(args) -> list[str] | None:
    """--target ids, else the available docker targets of --host-kind (None: neither was given)."""
    if args.target or not args.host_kind:
        return args.target
    from harness.matrix import load_hosts

    hosts = load_hosts(args.matrix)
    docker = _docker_targets(args)
    return [t for t in hosts[args.host_kind].targets if t in docker and docker[t].available]


def cmd_wheelhouse(args) -> int:
    from harness.orchestration.docker.wheelhouse import (
        WheelhouseError,
        fill_wheelhouse,
        pip_download_command,
        wheelhouse_spec,
    )

    wanted = _of_host_kind(args)
    if wanted == []:
        print(f"host kind {args.host_kind!r} has no docker target to prepare a wheelhouse for")
        return EXIT_OK
    failed = []
    for target in _chosen(args, wanted):
        try:
            spec = wheelhouse_spec(target, python_version=args.python_version, machine=args.machine)
            if args.print_only:
                print(shlex.join(pip_download_command(spec, args.out / target.id)))
                continue
            fill_wheelhouse(spec, args.out / target.id, log=lambda line: print(line, flush=True))
        except WheelhouseError as err:
            print(f"error: {err}", file=sys.stderr)
            failed.append(target.id)
    if failed:
        print(f"wheelhouse not prepared for: {', '.join(failed)}", file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_OK


def cmd_build(args) -> int:
    from harness.orchestration.docker.containers import EngineUnreachable, engine_client
    from harness.orchestration.docker.images import (
        BuildInputs,
        ImageBuildError,
        build_image,
        describe_build,
    )

    target = _chosen(args, [args.target])[0]
    if not target.available:
        raise CommandError(f"{target.id} is marked unavailable in {args.matrix}: {target.reason}")
    from_env = BuildInputs.from_env()
    inputs = BuildInputs(
        recipes_dir=from_env.recipes_dir,
        wheelhouse_dir=args.wheelhouse or from_env.wheelhouse_dir,
        base_image=args.base_image or from_env.base_image,
        provided_files=tuple(args.tensorrt_tarball or []) or from_env.provided_files,
        network=args.network,
    )
    if args.dry_run:
        try:
            print("\n".join(describe_build(target, inputs).lines()))
        except ImageBuildError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_BROKEN
        return EXIT_OK
    try:
        client, url = engine_client(target)
        build_image(client, target, inputs, log=lambda line: print(line, flush=True))
    except (EngineUnreachable, ImageBuildError) as err:
        print(f"error: {err.describe() if isinstance(err, ImageBuildError) else err}", file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_OK


def cmd_list(args) -> int:
    from harness.orchestration.docker.containers import EngineUnreachable, engine_client
    from harness.orchestration.docker.images import (
        describe_image,
        find_image,
        image_tag,
    )

    print(f"{'target':<14} {'recipe':<12} {'engine':<28} {'image':<32} state")
    for target in _docker_targets(args).values():
        if not target.available:
            print(f"{target.id:<14} {'-':<12} {'-':<28} {'-':<32} unavailable: {target.reason}")
            continue
        try:
            client, url = engine_client(target)
            image = find_image(client, target)
            state = f"built {describe_image(image).split()[0][:19]}" if image else "not built"
        except EngineUnreachable as err:
            url, state = target.docker_host or "(DOCKER_HOST)", f"engine unreachable: {str(err).splitlines()[0]}"
        print(f"{target.id:<14} {target.recipe:<12} {url:<28} {image_tag(target):<32} {state}")
    return EXIT_OK


def add_container_commands(commands) -> None:
    parser = commands.add_parser("containers", help="wheelhouses and worker images for docker targets",
                                 description=CONTAINERS_DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="containers_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser(
        "wheelhouse", help="download the wheels each target's image installs (host side, needs PyPI)",
        description="Download, for each docker target, the wheels its recipe installs into OUT/<target>/ and write "
        "OUT/<target>/requirements.txt. Wheels are chosen for the Python, glibc and CPU of the recipe's base image "
        "(aarch64 for Jetson targets: Orin, Thor), not this host's, so an x86 host can prepare a Jetson's "
        "wheelhouse. trt92-x86 also downloads TensorRT 9.2 from NVIDIA's index, the trt114-* targets TensorRT 11.4.1: "
        "run them on a host that reaches it. Copy OUT to an air-gapped build host as it is.")
    add_target_argument(p, "--target", action="append", metavar="ID", docker=True,
                        help="a docker target id (repeat for several; default: every available docker target)")
    add_host_kind_argument(p, help="the available docker targets of this host kind of matrix.yaml's hosts section "
                           "(what `nightly --host-kind KIND` runs)")
    p.add_argument("--out", type=Path, default=DEFAULT_WHEELHOUSE, help="wheelhouse root (default: %(default)s)")
    p.add_argument("--python-version", help="Python of a base image you pass with --base-image (default: the "
                   "target's python in matrix.yaml, e.g. 3.11 for ort1.20-cpu, 3.8 for trt85-orin)")
    p.add_argument("--machine", choices=("x86_64", "aarch64"), help="CPU of the build host (default: from the "
                   "target's platform: aarch64 on Orin and Thor)")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the pip download commands instead of running them")
    p.set_defaults(func=cmd_wheelhouse)

    p = sub.add_parser(
        "build", help="build a target's worker image",
        description="Build TARGET's image (tag trt-matrix/worker:TARGET) from containers/<recipe>/ and "
        "wheelhouse/TARGET/, with networking off (trt92-x86 excepted: apt installs Python there), on the target's "
        "engine: its docker_host, else DOCKER_HOST, else the local socket (so an Orin image built from an x86 host "
        "with DOCKER_HOST=ssh://user@jetson is built on the Jetson). The build log streams here; a failed build "
        "prints its last lines. The base image is --base-image, else env BASE_IMAGE, else the target's base_image "
        "in matrix.yaml (platforms.md); another base image must have the target's python, since the wheelhouse was "
        "downloaded for it.")
    add_target_argument(p, "target", metavar="TARGET", docker=True, help="a docker target id of matrix.yaml")
    p.add_argument("--base-image", metavar="IMG", help="base image instead of the target's base_image (env BASE_IMAGE)")
    p.add_argument("--wheelhouse", type=Path, metavar="DIR",
                   help="wheelhouse root holding TARGET/ (env TRT_MATRIX_WHEELHOUSE; default: wheelhouse/)")
    p.add_argument("--tensorrt-tarball", type=Path, action="append", metavar="PATH",
                   help="TensorRT tarball a recipe needs (trt100-orin: TensorRT-10.0.1.6.l4t.aarch64-gnu.cuda-12.4"
                   ".tar.gz; env TRT_MATRIX_TENSORRT_TARBALL)")
    p.add_argument("--network", choices=("none", "default", "host"),
                   help="network of the build's RUN steps (default: the target's build_network in matrix.yaml, "
                   "else none)")
    p.add_argument("--dry-run", action="store_true",
                   help="show the build instead of running it: base image, build args, wheelhouse and what it "
                   "installs, files passed by path, and the recipe's steps with the build args filled in (no Docker "
                   "engine is asked; a missing wheelhouse or tarball is named, not an error)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("list", help="docker targets, their recipe, engine, image tag and whether it is built",
                       description="For every docker target: recipe, Docker engine, image tag and whether the image "
                       "exists on that engine (asks each engine; an unreachable one is reported, not fatal).")
    p.set_defaults(func=cmd_list)

