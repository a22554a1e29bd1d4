"""``spades-play`` and the human agent: a real pseudo-terminal session, input parsing and
explanations, and the rule that the screen never shows another seat's unplayed cards."""

from __future__ import annotations

import io
import os
import signal
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agents
from play import cli as play
from play.table import Table, play_game
from agents.human import (HumanAgent, QuitGame, format_bid_choices, parse_bid_text, parse_card_text,
                          strip_ansi, visible_len)
from spades_env import load_record, parse_card, replay, spades_v0
from spades_env.cards import mask_to_cards
from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION

ROOT = Path(__file__).resolve().parents[2]
CARD_TOKEN = re.compile(r"(?<![A-Za-z0-9])(10|[2-9TJQKA])([SHDC♠♥♦♣])(?![A-Za-z0-9])")
SUIT_OF = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}


def tokens(text: str) -> set[int]:
    """Every card written in ``text`` (``A♠``, ``10H``, ``KD``...), as ids."""
    return {parse_card(rank + SUIT_OF.get(suit, suit)) for rank, suit in CARD_TOKEN.findall(strip_ansi(text))}


# ---------------------------------------------------------------------- a pseudo-terminal session
class Terminal:
    """``python -m play ...`` on a pseudo-terminal: read the screen, type lines."""

    def __init__(self, args: list[str], cwd: Path, env_extra: dict | None = None) -> None:
        import fcntl
        import pty
        import termios

        self.master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env.update({"TERM": "xterm", "PYTHONUNBUFFERED": "1", "COLUMNS": "80", "LINES": "40"})
        env.update(env_extra or {})

        def controlling_terminal() -> None:   # so that Ctrl-C on the terminal is a SIGINT
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            # A shell starts background jobs with SIGINT ignored, and the child would inherit
            # that (pytest run as `cmd &`): a person's terminal delivers Ctrl-C.
            signal.signal(signal.SIGINT, signal.SIG_DFL)

        self.proc = subprocess.Popen([sys.executable, "-m", "play", *args], stdin=slave, stdout=slave,
                                     stderr=slave, cwd=cwd, env=env, start_new_session=True,
                                     preexec_fn=controlling_terminal, close_fds=True)
        os.close(slave)
        self.screen = ""      # everything shown so far (ANSI stripped, \r\n -> \n)
        self.mark = 0         # start of what the last read_prompt returned

    def _read(self, timeout: float) -> bool:
        import select
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:     # EIO: the program ended and closed the terminal
            return False
        if not data:
            return False
        text = strip_ansi(data.decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "")
        self.screen += text
        return True

    def read_prompt(self, timeout: float = 20.0) -> str:
        """The screen since the last prompt, up to the next prompt (``...> ``); '' at the end."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.screen.endswith("> ") and len(self.screen) > self.mark:
                break
            if not self._read(0.2):
                break
        else:
            raise AssertionError(f"no prompt within {timeout}s; screen ends with:\n{self.screen[-2000:]}")
        chunk = self.screen[self.mark:]
        self.mark = len(self.screen)
        return chunk if chunk.endswith("> ") else ""

    def type(self, line: str) -> None:
        os.write(self.master, line.encode("utf-8") + b"\r")

    def type_raw(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 20.0) -> tuple[int, str]:
        """Read to the end of the program; its exit status and the whole screen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            pass
        code = self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        os.close(self.master)
        return code, self.screen

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


needs_pty = pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "openpty"),
                               reason="needs a POSIX pseudo-terminal")

LEGAL_ITEM = re.compile(r"(?<![0-9])1\) (10|[2-9JQKA])([♠♥♦♣SHDC])")


def first_legal(chunk: str) -> tuple[str, str]:
    """The first legal card offered on the screen, as (rank, suit letter)."""
    match = LEGAL_ITEM.search(chunk[chunk.rfind("\n", 0, chunk.rfind("1) ")) + 1:])
    assert match, f"no legal card list before the prompt:\n{chunk}"
    return match.group(1), SUIT_OF.get(match.group(2), match.group(2))


