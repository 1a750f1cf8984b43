"""A scan's results files, written by `scan` and by `diagnose --model`: scan.json (everything the page shows, for CI
and other tools) and scan.html, rendered on a second core while the JSON is written.

The page's process can be started before the scan (:func:`start_page`): it imports Jinja and loads the page's
template while the scan imports the case library and reads the model, renders the predicted engine's section as soon
as the scan has predicted it (:func:`send_engine`: the scan then matches and judges) and the findings' places as
soon as they are matched (:func:`send_places`), and reads the scan from scan.json once it is written (up to the
engine's text, written last as it was sent, where the scan's engine is the one it has). A large scan's page is rendered by a copy of the process forked once the scan is done
instead (it shares the scan's memory: reading a large JSON text again would cost more than it saves)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

JSON_NAME, HTML_NAME = "scan.json", "scan.html"
SENT_PAGE_BYTES = 2 << 20  # the largest scan.json read by a page process started before the scan
SENT_ENGINE_LAYERS = 2000  # the most predicted layers whose section the page's process renders ahead
ENGINE_PIECE, PLACES_PIECE, PAGE_PIECE = b"E", b"F", b"P"  # what a piece sent to the page's process holds, by its
# first byte: the predicted engine, the findings' places, scan.json's path


def scan_data(result) -> dict[str, Any]:
    """What scan.json holds and the page shows: the scan (``ScanResult.to_dict()``) and its exit status."""
    return {**result.to_dict(), "exit_code": result.exit_status}


def start_page():
    """The page's process, started now (:class:`harness.beside.Ahead`): give it to :func:`write_results`, or
    ``cancel()`` it when the scan stops before its results."""
    from harness.beside import Ahead

    return Ahead(_page_template, _render_sent_page)


def send_engine(page, engine: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
    """Give the page's process (:func:`start_page`) the scan's predicted engine (scan.json's ``engine``) as soon as
    it is predicted: it renders the engine's section while the scan goes on (none for a larger engine than
    :data:`SENT_ENGINE_LAYERS` layers: its scan.json is likely too large to be sent at all). Returns the engine
    and its JSON text as sent (for :func:`write_results`), None where nothing was sent."""
    if len(engine.get("layers") or ()) > SENT_ENGINE_LAYERS:
        return None
    text = json.dumps(engine, allow_nan=False, check_circular=False).encode()
    page.send(ENGINE_PIECE + text, last=False)
    return engine, text


def send_places(page, places: list[list[dict[str, Any]]]) -> None:
    """Give the page's process (:func:`start_page`) each finding's places (scan.json's ``occurrences``, without
    reproducers) as soon as the patterns are matched: it renders their tables while the scan judges them."""
    page.send(PLACES_PIECE + json.dumps(places, allow_nan=False, check_circular=False).encode(), last=False)


def write_results(data: dict[str, Any], out_dir: Path | str, page=None, meanwhile: Callable[[], None] | None = None,
                  sent_engine: tuple[dict[str, Any], bytes] | None = None) -> tuple[Path, Path]:
    """Write a scan (:func:`scan_data`) to ``out_dir/scan.json`` (everything the page shows, for CI and other
    tools) and ``out_dir/scan.html``; return their paths. ``page``: the page's process from :func:`start_page`
    (None: a copy of this one renders it); ``meanwhile``: called once scan.json is written, while the page is
    rendered (the command prints its answer); ``sent_engine``: what :func:`send_engine` returned, whose text
    scan.json takes as it is where the scan's engine is that very dict."""
    from harness.beside import Beside

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / JSON_NAME, out_dir / HTML_NAME
    # no indent: json's C encoder then writes it (with an indent, its pure-Python one: seconds on a large model's);
    # no check for cycles (a fifth of its time): scan_data builds a tree of plain dicts and lists
    if page is not None and sent_engine is not None and len(data) > 1 and data.get("engine") is sent_engine[0]:
        # the engine's text as sent goes last, written once: the page's process reads what comes before it
        head = json.dumps({key: value for key, value in data.items() if key != "engine"}, allow_nan=False,
                          check_circular=False)[:-1].encode()
        text, ahead = head + b', "engine": ' + sent_engine[1] + b"}\n", len(head)
    else:
        text, ahead = (json.dumps(data, allow_nan=False, check_circular=False) + "\n").encode(), 0
    if page is not None and len(text) <= SENT_PAGE_BYTES:
        try:
            json_path.write_bytes(text)
        except BaseException:
            page.cancel()  # its last piece will not come
            raise
        # the last piece: the page's path, scan.json's, which the page's process reads back from the page cache
        # (through the pipe, the two processes would take turns at its 64 KiB buffer), and where in it the engine it
        # was sent begins (0: it was not)
        page.send(b"\0".join((PAGE_PIECE + os.fsencode(html_path), os.fsencode(json_path), b"%d" % ahead)))
    else:
        if page is not None:
            page.cancel()
        page = Beside(_render_page, data, html_path)  # on a second core while this one writes the JSON
        try:
            json_path.write_bytes(text)
        except BaseException:
            page.wait()
            raise
    try:
        if meanwhile is not None:
            meanwhile()
    finally:
        page.wait()
    return json_path, html_path


def _page_template():
    from reports.scan_page import scan_page_template  # Jinja2's import too: in the process that renders

    return scan_page_template()


def _render_sent_page(template, pieces) -> None:
    """The page from the pieces :func:`send_engine`, :func:`send_places` and :func:`write_results` sent: the engine's
    section and the places' tables rendered as they arrive, then the page, with each where the scan's own data are
    the ones rendered."""
    from reports.scan_page import render_engine_section, render_places, render_scan_page

    engine = engine_html = places = places_html = None
    for piece in pieces:
        kind, body = piece[:1], piece[1:]
        if kind == ENGINE_PIECE:
            engine = json.loads(body)
            engine_html = render_engine_section(template, engine)
        elif kind == PLACES_PIECE:
            places = json.loads(body)
            places_html = render_places(template, places, [])
        elif kind == PAGE_PIECE:
            path, json_path, ahead = body.split(b"\0")
            text = Path(os.fsdecode(json_path)).read_bytes()
            if int(ahead):  # the engine sent ahead ends scan.json: what comes before it is read
                scan = {**json.loads(text[:int(ahead)] + b"}"), "engine": engine}
            else:
                scan = json.loads(text)
            render_scan_page(scan, Path(os.fsdecode(path)), template,
                             engine_html if scan.get("engine") == engine else None,
                             places_html if _places(scan) == places and not scan["run"]["targets"] else None)


def _places(scan: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [finding["occurrences"] for finding in scan["findings"]]


def _render_page(data: dict[str, Any], path: Path) -> None:
    from reports.scan_page import render_scan_page  # Jinja2's import too: in the process that renders

    render_scan_page(data, path)
