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


# ----------------------------------------------------------------------------- issue 49: a table people enjoy
# The center's finished tricks, timed in the page: a MutationObserver notes when four cards are in
# the middle and when they go (performance.now(), ms), and which seat played the fourth.
TRICK_TIMER = """() => {
    window.__tricks = [];
    let current = null;
    const look = () => {
        const cards = [...document.querySelectorAll('#center .card')].map((c) => c.dataset.card).sort().join(',');
        const key = document.querySelectorAll('#center .card').length === 4 ? cards : null;
        if (key === (current && current.key)) return;
        const now = performance.now();
        if (current) { current.ms = now - current.start; window.__tricks.push(current); }
        const last = play.state && play.state.last_trick;
        current = key ? { key, start: now, fourth: last ? last.cards[last.cards.length - 1].seat : null } : null;
    };
    new MutationObserver(look).observe(document.querySelector('#center'), { childList: true, subtree: true });
}"""


def _play_hand(page, by_keyboard=False, bid_key="3", hands=1):
    """The person plays until ``hands`` hands are scored, clicking (or with the keyboard alone:
    digit keys to bid, arrows and Enter in the hand). Returns where the focus was after each card."""
    focus_after = []
    for _ in range(200):
        page.wait_for_function(f"""() => document.querySelector('#controls [data-action]') ||
            document.querySelector('#hand .card.legal') || (play.state && ((play.state.hands || []).length >= {hands}
            || play.state.over))""", timeout=30000)
        state = _shown(page)
        if len(state["hands"]) >= hands or state["over"]:
            return focus_after
        shown = page.get_attribute("#controls", "data-version")
        if page.locator("#controls [data-action]").count():
            if by_keyboard:
                page.keyboard.press(bid_key)
            else:
                page.locator("#controls [data-action]").nth(3).click()
        elif by_keyboard:
            for _ in range(14):                    # arrows to a legal card, then Enter
                if page.evaluate("() => document.activeElement.classList.contains('legal')"):
                    break
                page.keyboard.press("ArrowRight")
            page.keyboard.press("Enter")
        else:
            page.locator("#hand .card.legal").first.click()
        _wait_for_news(page, shown)
        if by_keyboard and state["phase"] == "play":
            focus_after.append(page.evaluate("() => document.querySelector('#hand').contains(document.activeElement)"))
    raise AssertionError("the hand did not end")


def test_every_finished_trick_stays_in_view_at_the_default_pace(server, browser):
    """Judged: at the default pace (agents instant, the default trick pause) each finished trick
    is in view for at least 0.7 s with its four cards, one that the person's own card completes
    too (it was about 6 ms; 0.1 s at "1 s a move")."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.evaluate(TRICK_TIMER)
    _start(page, 2, 31)
    _play_hand(page)
    page.wait_for_timeout(1500)
    tricks = page.evaluate("() => window.__tricks")
    assert len(tricks) >= 12, tricks
    assert min(t["ms"] for t in tricks) >= 700, [round(t["ms"]) for t in tricks]
    mine = [t for t in tricks if t["fourth"] == 2]
    assert mine and min(t["ms"] for t in mine) >= 700, mine
    assert errors == []
    page.close()


def test_touch_targets_on_a_phone(server, browser):
    """Judged: 390x844 touch screen: every bid button at least 44x44 px, every card 44 px tall
    (they were 38x31 and 34x48 px)."""
    url, _ = server
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed)
    _wait_for_bid_buttons(page)
    sizes = page.evaluate("""() => [...document.querySelectorAll('#controls button[data-action]')]
        .map((b) => [b.getBoundingClientRect().width, b.getBoundingClientRect().height])""")
    assert len(sizes) == 14 and all(w >= 44 and h >= 44 for w, h in sizes), sizes
    assert _in_viewport(page, "#controls [data-action]") == []
    shown = page.get_attribute("#controls", "data-version")
    page.locator("#controls [data-action]").nth(3).tap()
    _wait_for_news(page, shown)
    page.wait_for_selector("#hand .card.legal", timeout=20000)
    page.locator("#hand .card.legal").first.tap()
    page.wait_for_function("() => document.querySelectorAll('#center .card').length > 0")
    heights = page.evaluate("""() => [...document.querySelectorAll('.card')].filter((c) => c.offsetParent)
        .map((c) => c.getBoundingClientRect().height)""")
    assert len(heights) >= 13 and min(heights) >= 44, heights
    assert _in_viewport(page, "#hand .card") == []
    context.close()


def test_a_whole_hand_with_the_keyboard_alone(server, browser):
    """Judged: New game, bids (digit keys), cards (arrows and Enter): the focus stays in the hand
    after every card (it went back to the page: 13 Tabs to the last card) and is visible."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("#seat option[value='2']", state="attached")
    page.focus("#seed")
    page.keyboard.type("12")
    page.focus("#start")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hand .card")
    focus = _play_hand(page, by_keyboard=True)
    assert len(focus) >= 12 and all(focus[:-1]), focus        # the last card ends the hand
    state = _shown(page)
    assert len(state["hands"]) == 1 and state["hands"][0]["bids"][2] == 3
    outline = page.evaluate("""() => { const c = document.querySelector('#hand .card[tabindex="0"]'); c.focus();
        return getComputedStyle(c).outlineStyle; }""")
    assert outline != "none"
    assert "click a card" not in page.inner_text("#play")
    assert errors == []
    page.close()


