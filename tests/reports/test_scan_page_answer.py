"""The scan page answers first: the same answer as the command's text, then findings x targets (targets grouped by
platform, one coloured cell each, linked to the evidence), each finding's evidence once; read in headless Chromium at
1366x768 and at a phone's width."""
from __future__ import annotations

import contextlib

import pytest

from harness.matrix import load_matrix
from harness.scan.answer import answer
from tests.harness.commands.test_main import harness
from tests.models.fixtures import model_files  # noqa: F401
from tests.reports.conftest import parse_html
from tests.reports.test_browser import _browser_or_skip, chromium


@pytest.fixture(scope="module")
def yolo_page(tmp_path_factory, model_files):
    out = tmp_path_factory.mktemp("yolo-page")
    harness("scan", str(model_files["backbone-silu"]), "--out", str(out), check=False)
    return out / "scan.html", out / "scan.json"


def test_the_page_leads_with_the_answer_the_command_prints(yolo_page):
    import json

    html, data = yolo_page
    tree = parse_html(html.read_text())
    a = answer(json.loads(data.read_text()))
    assert tree.find("p", id="headline").text == a["headline"]
    section = tree.find("section", id="answer")
    groups = section.find_all("div", cls="group")
    assert [g.attrs["data-verdict"] for g in groups] == [g["verdict"] for g in a["groups"]]
    assert "on TensorRT 8.6 on Orin, 1 target" in groups[2].text
    changes = [li.text for li in section.find_all("li") if "data-change" in li.attrs]
    assert ("Changes between versions on Orin: unverified on 8.5, blocked on 8.6 by S1, likely on 10.0, unverified "
            "on 10.3-10.16, blocked from 11.4 by P10") in changes
    assert "trt92-orin" in section.find("p", **{"data-unavailable": "true"}).text


def test_the_grid_has_a_row_per_finding_and_a_cell_per_available_target_grouped_by_platform(yolo_page):
    tree = parse_html(yolo_page[0].read_text())
    grid = tree.find("section", id="grid")
    heads = [th.text for th in grid.find("thead").find_all("tr")[0].find_all("th")]
    assert heads[:4] == ["finding", "as installed", "CPU", "Orin"] and "x86" in heads and "Thor" in heads
    rows = grid.find("tbody").find_all("tr")
    available = [t for t, spec in load_matrix().items() if spec.available]
    assert [r.attrs["data-finding"] for r in rows] == ["the model", "p10-implicit-lifecycle/calibrator-entropy2",
                                                       "s1-conv-silu/channels-32", "s1-conv-silu/channels-64",
                                                       "s1-conv-silu/size-64"]
    for row in rows:
        cells = row.find_all("td", cls="cell")
        assert sorted(c.attrs["data-target"] for c in cells) == sorted(available)
    stem = rows[-1].find("td", cls="cell", data_target="trt86-orin")
    assert stem.attrs["data-verdict"] == "blocked"
    link = stem.find("a")
    assert link.attrs["href"] == "#finding-3" and "claimed upstream" in link.attrs["title"]
    assert tree.find("article", id="finding-3").attrs["data-variant"] == "size-64"


@contextlib.contextmanager
def _opened(page, width, height):
    """Headless Chromium with its window ``width`` x ``height``, showing ``page``; closed afterwards."""
    _browser_or_skip()
    driver = chromium(javascript=True, width=width)
    try:
        driver.set_window_size(width, height)
        driver.get(page.as_uri())
        yield driver
    finally:
        driver.quit()


@pytest.mark.parametrize("width, height", [(1366, 768), (390, 844)])
def test_in_chromium_the_answer_is_on_the_first_screen_and_nothing_but_the_grid_scrolls_sideways(yolo_page, width,
                                                                                                height):
    with _opened(yolo_page[0], width, height) as driver:
        from selenium.webdriver.common.by import By

        first_group = driver.find_element(By.CSS_SELECTOR, "section#answer .group")
        assert first_group.location["y"] < height, "the first verdict group is below the first screen"
        page_width = driver.execute_script("return document.documentElement.scrollWidth")
        view = driver.execute_script("return document.documentElement.clientWidth")
        assert page_width <= view + 1, f"the page scrolls sideways at {width}px: {page_width} > {view}"
        cell = driver.find_element(By.CSS_SELECTOR, 'section#grid td.cell[data-target="trt86-orin"] a')
        driver.execute_script("arguments[0].click()", cell)
        assert driver.execute_script("return location.hash") == cell.get_attribute("href").split("/")[-1][
            cell.get_attribute("href").split("/")[-1].index("#"):]
        assert driver.find_element(By.CSS_SELECTOR, "details > summary").is_displayed()
        assert not driver.find_element(By.CSS_SELECTOR, "section#engine table.engine-layers").is_displayed() \
            if driver.find_elements(By.CSS_SELECTOR, "section#engine table.engine-layers") else True


@pytest.mark.parametrize("width, height", [(1366, 768), (390, 844)])
def test_in_chromium_the_evidence_reads_in_lines_not_letters_and_the_grid_fits_a_laptop_screen(yolo_page, width,
                                                                                             height):
    with _opened(yolo_page[0], width, height) as driver:
        squeezed = driver.execute_script("""
            return Array.from(document.querySelectorAll('section#findings :is(td, th)'))
              .filter(c => c.textContent.trim().length > 20 && c.getBoundingClientRect().width < 150)
              .map(c => Math.round(c.getBoundingClientRect().width) + 'px: ' + c.textContent.trim().slice(0, 40));""")
        assert not squeezed, f"prose squeezed into columns of a few characters at {width}px: {squeezed[:3]}"
        if width >= 1366:  # a laptop sees every target of the grid without scrolling it, a scroll bar beside it
            scroll_width, client_width = driver.execute_script(
                "const s = document.querySelector('section#grid .scroll'); return [s.scrollWidth, s.clientWidth];")
            assert scroll_width <= client_width, f"the grid scrolls at {width}px: {scroll_width} > {client_width}"