@needs_pty
def test_a_person_plays_a_hand_on_a_pseudo_terminal(tmp_path):
    record = tmp_path / "game.json"
    term = Terminal(["--seed", "1", "--hands", "1", "--partner", "random", "--opponents", "random",
                     "--record", str(record)], cwd=tmp_path)
    try:
        forms = [lambda r, s: r + s, lambda r, s: (r + s).lower(), lambda r, s: r + "♠♥♦♣"["SHDC".index(s)],
                 lambda r, s: ("T" if r == "10" else r).lower() + s.lower()]
        cards_typed = 0
        for _ in range(40):
            chunk = term.read_prompt()
            if not chunk:
                break
            prompt = chunk[chunk.rfind("\n") + 1:]
            if prompt.startswith("Blind nil?"):
                term.type("l")
            elif prompt.startswith("Your bid"):
                assert "Your hand" in chunk and "You may bid" in chunk
                term.type("3")
            else:
                assert prompt.startswith(("Your card", "Card to pass")), prompt
                rank, suit = first_legal(chunk)
                term.type(forms[cards_typed % len(forms)](rank, suit))   # AS, as, A♠, ts...
                cards_typed += 1
        code, screen = term.finish()
    finally:
        term.kill()
    assert code == 0, screen[-3000:]
    assert cards_typed == 13
    assert "is not" not in screen            # every typed form was understood and legal
    assert "Hand 1 scored" in screen and "Stopped after 1 hand" in screen
    assert "Trick 13:" in screen and "Game record saved to" in screen
    too_wide = [line for line in screen.splitlines() if visible_len(line) > 80 and "saved to" not in line]
    assert not too_wide      # (the record's path may be long)
    saved = load_record(record)
    assert saved["game_over"] and len(saved["hands"]) == 1
    env = replay(saved)
    assert env.game_record()["scores"] == saved["scores"]
    assert f"Us (N/S) {saved['scores'][0]}" in screen.split("Final score:")[1]


@needs_pty
def test_illegal_input_is_explained_and_asked_again_then_quit_saves(tmp_path):
    record = tmp_path / "quit.json"
    term = Terminal(["--seed", "4", "--partner", "random", "--opponents", "random", "--no-color", "--ascii",
                     "--record", str(record)], cwd=tmp_path)
    try:
        chunk = term.read_prompt()
        assert chunk.endswith("> ") and "Your bid" in chunk[chunk.rfind("\n"):], chunk
        term.type("ZZ")
        assert "'ZZ' is not a bid" in term.read_prompt()
        term.type("14")
        assert "only 13 tricks" in term.read_prompt()
        term.type("4")
        # Play until a trick where some card in hand is not legal (follow suit / spades unbroken).
        explained = False
        for _ in range(13):
            chunk = term.read_prompt()
            assert chunk.endswith("> ") and "Your card" in chunk[chunk.rfind("\n"):], chunk
            hand_line = next(line for line in chunk.splitlines() if line.startswith("Your hand"))
            hand = tokens(hand_line)
            legal_text = chunk[chunk.rfind("\n", 0, chunk.rfind("1) ")) + 1:]
            legal = tokens(legal_text)
            assert legal and legal <= hand
            term.type("ZZ")
            assert "'ZZ' is not a card" in term.read_prompt()
            term.type(play_form(min(set(range(52)) - hand)))
            assert re.search(r"is not in your hand|has already been played", term.read_prompt())
            illegal = sorted(hand - legal)
            if illegal:
                term.type(play_form(illegal[0]))
                reason = term.read_prompt()
                assert re.search(r"You must follow (clubs|diamonds|hearts|spades)|Spades are not broken yet",
                                 reason), reason
                assert "Follow" in reason or "lead" in reason     # the legal cards are shown again
                explained = True
            term.type(play_form(sorted(legal)[0]))
            if explained:
                break
        assert explained
        chunk = term.read_prompt()
        term.type("q")
        assert "Quit this game?" in term.read_prompt()
        term.type("y")
        code, screen = term.finish()
    finally:
        term.kill()
    assert code == 0
    assert "You left the game." in screen and "Game record saved to" in screen
    saved = load_record(record)
    assert not saved["game_over"]
    replay(saved)                       # a game left halfway plays back too


