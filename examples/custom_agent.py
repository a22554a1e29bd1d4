"""Write an agent of your own and find out whether it is better than the one it changes.

The agent below is the heuristic with one change: it bids one trick less whenever it would bid
two or more (an overtrick costs a point, a set ten times the bid: is it worth the safety?).
``compare`` plays it and the plain heuristic against the same opponent over the same duplicate
deals and reports the difference paired by deal, far tighter than two separate matches give,
and where it comes from, by kind of hand.

    python examples/custom_agent.py                 # 500 duplicate deals, a few seconds on 2 cores
    python examples/custom_agent.py --deals 2000
"""

from __future__ import annotations

import argparse
from typing import Optional

import agents
from spades_env.game import BID_ACTION_BASE  # action BID_ACTION_BASE + b bids b tricks (b = 0: nil)
from evaluation import compare, format_comparison


class UnderbiddingHeuristic(agents.Agent):
    """The heuristic, bidding one trick less than it would (never below 1)."""

    name = "underbidding_heuristic"

    def __init__(self, seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.heuristic = agents.make("heuristic", seed=seed)

    def reset(self, seed: Optional[int] = None) -> None:
        super().reset(seed)
        self.heuristic.reset(seed)

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        action = self.heuristic.act(obs, info)
        bid = action - BID_ACTION_BASE
        if 2 <= bid <= 13 and obs["action_mask"][action - 1]:
            return action - 1
        return action


# Registered, it is also available by name to agents.make and to evaluate()/compare() specs
# within this process (spades-eval on the command line only knows the agents it imports).
agents.register("underbidding_heuristic", UnderbiddingHeuristic)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deals", type=int, default=500, help="duplicate deals (default 500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: the CPUs)")
    args = parser.parse_args(argv)
    result = compare("underbidding_heuristic", "heuristic", "heuristic", deals=args.deals,
                     duplicate=True, seed=args.seed, workers=args.workers, progress=True)
    print(format_comparison(result))


if __name__ == "__main__":
    main()
