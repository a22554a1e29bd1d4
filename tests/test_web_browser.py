"""The web table end to end in a real headless browser (Chromium driven by Playwright): a person
plays a whole hand by clicking (a bid, cards, an illegal click that is explained), then opens a
record, steps through it and asks the neural policy about a position. Each bug found by playing
the table as a person would has its own test here: a New game started while the previous
game's agents were moving (the page froze), bids shown before they were made, the hand greyed
out while bidding, the last hand's summary, the inspector's one-seat view showing hidden cards,
a phone's screen (390x844), the wording, and the favicon.

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

from helpers import heuristic_hand_record, heuristic_record
from spades_env.game import BID_ACTION_BASE

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
    # the next hand has begun: the finished hand's bids and tricks stay in view, seat by seat
    state = _shown(page)
    assert state["hand_number"] == 2 and len(state["hands"]) == 1
    hand = state["hands"][0]
    summary = page.locator("#last-hand")
    sync_api.expect(summary).to_be_visible()
    results = [summary.locator(".seat-result").nth(s).inner_text() for s in range(4)]
    for s, name in enumerate(state["seat_names"]):
        bid = hand["bids"][s]
        said = ("blind nil" if hand["blind"][s] else "nil") if bid == 0 else f"bid {bid}"
        assert results[s] == f"{name} {said}, won {hand['tricks_taken'][s]}", results
    first_row = page.locator("#scoreboard tbody tr").first.inner_text()
    assert "bid" in first_row and "won" in first_row, first_row
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
    assert "null" not in page.inner_text("#itable")
    for _ in range(20):
        page.click("#next")
    assert "action 20 of" in page.inner_text("#step-label")
    page.click("#prev")
    assert "action 19 of" in page.inner_text("#step-label")
    page.select_option("#view-seat", "2")                                # South's view: one hand shown
    assert page.locator("#itable .mini-hand .card").count() == len(page.locator("#ipos-bottom .card").all())
    page.select_option("#view-seat", "-1")                               # the spectator may ask about any seat
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


# ----------------------------------------------------------------------------- helpers of the tests below
def _first_bidder(seed):
    """The seat that bids first in the first hand of a game dealt with ``seed`` (left of the dealer)."""
    from spades_env import spades_v0
    env = spades_v0.raw_env(episode="game")
    env.reset(seed=seed)
    return (env.game.dealer + 1) % 4, env.game.dealer


def _start(page, seat, seed, pace="0", side_agents=None):
    """Fill in the setup form (unfolding it if a game already runs) and start a game."""
    if page.locator("#setup-box:not([open])").count():
        page.click("#setup-box > summary")
    page.wait_for_selector(f"#seat option[value='{seat}']", state="attached")
    page.select_option("#seat", str(seat))
    page.fill("#seed", str(seed))
    page.select_option("#pace", pace)
    if side_agents:
        page.fill("#agent-left", side_agents)
        page.fill("#agent-right", side_agents)
    page.click("#start")


def _shown(page):
    """The state the page shows (the view the server sent last)."""
    return page.evaluate("() => play.state")


def _wait_for_bid_buttons(page, timeout=20000):
    page.wait_for_selector("#controls [data-action]", timeout=timeout)


def _in_viewport(page, selector):
    """The elements matching ``selector`` that are not wholly inside the window, unscrolled."""
    return page.evaluate("""(selector) => [...document.querySelectorAll(selector)].filter((e) => {
        const r = e.getBoundingClientRect();
        return r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth
               || r.width === 0 || r.height === 0;
    }).map((e) => e.textContent)""", selector)


def _game_record(target_score=100, seed=1):
    """A whole (short) game played by the heuristic on every seat."""
    return heuristic_record(seed, episode="game", target_score=target_score)


# ----------------------------------------------------------------------------- the bugs found by playing
def test_a_new_game_started_while_agents_move_is_followed(server, browser):
    """The old game's long-poll is cancelled: the page follows the new game to the person's turn
    (it stayed on "East to act": the old poll held the one polling slot, then saw the game had
    changed and quit, and the new game was never polled)."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 11
    _, dealer = _first_bidder(seed)
    with page.expect_request(lambda r: "/api/games/" in r.url and "since=" in r.url):
        _start(page, dealer, seed, pace="1")           # three agents bid first, a second a move
    first = page.evaluate("() => play.id")             # the page is waiting for the agents' news
    _start(page, dealer, seed + 1, pace="0.4")         # in the new game too, the agents move first
    page.wait_for_function("(old) => play.id && play.id !== old", arg=first)
    second = page.evaluate("() => play.id")
    _wait_for_bid_buttons(page, timeout=15000)         # the new game reached the person's bid
    state = _shown(page)
    assert state["id"] == second and state["to_act"] == state["seat"] == dealer
    page.close()