@needs_pty
def test_ctrl_c_saves_the_record(tmp_path):
    record = tmp_path / "interrupted.json"
    term = Terminal(["--seed", "2", "--opponents", "random", "--partner", "random", "--record", str(record)],
                    cwd=tmp_path)
    try:
        assert term.read_prompt().endswith("> ")
        time.sleep(0.3)                  # a person reads the prompt before pressing Ctrl-C
        # Ctrl-C typed on the terminal: SIGINT to the program. CPython's readline can miss a
        # SIGINT that lands just before it waits, so a person would press again: up to 5 times.
        for _ in range(5):
            term.type_raw(b"\x03")
            deadline = time.monotonic() + 5.0
            while term.proc.poll() is None and time.monotonic() < deadline:
                term._read(0.1)
            if term.proc.poll() is not None:
                break
        code, screen = term.finish()
    finally:
        term.kill()
    assert code == 130 and "Interrupted" in screen and "Traceback" not in screen
    replay(load_record(record))


def play_form(card: int) -> str:
    return "23456789TJQKA"[card % 13] + "CDHS"[card // 13]


# ---------------------------------------------------------------------- parsing
@pytest.mark.parametrize("text, card", [
    ("AS", "AS"), ("as", "AS"), ("10h", "TH"), ("th", "TH"), ("TH", "TH"), ("A♠", "AS"), ("a♠", "AS"),
    ("♠A", "AS"), ("s a", "AS"), ("10 ♥", "TH"), ("Q♥️", "QH"), ("q♡", "QH"), ("ace of spades", "AS"),
    ("ten of diamonds", "TD"), ("2c", "2C"), (" kd ", "KD"), ("Jc", "JC"),
])
def test_card_input_forms(text, card):
    assert parse_card_text(text) == parse_card(card)


@pytest.mark.parametrize("text", ["ZZ", "", "1", "11S", "AX", "help", "S", "10", "AAS"])
def test_not_cards(text):
    assert parse_card_text(text) is None


def test_bid_input_and_choices():
    assert [parse_bid_text(t) for t in ("nil", "NIL", "0", "n", "4", " 13 ", "bid 5", "seven")] == [0, 0, 0, 0, 4,
                                                                                                  13, 5, 7]
    assert parse_bid_text("x") is None and parse_bid_text("AS") is None and parse_bid_text("14") == 14
    assert format_bid_choices(range(14)) == "nil, 1-13"
    assert format_bid_choices([4, 5, 6, 7, 8, 9, 10, 11, 12, 13]) == "4-13"
    assert format_bid_choices([0, 2, 4, 5]) == "nil, 2, 4-5"


# ---------------------------------------------------------------------- the agent, in process
class Keyboard:
    """An input stream that answers each prompt with the next scripted line."""

    def __init__(self, lines, out: io.StringIO) -> None:
        self.lines = list(lines)
        self.out = out

    def readline(self) -> str:
        if not self.lines:
            return ""
        line = self.lines.pop(0)
        self.out.write(line + "\n")
        return line + "\n"


def person(lines, **kw):
    out = io.StringIO()
    agent = HumanAgent(input=Keyboard(lines, out), output=out, color=False, **kw)
    return agent, out


DEAL = [  # North, East, South, West
    "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
    "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
    "AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 2D",
    "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C",
]
MIXED = [  # each seat holds some of every suit
    "AS KS QS JS AH KH QH AD KD QD AC KC QC",
    "TS 9S 8S JH TH 9H JD TD 9D JC TC 9C 8H",
    "7S 6S 5S 7H 6H 5H 8D 7D 6D 8C 7C 6C 5D",
    "4S 3S 2S 4H 3H 2H 4D 3D 2D 5C 4C 3C 2C",
]


def bid_all(env, bids=(3, 3, 3, 3)):
    for _ in range(4):
        env.step(BID_ACTION_BASE + bids[env.game.to_act])


def test_follow_suit_is_explained():
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"deal": MIXED, "dealer": 3})   # North leads
    bid_all(env)
    env.step(parse_card("AH"))           # North leads hearts; East follows
    env.step(parse_card("8H"))
    agent, out = person(["AS", "7s", "8d", "9h", "7h"], seat=2, rules=env.rules)
    assert agent.act(env.observe("player_2")) == parse_card("7H")
    text = out.getvalue()
    assert "AS is not in your hand." in text or "A♠ is not in your hand." in text
    assert text.count("You must follow hearts") == 2         # 7S, 8D
    assert "9H is not in your hand" in text
    assert "Trick 1: North led AH" in text and "East 8H" in text


