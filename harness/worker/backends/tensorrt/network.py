"""The parse stage's settings: how a cell's ONNX model becomes a TensorRT network (arguments for Polygraphy's
``NetworkFromOnnxPath``), and what the backend changes on the parsed network (extra outputs, layer precisions).

* ``OnnxParserFlag.NATIVE_INSTANCENORM`` is set or cleared on every parse, never left to the version's default. The
  knob ``native_instancenorm`` decides; unset, the version's documented default is set explicitly: off before 10.0
  (the plugin path), on from 10.0 (failure-patterns.md S2, platforms.md).
* Strongly typed networks where the cell asks for one (``knobs.strongly_typed``), and always from 11.0, which removed
  weak typing (no ``BuilderFlag.INT8``/``FP16``). A strongly typed network takes no precision flags or layer
  precisions, so a cell asking for both is a mistake in the case.

``trt`` is the TensorRT module, passed in (see the package docstring).
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from harness.worker.backends.tensorrt.compat import major_version, require_api, tensorrt_api

NATIVE_INSTANCENORM_DEFAULT_ON_FROM = 10  # major version; platforms.md and failure-patterns.md S2
LAYER_PRECISION_TYPES = {
    "int8": "DataType.INT8", "fp16": "DataType.HALF", "fp32": "DataType.FLOAT", "bf16": "DataType.BF16",
    "fp8": "DataType.FP8",
}


@dataclasses.dataclass
class NetworkSettings:
    """How the ONNX model becomes a TensorRT network, and why."""

    loader_arguments: dict[str, Any]  # for polygraphy's NetworkFromOnnxPath
    instancenorm_flag: Any  # OnnxParserFlag.NATIVE_INSTANCENORM, None where the version has no such flag
    native_instancenorm: bool | None  # what was set; None: no flag (the plugin is the parser's only path)
    record: dict[str, Any]  # what the cell's record says; record["strongly_typed"]["set"] decides the build's typing


def network_settings(trt, cell: dict[str, Any]) -> NetworkSettings:
    knobs = cell["knobs"]
    arguments: dict[str, Any] = {}
    flag = tensorrt_api(trt, "OnnxParserFlag.NATIVE_INSTANCENORM")
    knob = knobs.get("native_instancenorm")
    if flag is None:
        if knob:
            require_api(trt, "OnnxParserFlag.NATIVE_INSTANCENORM", "for the knob native_instancenorm=True")
        native, why = None, "no OnnxParserFlag in this version: the InstanceNormalization plugin is the only path"
    elif knob is not None:
        native, why = knob, "knob"
    else:
        native = major_version(trt) >= NATIVE_INSTANCENORM_DEFAULT_ON_FROM
        why = ("knob unset: this version's default, set explicitly "
               f"(off before {NATIVE_INSTANCENORM_DEFAULT_ON_FROM}.0, on from it)")
    if native is not None:
        arguments.update({"flags": [flag]} if native else {"plugin_instancenorm": True})

    asked = bool(knobs.get("strongly_typed"))
    weak_typing = tensorrt_api(trt, "BuilderFlag.INT8") is not None  # 11.0 removed weak typing and its flags
    if asked:
        conflicting = [k for k in ("fp16", "fp8", "fp4", "precision_constraints", "layer_precisions") if knobs.get(k)]
        if cell["mode"] == "implicit-int8" or conflicting:
            raise ValueError(
                f"Cell {cell['case']}/{cell['variant']} asks for a strongly typed network together with "
                f"{conflicting or 'implicit INT8 calibration'}: a strongly typed network takes its precisions from the "
                "graph's types and Q/DQ nodes only (TensorRT allows no precision flags or layer precisions there). "
                "Fix the case's knobs."
            )
    strongly_typed = asked or not weak_typing
    if strongly_typed:
        require_api(trt, "NetworkDefinitionCreationFlag.STRONGLY_TYPED", "for the knob strongly_typed=True" if asked
                    else "because this version has only strongly typed networks (no BuilderFlag.INT8)")
        arguments["strongly_typed"] = True
    record = {
        "native_instancenorm": {"knob": knob, "set": native, "why": why},
        "strongly_typed": {"knob": asked, "set": strongly_typed,
                           "why": "knob" if asked or weak_typing else "this version has only strongly typed networks"},
    }
    return NetworkSettings(arguments, flag, native, record)


def network_layers(network):
    for index in range(network.num_layers):
        yield network.get_layer(index)


def mark_extra_outputs(network, names: list[str]) -> list[str]:
    """Mark ONNX tensors ``names`` as network outputs, in addition to the model's own; return the outputs after."""
    tensors = {}
    for layer in network_layers(network):
        for index in range(layer.num_outputs):
            tensor = layer.get_output(index)
            if tensor is not None:
                tensors[tensor.name] = tensor
    missing = [name for name in names if name not in tensors]
    if missing:
        raise ValueError(
            f"knobs.extra_outputs names tensor(s) {missing} that no layer of the parsed TensorRT network produces. "
            f"Closest tensor names: {_closest(missing, tensors)}. Extra outputs must be ONNX tensor names that the "
            "parser keeps (outputs of nodes, not initializers)."
        )
    for name in names:
        if not tensors[name].is_network_output:
            network.mark_output(tensors[name])
    return [network.get_output(index).name for index in range(network.num_outputs)]


def set_layer_precisions(trt, network, requested: dict[str, str]) -> dict[str, str]:
    """Set ``layer.precision`` of the layers named after the ONNX nodes in ``requested``; return what was set."""
    require_api(trt, "ILayer.precision", "for the knob layer_precisions")
    unknown = {node: p for node, p in requested.items() if p not in LAYER_PRECISION_TYPES}
    if unknown:
        raise ValueError(f"knobs.layer_precisions: precisions {unknown} are not among {sorted(LAYER_PRECISION_TYPES)}")
    types = {node: require_api(trt, LAYER_PRECISION_TYPES[p], f"for the knob layer_precisions {node}={p}")
             for node, p in requested.items()}
    by_name = {layer.name: layer for layer in network_layers(network)}
    missing = [node for node in requested if node not in by_name]
    if missing:
        raise ValueError(
            f"knobs.layer_precisions names ONNX node(s) {missing} that are not layer names of the parsed TensorRT "
            f"network. Closest layer names: {_closest(missing, by_name)}."
        )
    for node, data_type in types.items():
        by_name[node].precision = data_type
    return {node: LAYER_PRECISION_TYPES[p] for node, p in requested.items()}


def _closest(wanted: list[str], available) -> dict[str, list[str]]:
    return {name: difflib.get_close_matches(name, list(available), n=5, cutoff=0.3) for name in wanted}