def test_bids_show_once_made_and_sides_sum_only_bids_made(server, browser):
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed)                          # the person bids first: nobody has bid yet
    _wait_for_bid_buttons(page)
    for box in page.locator("#table .seat-box").all():
        text = box.inner_text()
        assert "-1" not in text and "bid" not in text, text
    row = page.locator("#scoreboard tr.this-hand td")
    assert [row.nth(k).inner_text() for k in (1, 2)] == ["– / 0", "– / 0"]
    shown = page.get_attribute("#controls", "data-version")
    page.click(f"#controls [data-action='{BID_ACTION_BASE + 3}']")
    _wait_for_news(page, shown)
    page.wait_for_selector("#hand .card.legal", timeout=20000)   # every seat has bid
    state = _shown(page)
    assert state["bids"][first] == 3 and all(b is not None and b >= 0 for b in state["bids"])
    texts = [row.nth(k).inner_text() for k in (1, 2)]
    for k in (0, 1):
        assert texts[k] == f"{state['bids'][k] + state['bids'][k + 2]} / 0", (texts, state["bids"])
    mine = page.locator("#pos-bottom .stats").inner_text()
    assert mine.startswith("bid 3"), mine
    page.close()


def test_a_side_with_one_bid_made_shows_that_bid_so_far(server, browser):
    """Partial sums: a side whose one seat has bid shows that bid (with "…"), not the bid minus one."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 4
    first, dealer = _first_bidder(seed)
    _start(page, (first + 1) % 4, seed)                 # one seat (of the other side) bids first
    _wait_for_bid_buttons(page)
    state = _shown(page)
    made = [b for b in state["bids"] if b is not None]
    assert len(made) == 1 and state["bids"][first] is not None
    side = first % 2
    cells = page.locator("#scoreboard tr.this-hand td")
    assert cells.nth(1 + side).inner_text() == f"{state['bids'][first]}… / 0"
    assert cells.nth(2 - side).inner_text() == "– / 0"
    page.close()


def test_the_hand_is_not_greyed_out_while_bidding(server, browser):
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed)
    _wait_for_bid_buttons(page)
    cards = page.locator("#hand .card")
    assert cards.count() == 13 and page.locator("#hand .card.illegal").count() == 0
    opacities = page.evaluate("() => [...document.querySelectorAll('#hand .card')].map((c) => getComputedStyle(c).opacity)")
    assert set(opacities) == {"1"}, opacities
    cards.first.click()                                 # a card clicked while bidding says what is asked
    sync_api.expect(page.locator("#message")).to_have_class("message warn")
    assert "bidding" in page.inner_text("#message")
    page.close()


def test_the_inspectors_one_seat_view_shows_no_hidden_card(server, browser):
    """In one seat's view, no card of another seat's hand is anywhere on the page before it is
    played: not in a hand, not in the "Next:" line, not in an analysis."""
    url, records = server
    (records / "one-seat.json").write_text(json.dumps(heuristic_hand_record(6)))
    page = browser.new_page(viewport={"width": 1000, "height": 1000})
    page.goto(url)
    page.click("#tab-inspect")
    page.wait_for_selector("#record-list option[value='one-seat.json']", state="attached")
    page.select_option("#record-list", "one-seat.json")
    page.click("#open-record")
    page.wait_for_selector("#viewer:not(.hidden)")
    me = 2
    page.select_option("#view-seat", str(me))
    frames = page.evaluate("() => view.data.frames.length")
    hidden_cards_seen = 0
    for step in range(frames):
        frame = page.evaluate("() => view.data.frames[view.step]")
        hidden = [c for s, hand in enumerate(frame["hands"]) if s != me for c in hand]
        hidden_cards_seen += len(hidden)
        found = page.evaluate("""(hidden) => {
            const ids = new Set([...document.querySelectorAll('#inspect [data-card]')].map((e) => Number(e.dataset.card)));
            const labels = new Set([...document.querySelectorAll('#inspect [aria-label], #inspect [title]')]
                                   .flatMap((e) => [e.getAttribute('aria-label'), e.getAttribute('title')]));
            const text = ['#next-action', '#step-label', '#inspect-message', '#analysis']
                         .map((s) => document.querySelector(s).innerText).join(' ');
            return hidden.filter((c) => ids.has(c.id) || labels.has(c.text) || text.includes(c.text)).map((c) => c.text);
        }""", hidden)
        assert not found, f"step {step}: cards of hidden hands on the page: {found} ({page.inner_text('#next-action')})"
        if frame["action"] and frame["to_act"] != me and frame["action"]["kind"] == "card":
            assert page.inner_text("#next-action").endswith("plays a card")
        if step + 1 < frames:
            page.click("#next")
    assert hidden_cards_seen > 0
    # asking an agent about another seat's decision would show that seat's cards: refused
    page.click("#first")
    assert page.evaluate("() => view.data.frames[0].to_act") != me or page.click("#next") is None
    page.click("#analyse")
    sync_api.expect(page.locator("#inspect-message")).to_have_class("message warn")
    assert page.locator("#analysis .bar").count() == 0
    page.close()


def test_the_table_works_on_a_phone(server, browser):
    """390x844: the setup folds away, the bid buttons and the whole hand are on screen without
    scrolling (while bidding and while playing), and the side seats' lines do not wrap."""
    url, _ = server
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed, side_agents="heuristic:backend=native,seed=1234567")   # a long name
    _wait_for_bid_buttons(page)
    assert page.inner_text("#table .pos-left .agent") == "heuristic:backend=native,seed=1234567"
    assert not page.locator("#setup-box").evaluate("(d) => d.open"), "the setup form did not fold away"
    assert page.evaluate("() => window.scrollY") == 0
    assert page.locator("#hand .card").count() == 13
    assert _in_viewport(page, "#controls [data-action]") == []
    assert _in_viewport(page, "#hand .card") == []
    wrapped = page.evaluate("""() => [...document.querySelectorAll('#table .pos-left > div, #table .pos-right > div')]
        .filter((e) => e.textContent && e.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(e).fontSize))
        .map((e) => e.textContent)""")
    assert wrapped == [], f"side seat lines wrap: {wrapped}"
    shown = page.get_attribute("#controls", "data-version")
    page.click(f"#controls [data-action='{BID_ACTION_BASE + 3}']")
    _wait_for_news(page, shown)
    page.wait_for_selector("#hand .card.legal", timeout=20000)
    assert _in_viewport(page, "#hand .card") == []
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a phone's screen"
    page.close()