def test_thinking_is_shown_on_the_seat_to_act_only(server, browser):
    """Bug 2: "thinking…" was on the seat that had just played (during the pace's wait) and stayed
    through the person's turn."""
    url, _ = server
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(url)
    seed = 11
    _, dealer = _first_bidder(seed)
    _start(page, dealer, seed, pace="1")             # three agents bid first, a second a move
    page.wait_for_selector("#hand .card", timeout=60000)
    seen = set()
    for _ in range(40):
        found = page.evaluate("""() => { const t = document.querySelector('#table .thinking');
            return t ? [t.closest('.seat-box').id, document.querySelector('#table .to-act').id, t.getBoundingClientRect().width,
                        t.scrollWidth] : null; }""")
        if found:
            assert found[0] == found[1], found
            assert found[3] <= found[2] + 1, f"'thinking…' is cut: {found}"
            seen.add(found[0])
        if page.locator("#controls [data-action]").count():
            break
        page.wait_for_timeout(100)
    assert seen, "no seat was seen thinking"
    _wait_for_bid_buttons(page)
    assert page.locator("#table .thinking").count() == 0
    page.close()


def test_two_tabs_on_one_game_stay_in_step(server, browser):
    """Bug 3: a move made in one tab shows in the other (it went stale until reloaded), and a game
    named in the address bar is followed."""
    url, _ = server
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    one, two = context.new_page(), context.new_page()
    one.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(one, first, seed)
    _wait_for_bid_buttons(one, timeout=60000)
    game = one.evaluate("() => play.id")
    two.goto(f"{url}/#game={game}")
    two.wait_for_selector("#controls [data-action]", state="attached")
    one.bring_to_front()
    one.click(f"#controls [data-action='{BID_ACTION_BASE + 3}']")
    # a tab in the background draws no frames: poll the page by time
    two.wait_for_function("() => play.state.bids.some((b) => b === 3) && !document.querySelector('#controls [data-action]')",
                          timeout=15000, polling=100)
    # another game named in the address bar of a tab
    _start(one, first, seed + 1)
    one.click("#confirm-yes")                       # the person has bid in the game left: asked first
    one.wait_for_function("(old) => play.id !== old", arg=game)
    _wait_for_bid_buttons(one)
    other = one.evaluate("() => play.id")
    two.evaluate(f"() => {{ location.hash = '#game={other}'; }}")
    two.wait_for_function("(id) => play.id === id", arg=other, timeout=10000, polling=100)
    context.close()


def _open_record(page, url, records, name, record):
    (records / name).write_text(json.dumps(record))
    page.goto(url)
    page.click("#tab-inspect")
    page.wait_for_selector(f"#record-list option[value='{name}']", state="attached")
    page.select_option("#record-list", name)
    page.click("#open-record")
    page.wait_for_selector("#viewer:not(.hidden)")


