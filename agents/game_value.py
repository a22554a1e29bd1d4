"""What a score is worth to the game: the probability of winning from it (:class:`WinTable`), and
a table built from the heuristic's own hands for players that value their choices by the game
(``search``'s ``bid_objective="game"``) rather than by the hand's points.

Why: a hand's points are worth the same at 0-0 as at 460-380, a game's are not. Near the target a
safe contract that ends the game, or a set that keeps the other side from ending it, is worth
more than its points; far behind only what can catch up counts. :class:`WinTable` turns a score
pair into a win probability by value iteration over a Markov chain of hands; the bid-value fits
(:mod:`train.bids.game_bid_values`) build it from their own collection, and
:func:`heuristic_win_table` from hands the heuristic plays against itself under the rules in play.

numpy only: no torch, so a search player can use it.
"""

from __future__ import annotations

import functools
import random

import numpy as np

from spades_env.game import PHASE_GAME_OVER, PHASE_HAND_OVER, SpadesGame
from spades_env.observation import view_from_game
from spades_env.rules import Rules

from .heuristic import choose_action

__all__ = ["WinTable", "GameValue", "heuristic_win_table", "bag_priced_changes", "BAG_COST"]

BAG_COST = 10.0
"""Points a carried bag is priced at in the table's effective scores (the bag penalty's 100 for
``bag_limit`` 10, spread over the bags that bring it)."""


class WinTable:
    """The probability that side A wins the game from the score pair (a, b), every later hand's
    score changes drawn from ``changes`` ((n, 2): A's and B's points in one hand, bags priced as
    points), by value iteration on a grid of ``step`` points between the mercy score and the
    target (:func:`spades_env.scoring.game_winner`'s rules: the game ends when a side reaches the
    target or falls to the mercy score, the higher score winning; a tie at the top counts 1/2)."""

    def __init__(self, changes: np.ndarray, rules: Rules, step: int = 10, tolerance: float = 1e-9,
                 max_iterations: int = 5000) -> None:
        changes = np.asarray(changes, dtype=np.float64)
        if changes.ndim != 2 or changes.shape[1] != 2 or len(changes) == 0 or not np.isfinite(changes).all():
            raise ValueError("changes: expected (n, 2) finite score changes, n >= 1")
        self.rules, self.step = rules, int(step)
        self.high = rules.target_score
        # Without a mercy rule the floor is far enough below 0 that a side there has lost already.
        self.low = rules.mercy_score if rules.mercy_score is not None else -4 * rules.target_score
        self.size = (self.high - self.low) // self.step - 1           # interior cells per axis
        if self.size < 1:
            raise ValueError(f"step {step}: no score between {self.low} and {self.high}")
        cells, counts = np.unique(np.rint(changes / self.step).astype(np.int64), axis=0, return_counts=True)
        self.moves, self.probabilities = cells, counts / counts.sum()
        margin = int(np.abs(cells).max()) + 1
        n, m = self.size, margin
        scores = self.low + self.step * (np.arange(-m, n + m) + 1)     # the extended grid's scores
        a, b = np.meshgrid(scores, scores, indexing="ij")
        over = (a >= self.high) | (b >= self.high) | (a <= self.low) | (b <= self.low)
        ended = np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))
        values = np.where(over, ended, 0.5)
        interior = (slice(m, m + n), slice(m, m + n))
        self.iterations = 0
        for self.iterations in range(1, max_iterations + 1):
            new = np.zeros((n, n))
            for (da, db), p in zip(cells, self.probabilities):
                new += p * values[m + da:m + da + n, m + db:m + db + n]
            change = float(np.abs(new - values[interior]).max())
            values[interior] = new
            if change < tolerance:
                break
        self.grid = values[interior].copy()                            # (size, size): A's, B's scores
        self.scores = scores[m:m + n].astype(np.float64)

    def win(self, a, b) -> np.ndarray:
        """Side A's win probability at scores (a, b) inside the game (bilinear between cells;
        scores outside the grid's interior are clamped to it)."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        first, last = self.scores[0], self.scores[-1]
        if self.size == 1:
            return np.full(np.broadcast(a, b).shape, self.grid[0, 0])
        x = (np.clip(a, first, last) - first) / self.step
        y = (np.clip(b, first, last) - first) / self.step
        i = np.minimum(np.floor(x).astype(np.int64), self.size - 2)      # the cell's lower corner
        j = np.minimum(np.floor(y).astype(np.int64), self.size - 2)
        fx, fy = x - i, y - j
        g = self.grid
        return ((1 - fx) * (1 - fy) * g[i, j] + fx * (1 - fy) * g[i + 1, j]
                + (1 - fx) * fy * g[i, j + 1] + fx * fy * g[i + 1, j + 1])

    def value_after_hand(self, final_scores: np.ndarray, effective: np.ndarray) -> np.ndarray:
        """Side A's value of hands that ended at ``final_scores`` (..., 2): 1, 0 or 1/2 where the
        hand ended the game (by the engine's rule, on the scores), else :meth:`win` at the
        ``effective`` scores (..., 2: the scores less the carried bags' price)."""
        final = np.asarray(final_scores, dtype=np.float64)
        a, b = final[..., 0], final[..., 1]
        over = (a >= self.high) | (b >= self.high)
        if self.rules.mercy_score is not None:
            over |= (a <= self.rules.mercy_score) | (b <= self.rules.mercy_score)
        ended = np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))
        going = self.win(effective[..., 0], effective[..., 1])
        # A tie at the top plays on: valued as the game going on.
        return np.where(over & (a != b), ended, going)

    def slope(self, a, b) -> np.ndarray:
        """How much A's win probability rises per point of A's score at (a, b) (the table's
        central difference, one cell each way)."""
        return (self.win(np.asarray(a) + self.step, b) - self.win(np.asarray(a) - self.step, b)) / (2 * self.step)

    def describe(self) -> dict:
        return {"step": self.step, "low": self.low, "high": self.high, "iterations": self.iterations,
                "moves": int(len(self.moves)), "win_at_0_0": float(self.win(0, 0)),
                "win_at_400_300": float(self.win(400, 300)), "win_at_300_400": float(self.win(300, 400))}


