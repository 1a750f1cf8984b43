"""The trend and regressions page as a user reads it: what changed in each series' latest run, strips lined up by date,
environment changes, flaky cells, what the latest run carried over, and what could not be read."""
from __future__ import annotations

import re

import pytest

from harness.matrix import load_matrix
from harness.store.history import CellOutcome, HistoryStore
from reports.trend import render_trend, square_title
from tests.reports.conftest import Element, make_record, parse_html, write_run

FAIL = ("no-implementation", "Could not find any implementation", "/model.0/<b>&")
TRT = "trt86-orin@orin-01"
ORT = "ort-cpu@cpu-01"


def record(case: str, variant: str, outcome: str, run: str, *, target: str = "trt86-orin", host: str = "orin-01",
           carried_from: str | None = None, environment: dict | None = None, **kwargs) -> dict:
    if outcome == "fail":
        kwargs.setdefault("fail", FAIL)
    if outcome == "infra-error":
        kwargs.setdefault("fail", ("harness", "docker daemon went away", None))
    provenance = {"run": run, "host": host, "carried_over_from": carried_from}
    made = make_record(case, variant, target, outcome, provenance=provenance, **kwargs)
    if environment:
        made["environment"] = {**made["environment"], **environment}
    return made


def page_of(root, tmp_path, **kwargs) -> Element:
    with HistoryStore(root) as store:
        return parse_html(render_trend(store, tmp_path / "out" / "trend.html", **kwargs).read_text())


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
    with HistoryStore(history_root) as store:
        return render_trend(store, tmp_path / "out" / "trend.html", notes=["a note"],
                            targets=load_matrix()).read_text()


@pytest.fixture
def page(trend_html) -> Element:
    return parse_html(trend_html)


def changes(page: Element, series: str, kind: str) -> dict[str, str]:
    """The cells a series lists under ``kind`` in the changes of its latest run, with their row text."""
    article = page.find("article", data_series=series)
    return {row.attrs["data-cell"]: row.text
            for box in article.find_all("div", data_kind=kind) for row in box.find_all("tr")}


def strip(page: Element, case: str, variant: str, series: str) -> tuple[Element, list[Element]]:
    cell = page.find("tr", data_case=case, data_variant=variant).find("td", data_series=series)
    return cell, cell.find_all("i", "sq")


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


def test_an_infra_error_is_not_compared_and_collapses_to_one_line_with_a_count(page):
    assert "control-qdq/conv-relu" not in changes(page, TRT, "regression")
    [line] = page.find("article", data_series=TRT).find_all("div", data_kind="not-compared")
    assert line.attrs["data-count"] == "1"
    summary = line.find("summary").text
    assert summary.startswith("Not compared: 1 cell in run r3 (infra-error 1)") and "never counted as a regression" in summary
    assert "pass -> infra-error (harness)" in changes(page, TRT, "not-compared")["control-qdq/conv-relu"]


def test_new_and_gone_cells_are_listed(page):
    assert list(changes(page, TRT, "new")) == ["s3-depthwise-qdq/dw"]
    assert list(changes(page, TRT, "gone")) == ["s4-bn-mish/fused"]
    assert "pass -> no record" in changes(page, TRT, "gone")["s4-bn-mish/fused"]


def test_the_summary_counts_each_kind_per_series_and_highlights_regressions(page):
    row = page.find("tr", data_series=TRT)
    counts = {td.attrs["data-kind"]: int(td.text) for td in row.find_all("td") if "data-kind" in td.attrs}
    assert counts == {"regression": 1, "progression": 1, "flaky": 0, "changed": 0, "not-compared": 1, "new": 1,
                      "gone": 1, "unchanged": 1}
    assert "bad" in row.find("td", data_kind="regression").classes and "regressed" in row.classes
    assert "r2 → r3" in row.text


def test_a_series_with_a_single_run_has_nothing_to_compare(page):
    assert "first run" in page.find("tr", data_series=ORT).text
    article = page.find("article", data_series=ORT)
    assert "first run (c1): nothing to compare." in article.text and not article.find_all("div", "changes")


def test_a_series_without_regressions_says_so(history_root, tmp_path):
    write_run(history_root, "c2", "cpu-01", "2026-11-24T03:00:00+00:00",
              [record("s1-conv-silu", "stem", "pass", "c2", target="ort-cpu", host="cpu-01")])
    box = page_of(history_root, tmp_path).find("article", data_series=ORT).find("div", data_kind="regression")
    assert "No regressions." in box.text and "none" in box.classes


