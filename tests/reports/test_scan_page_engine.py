"""The scan page's "Predicted engine" view: float layers of a Q/DQ model marked, the rule and what would make a layer
INT8 beside each, or why there is no prediction."""
from tests.models import resnet18_trex


def test_the_scan_page_view_marks_float_layers_and_says_what_would_make_them_int8():
    from harness.matrix import load_matrix
    from harness.scan.engine_prediction.targets import predict_targets
    from reports.scan_page import engine_view

    engine = predict_targets(resnet18_trex.build("qat").graph, list(load_matrix().values())).to_dict()
    view = engine_view(engine)
    marked = [row for row in view["rows"] if row["float_marked"]]
    assert [row["op"] for row in marked] == ["MaxPool", "GlobalAveragePool"] and view["float_count"] == 2
    add = next(row for row in view["rows"] if "Add_36" in row["nodes"])
    assert not add["float_marked"] and "residual" in add["rule_remedy"]
    assert view["summary_text"].startswith("21 of 23 compute layers INT8")
    assert engine_view({"is_predicted": False, "reason": "why", "layers": []})["reason"] == "why"