def bag_priced_changes(scores_before, bags_before, scores_after, bags_after, bag_cost: float = BAG_COST) -> list[float]:
    """Each side's score change over a hand with its carried bags priced: the change in
    ``score - bag_cost * bags``. A bag penalty then costs nothing extra on the hand it falls (its
    ten bags were already priced as they came), which is what makes the table's chain Markov."""
    return [float((sa - bag_cost * ba) - (sb - bag_cost * bb))
            for sb, bb, sa, ba in zip(scores_before, bags_before, scores_after, bags_after)]


TABLE_GAMES = 200
"""Whole heuristic games behind :func:`heuristic_win_table` (about 3,500 hands; a few seconds once a process)."""


def heuristic_hand_changes(rules: Rules, games: int = TABLE_GAMES, seed: int = 0) -> np.ndarray:
    """The bag-priced score changes ((n, 2): one side's, the other's) of every hand of ``games``
    whole games the heuristic plays against itself under ``rules``, each hand once from each
    side (so the table is fair to both). The real games' hands, not hands from 0-0: carried bags,
    their penalties and blind nils from behind occur as often as they do in play."""
    rng = random.Random(seed)
    rows: list[list[float]] = []
    for _ in range(games):
        g = SpadesGame(rules, rng=rng.getrandbits(63))
        while True:
            before, bags = list(g.scores), list(g.bags)
            while g.phase not in (PHASE_HAND_OVER, PHASE_GAME_OVER):
                g.apply(choose_action(view_from_game(g, g.to_act), g.legal_mask()))
            rows.append(bag_priced_changes(before, bags, g.scores, g.bags))
            if g.game_over:
                break
            g.next_hand()
    changes = np.asarray(rows, dtype=np.float64)
    return np.concatenate([changes, changes[:, ::-1]])


@functools.lru_cache(maxsize=8)
def heuristic_win_table(rules: Rules) -> "WinTable":
    """The :class:`WinTable` of ``rules`` from the heuristic's own games
    (:func:`heuristic_hand_changes`), built once a process. Two partnerships only: the table is
    a chain on two scores."""
    if rules.players != 4 or not rules.partnerships:
        raise ValueError(f"rules {rules.name!r}: a game's win table needs two partnerships of two "
                         f"(this is {rules.players} players, partnerships {rules.partnerships})")
    return WinTable(heuristic_hand_changes(rules), rules)


class GameValue:
    """A finished hand's worth to seat 0's side as the game sees it, in points of equal worth: the
    probability of winning from the scores it left (1 or 0 where it ended the game), divided by
    how much a point moves that probability at 0-0. So values compare with hand points (a gate of
    5 points means about what it meant) while a point near the target, or a bag near the limit,
    weighs what it does to the game."""

    def __init__(self, rules: Rules, table: "WinTable | None" = None) -> None:
        self.table = heuristic_win_table(rules) if table is None else table
        self.scale = float(self.table.slope(0.0, 0.0))
        if not self.scale > 0:
            raise ValueError("the win table does not rise with the score at 0-0")

    def of_game(self, g, seat: int = 0) -> float:
        """The value of the finished hand of the engine game ``g`` to ``seat``'s side."""
        own = g.side_of[seat]
        return self.of_scores(g.scores, g.bags, own, g.winner is not None or getattr(g, "truncated", False))

    def of_scores(self, scores, bags, side: int, over: bool) -> float:
        """The value to ``side`` of a hand that left ``scores`` and ``bags`` (per side; two
        sides), ``over`` when it ended the game (then 1, 0 or 1/2 by the scores)."""
        other = 1 - side
        final = np.array([scores[side], scores[other]], dtype=np.float64)
        if over:
            a, b = final
            return float((1.0 if a > b else 0.0 if a < b else 0.5) / self.scale)
        effective = final - BAG_COST * np.array([bags[side], bags[other]], dtype=np.float64)
        return float(self.table.value_after_hand(final, effective) / self.scale)
