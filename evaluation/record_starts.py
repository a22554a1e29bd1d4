"""Record the "real" hand starts (:mod:`spades_env.starts`) from whole games between the baselines.

    python -m evaluation.record_starts --out spades_env/data/real_starts.json

plays the default sources (400 games heuristic vs heuristic, 20 duplicate game seeds search vs
heuristic: 440 games, standard rules, seed 0) and writes every hand's starting state (both
sides' scores and bags, the dealer), each in both orientations, counted; a hand played on from
a tie at or over the target is left out (no game can be started there: spades_env.game's
start_scores_problem). The games are
:func:`evaluation.evaluate`'s, so the file is the same byte for byte whatever ``--workers``.
Kept here, not in ``spades_env``: the rules core does not import agents.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Optional, Sequence

from spades_env.files import write_text
from spades_env.game import start_scores_problem
from spades_env.rules import Rules, make_rules
from spades_env.starts import COLUMNS, FORMAT, StartError, check_rules, parse_table

from .outcomes import EvaluationError
from .results import evaluate

# (team A, team B, games, duplicate): the baselines' games the default table comes from.
DEFAULT_SOURCES = (("heuristic", "heuristic", 400, False), ("search", "heuristic", 20, True))


def hand_starts(record: dict) -> list[tuple[int, int, int, int, int]]:
    """Every hand's starting state in a game record: (score_0, score_1, bags_0, bags_1, dealer)."""
    bags = list(record["start"]["bags"])
    out = []
    for hand in record["hands"]:
        if not hand.get("complete", True):
            break
        s0, s1 = hand["scores_before"]
        out.append((s0, s1, bags[0], bags[1], hand["dealer"]))
        bags = list(hand["bags"])
    return out


def game_starts(record: dict, rules: Rules) -> list[tuple[int, int, int, int, int]]:
    """The hand starts of a game record that a game can be started from under ``rules``: a hand
    played on from a tie at or over the target is left out (spades_env.game.start_scores_problem)."""
    return [state for state in hand_starts(record) if start_scores_problem(rules, state[:2]) is None]


def both_orientations(state: tuple[int, int, int, int, int]) -> list[tuple[int, int, int, int, int]]:
    """The state, and the same with the sides swapped (every seat one on: the dealer too)."""
    s0, s1, b0, b1, dealer = state
    return [state, (s1, s0, b1, b0, (dealer + 1) % 4)]


def record_starts(sources: Sequence[tuple[str, str, int, bool]] = DEFAULT_SOURCES, seed: int = 0,
                  rules: str = "standard", workers: Optional[int] = None, progress: bool = False) -> dict:
    """The table's JSON: every hand start of the sources' games, both orientations, counted."""
    counts: Counter = Counter()
    played = []
    for team_a, team_b, games, duplicate in sources:
        result = evaluate(team_a, team_b, games=games, duplicate=duplicate, rules=rules, seed=seed,
                          workers=workers, progress=progress, keep_records=True)
        recorded_rules = make_rules(result.rules_settings)
        for record in result.records:
            for state in game_starts(record, recorded_rules):
                counts.update(both_orientations(state))
        played.append({"team_a": team_a, "team_b": team_b, "games": games, "duplicate": duplicate,
                       "plays": len(result.records), "hands": result.hands})
        rules_settings, rules_name = result.rules_settings, result.rules
    return {
        "format": FORMAT,
        "rules": rules_name, "rules_settings": rules_settings, "seed": seed, "sources": played,
        "hand_starts": sum(counts.values()),
        "note": "every hand start of these games, in both orientations (sides swapped, dealer one seat on)",
        "command": "python -m evaluation.record_starts --out spades_env/data/real_starts.json"
                   + ("" if seed == 0 else f" --seed {seed}"),
        "columns": list(COLUMNS),
        "states": [list(state) + [n] for state, n in sorted(counts.items())],
    }


def write_table(data: dict, path: str) -> None:
    """One state a line: small diffs when the table is regenerated."""
    header = {k: v for k, v in data.items() if k != "states"}
    lines = json.dumps(header, indent=1)[:-2]
    rows = ",\n  ".join(json.dumps(row) for row in data["states"])
    write_text(path, f"{lines},\n \"states\": [\n  {rows}\n ]\n}}\n", "starts table", stream_ok=True)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.record_starts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the table to write (JSON)")
    parser.add_argument("--games", type=int, default=None,
                        help="games heuristic vs heuristic (default 400); the search games stay 20 duplicate seeds")
    parser.add_argument("--search-games", type=int, default=None, help="duplicate game seeds search vs heuristic "
                        "(default 20; 0: none)")
    parser.add_argument("--seed", type=int, default=0, help="match seed (default 0)")
    parser.add_argument("--workers", type=int, default=None, help="processes (the table does not depend on it)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    sources = [list(s) for s in DEFAULT_SOURCES]
    if args.games is not None:
        sources[0][2] = args.games
    if args.search_games is not None:
        sources[1][2] = args.search_games
    sources = [tuple(s) for s in sources if s[2] != 0]
    start = time.perf_counter()
    try:
        if not sources:
            raise EvaluationError("--games 0 and --search-games 0: no games to record")
        data = record_starts(sources, seed=args.seed, workers=args.workers, progress=not args.quiet)
        check_rules(parse_table(data), make_rules(data["rules_settings"]))
    except (EvaluationError, StartError) as exc:
        print(f"record_starts: error: {exc}", file=sys.stderr)
        return 2
    if args.games is not None or args.search_games is not None:   # what remakes this file (not --workers)
        counts = {a: g for a, _, g, _ in sources}
        data["command"] = (f"python -m evaluation.record_starts --out {args.out} --games {counts.get('heuristic', 0)} "
                           f"--search-games {counts.get('search', 0)}" + ("" if args.seed == 0 else f" --seed {args.seed}"))
    write_table(data, args.out)
    print(f"wrote {args.out}: {data['hand_starts']} hand starts, {len(data['states'])} distinct states "
          f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