def test_no_failed_request_on_load_and_no_human_agent(server, browser):
    """A page load asks for nothing that fails (the favicon was a 404 on every load), and the agents
    offered are agents (``human`` is the person's own seat)."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    failures, errors = [], []
    page.on("response", lambda r: r.status >= 400 and failures.append(f"{r.status} {r.url}"))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(url)
    page.wait_for_selector("#agent-names option", state="attached")
    page.wait_for_load_state("networkidle")
    assert page.request.get(f"{url}/favicon.ico").status == 200
    assert failures == [] and errors == [], (failures, errors)
    offered = page.evaluate("() => [...document.querySelectorAll('#agent-names option')].map((o) => o.value)")
    assert "heuristic" in offered and not any(o.split(":")[0] == "human" for o in offered), offered
    seats = page.evaluate("() => [...document.querySelectorAll('#seat option')].map((o) => o.textContent)")
    assert seats == ["North", "East", "South", "West"]         # the server's names
    page.close()


def test_the_inspector_says_bids_and_names_the_winning_partnership(server, browser):
    url, records = server
    record = _game_record()
    (records / "short-game.json").write_text(json.dumps(record))
    page = browser.new_page(viewport={"width": 1000, "height": 1000})
    page.goto(url)
    page.click("#tab-inspect")
    page.wait_for_selector("#record-list option[value='short-game.json']", state="attached")
    page.select_option("#record-list", "short-game.json")
    page.click("#open-record")
    page.wait_for_selector("#viewer:not(.hidden)")
    names = ["North", "East", "South", "West"]
    seat, action = record["hands"][0]["actions"][0]
    bid = action - BID_ACTION_BASE
    assert page.inner_text("#next-action") == f"Next: {names[seat]} bids {'nil' if bid == 0 else bid}"
    page.click("#last")
    winner = ["North-South", "East-West"][record["winner"]]
    assert page.inner_text("#next-action") == f"Final position · winner: {winner}"
    # the final position: every hand has its row (bids, tricks, change), no row for a hand in progress
    assert page.locator("#iscoreboard tr.this-hand").count() == 0
    rows = page.locator("#iscoreboard tbody tr")
    assert rows.count() == len(record["hands"]) + 1
    assert all("bid" in rows.nth(k).inner_text() and "won" in rows.nth(k).inner_text() for k in range(len(record["hands"])))
    page.close()


def test_a_double_click_is_one_move(server, browser):
    """A second click while the first action is on its way is not sent (it was refused as out of
    turn, and the page said so)."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed, pace="0.4")
    _wait_for_bid_buttons(page)
    refused = []
    page.on("response", lambda r: r.status >= 400 and refused.append(f"{r.status} {r.url}"))
    shown = page.get_attribute("#controls", "data-version")
    page.dblclick(f"#controls [data-action='{BID_ACTION_BASE + 3}']")
    _wait_for_news(page, shown)
    page.wait_for_timeout(300)
    assert refused == [] and page.get_attribute("#message", "class") != "message warn", \
        (refused, page.inner_text("#message"))
    assert _shown(page)["bids"][first] == 3
    page.close()