def test_the_inspector_steps_shows_finished_tricks_and_games_in_progress(server, browser):
    """Bug 4: an arrow on the View menu changed the view and the step; a finished trick and its
    winner were never shown; a game in progress ended in "Final position", listed its hand twice
    and could not be analysed there; an old warning stayed above a later analysis. Also: jumps by
    trick and by hand, who sat where, the target score."""
    url, records = server
    page = browser.new_page(viewport={"width": 1000, "height": 1000})
    record = _game_record()
    record["players"] = ["heuristic", "heuristic", "person", "heuristic"]
    _open_record(page, url, records, "steps.json", record)
    page.focus("#view-seat")
    page.keyboard.press("ArrowDown")
    step, seat_view = page.evaluate("() => [view.step, document.querySelector('#view-seat').value]")
    assert not (step == 1 and seat_view != "-1"), "one arrow changed both the step and the view"
    page.select_option("#view-seat", "-1")
    page.click("#next-trick")                   # the first lead
    page.click("#next-trick")                   # the second: the first trick is finished just before
    page.click("#prev")
    page.click("#next")
    assert page.locator("#icenter .card").count() == 4 and "wins the trick" in page.inner_text("#icenter")
    assert page.locator("#icenter .card.winner").count() == 1
    page.click("#next-hand")
    assert page.evaluate("() => view.data.frames[view.step].hand_number") == 2
    assert "person" in page.inner_text("#ipos-bottom") and "game to" in page.inner_text("#iscoreboard")
    # a game in progress: its last frame is a decision, listed once, and can be analysed
    running = dict(record)
    cut = dict(record["hands"][1], actions=record["hands"][1]["actions"][:20], complete=False)
    for key in ("score_change", "bags_taken", "bag_penalties", "bags", "scores", "scores_before", "results",
                "tricks_taken", "tricks", "passes"):
        cut.pop(key, None)
    running["hands"] = [record["hands"][0], cut]
    for key in ("winner", "scores", "bags", "game_over", "truncated"):
        running.pop(key, None)
    _open_record(page, url, records, "running.json", running)
    page.select_option("#view-seat", "0")
    page.click("#first")
    page.click("#analyse")                       # refused: not North's decision (a warning)
    sync_api.expect(page.locator("#inspect-message")).to_have_class("message warn")
    page.select_option("#view-seat", "-1")
    page.click("#last")
    assert "still in progress" in page.inner_text("#next-action")
    assert page.locator("#iscoreboard tbody tr").count() == 3      # hand 1, this hand, the score
    page.fill("#analyse-agent", "heuristic")
    page.click("#analyse")
    page.wait_for_function("() => document.querySelector('#analysis').innerText.includes('would play')")
    assert page.get_attribute("#inspect-message", "class") != "message warn"
    page.close()


def test_an_unknown_game_is_said_once(server, browser):
    """Bug 5: "...never existed): start a new one): start a new one."."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(f"{url}/#game=00ab")
    sync_api.expect(page.locator("#message")).to_have_class("message warn")
    text = page.inner_text("#message")
    assert text.count("start a new one") == 1 and text.count("(") == 1, text
    page.close()


def test_nothing_jumps(server, browser):
    """Bug 6: a message pushed the table and the hand down (20 px on a phone), the table's height
    changed with the phase, and in the inspector the table's height and the View menu moved."""
    url, records = server
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(url)
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed)
    _wait_for_bid_buttons(page)
    where = "() => [document.querySelector('#table').getBoundingClientRect().height, document.querySelector('#hand').getBoundingClientRect().top]"
    before = page.evaluate(where)
    page.locator("#hand .card").first.click()      # a card while bidding: a message
    sync_api.expect(page.locator("#message")).to_have_class("message warn")
    assert page.evaluate(where) == before
    shown = page.get_attribute("#controls", "data-version")
    page.click(f"#controls [data-action='{BID_ACTION_BASE + 3}']")
    _wait_for_news(page, shown)
    page.wait_for_selector("#hand .card.legal", timeout=20000)
    assert page.evaluate(where)[0] == before[0], "the table's height changed from the bidding to the play"
    page.set_viewport_size({"width": 1000, "height": 1000})
    _open_record(page, url, records, "heights.json", _game_record())
    heights, menus = set(), set()
    for _ in range(60):
        heights.add(page.evaluate("() => document.querySelector('#itable').getBoundingClientRect().height"))
        menus.add(page.evaluate("() => document.querySelector('#view-seat').getBoundingClientRect().left"))
        page.click("#next-trick")
    assert len(heights) == 1 and len(menus) == 1, (heights, menus)
    page.close()


