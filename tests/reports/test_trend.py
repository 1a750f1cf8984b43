"""The trend and regressions page as a user reads it: what changed since the previous run, the trend strips, what the
latest run carried over, and what could not be read."""
from __future__ import annotations

import re

import pytest

from harness.store.history import load_history
from reports.trend import render_trend, square_title
from tests.reports.conftest import Element, make_record, parse_html, write_run

FAIL = ("no-implementation", "Could not find any implementation", "/model.0/<b>&")
TRT = "trt86-orin@orin-01"
ORT = "ort-cpu@cpu-01"


def record(case: str, variant: str, outcome: str, run: str, *, target: str = "trt86-orin", host: str = "orin-01",
           carried_from: str | None = None, **kwargs) -> dict:
    if outcome == "fail":
        kwargs.setdefault("fail", FAIL)
    if outcome == "infra-error":
        kwargs.setdefault("fail", ("harness", "docker daemon went away", None))
    provenance = {"run": run, "host": host, "carried_over_from": carried_from}
    return make_record(case, variant, target, outcome, provenance=provenance, **kwargs)


@pytest.fixture
def history_root(tmp_path):
    """Three nightly runs of trt86-orin on orin-01 and one of ort-cpu on cpu-01, one results file with a bad line."""
    root = tmp_path / "history"
    fallback = {"fallback_nodes": ["/a/Conv", "/b/Conv"], "precision": {"/a/Conv": "fp32", "/b/Conv": "fp16"}}
    write_run(root, "r1", "orin-01", "2026-11-21T02:00:00+00:00", [
        record("s1-conv-silu", "stem", "pass", "r1"),
        record("s1-conv-silu", "split-output", "fallback", "r1", **fallback),
        record("control-qdq", "conv-relu", "pass", "r1"),
        record("s2-instancenorm", "affine", "pass", "r1"),
        record("s4-bn-mish", "fused", "pass", "r1"),
    ])
    write_run(root, "r2", "orin-01", "2026-11-22T02:00:00+00:00", [
        record("s1-conv-silu", "stem", "pass", "r2"),
        record("s1-conv-silu", "split-output", "fail", "r2"),
        record("control-qdq", "conv-relu", "pass", "r2"),
        record("s2-instancenorm", "affine", "pass", "r2", carried_from="r1"),
        record("s4-bn-mish", "fused", "pass", "r2"),
    ], tail='{"schema": "trt-matrix/rec')
    write_run(root, "r3", "orin-01", "2026-11-23T02:00:00+00:00", [
        record("s1-conv-silu", "stem", "fail", "r3"),
        record("s1-conv-silu", "split-output", "pass", "r3"),
        record("control-qdq", "conv-relu", "infra-error", "r3"),
        record("s2-instancenorm", "affine", "pass", "r3", carried_from="r1"),
        record("s3-depthwise-qdq", "dw", "pass", "r3"),
    ])
    write_run(root, "c1", "cpu-01", "2026-11-23T03:00:00+00:00", [
        record("s1-conv-silu", "stem", "pass", "c1", target="ort-cpu", host="cpu-01"),
    ])
    return root


@pytest.fixture
def trend_html(history_root, tmp_path) -> str:
    return render_trend(load_history(history_root), tmp_path / "out" / "trend.html", notes=["a note"]).read_text()


@pytest.fixture
def page(trend_html) -> Element:
    return parse_html(trend_html)


def changes(page: Element, series: str, kind: str) -> dict[str, str]:
    """The cells a series lists under ``kind`` in "Changes since the previous run", with their row text."""
    article = page.find("article", data_series=series)
    return {row.attrs["data-cell"]: row.text
            for box in article.find_all("div", data_kind=kind) for row in box.find_all("tr")}


def strip(page: Element, case: str, variant: str, series: str) -> tuple[Element, list[Element]]:
    cell = page.find("tr", data_case=case, data_variant=variant).find("td", data_series=series)
    return cell, cell.find_all("span", "sq")


