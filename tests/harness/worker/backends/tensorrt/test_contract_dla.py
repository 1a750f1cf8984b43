"""A DLA target (``dla_core`` in matrix.yaml) against the CONTRACT STAND-IN of each recorded TensorRT version.

Where NVIDIA documents DLA on Jetson AGX Orin for the version, every cell builds for DLA core 0 with GPU fallback
through Polygraphy's CreateConfig (default device type DLA, DLA_core, BuilderFlag.GPU_FALLBACK); elsewhere every cell is
`unavailable` with NVIDIA's reason, never a failure. The stand-in logs nothing, so no node's device is ever known here:
the record must say so rather than guess.
"""

from harness.worker.backends.base import BackendFailure
from harness.tensorrt.release_facts import dla_absent
from tests.trt_contract.backend_run import (
    DLA_TARGET,
    BackendUpToInference,
    answers_that_let_the_path_continue,
    network_shaped_like_the_model,
    run,
)
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


def test_a_dla_target_builds_for_dla_core_0_with_gpu_fallback_or_is_unavailable_with_nvidias_reason(standin, cells,
                                                                                                     tmp_path):
    cell = cells["explicit-qdq"]
    reason = BackendUpToInference(DLA_TARGET).unavailable_reason(cell)
    absent = dla_absent(standin.version, "orin")
    if absent is not None:
        assert reason.startswith("Unavailable: DLA core 0 was asked for.") and absent.statement in reason
        assert all(source in reason for source in absent.sources)
        return
    assert reason is None
    execution = run(cell, tmp_path, DLA_TARGET)
    assert [c.args[0] for c in standin.calls_to("IBuilderConfig.default_device_type", "set")] == [
        standin.enum("DeviceType.DLA")]
    assert [c.args[0] for c in standin.calls_to("IBuilderConfig.DLA_core", "set")] == [0]
    assert standin.enum("BuilderFlag.GPU_FALLBACK") in [c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]
    recorded = execution.details["tensorrt_calls"]["config"]["dla"]
    assert recorded == {"default_device_type": "DeviceType.DLA", "DLA_core": 0, "gpu_fallback": True,
                        "also_set_by_polygraphy": "BuilderFlag.PREFER_PRECISION_CONSTRAINTS"}  # every DLA version < 11
    assert standin.enum("BuilderFlag.PREFER_PRECISION_CONSTRAINTS") in [
        c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]
    # The stand-in's build logs no "Layers Running on DLA" list: no device is invented for any node.
    assert execution.details["devices"] == {} and execution.details["dla_fallback_nodes"] == []
    assert execution.details["dla_unverified_nodes"] == cell["expected_int8"]
    assert "no node's device is known" in execution.details["dla_placement_note"]


def test_a_gpu_target_sets_no_dla_setting(standin, cells, tmp_path):
    execution = run(cells["explicit-qdq"], tmp_path)
    assert not standin.calls_to("IBuilderConfig.default_device_type", "set")
    assert not standin.calls_to("IBuilderConfig.DLA_core", "set")
    assert "dla" not in execution.details["tensorrt_calls"]["config"] and "devices" not in execution.details