def test_spades_not_broken_and_already_played_are_explained():
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"deal": MIXED, "dealer": 1})   # South leads
    bid_all(env)
    agent, out = person(["7S", "?", "1"], seat=2, rules=env.rules)
    action = agent.act(env.observe("player_2"))
    text = out.getvalue()
    assert "Spades are not broken yet" in text and "(spades are not broken yet" in text
    assert "Playing: type a card" in text and "Commands" in text                  # help
    assert action == parse_card("7H")                                            # 1 = first legal, H > D > C
    env.step(action)
    for card in ("2H", "KH", "8H"):
        env.step(parse_card(card))
    # North won with KH and leads; after its lead, South is asked again.
    env.step(parse_card("AD"))
    env.step(parse_card("9D"))
    agent, out = person(["7h", "8d"], seat=2, rules=env.rules)
    assert agent.act(env.observe("player_2")) == parse_card("8D")
    assert "7H has already been played by you" in out.getvalue()


def test_no_spades_on_the_first_trick_is_explained():
    env = spades_v0.raw_env(rules="tournament")
    env.reset(seed=0, options={"dealer": 3, "deal": [
        "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C", "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
        "AS KS QS JS TS 9S 8S AD KD QD JD TD 9D", "7S 6S 5S 4S 3S 2S 8D 7D 6D 5D 4D 3D 2D"]})
    bid_all(env, (4, 4, 4, 4))
    env.step(parse_card("2C"))
    env.step(parse_card("2H"))
    agent, out = person(["as", "9d"], seat=2, rules=env.rules)
    assert agent.act(env.observe("player_2")) == parse_card("9D")
    assert "No spade may be played to the first trick" in out.getvalue()
    assert "No clubs, play any:" in out.getvalue()


def test_bidding_and_blind_nil_prompts():
    env = spades_v0.raw_env(rules="tournament")
    env.reset(seed=0, options={"deal": MIXED, "dealer": 1, "scores": [0, 150]})   # South first, side trails
    agent, out = person(["7", "nil", "b"], seat=2, rules=env.rules)
    assert agent.act(env.observe("player_2")) == BLIND_NIL_ACTION
    text = out.getvalue()
    assert "face down" in text and "trails by 150" in text and "BLIND NIL" in text
    assert tokens(text) == set()                           # no card of the unseen hand is shown
    env2 = spades_v0.raw_env(rules="tournament")
    env2.reset(seed=0, options={"deal": MIXED, "dealer": 3})   # North bids first, then East, South
    env2.step(BID_ACTION_BASE + 1)
    env2.step(BID_ACTION_BASE + 2)
    agent, out = person(["AS", "nil", "2", "3"], seat=2, rules=env2.rules)
    assert agent.act(env2.observe("player_2")) == BID_ACTION_BASE + 3
    text = out.getvalue()
    assert "not a card" in text or "not a bid" in text or "say how many tricks" in text
    assert "your side must bid at least 4 together" in text
    assert "You may bid: 3-13." in text


def test_quit_asks_first_and_eof_quits():
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"deal": MIXED, "dealer": 1})
    agent, out = person(["q", "n", "score", "last", "quit", "yes"], seat=2, rules=env.rules)
    with pytest.raises(QuitGame) as exc:
        agent.act(env.observe("player_2"))
    assert exc.value.reason == "quit"
    text = out.getvalue()
    assert "Carrying on." in text and "points" in text and "No trick has been completed" in text
    agent, out = person([], seat=2)
    with pytest.raises(QuitGame) as exc:
        agent.act(env.observe("player_2"))
    assert exc.value.reason == "eof"


def test_registered_and_command_line_errors(capsys):
    assert "human" in agents.available()
    assert isinstance(agents.make("human", seat=0), HumanAgent)
    for argv in (["--seat", "9"], ["--partner", "human"], ["--rules", "no-such-rules"],
                 ["--opponents", "no-such-agent"], ["--hands", "0"]):
        with pytest.raises(SystemExit) as exc:
            play.main(argv)
        assert exc.value.code == 2
    assert "is not a seat" in capsys.readouterr().err