def test_a_regression_is_listed_with_its_old_and_new_outcome(page):
    regressions = changes(page, TRT, "regression")
    assert list(regressions) == ["s1-conv-silu/stem"]
    assert "pass -> fail (no-implementation at /model.0/<b>&)" in regressions["s1-conv-silu/stem"]
    box = page.find("article", data_series=TRT).find("div", data_kind="regression")
    assert "k-regression" in box.classes and "none" not in box.classes
    assert "run r2 → run r3" in page.find("article", data_series=TRT).text


def test_a_progression_is_listed_apart_from_the_regressions(page):
    progressions = changes(page, TRT, "progression")
    assert list(progressions) == ["s1-conv-silu/split-output"]
    assert "fail (no-implementation at /model.0/<b>&) -> pass" in progressions["s1-conv-silu/split-output"]


def test_an_infra_error_is_not_compared_and_never_a_regression(page):
    assert "control-qdq/conv-relu" not in changes(page, TRT, "regression")
    not_compared = changes(page, TRT, "not-compared")
    assert list(not_compared) == ["control-qdq/conv-relu"]
    assert "pass -> infra-error (harness)" in not_compared["control-qdq/conv-relu"]
    box_text = page.find("article", data_series=TRT).find("div", data_kind="not-compared").text
    assert "never counted as a regression" in box_text


def test_new_and_gone_cells_are_listed(page):
    assert list(changes(page, TRT, "new")) == ["s3-depthwise-qdq/dw"]
    assert list(changes(page, TRT, "gone")) == ["s4-bn-mish/fused"]
    assert "pass -> no record" in changes(page, TRT, "gone")["s4-bn-mish/fused"]


def test_the_summary_counts_each_kind_per_series_and_highlights_regressions(page):
    row = page.find("tr", data_series=TRT)
    counts = {td.attrs["data-kind"]: int(td.text) for td in row.find_all("td") if "data-kind" in td.attrs}
    assert counts == {"regression": 1, "progression": 1, "changed": 0, "not-compared": 1, "new": 1, "gone": 1,
                      "unchanged": 1}
    assert "bad" in row.find("td", data_kind="regression").classes and "regressed" in row.classes
    assert "r2 → r3" in row.text


def test_a_series_with_a_single_run_has_nothing_to_compare(page):
    assert "first run" in page.find("tr", data_series=ORT).text
    article = page.find("article", data_series=ORT)
    assert "first run (c1): nothing to compare." in article.text and not article.find_all("div", "changes")


def test_a_series_without_regressions_says_so(history_root, tmp_path):
    write_run(history_root, "c2", "cpu-01", "2026-11-24T03:00:00+00:00",
              [record("s1-conv-silu", "stem", "pass", "c2", target="ort-cpu", host="cpu-01")])
    page = parse_html(render_trend(load_history(history_root), tmp_path / "t.html").read_text())
    box = page.find("article", data_series=ORT).find("div", data_kind="regression")
    assert "No regressions." in box.text and "none" in box.classes


def test_a_trend_strip_has_one_square_per_run_oldest_first_the_latest_marked(page):
    _, squares = strip(page, "s1-conv-silu", "split-output", TRT)
    assert [sq.attrs["data-run"] for sq in squares] == ["r1", "r2", "r3"]
    assert [sq.attrs["data-outcome"] for sq in squares] == ["fallback", "fail", "pass"]
    assert [f"o-{o}" in sq.classes for sq, o in zip(squares, ["fallback", "fail", "pass"])] == [True] * 3
    assert ["latest" in sq.classes for sq in squares] == [False, False, True]
    assert [sq.attrs["title"] for sq in squares] == [
        "r1: fallback (2 fallback nodes)", "r2: fail (no-implementation)", "r3: pass"]


def test_a_run_without_a_record_of_the_cell_is_an_empty_square(page):
    _, squares = strip(page, "s4-bn-mish", "fused", TRT)
    assert [sq.attrs["data-outcome"] for sq in squares] == ["pass", "pass", "none"]
    assert "none" in squares[-1].classes and squares[-1].attrs["title"] == "r3: no record"
    _, new = strip(page, "s3-depthwise-qdq", "dw", TRT)
    assert [sq.attrs["data-outcome"] for sq in new] == ["none", "none", "pass"]


