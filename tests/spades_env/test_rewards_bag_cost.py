"""``bag_cost``: a hand's reward prices the bags its side carries into later hands, so that a
single hand is worth what it is worth in a game (spades_env.rewards). The batched engines (torch
and C) are checked against the AEC env with it in tests/spades_env/test_vector.py and tests/spades_env/test_native.py."""

import random

import numpy as np
import pytest

from spades_env import make_rules, spades_v0
from spades_env.rewards import RewardError, RewardScheme
from spades_env.scoring import score_side

STD = make_rules("standard")


def hand_points(scheme, bids, tricks, bags=0):
    return scheme.hand_points(score_side(STD, list(bids), [False, False], list(tricks), 0, bags))


def test_game_bag_cost_is_the_penalty_shared_by_the_bags_that_bring_it():
    assert RewardScheme.game_bag_cost(STD) == 10.0
    assert RewardScheme.game_bag_cost(make_rules("tournament", bag_limit=5, bag_penalty=50)) == 10.0
    assert RewardScheme.game_bag_cost(make_rules("standard", bags=False)) == 0.0
    assert RewardScheme(STD, "team_diff", bag_cost="game").bag_cost == 10.0


def test_an_overtrick_nets_minus_nine_and_a_made_bid_is_unchanged():
    scheme = RewardScheme(STD, "team_diff", bag_cost="game")
    assert hand_points(scheme, [3, 2], [3, 2]) == 50
    assert hand_points(scheme, [3, 2], [4, 3]) == 52 - 20          # two bags carried: -10 each
    assert hand_points(RewardScheme(STD, "team_diff"), [3, 2], [4, 3]) == 52


def test_a_penalty_gives_back_the_bags_it_clears():
    scheme = RewardScheme(STD, "team_diff", bag_cost="game")
    # 9 bags carried, 3 more: -100 and the counter falls from 9 to 2 (7 cleared): 43 - 100 + 70
    assert hand_points(scheme, [2, 2], [4, 3], bags=9) == 43 - 100 + 70
    # the same three bags cost the same wherever the counter stands: 43 - 30
    assert hand_points(scheme, [2, 2], [4, 3], bags=0) == 13 == 43 - 100 + 70


def test_over_a_whole_game_the_rewards_sum_to_the_score_less_the_bags_left():
    """Random games in the AEC env: each side's rewards add up to its final score change minus
    bag_cost times the bags it carries at the end (bags start at 0)."""
    env = spades_v0.raw_env(reward="team_score", bag_cost="game", reward_scale=1.0)
    pick = random.Random(5)
    for game in range(20):
        env.reset(seed=game)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            action = None if term or trunc else int(pick.choice(np.flatnonzero(obs["action_mask"])))
            env.step(action)
            for a in env.possible_agents:
                totals[a] += env.rewards.get(a, 0.0) if action is not None else 0.0
        record = env.game_record()
        last = record["hands"][-1]
        for seat, agent in enumerate(env.possible_agents):
            side = seat % 2
            bags_left = last["bags"][side]
            assert totals[agent] == pytest.approx(record["scores"][side] - 10.0 * bags_left), (game, seat)


@pytest.mark.parametrize("kwargs,expected", [
    ({"reward": "win", "bag_cost": 10.0}, "reward='win'"),
    ({"bag_cost": -1.0}, "bag_cost=-1.0"),
    ({"bag_cost": float("nan")}, "finite"),
    ({"bag_cost": "lots"}, "bag_cost='lots'"),
])
def test_bad_bag_costs_are_refused_with_the_value(kwargs, expected):
    with pytest.raises(RewardError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        RewardScheme(STD, kwargs.pop("reward", "team_diff"), **kwargs)


def test_bag_cost_is_refused_where_bags_live_in_the_score():
    with pytest.raises(RewardError, match="bags_from_score_digit"):
        RewardScheme(make_rules("openspiel"), "team_diff", bag_cost=10.0)
