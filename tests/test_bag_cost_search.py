"""Carried bags priced in the search's and the solver's hand values (``bag_cost``): the scoring
helper, the solver's tables (Python and C against a brute force), the C play-outs against the
Python ones, and the agents' option."""

from __future__ import annotations

import random

import pytest

import agents
from agents.specs import AgentSpecError, make_agent
from agents.search import hand_value, play_out
from spades_env.game import PHASE_PLAY
from spades_env.native import unavailable_reason
from spades_env.rules import make_rules
from spades_env.scoring import bag_priced_points, carried_bags, game_bag_cost, score_side
from spades_env.solver import SolverError, position_value, principal_line, solve
from test_endgame_search import python_endgame_value
from test_solver import ending

native = pytest.mark.skipif(unavailable_reason() is not None, reason="the native library does not build here")
STD = make_rules("standard")


def test_at_the_games_price_every_bag_costs_its_share_wherever_the_counter_stands():
    rng = random.Random(0)
    penalised = 0
    for _ in range(3000):
        bids = [rng.choice([0, 1, 2, 3, 4, 5]), rng.choice([0, 2, 3, 4, 6])]
        tricks = [rng.randrange(8), rng.randrange(6)]
        res = score_side(STD, bids, [False, False], tricks, rng.randrange(-200, 480), rng.randrange(10))
        penalised += res.bag_penalties > 0
        assert carried_bags(STD, res) == res.bags_taken - 10 * res.bag_penalties
        assert bag_priced_points(STD, res, 10) == (res.contract_points + res.overtrick_points + res.nil_points
                                                   - 10 * res.bags_taken)
        assert bag_priced_points(STD, res, 0) == res.points
    assert penalised > 100                        # the cliff at the limit was crossed, and priced away
    assert game_bag_cost(STD) == 10.0 and game_bag_cost(make_rules("standard", bags=False)) == 0.0


def priced_brute_force(g, side: int, cost: int) -> float:
    """Minimax by the engine alone, the finished hand valued with its carried bags priced."""
    if g.phase != PHASE_PLAY:
        r = g.rules
        return bag_priced_points(r, g.last_results[side], cost) - bag_priced_points(r, g.last_results[1 - side], cost)
    values = []
    for card in g.legal_actions():
        child = g.copy()
        child.apply(card)
        values.append(priced_brute_force(child, side, cost))
    return max(values) if g.side_of[g.to_act] == side else min(values)


@pytest.mark.parametrize("backend", ["python", pytest.param("native", marks=native)])
@pytest.mark.parametrize("cost", [10, 3])
def test_the_solver_with_bags_priced_equals_a_brute_force(backend, cost):
    differ = 0
    for seed in range(40):
        g = ending(700 + seed, 4 + seed % 9)            # 1 to 3 tricks, mid-trick included
        side = g.side_of[g.to_act]
        expected = {}
        for card in g.legal_actions():
            child = g.copy()
            child.apply(card)
            expected[card] = priced_brute_force(child, side, cost)
        got = solve(g, "points", backend=backend, bag_cost=cost)
        assert got == expected, seed
        differ += got != solve(g, "points", backend=backend)
    assert differ >= 5                                 # the price changes values: not a no-op


@native
def test_the_c_solver_with_bags_priced_equals_the_reference_on_longer_endings():
    for seed in range(12):
        g = ending(900 + seed, 12 + seed % 9)
        assert solve(g, "points", backend="native", bag_cost="game") == \
            solve(g, "points", backend="python", bag_cost=10), seed
        assert position_value(g, "points", backend="native", bag_cost=10) == \
            max(solve(g, "points", backend="python", bag_cost=10).values())


def test_a_priced_bag_is_refused_where_it_has_no_meaning():
    g = ending(1, 8)
    for cost, message in [(1.5, "whole number"), (-1, "whole number"), ("gam", "'game'"), (True, "whole number"),
                          (10 ** 4, "from 0 to 1000")]:
        with pytest.raises(SolverError, match=f"bag_cost=.*{message}"):
            solve(g, "points", bag_cost=cost)
    with pytest.raises(SolverError, match="objective='tricks' counts tricks"):
        solve(g, "tricks", bag_cost=10)
    line = principal_line(g, "points", bag_cost=10)       # the line's score change stays the game's own
    assert line["value"] == max(solve(g, "points", bag_cost=10).values())


@native
@pytest.mark.parametrize("preset", ["standard", "tournament", "cutthroat"])
def test_c_play_outs_price_bags_as_the_python_engine(preset):
    from agents.native_search import table_values
    rules = make_rules(preset)
    checked = 0
    for seed in range(30):
        g = ending(1200 + seed, 20 + seed % 25, rules=preset) if rules.partnerships else _cutthroat_position(seed)
        if g is None:
            continue
        seat, cards = g.to_act, g.legal_actions()
        for cost in (10, 7):
            expected = []
            for card in cards:
                child = g.copy()
                child.apply(card)
                play_out(child)
                expected.append(hand_value(child, seat, cost))
            assert table_values(g, seat, cards, bag_cost=cost) == expected, seed
            checked += len(cards)
    assert checked > 50


def _cutthroat_position(seed: int):
    rng = random.Random(seed)
    from spades_env.game import SpadesGame
    g = SpadesGame(make_rules("cutthroat"), seed, bags=[rng.randrange(10) for _ in range(4)])
    while g.phase != PHASE_PLAY:
        g.apply(rng.choice([a for a in g.legal_actions()][-4:]))
    for _ in range(rng.randrange(20)):
        g.apply(rng.choice(g.legal_actions()))
    return g if g.phase == PHASE_PLAY and len(g.legal_actions()) > 1 else None


@native
@pytest.mark.parametrize("k", [2, 13])
def test_c_endgame_play_outs_price_bags_as_the_python_path(k):
    from agents.native_search import table_values
    for seed in range(10):
        g = ending(1500 + seed, 14 + seed % 12)
        seat, cards = g.to_act, g.legal_actions()
        expected = [python_endgame_value(g, seat, card, k, bag_cost=10) for card in cards]
        assert table_values(g, seat, cards, endgame=k, bag_cost=10) == expected, seed


def test_the_agents_take_the_option_by_name_and_refuse_bad_prices():
    bot = make_agent("search:bag_cost=game")
    assert bot.bag_cost == "game" and bot.bag_cost_for(STD) == 10 and "bag_cost='game'" in repr(bot)
    assert make_agent("search_v1:bag_cost=7").bag_cost_for(STD) == 7
    assert agents.make("search").bag_cost == 0 and "bag_cost" not in repr(agents.make("search"))
    assert bot.bag_cost_for(make_rules("standard", bags=False)) == 0
    for bad in ("-1", "1.5", "cheap"):
        with pytest.raises((ValueError, AgentSpecError), match="bag_cost"):
            make_agent(f"search:bag_cost={bad}")


@pytest.mark.parametrize("backend", ["python", pytest.param("native", marks=native)])
def test_a_search_with_priced_bags_plays_a_legal_hand(backend):
    from spades_env import spades_v0
    env = spades_v0.raw_env(rules="standard", episode="hand")
    bots = [agents.make("search", seed=s, backend=backend, worlds=4, bid_worlds=4, bag_cost="game")
            for s in range(4)]
    env.reset(seed=5, options={"bags": [8, 9]})
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = bots[env.possible_agents.index(name)].act(obs, info)
        assert obs["action_mask"][action]
        env.step(action)