def test_new_game_once_and_asked_before_abandoning(server, browser):
    """Bug 8: a double click on New game made two games; nothing asked before abandoning a game."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    made = []
    page.on("request", lambda r: r.method == "POST" and r.url.endswith("/api/games") and made.append(r.url))
    page.goto(url)
    page.wait_for_selector("#seat option[value='2']", state="attached")
    page.fill("#seed", "4")
    page.dblclick("#start")
    page.wait_for_selector("#hand .card")
    page.wait_for_timeout(500)
    assert len(made) == 1, made
    _play_until_my_card = _wait_for_bid_buttons
    _play_until_my_card(page)
    shown = page.get_attribute("#controls", "data-version")
    page.locator("#controls [data-action]").nth(3).click()      # the person has made a move
    _wait_for_news(page, shown)
    game = page.evaluate("() => play.id")
    page.click("#setup-box > summary")
    page.click("#start")
    sync_api.expect(page.locator("#confirm-new")).to_be_visible()
    page.click("#confirm-no")
    assert page.evaluate("() => play.id") == game and len(made) == 1
    page.click("#start")
    page.click("#confirm-yes")
    page.wait_for_function("(old) => play.id !== old", arg=game)
    page.close()


def test_a_card_clicked_while_the_agents_play_says_wait(server, browser):
    """Bug 9: a click on a card while the agents played did nothing and said nothing."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    seed = 11
    _, dealer = _first_bidder(seed)
    _start(page, dealer, seed, pace="1")
    page.wait_for_selector("#hand .card")
    page.locator("#hand .card").first.click()
    sync_api.expect(page.locator("#message")).to_have_class("message warn")
    assert "Wait for your turn" in page.inner_text("#message")
    page.close()


