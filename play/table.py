"""The terminal table's announcements: what a person at ``spades-play`` is told as the game goes.

:class:`Table` tells only public events (messages of the free signal, bids, cards played, tricks,
scores) and the person's own
passes, never another seat's hand; :func:`play_game` runs an env with one player per seat and
lets the table announce each action. The person's own prompts belong to the human agent
(``agents.human``); the words for seats, sides and bids come from ``spades_env.names``.
"""

from __future__ import annotations

import textwrap
from typing import Any, Optional, Sequence

from agents.human import (WIDTH, HumanAgent, Seats, Style, bid_word, pad, plural, visible_len,
                          wrap_items)
from spades_env.cards import parse_card
from spades_env.game import (PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY, PHASE_SIGNAL,
                             SpadesGame)


# ---------------------------------------------------------------------- the table's announcements
class Table:
    """Tells the person what happens at the table: only public events (bids, cards played,
    tricks, scores) and their own passes. Never another seat's hand."""

    def __init__(self, game: SpadesGame, seat: int, person: HumanAgent) -> None:
        self.game = game
        self.seat = seat
        self.person = person
        self.style: Style = person.style
        r = game.rules
        self.seats = Seats(seat, r.players, r.partnerships)
        self.announced_hand = 0

    def say(self, text: str = "") -> None:
        self.person.say(text)

    def name(self, seat: int) -> str:
        return self.seats.abs_name(seat)

    def ours(self, seat: int) -> bool:
        r = self.game.rules
        return r.side_of(seat) == r.side_of(self.seat)

    def side_order(self) -> list[int]:
        """Sides, the person's first."""
        r = self.game.rules
        own = r.side_of(self.seat)
        return [(own + j) % r.num_sides for j in range(r.num_sides)]

    def score_lines(self, head: str, scores: Sequence[int], bags: Sequence[int]) -> list[str]:
        """``head`` then each side's score and bags, the person's first, wrapped to the screen."""
        items = [f"{self.seats.abs_side_name(side)} {scores[side]} ({plural(bags[side], 'bag')})"
                 for side in self.side_order()]
        return wrap_items(items, head, len(head), sep=f"  {self.style.dot}  ")

    def say_lines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.say(line)

    # -------------------------------------------------------------- events
    def intro(self, partner: Optional[str], opponents: str, seed: int) -> None:
        s = self.style
        r = self.game.rules
        mercy = f", {r.mercy_score} loses" if r.mercy_score is not None else ""
        limit = f", at most {r.max_hands} hand{'s' if r.max_hands != 1 else ''}" if r.max_hands else ""
        self.say(s.rule("Spades", char="═" if s.unicode else "="))
        self.say(f"Rules: {r.name.rstrip('+')} ({r.target_score} to win{mercy}{limit}). Seed {seed}.")
        if r.deck_ranks < 13:
            self.say(f"A short deck: the {r.deck_ranks} highest ranks of each suit, {r.tricks_per_hand} cards and "
                     "tricks a hand.")
        if r.signals:
            for line in _wrap_words(f"Before the bids every seat sends one of {r.signals} messages "
                                    f"(0-{r.signals - 1}); everyone sees them, nothing scores them."):
                self.say(line)
        n = r.players
        others = [x for x in range(n) if x != self.seat]
        if r.partnerships:
            p = (self.seat + 2) % 4
            opp = [x for x in others if x != p]
            text = (f"You sit {Seats(None, n).abs_name(self.seat)}. Your partner {self.name(p)} plays "
                    f"'{partner}'; {self.name(opp[0])} and {self.name(opp[1])} play '{opponents}'.")
        else:
            where = "are" if n == 3 else "sit"
            text = (f"You {where} {Seats(None, n).abs_name(self.seat)}, every player for themselves; "
                    f"{', '.join(self.name(x) for x in others)} play '{opponents}'.")
        for line in _wrap_words(text):
            self.say(line)
        self.say("Type ? at any prompt for help, q to quit (the game is saved).")

    def before_action(self) -> None:
        game = self.game
        if game.hand_number != self.announced_hand:
            self.announced_hand = game.hand_number
            s = self.style
            self.say("")
            dealer = self.name(game.dealer)
            deals = "you deal" if dealer == "You" else f"{dealer} deals"
            self.say(s.rule(f"Hand {game.hand_number} {s.dot} {deals}",
                            char="═" if s.unicode else "="))
            self.say_lines(self.score_lines("Score: ", game.scores, game.bags))

    def after_action(self, seat: int, action: int, phase_before: int, hands_done_before: int,
                     tricks_before: int) -> None:
        game = self.game
        if phase_before == PHASE_SIGNAL:
            if game.phase != PHASE_SIGNAL:
                self.messages_done()
        elif phase_before in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            if game.phase not in (PHASE_BIDDING, PHASE_BLIND_DECISION):
                self.bids_done()
        elif phase_before == PHASE_PASSING:
            self.passed_card(*game.passes[-1])
        elif phase_before == PHASE_PLAY:
            if game.hands_completed > hands_done_before:
                record = game.hand_record(-1)
                last = record["tricks"][-1]
                self.trick_done(last["leader"], [parse_card(c) for c in last["cards"]], last["winner"],
                                len(record["tricks"]))
                self.hand_done(record)
            elif len(game.tricks) > tricks_before:
                leader, cards, winner = game.tricks[-1]
                self.trick_done(leader, cards, winner, len(game.tricks))

    def messages_done(self) -> None:
        """Every seat's message of the free signal, in the order they were sent."""
        game = self.game
        n = game.n
        order = [(game.dealer + i) % n for i in range(1, n + 1)]
        sent = [f"{self.name(x)} {game.messages[x]}" for x in order]
        self.say_lines(wrap_items(sent, "Messages: ", 10, sep=f" {self.style.dot} "))

    def bids_done(self) -> None:
        game = self.game
        s = self.style
        n = game.n
        order = [(game.dealer + i) % n for i in range(1, n + 1)]
        bids = [f"{self.name(x)} {bid_word(game.bids[x], game.blind[x])}" for x in order]
        lines = wrap_items(bids, "Bids: ", 6, sep=f" {s.dot} ")
        if game.rules.partnerships:
            sides = []
            for side in self.side_order():
                nils = "".join(" + " + bid_word(0, game.blind[m]) for m in (side, side + 2) if game.bids[m] == 0)
                word = self.seats.abs_side_name(side).split()[0]
                sides.append(f"{word} {game.contract(side)}{nils}")
            contracts = f"({', '.join(sides)})"
            if visible_len(lines[-1]) + 3 + len(contracts) <= WIDTH:
                lines[-1] += "   " + contracts
            else:
                lines.append("      " + contracts)
        self.say_lines(lines)

    def passed_card(self, frm: int, to: int, card: int) -> None:
        s = self.style
        if frm == self.seat:
            self.say(f"You pass {s.card(card)} to {self.name(to)}.")
        elif to == self.seat:
            self.say(f"{self.name(frm)} passes you {s.card(card)}.")
        else:
            self.say(f"{self.name(frm)} passes a card to {self.name(to)}.")

    def trick_done(self, leader: int, cards: Sequence[int], winner: int, number: int) -> None:
        s = self.style
        n = self.game.n
        plays = f" {s.dot} ".join(f"{self.name((leader + i) % n)} {s.card(c)}" for i, c in enumerate(cards))
        who = self.name(winner)
        won = f"{who} win{'' if who == 'You' else 's'}"
        won = s.good(won) if self.ours(winner) else s.bold(won)
        line = f"Trick {number}: {plays}  {s.arrow} {won}"
        self.say(line)
        self.person.note_trick(line)

    def hand_done(self, record: dict) -> None:
        s = self.style
        game = self.game
        r = game.rules
        self.say("")
        self.say(s.rule(f"Hand {record['number']} scored"))
        bids, blind, taken = record["bids"], record["blind"], record["tricks_taken"]
        rows, notes = [], []
        for side in self.side_order():
            members = sorted(r.side_members(side), key=lambda m: m != self.seat)
            label = self.seats.abs_side_name(side)
            change = record["score_change"][side]
            points = f"{change:+d}"
            points = s.good(points) if change > 0 else (s.bad(points) if change < 0 else points)
            rows.append([s.bold(label) if self.ours(members[0]) else label,
                         ", ".join(f"{self.name(m)} {bid_word(bids[m], blind[m])}" if r.partnerships
                                   else bid_word(bids[m], blind[m]) for m in members),
                         str(sum(taken[m] for m in members)), points, str(record["scores"][side]),
                         str(record["bags"][side])])
            result = record["results"][side]      # the engine's scoring of this side's hand
            for nil in sorted(result["nils"], key=lambda n: n["seat"] != self.seat):
                m = nil["seat"]
                kind = "blind nil" if blind[m] else "nil"
                whose = self.seats.possessive(self.name(m))
                whose = whose[0].upper() + whose[1:]
                bonus = r.blind_nil_bonus if blind[m] else r.nil_bonus
                if nil["kept"]:
                    notes.append(f"{whose} {kind} made: +{bonus}.")
                else:
                    counts = "" if r.nil_tricks_count_for_partner else ", counted as bags"
                    notes.append(f"{whose} {kind} failed ({plural(taken[m], 'trick')}{counts}): -{bonus}.")
            contract, counted = result["contract"], result["tricks"]
            if contract:
                if result["made"]:
                    notes.append(f"{label} made {contract} with {counted}.")
                else:
                    notes.append(f"{label} set: took {counted} of {contract}.")
            penalties = record["bag_penalties"][side]
            if penalties:
                notes.append(f"{label} reached {penalties * r.bag_limit} bags: -{penalties * r.bag_penalty}.")
        header = ["", "bids", "tricks", "points", "score", "bags"]
        widths = [max(visible_len(row[i]) for row in rows + [header]) + 2 for i in range(len(header))]
        self.say(s.dim("".join(pad(h, w) for h, w in zip(header, widths)).rstrip()))
        for row in rows:
            self.say("".join(pad(v, w) for v, w in zip(row, widths)).rstrip())
        for note_line in _wrap_words(" ".join(notes)):
            self.say(note_line)
        if not game.game_over:       # the next hand is dealt: let the person read this first
            self.person.pause()

    def game_over(self) -> None:
        game = self.game
        s = self.style
        r = game.rules
        self.say("")
        self.say(s.rule("Game over" if not game.truncated else "End of play", char="═" if s.unicode else "="))
        order = self.side_order()
        scores = game.scores
        if game.truncated:
            hands = game.hand_number
            where = f"Stopped after {plural(hands, 'hand')} (the hand limit)"
        else:
            where = f"After {plural(game.hand_number, 'hand')}"
            if (r.mercy_score is not None and any(scores[x] <= r.mercy_score for x in order)
                    and (game.winner is None or scores[game.winner] < r.target_score)):
                where += f" (mercy rule: {r.mercy_score} or less loses)"
        if game.winner is None:
            self.say(f"{where}: a tie at {scores[order[0]]}.")
        else:
            name = self.seats.abs_side_name(game.winner)
            verb = "lead" if game.truncated else "win"
            if not r.partnerships and name != "You":
                verb += "s"
            mine = r.side_of(self.seat) == game.winner
            text = f"{name} {verb}"
            self.say(f"{where}: {s.good(text) if mine else s.bold(text)}.")
        self.say_lines(self.score_lines("Final score: ", scores, game.bags))


def _wrap_words(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH) if text else []


# ---------------------------------------------------------------------- the game loop
def play_game(env: Any, players: Sequence[Any], table: Table) -> None:
    """Run the env until the game ends. ``players[s].act(obs, info)`` decides for seat ``s``
    from its own ``env.last()``; ``table`` announces the public events to the person."""
    game = env.unwrapped.game
    seat_of = env.unwrapped.agent_name_mapping
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        if termination or truncation:
            env.step(None)
            continue
        s = seat_of[agent]
        table.before_action()
        phase, hands_done, tricks = game.phase, game.hands_completed, len(game.tricks)
        action = players[s].act(obs, info)
        env.step(action)
        table.after_action(s, int(action), phase, hands_done, tricks)
    table.game_over()
