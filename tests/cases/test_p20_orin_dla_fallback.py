"""P20: an INT8 network for Orin's DLA with a Resize mode DLA lacks, its DLA knobs, and the matcher."""
from __future__ import annotations

import pytest

from cases.model import Knobs
from cases.p20_orin_dla_fallback import CONVS, RESIZE
from cases.p20_orin_dla_fallback import OrinDlaFallback as P20

variant = P20.variant


def test_declaration_knobs_and_no_claims():
    assert (P20.pattern, P20.mode, P20.opset) == ("P20", "implicit-int8", 13)
    knobs = {v.name: (v.knobs.dla_core, v.knobs.gpu_fallback, v.knobs.gpu_only) for v in P20.variants}
    # Every variant names its device, so a DLA target cannot turn the GPU control into a second DLA build.
    assert knobs == {"as-reported": (0, True, False), "dla-no-fallback": (0, False, False),
                     "gpu-only": (None, False, True), "nearest-resize": (0, True, False)}
    # Where DLA is missing (10.16 on Orin, 11.0-11.4.0) the harness says so itself, from NVIDIA's pages; 11.4.1
    # restores DLA on AGX Orin. No report covers this graph where DLA exists: no claims.
    assert all(not v.claims for v in P20.variants)
    assert "gpu-only builds for the GPU" in P20.backend_notes["tensorrt"]  # shown in its TensorRT cells
    with pytest.raises(ValueError, match="gpu_fallback"):
        Knobs(gpu_fallback=True)


@pytest.mark.parametrize("v", P20.variants, ids=lambda v: v.name)
def test_convs_pool_and_the_resize_in_order(v):
    built = P20.build(v)
    assert [n.op for n in built.graph.nodes] == ["Conv", "Relu", "MaxPool", "Conv", "Relu", "Resize", "Conv"]
    resize = next(n for n in built.graph.nodes if n.name == RESIZE)
    assert resize.attrs["mode"] == v.params["resize"] and list(resize.inputs[2].values) == [1, 1, 2, 2]
    assert resize.inputs[0].inputs[0].op == "Relu" and resize.outputs[0].outputs[0].name == CONVS[2]
    assert built.expected_int8 == (*CONVS, RESIZE)
    assert built.graph.outputs[0].shape == built.graph.inputs[0].shape == (1, 16, 32, 32)


def test_find_the_cubic_resize_only(user_graph, fp32_conv_relu_graph):
    (match,) = P20.find(user_graph(P20, variant("as-reported"), rename=True))
    assert match.variant == "as-reported" and match.nodes[0].startswith("user_node_")
    assert P20.find(user_graph(P20, variant("nearest-resize"))) == []
    assert P20.find(fp32_conv_relu_graph) == []