def test_blind_nil_passing_says_how_many_and_marks_what_came(server, browser):
    """Bug 10: "Pick a card to pass" when two are asked, no count, the cards received not marked."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    page.set_input_files("#rules-file", files=[{"name": "blind.yaml", "mimeType": "text/yaml",
                         "buffer": b"preset: standard\nblind_nil: true\nblind_nil_min_deficit: 0\n"}])
    seed = 4
    first, _ = _first_bidder(seed)
    _start(page, first, seed)
    page.wait_for_selector("#controls [data-action='66']", timeout=20000)
    shown = page.get_attribute("#controls", "data-version")
    page.click("#controls [data-action='66']")                  # blind nil: 2 cards come, 2 go
    _wait_for_news(page, shown)
    page.wait_for_function("() => play.state.phase === 'passing' && play.state.to_act === play.state.seat"
                           " && document.querySelector('#hand .card.legal')", timeout=20000)
    prompt = page.inner_text("#controls")
    assert "Pick 2 cards" in prompt and "1 of 2" in prompt, prompt
    received = page.evaluate("() => play.state.received")
    assert len(received) == 2
    marked = page.evaluate("() => [...document.querySelectorAll('#hand .card.received')].map((c) => Number(c.dataset.card))")
    assert sorted(marked) == sorted(received)
    shown = page.get_attribute("#controls", "data-version")
    page.locator("#hand .card.legal").first.click()
    _wait_for_news(page, shown)
    assert "Pick 1 card " in page.inner_text("#controls") and "2 of 2" in page.inner_text("#controls")
    page.close()


def test_the_next_hand_starts_clear_with_a_summary_of_the_last(server, browser):
    """Bug 11: the last trick of the hand before stayed in the middle while the next hand was bid
    and led. Also what players expect: a summary of the hand scored (the breakdown) over the
    table until dismissed, who led and whose card wins, card backs counting each other seat's
    cards, the hand's log, "your turn" in the tab's title, sounds off unless asked for."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    assert not page.is_checked("#sounds")
    page.select_option("#trick-pause", "0.7")
    _start(page, 2, 21)
    page.wait_for_selector("#hand .card.legal, #controls [data-action]", timeout=60000)
    assert page.title().startswith("● Your turn")
    if page.locator("#controls [data-action]").count():
        page.locator("#controls [data-action]").nth(3).click()
    page.wait_for_selector("#hand .card.legal", timeout=20000)
    backs = page.evaluate("""() => [...document.querySelectorAll('#table .backs')].map((b) =>
        [b.querySelectorAll('.card-back').length, Number(b.querySelector('.count').textContent)])""")
    assert len(backs) == 3 and all(n == c for n, c in backs)
    state = _shown(page)
    if state["trick"]:                                  # someone led: marked, and the winning card
        assert page.locator("#center .led").count() == 1 and page.locator("#center .card.winning").count() == 1
    _play_hand(page)
    page.wait_for_function("() => play.state.bids.some((b) => b !== null) || play.state.to_act === play.state.seat",
                           timeout=20000)
    page.wait_for_timeout(800)
    summary = page.locator("#hand-summary")
    sync_api.expect(summary).to_be_visible()
    text = summary.inner_text()
    assert "Hand 1 scored" in text and ("contract" in text or "nil" in text), text
    if any(b is not None for b in _shown(page)["bids"]):
        assert page.locator("#center .card").count() == 0, "the last hand's trick is still in the middle"
    log = page.inner_text("#hand-log-list") if page.locator("#hand-log").count() else ""
    page.click("#summary-close")
    assert page.locator("#hand-summary").count() == 0
    page.click("#hand-log > summary")
    assert "bids" in page.inner_text("#hand-log-list") or "wins the trick" in log
    page.close()


def test_the_score_table_names_nils_and_explains_the_change(server, browser):
    """Bug 12: "bid 3" for a side that bid 3 and blind nil, and "-267" unexplained."""
    from spades_env.rules import make_rules
    from spades_env.scoring import score_hand
    rules = make_rules("standard")
    bids, blind, taken = [3, 4, 0, 2], [False, False, True, False], [4, 5, 1, 3]
    results = score_hand(rules, bids, blind, taken, [0, 0], [9, 0])
    hand = {"bids": bids, "blind": blind, "bid_words": ["3", "4", "blind nil", "2"], "tricks_taken": taken,
            "score_change": [r.points for r in results], "scores": [r.points for r in results],
            "results": [{"contract": r.contract, "made": r.made, "contract_points": r.contract_points,
                         "overtrick_points": r.overtrick_points, "nil_points": r.nil_points, "bags_taken": r.bags_taken,
                         "bag_penalties": r.bag_penalties, "nils": [{"seat": 2, "kept": False}] if k == 0 else []}
                        for k, r in enumerate(results)]}
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    page.wait_for_selector("#seat option[value='2']", state="attached")
    text = page.evaluate("""(hand) => scoreTable({hands: [hand], side_names: ['North-South', 'East-West'], partnerships: true,
        seat_names: ['North', 'East', 'South', 'West'], scores: hand.scores, bags: [0, 1], bag_limit: 10, bag_penalty: 100,
        target_score: 500, hand_number: 2, bids: [null, null, null, null], bid_words: [null, null, null, null],
        tricks_won: [0, 0, 0, 0], phase: 'bidding'}).innerText""", hand)
    assert "bid 3 + blind nil" in text, text
    assert "South's nil broken" in text and "nil -200" in text and "bag penalty -100" in text, text
    assert "0/10 bags" in text, text
    page.close()