def test_strips_have_one_square_per_night_the_same_nights_in_every_series(page):
    _, trt = strip(page, "s1-conv-silu", "stem", TRT)
    _, ort = strip(page, "s1-conv-silu", "stem", ORT)
    nights = ["2026-11-21", "2026-11-22", "2026-11-23"]
    assert [sq.attrs["data-date"] for sq in trt] == nights == [sq.attrs["data-date"] for sq in ort]
    assert [sq.attrs["data-outcome"] for sq in ort] == ["no-run", "no-run", "pass"]
    assert "norun" in ort[0].classes and ort[0].attrs["title"] == "2026-11-21: no run of this series"
    axis = page.find("th", data_series=ORT).find("span", "axis")
    assert [i.attrs["title"] for i in axis.find_all("i")] == nights and axis.text == "212223"
    assert "nights 2026-11-21 … 2026-11-23" in page.find("th", data_series=ORT).text


def test_a_trend_strip_names_run_outcome_and_evidence_the_latest_marked(page):
    _, squares = strip(page, "s1-conv-silu", "split-output", TRT)
    assert [sq.attrs["data-outcome"] for sq in squares] == ["fallback", "fail", "pass"]
    assert [f"o-{o}" in sq.classes for sq, o in zip(squares, ["fallback", "fail", "pass"])] == [True] * 3
    assert ["latest" in sq.classes for sq in squares] == [False, False, True]
    assert [sq.attrs["title"] for sq in squares] == [
        "2026-11-21 (r1): fallback (2 fallback nodes)", "2026-11-22 (r2): fail (no-implementation)",
        "2026-11-23 (r3): pass"]


def test_a_run_without_a_record_of_the_cell_is_an_empty_square(page):
    _, squares = strip(page, "s4-bn-mish", "fused", TRT)
    assert [sq.attrs["data-outcome"] for sq in squares] == ["pass", "pass", "none"]
    assert "none" in squares[-1].classes and squares[-1].attrs["title"] == "2026-11-23 (r3): no record"


def test_a_carried_over_square_is_marked_and_names_its_source_run(page):
    _, squares = strip(page, "s2-instancenorm", "affine", TRT)
    assert ["carried" in sq.classes for sq in squares] == [False, True, True]
    assert squares[1].attrs["title"] == "2026-11-22 (r2): pass, carried over from r1"


def test_a_row_says_when_the_last_change_of_its_cell_is_a_regression_or_progression(page):
    cell, _ = strip(page, "s1-conv-silu", "stem", TRT)
    assert cell.attrs["data-last-change"] == "regression" and "▼" in cell.text
    row = page.find("tr", data_case="s1-conv-silu", data_variant="stem")
    assert "regressed" in row.classes and "regressed: trt86-orin @ orin-01" in row.text
    progressed, _ = strip(page, "s1-conv-silu", "split-output", TRT)
    assert progressed.attrs["data-last-change"] == "progression" and "▲" in progressed.text
    not_compared, _ = strip(page, "control-qdq", "conv-relu", TRT)
    assert "data-last-change" not in not_compared.attrs


def test_a_series_without_the_cell_shows_no_strip(page):
    cell, squares = strip(page, "control-qdq", "conv-relu", ORT)
    assert squares == [] and cell.text == "–"


def test_only_the_last_n_nights_are_drawn(history_root, tmp_path):
    page = page_of(history_root, tmp_path, last=2)
    _, squares = strip(page, "s1-conv-silu", "split-output", TRT)
    assert [sq.attrs["title"][:16] for sq in squares] == ["2026-11-22 (r2):", "2026-11-23 (r3):"]
    assert "Trend over the last 2 nights" in page.text


def test_series_are_ordered_by_platform_then_version_not_as_text(tmp_path):
    root = tmp_path / "history"
    for target, host in (("ort-cpu", "cpu-01"), ("trt100-orin", "orin-01"), ("trt86-orin", "orin-01"),
                         ("trt100-x86", "gpu-01"), ("trt86-x86", "gpu-01")):
        write_run(root, f"{target}-run", host, "2026-11-23T02:00:00+00:00",
                  [record("s1-conv-silu", "stem", "pass", f"{target}-run", target=target, host=host)])
    page = page_of(root, tmp_path, targets=load_matrix())
    order = [th.attrs["data-series"] for th in page.find("table", "trend").find_all("th", scope="col")]
    assert order == ["trt86-x86@gpu-01", "trt100-x86@gpu-01", "trt86-orin@orin-01", "trt100-orin@orin-01",
                     "ort-cpu@cpu-01"]


@pytest.fixture
def masked_root(tmp_path):
    """One series of five nights: pass, pass, pass, infra-error, fail (a regression behind an infra-error night), a
    cell that flips every night, and a driver update on the third night."""
    root = tmp_path / "history"
    flips = ["pass", "fail", "pass", "fail", "pass"]
    masked = ["pass", "pass", "pass", "infra-error", "fail"]
    for night, (masked_outcome, flip) in enumerate(zip(masked, flips), start=1):
        run = f"n{night}"
        driver = "540.3.0" if night < 3 else "555.42.02"
        gpus = {"gpus": [{"name": "Orin", "compute_cap": "8.7", "driver_version": driver}]}
        write_run(root, run, "orin-01", f"2026-11-{night:02d}T02:00:00+00:00", [
            record("s1-conv-silu", "stem", masked_outcome, run, environment=gpus),
            record("s5-qdq-resnet-block", "identity", flip, run, environment=gpus),
            record("control-qdq", "conv-relu", "pass", run, environment=gpus),
        ])
    return root


