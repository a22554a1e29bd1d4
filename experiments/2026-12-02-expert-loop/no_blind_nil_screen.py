"""A screen: the loop's policy in whole games with its blind-nil bids taken away (it sees its
cards and bids whenever blind nil is offered), against the heuristic, on the judging seed.

    python experiments/2026-12-02-expert-loop/no_blind_nil_screen.py runs/recipes/expert_loop/loop/model.pt \
        --games 200 --seed 7203 --workers 2 --json no_blind_nil_vs_heuristic.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from agents.neural import NeuralAgent  # noqa: E402
from evaluation import evaluate  # noqa: E402
from spades_env.game import BLIND_NIL_ACTION  # noqa: E402


class NoBlindNil(NeuralAgent):
    """The policy, with blind nil masked out wherever another action is legal."""

    def act(self, obs: dict, info=None) -> int:
        mask = np.asarray(obs["action_mask"]).copy()
        if mask[BLIND_NIL_ACTION] and mask.sum() > 1:
            mask[BLIND_NIL_ACTION] = 0
            obs = dict(obs, action_mask=mask)
        return super().act(obs, info)


class Factory:
    def __init__(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint

    def __call__(self):
        return NoBlindNil(checkpoint=self.checkpoint)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7203)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--team-b", default="heuristic")
    parser.add_argument("--json")
    args = parser.parse_args()
    result = evaluate(Factory(args.checkpoint), args.team_b, games=args.games, duplicate=True, seed=args.seed,
                      workers=args.workers)
    print(result.format())
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
