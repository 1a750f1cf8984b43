"""The planning view's columns for many targets: each target's release, columns of one release together, and what
the default view shows."""
import dataclasses

from reports.columns import plan_lines
from reports.planning import plan_targets
from reports.tables import matrix_columns, release_of


@dataclasses.dataclass(frozen=True)
class Declared:
    """What matrix.yaml says about a target (the fields the report reads)."""

    id: str
    title: str
    platform: str
    version: str | None
    base_image: str | None = None
    available: bool = True
    reason: str | None = None
    backend: str = "tensorrt"


def test_a_release_is_read_from_matrix_yaml_first_then_the_base_image_then_the_title():
    class WithRelease(Declared):
        release = "JetPack 7.2.2"

    ngc = Declared("trt103-x86", "TensorRT 10.3", "x86_64", "10.3.0", "nvcr.io/nvidia/tensorrt:24.08-py3")
    l4t = Declared("trt103-orin", "TensorRT 10.3 (JetPack 6.1)", "orin", "10.3.0", "nvcr.io/nvidia/l4t-jetpack:r36.4.0")
    assert release_of(ngc) == "NGC 24.08"
    assert release_of(l4t) == "L4T R36.4"
    assert release_of(Declared("trt-x", "TensorRT 10.3 on JetPack 6.1", "orin", "10.3.0")) == "JetPack 6.1"
    declared = WithRelease("trt114-orin", "TensorRT 11.4.1", "orin", "11.4.1", l4t.base_image)
    assert release_of(declared) == "JetPack 7.2.2"
    assert release_of(Declared("ort", "ONNX Runtime", "any", None, "python:3.11-slim", backend="onnxruntime")) is None


def test_a_jetpack_7_target_on_an_sbsa_image_is_in_its_jetpack_release_not_the_ngc_image_s():
    """JetPack 7 runs NGC's SBSA images: a Jetson target names its JetPack, which is what a planner moves between;
    a JetPack 6 target keeps its L4T release, read from its image."""

    @dataclasses.dataclass(frozen=True)
    class OnJetson(Declared):
        jetpack: str | None = None

    thor = OnJetson("trt1016-thor", "TensorRT 10.16 on Thor", "thor", "10.16", "nvcr.io/nvidia/tensorrt:26.04-py3",
                    jetpack="7.2")
    orin = OnJetson("trt103-orin", "TensorRT 10.3 (JetPack 6.1)", "orin", "10.3.0",
                    "nvcr.io/nvidia/l4t-jetpack:r36.4.0", jetpack="6.1")
    assert (release_of(thor), release_of(orin)) == ("JetPack 7.2", "L4T R36.4")


def test_columns_of_one_release_stand_together_and_a_title_only_jetpack_joins_its_l4t_release():
    image = "nvcr.io/nvidia/l4t-jetpack:r{}"
    declared = [
        Declared("trt86-orin", "TensorRT 8.6.2 (JetPack 6.0)", "orin", "8.6.2", image.format("36.3.0")),
        Declared("trt92-orin", "TensorRT 9.2", "orin", "9.2.0", available=False, reason="never released"),
        Declared("trt100-orin", "TensorRT 10.0.1 + tarball", "orin", "10.0.1", image.format("36.3.0")),
        Declared("trt1016-orin-dla", "TensorRT 10.16 DLA (JetPack 7.2)", "orin", "10.16.1", available=False,
                 reason="no DLA"),
        Declared("trt1016-orin", "TensorRT 10.16.1 (JetPack 7.2)", "orin", "10.16.1", image.format("39.2.0")),
    ]
    columns = matrix_columns({t.id: t for t in declared}, [])
    assert [(c.target, c.release) for c in columns] == [
        ("trt86-orin", "L4T R36.3"), ("trt100-orin", "L4T R36.3"), ("trt92-orin", None),
        ("trt1016-orin", "L4T R39.2"), ("trt1016-orin-dla", "L4T R39.2")]
    (line,) = plan_lines(plan_targets(columns), columns, observed={"trt86-orin"})
    assert [(g.release, g.targets, g.default) for g in line.groups] == [
        ("JetPack 6.0 · L4T R36.3", ("trt86-orin", "trt100-orin"), ("trt86-orin",)),
        ("", ("trt92-orin",), ()),
        ("JetPack 7.2 · L4T R39.2", ("trt1016-orin", "trt1016-orin-dla"), ("trt1016-orin",)),  # no DLA on 10.16
    ]
    # a target a recommendation names is shown, whatever its release; one that cannot exist never by default
    (line,) = plan_lines(plan_targets(columns), columns, observed=(), recommended={"trt100-orin", "trt1016-orin-dla"})
    assert [g.default for g in line.groups] == [("trt100-orin",), (), ("trt1016-orin",)]


def test_a_planning_column_names_the_gpu_architectures_its_records_observed(tmp_path):
    """Two hosts of one target with different GPUs: the column names both compute capabilities."""
    from reports.columns import observed_architectures
    from harness.matrix import load_matrix
    from tests.reports.conftest import make_record

    records = []
    for host, cap in (("a10-01", "8.6"), ("h100-01", "9.0")):
        record = make_record("s1-conv-silu", "stem", "trt86-x86", "pass", provenance={"run": f"r-{host}", "host": host,
                                                                                      "carried_over_from": None})
        record["environment"] = {**record["environment"],
                                 "gpus": [{"name": "NVIDIA GPU", "compute_cap": cap, "driver_version": "550.54"}]}
        records.append(record)
    columns = matrix_columns({"trt86-x86": load_matrix()["trt86-x86"]}, records)
    assert observed_architectures(columns) == {"trt86-x86": ("sm 8.6", "sm 9.0")}
