"""The native search (spades_env/native/search.c): its play-out engine and scoring agree with
the Python engine exactly, its worlds are exactly uniform among the deals the seat cannot rule
out, its decisions are deterministic whatever the thread count, and bad input is refused."""

import collections
import itertools
import math
import random

import numpy as np
import pytest

import agents
from agents import native_search as ns
from agents.search import Knowledge, SearchAgent, build_game, copy_game, hand_value, play_out
from spades_env import spades_v0
from spades_env.game import PHASE_PLAY
from spades_env.native import unavailable_reason
from spades_env.observation import decode_observation
from spades_env.rules import make_rules

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no native library: {unavailable_reason()}")

SETUPS = [("standard", {}), ("tournament", {}), ("openspiel", {}), ("basic", {}), ("cutthroat", {}),
          ("cutthroat", {"players": 3})]


def _play_positions(rules, games, every=0.3):
    """(view, legal) at some play decisions of heuristic games (with a few random moves)."""
    heuristic = agents.make("heuristic")
    for g in range(games):
        rng = random.Random(g)
        env = spades_v0.raw_env(rules=rules, episode="hand")
        env.reset(seed=g, options={"scores": [-150, 50]} if rules.partnerships and g % 2 else None)
        for _ in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            view = decode_observation(obs["observation"])
            if view.phase == PHASE_PLAY and len(legal) > 1 and rng.random() < every:
                yield view, legal
            env.step(heuristic.act(obs, info) if rng.random() < 0.9 else rng.choice(legal))


def _sample(view, rules, count, seed):
    k = Knowledge(view)
    seats = k.hidden_seats
    caps = np.array([k.sizes[s] - k.known[s].bit_count() for s in seats], dtype=np.int64)
    voids = np.array([k.voids[s] for s in seats], dtype=np.int64)
    known = np.array(k.known + [0] * (4 - view.players), dtype=np.int64)
    hands = np.zeros((count, 4), dtype=np.int64)
    weights = np.ones(count)
    # every array lives in a name until the call returns (a temporary's memory could be reused)
    rules_np, position = ns.rules_array(rules), ns.position_array(view, rules)
    hidden, infer = np.array(seats, dtype=np.int64), np.zeros((1, ns.INFER_SIZE), dtype=np.int64)
    code = ns._library().spades_search_sample(
        ns._ptr(rules_np), ns._ptr(position), k.hand, k.free(), ns._ptr(hidden), ns._ptr(caps), ns._ptr(voids),
        ns._ptr(known), len(seats), count, seed, ns._ptr(infer), 0, 1.0, 0.05, ns._ptr(hands), ns._ptr(weights))
    assert code == 0
    return hands, k


def _playouts(view, rules, hands, candidates, threads=1):
    out = np.zeros((len(hands), len(candidates)))
    rules_np, position = ns.rules_array(rules), ns.position_array(view, rules)
    hands, chosen = np.ascontiguousarray(hands), np.array(candidates, dtype=np.int64)
    code = ns._library().spades_search_playouts(ns._ptr(rules_np), ns._ptr(position), ns._ptr(hands), len(hands),
                                                ns._ptr(chosen), len(candidates), ns._ptr(out), threads)
    return code, out


@pytest.mark.parametrize("preset,overrides", SETUPS, ids=[f"{p}{o.get('players', '')}" for p, o in SETUPS])
def test_native_playouts_score_exactly_as_the_python_engine(preset, overrides):
    rules = make_rules(preset, **overrides)
    checked = 0
    for view, legal in _play_positions(rules, games=3):
        hands, knowledge = _sample(view, rules, 2, seed=len(legal))
        code, values = _playouts(view, rules, hands, legal)
        assert code == 0
        for w, row in enumerate(hands):
            world = [int(h) for h in row[:view.players]]
            # the world is consistent with what the seat knows
            assert world[0] == knowledge.hand
            for s in range(1, view.players):
                assert bin(world[s]).count("1") == knowledge.sizes[s]
                assert not any(world[s] >> (13 * x) & 0x1FFF for x in range(4) if knowledge.voids[s] >> x & 1)
            template = build_game(view, rules, world)
            for i, card in enumerate(legal):
                game = copy_game(template)
                game.apply(card)
                play_out(game)
                assert values[w, i] == hand_value(game, 0)
                checked += 1
    assert checked > 50


