"""The report in a real browser (headless Chromium through chromedriver): the planning verdict of a known results
file, filters that hide rows, panels that open and close with and without JavaScript, shareable cell addresses,
and nothing fetched from the network. Skipped where Chromium is missing, except in CI (CI=true), where it fails."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.harness.commands.test_main import harness
from tests.reports.conftest import ISSUE, make_record, write_jsonl

CHROMIUM = [shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")]
CHROMEDRIVER = shutil.which("chromedriver")
NOTE = "ONNX Runtime has no analogue of the TensorRT Conv + PWN fusion."


def _browser_or_skip():
    missing = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[test]')")
    if not any(CHROMIUM):
        missing.append("Chromium (apt-get install chromium)")
    if not CHROMEDRIVER:
        missing.append("chromedriver (apt-get install chromium-driver)")
    if missing:
        message = "a real browser is needed: missing " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def chromium(javascript: bool, width: int = 1400):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = next(path for path in CHROMIUM if path)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", f"--window-size={width},1000"):
        options.add_argument(argument)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The report of a known results file, written by the real command: S1 fails on trt86-orin (its workaround
    passes there), passes on ort-cpu (with ONNX Runtime's note); the control passes on both."""
    _browser_or_skip()
    tmp = tmp_path_factory.mktemp("browser")
    index = {"format": "trt-matrix/cases/1", "cases": [
        {"id": "s1-conv-silu", "title": "YOLO stem Conv + SiLU", "pattern": "S1", "links": [ISSUE],
         "backend_notes": {"onnxruntime": NOTE}, "remedy": "Mark the Sigmoid's output as a network output.",
         "variants": [
             {"name": "stem", "role": "failing", "description": "as reported", "mode": "implicit-int8",
              "claims": [{"target": "trt86-orin", "outcome": "fail", "source": ISSUE, "strength": "issue-thread",
                          "category": "no-implementation", "note": ""}]},
             {"name": "sigmoid-output-marked", "role": "workaround", "description": "the maintainer's workaround",
              "mode": "implicit-int8", "claims": []}]},
        {"id": "control-qdq", "title": "Control: Q/DQ Conv + ReLU", "pattern": "control", "links": [],
         "variants": [{"name": "conv-relu", "role": "control", "description": "the plainest Q/DQ conv",
                       "mode": "explicit-qdq", "claims": []}]}]}
    (tmp / "cases").mkdir()
    (tmp / "cases" / "index.json").write_text(json.dumps(index))
    fail = ("no-implementation", "Could not find any implementation for node /model.0/conv/Conv", "/model.0/conv/Conv")
    records = [
        make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=fail, log="[TRT] [E] 10: build failed"),
        make_record("s1-conv-silu", "sigmoid-output-marked", "trt86-orin", "pass"),
        make_record("s1-conv-silu", "stem", "ort-cpu", "pass"),
        make_record("s1-conv-silu", "sigmoid-output-marked", "ort-cpu", "fallback", fallback_nodes=["/model.0/conv/Conv"],
                    precision={"/model.0/conv/Conv": "fp32"}),
        make_record("control-qdq", "conv-relu", "trt86-orin", "pass"),
        make_record("control-qdq", "conv-relu", "ort-cpu", "pass"),
    ]
    results = write_jsonl(tmp / "results.jsonl", records)
    harness("report", "--results", str(results), "--cases", str(tmp / "cases"), "--out", str(tmp / "index.html"),
            "--trend", "trend.html")
    return tmp / "index.html"


@pytest.fixture(scope="module")
def with_js():
    _browser_or_skip()
    driver = chromium(javascript=True)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def without_js():
    _browser_or_skip()
    driver = chromium(javascript=False)
    yield driver
    driver.quit()


def open_page(driver, page: Path, anchor: str = ""):
    driver.get(page.as_uri() + anchor)
    driver.get_log("performance")  # start each check with an empty network log
    return driver


