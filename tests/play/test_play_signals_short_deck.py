"""The terminal table (``spades-play``) at the tables of issue 74: a person sends a message of the
free signal (wrong ones explained), everyone's messages are announced and shown, the short deck
is dealt, bid within its tricks and played to the end, and no other seat's card reaches the
screen before it is played."""

from __future__ import annotations

import io
import re

import pytest

import agents
from agents.human import HumanAgent, parse_message_text, strip_ansi
from play.table import Table, play_game
from spades_env import parse_card, spades_v0

CARD_TOKEN = re.compile(r"(?<![A-Za-z0-9])(10|[2-9TJQKA])([SHDC])(?![A-Za-z0-9])")


class Scripted:
    """Answers each prompt by its kind: the scripted lines for messages and bids first, then
    "1" (the first legal card) for every card."""

    def __init__(self, out: io.StringIO, messages: list[str], bids: list[str], check=None) -> None:
        self.out, self.messages, self.bids, self.check = out, list(messages), list(bids), check

    def readline(self) -> str:
        text = self.out.getvalue()
        last = text[text.rfind("\n"):]
        if self.check is not None:
            self.check(text)
        if "Your message" in last:
            line = self.messages.pop(0) if self.messages else "0"
        elif "Your bid" in last:
            line = self.bids.pop(0) if self.bids else "2"
        else:
            line = "1"
        self.out.write(line + "\n")
        return line + "\n"


@pytest.mark.parametrize("seat", [0, 3])
def test_a_person_sends_messages_and_plays_the_short_deck(seat):
    env = spades_v0.raw_env(rules="short_signals", max_hands=2)
    env.reset(seed=seat + 5)
    game = env.game
    out = io.StringIO()

    def no_leak(text: str) -> None:
        start = text.rfind("Hand ")
        shown = {parse_card(rank + suit) for rank, suit in CARD_TOKEN.findall(strip_ansi(text[start:]))}
        played = 0
        for mask in game.played:
            played |= mask
        leaked = {c for c in shown if not (game.deal[seat] | played) >> c & 1}
        assert not leaked, f"other seats' cards on screen: {sorted(leaked)}"

    person = HumanAgent(input=Scripted(out, ["7", "hello", "m2", "message 1"], ["9", "3"], no_leak), output=out,
                        seat=seat, rules=env.rules, color=False, unicode=False)
    players = [person if s == seat else agents.make("heuristic", seed=s) for s in range(4)]
    table = Table(game, seat, person)
    table.intro("heuristic", "heuristic", seat + 5)
    play_game(env, players, table)
    text = out.getvalue()
    assert "A short deck: the 6 highest ranks of each suit, 6 cards and tricks a hand." in text
    assert "sends one of 4 messages (0-3)" in text
    assert "There is no message 7: the signal has messages 0 to 3." in text
    assert "'hello' is not a message" in text
    assert "There are only 6 tricks: a bid is 1 to 6, or nil." in text
    announced = [line for line in text.splitlines() if line.startswith("Messages: ")]
    assert len(announced) == 2 and "You 2" in announced[0] and "You 1" in announced[1]
    assert re.search(r"^Message\s+2\s", text, re.M)                   # the grid's row, the person first
    assert "Trick 6:" in text and "Trick 7:" not in text
    record = env.game_record()
    assert [h["messages"][seat] for h in record["hands"]] == [2, 1]
    assert all(m == 0 for h in record["hands"] for s, m in enumerate(h["messages"]) if s != seat)


def test_message_input_forms():
    assert [parse_message_text(t) for t in ("0", " 3 ", "m2", "M 1", "msg 3", "message 12")] == [0, 3, 2, 1, 3, 12]
    assert all(parse_message_text(t) is None for t in ("", "m", "two", "AS", "nil", "message -1"))


def test_the_short_table_without_signals_announces_no_message():
    env = spades_v0.raw_env(rules="short", max_hands=1)
    env.reset(seed=2)
    out = io.StringIO()
    person = HumanAgent(input=Scripted(out, [], ["1"]), output=out, seat=2, rules=env.rules, color=False)
    table = Table(env.game, 2, person)
    table.intro("heuristic", "heuristic", 2)
    play_game(env, [person if s == 2 else agents.make("heuristic") for s in range(4)], table)
    text = out.getvalue()
    assert "Messages:" not in text and "Message " not in text and "messages" not in text
    assert "Trick 1 of 6" in text and ("Game over" in text or "End of play" in text)