def test_worlds_are_exactly_uniform_among_the_consistent_deals():
    """A late position where voids bind: every consistent deal is drawn equally often."""
    rules = make_rules("standard")
    for view, legal in _play_positions(rules, games=40, every=1.0):
        k = Knowledge(view)
        if sum(k.sizes[1:]) <= 7 and any(k.voids[s] for s in (1, 2, 3)) and k.free().bit_count() >= 4:
            break
    else:
        pytest.fail("no late position with a void came up")
    hands, k = _sample(view, rules, 60_000, seed=1)
    free = k.free()
    cards = [c for c in range(52) if free >> c & 1]
    seats = k.hidden_seats
    caps = [k.sizes[s] - k.known[s].bit_count() for s in seats]
    consistent = []
    for perm in set(itertools.permutations([i for i, c in enumerate(caps) for _ in range(c)])):
        deal = [0] * len(seats)
        for card, i in zip(cards, perm):
            deal[i] |= 1 << card
        if all(not (deal[i] >> (13 * x) & 0x1FFF) for i, s in enumerate(seats) for x in range(4) if k.voids[s] >> x & 1):
            consistent.append(tuple(deal[i] | k.known[s] for i, s in enumerate(seats)))
    drawn = collections.Counter(tuple(int(row[s]) for s in seats) for row in hands)
    assert set(drawn) == set(consistent)
    expected = len(hands) / len(consistent)
    chi2 = sum((drawn[d] - expected) ** 2 / expected for d in consistent)
    dof = len(consistent) - 1
    assert chi2 < dof + 5 * math.sqrt(2 * dof) + 10, (chi2, dof)


def test_decisions_are_deterministic_and_the_thread_count_changes_nothing():
    rules = make_rules("standard")
    view, legal = next(iter(_play_positions(rules, games=1, every=1.0)))
    hands, _ = _sample(view, rules, 64, seed=9)
    again, _ = _sample(view, rules, 64, seed=9)
    assert np.array_equal(hands, again)
    one = _playouts(view, rules, hands, legal, threads=1)[1]
    two = _playouts(view, rules, hands, legal, threads=2)[1]
    assert np.array_equal(one, two)
    env = spades_v0.env()
    env.reset(seed=3)
    bot_a, bot_b = agents.make("search_v1", seed=5), agents.make("search_v1", seed=5, threads=2)
    for _ in range(30):
        obs, _, term, trunc, info = env.last()
        action = bot_a.act(obs, info)
        assert bot_b.act(obs, info) == action
        env.step(action)


def test_bad_arguments_are_error_codes_not_crashes():
    rules = make_rules("standard")
    view, legal = next(iter(_play_positions(rules, games=1, every=1.0)))
    hands, _ = _sample(view, rules, 2, seed=0)
    assert _playouts(view, rules, hands, [99])[0] == -10              # not a card
    not_held = next(c for c in range(52) if c not in view.hand)
    assert _playouts(view, rules, hands, [not_held])[0] == -12                   # not in the hand
    held_illegal = [c for c in view.hand if c not in legal]                  # spades, not yet broken
    assert held_illegal and _playouts(view, rules, hands, held_illegal[:1])[0] == -12
    overlapping = hands.copy()
    overlapping[:, 1] = overlapping[:, 2]
    assert _playouts(view, rules, overlapping, legal)[0] == -10        # hands that overlap
    bad_rules = ns.rules_array(rules)
    bad_rules[0] = 7
    out = np.zeros((2, 1))
    position, chosen = ns.position_array(view, rules), np.array(legal[:1], dtype=np.int64)
    code = ns._library().spades_search_playouts(ns._ptr(bad_rules), ns._ptr(position), ns._ptr(hands), 2,
                                                ns._ptr(chosen), 1, ns._ptr(out), 1)
    assert code == -10
    for cost in (-1, 1001):                                           # a bag price out of range
        priced = ns.rules_array(rules, bag_cost=cost)
        assert ns._library().spades_search_playouts(ns._ptr(priced), ns._ptr(position), ns._ptr(hands), 2,
                                                    ns._ptr(chosen), 1, ns._ptr(out), 1) == -10
    # the tricks-returning play-outs share the same checks
    tricks = np.zeros((2, 1, 4), dtype=np.int64)
    lib, rules_np = ns._library(), ns.rules_array(rules)
    assert lib.spades_search_playouts_tricks(ns._ptr(bad_rules), ns._ptr(position), ns._ptr(hands), 2,
                                             ns._ptr(chosen), 1, ns._ptr(tricks), 1) == -10
    not_a_card = np.array([99], dtype=np.int64)
    assert lib.spades_search_playouts_tricks(ns._ptr(rules_np), ns._ptr(position), ns._ptr(hands), 2,
                                             ns._ptr(not_a_card), 1, ns._ptr(tricks), 1) == -10
    unheld = np.array([not_held], dtype=np.int64)
    assert lib.spades_search_playouts_tricks(ns._ptr(rules_np), ns._ptr(position), ns._ptr(hands), 2,
                                             ns._ptr(unheld), 1, ns._ptr(tricks), 1) == -12
    assert lib.spades_search_playouts_tricks(ns._ptr(rules_np), ns._ptr(position), ns._ptr(overlapping), 2,
                                             ns._ptr(chosen), 1, ns._ptr(tricks), 1) == -10


