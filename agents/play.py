"""``spades-play``: a person takes a seat at the table with agents as partner and opponents.

    spades-play                                  # you are South; partner and opponents: heuristic
    spades-play --seat north --partner random --opponents heuristic --rules tournament
    spades-play --seed 7 --hands 3 --record my-game.json --no-color

Seats are North=0, East=1, South=2, West=3 (partners 0+2 and 1+3); the person sits South by
default, the usual seat of the player at the bottom of a diagram. Every other seat is an agent
from the registry (``agents.make``) acting on its own observation. The screen shows only what the
person's seat may know: their own hand, the bids, the cards played, the tricks, the score.
The game record is saved at the end, and also when the person quits (``q``), the input ends
(Ctrl-D) or the game is interrupted (Ctrl-C); ``spades_env.replay(load_record(path))`` plays it
back.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import random
import sys
import textwrap
from pathlib import Path
from typing import Any, Optional, Sequence

import agents
from agents.specs import AgentSpecError, parse_agent_spec
from spades_env import RulesError, save_record, spades_v0
from spades_env.cards import parse_card
from spades_env.game import (PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY,
                             SpadesGame)

from .human import (WIDTH, HumanAgent, QuitGame, Seats, Style, bid_word, pad, plural, visible_len,
                    wrap_items)

SEAT_WORDS = {"n": 0, "north": 0, "e": 1, "east": 1, "s": 2, "south": 2, "w": 3, "west": 3}
DEFAULT_SEAT = 2   # South


def parse_seat(text: str) -> int:
    word = str(text).strip().lower()
    if word in SEAT_WORDS:
        return SEAT_WORDS[word]
    if word.isdigit() and 0 <= int(word) <= 3:
        return int(word)
    raise argparse.ArgumentTypeError(f"{text!r} is not a seat: use 0-3 or north/east/south/west "
                                     f"(North=0, East=1, South=2, West=3)")


def default_agent() -> str:
    return "heuristic" if "heuristic" in agents.available() else "random"


def default_record_path() -> Path:
    return Path(f"spades-game-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")


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
        if phase_before in (PHASE_BIDDING, PHASE_BLIND_DECISION):
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
            for m in members:
                if bids[m] == 0:
                    kind = "blind nil" if blind[m] else "nil"
                    whose = self.seats.possessive(self.name(m))
                    whose = whose[0].upper() + whose[1:]
                    bonus = r.blind_nil_bonus if blind[m] else r.nil_bonus
                    if taken[m] == 0:
                        notes.append(f"{whose} {kind} made: +{bonus}.")
                    else:
                        counts = "" if r.nil_tricks_count_for_partner else ", counted as bags"
                        notes.append(f"{whose} {kind} failed ({plural(taken[m], 'trick')}{counts}): -{bonus}.")
            contract = sum(bids[m] for m in members if bids[m])
            counted = sum(taken[m] for m in members if bids[m] or r.nil_tricks_count_for_partner)
            if contract:
                if counted >= contract:
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


def build_parser() -> argparse.ArgumentParser:
    default = default_agent()
    p = argparse.ArgumentParser(
        prog="spades-play",
        description="Play Spades in the terminal with agents as partner and opponents. "
                    "Seats: North=0, East=1, South=2, West=3; partners sit opposite (0+2, 1+3).",
        epilog="At a prompt: type a card (AS, as, 10h, th, A♠) or its number, a bid (1-13, nil), "
               "? for help, q to quit. The game record is saved at the end and on quit.")
    p.add_argument("--seat", type=parse_seat, default=DEFAULT_SEAT,
                   help="your seat: 0-3 or north/east/south/west (default: south = 2)")
    p.add_argument("--partner", default=None, metavar="AGENT",
                   help=f"your partner: a registered agent, optionally name:key=value,... "
                        f"(default: {default}; available: {', '.join(a for a in agents.available() if a != 'human')})")
    p.add_argument("--opponents", default=None, metavar="AGENT", help=f"both opponents (default: {default})")
    p.add_argument("--rules", default="standard", metavar="PRESET_OR_YAML",
                   help="a preset (standard, basic, tournament, cutthroat, openspiel) or a rules YAML "
                        "file (default: standard)")
    p.add_argument("--seed", type=int, default=None, help="seed for the deal and the agents (default: random)")
    p.add_argument("--hands", type=int, default=None, metavar="N",
                   help="stop after at most N hands (default: play to the end of the game)")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="where to save the game record (default: spades-game-<date>-<time>.json here)")
    p.add_argument("--no-color", action="store_true", help="no colors (also when NO_COLOR is set)")
    p.add_argument("--ascii", action="store_true", help="suits as letters S H D C instead of symbols")
    return p


def make_player(spec: str, seed: int, what: str, parser: argparse.ArgumentParser) -> Any:
    try:
        name, options = parse_agent_spec(spec)
    except AgentSpecError as exc:
        parser.error(f"{what}: {exc}")
    if name == "human":
        parser.error(f"{what} human: only one person can sit at this terminal")
    options.setdefault("seed", seed)
    try:
        return agents.make(name, **options)
    except (ValueError, TypeError) as exc:
        parser.error(f"{what} {spec!r}: {exc}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.hands is not None and args.hands < 1:
        parser.error("--hands must be at least 1")
    overrides = {"max_hands": args.hands} if args.hands is not None else {}
    try:
        env = spades_v0.raw_env(rules=args.rules, episode="game", **overrides)
    except (RulesError, OSError, ValueError, TypeError) as exc:
        parser.error(f"--rules {args.rules}: {exc}")
    rules = env.rules
    if args.seat >= rules.players:
        parser.error(f"--seat {args.seat}: these rules have seats 0-{rules.players - 1}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    default = default_agent()
    partner_spec = args.partner or default
    opponents_spec = args.opponents or default
    if not rules.partnerships and args.partner:
        print(f"note: these rules have no partnerships; --partner is ignored, every other player "
              f"is '{opponents_spec}'", file=sys.stderr)
    record_path = Path(args.record) if args.record else default_record_path()

    try:
        import readline  # noqa: F401  (line editing and history at the prompts)
    except ImportError:
        pass
    person = agents.make("human", seat=args.seat, rules=rules, color=False if args.no_color else None,
                         unicode=False if args.ascii else None)
    players: list[Any] = []
    for s in range(rules.players):
        if s == args.seat:
            players.append(person)
        elif rules.partnerships and s == (args.seat + 2) % 4:
            players.append(make_player(partner_spec, seed * 10 + s + 1, "--partner", parser))
        else:
            players.append(make_player(opponents_spec, seed * 10 + s + 1, "--opponents", parser))

    env.reset(seed=seed)
    table = Table(env.game, args.seat, person)
    status = 0
    ending = None
    try:
        table.intro(partner_spec if rules.partnerships else None, opponents_spec, seed)
        play_game(env, players, table)
    except QuitGame as exc:
        ending = "Input closed: leaving the game." if exc.reason == "eof" else "You left the game."
    except KeyboardInterrupt:
        ending = "Interrupted: leaving the game."
        status = 130
    except BaseException:
        # Something went wrong: keep the game played so far, then let the error show.
        try:
            path = save_record(env.game_record(), record_path)
            print(f"spades-play: the game record so far is saved to {path.resolve()}", file=sys.stderr)
        except Exception:   # noqa: BLE001  (the original error matters more)
            pass
        raise
    if ending:
        person.say("")
        person.say(ending)
        table.say_lines(table.score_lines("Score: ", env.game.scores, env.game.bags))
    try:
        path = save_record(env.game_record(), record_path)
    except OSError as exc:
        print(f"spades-play: could not save the game record to {record_path}: {exc}", file=sys.stderr)
        return 1
    person.say(f"Game record saved to {path.resolve()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
