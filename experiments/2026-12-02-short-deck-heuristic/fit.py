"""Fit the heuristic's short-deck trick estimate to its own play (issue 74).

For every seat of N short-deck deals played by the heuristic on all four seats (rules ``short``,
one hand each), the full deck's count of the seat's hand (``estimate_tricks`` without
``tricks_per_hand``) and the tricks the seat then took. Least squares of tricks on the count gives
SHORT_DECK_SCALE and SHORT_DECK_SHIFT (agents/heuristic_decisions.py); seats that bid nil are left
out (they try to take none). Prints the fit and the mean error of the estimate in use.

    python experiments/2026-12-02-short-deck-heuristic/fit.py --deals 1500 --seed 0
"""

from __future__ import annotations

import argparse

import numpy as np

import agents
from agents.heuristic_decisions import estimate_tricks
from spades_env import spades_v0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", default="short")
    args = parser.parse_args()
    env = spades_v0.raw_env(rules=args.rules, episode="hand")
    bot = agents.make("heuristic", seed=0)
    counts, used, tricks = [], [], []
    for deal in range(args.deals):
        env.reset(seed=args.seed + deal)
        game = env.game
        T = env.rules.tricks_per_hand
        hands = list(game.hands)
        for agent in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            env.step(None if term or trunc else bot.act(obs, info))
        record = env.game_record()["hands"][-1]
        for seat in range(4):
            if record["bids"][seat] == 0:
                continue
            cards = [c for c in range(52) if hands[seat] >> c & 1]
            counts.append(estimate_tricks(cards, 4))
            used.append(estimate_tricks(cards, 4, T))
            tricks.append(record["tricks_taken"][seat])
    x, y, u = np.array(counts), np.array(tricks, dtype=float), np.array(used)
    scale, shift = np.polyfit(x, y, 1)
    print(f"seats {len(y)}  mean tricks {y.mean():.3f}  mean full-deck count {x.mean():.3f}")
    print(f"fit: tricks = {scale:.3f} * count + {shift:.3f}   (residual sd {np.std(y - (scale * x + shift)):.3f})")
    print(f"estimate in use: mean error {np.mean(u - y):+.3f}, mean absolute error {np.mean(np.abs(u - y)):.3f}")


if __name__ == "__main__":
    main()