def test_another_dla_core_is_set_after_polygraphy_sets_core_0(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        run(cells["explicit-qdq"], tmp_path, {**DLA_TARGET, "dla_core": 1})
    assert [c.args[0] for c in standin.calls_to("IBuilderConfig.DLA_core", "set")] == [0, 1]


def test_thor_and_a_device_without_dla_cores_make_every_dla_cell_unavailable(cells):
    standin = ContractStandIn.for_version("10.3.0")
    with installed_as_tensorrt(standin):
        thor = BackendUpToInference({**DLA_TARGET, "platform": "thor"})
        assert "Jetson Thor has no DLA" in thor.unavailable_reason(cells["explicit-qdq"])
        orin = BackendUpToInference(DLA_TARGET)
        orin.dla_cores = 0  # what the GPU probe counts on an Orin whose TensorRT build has no DLA
        reason = orin.unavailable_reason(cells["explicit-qdq"])
        assert "counts 0 DLA core(s) on this device (Builder.num_DLA_cores)" in reason
        orin.dla_cores = 2
        assert orin.unavailable_reason(cells["explicit-qdq"]) is None


def test_tensorrt_11_4_1_restores_dla_and_keeps_the_network_strongly_typed(cells, tmp_path):
    """DERIVED surface: the 11.4.0.106 API presented as 11.4.1 (no 11.4.1 surface is recorded; 11.4.1's notes add DLA
    on AGX Orin, not API names). DLA builds on 11.4.1 are strongly typed, as every 11.x build."""
    standin = ContractStandIn.for_version("11.4.0.106")
    standin.module.__version__ = "11.4.1"  # what the backend reads the release from
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        backend = BackendUpToInference(DLA_TARGET)
        assert backend.unavailable_reason(cells["explicit-qdq"]) is None
        assert backend.unavailable_reason(cells["implicit-int8"]).startswith("Unsupported: implicit INT8")
        execution = run(cells["explicit-qdq"], tmp_path, DLA_TARGET)
    assert execution.details["tensorrt_calls"]["network"]["strongly_typed"]["set"] is True
    assert "also_set_by_polygraphy" not in execution.details["tensorrt_calls"]["config"]["dla"]
    assert [c.args[0] for c in standin.calls_to("IBuilderConfig.default_device_type", "set")] == [
        standin.enum("DeviceType.DLA")]


def test_every_library_cell_on_a_dla_target_runs_or_is_unavailable_or_unsupported(standin, library_cells, tmp_path):
    # Test fake: AGX Orin's two DLA cores. Polygraphy asks for them when a cell forbids GPU fallback (P20's
    # dla-no-fallback); the stand-in alone would answer 0, a device a real run marks unavailable before building.
    standin.on("Builder.num_DLA_cores", 2)
    backend = BackendUpToInference(DLA_TARGET)
    for cell in library_cells:
        if backend.unavailable_reason(cell):
            continue
        standin.calls.clear()
        network_shaped_like_the_model(standin, cell)
        try:
            execution = run(cell, tmp_path / cell["variant"], DLA_TARGET)
        except BackendFailure as failure:
            assert failure.category == "unsupported-api", failure.message
            continue
        dla = execution.details["tensorrt_calls"]["config"].get("dla")
        # Every cell builds for the target's DLA core, except one whose knobs ask for the GPU (P20's gpu-only).
        assert dla is None if cell["knobs"].get("gpu_only") else dla["DLA_core"] == 0, cell["variant"]


# Test fakes on top of the 10.3.0 stand-in: an engine of one DLA region (the conv and its quantizers) and a GPU
# layer (the ReLU), and the builder's lists placing them. The region's boundary (INT8 in, FP32 out) does not show
# what ran inside; read as a Myelin region (the lowest float at its boundary), the conv would be FP32.
DLA_REGION = "{ForeignNode[/conv/_input_quantizer/QuantizeLinear.../conv/Conv]}"
ENGINE = {"Layers": [
    {"Name": DLA_REGION, "LayerType": "DLA",
     "Inputs": [{"Name": "x", "Format/Datatype": "Row major linear Int8"}],
     "Outputs": [{"Name": "/conv/Conv_output_0", "Format/Datatype": "Row major linear FP32"}]},
    {"Name": "/act/Relu", "LayerType": "PointWise",
     "Inputs": [{"Name": "/conv/Conv_output_0", "Format/Datatype": "Row major linear FP32"}],
     "Outputs": [{"Name": "/act/Relu_output_0", "Format/Datatype": "Row major linear FP32"}]}]}
BUILDER_LISTS = ("[I] [TRT] ---------- Layers Running on DLA ----------\n"
                 f"[I] [TRT] [DlaLayer] {DLA_REGION}\n"
                 "[I] [TRT] ---------- Layers Running on GPU ----------\n"
                 "[I] [TRT] [GpuLayer] POINTWISE: /act/Relu\n")


def test_nodes_in_a_dla_region_are_placed_on_the_dla_and_their_precision_unverified_not_a_fallback(
        cells, tmp_path, monkeypatch):
    import json

    from harness.worker.backends.tensorrt.capture import CellCapture

    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("EngineInspector.get_engine_information", json.dumps(ENGINE))
    monkeypatch.setattr(CellCapture, "tensorrt_text", lambda self: BUILDER_LISTS)
    with installed_as_tensorrt(standin):
        execution = run(cells["explicit-qdq"], tmp_path, DLA_TARGET)
    assert execution.details["devices"]["/conv/Conv"] == "dla" and execution.details["devices"]["/act/Relu"] == "gpu"
    assert execution.details["dla_fallback_nodes"] == ["/act/Relu"] and execution.details["dla_unverified_nodes"] == []
    info = execution.details["layer_information"]
    assert DLA_REGION in info["dla_regions"] and "myelin_regions" not in info
    # Read as a Myelin region, the conv would be a fallback; on the DLA its precision is not known: unverified.
    assert execution.precision["/conv/Conv"] == "unknown"
    assert info["fallback"] == () and info["unverified"] == ("/conv/Conv",)


def test_a_cells_dla_knobs_build_it_for_dla_even_on_a_gpu_target_and_without_fallback_when_it_says_so(cells,
                                                                                                      tmp_path):
    """A case about DLA (knobs dla_core, gpu_fallback) on an Orin GPU target: DLA core 0, GPU fallback only if asked;
    on x86 such a cell cannot exist."""
    cell = {**cells["explicit-qdq"], "knobs": {**cells["explicit-qdq"]["knobs"], "dla_core": 0, "gpu_fallback": False}}
    orin = {"id": "trt103-orin", "backend": "tensorrt", "platform": "orin"}
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("Builder.num_DLA_cores", 2)  # test fake: AGX Orin's two DLA cores (Polygraphy asks without fallback)
    with installed_as_tensorrt(standin):
        assert BackendUpToInference(orin).unavailable_reason(cell) is None
        execution = run(cell, tmp_path, orin)
        x86 = BackendUpToInference({**orin, "platform": "x86_64"}).unavailable_reason(cell)
    assert [c.args[0] for c in standin.calls_to("IBuilderConfig.default_device_type", "set")] == [
        standin.enum("DeviceType.DLA")]
    flags = [c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]
    assert standin.enum("BuilderFlag.GPU_FALLBACK") not in flags and standin.enum("BuilderFlag.DIRECT_IO") in flags
    assert execution.details["tensorrt_calls"]["config"]["dla"]["gpu_fallback"] is False
    assert "devices" in execution.details
    assert "platform x86_64 has none" in x86


def test_p20s_variants_choose_their_device_on_a_dla_target_and_on_a_plain_orin_target(library_cells, tmp_path):
    """The DLA case's knobs win over the target: on the DLA target and on the plain Orin GPU target alike, its DLA
    variants build for DLA core 0 (GPU fallback as each asks) and gpu-only for the GPU, never a second DLA build."""
    p20 = {cell["variant"]: cell for cell in library_cells if cell["case"] == "p20-orin-dla-fallback"}
    orin = {"id": "trt103-orin", "backend": "tensorrt", "platform": "orin"}
    expected = {"as-reported": (0, True), "dla-no-fallback": (0, False), "nearest-resize": (0, True),
                "gpu-only": (None, None)}
    assert set(p20) == set(expected)
    for target in (DLA_TARGET, orin):
        seen = {}
        for name, cell in p20.items():
            standin = ContractStandIn.for_version("10.3.0")
            answers_that_let_the_path_continue(standin)
            standin.on("Builder.num_DLA_cores", 2)  # test fake: AGX Orin's two DLA cores
            with installed_as_tensorrt(standin):
                execution = run(cell, tmp_path / target["id"] / name, target)
            dla = execution.details["tensorrt_calls"]["config"].get("dla", {})
            seen[name] = (dla.get("DLA_core"), dla.get("gpu_fallback"))
            device_set = [c.args[0] for c in standin.calls_to("IBuilderConfig.default_device_type", "set")]
            assert device_set == ([] if name == "gpu-only" else [standin.enum("DeviceType.DLA")]), (target, name)
        assert seen == expected, target["id"]
