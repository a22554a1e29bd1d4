"""Reward schemes and potential-based shaping.

Schemes (``reward=``):

* ``team_score``: when a hand is scored, each player receives its side's score change (points,
  bag penalties included) times ``reward_scale``. Partners receive the same reward.
* ``team_diff``: its side's change minus the other side's (cutthroat: minus the mean of the
  others'), times ``reward_scale``. Zero-sum: opponents' rewards are exact negatives.
* ``win``: at the end of the game +1 for the winning side and -1 for the other (cutthroat: +1
  for the winner, -1/(n-1) for each other player); 0 when a truncated game is tied at the top.

``win_bonus`` adds the ``win`` reward times ``win_bonus`` at the end of the game to
``team_score`` and ``team_diff``.

``bag_cost`` (points, off at 0) prices the bags a side carries into later hands, which a hand's
score change leaves free until the counter reaches the limit: each scored hand pays its side
``points - bag_cost * (bags_after - bags_before)``, the change of the carried counter (negative
when a penalty resets it). With ``bag_cost = bag_penalty / bag_limit`` (10 in the standard rules)
every bag costs its share of the penalty wherever the counter stands, so a single hand's reward
is the hand's worth in a game: an overtrick nets +1 - 10 = -9, and over a whole game the terms
sum to the score change minus ``bag_cost`` times the bags carried at the end. ``bag_cost="game"``
means that value for the rules given. Used by ``team_score`` and ``team_diff``; rules that keep
bags in the score's last digit (``bags_from_score_digit``) are refused.

Shaping (``shaping=w``, off at 0) follows Ng, Harada & Russell (1999): after every trick each
player receives ``F = Phi(s') - Phi(s)`` with the side potential, in points,

    Phi_side = 10 * min(T, C) - sum over the side's nil bidders that took a trick of their bonus

where ``C`` is the side's contract (its non-nil bids) and ``T`` the tricks that count toward it;
``Phi`` is 0 before the first trick and, by definition, 0 once the hand is scored, so the shaping
terms of a hand sum to exactly zero: it guides learning without changing what is optimal.
``F`` is scaled by ``w * reward_scale`` and combined like the scheme: own side under
``team_score``, own minus other under ``team_diff`` and ``win``.
"""

from __future__ import annotations

import math

from typing import Sequence

from .game import SpadesGame
from .rules import Rules
from .scoring import bag_priced_points, game_bag_cost

REWARD_SCHEMES = ("team_score", "team_diff", "win")


class RewardError(ValueError):
    """An unknown reward scheme or a bad reward setting."""


class RewardScheme:
    def __init__(self, rules: Rules, reward: str = "team_score", reward_scale: float = 0.01,
                 win_bonus: float = 0.0, shaping: float = 0.0, bag_cost: float | str = 0.0) -> None:
        if reward not in REWARD_SCHEMES:
            raise RewardError(f"unknown reward scheme {reward!r}; expected one of {', '.join(REWARD_SCHEMES)}")
        bag_cost = self.game_bag_cost(rules) if bag_cost == "game" else bag_cost
        for name, value in (("reward_scale", reward_scale), ("win_bonus", win_bonus), ("shaping", shaping),
                            ("bag_cost", bag_cost)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise RewardError(f"{name}={value!r}: expected a finite number")
        if reward_scale <= 0:
            raise RewardError(f"reward_scale={reward_scale!r}: expected a positive number")
        if win_bonus and reward == "win":
            raise RewardError("win_bonus adds a terminal win reward to team_score or team_diff; "
                              "with reward='win' it has no meaning")
        if shaping < 0:
            raise RewardError(f"shaping={shaping!r}: expected a weight >= 0")
        if bag_cost < 0:
            raise RewardError(f"bag_cost={bag_cost!r}: expected points >= 0 per carried bag (or 'game')")
        if bag_cost and reward == "win":
            raise RewardError("bag_cost prices bags in the points of team_score or team_diff; "
                              "with reward='win' it has no meaning")
        if bag_cost and rules.bags_from_score_digit:
            raise RewardError("bag_cost needs rules that count bags apart from the score; these rules keep "
                              "them in the score's last digit (bags_from_score_digit)")
        self.rules = rules
        self.reward = reward
        self.reward_scale = float(reward_scale)
        self.win_bonus = float(win_bonus)
        self.shaping = float(shaping)
        self.bag_cost = float(bag_cost)
        self.n = rules.players
        self.num_sides = rules.num_sides
        self.side_of = [rules.side_of(s) for s in range(self.n)]
        self._zero_sum = reward != "team_score"

    @staticmethod
    def game_bag_cost(rules: Rules) -> float:
        """What a carried bag costs over a game under ``rules``: the penalty shared by the bags that
        bring it (10 points in the standard rules); 0 where bags are not counted."""
        return game_bag_cost(rules)

    def hand_points(self, result) -> float:
        """A side's reward points for a scored hand (a :class:`spades_env.scoring.SideResult`): its
        score change, less ``bag_cost`` per bag added to (or plus per bag cleared from) its counter."""
        return bag_priced_points(self.rules, result, self.bag_cost)

    # ------------------------------------------------------------------ per side -> per seat
    def _per_seat(self, side_values: Sequence[float]) -> list[float]:
        if self._zero_sum:
            if self.num_sides == 2:  # computed as a - b and b - a: exact negatives
                a, b = side_values
                diff = [a - b, b - a]
            else:
                total = sum(side_values)
                others = self.num_sides - 1
                diff = [v - (total - v) / others for v in side_values]
            return [diff[self.side_of[s]] for s in range(self.n)]
        return [float(side_values[self.side_of[s]]) for s in range(self.n)]

    def win_values(self, winner: int | None) -> list[float]:
        """Per side: +1 for the winner, the rest share -1 (each -1 with two sides)."""
        if winner is None:
            return [0.0] * self.num_sides
        loss = -1.0 / (self.num_sides - 1)
        return [1.0 if side == winner else loss for side in range(self.num_sides)]

    def hand_rewards(self, game: SpadesGame) -> list[float]:
        """Rewards of every seat at the step that scored a hand (game end included)."""
        if self.reward == "win":
            if not game.game_over:
                return [0.0] * self.n
            values = self.win_values(game.winner)
            return [values[self.side_of[s]] for s in range(self.n)]
        points = [self.hand_points(res) * self.reward_scale for res in game.last_results]
        rewards = self._per_seat(points)
        if self.win_bonus and game.game_over:
            bonus = self.win_values(game.winner)
            rewards = [r + self.win_bonus * bonus[self.side_of[s]] for s, r in enumerate(rewards)]
        return rewards

    # ------------------------------------------------------------------ shaping
    def potential(self, game: SpadesGame) -> list[float]:
        """Phi per side, in points (see the module docstring)."""
        r = self.rules
        values = []
        for side in range(self.num_sides):
            contract = tricks = 0
            nil_loss = 0
            for seat in r.side_members(side):
                bid = game.bids[seat]
                taken = game.tricks_taken[seat]
                if bid == 0:
                    if taken:
                        nil_loss += r.blind_nil_bonus if game.blind[seat] else r.nil_bonus
                    if r.nil_tricks_count_for_partner:
                        tricks += taken
                else:
                    contract += bid
                    tricks += taken
            values.append(10.0 * min(tricks, contract) - nil_loss)
        return values

    def shaping_rewards(self, before: Sequence[float], after: Sequence[float]) -> list[float]:
        """F per seat for a change of potential from ``before`` to ``after`` (per side)."""
        w = self.shaping * self.reward_scale
        return self._per_seat([w * (a - b) for a, b in zip(after, before)])