def test_pass_then_infra_error_then_fail_is_a_regression(masked_root, tmp_path):
    page = page_of(masked_root, tmp_path)
    regressions = changes(page, TRT, "regression")
    assert list(regressions) == ["s1-conv-silu/stem"]
    assert "pass -> fail (no-implementation at /model.0/<b>&) (last comparable outcome in run n3)" in \
        regressions["s1-conv-silu/stem"]
    assert page.find("tr", data_case="s1-conv-silu", data_variant="stem").find(
        "td", data_series=TRT).attrs["data-last-change"] == "regression"


def test_a_cell_that_flips_is_flaky_not_a_regression_or_progression(masked_root, tmp_path):
    page = page_of(masked_root, tmp_path)
    flaky = changes(page, TRT, "flaky")
    assert list(flaky) == ["s5-qdq-resnet-block/identity"]
    assert "changed 4 times in the last 5 runs" in flaky["s5-qdq-resnet-block/identity"]
    assert "s5-qdq-resnet-block/identity" not in changes(page, TRT, "progression")
    row = page.find("tr", data_case="s5-qdq-resnet-block", data_variant="identity")
    assert "flaky" in row.classes and "≈ flaky: trt86-orin @ orin-01" in row.text
    tolerant = page_of(masked_root, tmp_path, flaky_flips=4)  # 4 flips are within a limit of 4
    assert list(changes(tolerant, TRT, "progression")) == ["s5-qdq-resnet-block/identity"]


def test_a_night_whose_driver_changed_is_marked_on_the_strip(masked_root, tmp_path):
    page = page_of(masked_root, tmp_path)
    _, squares = strip(page, "control-qdq", "conv-relu", TRT)
    assert ["env" in sq.classes for sq in squares] == [False, False, True, False, False]
    assert squares[2].attrs["title"].endswith("environment changed: driver 540.3.0 -> 555.42.02")
    [night] = page.find("article", data_series=TRT).find("div", data_kind="environment").find_all("li")
    assert night.attrs["data-env-run"] == "n3" and "driver 540.3.0 -> 555.42.02" in night.text
    assert "env" in page.find("th", data_series=TRT).find("i", None, title="2026-11-03: driver 540.3.0 -> 555.42.02").classes


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
    assert "last 14 nights" in header and "a note" in header
    [warning] = page.find("header").find_all("li", "warn")
    assert re.search(r"r2/results\.jsonl:6: torn last line", warning.text)


def test_rows_have_shareable_anchors_and_link_the_matrix(history_root, tmp_path):
    page = page_of(history_root, tmp_path, index_href="index.html")
    row = page.find("tr", data_case="s1-conv-silu", data_variant="stem")
    assert row.attrs["id"] == "s1-conv-silu/stem"
    assert row.find("a", "vname").attrs["href"] == "index.html#s1-conv-silu/stem"
    assert page.find("a", None, id="index-link").attrs["href"] == "index.html"
    assert page.find("tr", data_cell="s1-conv-silu/stem").find("a").attrs["href"] == "#s1-conv-silu/stem"


def test_the_page_escapes_text_and_loads_nothing_from_the_network(trend_html, page):
    assert "/model.0/<b>&" not in trend_html and "/model.0/&lt;b&gt;&amp;" in trend_html
    assert "default-src 'none'" in trend_html
    for element in page.find_all():
        assert element.tag not in ("script", "link", "img", "iframe") and "src" not in element.attrs
        assert not re.match(r"(https?:)?//", element.attrs.get("href") or "")
    assert "url(" not in trend_html and "@import" not in trend_html


def test_an_empty_history_renders_a_page_saying_so(tmp_path):
    page = page_of(tmp_path / "nothing", tmp_path)
    assert "0 runs" in page.find("header").text and "No records in this history" in page.text


def test_a_square_title_names_the_failure_category_or_the_fallback_count():
    assert square_title("2026-11-23", "r9", CellOutcome("fail", "no-implementation", 0, None)) == \
        "2026-11-23 (r9): fail (no-implementation)"
    assert square_title("2026-11-23", "r9", CellOutcome("fallback", None, 1, "r8")) == \
        "2026-11-23 (r9): fallback (1 fallback node), carried over from r8"
    assert square_title("2026-11-23", "r9", None) == "2026-11-23 (r9): no record"
    assert square_title("2026-11-23", None, None) == "2026-11-23: no run of this series"