def test_search_values_have_bars_next_to_their_cards(server, browser):
    """Bug 14: the search's values were bare numbers about 850 px from their cards, no bars, no
    uncertainty."""
    url, records = server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    _open_record(page, url, records, "search.json", heuristic_hand_record(4))
    page.click("#next-trick")
    page.fill("#analyse-agent", "search:worlds=64")
    page.click("#analyse")
    page.wait_for_selector("#analysis .bar", timeout=60000)
    gaps = page.evaluate("""() => [...document.querySelectorAll('#analysis .bar')].map((b) =>
        b.querySelector('.num').getBoundingClientRect().left - b.firstElementChild.getBoundingClientRect().right)""")
    widths = page.evaluate("() => [...document.querySelectorAll('#analysis .bar .fill')].map((f) => f.getBoundingClientRect().width)")
    assert gaps and max(gaps) < 400, gaps
    assert max(widths) > 20, widths
    page.close()


def test_game_over_is_an_occasion(server, browser):
    """Bug 15: the game's end was one line of small grey text."""
    url, _ = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    _start(page, 2, 5)
    page.wait_for_selector("#hand .card", timeout=60000)
    page.evaluate("""() => { stopPolling(); const s = structuredClone(play.state);
        Object.assign(s, {over: true, winner: 0, scores: [512, 348], phase: 'game_over', to_act: null, version: s.version + 1,
            hands: [{bids: [3, 3, 4, 2], blind: [false, false, false, false], bid_words: ['3', '3', '4', '2'],
                     tricks_taken: [4, 3, 4, 2], score_change: [81, 50], scores: [512, 348],
                     results: [{contract: 7, made: true, contract_points: 70, overtrick_points: 1, nil_points: 0,
                                bags_taken: 1, bag_penalties: 0, nils: []}, {contract: 5, made: true, contract_points: 50,
                                overtrick_points: 0, nil_points: 0, bags_taken: 0, bag_penalties: 0, nils: []}]}]});
        play.state = s; renderPlay(); }""")
    panel = page.locator("#hand-summary")
    sync_api.expect(panel).to_be_visible()
    assert "North-South win 512 to 348" in panel.inner_text()
    size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#hand-summary .big')).fontSize)")
    assert size >= 20
    assert panel.locator("button", has_text="New game").count() == 1
    page.close()


def test_reduced_motion_is_respected(server, browser):
    """Cards slide into the middle, unless the person's system asks for reduced motion."""
    url, _ = server
    for reduce, expected in (("reduce", {"none"}), ("no-preference", None)):
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.emulate_media(reduced_motion=reduce)
        page.goto(url)
        _start(page, 2, 21)
        page.wait_for_selector("#hand .card.legal, #controls [data-action]", timeout=60000)
        if page.locator("#controls [data-action]").count():
            page.locator("#controls [data-action]").nth(3).click()
            page.wait_for_selector("#hand .card.legal", timeout=20000)
        if not page.locator("#center .card").count():
            page.locator("#hand .card.legal").first.click()
        page.wait_for_selector("#center .card", timeout=20000)
        names = set(page.evaluate("() => [...document.querySelectorAll('#center .card')].map((c) => getComputedStyle(c).animationName)"))
        if expected:
            assert names == expected, names
        else:
            page.wait_for_function("() => [...document.querySelectorAll('#center .card.enter')].length > 0", timeout=20000)
        page.close()


# The finished trick's cards, watched in the page: when the four appear (a MutationObserver), and
# at each animation frame whether their slots have moved (a transform) and how they are animated.
GATHER_WATCH = """() => {
    window.__gather = null;
    const look = () => {
        const slots = [...document.querySelectorAll('#center > div')].filter((d) => d.querySelector('.card'));
        if (!window.__gather && slots.length === 4 && document.querySelector('#center .trick-done')) {
            window.__gather = { start: performance.now(), moved: null, classes: slots.map((s) => s.className),
                                names: slots.map((s) => getComputedStyle(s).animationName) };
        }
    };
    new MutationObserver(look).observe(document.querySelector('#center'), { childList: true, subtree: true });
    const frame = () => {
        const g = window.__gather;
        if (g) {
            const slots = [...document.querySelectorAll('#center > div.c-top, #center > div.c-left, #center > div.c-right, #center > div.c-bottom')];
            if (g.moved === null && slots.some((s) => getComputedStyle(s).transform !== 'none')) g.moved = performance.now() - g.start;
            g.seen = performance.now() - g.start;
        }
        requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
}"""


