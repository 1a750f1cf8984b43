"""The graph edits the cases' fix rewrites share: names stay the user's and unique, a graph output keeps its name,
a Q/DQ pair goes only where it is asked, removed nodes leave the graph."""
import numpy as np
import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases import rewriting as rw
from cases.model import NoRewrite


def small_graph():
    graph = gs.Graph(name="user", opset=17)
    x = g.graph_input("x", (1, 4))
    graph.inputs.append(x)
    y = g.node(graph, "Relu", "/relu", [x], "/relu_output")
    z = g.node(graph, "Sigmoid", "/sigmoid", [y], "/out")
    w = g.node(graph, "Neg", "/neg", [y], "/other")
    g.mark_output(graph, z, (1, 4))
    g.mark_output(graph, w, (1, 4))
    return graph


def test_unique_names_skip_every_node_and_tensor_name_and_are_taken_once_given():
    graph = small_graph()
    assert rw.unique_name(graph, "/relu") == "/relu~2"
    assert rw.unique_name(graph, "/relu") == "/relu~3"
    assert rw.unique_name(graph, "/out") == "/out~2"
    assert rw.unique_name(graph, "/new") == "/new"


def test_an_identity_after_a_graph_output_writes_it_under_its_name():
    graph = small_graph()
    out = graph.outputs[0]
    name = rw.identity_after(graph, out)
    assert rw.node_named(graph, name).op == "Identity" and out.inputs[0].name == name
    assert graph.outputs[0] is out and rw.node_named(graph, "/sigmoid").outputs[0].name == "/out_before_identity"


def test_a_qdq_pair_goes_between_a_tensor_and_the_readers_named_only():
    graph = small_graph()
    y = rw.node_named(graph, "/relu").outputs[0]
    scale = gs.Constant("s", np.array(0.5, np.float32))
    zero = gs.Constant("z", np.array(0, np.int8))
    q, dq = rw.qdq_between(graph, y, [rw.node_named(graph, "/neg")], (scale, zero, None), "/neg/input_quantizer")
    assert rw.node_named(graph, "/neg").inputs[0].inputs[0].name == dq
    assert rw.node_named(graph, "/sigmoid").inputs[0] is y  # the other reader is untouched
    assert rw.node_named(graph, q).inputs[1] is scale
    with pytest.raises(NoRewrite, match="does not read"):
        rw.qdq_between(graph, y, [rw.node_named(graph, dq)], (scale, zero, None), "/again")


def test_removed_nodes_are_unlinked_at_once_and_leave_the_graph_in_one_pass():
    graph = small_graph()
    neg = rw.node_named(graph, "/neg")
    graph.outputs.pop()  # nothing reads /neg's output any more
    assert rw.remove_unread(graph, [neg, rw.node_named(graph, "/relu")]) == ["/neg"]  # /relu is still read
    assert not neg.inputs and neg in graph.nodes
    rw.drop_removed(graph)
    assert [n.name for n in graph.nodes] == ["/relu", "/sigmoid"]
    with pytest.raises(NoRewrite, match="no node '/neg'"):
        rw.node_named(graph, "/neg")


def test_a_weight_quantizer_is_computed_offline_as_onnx_defines_it():
    graph = gs.Graph(name="user", opset=17)
    weight = gs.Constant("w", np.array([[0.26, -1.0], [0.74, 3.0]], np.float32))
    scale = np.array([0.5, 1.0], np.float32)
    dq = g.torch_fake_quantize(graph, weight, "/q", scale, axis=0)
    np.testing.assert_array_equal(rw.constant_value(dq.inputs[0].inputs[0]), [[1, -2], [1, 3]])  # the Q output
    np.testing.assert_array_equal(rw.constant_value(dq), [[0.5, -1.0], [1.0, 3.0]])
    assert rw.constant_value(g.graph_input("x", (1,))) is None


def test_appended_nodes_move_up_to_their_first_reader_and_the_users_order_stays():
    graph = small_graph()
    y = rw.node_named(graph, "/relu").outputs[0]
    scale, zero = gs.Constant("s", np.array(0.5, np.float32)), gs.Constant("z", np.array(0, np.int8))
    q, dq = rw.qdq_between(graph, y, [rw.node_named(graph, "/sigmoid")], (scale, zero, None), "/sigmoid/quantizer")
    assert [n.name for n in graph.nodes][-2:] == [q, dq]  # appended: /sigmoid reads a tensor written after it
    rw.in_data_flow_order(graph)
    assert [n.name for n in graph.nodes] == ["/relu", q, dq, "/sigmoid", "/neg"]
    rw.in_data_flow_order(graph)  # an ordered graph is left as it is
    assert [n.name for n in graph.nodes] == ["/relu", q, dq, "/sigmoid", "/neg"]


def test_a_cycle_is_named_instead_of_sorted_forever():
    graph = small_graph()
    relu, neg = rw.node_named(graph, "/relu"), rw.node_named(graph, "/neg")
    relu.inputs[0] = neg.outputs[0]  # /relu now reads what /neg, its reader, writes
    with pytest.raises(ValueError, match="cycle through node '/(relu|neg)'"):
        rw.in_data_flow_order(graph)
