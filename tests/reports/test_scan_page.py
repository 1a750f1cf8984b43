"""The scan page: self-contained, escaped, one row per target, claimed verdicts apart from observed ones."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cases  # noqa: F401  (registers the library)
from harness.matrix import load_matrix
from harness.scan.scanner import ScanOptions, occurrence_dicts, scan
from reports.scan_results import scan_data, write_results
from tests.models.fixtures import library_results, model_files  # noqa: F401
from tests.reports.conftest import parse_html


def page(model, tmp_path, results=()) -> tuple[str, object]:
    result = scan(model, ScanOptions(targets=list(load_matrix().values()), results=list(results), out_dir=tmp_path))
    _, html_path = write_results(scan_data(result), tmp_path)
    html = html_path.read_text()
    return html, parse_html(html)


def test_one_row_per_target_and_claimed_verdicts_are_marked_not_run_here(tmp_path, model_files, library_results):
    _, tree = page(model_files["backbone-silu"], tmp_path, [library_results])
    rows = [row.attrs["data-target"] for row in tree.find("section", id="targets").find_all("tr")
            if "data-target" in row.attrs]
    assert rows == list(load_matrix())
    orin = tree.find("section", id="targets").find("tr", data_target="trt86-orin")
    chip = orin.find("span", cls="verdict")
    assert chip.attrs["data-verdict"] == "blocked" and "claimed" in chip.classes
    assert "claimed upstream, not run here" in orin.text
    ort = tree.find("section", id="targets").find("tr", data_target="ort-cpu")
    assert "claimed" not in ort.find("span", cls="verdict").classes and "observed here" in ort.text


def test_each_finding_lists_its_places_evidence_and_workarounds(tmp_path, model_files, library_results):
    _, tree = page(model_files["backbone-silu"], tmp_path, [library_results])
    stem = tree.find("article", data_case="s1-conv-silu", data_variant="size-64")
    assert stem.find("tr", data_anchor="/backbone/stem/conv/Conv")
    # the evidence once per group of targets that share it: trt86-orin's claim is its own group
    orin = stem.find("tr", data_targets="trt86-orin")
    assert {w.attrs["data-workaround"] for w in orin.find_all("div", cls="workaround-entry")} == {
        "conv-output-marked", "sigmoid-output-marked"}
    assert "https://github.com/NVIDIA/TensorRT/issues/3640" in orin.text


def test_a_target_without_a_workaround_says_so_only_where_the_scan_lists_workarounds(tmp_path, model_files,
                                                                                     library_results):
    """'none in the library' stands where the verdict calls for a workaround (judgement.SCAN_WORKAROUND_VERDICTS)
    and the library knows none that works there; a target expected to be fine says nothing of workarounds."""
    from harness import judgement as j

    _, tree = page(model_files["backbone-silu"], tmp_path, [library_results])
    stem = tree.find("article", data_case="s1-conv-silu", data_variant="size-64")
    rows = {target: row for row in stem.find_all("tr") if "data-targets" in row.attrs
            for target in row.attrs["data-targets"].split()}
    assert set(rows) == set(load_matrix())  # every target in exactly one group
    verdicts = {target: row.find_all("td")[0].find("span", cls="verdict").attrs["data-verdict"]
                for target, row in rows.items()}
    bare = {target for target, row in rows.items() if not row.find_all("div", cls="workaround-entry")}
    said = {target for target in bare if "none in the library" in rows[target].text}
    assert said == {t for t in bare if verdicts[t] in j.SCAN_WORKAROUND_VERDICTS} and said
    assert verdicts["ort-cpu"] in j.SCAN_GOOD and "ort-cpu" not in said


def test_a_clean_model_says_so(tmp_path, model_files):
    _, tree = page(model_files["plain-cnn-qdq"], tmp_path)
    assert "No known INT8 failure pattern" in tree.find("p", cls="clean").text


def test_the_page_loads_nothing_and_escapes_the_users_names(tmp_path):
    name = '<script>alert("x")</script>'
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name=name, pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="/act/Sigmoid"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="/act/Mul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "evil.onnx")
    html, tree = page(tmp_path / "evil.onnx", tmp_path)
    assert name not in html and "&lt;script&gt;alert(" in html
    assert tree.find("tr", data_anchor=name)  # the parser unescapes: the name reads as the user wrote it
    for element in tree.find_all():
        assert "src" not in element.attrs and element.tag != "link"
    assert "default-src 'none'" in html


# an implicit-INT8 model: stopped on the four TensorRT 11 targets by the fact that 11 has no calibrator; claimed to fail
# on trt86-orin by reports on other models and calibrators, which do not gate: named apart, failing only --fail-on
# unverified
@pytest.mark.parametrize("fail_on, headline, ungated", [
    ("blocked", "Expected to fail (--fail-on blocked) on 4 of", "Not failing (--fail-on blocked) on 1 target whose"),
    ("unverified", "Expected to fail (--fail-on unverified) on", None)])
def test_the_headline_follows_fail_on(tmp_path, model_files, fail_on, headline, ungated):
    result = scan(model_files["backbone-silu"], ScanOptions(targets=list(load_matrix().values()), fail_on=fail_on,
                                                            out_dir=tmp_path))
    _, html_path = write_results(scan_data(result), tmp_path)
    tree = parse_html(html_path.read_text())
    assert headline in tree.find("p", cls="headline").text
    apart = [p.text for p in tree.find_all("p", cls="ungated")]
    assert ([text.startswith(ungated) and text.endswith(": trt86-orin.") for text in apart] == [True] if ungated
            else apart == [])


def test_a_diagnosis_gets_its_section_escaped_and_a_plain_scan_none(tmp_path, model_files):
    """`diagnose --model` adds the diagnosis to the scan's data: one article per file, the paragraph as text."""
    result = scan(model_files["backbone-silu"], ScanOptions(targets=[load_matrix()["trt86-orin"]], out_dir=tmp_path))
    plain = parse_html(write_results(scan_data(result), tmp_path / "plain")[1].read_text())
    assert plain.find_all("section", id="diagnosis") == []
    diagnosis = {"outcome": "applies", "outcome_text": "a known failure applies to a chosen target", "exit_code": 1,
                 "files": [{"path": "build <1>.log", "kind": "tensorrt-log", "status": "read", "applies": {"x": []},
                            "text": "The build failed: no-implementation at node \"<script>\"."}]}
    html = write_results({**scan_data(result), "diagnosis": diagnosis}, tmp_path / "diagnosed")[1].read_text()
    section = parse_html(html).find("section", id="diagnosis")
    article = section.find("article", data_file="build <1>.log")
    assert article.attrs["data-kind"] == "tensorrt-log" and "worst-blocked" in article.classes
    assert "no-implementation at node \"<script>\"" in article.text and "<script>" not in html
    assert "A known failure applies to a chosen target. Exit code 1." in section.text


