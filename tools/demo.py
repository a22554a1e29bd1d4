"""``spades-demo``: one rendered game between simple players, then a short benchmark.

A first look at the environment: the table as a game unfolds (bids, the trick as it forms, the
score after every hand) and how fast the env runs. To play yourself: ``spades-play``.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Optional

import numpy as np

from spades_env import spades_v0
from spades_env.game import BID_ACTION_BASE, PHASE_PLAY
from spades_env.render import render_table

MAX_DEMO_HANDS = 1_000
"""The most hands ``--hands`` plays: every hand is printed, and a demo is read by a person."""


def simple_bid(hand: np.ndarray, mask: np.ndarray) -> int:
    """A quick trick estimate from the observation's hand (aces, kings, long spades), legal-clamped."""
    cards = np.flatnonzero(hand)
    ranks, suits = cards % 13, cards // 13
    estimate = int(round((ranks == 12).sum() + 0.5 * (ranks == 11).sum() + max(0, (suits == 3).sum() - 3)))
    bids = np.flatnonzero(mask[BID_ACTION_BASE:BID_ACTION_BASE + 14])
    return int(BID_ACTION_BASE + bids[np.abs(bids - max(estimate, 1)).argmin()])


def play_demo_game(seed: int = 0, rules: str = "standard", max_hands: int = 3, show_tricks: int = 2) -> dict:
    """Random card play with a simple bidder; prints the table when the bidding ends, after the
    first tricks of every hand, and every hand's result. Returns the game record."""
    env = spades_v0.env(rules=rules, **({"max_hands": max_hands} if max_hands else {}))   # 0: the rules' own end
    env.reset(seed=seed)
    hand_slice = env.unwrapped.observation_layout.slices["hand"]
    pick = random.Random(seed)
    reported = 0
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        if termination or truncation:
            env.step(None)
            continue
        mask = obs["action_mask"]
        if mask[BID_ACTION_BASE:BID_ACTION_BASE + 14].any():
            action = simple_bid(obs["observation"][hand_slice], mask)
        else:
            legal = mask.nonzero()[0]
            action = int(legal[pick.randrange(len(legal))])
        env.step(action)
        game = env.unwrapped.game
        if game.phase == PHASE_PLAY and not game.trick_cards and game.tricks_played <= show_tricks:
            print(render_table(game), end="\n\n")
        if game.hands_completed > reported:
            hand = game.hand_record(reported)
            reported += 1
            print(f"--- Hand {hand['number']} scored: bids {hand['bids']}, tricks {hand['tricks_taken']}, "
                  f"score change {hand['score_change']}, scores {hand['scores']}, bags {hand['bags']}\n")
    print(render_table(env.unwrapped.game, done=True))
    return env.unwrapped.game_record()


def main(argv: Optional[list[str]] = None) -> int:
    from evaluation.cli_common import OneLineParser      # errors in one line, not the usage block
    parser = OneLineParser(prog="spades-demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", default="standard", help="rules preset or YAML file (default standard)")
    parser.add_argument("--hands", type=int, default=3, help=f"play at most this many hands, 1..{MAX_DEMO_HANDS} "
                        "(0: the whole game)")
    parser.add_argument("--no-bench", action="store_true", help="skip the short benchmark")
    args = parser.parse_args(argv)
    if not 0 <= args.hands <= MAX_DEMO_HANDS:
        parser.error(f"--hands {args.hands}: expected 0 (the whole game) or a number of hands 1..{MAX_DEMO_HANDS}")
    from spades_env.rules import RulesError, make_rules
    try:
        make_rules(args.rules)
    except (RulesError, OSError, ValueError) as error:
        print(f"spades-demo: error: --rules: {error}", file=sys.stderr)
        return 2
    try:
        play_demo_game(args.seed, args.rules, args.hands)
        if not args.no_bench:
            from tools.bench import _main as run_bench       # its Ctrl-C is the demo's
            print()
            return run_bench(["--quick", "--rules", args.rules])
    except KeyboardInterrupt:
        print("spades-demo: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