def test_the_one_seat_view_hides_a_hand_not_yet_looked_at(server, browser):
    """Before its blind nil decision a seat has not seen its own cards: its view shows them face down."""
    import agents
    from spades_env import spades_v0
    from spades_env.rules import make_rules
    env = spades_v0.raw_env(rules=make_rules({"preset": "standard", "blind_nil": True, "blind_nil_min_deficit": 0}),
                            episode="hand")
    env.reset(seed=1)
    bot = agents.make("heuristic")
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        env.step(None if term or trunc else bot.act(obs, info))
    url, records = server
    (records / "blind.json").write_text(json.dumps(env.game_record()))
    page = browser.new_page(viewport={"width": 1000, "height": 1000})
    page.goto(url)
    page.click("#tab-inspect")
    page.wait_for_selector("#record-list option[value='blind.json']", state="attached")
    page.select_option("#record-list", "blind.json")
    page.click("#open-record")
    page.wait_for_selector("#viewer:not(.hidden)")
    frame = page.evaluate("() => view.data.frames[0]")
    me = frame["to_act"]
    assert frame["phase"] == "blind_nil_decision" and not frame["looked"][me]
    page.select_option("#view-seat", str(me))
    assert page.locator("#itable [data-card]").count() == 0
    assert "13 cards face down" in page.inner_text("#ipos-bottom")
    page.close()


def test_a_reload_comes_back_to_the_game(server, browser):
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed)
    _wait_for_bid_buttons(page)
    game = page.evaluate("() => play.id")
    assert page.url.endswith(f"#game={game}")
    page.reload()
    _wait_for_bid_buttons(page)
    assert page.evaluate("() => play.id") == game and page.locator("#hand .card").count() == 13
    page.goto(f"{url}/#game=0000")                  # a game the server does not have: said, and the form is there
    page.reload()
    sync_api.expect(page.locator("#message")).to_have_class("message warn")
    assert "gone" in page.inner_text("#message") and page.locator("#setup-box[open]").count() == 1
    page.close()
