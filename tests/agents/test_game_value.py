"""The game's value of a score (agents/game_value.py) and the search's bids valued by it."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.game_value import BAG_COST, GameValue, WinTable, bag_priced_changes, heuristic_win_table
from helpers import bid_decisions
from spades_env import make_rules
from spades_env.game import SpadesGame

STANDARD = make_rules("standard")


def test_a_bag_penalty_costs_nothing_more_on_the_hand_it_falls():
    # 9 bags carried, a bid of 6 made with 8 tricks: 62 points, the 11th bag brings the -100
    # penalty and leaves 1 bag. Priced at 10 a bag the change is 62 less the 2 new bags' price.
    points, penalty = 62, -100
    change = bag_priced_changes([200, 0], [9, 0], [200 + points + penalty, 0], [1, 0])
    assert change[0] == pytest.approx(points + penalty + BAG_COST * 8)
    assert change[0] == pytest.approx(points - 2 * BAG_COST)          # 60 for the contract, 2 bags
    assert change[1] == 0.0


def test_the_heuristic_table_is_fair_and_rises_with_the_score():
    table = heuristic_win_table(STANDARD)
    assert table is heuristic_win_table(STANDARD)                       # built once a process
    assert table.win(0, 0) == pytest.approx(0.5, abs=1e-6)
    for a, b in [(100, 300), (450, 420), (-150, 0)]:
        assert table.win(a, b) + table.win(b, a) == pytest.approx(1.0, abs=1e-6)
    row = table.win(np.arange(-150, 500, 50), 200)
    assert np.all(np.diff(row) > 0)
    assert table.win(480, 0) > 0.9 and table.win(0, 480) < 0.1


def test_two_partnerships_only():
    with pytest.raises(ValueError, match="two partnerships"):
        heuristic_win_table(make_rules("cutthroat"))
    with pytest.raises(ValueError, match="two partnerships"):
        heuristic_win_table(make_rules("cutthroat", players=3))
    # the search values a cutthroat table's bids by its points instead
    bot = agents.make("search", bid_objective="game")
    assert bot._game_value(make_rules("cutthroat")) is None


def _finished_hand(scores, bags):
    """A standard hand from ``scores``/``bags``, played to its end by the heuristic."""
    from agents.search import play_out
    g = SpadesGame(STANDARD, rng=7, scores=scores, bags=bags, dealer=3)
    play_out(g)
    return g


def test_a_won_game_is_worth_one_over_the_scale_and_a_going_game_the_table():
    value = GameValue(STANDARD)
    g = _finished_hand([480, 0], [0, 0])
    own = g.side_of[0]
    worth = value.of_game(g, 0)
    if g.game_over:
        won = g.scores[own] > g.scores[1 - own]
        assert worth == pytest.approx((1.0 if won else 0.0) / value.scale)
    else:
        effective = [g.scores[own] - BAG_COST * g.bags[own], g.scores[1 - own] - BAG_COST * g.bags[1 - own]]
        assert worth == pytest.approx(float(value.table.win(*effective)) / value.scale)
    # the two sides' values of one going hand add up to 1 (over the scale)
    g = _finished_hand([0, 0], [0, 0])
    assert not g.game_over
    assert value.of_game(g, 0) + value.of_game(g, 1) == pytest.approx(1.0 / value.scale, rel=1e-6)


def test_the_scale_makes_a_point_at_0_0_worth_about_a_point():
    value = GameValue(STANDARD)
    table = value.table
    assert (table.win(10, 0) - table.win(-10, 0)) / 20 / value.scale == pytest.approx(1.0, rel=1e-6)


def test_a_custom_table_is_used():
    flat = WinTable(np.array([[50.0, 50.0], [60.0, 40.0], [40.0, 60.0]]), STANDARD)
    assert GameValue(STANDARD, table=flat).table is flat


def test_searched_bids_valued_by_the_game():
    by_points = agents.make("search", seed=3, bid_worlds=16, bid_objective="points")
    by_game = agents.make("search", seed=3, bid_worlds=16)             # search's default
    scale = GameValue(STANDARD).scale
    differ = 0
    for obs, info in bid_decisions(5, limit=6):
        by_points.act(obs, info)
        by_game.act(obs, info)
        if "means" not in by_game.last_info:
            continue
        means = np.asarray(by_game.last_info["means"])
        assert np.all(means >= -1e-9) and np.all(means <= 1.0 / scale + 1e-9), means  # win probabilities, scaled
        assert by_game.last_info["candidates"] == by_points.last_info["candidates"]   # the same bids tried
        differ += not np.allclose(means, by_points.last_info["means"])
    assert differ >= 1


def test_search_bids_by_the_game_and_search_v1_with_the_heuristic():
    from agents.endgame_search import DEFAULT_BIDDING
    from agents.heuristic import HeuristicAgent
    new, old = agents.make("search"), agents.make("search_v1")
    assert (new.search_bids, new.bid_objective) == (DEFAULT_BIDDING["search_bids"], DEFAULT_BIDDING["bid_objective"])
    assert (old.search_bids, old.bid_objective) == (False, "points")
    assert not agents.make("search", search_bids=False).search_bids          # still an option
    reference = HeuristicAgent()
    for obs, info in bid_decisions(6, limit=3):
        assert old.act(obs, info) == reference.act(obs, info)
        new.act(obs, info)
        assert "means" in new.last_info or "fallback" in new.last_info


def test_the_bid_objective_is_checked():
    with pytest.raises(ValueError, match="bid_objective='win'.*points, game"):
        agents.make("search", bid_objective="win")
