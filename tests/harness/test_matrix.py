"""matrix.yaml is validated on load; every error names the file, the key and what is allowed."""
import re

import pytest

from harness.matrix import DEFAULT_MATRIX, MatrixError, MatrixFile, default_target, load_hosts, load_matrix
from tests.conftest import REPO

GOOD_TARGET = "  t1:\n    title: T\n    backend: onnxruntime\n    runner: local\n    platform: any\n"
DOCKER_TRT = ("  t1:\n    title: T\n    backend: tensorrt\n    runner: docker\n    platform: x86_64\n"
              '    version: "10.0.1"\n    recipe: tensorrt\n    base_image: img:1\n    python: "3.10"\n'
              '    glibc: "2.35"\n')


def write(tmp_path, text):
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def test_the_shipped_matrix_has_the_mission_targets():
    targets = load_matrix(DEFAULT_MATRIX)
    assert default_target(targets).id == "ort-cpu"
    for version in ("86", "92", "100", "102"):
        for platform in ("x86", "orin"):
            assert f"trt{version}-{platform}" in targets
    assert not targets["trt92-orin"].available and "never released for Jetson" in targets["trt92-orin"].reason
    assert not targets["trt102-orin"].available and targets["trt102-orin"].reason
    assert targets["trt86-orin"].version == "8.6.2" and targets["trt86-x86"].version == "8.6.1"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("targets: [1, 2]\n", "non-empty mapping 'targets'"),
        ("targets:\n  t1:\n    title: T\n", "targets.t1: missing required key 'backend'"),
        (GOOD_TARGET + "    runner_typo: local\n", "targets.t1.runner_typo: unknown key. Allowed keys:"),
        (GOOD_TARGET.replace("runner: local", "runner: kubernetes"), "targets.t1.runner: 'kubernetes' is not allowed; use one of local, docker"),
        (GOOD_TARGET.replace("platform: any", "platform: arm"), "targets.t1.platform: 'arm' is not allowed"),
        (GOOD_TARGET.replace("onnxruntime", "tensorflow"), "targets.t1.backend: 'tensorflow' is not one of"),
        (GOOD_TARGET + "    available: false\n", "'available: false' needs a 'reason'"),
        (GOOD_TARGET + "    available: 'no'\n", "targets.t1.available: must be a bool, found str"),
        (GOOD_TARGET + "    docker_host: orin-01\n", "targets.t1.docker_host: 'orin-01' must start with one of"),
        (GOOD_TARGET.replace("runner: local", "runner: docker"),
         "targets.t1: a docker target needs 'version', 'recipe', 'base_image', 'python', 'glibc'"),
        (DOCKER_TRT.replace('    python: "3.10"\n', ""), "targets.t1: a docker target needs 'python'"),
        (DOCKER_TRT.replace('"3.10"', "3.10"), "targets.t1.python: must be a str, found float 3.1 (quote it)"),
        (DOCKER_TRT.replace('"3.10"', '"3.x"'), "targets.t1.python: '3.x' is not a quoted \"3.MINOR\""),
        (DOCKER_TRT.replace('"2.35"', '"glibc-2.35"'), "targets.t1.glibc: 'glibc-2.35' is not a quoted \"2.MINOR\""),
        (DOCKER_TRT + "    build_network: bridge\n", "targets.t1.build_network: 'bridge' is not allowed; use one of"),
        (DOCKER_TRT + "    min_driver: '545'\n", "targets.t1.min_driver: must be a int, found str"),
        (DOCKER_TRT + "    min_driver: true\n", "targets.t1.min_driver: must be a int, found bool"),
        (DOCKER_TRT + "    tensorrt_wheel: tensorrt>=9\n", "targets.t1.tensorrt_wheel: 'tensorrt>=9' is not a pin"),
        (DOCKER_TRT + "    tensorrt_tarball: /dl/TensorRT-10.tar.gz\n", "targets.t1.tensorrt_tarball: "
         "'/dl/TensorRT-10.tar.gz' is not a file name (no directory)"),
        (GOOD_TARGET + "    tensorrt_tarball: TensorRT-10.tar.gz\n",
         "targets.t1.tensorrt_tarball: only docker targets of backend tensorrt take it"),
        (GOOD_TARGET.replace("t1:", "T 1:"), "a target id must be lower-case"),
        ("targets:\n  t1: [1]\n", "targets.t1: must be a mapping"),
        ("targets: {a: b\n", "not valid YAML"),
        (GOOD_TARGET.replace("  t1:", "targets:\n  t1:") + "extra: 1\n", "unknown top-level key(s) ['extra']"),
        (GOOD_TARGET.replace("platform: any", "platform: thor") + "    gpu_arch: sm_87\n",
         "targets.t1.gpu_arch: every thor has sm_110, found 'sm_87'"),
        (GOOD_TARGET + "    gpu_arch: ampere\n", "targets.t1.gpu_arch: 'ampere' is not a quoted \"sm_MAJORMINOR\""),
        (GOOD_TARGET + "    gpu_arch: '8.7'\n", "targets.t1.gpu_arch: '8.7' is not a quoted \"sm_MAJORMINOR\""),
        (GOOD_TARGET + '    jetpack: "7.2"\n', "targets.t1.jetpack: only Jetson targets (platform orin or thor)"),
        (GOOD_TARGET.replace("platform: any", "platform: orin") + "    jetpack: JP7\n",
         "targets.t1.jetpack: 'JP7' is not a quoted JetPack release"),
        (GOOD_TARGET + "    dla_core: 0\n", "targets.t1.dla_core: a DLA core number (0 or more) of a tensorrt target"),
        (DOCKER_TRT + "    dla_core: -1\n", "targets.t1.dla_core: a DLA core number (0 or more)"),
        (DOCKER_TRT + "    sources: {cuda: 'https://example.org'}\n", "targets.t1.sources.cuda: a source names a key"),
        (DOCKER_TRT + "    sources: {cudaa: '[C] https://example.org'}\n", "targets.t1.sources.cudaa: a source names a key"),
        (DOCKER_TRT.replace("img:1", "nvcr.io/nvidia/tensorrt:26.02-py3-igpu"),
         "targets.t1.base_image: 'nvcr.io/nvidia/tensorrt:26.02-py3-igpu' is an `-igpu` tag"),
        (DOCKER_TRT.replace("img:1", "nvcr.io/nvidia/pytorch:25.08-py3-igpu@sha256:00"), "is an `-igpu` tag"),
    ],
)
def test_a_bad_matrix_names_the_file_and_the_key(tmp_path, text, expected):
    if not text.startswith("targets"):
        text = "targets:\n" + text
    path = write(tmp_path, text)
    with pytest.raises(MatrixError) as err:
        load_matrix(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_a_missing_matrix_says_how_to_point_at_one(tmp_path):
    with pytest.raises(MatrixError, match="no such file. Pass --matrix"):
        load_matrix(tmp_path / "nope.yaml")


HOSTS_OK = "hosts:\n  cpu:\n    title: CPU\n    labels: [self-hosted, cpu]\n    targets: [t1]\n"


def test_the_shipped_hosts_run_every_target_but_the_hand_run_local_tensorrt():
    from harness.matrix import load_hosts

    hosts = load_hosts(DEFAULT_MATRIX)
    assigned = {target for host in hosts.values() for target in host.targets}
    assert set(load_matrix(DEFAULT_MATRIX)) - assigned == {"trt-local"}
    assert "trt86-orin" in hosts["orin-jp6.0"].targets and "self-hosted" in hosts["x86-gpu"].labels


@pytest.mark.parametrize(
    "hosts, expected",
    [
        ("hosts:\n  cpu:\n    title: CPU\n    labels: [self-hosted]\n    targets: [t9]\n",
         "hosts.cpu.targets: ['t9'] are not targets of this file; known: t1"),
        ("hosts:\n  cpu:\n    title: CPU\n    targets: [t1]\n", "hosts.cpu: missing required key 'labels'"),
        ("hosts:\n  cpu:\n    title: CPU\n    labels: []\n    targets: [t1]\n",
         "hosts.cpu.labels: must be a non-empty list of strings"),
        ("hosts:\n  CPU Box:\n    title: CPU\n    labels: [x]\n    targets: [t1]\n",
         "hosts.CPU Box: a host kind must be lower-case letters"),
        ("hosts:\n  cpu:\n    title: CPU\n    labels: [x]\n    targets: [t1]\n    gpu: yes\n",
         "hosts.cpu.gpu: unknown key"),
    ],
)
def test_a_bad_hosts_section_names_the_file_and_key(tmp_path, hosts, expected):
    from harness.matrix import load_hosts

    path = write(tmp_path, "targets:\n" + GOOD_TARGET + hosts)
    with pytest.raises(MatrixError) as err:
        load_hosts(path)
    assert f"{path}: {expected}" in str(err.value)
    assert load_hosts(write(tmp_path, "targets:\n" + GOOD_TARGET + HOSTS_OK))["cpu"].targets == ("t1",)


def test_the_shipped_titles_repeat_only_what_the_target_says():
    """Titles name version, image and CUDA for the report's readers: they must not drift from the keys."""
    for target in load_matrix(DEFAULT_MATRIX).values():
        if target.version:
            major_minor = ".".join(target.version.split(".")[:2])
            assert re.search(rf"\b{re.escape(major_minor)}\b", target.title), (target.id, target.title)
        for image in re.findall(r"[\w.-]+:[\w.-]+", target.title):
            assert target.base_image and target.base_image.rsplit("/", 1)[-1] == image, (target.id, target.title)
        for cuda in re.findall(r"CUDA ([\d.]+)", target.title):
            assert target.cuda and target.cuda.startswith(cuda), (target.id, target.title)


def test_a_host_kind_that_names_its_driver_names_one_every_target_of_it_runs_on():
    targets = load_matrix(DEFAULT_MATRIX)
    checked = 0
    for host in load_hosts(DEFAULT_MATRIX).values():
        for driver in re.findall(r"driver >= (\d+)", host.title):
            needed = max((targets[t].min_driver or 0) for t in host.targets)
            assert int(driver) >= needed, f"hosts.{host.id} says driver >= {driver}; its targets need {needed}"
            checked += 1
    assert checked


def test_a_jetson_target_expects_its_platforms_gpu_and_an_x86_one_any_unless_it_names_one(tmp_path):
    targets = load_matrix(write(tmp_path, "targets:\n" + GOOD_TARGET.replace("platform: any", "platform: thor")
                                + GOOD_TARGET.replace("t1:", "t2:") + GOOD_TARGET.replace("t1:", "t3:")
                                + "    gpu_arch: sm_89\n"))
    assert [t.gpu_arch for t in targets.values()] == ["sm_110", "any", "sm_89"]
    assert targets["t3"].to_job()["gpu_arch"] == "sm_89"  # what the worker compares the observed GPU with


def test_the_shipped_2026_targets_cover_the_moves_a_deployment_engineer_plans():
    """TensorRT 10.3 -> 11.x on x86; JetPack 6 -> 7 on Orin (DLA included); Orin -> Thor on JetPack 7."""
    targets = load_matrix(DEFAULT_MATRIX)
    x86 = {t.version for t in targets.values() if t.platform == "x86_64" and t.backend == "tensorrt"}
    assert {"10.3.0", "10.7.0", "10.13.3", "10.16.1", "11"} <= x86
    orin = {(t.jetpack, t.version, t.dla_core) for t in targets.values() if t.platform == "orin"}
    assert {("6.1", "10.3.0", None), ("6.1", "10.7.0", None), ("7.2", "10.16", None), ("7.2.2", "11.4.1", None),
            ("6.1", "10.3.0", 0), ("6.1", "10.7.0", 0), ("7.2", "10.16", 0), ("7.2.2", "11.4.1", 0)} <= orin
    thor = {(t.jetpack, t.version) for t in targets.values() if t.platform == "thor" and t.dla_core is None}
    assert thor == {("7.0", "10.13.3"), ("7.2", "10.16"), ("7.2.2", "11.4.1")}
    assert {t.gpu_arch for t in targets.values() if t.platform == "thor"} == {"sm_110"}
    assert {t.gpu_arch for t in targets.values() if t.platform == "orin"} == {"sm_87"}


def test_dla_targets_are_available_exactly_where_nvidia_documents_dla():
    """Orin up to 10.7 and from 11.4.1 (JetPack 7.2.2+); never 10.16's SBSA build, never Thor: those are unavailable
    with NVIDIA's reason, so their cells are `unavailable`, never `fail`."""
    from harness.tensorrt.release_facts import dla_absent

    dla = [t for t in load_matrix(DEFAULT_MATRIX).values() if t.dla_core is not None]
    assert dla
    for target in dla:
        absent = dla_absent(target.version, target.platform)
        assert target.available is (absent is None), (target.id, absent)
        if absent is not None:
            assert any(source in target.reason for source in absent.sources), (target.id, target.reason)


def test_every_unavailable_target_says_where_its_reason_comes_from():
    for target in load_matrix(DEFAULT_MATRIX).values():
        if not target.available:
            assert re.search(r"platforms(-2026)?\.md|https://", target.reason), (target.id, target.reason)


def test_no_shipped_target_builds_from_an_igpu_image():
    """The -igpu tags ended after 26.02 and a 26.02 -igpu image fails on JetPack 7: JetPack 7 takes SBSA images."""
    for target in load_matrix(DEFAULT_MATRIX).values():
        assert "-igpu" not in (target.base_image or ""), target.id
        if target.platform in ("orin", "thor") and target.jetpack and target.jetpack.startswith("7"):
            assert "l4t-" not in (target.base_image or ""), f"{target.id}: JetPack 7 runs SBSA images, not L4T ones"


def test_a_jetson_host_kind_runs_only_targets_of_its_board_and_jetpack():
    """A runner labelled jetson-thor / jetpack-7.2 takes Thor targets of JetPack 7.2.x only: an image of another L4T
    release may not start there (r36 images split at 36.4; JetPack 7 needs SBSA images)."""
    targets = load_matrix(DEFAULT_MATRIX)
    checked = 0
    for host in load_hosts(DEFAULT_MATRIX).values():
        boards = [label.removeprefix("jetson-") for label in host.labels if label.startswith("jetson-")]
        releases = [label.removeprefix("jetpack-") for label in host.labels if label.startswith("jetpack-")]
        for target in (targets[t] for t in host.targets):
            if not boards:
                assert target.platform not in ("orin", "thor") or not target.available, (host.id, target.id)
                continue
            assert [target.platform] == boards, (host.id, target.id)
            assert target.jetpack and (target.jetpack + ".").startswith(releases[0] + "."), (host.id, target.id)
            checked += 1
    assert checked >= 10


def test_the_matrix_a_command_reads_is_the_named_one_else_the_one_here_else_its_own(tmp_path):
    from harness.matrix import find_matrix

    named = tmp_path / "elsewhere.yaml"
    assert find_matrix(None, cwd=tmp_path) == MatrixFile(DEFAULT_MATRIX, "installed")
    (tmp_path / "matrix.yaml").write_text("")
    assert find_matrix(None, cwd=tmp_path) == MatrixFile(tmp_path / "matrix.yaml", "current directory")
    assert find_matrix(named, cwd=tmp_path) == MatrixFile(named, "--matrix")  # named: not checked here, read later


def test_a_checkout_reads_its_own_files_and_only_shipped_paths_are_asked_for():
    from harness.shipped import checkout_root, shipped_path

    assert DEFAULT_MATRIX == REPO / "matrix.yaml" and checkout_root() == REPO
    assert shipped_path("reference/trt-api") == REPO / "reference" / "trt-api"
    with pytest.raises(ValueError, match="setup.py ships them"):
        shipped_path("reference/trt-logs")  # test data: not shipped