def test_a_carried_over_square_is_marked_and_names_its_source_run(page):
    _, squares = strip(page, "s2-instancenorm", "affine", TRT)
    assert ["carried" in sq.classes for sq in squares] == [False, True, True]
    assert squares[1].attrs["title"] == "r2: pass, carried over from r1"
    assert squares[2].attrs["title"] == "r3: pass, carried over from r1"


def test_a_row_says_when_the_last_change_of_its_cell_is_a_regression_or_progression(page):
    cell, _ = strip(page, "s1-conv-silu", "stem", TRT)
    assert cell.attrs["data-last-change"] == "regression" and "▼" in cell.text
    row = page.find("tr", data_case="s1-conv-silu", data_variant="stem")
    assert "regressed" in row.classes and "regressed: trt86-orin @ orin-01" in row.text
    progressed, _ = strip(page, "s1-conv-silu", "split-output", TRT)
    assert progressed.attrs["data-last-change"] == "progression" and "▲" in progressed.text
    not_compared, _ = strip(page, "control-qdq", "conv-relu", TRT)
    assert "data-last-change" not in not_compared.attrs
    assert "regressed" not in page.find("tr", data_case="control-qdq", data_variant="conv-relu").classes


def test_a_series_without_the_cell_shows_no_strip(page):
    cell, squares = strip(page, "control-qdq", "conv-relu", ORT)
    assert squares == [] and cell.text == "–"
    _, ort = strip(page, "s1-conv-silu", "stem", ORT)
    assert [(sq.attrs["data-run"], sq.attrs["data-outcome"]) for sq in ort] == [("c1", "pass")]


def test_only_the_last_n_runs_are_drawn(history_root, tmp_path):
    page = parse_html(render_trend(load_history(history_root), tmp_path / "t.html", last=2).read_text())
    _, squares = strip(page, "s1-conv-silu", "split-output", TRT)
    assert [sq.attrs["data-run"] for sq in squares] == ["r2", "r3"]
    assert "last 2 of 3 runs" in page.find("th", data_series=TRT).text
    assert "Trend over the last 2 runs" in page.text


def test_the_carried_over_section_counts_and_lists_cells_per_source_run(page):
    trt = page.find("div", "carried-series", data_series=TRT)
    assert trt.attrs["data-carried"] == "1" and "1 of 5 cells carried over" in trt.text
    assert trt.find("div", data_from="r1").text == "from run r1 (1): s2-instancenorm/affine"
    ort = page.find("div", "carried-series", data_series=ORT)
    assert ort.attrs["data-carried"] == "0" and "none carried over" in ort.text


def test_the_header_shows_the_history_runs_hosts_span_and_problems(page, history_root):
    header = page.find("header").text
    assert str(history_root) in header and "4 runs" in header and "2 hosts: cpu-01, orin-01" in header
    assert "from 2026-11-21T02:00:00+00:00 to 2026-11-23T03:00:00+00:00" in header
    assert "last 14 runs" in header and "a note" in header
    [warning] = page.find("header").find_all("li", "warn")
    assert re.search(r"r2/results\.jsonl:6: torn last line", warning.text)


def test_the_page_escapes_text_and_loads_nothing_from_the_network(trend_html, page):
    assert "/model.0/<b>&" not in trend_html and "/model.0/&lt;b&gt;&amp;" in trend_html
    assert "default-src 'none'" in trend_html
    for element in page.find_all():
        assert element.tag not in ("script", "link", "img", "iframe") and "src" not in element.attrs
        assert not re.match(r"(https?:)?//", element.attrs.get("href") or "")
    assert "url(" not in trend_html and "@import" not in trend_html


def test_an_empty_history_renders_a_page_saying_so(tmp_path):
    page = parse_html(render_trend(load_history(tmp_path / "nothing"), tmp_path / "t.html").read_text())
    assert "0 runs" in page.find("header").text and "No records in this history" in page.text


def test_a_square_title_names_the_failure_category_or_the_fallback_count():
    fail = make_record("s", "v", "trt86-orin", "fail", fail=FAIL)
    assert square_title("r9", fail) == "r9: fail (no-implementation)"
    one = make_record("s", "v", "trt86-orin", "fallback", fallback_nodes=["/a"], precision={"/a": "fp32"})
    assert square_title("r9", one) == "r9: fallback (1 fallback node)"
    assert square_title("r9", None) == "r9: no record"
