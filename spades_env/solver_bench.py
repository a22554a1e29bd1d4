"""Time the exact endgame solver: ``python -m spades_env.solver_bench``.

Random positions (a deal bid at random, nils included, then played at random) with 16, 24 and
36 cards left, and whole hands from the first lead; the C solver valuing every legal card, on
one core, beside the Python reference where it is quick enough. Prints the median and the 99th
percentile per size (milliseconds, wall and CPU) and, with ``--json FILE``, writes them.

    python -m spades_env.solver_bench --positions 200 --whole 3 --json bench.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Optional

import numpy as np

from .game import BLIND_NIL_ACTION, NIL_ACTION, PHASE_BIDDING, PHASE_PLAY, SpadesGame
from .rules import make_rules
from .solver import OBJECTIVES, native_values, payoff_tables, reference_values

MAX_POSITIONS = 100_000


def random_position(seed: int, cards_left: int, rules="standard", nil_rate: float = 0.2) -> SpadesGame:
    """A play-phase position with ``cards_left`` cards in the hands and on the table: a seeded
    deal, bids drawn near the heuristic's range (nil at ``nil_rate``, blind nil sometimes where
    offered), random starting scores and bags, then random legal cards."""
    if not 1 <= cards_left <= 52:
        raise ValueError(f"cards_left={cards_left}: expected 1..52")
    rng = random.Random(seed)
    r = make_rules(rules)
    scores = [rng.randrange(-190, 490), rng.randrange(-190, 490)]
    bags = None if r.bags_from_score_digit else [rng.randrange(r.bag_limit), rng.randrange(r.bag_limit)]
    g = SpadesGame(r, rng.randrange(10 ** 9), scores=scores, bags=bags)
    while g.phase != PHASE_PLAY:
        legal = g.legal_actions()
        if BLIND_NIL_ACTION in legal:
            g.apply(BLIND_NIL_ACTION if rng.random() < 0.2 else legal[-1])
        elif g.phase == PHASE_BIDDING:
            bids = [a for a in legal if a > NIL_ACTION]
            nil = NIL_ACTION in legal and (rng.random() < nil_rate or not bids)
            g.apply(NIL_ACTION if nil else rng.choice(bids[:5]))
        else:
            g.apply(rng.choice(legal))
    while 52 - 4 * g.tricks_played - len(g.trick_cards) > cards_left:
        g.apply(rng.choice(g.legal_actions()))
    return g


def heuristic_whole_hand(seed: int, rules="standard") -> SpadesGame:
    """A whole hand as games deal it: a seeded deal from 0-0, bid by the heuristic (its nils,
    blind nils and numbers: the C heuristic, which ``agents.make("heuristic")`` plays), stopped
    at the first lead."""
    from .env import SpadesEnv
    from .native import heuristic_codes, heuristic_layout
    from .observation import layout_for_size
    env = SpadesEnv(rules=rules)
    env.reset(seed=seed)
    layout = None
    while env.game.phase != PHASE_PLAY:
        obs = env.observe(env.agent_selection)
        observation = np.ascontiguousarray(np.asarray(obs["observation"], dtype=np.float32)[None])
        mask = np.ascontiguousarray(np.asarray(obs["action_mask"])[None] != 0, dtype=np.uint8)
        if layout is None:
            layout = heuristic_layout(layout_for_size(observation.shape[1])).numpy()
        status, actions = heuristic_codes(observation, mask, layout)
        if status:
            raise RuntimeError(f"solver_bench: the heuristic could not bid (code {status})")
        env.step(int(actions[0]))
    return env.game


def time_positions(games: list[SpadesGame], objective: str, backend: str) -> dict:
    """Median, 99th percentile and mean of the solver's time to value every legal card (ms),
    the payoff tables built beforehand (their Python cost is the same for any solver); wall
    time, and the process's CPU time beside it (``cpu_*``: what a loaded machine inflates less)."""
    times, cpu_times, nodes = [], [], []
    for g in games:
        side = g.side_of[g.to_act]
        tables = payoff_tables(g, objective, side)
        cards = g.legal_actions()
        stats = np.zeros(1, dtype=np.int64)
        start, cpu_start = time.perf_counter(), time.process_time()
        if backend == "native":
            native_values(g, tables, side, cards, stats)
        else:
            reference_values(g, tables, side, cards)
        times.append((time.perf_counter() - start) * 1e3)
        cpu_times.append((time.process_time() - cpu_start) * 1e3)
        nodes.append(int(stats[0]))
    t, cpu = np.array(times), np.array(cpu_times)
    row = {"positions": len(t), "median_ms": float(np.median(t)), "p99_ms": float(np.percentile(t, 99)),
           "mean_ms": float(t.mean()), "max_ms": float(t.max()),
           "cpu_median_ms": float(np.median(cpu)), "cpu_p99_ms": float(np.percentile(cpu, 99))}
    if backend == "native":
        row["median_nodes"] = float(np.median(nodes))
    return row


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected card counts separated by commas, e.g. 16,24,36") from None
    if not sizes or any(not 2 <= s <= 52 for s in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: expected card counts 2..52 separated by commas")
    return sizes


def _count(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected an integer {low}..{MAX_POSITIONS:,}") from None
        if not low <= value <= MAX_POSITIONS:
            raise argparse.ArgumentTypeError(f"{value}: expected an integer {low}..{MAX_POSITIONS:,}")
        return value
    return parse


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments in one line (exit 2), not the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Optional[list[str]] = None) -> int:
    parser = _OneLineParser(prog="python -m spades_env.solver_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=_count(1), default=100, help="random positions per size (default 100)")
    parser.add_argument("--sizes", type=_sizes, default=[16, 24, 36], help="cards left (default 16,24,36)")
    parser.add_argument("--whole", type=_count(0), default=2,
                        help="whole hands solved from the first lead (default 2; 0: none)")
    parser.add_argument("--whole-bids", choices=("random", "heuristic"), default="random",
                        help="how the whole hands are bid: at random near the heuristic's range with nil at 20%% "
                             "a seat and random carried scores and bags (default), or by the heuristic from 0-0")
    parser.add_argument("--reference-up-to", type=int, default=16, metavar="CARDS",
                        help="time the Python reference at sizes up to this many cards (default 16)")
    parser.add_argument("--reference-positions", type=_count(1), default=20,
                        help="positions per size for the Python reference (default 20)")
    parser.add_argument("--objective", choices=OBJECTIVES, default="points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    args = parser.parse_args(argv)
    from .native import unavailable_reason
    reason = unavailable_reason()
    if reason is not None:
        print(f"solver_bench: the C solver is not available here: {reason}", file=sys.stderr)
        return 2
    rows = []
    plan = [(size, args.positions) for size in args.sizes] + ([(52, args.whole)] if args.whole else [])
    for size, count in plan:
        if size == 52 and args.whole_bids == "heuristic":
            games = [heuristic_whole_hand(args.seed * 1_000_003 + 7919 * i) for i in range(count)]
        else:
            games = [random_position(args.seed * 1_000_003 + 7919 * i + size, size) for i in range(count)]
        row = {"cards": size, "native": time_positions(games, args.objective, "native")}
        if size == 52:
            row["bids"] = args.whole_bids
        if size <= args.reference_up_to:
            row["python"] = time_positions(games[:args.reference_positions], args.objective, "python")
        rows.append(row)
        native = row["native"]
        line = (f"{size:>3} cards  C: median {native['median_ms']:9.3f} ms  p99 {native['p99_ms']:9.3f} ms  "
                f"(CPU {native['cpu_median_ms']:.3f} / {native['cpu_p99_ms']:.3f} ms; "
                f"{native['positions']} positions, median {native['median_nodes']:,.0f} nodes)")
        if "python" in row:
            line += f"   Python: median {row['python']['median_ms']:9.2f} ms  p99 {row['python']['p99_ms']:9.2f} ms"
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"objective": args.objective, "seed": args.seed, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
