"""Where a DLA build ran each ONNX node, read from the builder's "Layers Running on DLA/GPU" lists.

The log text follows the form TensorRT's builder writes at INFO level with a DLA default device type (a header line
per device, ``[DlaLayer] {ForeignNode[first...last]}`` and ``[GpuLayer] TYPE: name`` lines); the node names are those
of a small chain model built here.
"""
import onnx_graphsurgeon as gs
import numpy as np
import pytest

from harness.tensorrt import layers
from harness.tensorrt.devices import DLA, GPU, layer_devices, placement_from_log


@pytest.fixture(scope="module")
def chain():
    """conv1 -> relu1 -> conv2 -> relu2 -> pool -> fc: the ONNX names of a small CNN, read as the backend reads them."""
    x = gs.Variable("x", np.float32, (1, 3, 8, 8))
    tensors, nodes, current = [], [], x
    for name, op in (("/conv1/Conv", "Conv"), ("/relu1/Relu", "Relu"), ("/conv2/Conv", "Conv"),
                     ("/relu2/Relu", "Relu"), ("/pool/GlobalAveragePool", "GlobalAveragePool"),
                     ("/fc/Flatten", "Flatten")):
        inputs = [current]
        if op == "Conv":
            inputs.append(gs.Constant(f"{name}.weight", np.ones((3, 3, 1, 1), np.float32)))
        out = gs.Variable(f"{name}_output_0", np.float32)
        nodes.append(gs.Node(op, name, inputs=inputs, outputs=[out]))
        current = out
    graph = gs.Graph(nodes=nodes, inputs=[x], outputs=[current], opset=17)
    return layers.OnnxNames.from_model(gs.export_onnx(graph))


BUILD_LOG = """\
[11/24/2026-03:00:01] [TRT] [I] ---------- Layers Running on DLA ----------
[11/24/2026-03:00:01] [TRT] [I] [DlaLayer] {ForeignNode[/conv1/Conv.../relu2/Relu]}
[11/24/2026-03:00:01] [TRT] [I] ---------- Layers Running on GPU ----------
[11/24/2026-03:00:01] [TRT] [I] [GpuLayer] COPY: Reformatting CopyNode for Network Input x
[11/24/2026-03:00:01] [TRT] [I] [GpuLayer] POOLING: /pool/GlobalAveragePool
[11/24/2026-03:00:01] [TRT] [I] [GpuLayer] SHUFFLE: /fc/Flatten
"""


def test_a_dla_region_stands_for_the_nodes_between_its_ends_and_gpu_layers_are_fallbacks(chain):
    placement = placement_from_log(BUILD_LOG, chain)
    assert placement.found
    assert placement.nodes == {"/conv1/Conv": DLA, "/relu1/Relu": DLA, "/conv2/Conv": DLA, "/relu2/Relu": DLA,
                               "/pool/GlobalAveragePool": GPU, "/fc/Flatten": GPU}
    assert placement.fallback_nodes() == ["/pool/GlobalAveragePool", "/fc/Flatten"]
    # The layer type before a GPU layer's name is not part of the name; a reformat names no ONNX node.
    assert placement.layers["/pool/GlobalAveragePool"] == GPU
    assert placement.layers["Reformatting CopyNode for Network Input x"] == GPU


def test_the_last_builds_lists_are_read_and_an_older_one_ignored(chain):
    everything_on_gpu = BUILD_LOG.replace("[DlaLayer] {ForeignNode[/conv1/Conv.../relu2/Relu]}",
                                          "").replace("POOLING: /pool", "CONVOLUTION: /conv1/Conv\n[GpuLayer] POOLING: /pool")
    placement = placement_from_log(everything_on_gpu + BUILD_LOG, chain)
    assert placement.nodes["/conv1/Conv"] == DLA


def test_a_node_split_across_both_devices_counts_as_fallen_back(chain):
    split = BUILD_LOG + "[TRT] [I] [GpuLayer] CONVOLUTION: /conv2/Conv\n"
    assert placement_from_log(split, chain).nodes["/conv2/Conv"] == GPU


def test_without_the_lists_no_node_gets_a_device_and_every_wanted_node_is_unverified(chain):
    placement = placement_from_log("[TRT] [I] Engine built in 3.1 s\n", chain)
    assert not placement.found and placement.nodes == {} and placement.fallback_nodes() == []
    assert placement.unverified(["/conv1/Conv", "/conv2/Conv"]) == ["/conv1/Conv", "/conv2/Conv"]
    assert layer_devices("") == ({}, False)


def test_an_empty_dla_list_means_everything_fell_back(chain):
    all_gpu = ("[I] [TRT] ---------- Layers Running on DLA ----------\n"
               "[I] [TRT] ---------- Layers Running on GPU ----------\n"
               "[I] [TRT] [GpuLayer] /conv1/Conv + /relu1/Relu\n")
    placement = placement_from_log(all_gpu, chain)
    assert placement.found and placement.nodes == {"/conv1/Conv": GPU, "/relu1/Relu": GPU}
    assert placement.unverified(["/conv1/Conv", "/conv2/Conv"]) == ["/conv2/Conv"]
