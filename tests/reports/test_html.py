"""The HTML report as a user reads it (parsed, no browser): cell faces and their short panels, the evidence document
the drawer is drawn from, claims apart from observations, escaping, offline. tests/reports/test_browser.py reads the
same page in Chromium."""
from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser

import pytest

from reports.html import render_report
from reports.panels import unpacked
from harness.store.results_file import read_results
from reports.tables import cell_grid, matrix_columns, matrix_rows, outcome_table
from tests.reports.conftest import ISSUE, ROWS, TARGETS, WRITEUP, make_record, parse_html, write_jsonl, write_run


@dataclasses.dataclass
class ParsedCell:
    classes: set[str]
    face: str = ""  # the text shown in the matrix before any click
    text: str = ""  # everything in the cell, its details included
    links: list[str] = dataclasses.field(default_factory=list)


class ReportParser(HTMLParser):
    """Matrix cells by (case, variant, target), column headers and summary counts by target, every start tag."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.column_ids: list[str] = []
        self.headers: dict[str, str] = {}
        self.cells: dict[tuple[str, str, str], ParsedCell] = {}
        self.summary: dict[str, dict[str, int]] = {}
        self.script_text = ""
        self._row: tuple[str, str] | None = None
        self._cell: ParsedCell | None = None
        self._cell_depth = self._face_depth = self._header_depth = 0
        self._header: str | None = None
        self._summary_target: str | None = None
        self._count_name: str | None = None
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        classes = set((attributes.get("class") or "").split())
        self._in_script = tag == "script"
        if tag == "th" and "colhead" in classes:
            self._header = attributes["data-target"]
            self.column_ids.append(self._header)
            self.headers[self._header] = ""
        if self._header and tag == "th":
            self._header_depth += 1
        if tag == "tr" and "data-case" in attributes:
            self._row = (attributes["data-case"], attributes["data-variant"])
            self._column = 0
        if tag == "tr" and "data-target" in attributes:
            self._summary_target = attributes["data-target"]
            self.summary[self._summary_target] = {}
        if tag == "td" and "data-count" in attributes:
            self._count_name = attributes["data-count"]
        started = tag == "td" and self._row is not None and self._cell is None
        if started:
            self._cell = ParsedCell(classes)
            self.cells[(*self._row, self.column_ids[self._column])] = self._cell
            self._column += 1
        if self._cell is not None:
            self._cell.text += " "  # element boundaries separate words, as on screen
            if self._face_depth:
                self._cell.face += " "
            self._cell_depth += tag == "td"
            # the face: a cell's <summary>, or the whole cell when it opens nothing (not run, cannot exist)
            if tag == "summary" or self._face_depth or (started and classes & {"nr", "na"}):
                self._face_depth += 1
            if tag == "a":
                self._cell.links.append(attributes["href"])

    def handle_endtag(self, tag):
        if self._face_depth:
            self._face_depth -= 1
        if tag == "td" and self._cell is not None:
            self._cell_depth -= 1
            if not self._cell_depth:
                self._cell = None
        if tag == "th" and self._header:
            self._header_depth -= 1
            if not self._header_depth:
                self._header = None
        if tag == "td":
            self._count_name = None

    def handle_data(self, data):
        if self._in_script:
            self.script_text += data
        if self._cell is not None:
            self._cell.text += data
            if self._face_depth:
                self._cell.face += data
        if self._header:
            self.headers[self._header] += data
        if self._count_name:
            self.summary[self._summary_target][self._count_name] = int(data)


def normalised(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def report_html(tmp_path, sample_records) -> str:
    return render_report(sample_records, TARGETS, ROWS, tmp_path / "report.html").read_text()


@pytest.fixture
def report(report_html) -> ReportParser:
    parser = ReportParser()
    parser.feed(report_html)
    return parser


def evidence(html: str) -> dict:
    """The page's one embedded evidence document (what the drawer draws a cell's full panel from), unpacked."""
    [text] = re.findall(r'<script type="application/octet-stream" id="evidence" data-encoding="json\+gzip\+base64">'
                        r'(.*?)</script>', html, flags=re.S)
    return unpacked(text)


def cell_evidence(html: str, case: str, variant: str, column: str) -> dict:
    """The evidence of one observed cell, its shared values resolved."""
    document = evidence(html)
    parser = ReportParser()
    parser.feed(html)
    observed = [key for key, cell in parser.cells.items() if any(c.startswith("o-") for c in cell.classes)]
    found = document["cells"][observed.index((case, variant, column))]  # the script numbers them in page order

    def resolve(value):
        return document["shared"][value["$"]] if isinstance(value, dict) and set(value) == {"$"} else value
    return {key: resolve(value) for key, value in found.items()}


def test_every_observed_cell_shows_its_outcome_in_text_and_colour(report, sample_records):
    for record in sample_records:
        cell = report.cells[(record["case"], record["variant"], record["target"])]
        assert f"o-{record['outcome']}" in cell.classes
        assert record["outcome"] in normalised(cell.face)


def test_a_cell_face_names_its_fallback_node_or_failure_node_and_shows_cosine_and_sqnr(report, tmp_path):
    fallback = normalised(report.cells[("s1-conv-silu", "split-output", "ort-cpu")].face)
    assert fallback.startswith("↓ fallback /model.0/conv/Conv") and "cos 0.9993 · ∞ dB" in fallback
    assert "more" not in fallback  # one fallback node: no count of more
    failed = normalised(report.cells[("s1-conv-silu", "stem", "trt86-orin")].face)
    assert failed.startswith("✗ fail no-implementation /model.0/<b>&")
    mismatch = normalised(report.cells[("s1-conv-silu", "split-output", "trt86-orin")].face)
    assert "cos 0.7100" in mismatch and "3.2 dB" in mismatch and "⚠ env" in mismatch
    passed = normalised(report.cells[("s1-conv-silu", "stem", "ort-cpu")].face)
    assert "cos 0.9999 ≥ 0.99 " in passed  # a pass names the minimum cosine it met
    three = make_record("s1-conv-silu", "stem", "ort-cpu", "fallback", fallback_nodes=["/a/Conv", "/b/Conv", "/c/Conv"],
                        precision={"/a/Conv": "fp32", "/b/Conv": "fp32", "/c/Conv": "fp16"})
    _, parser = parsed_report(tmp_path, [three])
    cell = parser.cells[("s1-conv-silu", "stem", "ort-cpu")]
    assert normalised(cell.face).startswith("↓ fallback /a/Conv +2 more fallback nodes")
    assert "Not in the precision asked: /a/Conv, /b/Conv, /c/Conv" in normalised(cell.text)  # the panel names all
    assert "->" not in normalised(cell.face)  # an INT8 fallback reads as before, without precisions


def test_a_silent_fp8_loss_shows_asked_and_got_and_an_unverified_cell_the_node_not_shown(tmp_path):
    fp8 = make_record("s1-conv-silu", "stem", "ort-cpu", "fallback", fallback_nodes=["/model.0/conv/Conv"],
                      precision={"/model.0/conv/Conv": "fp32"})
    fp8["details"]["fallback_precision"] = {"/model.0/conv/Conv": {"asked": "fp8", "got": "fp32"}}
    unverified = make_record("s1-conv-silu", "split-output", "ort-cpu", "unverified",
                             precision={"/model.0/conv/Conv": "unknown"})
    _, parser = parsed_report(tmp_path, [fp8, unverified])
    face = normalised(parser.cells[("s1-conv-silu", "stem", "ort-cpu")].face)
    assert face.startswith("↓ fallback /model.0/conv/Conv fp8 -> fp32"), face
    cell = parser.cells[("s1-conv-silu", "split-output", "ort-cpu")]
    assert "o-unverified" in cell.classes
    assert normalised(cell.face).startswith("? unverified precision not shown: /model.0/conv/Conv")
    assert "Precision not shown by onnxruntime: /model.0/conv/Conv" in normalised(cell.text)


def test_a_dla_build_whose_nodes_fell_back_to_the_gpu_says_so_apart_from_precision(tmp_path):
    """A device fallback (DLA -> GPU, recorded by the TensorRT backend in details.dla_fallback_nodes) is its own badge
    and line; a DLA cell without one, and a precision fallback, show none."""
    moved = make_record("s1-conv-silu", "stem", "trt86-orin", "pass", precision={"/model.0/conv/Conv": "int8"})
    moved["details"]["dla_fallback_nodes"] = ["/model.0/act/Sigmoid", "/model.0/act/Mul"]
    stayed = make_record("s1-conv-silu", "split-output", "trt86-orin", "pass", precision={"/model.0/conv/Conv": "int8"})
    stayed["details"]["dla_fallback_nodes"] = []
    html, parser = parsed_report(tmp_path, [moved, stayed])
    cell = parser.cells[("s1-conv-silu", "stem", "trt86-orin")]
    assert "⇄ GPU fallback 2" in normalised(cell.face)
    plan_cell = html.split('<tr id="plan-S1"', 1)[1].split('data-target="trt86-orin"', 1)[1].split("</td>", 1)[0]
    assert "⇄ GPU fallback 2</span>" in plan_cell and "on the GPU, not the DLA: /model.0/act/Sigmoid +1 more" in plan_cell
    assert "DLA to GPU fallback (a device fallback, not a precision one): /model.0/act/Sigmoid, /model.0/act/Mul" in \
        normalised(cell.text)
    assert "GPU fallback" not in normalised(parser.cells[("s1-conv-silu", "split-output", "trt86-orin")].text)


def test_an_upstream_claim_not_run_here_looks_different_from_an_observation(report):
    claimed = report.cells[("s1-conv-silu", "stem", "trt100-orin")]
    assert "cl" in claimed.classes
    assert not any(c.startswith("o-") for c in claimed.classes)
    face = normalised(claimed.face)
    assert "claimed upstream, not run here" in face and "pass" in face and "write-up only" in face
    assert WRITEUP in claimed.links

    observed = report.cells[("s1-conv-silu", "stem", "trt86-orin")]
    assert "cl" not in observed.classes and "not run here" not in observed.face
    details = normalised(observed.text)
    assert "Upstream: fail (no-implementation), issue thread ( NVIDIA/TensorRT#3640): agrees" in details
    assert ISSUE in observed.links


def test_a_cell_with_neither_record_nor_claim_says_not_run(report):
    cell = report.cells[("control-qdq", "conv-relu", "trt100-orin")]
    assert "nr" in cell.classes and normalised(cell.face) == "not run"


def test_the_panel_of_a_failed_cell_holds_the_evidence_and_the_document_the_rest(report, report_html, sample_records):
    details = normalised(report.cells[("s1-conv-silu", "stem", "trt86-orin")].text)
    assert "no-implementation in build: Could not find any implementation for node <b>&amp" in details
    found = cell_evidence(report_html, "s1-conv-silu", "stem", "trt86-orin")
    record = sample_records[1]
    assert found["log"] == "[TRT] [E] 10: <script>alert(1)</script>\nbuild failed"
    assert found["failure"] == record["failure"] and found["stage"] == "build" and found["duration_s"] == 1.5
    assert found["environment"]["tensorrt_version"] == "8.6.2" and found["expectation"] == record["expectation"]
    assert {"case", "variant", "target", "schema"}.isdisjoint(found)  # the row and column say them


def test_text_from_logs_and_models_is_escaped(report_html, report):
    assert "<script>alert(1)</script>" not in report_html and "alert(1)" not in report.script_text
    found = cell_evidence(report_html, "s1-conv-silu", "stem", "trt86-orin")
    assert found["log"].startswith("[TRT] [E] 10: <script>alert(1)</script>")  # packed, unchanged, never markup
    assert "/model.0/<b>&" not in report_html and "/model.0/&lt;b&gt;&amp;" in report_html
    scripts = [attributes for tag, attributes in report.tags if tag == "script"]
    assert scripts == [{"type": "application/octet-stream", "id": "evidence", "data-encoding": "json+gzip+base64"},
                       {"type": "application/json", "id": "judgement"},
                       {}]  # the evidence, the words of harness.judgement the code reads, then the page's own code


def test_the_report_loads_nothing_from_the_network(report_html, report):
    upstream = {ISSUE, WRITEUP}
    for tag, attributes in report.tags:
        assert tag != "link" and "src" not in attributes
        for name, value in attributes.items():
            if value and re.search(r"(https?:)?//", value) and not (tag == "meta" and name == "content"):
                assert (tag, name) == ("a", "href") and value in upstream, (tag, name, value)
    styles = " ".join(re.findall(r"<style>(.*?)</style>", report_html, flags=re.S))
    assert "@import" not in styles and "url(" not in styles
    assert "default-src 'none'" in report_html


def test_a_column_header_shows_the_observed_versions_and_an_env_mismatch(report):
    trt = normalised(report.headers["trt86-orin"])
    assert "nominal 8.6.2" in trt and "observed tensorrt 8.6.2" in trt and "python3.10.12" in trt
    assert "driver 540.3.0" in trt and "⚠ env mismatch" in trt and "observed 2026-" in trt
    ort = normalised(report.headers["ort-cpu"])
    assert "observed onnxruntime 1.18.0" in ort and "env mismatch" not in ort
    assert "no records" in normalised(report.headers["trt100-orin"])


def test_an_unavailable_target_shows_its_reason_in_the_header_and_says_cannot_exist_in_every_cell(report):
    reason = TARGETS["trt92-orin"].reason
    assert f"cannot exist: {reason}" in normalised(report.headers["trt92-orin"])
    column = [cell for (_, _, target), cell in report.cells.items() if target == "trt92-orin"]
    assert len(column) == len(ROWS)
    for cell in column:
        assert "na" in cell.classes and normalised(cell.face).startswith("⊘ cannot exist")


def test_the_per_target_summary_counts_what_the_matrix_shows(report):
    zero = {name: 0 for name in report.summary["ort-cpu"]}
    assert report.summary["ort-cpu"] == zero | {"pass": 2, "fallback": 1, "fallback cells": 1, "not run": 0}
    assert report.summary["trt86-orin"] == zero | {"fail": 1, "mismatch": 1, "crash": 1, "agrees": 1}
    assert report.summary["trt92-orin"] == zero
    assert report.summary["trt100-orin"] == zero | {"claimed, not run": 1, "not run": 2}


def test_a_contradicted_claim_is_counted_and_marked(tmp_path):
    record = make_record("s1-conv-silu", "stem", "trt86-orin", "pass", claims=ROWS[0].claims)
    parser = ReportParser()
    parser.feed(render_report([record], TARGETS, ROWS, tmp_path / "r.html").read_text())
    assert "≠ claim" in normalised(parser.cells[("s1-conv-silu", "stem", "trt86-orin")].face)
    assert parser.summary["trt86-orin"]["disagrees"] == 1


def test_the_last_record_wins_and_a_torn_line_is_reported_in_the_report(tmp_path):
    first = write_jsonl(tmp_path / "first.jsonl", [make_record("control-qdq", "conv-relu", "ort-cpu", "fail",
                                                                fail=("parser", "no", None))])
    second = write_jsonl(tmp_path / "second.jsonl", [make_record("control-qdq", "conv-relu", "ort-cpu", "pass")],
                         tail='{"schema": "trt-matrix/rec')
    results = read_results([first, second])
    html = render_report(results.records, TARGETS, ROWS, tmp_path / "r.html", skipped=results.skipped).read_text()
    parser = ReportParser()
    parser.feed(html)
    assert "o-pass" in parser.cells[("control-qdq", "conv-relu", "ort-cpu")].classes
    assert parser.summary["ort-cpu"]["pass"] == 1 and parser.summary["ort-cpu"]["fail"] == 0
    assert f"{second}:2: torn last line" in html


def test_records_of_variants_the_library_lacks_still_get_a_row(tmp_path):
    record = make_record("retired-case", "old", "ort-cpu", "fallback", fallback_nodes=["/model.0/conv/Conv"])
    parser = ReportParser()
    parser.feed(render_report([record], TARGETS, ROWS, tmp_path / "r.html").read_text())
    assert "o-fallback" in parser.cells[("retired-case", "old", "ort-cpu")].classes
    assert [row.case for row in matrix_rows(ROWS, [record])][-1] == "retired-case"


def test_the_matrix_table_has_one_label_per_row_and_target(sample_records):
    rows = matrix_rows(ROWS, sample_records)
    table = outcome_table(cell_grid(sample_records, rows, matrix_columns(TARGETS, sample_records)))
    assert list(table.columns) == ["trt86-orin", "trt92-orin", "trt100-orin", "ort-cpu"] and len(table) == len(ROWS)
    assert table.loc[("s1-conv-silu", "stem"), "trt86-orin"] == "fail"
    assert table.loc[("s1-conv-silu", "stem"), "trt100-orin"] == "claimed upstream: pass"
    assert table.loc[("control-qdq", "conv-relu"), "trt100-orin"] == "not run"
    assert table.loc[("control-qdq", "conv-relu"), "trt92-orin"].startswith("target unavailable: TensorRT 9.x")


def on(host: str | None, run: str = "r2", carried_from: str | None = None) -> dict | None:
    """The provenance of a record observed on ``host`` in ``run`` (None: a plain `run` record, no host)."""
    return None if host is None else {"run": run, "host": host, "carried_over_from": carried_from}


def parsed_report(tmp_path, records) -> tuple[str, ReportParser]:
    html = render_report(records, TARGETS, ROWS, tmp_path / "r.html").read_text()
    parser = ReportParser()
    parser.feed(html)
    return html, parser


@pytest.fixture
def two_hosts(tmp_path) -> tuple[str, ReportParser]:
    """trt86-orin on two hosts that disagree on s1/stem and agree on control/conv-relu; ort-cpu on one host."""
    return parsed_report(tmp_path, [
        make_record("s1-conv-silu", "stem", "trt86-orin", "pass", provenance=on("orin-01")),
        make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=("parser", "bad", None),
                    provenance=on("orin-02")),
        make_record("control-qdq", "conv-relu", "trt86-orin", provenance=on("orin-01")),
        make_record("control-qdq", "conv-relu", "trt86-orin", provenance=on("orin-02")),
        make_record("s1-conv-silu", "split-output", "trt86-orin", "infra-error", fail=("harness", "docker", None),
                    provenance=on("orin-01")),
        make_record("s1-conv-silu", "split-output", "trt86-orin", provenance=on("orin-02")),
        make_record("s1-conv-silu", "stem", "ort-cpu", provenance=on("cpu-01")),
    ])


def test_a_target_observed_on_several_hosts_gets_one_column_per_host(two_hosts):
    html, report = two_hosts
    assert report.column_ids == ["trt86-orin @ orin-01", "trt86-orin @ orin-02", "trt92-orin", "trt100-orin", "ort-cpu"]
    assert normalised(report.headers["trt86-orin @ orin-02"]).startswith("trt86-orin @ orin-02 TensorRT 8.6.2")
    assert "@ cpu-01" in normalised(report.headers["ort-cpu"])  # one host: one column, its host shown
    assert "@" not in normalised(report.headers["trt100-orin"])  # no records: no host to show
    assert set(report.summary) == set(report.column_ids)
    assert report.summary["trt86-orin @ orin-01"]["infra-error"] == 1
    assert report.summary["trt86-orin @ orin-02"]["fail"] == 1
    header = parse_html(html).find("header").text
    assert "× 4 targets in 5 columns" in header and "from 3 hosts (cpu-01, orin-01, orin-02)" in header


def on_gpu(record: dict, compute_capability: str) -> dict:
    """The record as if its cell ran on a GPU of that compute capability (the environment the TensorRT worker
    observes: compute_capability and gpu_arch)."""
    arch = "sm_" + compute_capability.replace(".", "")
    return {**record, "environment": {**record["environment"], "compute_capability": compute_capability,
                                      "gpu_arch": arch}}


def test_servers_of_different_gpus_under_one_host_kind_get_a_column_per_architecture(tmp_path):
    """The nightly names its host by host kind (x86-gpu): an Ampere and an Ada server of that pool stay apart."""
    html, report = parsed_report(tmp_path, [
        on_gpu(make_record("s1-conv-silu", "stem", "trt86-orin", "pass", provenance=on("x86-gpu")), "8.6"),
        on_gpu(make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=("parser", "bad", None),
                           provenance=on("x86-gpu")), "8.9"),
    ])
    assert report.column_ids[:2] == ["trt86-orin @ x86-gpu · sm_86", "trt86-orin @ x86-gpu · sm_89"]
    assert "GPU sm_89" in normalised(report.headers["trt86-orin @ x86-gpu · sm_89"])
    assert "o-pass" in report.cells[("s1-conv-silu", "stem", "trt86-orin @ x86-gpu · sm_86")].classes
    assert "o-fail" in report.cells[("s1-conv-silu", "stem", "trt86-orin @ x86-gpu · sm_89")].classes
    assert 'id="col-trt86-orin@x86-gpu+sm_89"' in html


def test_one_gpu_architecture_is_one_column_labelled_with_it(tmp_path):
    _, report = parsed_report(tmp_path, [
        on_gpu(make_record("s1-conv-silu", "stem", "trt86-orin", provenance=on("orin-01")), "8.7")])
    assert "trt86-orin" in report.column_ids and "GPU sm_87" in normalised(report.headers["trt86-orin"])


def test_claims_of_a_target_apply_to_each_of_its_host_columns(tmp_path):
    _, report = parsed_report(tmp_path, [
        make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=("no-implementation", "x", None),
                    provenance=on("orin-01")),
        make_record("control-qdq", "conv-relu", "trt86-orin", provenance=on("orin-02")),
    ])
    observed = report.cells[("s1-conv-silu", "stem", "trt86-orin @ orin-01")]
    assert "= claim" in normalised(observed.face)
    claimed = report.cells[("s1-conv-silu", "stem", "trt86-orin @ orin-02")]
    assert "cl" in claimed.classes and "fail (no-implementation)" in normalised(claimed.face)


def test_records_without_a_host_count_as_a_host_of_their_own(tmp_path):
    _, report = parsed_report(tmp_path, [
        make_record("s1-conv-silu", "stem", "trt86-orin", "pass"),
        make_record("s1-conv-silu", "stem", "trt86-orin", "mismatch", cosine=0.5, provenance=on("orin-01")),
    ])
    assert "trt86-orin @ unknown-host" in report.column_ids and "trt86-orin @ orin-01" in report.column_ids
    assert "o-pass" in report.cells[("s1-conv-silu", "stem", "trt86-orin @ unknown-host")].classes
    assert "o-mismatch" in report.cells[("s1-conv-silu", "stem", "trt86-orin @ orin-01")].classes
    assert "⚡ conflict" in normalised(report.cells[("s1-conv-silu", "stem", "trt86-orin @ unknown-host")].face)


def test_a_cell_whose_hosts_disagree_is_a_conflict_in_every_host_column(two_hosts):
    html, report = two_hosts
    for host in ("orin-01", "orin-02"):
        cell = report.cells[("s1-conv-silu", "stem", f"trt86-orin @ {host}")]
        assert "⚡ conflict" in normalised(cell.face)
        details = normalised(cell.text)
        assert "Hosts disagree: orin-01: pass, orin-02: fail" in details
    assert 'title="hosts disagree: orin-01: pass, orin-02: fail"' in html
    for agreeing in (("control-qdq", "conv-relu"), ("s1-conv-silu", "split-output")):  # infra-error is no conflict
        assert "conflict" not in normalised(report.cells[(*agreeing, "trt86-orin @ orin-01")].text)


def test_the_conflicts_section_lists_each_conflicting_cell_with_the_outcome_per_host(two_hosts):
    html, _ = two_hosts
    section = parse_html(html).find("section", None, id="conflicts")
    [row] = section.find_all("tr", data_conflict="s1-conv-silu/stem/trt86-orin")
    assert [(s.attrs["data-host"], s.attrs["data-outcome"]) for s in row.find_all("span", "host-outcome")] == [
        ("orin-01", "pass"), ("orin-02", "fail")]
    assert "orin-01: ✓ pass" in row.text and "orin-02: ✗ fail" in row.text
    assert len(section.find_all("tr")) == 2  # the header and the one conflict


def test_several_hosts_that_agree_say_there_is_no_conflict(tmp_path):
    html, _ = parsed_report(tmp_path, [
        make_record("control-qdq", "conv-relu", "trt86-orin", provenance=on("orin-01")),
        make_record("control-qdq", "conv-relu", "trt86-orin", provenance=on("orin-02")),
    ])
    section = parse_html(html).find("section", None, id="conflicts")
    assert "No conflicts between hosts: 1 cell observed on more than one host, none disagree." in section.text


def test_a_single_host_report_has_no_conflicts_section(report_html, tmp_path):
    assert 'id="conflicts"' not in report_html and " host" not in parse_html(report_html).find("header").text
    html, _ = parsed_report(tmp_path, [make_record("control-qdq", "conv-relu", "ort-cpu", provenance=on("cpu-01"))])
    assert 'id="conflicts"' not in html


def test_a_carried_over_record_is_marked_and_names_the_run_it_came_from(tmp_path):
    html, report = parsed_report(tmp_path, [
        make_record("s1-conv-silu", "stem", "ort-cpu", provenance=on("cpu-01", run="r2", carried_from="r1")),
        make_record("control-qdq", "conv-relu", "ort-cpu", provenance=on("cpu-01", run="r2")),
    ])
    carried = report.cells[("s1-conv-silu", "stem", "ort-cpu")]
    assert "↻ carried" in normalised(carried.face)
    assert 'title="carried over from run r1: not rerun"' in html
    details = normalised(carried.text)
    assert "Run r2 on cpu-01, carried over from r1." in details
    rerun = report.cells[("control-qdq", "conv-relu", "ort-cpu")]
    assert "carried" not in normalised(rerun.text)  # a plain pass: its face only; its run is in the drawer
    assert cell_evidence(html, "control-qdq", "conv-relu", "ort-cpu")["provenance"]["run"] == "r2"


def test_the_merge_command_renders_runs_of_several_hosts(tmp_path):
    from harness.store.merge import merge_runs

    write_run(tmp_path / "runs", "n1", "orin-01", "2026-11-23T02:00:00+00:00",
              [make_record("s1-conv-silu", "stem", "trt86-orin", "pass")])
    write_run(tmp_path / "runs", "n2", "orin-02", "2026-11-23T02:05:00+00:00",
              [make_record("s1-conv-silu", "stem", "trt86-orin", "crash", fail=("crash", "SIGSEGV", None))],
              tail='{"torn')
    merged = merge_runs([tmp_path / "runs"])
    html = render_report(merged.records, TARGETS, ROWS, tmp_path / "out" / "index.html",
                         notes=["merged 2 runs"], skipped=merged.problems).read_text()
    report = ReportParser()
    report.feed(html)
    assert "o-pass" in report.cells[("s1-conv-silu", "stem", "trt86-orin @ orin-01")].classes
    assert "o-crash" in report.cells[("s1-conv-silu", "stem", "trt86-orin @ orin-02")].classes
    assert "orin-01: pass, orin-02: crash" in html
    assert "n2/results.jsonl:2: torn last line" in html


def test_each_outcome_filter_box_counts_the_cells_of_that_kind(report_html, report):
    """Counted as the page is written, so the script reads no cell when the page loads."""
    boxes = dict(re.findall(r'<input type="checkbox" value="([a-z-]+)" checked> [a-z -]+ \((\d+)\)</label>',
                            report_html.split('id="f-outcome"', 1)[1].split("</fieldset>", 1)[0]))
    kinds = [re.match(r"o-([a-z-]+)", c).group(1) if c.startswith("o-") else {"cl": "claimed", "nr": "not-run",
             "na": "cannot-exist"}[c] for c in re.findall(r'<td class="(o-[a-z-]+|cl|nr|na)\b', report_html)]
    assert {kind: int(n) for kind, n in boxes.items() if int(n)} == {k: kinds.count(k) for k in set(kinds)}
    assert sum(map(int, boxes.values())) == len(kinds) > 0
