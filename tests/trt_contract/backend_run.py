"""Driving the TensorRT backend against the contract stand-in: test fakes on top of the stand-in (each says what it
pretends TensorRT answered) and a run of a cell that stops before inference (a stand-in engine cannot run)."""
from __future__ import annotations

import json
from pathlib import Path

from harness.worker.backends.base import BackendFailure, Execution, StageTracker
from harness.worker.backends.tensorrt.backend import TensorRTBackend
from harness.worker.casedata import load_arrays
from tests.trt_contract.standin import ContractStandIn

TARGET = {"id": "trt-contract", "backend": "tensorrt"}
DLA_TARGET = {"id": "trt-contract-dla", "backend": "tensorrt", "platform": "orin", "dla_core": 0}


class BackendUpToInference(TensorRTBackend):
    """The backend with inference replaced: a stand-in engine cannot run, so the path under test ends at inspect."""

    def _infer(self, engine, inputs):
        return {}


def answers_that_let_the_path_continue(standin: ContractStandIn) -> None:
    """Test fake on top of the stand-in: the parser reports a successful parse and the flags set through it; the engine
    inspector reports an engine without layers (valid JSON, so the layer reader runs; no precision comes of it)."""

    def get_flag(parser, flag):
        for call in reversed(standin.calls):
            if call.obj is parser and call.api == "OnnxParser.flags" and call.action == "set":
                return bool(call.args[0] & (1 << int(flag)))
            toggles = ("OnnxParser.clear_flag", "OnnxParser.set_flag")
            if call.obj is parser and call.api in toggles and call.args[0] == flag:
                return call.api == "OnnxParser.set_flag"
        return False

    standin.on("OnnxParser.parse_from_file", True)
    standin.on("OnnxParser.get_flag", get_flag)
    standin.on("EngineInspector.get_engine_information", json.dumps({"Layers": [], "Bindings": []}))


def with_knobs(cell: dict, **knobs) -> dict:
    return {**cell, "knobs": {**cell["knobs"], **knobs}}


def run(cell: dict, tmp_path: Path, target: dict = TARGET) -> Execution:
    """Preload the backend and run ``cell`` in ``tmp_path / case``; a failure carries the stage it happened in."""
    backend = BackendUpToInference(target)
    backend.preload()
    workdir = tmp_path / cell["case"]
    workdir.mkdir(parents=True, exist_ok=True)
    stages = StageTracker()
    try:
        return backend.run(cell, load_arrays(cell), workdir, stages)
    except BackendFailure as failure:
        failure.stage = stages.current
        raise


def major(standin: ContractStandIn) -> int:
    return int(standin.version.split(".")[0])


def created_network_flags(standin: ContractStandIn) -> int:
    (call,) = standin.calls_to("Builder.create_network")
    return call.kwargs.get("flags", call.args[0] if call.args else 0)


def set_builder_flags(standin: ContractStandIn) -> list:
    """The BuilderFlag values the build set on the builder config, in order."""
    return [c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]


def network_has_the_conv(standin: ContractStandIn):
    """Give the stand-in network one layer named like the control case's conv, with one output tensor."""
    output = standin.make("ITensor", name="/conv/Conv_output_0", is_network_output=False)
    conv = standin.make("ILayer", name="/conv/Conv", num_outputs=1)
    standin.on("INetworkDefinition.num_layers", 1)
    standin.on("INetworkDefinition.get_layer", lambda network, index: conv)
    standin.on("ILayer.get_output", lambda layer, index: output)
    return conv, output


def network_shaped_like_the_model(standin: ContractStandIn, cell: dict) -> None:
    """Test fake: the stand-in network holds one layer per ONNX node, named after it, producing the node's tensors,
    and one input per graph input, with its shape (-1 for a dynamic dimension, as TensorRT reports it)."""
    import onnx

    graph = onnx.load(cell["model"]).graph
    graph_outputs = {value.name for value in graph.output}
    layers, outputs = [], {}
    for node in graph.node:
        layer = standin.make("ILayer", name=node.name, num_outputs=len(node.output))
        outputs[id(layer)] = [standin.make("ITensor", name=name, is_network_output=name in graph_outputs)
                              for name in node.output]
        layers.append(layer)
    initializers = {init.name for init in graph.initializer}
    inputs = [standin.make("ITensor", name=value.name, is_shape_tensor=False,
                           shape=tuple(d.dim_value if d.HasField("dim_value") else -1
                                       for d in value.type.tensor_type.shape.dim))
              for value in graph.input if value.name not in initializers]
    standin.on("INetworkDefinition.num_layers", len(layers))
    standin.on("INetworkDefinition.get_layer", lambda network, index: layers[index])
    standin.on("ILayer.get_output", lambda layer, index: outputs[id(layer)][index])
    standin.on("INetworkDefinition.num_inputs", len(inputs))
    standin.on("INetworkDefinition.get_input", lambda network, index: inputs[index])
