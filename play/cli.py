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
from pathlib import Path
from typing import Any, Optional, Sequence

import agents
from agents.human import QuitGame
from agents.specs import AgentSpecError, parse_agent_spec
from evaluation.cli_common import OneLineParser
from spades_env import RulesError, save_record, spades_v0
from spades_env.files import FileRuleError, check_output

from .table import Table, play_game

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


def build_parser() -> argparse.ArgumentParser:
    default = default_agent()
    p = OneLineParser(               # a mistyped option or agent is one line, not the usage block
        prog="spades-play",
        description="Play Spades in the terminal with agents as partner and opponents. "
                    "Seats: North=0, East=1, South=2, West=3; partners sit opposite (0+2, 1+3).",
        epilog="At a prompt: type a card (AS, as, 10h, th, A♠) or its number, a bid (1-13, nil), a message "
               "(its number, under signals), "
               "? for help, q to quit. The game record is saved at the end and on quit.")
    p.add_argument("--seat", type=parse_seat, default=DEFAULT_SEAT,
                   help="your seat: 0-3 or north/east/south/west (default: south = 2)")
    p.add_argument("--partner", default=None, metavar="AGENT",
                   help=f"your partner: a registered agent, optionally name:key=value,... "
                        f"(default: {default}; available: {', '.join(a for a in agents.available() if a != 'human')})")
    p.add_argument("--opponents", default=None, metavar="AGENT", help=f"both opponents (default: {default})")
    p.add_argument("--rules", default="standard", metavar="PRESET_OR_YAML",
                   help="a preset (standard, basic, tournament, cutthroat, openspiel, short, short_signals) or a rules YAML "
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
    try:                                    # a folder, FILE/r.json, a device: refused before the game
        record_path = check_output(args.record if args.record else default_record_path(), "--record", stream_ok=True)
    except FileRuleError as exc:
        parser.error(str(exc))

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
    except (OSError, FileRuleError) as exc:
        print(f"spades-play: could not save the game record to {record_path}: {exc}", file=sys.stderr)
        return 1
    person.say(f"Game record saved to {path.resolve()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