def test_a_finding_with_many_places_lists_the_first_ones_and_says_scan_json_has_the_rest(tmp_path, model_files,
                                                                                         monkeypatch):
    from reports import scan_page

    result = scan(model_files["unet"], ScanOptions(targets=[load_matrix()["ort-cpu"]], out_dir=tmp_path))
    data = scan_data(result)
    finding = max(data["findings"], key=lambda f: len(f["occurrences"]))
    places = len(finding["occurrences"])
    assert places > 1
    monkeypatch.setattr(scan_page, "OCCURRENCE_ROWS", 1)
    tree = parse_html(write_results(data, tmp_path)[1].read_text())
    article = tree.find("article", data_case=finding["case"], data_variant=finding["variant"])
    assert len([row for row in article.find_all("tr") if "data-anchor" in row.attrs]) == 1
    (more,) = article.find_all("tr", cls="more-places")
    assert f"{places - 1} more place(s)" in more.text and "scan.json" in more.text
    written = json.loads((tmp_path / "scan.json").read_text())
    assert next(f for f in written["findings"] if f["variant"] == finding["variant"])["occurrences"] == \
        finding["occurrences"]  # the file keeps them all


@pytest.mark.parametrize("sent_bytes, engine_sent", [(None, "the scan's"), (None, "another"), (None, None), (0, None)],
                         ids=["engine-places-then-scan", "another-engine-places-then-scan", "scan-only", "too-large-to-send"])
def test_the_page_rendered_by_a_process_started_before_the_scan_is_the_page_of_the_scan(
        tmp_path, model_files, library_results, monkeypatch, sent_bytes, engine_sent):
    """`scan` starts the page's process before it scans (reports.scan_results.start_page), sends it the predicted
    engine as soon as it is predicted and the findings' places as soon as they are matched (their sections are
    rendered meanwhile), then scan.json's path; a larger scan.json is rendered by a copy of the process forked after
    the scan. Each writes the page that the scan's own data render, also where the engine or the places sent ahead
    are not the scan's (their sections are then rendered again)."""
    from reports import scan_results
    from reports.scan_page import render_scan_page

    if sent_bytes is not None:
        monkeypatch.setattr(scan_results, "SENT_PAGE_BYTES", sent_bytes)
    page_process = scan_results.start_page()
    options = ScanOptions(targets=list(load_matrix().values()), results=[library_results], out_dir=tmp_path)
    sent = []  # what send_engine returned: scan.json then takes the engine's text as sent
    if engine_sent is not None:
        def ahead(engine):
            if engine_sent == "another":
                engine = {**engine, "layers": engine["layers"][:1]}
            sent.append(scan_results.send_engine(page_process, engine))

        def places_ahead(findings):
            places = [occurrence_dicts(finding) for finding in findings]
            if engine_sent == "another":
                places = [occurrences[:1] for occurrences in places]
            scan_results.send_places(page_process, places)
        options.on_engine, options.on_findings = ahead, places_ahead
    result = scan(model_files["backbone-silu-qdq"], options)
    data = scan_data(result)
    json_path, html_path = write_results(data, tmp_path / "scan", page_process, sent_engine=sent[-1] if sent else None)
    assert page_process.pid is None  # waited for (or cancelled) before write_results returned
    expected = render_scan_page(data, tmp_path / "expected.html").read_text()
    assert html_path.read_text() == expected and json.loads(json_path.read_text()) == json.loads(json.dumps(data))
    assert 'class="engine-layers"' in expected and 'data-case=' in expected  # the engine's section, findings
    assert 'data-anchor="' in expected  # the findings' places