def test_a_finished_trick_goes_to_its_winner_unless_motion_is_reduced(server, browser):
    """The four cards stay still at least 0.7 s (the default pause is 1.2 s), then move to the
    winner's seat; under reduced motion nothing moves and no gather is applied."""
    url, _ = server
    for reduce in ("no-preference", "reduce"):
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.emulate_media(reduced_motion=reduce)
        page.goto(url)
        page.evaluate(GATHER_WATCH)
        _start(page, 2, 21)
        for _ in range(20):            # the person acts until a trick is finished in view
            page.wait_for_function("() => window.__gather || document.querySelector('#controls [data-action]') "
                                   "|| document.querySelector('#hand .card.legal')", timeout=30000)
            if page.evaluate("() => window.__gather"):
                break
            shown = page.get_attribute("#controls", "data-version")
            if page.locator("#controls [data-action]").count():
                page.locator("#controls [data-action]").nth(3).click()
            else:
                page.locator("#hand .card.legal").first.click()
            _wait_for_news(page, shown)
        page.wait_for_function("() => window.__gather && window.__gather.seen > 1100", timeout=20000)
        watched = page.evaluate("() => window.__gather")
        if reduce == "reduce":
            assert not any("gather" in c for c in watched["classes"]), watched
            assert set(watched["names"]) == {"none"} and watched["moved"] is None, watched
        else:
            assert all("gather to-" in c for c in watched["classes"]) and set(watched["names"]) == {"gather"}, watched
            assert watched["moved"] is not None and watched["moved"] >= 700, watched
        page.close()


def test_the_keep_switch_is_off_by_default_and_keeps_the_game_once_on(server, browser):
    """People's games as data, by choice: the switch starts off and nothing is written; turned
    on, the game on show is written to the keep folder, and Export downloads it."""
    url, records = server
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto(url)
    switch = page.locator("#keep")
    assert not switch.is_checked() and switch.get_attribute("role") == "switch"
    _start(page, 2, 22)
    _wait_for_bid_buttons(page, timeout=30000)
    shown = page.get_attribute("#controls", "data-version")
    page.locator("#controls [data-action]").nth(3).click()          # a move made while it is off
    _wait_for_news(page, shown)
    game = page.evaluate("() => play.id")
    assert not (records / f"web-{game}.json").exists()
    switch.check()
    page.wait_for_function("() => play.state.keep === true && document.querySelector('#message').textContent.includes('kept')")
    assert (records / f"web-{game}.json").is_file()
    assert page.evaluate("() => localStorage.getItem('spades.keep')") == "on"
    with page.expect_download() as download:
        page.click("#export-kept")
    lines = Path(download.value.path()).read_text().splitlines()
    assert any(json.loads(line)["players"][2] == "person" for line in lines)
    page.close()


def test_the_table_works_under_a_strict_content_security_policy(server, browser):
    """No inline script, no style attribute from HTML, no eval: under a strict policy the page
    plays a bid and a card, analyses a position, and the browser reports no violation."""
    url, records = server
    policy = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
              "font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    problems = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))

    def strict(route):
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-security-policy": policy})
    page.route("**/*", strict)
    seed = 4
    first, _ = _first_bidder(seed)
    page.goto(url)
    _start(page, first, seed)
    _wait_for_bid_buttons(page, timeout=60000)
    page.locator("#controls [data-action]").nth(3).click()
    page.wait_for_selector("#hand .card.legal", timeout=20000)
    page.locator("#hand .card.legal").first.click()
    page.wait_for_function("() => document.querySelectorAll('#center .card').length > 0")
    (records / "csp.json").write_text(json.dumps(heuristic_hand_record(4)))
    page.click("#tab-inspect")
    page.wait_for_selector("#record-list option[value='csp.json']", state="attached")
    page.select_option("#record-list", "csp.json")
    page.click("#open-record")
    page.wait_for_selector("#viewer:not(.hidden)")
    page.click("#next-trick")
    page.fill("#analyse-agent", "heuristic")
    page.click("#analyse")
    page.wait_for_function("() => document.querySelector('#analysis').innerText.includes('would play')")
    assert problems == [], problems
    page.close()