def matrix_cell(driver, row: str, column: str):
    """The full matrix's cell of row ``case/variant`` in the column of target ``column`` (cells carry no id)."""
    from selenium.webdriver.common.by import By

    heads = driver.find_elements(By.CSS_SELECTOR, "table.matrix thead th.colhead")
    index = [th.get_attribute("data-target") for th in heads].index(column)
    return driver.find_element(By.CSS_SELECTOR, f"table.matrix tr[id='{row}'] > td:nth-of-type({index + 1})")


def verdict(driver, pattern: str, target: str) -> str:
    from selenium.webdriver.common.by import By

    cell = driver.find_element(By.CSS_SELECTOR, f'tr#plan-{pattern} td[data-target="{target}"]')
    return " ".join(cell.find_element(By.TAG_NAME, "summary").text.split())


def test_the_planning_view_answers_with_one_verdict_per_pattern_and_target(with_js, page):
    from selenium.webdriver.common.by import By

    open_page(with_js, page)
    with_js.find_element(By.ID, "plan-show-all").click()  # trt92-orin, an older release, is hidden by default
    assert verdict(with_js, "S1", "trt86-orin") == "W works with workaround sigmoid-output-marked"
    assert verdict(with_js, "S1", "ort-cpu").startswith("✓ works as reported ℹ ONNX Runtime note")
    assert verdict(with_js, "control", "trt86-orin") == "✓ works as reported"
    assert verdict(with_js, "S1", "trt92-orin") == "⊘ cannot exist"
    columns = [th.get_attribute("data-target") for th in with_js.find_elements(By.CSS_SELECTOR, "table.plan th.ptarget")]
    # observed targets and those that cannot exist (⊘; the 2026 matrix's DLA targets of 10.16 on Orin and of Thor
    # too), by platform, release, version; ORT apart
    assert columns == ["trt86-orin", "trt92-orin", "trt102-orin", "trt1016-orin-dla", "trt114-thor-dla", "ort-cpu"]
    recommend = with_js.find_element(By.CSS_SELECTOR, 'tr#plan-S1 [data-recommend="S1"]').text
    assert "TensorRT · Jetson AGX Orin: trt86-orin (works with workaround sigmoid-output-marked)" in recommend
    assert "What to do: Mark the Sigmoid's output as a network output." in with_js.find_element(
        By.CSS_SELECTOR, "tr#plan-S1 th").text


