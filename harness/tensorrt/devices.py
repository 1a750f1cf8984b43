"""Where each ONNX node of a DLA build ran: on the DLA, or on the GPU by GPU fallback, as TensorRT's builder says.

A build whose default device type is DLA logs (INFO) which layers run where, one list per device:

    ---------- Layers Running on DLA ----------
    [DlaLayer] {ForeignNode[/cnn/cnn.0/Conv.../cnn/cnn.11/Relu]}
    ---------- Layers Running on GPU ----------
    [GpuLayer] POOLING: /pool/GlobalAveragePool

A DLA layer is a region (``{ForeignNode[first...last]}``) standing for the ONNX nodes between its ends, expanded along
the model's graph as for Myelin regions (:func:`~harness.tensorrt.layers.onnx_nodes_from_layer_name`);
a GPU layer line may start with its layer type (``POOLING: ``), which is not part of its name. When a log holds the
lists of several builds, the last build's are read. A node no list names has no device on record: never guessed.

Standard library only (runs inside worker images).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from harness.tensorrt import layers

DLA, GPU = "dla", "gpu"
_SECTION = re.compile(r"-{3,}\s*Layers Running on (?P<device>DLA|GPU)\s*-{3,}", re.IGNORECASE)
_LAYER = re.compile(r"\[(?P<kind>DlaLayer|GpuLayer)\]\s+(?P<name>.+?)\s*$")
_LAYER_TYPE_PREFIX = re.compile(r"^[A-Z][A-Z0-9_]*: ")


@dataclass(frozen=True)
class DevicePlacement:
    """The DLA build's layers by device, as logged, and the ONNX nodes each device ran."""

    layers: Mapping[str, str]  # layer name -> dla | gpu
    nodes: Mapping[str, str]  # ONNX node -> dla | gpu
    found: bool  # whether the log held the lists at all

    def fallback_nodes(self) -> list[str]:
        """ONNX nodes that fell back to the GPU."""
        return [node for node, device in self.nodes.items() if device == GPU]

    def unverified(self, wanted: Iterable[str]) -> list[str]:
        """Of the ``wanted`` nodes, those whose device the log does not establish."""
        return [node for node in wanted if node not in self.nodes]


def layer_devices(log_text: str) -> tuple[dict[str, str], bool]:
    """Layer name -> device from the last build's "Layers Running on DLA/GPU" lists, and whether there were any."""
    starts = [match.start() for match in _SECTION.finditer(log_text) if match.group("device").upper() == "DLA"]
    if not starts:
        return {}, False
    placed: dict[str, str] = {}
    for line in log_text[starts[-1]:].splitlines():
        entry = _LAYER.search(line)
        if entry is None:
            continue
        name = entry.group("name")
        if entry.group("kind") == "GpuLayer":
            name = _LAYER_TYPE_PREFIX.sub("", name, count=1)
        placed[name] = DLA if entry.group("kind") == "DlaLayer" else GPU
    return placed, True


def placement_from_log(log_text: str, onnx_names: layers.OnnxNamesSource) -> DevicePlacement:
    """Where the nodes of the model (``onnx_names``) ran, from a DLA build's log. A node named by layers on both
    devices (split by TensorRT) counts as fallen back."""
    names = layers.as_onnx_names(onnx_names)
    placed, found = layer_devices(log_text)
    nodes: dict[str, str] = {}
    for name, device in placed.items():
        for node in layers.onnx_nodes_from_layer_name(name, names):
            nodes[node] = GPU if nodes.get(node) == GPU else device
    if names is not None and names.order:
        nodes = {node: nodes[node] for node in names.order if node in nodes}
    return DevicePlacement(layers=placed, nodes=nodes, found=found)