def test_end_of_input_saves_the_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("3\n1\n"))
    record = tmp_path / "eof.json"
    assert play.main(["--seed", "3", "--opponents", "random", "--partner", "random", "--seat", "west",
                      "--record", str(record), "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "Input closed" in out and record.name in out
    saved = load_record(record)
    assert [s for s, _ in saved["hands"][0]["actions"]].count(3) == 2      # West bid and played a card
    replay(saved)


def test_a_record_path_that_cannot_be_written_is_refused_before_the_game(tmp_path, monkeypatch, capsys):
    """Issue 75: --record DIR or FILE/r.json failed only after the whole game was played."""
    from helpers_files import is_char_device, leftovers, private_device

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))        # a game that started would read from here
    (tmp_path / "FILE").write_text("x")
    device = private_device(tmp_path)
    for target, expected in ((tmp_path, "is a folder: expected a file"),
                             (tmp_path / "FILE" / "r.json", "FILE is not a folder"),
                             (f"{tmp_path}/newdir/", "ends in a slash"),
                             (device, "is a device, not a regular file")):
        with pytest.raises(SystemExit) as exc:
            play.main(["--seed", "3", "--opponents", "random", "--partner", "random", "--record", str(target)])
        captured = capsys.readouterr()
        assert exc.value.code == 2 and captured.err.count("\n") == 1 and expected in captured.err, captured.err
        assert "--record" in captured.err and captured.out == ""
    assert is_char_device(device) and not leftovers(tmp_path) and not (tmp_path / "newdir").exists()


# ---------------------------------------------------------------------- hidden information
@pytest.mark.parametrize("seed, seat, rules, scores, unicode", [
    (0, 2, "standard", None, True), (1, 0, "standard", [0, 300], False), (2, 3, "standard", [0, 300], True),
    (3, 1, "cutthroat", None, False), (4, 2, "tournament", [250, 0], True),
])
def test_the_screen_never_shows_unplayed_cards_of_other_seats(seed, seat, rules, scores, unicode):
    """At every prompt, every card written on the screen since the hand began is the person's
    own (dealt or received) or has been played. Also: lines fit 80 columns."""
    env = spades_v0.raw_env(rules=rules, max_hands=2)
    options = {"scores": scores if rules != "cutthroat" else None}
    env.reset(seed=seed, options={k: v for k, v in options.items() if v is not None})
    game = env.game
    out = io.StringIO()
    checks = []

    class Watcher:
        def readline(self) -> str:
            text = out.getvalue()
            start = text.rfind("Hand ")        # the banner of the hand in progress
            shown = tokens(text[start:])
            played = 0
            for m in game.played:
                played |= m
            allowed = game.deal[seat] | game.received[seat] | played
            leaked = {c for c in shown if not (allowed >> c) & 1}
            assert not leaked, f"other seats' cards on screen: {sorted(leaked)}\n{text[start:]}"
            if "Blind nil?" in text[text.rfind("\n"):]:
                assert not (shown - set(mask_to_cards(played))), "cards shown before looking"
                choice = "b" if seed % 2 else "l"
            elif "Your bid" in text[text.rfind("\n"):]:
                choice = "4"
            else:
                choice = "1"
            checks.append(choice)
            out.write(choice + "\n")
            return choice + "\n"

    person_ = HumanAgent(input=Watcher(), output=out, seat=seat, rules=env.rules, color=False, unicode=unicode)
    players = [person_ if s == seat else agents.make("random", seed=seed * 10 + s) for s in range(env.rules.players)]
    table = Table(game, seat, person_)
    table.intro("random", "random", seed)
    play_game(env, players, table)
    text = out.getvalue()
    assert len(checks) >= 13 and ("Game over" in text or "End of play" in text)
    assert all(visible_len(line) <= 80 for line in text.splitlines()), max(text.splitlines(), key=len)
    if seat == 0 and scores:          # the person bid blind nil and swapped cards with South
        assert "Blind nil?" in text and "You pass" in text and "South passes you" in text