def test_filters_hide_rows_and_columns(with_js, page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_page(with_js, page)

    def shown():
        return [row.get_attribute("id") for row in with_js.find_elements(By.CSS_SELECTOR, "table.matrix tr[data-variant]")
                if row.is_displayed()]

    assert shown() == ["s1-conv-silu/stem", "s1-conv-silu/sigmoid-output-marked", "control-qdq/conv-relu"]
    counts = {box.get_attribute("value"): box.find_element(By.XPATH, "..").text
              for box in with_js.find_elements(By.CSS_SELECTOR, "#f-outcome input")}
    assert counts["fail"] == "fail (1)" and counts["pass"] == "pass (4)" and counts["fallback"] == "fallback (1)"
    search = with_js.find_element(By.ID, "f-text")
    search.send_keys("sigmoid")
    assert shown() == ["s1-conv-silu/sigmoid-output-marked"]
    assert "showing 1 of 3 variants" in with_js.find_element(By.ID, "f-count").text
    search.clear()
    search.send_keys(" ")  # an input event with an empty query: every row again
    for box in with_js.find_elements(By.CSS_SELECTOR, "#f-outcome input"):
        if box.get_attribute("value") != "fail":
            box.click()
    assert shown() == ["s1-conv-silu/stem"]  # the only variant with a fail cell
    with_js.find_element(By.CSS_SELECTOR, "#filters button[type=reset]").click()
    Select(with_js.find_element(By.ID, "f-version")).select_by_visible_text("8.6")
    heads = [th.get_attribute("data-target") for th in with_js.find_elements(By.CSS_SELECTOR, "th.colhead")
             if th.is_displayed()]
    assert heads == ["trt86-x86", "trt86-orin"]  # 8.6.1 and 8.6.2


def test_with_javascript_one_drawer_shows_a_panel_at_a_time_and_closes(with_js, page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    open_page(with_js, page)
    drawer = with_js.find_element(By.ID, "drawer")
    failed = matrix_cell(with_js, "s1-conv-silu/stem", "trt86-orin")
    failed.find_element(By.TAG_NAME, "summary").click()
    assert drawer.is_displayed()
    text = drawer.text
    assert "s1-conv-silu / stem on trt86-orin" in text and "[TRT] [E] 10: build failed" in text
    assert "Could not find any implementation for node /model.0/conv/Conv" in text and "agrees" in text
    assert with_js.current_url.endswith("#s1-conv-silu/stem@trt86-orin")  # a shareable address
    assert not with_js.find_elements(By.CSS_SELECTOR, "details[open]")  # the drawer, not an inline panel
    other = matrix_cell(with_js, "s1-conv-silu/stem", "ort-cpu")
    other.find_element(By.TAG_NAME, "summary").click()  # the cell stays clickable: the drawer sits beside the page
    assert "s1-conv-silu / stem on ort-cpu" in drawer.text and "build failed" not in drawer.text
    assert NOTE in drawer.text
    with_js.find_element(By.CSS_SELECTOR, "#drawer .close").click()
    assert not drawer.is_displayed()
    with_js.find_element(By.CSS_SELECTOR, 'tr#plan-S1 td[data-target="trt86-orin"] summary').click()
    assert "works with workaround" in drawer.text and "sigmoid-output-marked" in drawer.text
    with_js.find_element(By.CSS_SELECTOR, 'tr#plan-S1 td[data-target="ort-cpu"] summary').click()
    assert "works as reported" in drawer.text and NOTE in drawer.text  # an ONNX Runtime verdict carries its note
    with_js.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    assert not drawer.is_displayed()


def test_a_shared_cell_address_opens_that_cell(with_js, page):
    from selenium.webdriver.common.by import By

    open_page(with_js, page, "#s1-conv-silu/sigmoid-output-marked@ort-cpu")
    drawer = with_js.find_element(By.ID, "drawer")
    assert drawer.is_displayed() and "s1-conv-silu / sigmoid-output-marked on ort-cpu" in drawer.text
    assert "/model.0/conv/Conv" in drawer.text
    link = drawer.find_element(By.LINK_TEXT, "this cell, night after night")
    assert link.get_attribute("href").endswith("trend.html#s1-conv-silu/sigmoid-output-marked")


def test_without_javascript_every_panel_opens_and_closes_in_place(without_js, page):
    from selenium.webdriver.common.by import By

    open_page(without_js, page)
    assert not without_js.find_element(By.ID, "filters").is_displayed()  # filters need JavaScript: hidden
    for holder in (matrix_cell(without_js, "s1-conv-silu/stem", "trt86-orin"),
                   without_js.find_element(By.CSS_SELECTOR, 'tr#plan-S1 td[data-target="trt86-orin"]'),
                   without_js.find_element(By.CSS_SELECTOR, 'th.colhead[data-target="trt86-orin"]')):
        summary = holder.find_element(By.TAG_NAME, "summary")
        panel = holder.find_element(By.CLASS_NAME, "pop")
        assert not panel.is_displayed()
        summary.click()
        assert panel.is_displayed() and panel.text
        summary.click()  # Selenium refuses a click on a covered element: the panel leaves its opener in view
        assert not panel.is_displayed()
    failed = matrix_cell(without_js, "s1-conv-silu/stem", "trt86-orin")
    failed.find_element(By.TAG_NAME, "summary").click()
    assert "Could not find any implementation for node /model.0/conv/Conv" in failed.find_element(By.CLASS_NAME, "pop").text


# A plan of eight targets in six releases: three NGC releases on x86 (upstream claims only), three L4T releases on
# Orin (JetPack 6.0 observed, 6.1 with its DLA twin and 7.2 claimed), ONNX Runtime observed.
WIDE_MATRIX = {
    "trt100-x86": ("x86_64", "10.0.1", "nvcr.io/nvidia/tensorrt:24.05-py3", ""),
    "trt103-x86": ("x86_64", "10.3.0", "nvcr.io/nvidia/tensorrt:24.08-py3", ""),
    "trt1016-x86": ("x86_64", "10.16.1", "nvcr.io/nvidia/tensorrt:26.02-py3", ""),
    "trt86-orin": ("orin", "8.6.2", "nvcr.io/nvidia/l4t-jetpack:r36.3.0", "JetPack 6.0"),
    "trt103-orin": ("orin", "10.3.0", "nvcr.io/nvidia/l4t-jetpack:r36.4.0", "JetPack 6.1"),
    "trt103-orin-dla": ("orin", "10.3.0", "nvcr.io/nvidia/l4t-jetpack:r36.4.0", "JetPack 6.2"),
    "trt1016-orin": ("orin", "10.16.1", "nvcr.io/nvidia/l4t-jetpack:r39.2.0", "JetPack 7.2"),
}
# newest of each line, the observed, and the targets a recommendation names (upstream claims a pass on trt100-x86 and
# trt103-x86, where nothing observed works on x86)
DEFAULT_VIEW = ["trt100-x86", "trt103-x86", "trt1016-x86", "trt86-orin", "trt1016-orin", "ort-cpu"]


@pytest.fixture(scope="module")
def wide_page(tmp_path_factory) -> Path:
    """The report of a matrix of several releases per platform line, written by the real command."""
    import yaml

    _browser_or_skip()
    tmp = tmp_path_factory.mktemp("wide")
    targets = {"ort-cpu": {"title": "ONNX Runtime (CPU)", "backend": "onnxruntime", "runner": "local",
                           "platform": "any", "default": True}}
    for target, (platform, version, image, jetpack) in WIDE_MATRIX.items():
        targets[target] = {"title": f"TensorRT {version} ({jetpack + ', ' if jetpack else ''}{image})",
                           "backend": "tensorrt", "runner": "docker", "platform": platform, "version": version,
                           "recipe": "tensorrt", "base_image": image, "python": "3.10", "glibc": "2.35"}
    (tmp / "matrix.yaml").write_text(yaml.safe_dump({"targets": targets}))
    claims = [{"target": target, "outcome": "pass", "source": ISSUE, "strength": "issue-thread", "category": None,
               "note": ""} for target in WIDE_MATRIX if target != "trt86-orin"]
    index = {"format": "trt-matrix/cases/1", "cases": [
        {"id": "s1-conv-silu", "title": "YOLO stem Conv + SiLU", "pattern": "S1", "links": [ISSUE],
         "variants": [{"name": "stem", "role": "failing", "description": "as reported", "mode": "implicit-int8",
                       "claims": claims}]}]}
    (tmp / "cases").mkdir()
    (tmp / "cases" / "index.json").write_text(json.dumps(index))
    results = write_jsonl(tmp / "results.jsonl", [make_record("s1-conv-silu", "stem", "trt86-orin", "pass"),
                                                  make_record("s1-conv-silu", "stem", "ort-cpu", "pass")])
    harness("--matrix", str(tmp / "matrix.yaml"), "report", "--results", str(results), "--cases",
            str(tmp / "cases"), "--out", str(tmp / "index.html"))
    return tmp / "index.html"


def plan_view(driver):
    """(the plan's shown target columns, the shown release headings with their spans, the hidden-count line)."""
    from selenium.webdriver.common.by import By

    targets = [th.get_attribute("data-target") for th in driver.find_elements(By.CSS_SELECTOR, "table.plan th.ptarget")
               if th.is_displayed()]
    cells = [td.get_attribute("data-target") for td in driver.find_elements(By.CSS_SELECTOR, "tr#plan-S1 td.v")
             if td.is_displayed()]
    assert cells == targets  # a hidden column hides its verdicts too
    releases = [(th.text, int(th.get_attribute("colspan"))) for th in
                driver.find_elements(By.CSS_SELECTOR, "table.plan tr.releases th") if th.is_displayed()]
    return targets, releases, driver.find_element(By.CSS_SELECTOR, "#plan-columns .plan-hidden").text


def group_box(driver, label: str):
    from selenium.webdriver.common.by import By

    (box,) = [label_ for label_ in driver.find_elements(By.CSS_SELECTOR, "#plan-columns label")
              if label_.text.split(" (")[0] == label]
    return box.find_element(By.TAG_NAME, "input")


def test_the_default_plan_shows_the_newest_release_of_each_line_and_every_observed_target(with_js, wide_page):
    open_page(with_js, wide_page)
    targets, releases, hidden = plan_view(with_js)
    assert targets == DEFAULT_VIEW
    assert releases == [("NGC 24.05", 1), ("NGC 24.08", 1), ("NGC 26.02", 1), ("JetPack 6.0 · L4T R36.3", 1),
                        ("JetPack 7.2 · L4T R39.2", 1), ("", 1)]
    assert hidden.startswith("2 of 8 targets hidden (default view): show all")
    assert group_box(with_js, "NGC 26.02").is_selected() and group_box(with_js, "NGC 24.08").is_selected()
    assert not group_box(with_js, "JetPack 6.1/6.2 · L4T R36.4").is_selected()
    assert group_box(with_js, "JetPack 6.1/6.2 · L4T R36.4").get_attribute("indeterminate") is None


def test_a_release_group_is_hidden_and_shown_with_its_box(with_js, wide_page):
    from selenium.webdriver.common.by import By

    open_page(with_js, wide_page)
    for release in ("NGC 24.05", "NGC 24.08", "NGC 26.02"):  # the x86 line's shown releases: the line's heading goes
        group_box(with_js, release).click()
    targets, releases, hidden = plan_view(with_js)
    assert targets == ["trt86-orin", "trt1016-orin", "ort-cpu"] and "5 of 8 targets hidden:" in hidden
    lines = [th.get_attribute("textContent") for th in with_js.find_elements(By.CSS_SELECTOR, "table.plan tr.groups th")
             if th.is_displayed()]
    assert lines[1:] == ["TensorRT · Jetson AGX Orin", "ONNX Runtime"]  # after the corner
    group_box(with_js, "JetPack 6.1/6.2 · L4T R36.4").click()
    targets, releases, _ = plan_view(with_js)
    assert targets == ["trt86-orin", "trt103-orin", "trt103-orin-dla", "trt1016-orin", "ort-cpu"]
    assert ("JetPack 6.1/6.2 · L4T R36.4", 2) in releases
    orin = next(th for th in with_js.find_elements(By.CSS_SELECTOR, "table.plan tr.groups th")
                if th.get_attribute("textContent") == "TensorRT · Jetson AGX Orin")
    assert orin.get_attribute("colspan") == "4"
    with_js.find_element(By.ID, "plan-default").click()
    assert plan_view(with_js)[0] == DEFAULT_VIEW
    with_js.find_element(By.ID, "plan-show-all").click()
    targets, _, hidden = plan_view(with_js)
    assert targets == [*WIDE_MATRIX, "ort-cpu"] and hidden.startswith("all 8 targets shown.")
    assert not with_js.find_element(By.ID, "plan-show-all").is_displayed()


def test_without_javascript_the_plan_shows_every_target_and_no_group_boxes(without_js, wide_page):
    from selenium.webdriver.common.by import By

    open_page(without_js, wide_page)
    assert not without_js.find_element(By.ID, "plan-columns").is_displayed()
    shown = [th.get_attribute("data-target") for th in
             without_js.find_elements(By.CSS_SELECTOR, "table.plan th.ptarget") if th.is_displayed()]
    assert shown == [*WIDE_MATRIX, "ort-cpu"]


@pytest.fixture(scope="module")
def predicted_page(tmp_path_factory) -> Path:
    """The report of a Q/DQ form whose index carries the engine predicted by TensorRT's rules (as `generate` writes
    it), run on trt86-orin only: trt1016-x86 has nothing but the prediction, ort-cpu nothing at all."""
    import yaml

    _browser_or_skip()
    tmp = tmp_path_factory.mktemp("predicted")
    targets = {"ort-cpu": {"title": "ONNX Runtime (CPU)", "backend": "onnxruntime", "runner": "local",
                           "platform": "any", "default": True}}
    for target in ("trt1016-x86", "trt86-orin"):
        platform, version, image, jetpack = WIDE_MATRIX[target]
        targets[target] = {"title": f"TensorRT {version}", "backend": "tensorrt", "runner": "docker",
                           "platform": platform, "version": version, "recipe": "tensorrt", "base_image": image,
                           "python": "3.10", "glibc": "2.35"}
    (tmp / "matrix.yaml").write_text(yaml.safe_dump({"targets": targets}))
    conv = {"precision": "int8", "rule": "weighted-int8-output"}
    add = {"precision": "fp32", "rule": "residual-add-fusion"}
    index = {"format": "trt-matrix/cases/1", "cases": [
        {"id": "p3-residual-add-qdq", "title": "Residual Add with Q/DQ", "pattern": "P3", "links": [ISSUE],
         "variants": [{"name": "identity-float", "role": "failing", "description": "as reported",
                       "mode": "explicit-qdq", "claims": [], "predicted_engine": {
                           "trt-8.6": {"/conv/Conv": conv, "/add/Add": add}, "trt-10.12": {"/conv/Conv": conv}}}]}]}
    (tmp / "cases").mkdir()
    (tmp / "cases" / "index.json").write_text(json.dumps(index))
    results = write_jsonl(tmp / "results.jsonl", [make_record("p3-residual-add-qdq", "identity-float", "trt86-orin",
                                                              "pass")])
    harness("--matrix", str(tmp / "matrix.yaml"), "report", "--results", str(results), "--cases",
            str(tmp / "cases"), "--out", str(tmp / "index.html"))
    return tmp / "index.html"


@pytest.mark.parametrize("javascript", [True, False])
def test_a_cell_with_nothing_but_the_rules_prediction_says_predicted_not_observed(javascript, with_js, without_js,
                                                                                  predicted_page):
    """Issue 30 item 4: the prediction answers where nothing ran (hatched, never an observed verdict); a cell with a
    record is the record's, though the rules of its version predict a fallback there; nothing is predicted on ONNX
    Runtime."""
    from selenium.webdriver.common.by import By

    driver = open_page(with_js if javascript else without_js, predicted_page)  # both shown: newest and observed
    assert verdict(driver, "P3", "trt1016-x86") == "~ predicted pass (weighted-int8-output), ruleset trt-10.12"
    assert verdict(driver, "P3", "trt86-orin") == "✓ works as reported"
    cell = driver.find_element(By.CSS_SELECTOR, 'tr#plan-P3 td[data-target="trt1016-x86"]')
    assert "v-rule-predicted" in cell.get_attribute("class").split()
    assert "repeating-linear-gradient" in cell.value_of_css_property("background-image")  # hatched: not observed
    cell.find_element(By.TAG_NAME, "summary").click()  # its panel: in the one drawer with JavaScript, else in place
    details = " ".join((driver.find_element(By.ID, "drawer") if javascript else cell).text.split())
    assert "predicted from TensorRT's documented rules, not observed" in details
    assert "all 1 quantized node(s) the form expects predicted in the precision asked" in details
    left_out = driver.find_element(By.XPATH, "//section[@id='plan']//p[starts-with(normalize-space(), 'Not shown')]")
    assert "ort-cpu" in left_out.text  # nothing known there: no engine to predict


def test_nothing_is_fetched_from_the_network(with_js, page):
    from selenium.webdriver.common.by import By

    with_js.get(page.as_uri())
    matrix_cell(with_js, "s1-conv-silu/stem", "trt86-orin").find_element(By.TAG_NAME, "summary").click()
    requested = []
    for entry in with_js.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    assert requested and all(url.startswith("file://") for url in requested), requested
