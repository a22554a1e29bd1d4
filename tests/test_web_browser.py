"""The web table end to end in a real headless browser (Chromium driven by Playwright): a person
plays a whole hand by clicking (a bid, cards, an illegal click that is explained), then opens a
record, steps through it and asks the neural policy about a position.

Chromium: Debian's package (``/usr/bin/chromium``, installed by ``.ci/run``) or Playwright's own
(``playwright install chromium``). ``SPADES_WEB_SCREENSHOTS=DIR`` saves the two screenshots the
docs show."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from helpers import heuristic_hand_record

pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium_path():
    for path in ("/usr/bin/chromium", "/usr/bin/chromium-browser", shutil.which("chromium") or ""):
        if path and Path(path).exists():
            return path
    return None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import uvicorn
    from web.server import create_app

    records = tmp_path_factory.mktemp("records")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(records), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    assert server.started, "the server did not start"
    yield f"http://127.0.0.1:{port}", records
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        executable = _chromium_path()
        try:
            browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS) if executable \
                else p.chromium.launch(args=CHROMIUM_ARGS)
        except Exception as exc:          # no browser on this machine: .ci/run installs one
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI has no Chromium to drive ({exc}): .ci/run installs Debian's chromium")
            pytest.skip(f"no Chromium to drive: {exc}")
        yield browser
        browser.close()


def _wait_for_news(page, shown_version):
    """After a click: wait until the page shows a newer state than ``shown_version`` (so that the
    next look at the table does not find the buttons of the state just acted on)."""
    page.wait_for_function("(v) => document.querySelector('#controls').dataset.version !== v",
                           arg=shown_version, timeout=20000)


def _screenshot(page, name):
    folder = os.environ.get("SPADES_WEB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def test_a_person_plays_a_whole_hand_by_clicking(server, browser):
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    page.select_option("#seat", "2")
    page.fill("#seed", "7")
    page.click("#start")
    page.wait_for_selector("#hand .card")
    assert page.locator("#hand .card").count() == 13
    explained = bid = False
    for _ in range(60):
        # wait until it is the person's turn (a bid button or a legal card) or the hand is scored
        page.wait_for_function("() => document.querySelector('#controls [data-action]') || "
                               "document.querySelector('#hand .card.legal') || "
                               "document.querySelectorAll('#scoreboard tbody tr').length > 2", timeout=20000)
        if page.locator("#scoreboard tbody tr").count() > 2:          # a row for the finished hand
            break
        shown = page.get_attribute("#controls", "data-version")
        bids = page.locator("#controls [data-action]")
        if bids.count():
            bids.nth(min(3, bids.count() - 1)).click()
            bid = True
            _wait_for_news(page, shown)
            continue
        illegal = page.locator("#hand .card.illegal")
        if not explained and illegal.count():
            illegal.first.click()
            message = page.locator("#message")
            sync_api.expect(message).to_have_class("message warn")
            text = message.inner_text()
            assert any(w in text for w in ("follow", "broken", "first trick", "two of clubs", "may not")), text
            explained = True
            _screenshot(page, "web_play.png")
        page.locator("#hand .card.legal").first.click()
        _wait_for_news(page, shown)
    assert bid, "no bid was made by clicking"
    assert explained, "no illegal card was clicked and explained in this hand"
    assert page.locator("#scoreboard tbody tr").count() > 2, "the hand was not scored"
    page.close()


def test_a_record_is_opened_stepped_and_analysed(server, browser):
    url, records = server
    (records / "heuristic-hand.json").write_text(json.dumps(heuristic_hand_record(4)))
    page = browser.new_page(viewport={"width": 1000, "height": 1000})
    page.goto(url)
    page.click("#tab-inspect")
    page.wait_for_selector("#record-list option[value='heuristic-hand.json']", state="attached")
    page.select_option("#record-list", "heuristic-hand.json")
    page.click("#open-record")
    page.wait_for_selector("#viewer:not(.hidden)")
    assert "action 0 of" in page.inner_text("#step-label")
    assert page.locator("#itable .mini-hand .card").count() == 52        # spectator: every hand
    for _ in range(20):
        page.click("#next")
    assert "action 20 of" in page.inner_text("#step-label")
    page.click("#prev")
    assert "action 19 of" in page.inner_text("#step-label")
    page.select_option("#view-seat", "2")                                # South's view: one hand shown
    assert page.locator("#itable .mini-hand .card").count() == len(page.locator("#ipos-bottom .card").all())
    page.click("#analyse")
    page.wait_for_selector("#analysis .bar")
    text = page.inner_text("#analysis")
    assert "neural would play" in text and "%" in text
    _screenshot(page, "web_inspect.png")
    page.close()


def test_the_table_fits_a_phone_screen(server, browser):
    url, _ = server
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(url)
    page.click("#start")
    page.wait_for_selector("#hand .card")
    assert page.locator("#hand .card").count() == 13
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a phone's screen"
    page.close()
