"""The search player with exact endgames: ``agents.make("search")`` (``search_v1`` without them).

It is :class:`agents.search.SearchAgent` (the same worlds sampled from what the seat knows and
weighted by the bids, the same candidates, staged dropping and final choice) with two changes.
First, what a world says about a card: the heuristic plays the hand on only until
``endgame_tricks`` tricks remain, and the rest is solved exactly with every hand of the world
known (:mod:`spades_env.solver`, in C: ``native/solver.c`` called from ``native/search.c``'s
play-outs), scored in points as the game scores them (nils and blind nils kept or broken, bags
and their penalty with the carried counters). From a position with ``endgame_tricks`` or fewer
tricks left every world is solved exactly from the card on. So nils are protected and broken,
and contracts made or set, by calculation in the last tricks rather than by the heuristic's
habits, which is where ``search_v1``'s values were weakest.

Second, its bids (:data:`DEFAULT_BIDDING`): ``search_v1`` bids with the heuristic, ``search``
searches every bid and blind-nil decision and values each world by the probability of winning the
game from the scores the hand leaves (``bid_objective="game"``), which is most of its strength
against ``search_v1`` in whole games.

Options: every ``search_v1`` option (``search_bids`` and ``bid_objective`` default to
:data:`DEFAULT_BIDDING`), and ``endgame_tricks`` (K, default
:data:`DEFAULT_ENDGAME_TRICKS`; 0 is ``search_v1``'s play-outs). The default budget samples
fewer worlds than ``search_v1`` (each costs a solve): see ``BUDGETS`` and docs/agents.md for the
tuning, strength and time per decision. Cutthroat and three players have no exact endgame (the
solver plays partnerships) and play out as ``search_v1``.
"""

from __future__ import annotations

from typing import Optional

from spades_env.game import PHASE_PLAY, SpadesGame
from spades_env.solver import position_value

from .base import register, whole_option
from .search import SearchAgent, hand_value, play_out

__all__ = ["EndgameSearchAgent", "DEFAULT_ENDGAME_TRICKS", "DEFAULT_BIDDING", "play_until"]

DEFAULT_ENDGAME_TRICKS = 3
"""Tricks left when the play-outs hand over to the solver (tuned: experiments/2026-12-01-endgame-solver)."""

DEFAULT_BIDDING = {"search_bids": True, "bid_objective": "game"}
"""How ``search`` bids unless told otherwise: every bid and blind-nil decision searched, each
world's hand valued by the game's win probability (agents/game_value.py). It won 63.7% [55.7, 70.9]
of 150 duplicate games against ``search_v1`` (which bids with the heuristic), by a rule written
before that match (experiments/2026-12-01-endgame-solver). ``search_bids=false`` bids as
``search_v1`` does."""


def play_until(g: SpadesGame, tricks_left: int, played: list[list[int]], voids: list[set]) -> None:
    """Play ``g`` on with the heuristic on every seat until at most ``tricks_left`` tricks remain
    (or the hand is over): :func:`agents.search.play_out` with an earlier stop."""
    play_out(g, played, voids, tricks_left=tricks_left)


class EndgameSearchAgent(SearchAgent):
    """``search_v1`` whose play-outs end in an exact solve (module doc)."""

    name = "search"

    # (worlds, max_steps) by backend and budget: each world now costs a solve of its last
    # tricks as well as a shorter play-out (the numbers: the experiment's tuning table).
    BUDGETS = {("python", "default"): (100, 20_000), ("python", "strong"): (500, None),
               ("native", "default"): (1_000, None), ("native", "strong"): (10_000, None)}

    def __init__(self, seed: Optional[int] = None, endgame_tricks: int = DEFAULT_ENDGAME_TRICKS, **options) -> None:
        for option, value in DEFAULT_BIDDING.items():
            options.setdefault(option, value)
        super().__init__(seed, **options)
        self.endgame_tricks = whole_option("search", "endgame_tricks", endgame_tricks, least=0, most=13)

    def __repr__(self) -> str:
        return super().__repr__().replace("SearchAgent(", "EndgameSearchAgent(", 1)[:-1] + \
            f", endgame_tricks={self.endgame_tricks})"

    def _play_out_value(self, g: SpadesGame, played: list[list[int]], voids: list[set]) -> float:
        r = g.rules
        if not self.endgame_tricks or r.players != 4 or not r.partnerships:
            return super()._play_out_value(g, played, voids)
        cost = self.bag_cost_for(r)
        play_until(g, self.endgame_tricks, played, voids)
        if g.phase != PHASE_PLAY:
            return hand_value(g, 0, cost)
        value = position_value(g, "points", bag_cost=cost)          # for the side to act
        return float(value if g.side_of[g.to_act] == g.side_of[0] else -value)


register("search", EndgameSearchAgent)
