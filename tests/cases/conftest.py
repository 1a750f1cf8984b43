"""Fixtures for the matcher tests: a case variant as ``Case.find`` meets a user's model, and a plain FP32 graph."""
from __future__ import annotations

import onnx_graphsurgeon as gs
import pytest

from cases.control import ImplicitConvRelu
from cases.generate import export_model


def _user_graph(case, variant, rename: bool = False) -> gs.Graph:
    """The variant exported, checked and shape-inferred, re-imported as a user's model; ``rename`` gives every node
    a name of no meaning, as a matcher must not depend on the library's names."""
    model, _ = export_model(case, variant)
    graph = gs.import_onnx(model)
    if rename:
        for index, node in enumerate(graph.nodes):
            node.name = f"user_node_{index}"
    return graph


@pytest.fixture()
def user_graph():
    return _user_graph


@pytest.fixture()
def fp32_conv_relu_graph() -> gs.Graph:
    """A plain FP32 Conv -> ReLU model: no matcher may fire on it."""
    return _user_graph(ImplicitConvRelu, ImplicitConvRelu.variants[0])
