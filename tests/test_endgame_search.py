"""The search with exact endgames (agents/endgame_search.py, search.c's endgame play-outs)."""

from __future__ import annotations

import pytest

import agents
from agents.endgame_search import play_until
from agents.native_search import table_values
from agents.search import hand_value
from spades_env import spades_v0
from spades_env.cards import mask_to_cards
from spades_env.game import PHASE_PLAY
from spades_env.native import unavailable_reason
from spades_env.solver import position_value, solve
from test_solver import ending

native = pytest.mark.skipif(unavailable_reason() is not None, reason="the native library does not build here")


def python_endgame_value(game, seat: int, card: int, k: int, bag_cost: int = 0) -> float:
    """A card's value as the Python backend computes it: heuristic down to k tricks, then solved
    (carried bags priced at ``bag_cost``)."""
    g = game.copy()
    played = [mask_to_cards(m) for m in g.played]
    voids = [{x for x in range(4) if g.voids[s] >> x & 1} for s in range(4)]
    g.apply(card)
    played[seat].append(card)
    play_until(g, k, played, voids)
    if g.phase != PHASE_PLAY:
        return hand_value(g, seat, bag_cost)
    value = position_value(g, "points", backend="python", bag_cost=bag_cost)
    return float(value if g.side_of[g.to_act] == g.side_of[seat] else -value)


@native
def test_c_play_outs_solve_the_whole_ending_exactly():
    for seed in range(15):
        g = ending(4000 + seed, 8 + seed % 13)
        seat = g.to_act
        cards = g.legal_actions()
        exact = solve(g, "points", backend="python")
        assert table_values(g, seat, cards, endgame=13) == [float(exact[c]) for c in cards], seed


@native
@pytest.mark.parametrize("k", [1, 2, 3])
def test_c_play_outs_hand_over_to_the_solver_as_the_python_path_does(k):
    for seed in range(10):
        g = ending(5000 + seed, 20 + seed % 9)
        seat = g.to_act
        cards = g.legal_actions()
        assert table_values(g, seat, cards, endgame=k) == [python_endgame_value(g, seat, c, k) for c in cards]


@pytest.mark.parametrize("backend", ["python", pytest.param("native", marks=native)])
@pytest.mark.parametrize("rules", ["standard", "cutthroat"])
def test_the_search_plays_a_legal_hand(backend, rules):
    env = spades_v0.raw_env(rules=rules, episode="hand")
    bots = [agents.make("search", seed=s, backend=backend, worlds=4, bid_worlds=4, endgame_tricks=3) for s in range(4)]
    env.reset(seed=3)
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        bot = bots[env.possible_agents.index(name)]
        action = bot.act(obs, info)
        assert obs["action_mask"][action]
        assert "fallback" not in bot.last_info or bot.last_info["fallback"] in (
            "one candidate", "heuristic for this phase"), bot.last_info
        env.step(action)


def test_endgame_tricks_is_bounded():
    with pytest.raises(ValueError, match="endgame_tricks"):
        agents.make("search", endgame_tricks=14)
    with pytest.raises(ValueError, match="endgame_tricks"):
        agents.make("search", endgame_tricks=-1)
    assert "endgame_tricks=2" in repr(agents.make("search", endgame_tricks=2))


@pytest.mark.parametrize("rules", ["standard", "short_signals"])
def test_play_until_from_the_deal_bids_then_stops_with_k_tricks_left(rules):
    """From before the play (messages, bids: the bid search's worlds), the play-out makes the
    remaining calls with the heuristic, then plays down to exactly K tricks left."""
    from spades_env.game import SpadesGame
    from spades_env.rules import make_rules

    for seed in range(5):
        g = SpadesGame(make_rules(rules), seed)
        assert g.phase != PHASE_PLAY
        play_until(g, 3, [[] for _ in range(4)], [set() for _ in range(4)])
        assert g.phase == PHASE_PLAY and all(b >= 0 for b in g.bids)
        assert g.tricks_per_hand - g.tricks_played == 3 and not g.trick_cards