def test_backend_and_budget_options():
    assert agents.make("search_v1").backend == "native"
    assert agents.make("search_v1").worlds == SearchAgent.BUDGETS[("native", "default")][0]
    assert agents.make("search_v1", budget="strong").worlds == SearchAgent.BUDGETS[("native", "strong")][0]
    python = agents.make("search_v1", backend="python")
    assert (python.worlds, python.max_steps) == SearchAgent.BUDGETS[("python", "default")]
    assert agents.make("search_v1", worlds=7).worlds == 7
    with pytest.raises(ValueError, match="backend"):
        agents.make("search_v1", backend="gpu")
    with pytest.raises(ValueError, match="budget"):
        agents.make("search_v1", budget="huge")


def test_native_search_plays_whole_games_legally_with_its_info():
    bot = agents.make("search_v1", seed=0, worlds=64)
    for rules in ("standard", "cutthroat"):
        env = spades_v0.env(rules=rules, episode="hand")
        env.reset(seed=2)
        for _ in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            action = bot.act(obs, info)
            assert obs["action_mask"][action]
            if bot.last_info.get("candidates"):
                assert bot.last_info["backend"] == "native" and bot.last_info["choice"] == action
            env.step(action)


def true_table_positions(rules, seeds, scores_behind: bool = False, share: float = 0.3, more_than_one: bool = False):
    """(game, seat, legal) at about ``share`` of the card decisions of heuristic hands dealt with
    ``seeds`` (``scores_behind``: partnership games start with one side at -150, blind nil offered;
    ``more_than_one``: only decisions with a choice); each yielded game is played on afterwards."""
    from spades_env.game import SpadesGame
    from agents.heuristic import choose_action
    from spades_env.observation import view_from_game
    for k, seed in enumerate(seeds):
        scores = ([-150, 0] if k % 2 else [0, -150]) if scores_behind and rules.partnerships else None
        game = SpadesGame(rules, seed, scores=scores)
        rng = random.Random(k)
        while game.phase < 4:
            legal = game.legal_actions()
            if game.phase == PHASE_PLAY and (len(legal) > 1 or not more_than_one) and rng.random() < share:
                yield game, game.to_act, legal
            game.apply(choose_action(view_from_game(game, game.to_act), legal) if len(legal) > 1 else legal[0])


def python_play_outs(game, legal, outcome):
    """``outcome`` of the heuristic's play-out of a copy of ``game`` after each legal card."""
    results = []
    for card in legal:
        table = copy_game(game)
        table.apply(card)
        play_out(table)
        results.append(outcome(table))
    return results


@pytest.mark.parametrize("preset,overrides", SETUPS, ids=[f"{p}{o.get('players', '')}" for p, o in SETUPS])
def test_true_table_values_are_the_python_play_outs(preset, overrides):
    """spades-label's play-out teacher values cards on the true table in C: the same numbers as
    the Python play-outs, blind-nil passes of either side included."""
    checked = 0
    for game, seat, legal in true_table_positions(make_rules(preset, **overrides), range(6), scores_behind=True,
                                                  more_than_one=True):
        assert ns.table_values(game, seat, legal) == python_play_outs(game, legal, lambda t: hand_value(t, seat))
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("preset,overrides", SETUPS, ids=[f"{p}{o.get('players', '')}" for p, o in SETUPS])
def test_true_table_tricks_are_the_python_play_outs(preset, overrides):
    """The bid search plays its worlds' cards in C and scores them itself: every seat's tricks
    equal the Python play-out's, for every legal card."""
    checked = 0
    for game, seat, legal in true_table_positions(make_rules(preset, **overrides), range(10, 14)):
        assert ns.table_tricks(game, seat, legal) == python_play_outs(game, legal, lambda t: list(t.tricks_taken))
        checked += 1
    assert checked > 5


def test_the_native_bid_search_values_worlds_as_the_python_one():
    """search's bids: the native backend plays each world's cards in C (table_tricks) and must
    value every bid exactly as the Python play-outs do, by the game and by points."""
    from helpers import bid_decisions
    for objective in ("game", "points"):
        native = agents.make("search", seed=3, backend="native", bid_worlds=12, bid_objective=objective)
        python = agents.make("search", seed=3, backend="python", bid_worlds=12, bid_objective=objective)
        compared = 0
        for obs, info in bid_decisions(8, limit=6):
            assert native.act(obs, info) == python.act(obs, info)
            if "means" in python.last_info:
                assert native.last_info["means"] == python.last_info["means"]
                compared += 1
        assert compared >= 3
