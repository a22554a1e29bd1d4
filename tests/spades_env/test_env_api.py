"""Environment-level tests of the public interface (API.md): PettingZoo compliance, the standard
loop, spaces, observations, seeding, copying, illegal moves, reset options, rendering, rewards,
game records and replay."""

from __future__ import annotations

import copy
import json
import pickle
import random
import re

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.test import api_test, seed_test
from pettingzoo.utils.wrappers import (AssertOutOfBoundsWrapper, BaseWrapper, OrderEnforcingWrapper,
                                       TerminateIllegalWrapper)

import spades_env
from spades_env import spades_v0
from spades_env.cards import card_pretty, card_str, format_hand
from spades_env.env import SpadesEnv
from spades_env.scoring import game_winner

from helpers_env import CONFIGS, PRESETS, advance, choose, mask_to_list, play_game, run_loop

FACTORIES = {"env": spades_v0.env, "raw_env": spades_v0.raw_env}
EPISODES = (None, "hand", "game")

# Each seat holds one whole suit: seat 0 clubs, 1 diamonds, 2 hearts, 3 spades.
SUIT_DEAL = [list(range(13 * s, 13 * s + 13)) for s in range(4)]


def stock_wrapped(**kwargs):
    """The same env under PettingZoo's own (slow) wrappers, as the reference for the fast ones."""
    env = TerminateIllegalWrapper(SpadesEnv(**kwargs), illegal_reward=-1.0)
    env = AssertOutOfBoundsWrapper(env)
    return OrderEnforcingWrapper(env)


def last_snapshot(env):
    obs, reward, term, trunc, info = env.last()
    return (env.agent_selection, obs["observation"].copy(), obs["action_mask"].copy(), reward, term,
            trunc, copy.deepcopy(info))


def assert_snapshots_equal(a, b):
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    assert a[3:] == b[3:]


def trace(env, rng, style="uniform"):
    """Play to the end of the episode, recording everything the loop sees."""
    out = []
    for agent in env.agent_iter():
        snap = last_snapshot(env)
        out.append(snap)
        action = None if (snap[4] or snap[5]) else choose(snap[2], rng, style)
        env.step(action)
    return out


# ---------------------------------------------------------------------------------------------
# PettingZoo's own checks
# ---------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("episode", EPISODES)
@pytest.mark.parametrize("factory", sorted(FACTORIES))
@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_pettingzoo_api_test(label, kwargs, factory, episode):
    kw = dict(kwargs) if episode is None else dict(kwargs, episode=episode)
    api_test(FACTORIES[factory](**kw), num_cycles=1000)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("episode", EPISODES)
@pytest.mark.parametrize("factory", sorted(FACTORIES))
@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_pettingzoo_seed_test(label, kwargs, factory, episode):
    kw = dict(kwargs) if episode is None else dict(kwargs, episode=episode)
    seed_test(lambda: FACTORIES[factory](**kw))


def test_openspiel_preset_defaults_to_single_hand_episodes():
    env = play_game({"rules": "openspiel"}, seed=1)
    raw = env.unwrapped
    assert raw.episode == "hand"
    assert raw.game.hand_number == 1


# ---------------------------------------------------------------------------------------------
# The standard loop, spaces, observations, state
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_standard_loop_plays_a_whole_game(label, kwargs):
    env = spades_v0.env(reward="team_score", episode="game", render_mode=None, **kwargs)
    raw = env.unwrapped
    n = raw.rules.players
    names = [f"player_{i}" for i in range(n)]
    assert env.possible_agents == names
    env.reset(seed=4)
    assert env.agents == names
    act_space = env.action_space("player_0")
    assert isinstance(act_space, spaces.Discrete) and act_space.n == 68 + raw.rules.signals == raw.rules.num_actions
    assert all(env.action_space(a) is act_space for a in names), "one cached action space"
    obs_space = env.observation_space("player_0")
    assert all(env.observation_space(a) is obs_space for a in names)
    assert set(obs_space.spaces) == {"observation", "action_mask"}

    rng = random.Random(4)
    seen_done = False
    steps = 0
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        assert set(obs) == {"observation", "action_mask"}
        o, m = obs["observation"], obs["action_mask"]
        assert o.dtype == np.float32 and o.shape == obs_space["observation"].shape
        assert m.dtype == np.int8 and m.shape == (raw.rules.num_actions,)
        assert set(np.unique(m)) <= {0, 1}
        assert isinstance(reward, float)
        if steps % 7 == 0:
            assert obs_space.contains(obs)
        for other in env.agents:
            if other != agent:
                assert not env.observe(other)["action_mask"].any(), f"{other} is not on turn"
        if termination or truncation:
            seen_done = True
            assert not m.any(), "a finished agent's mask is all zero"
            action = None
        else:
            assert not seen_done
            assert m.any()
            assert agent == f"player_{raw.game.to_act}"
            action = choose(m, rng, "low")
        env.step(action)
        steps += 1
    assert seen_done and env.agents == []
    assert raw.game.game_over
    # Hands were played until the game was decided, and not one hand longer.
    scores = [h["scores"] for h in raw.game_record()["hands"]]
    assert [game_winner(raw.rules, s) is not None for s in scores] == [False] * (len(scores) - 1) + [True]


def test_every_phase_uses_the_one_action_space():
    env = spades_v0.raw_env(blind_nil_min_deficit=0)
    env.reset(seed=2)
    env.step(66)  # blind nil for the first bidder...
    kinds = set()
    rng = random.Random(0)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
        phase = env.phase
        if phase == "blind_nil_decision":
            assert legal == [66, 67]
        elif phase == "bidding":
            assert legal and all(52 <= a <= 65 for a in legal)
        else:  # passing and play: card ids held by the player
            hand = mask_to_list(env.game.hands[env.game.to_act])
            assert legal and set(legal) <= set(hand)
        kinds.add(phase)
        env.step(choose(obs["action_mask"], rng))
    assert {"bidding", "passing", "play"} <= kinds


@pytest.mark.parametrize("label,kwargs", [CONFIGS[0], CONFIGS[3], CONFIGS[5]],
                         ids=["standard", "cutthroat", "cutthroat3"])
def test_observation_is_seen_from_the_observers_seat(label, kwargs):
    """Per-seat blocks are rotated so the observer comes first: the player to act sees itself
    at relative seat 0, the others see it at (to_act - seat) mod n; likewise the dealer."""
    env = spades_v0.env(**kwargs)
    raw = env.unwrapped
    n = raw.rules.players
    env.reset(seed=6)
    rng = random.Random(6)
    split = raw.observation_layout.split
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        game = raw.game
        for seat, name in enumerate(env.possible_agents):
            fields = split(env.observe(name)["observation"])
            assert fields["to_act"].reshape(n).tolist() == [float(r == (game.to_act - seat) % n) for r in range(n)]
            assert fields["dealer"].reshape(n).tolist() == [float(r == (game.dealer - seat) % n) for r in range(n)]
        env.step(choose(obs["action_mask"], rng, "low"))


@pytest.mark.parametrize("rules", ["standard", "configs/rules/tournament.yaml", "rules_object", "mapping"])
def test_rules_argument_forms(rules):
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if rules == "rules_object":
        rules = spades_env.make_rules("tournament")
    elif rules == "mapping":
        rules = {"preset": "tournament"}
    elif rules.endswith(".yaml"):
        rules = os.path.join(root, rules)
    env = spades_v0.env(rules=rules, target_score=300)
    assert env.unwrapped.rules.target_score == 300
    if rules != "standard":
        assert env.unwrapped.rules.min_team_bid == 4 and env.unwrapped.rules.no_spades_first_trick
    env.reset(seed=0)
    run_loop(env, random.Random(0), "low")
    assert env.unwrapped.game.game_over


def test_observe_returns_arrays_the_caller_may_keep():
    env = spades_v0.env()
    env.reset(seed=0)
    rng = random.Random(0)
    advance(env, rng, 6)  # into the play phase
    agent = env.agent_selection
    first = env.observe(agent)
    kept_obs, kept_mask = first["observation"].copy(), first["action_mask"].copy()
    # Mutating a returned array does not reach the env.
    first["observation"][:] = 123.0
    first["action_mask"][:] = 0
    again = env.observe(agent)
    np.testing.assert_array_equal(again["observation"], kept_obs)
    np.testing.assert_array_equal(again["action_mask"], kept_mask)
    # Stepping the env does not change an array already handed out.
    held = env.observe(agent)
    held_last, *_ = env.last()
    other = env.observe("player_0" if agent != "player_0" else "player_1")
    kept_other = other["observation"].copy()
    advance(env, rng, 5)
    np.testing.assert_array_equal(held["observation"], kept_obs)
    np.testing.assert_array_equal(held["action_mask"], kept_mask)
    np.testing.assert_array_equal(held_last["observation"], kept_obs)
    np.testing.assert_array_equal(other["observation"], kept_other)
    assert not np.array_equal(env.observe(agent)["observation"], kept_obs), "the env did move on"
    # state() is a copy as well.
    st = env.state()
    st_copy = st.copy()
    st[:] = -5.0
    np.testing.assert_array_equal(env.state(), st_copy)


@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_state_holds_every_hand(label, kwargs):
    env = spades_v0.env(**kwargs)
    raw = env.unwrapped
    n = raw.rules.players
    sl = raw.observation_layout.state_slices["true_hands"]
    env.reset(seed=9)
    assert env.state().shape == raw.state_space.shape
    rng = random.Random(1)

    def check(env, agent, action):
        if not env.agents:
            return
        st = env.state()
        assert st.dtype == np.float32
        hands = st[sl].reshape(n, 52)
        for seat in range(n):
            assert [int(c) for c in np.flatnonzero(hands[seat])] == mask_to_list(raw.game.hands[seat])
        # The state shows even cards no observation shows (a seat that has not looked).
    check(env, None, None)
    run_loop(env, rng, "low", max_steps=400, on_step=check)


def test_state_shows_hands_that_observations_hide():
    env = spades_v0.raw_env()
    env.reset(seed=3, options={"scores": [0, 300], "dealer": 3})
    # Seat 0 trails by 300 and must decide on blind nil before seeing its cards.
    assert env.phase == "blind_nil_decision"
    hand_slice = env.observation_layout.slices["hand"]
    assert not env.observe("player_0")["observation"][hand_slice].any()
    true = env.state()[env.observation_layout.state_slices["true_hands"]].reshape(4, 52)
    assert true[0].sum() == 13


# ---------------------------------------------------------------------------------------------
# Seeding and copying
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_same_seed_same_game_different_seed_different_game(label, kwargs):
    a = play_game(dict(kwargs, episode="game"), seed=21, style="low").unwrapped.game_record()
    b = play_game(dict(kwargs, episode="game"), seed=21, style="low").unwrapped.game_record()
    assert a == b
    c = play_game(dict(kwargs, episode="game"), seed=22, style="low").unwrapped.game_record()
    assert c["hands"][0]["deal"] != a["hands"][0]["deal"]


def test_reset_without_seed_continues_the_stream():
    def two_games():
        env = spades_v0.env(episode="hand")
        env.reset(seed=5)
        run_loop(env, random.Random(0))
        first = env.unwrapped.game_record()
        env.reset()
        run_loop(env, random.Random(1))
        return first, env.unwrapped.game_record()

    first, second = two_games()
    first_again, second_again = two_games()
    assert (first, second) == (first_again, second_again)
    assert second["hands"][0]["deal"] != first["hands"][0]["deal"], "the stream is not restarted"
    env = spades_v0.env(episode="hand")
    env.reset(seed=5)
    assert env.unwrapped.game_record()["hands"][0]["deal"] == first["hands"][0]["deal"]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("factory", sorted(FACTORIES))
@pytest.mark.parametrize("label,kwargs", [CONFIGS[0], CONFIGS[3], CONFIGS[6]],
                         ids=["standard", "cutthroat", "blindheavy"])
def test_copy_of_a_mid_game_env_continues_identically(label, kwargs, factory, how):
    env = FACTORIES[factory](episode="game", **kwargs)
    env.reset(seed=11)
    advance(env, random.Random(1), 37, "low")
    clone = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert type(clone) is type(env)
    assert clone.unwrapped is not env.unwrapped
    record_before = env.unwrapped.game_record()
    assert clone.unwrapped.game_record() == record_before
    t_clone = trace(clone, random.Random(2), "low")
    assert env.unwrapped.game_record() == record_before, "playing the copy left the original alone"
    t_orig = trace(env, random.Random(2), "low")
    assert len(t_orig) == len(t_clone)
    for x, y in zip(t_orig, t_clone):
        assert_snapshots_equal(x, y)
    assert env.unwrapped.game_record() == clone.unwrapped.game_record()
    # The random stream was copied too: the next unseeded reset deals the same cards.
    env.reset()
    clone.reset()
    assert env.unwrapped.game.deal == clone.unwrapped.game.deal


# ---------------------------------------------------------------------------------------------
# Illegal moves, order of calls, wrappers
# ---------------------------------------------------------------------------------------------

def _assert_names(message, action, phase, legal):
    assert re.search(rf"\b{re.escape(str(action))}\b", message), message
    assert phase in message, message
    for a in legal:
        assert re.search(rf"\b{a}\b", message), f"legal action {a} not named in: {message}"


def test_raw_env_illegal_bid_raises_naming_action_phase_and_legal_actions():
    env = spades_v0.raw_env()
    env.reset(seed=0)
    before = env.game_record()
    legal = env.legal_actions()
    with pytest.raises(spades_env.IllegalActionError) as info:
        env.step(0)
    _assert_names(str(info.value), 0, "bidding", legal)
    assert env.game_record() == before, "a refused action changes nothing"
    assert isinstance(info.value, ValueError)


def test_raw_env_illegal_card_raises_naming_action_phase_and_legal_actions():
    env = spades_v0.raw_env()
    env.reset(seed=0)
    rng = random.Random(0)
    while env.phase != "play":
        env.step(choose(env.observe(env.agent_selection)["action_mask"], rng))
    legal = env.legal_actions()
    bad = next(c for c in range(52) if c not in legal)
    agent = env.agent_selection
    obs_before = env.observe(agent)["observation"]
    with pytest.raises(spades_env.IllegalActionError) as info:
        env.step(bad)
    _assert_names(str(info.value), bad, "play", legal)
    np.testing.assert_array_equal(env.observe(agent)["observation"], obs_before)
    assert env.agent_selection == agent
    env.step(np.int64(legal[0]))  # numpy integers are fine


@pytest.mark.parametrize("bad", [68, -1, 1000, None, "AS", 1.0, True])
def test_raw_env_rejects_values_outside_the_action_space(bad):
    env = spades_v0.raw_env()
    env.reset(seed=0)
    with pytest.raises(spades_env.IllegalActionError):
        env.step(bad)


def test_raw_env_dead_agent_only_accepts_none():
    env = spades_v0.raw_env(episode="hand")
    env.reset(seed=0)
    rng = random.Random(5)
    while not env.terminations[env.agent_selection]:
        env.step(choose(env.observe(env.agent_selection)["action_mask"], rng))
    with pytest.raises(ValueError):
        env.step(0)
    env.step(None)
    assert len(env.agents) == 3


@pytest.mark.parametrize("illegal_reward", [-1.0, -5.0])
def test_wrapped_env_illegal_move_terminates_with_penalty(illegal_reward):
    kwargs = {} if illegal_reward == -1.0 else {"illegal_reward": illegal_reward}
    env = spades_v0.env(**kwargs)
    env.reset(seed=0)
    advance(env, random.Random(0), 9)
    offender = env.agent_selection
    mask = env.observe(offender)["action_mask"]
    bad = int(np.flatnonzero(mask == 0)[0])
    env.step(bad)
    assert all(env.terminations.values())
    assert env.rewards == {a: (illegal_reward if a == offender else 0) for a in env.possible_agents}
    finals = {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        assert term
        finals[agent] = reward
        env.step(None)
    assert finals == {a: (illegal_reward if a == offender else 0.0) for a in env.possible_agents}
    assert env.agents == []


def test_wrapped_env_masks_are_zero_after_illegal_termination():
    env = spades_v0.env()
    env.reset(seed=0)
    advance(env, random.Random(0), 9)
    offender = env.agent_selection
    bad = int(np.flatnonzero(env.observe(offender)["action_mask"] == 0)[0])
    env.step(bad)
    for agent in env.possible_agents:
        if agent != env.agent_selection:
            assert not env.observe(agent)["action_mask"].any(), f"{agent} is not on turn"
    assert not env.observe(env.agent_selection)["action_mask"].any()


@pytest.mark.parametrize("bad", [68, -1, 500])
def test_wrapped_env_out_of_space_action_fails_bounds_assertion(bad):
    env = spades_v0.env()
    env.reset(seed=0)
    before = env.unwrapped.game_record()
    with pytest.raises(AssertionError, match="action space"):
        env.step(bad)
    assert env.unwrapped.game_record() == before
    assert not any(env.terminations.values())


def test_wrapped_env_none_for_a_live_agent_fails_the_bounds_assertion():
    env = spades_v0.env()
    env.reset(seed=0)
    with pytest.raises(AssertionError):
        env.step(None)


def test_wrapped_env_accepts_numpy_integer_actions():
    env = spades_v0.env()
    env.reset(seed=0)
    legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
    env.step(np.int64(legal[0]))
    assert len(env.unwrapped.game.actions) == 1


@pytest.mark.parametrize("make", [spades_v0.env, stock_wrapped], ids=["fast", "stock"])
def test_order_enforcement_before_reset(make):
    env = make()
    for name in ("rewards", "terminations", "truncations", "infos", "agent_selection", "agents",
                 "num_agents"):
        with pytest.raises(AttributeError):
            getattr(env, name)
    with pytest.raises(AssertionError):
        env.step(0)
    with pytest.raises(AssertionError):
        env.observe("player_0")
    with pytest.raises(AssertionError):
        env.state()
    with pytest.raises(AssertionError):
        env.agent_iter()
    # Static facts are readable before reset.
    assert env.possible_agents == [f"player_{i}" for i in range(4)]
    assert env.action_space("player_1").n == 68
    env.reset(seed=0)
    assert env.agents == env.possible_agents


def test_raw_env_step_before_reset_is_an_error():
    env = spades_v0.raw_env()
    with pytest.raises((AttributeError, AssertionError, RuntimeError)):
        env.step(52)


def test_wrapped_env_is_the_usual_wrapper_stack():
    env = spades_v0.env()
    assert isinstance(env, OrderEnforcingWrapper)
    assert isinstance(env, BaseWrapper) and isinstance(env, AECEnv)
    assert isinstance(env.env, AssertOutOfBoundsWrapper)
    assert isinstance(env.env.env, TerminateIllegalWrapper)
    assert isinstance(env.unwrapped, SpadesEnv)
    assert env.env.env.env is env.unwrapped
    raw = spades_v0.raw_env()
    assert isinstance(raw, AECEnv) and isinstance(raw, SpadesEnv)
    assert raw.unwrapped is raw
    assert env.metadata["name"] == "spades_v0"


def test_step_after_the_end_warns_and_changes_nothing():
    env = play_game({"rules": "standard", "episode": "hand"}, seed=2)
    assert env.agents == []
    record = env.unwrapped.game_record()
    env.step(None)  # PettingZoo only warns
    assert env.unwrapped.game_record() == record


@pytest.mark.parametrize("seed", range(6))
def test_fast_wrappers_behave_like_pettingzoo_wrappers(seed):
    """The same seeded play (with an illegal move now and then) through our wrappers and
    through PettingZoo's stock wrappers gives the same loop, step for step."""
    kwargs = {"rules": PRESETS[seed % len(PRESETS)], "episode": "game"}
    fast, stock = spades_v0.env(**kwargs), stock_wrapped(**kwargs)
    for env in (fast, stock):
        env.reset(seed=seed)
    rngs = [random.Random(seed), random.Random(seed)]
    traces = []
    for env, rng in zip((fast, stock), rngs):
        out = []
        for agent in env.agent_iter():
            snap = last_snapshot(env)
            out.append(snap + (dict(env.rewards), dict(env.unwrapped._cumulative_rewards),
                               list(env.agents)))
            if snap[4] or snap[5]:
                action = None
            elif rng.random() < 0.004:
                action = int(np.flatnonzero(snap[2] == 0)[rng.randrange(int((snap[2] == 0).sum()))])
            else:
                action = choose(snap[2], rng, "low")
            env.step(action)
        traces.append(out)
    assert len(traces[0]) == len(traces[1])
    for x, y in zip(*traces):
        if x[4] or x[5]:
            # Once the episode is over our env zeroes every mask (the stock stack leaves the
            # offender's mask of an illegal move as it was); everything else is the same.
            assert not x[2].any()
            x, y = x[:2] + x[3:], y[:2] + y[3:]
            assert x[0] == y[0]
            np.testing.assert_array_equal(x[1], y[1])
            assert x[2:] == y[2:]
        else:
            assert_snapshots_equal(x[:7], y[:7])
            assert x[7:] == y[7:]


# ---------------------------------------------------------------------------------------------
# reset options
# ---------------------------------------------------------------------------------------------

def _string_deal(deal_ids):
    """Card strings, with tens written both as "T" and as "10"."""
    out = []
    for seat, hand in enumerate(deal_ids):
        cards = []
        for i, c in enumerate(hand):
            text = card_str(c)
            if text[0] == "T" and seat % 2:
                text = "10" + text[1]
            cards.append(text)
        out.append(cards)
    return out


def test_reset_options_deal_dealer_scores_bags():
    env = spades_v0.env()
    deal_ids = [list(range(s, 52, 4)) for s in range(4)]
    env.reset(seed=0, options={"deal": deal_ids, "dealer": 2, "scores": [120, -40], "bags": [3, 7]})
    raw = env.unwrapped
    assert [mask_to_list(h) for h in raw.game.hands] == deal_ids
    assert raw.game.dealer == 2
    assert env.agent_selection == "player_3", "bidding starts left of the dealer"
    assert raw.scores == [120, -40] and raw.bags == [3, 7]
    start = raw.game_record()["start"]
    assert start == {"dealer": 2, "scores": [120, -40], "bags": [3, 7]}
    # The observation shows them from the observer's side.
    sides = raw.observation_layout.split(env.observe("player_1")["observation"])["sides"]
    assert sides[0][0] == pytest.approx(-40 / 500) and sides[1][0] == pytest.approx(120 / 500)
    assert sides[0][1] == pytest.approx(7 / 10)


def test_reset_option_deal_accepts_card_strings():
    deal_ids = [list(range(s, 52, 4)) for s in range(4)]
    strings = _string_deal(deal_ids)
    flat = [c for hand in strings for c in hand]
    assert any(c.startswith("10") for c in flat) and any(c.startswith("T") for c in flat)
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"deal": strings, "dealer": 0})
    assert [mask_to_list(h) for h in env.game.hands] == deal_ids
    # The spellings of API.md: "AS" is 51, "TD" is 21, "10D" / "10H" are 21 / 34; ids mix in.
    first = ["AS", "TD", "10H"] + list(range(10))
    rest = [c for c in range(52) if c not in (51, 21, 34) and c >= 10]
    deal = [first] + [[card_str(c) for c in rest[i * 13:(i + 1) * 13]] for i in range(3)]
    env.reset(seed=0, options={"deal": deal})
    assert mask_to_list(env.game.hands[0]) == sorted([51, 21, 34] + list(range(10)))
    deal[0][1] = "10D"
    env.reset(seed=0, options={"deal": deal})
    assert 21 in mask_to_list(env.game.hands[0])


def test_reset_options_for_cutthroat_are_per_player():
    env = spades_v0.raw_env(rules="cutthroat")
    env.reset(seed=0, options={"scores": [10, 20, 30, 40], "bags": [1, 2, 3, 4], "dealer": 0})
    assert env.scores == [10, 20, 30, 40] and env.bags == [1, 2, 3, 4]
    with pytest.raises(spades_env.DealError, match="scores"):
        env.reset(seed=0, options={"scores": [10, 20]})
    three = spades_v0.raw_env(rules="cutthroat", players=3)
    deal = [[c for c in range(1, 52)][i::3] for i in range(3)]
    three.reset(seed=0, options={"deal": deal, "scores": [1, 2, 3]})
    assert [mask_to_list(h) for h in three.game.hands] == deal
    with pytest.raises(spades_env.DealError):
        three.reset(seed=0, options={"deal": [list(range(0, 51))[i::3] for i in range(3)]})


MALFORMED = [
    ("deal", [[0] * 13] * 4),
    ("deal", SUIT_DEAL[:3]),
    ("deal", [SUIT_DEAL[0][:12]] + SUIT_DEAL[1:]),
    ("deal", [["ZZ"] + SUIT_DEAL[0][1:]] + SUIT_DEAL[1:]),
    ("deal", [[52] + SUIT_DEAL[0][1:]] + SUIT_DEAL[1:]),
    ("deal", "AS KS QS"),
    ("deal", 7),
    ("dealer", 4),
    ("dealer", -1),
    ("dealer", "1"),
    ("dealer", 1.0),
    ("scores", [0]),
    ("scores", [0, "a"]),
    ("scores", 5),
    ("scores", [0.5, 0]),
    ("bags", [10, 0]),
    ("bags", [0, -1]),
    ("bags", [0]),
]


@pytest.mark.parametrize("key,value", MALFORMED, ids=[f"{k}-{i}" for i, (k, _) in enumerate(MALFORMED)])
@pytest.mark.parametrize("factory", sorted(FACTORIES))
def test_malformed_reset_option_is_an_error_naming_it_and_changes_nothing(factory, key, value):
    env = FACTORIES[factory]()
    env.reset(seed=1)
    advance(env, random.Random(3), 12)
    reference = copy.deepcopy(env)
    with pytest.raises(spades_env.DealError) as info:
        env.reset(options={key: value})
    assert key in str(info.value)
    assert env.unwrapped.game_record() == reference.unwrapped.game_record()
    t1, t2 = trace(env, random.Random(4)), trace(reference, random.Random(4))
    for x, y in zip(t1, t2):
        assert_snapshots_equal(x, y)
    assert len(t1) == len(t2)
    env.reset()
    reference.reset()
    assert env.unwrapped.game.deal == reference.unwrapped.game.deal, "the random stream is untouched"


def test_failed_reset_with_a_seed_does_not_reseed():
    env = spades_v0.raw_env()
    env.reset(seed=1)
    advance(env, random.Random(3), 12)
    reference = copy.deepcopy(env)
    with pytest.raises(spades_env.DealError):
        env.reset(seed=7, options={"dealer": 9})
    env.reset()
    reference.reset()
    assert env.game.deal == reference.game.deal


def test_openspiel_fixes_the_dealer():
    env = spades_v0.raw_env(rules="openspiel")
    env.reset(seed=0, options={"dealer": 3})
    assert env.game.dealer == 3 and env.agent_selection == "player_0"
    with pytest.raises(spades_env.DealError, match="dealer"):
        env.reset(seed=0, options={"dealer": 0})


def test_unknown_reset_option_only_warns():
    env = spades_v0.env()
    with pytest.warns(UserWarning, match="colour"):
        env.reset(seed=3, options={"colour": "blue"})
    other = spades_v0.env()
    other.reset(seed=3)
    assert env.unwrapped.game.deal == other.unwrapped.game.deal
    assert env.agents == other.agents


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------

def _scripted_table(render_mode):
    env = spades_v0.raw_env(render_mode=render_mode)
    deal = [list(range(s, 52, 4)) for s in range(4)]
    env.reset(seed=0, options={"deal": deal, "dealer": 3, "scores": [120, 40], "bags": [2, 5]})
    for bid in (3, 4, 2, 5):
        env.step(52 + bid)
    for _ in range(5):  # one whole trick, and one card of the next
        env.step(env.legal_actions()[0])
    return env


def test_render_ansi_shows_hands_bids_trick_tricks_scores():
    env = _scripted_table("ansi")
    text = env.render()
    assert isinstance(text, str)
    game = env.game
    for seat in range(4):
        assert format_hand(game.hands[seat], pretty=True) in text, f"hand of seat {seat}"
    for bid in (3, 4, 2, 5):
        assert re.search(rf"bid\s+{bid}\b", text)
    (_, card), = game.current_trick
    assert card_pretty(card) in text, "the card in the trick"
    winner = env.game_record()["hands"][-1]["tricks"][0]["winner"]
    assert game.tricks_taken[winner] == 1
    assert re.search(r"tricks\s+1\b", text)
    assert "120" in text and "40" in text


def test_render_human_prints(capsys):
    env = _scripted_table("human")
    capsys.readouterr()
    assert env.render() is None
    printed = capsys.readouterr().out
    ansi = _scripted_table("ansi").render()
    assert ansi in printed


@pytest.mark.parametrize("mode", ["rgb_array", "ANSI", "text", 1])
def test_bad_render_mode_is_rejected(mode):
    with pytest.raises(ValueError, match="render_mode"):
        spades_v0.raw_env(render_mode=mode)
    with pytest.raises(ValueError, match="render_mode"):
        spades_v0.env(render_mode=mode)


def test_rgb_array_is_refused_with_what_sb3_users_need():
    with pytest.raises(ValueError, match="make_vec_env asks for 'rgb_array' unless env_kwargs sets render_mode=None"):
        spades_v0.raw_env(render_mode="rgb_array")


def test_render_without_mode_warns():
    env = spades_v0.env()
    env.reset(seed=0)
    with pytest.warns(UserWarning):
        assert env.render() is None


# ---------------------------------------------------------------------------------------------
# Rewards
# ---------------------------------------------------------------------------------------------

def _play_tracking_rewards(env, seed, style="low"):
    """Play the (reset) episode with a seeded policy. Returns the rewards after every step, the
    indices of the steps that scored a hand, and each agent's rewards summed as ``last()``
    hands them out."""
    raw = env.unwrapped
    rng = random.Random(seed)
    per_step = []
    hand_steps = []
    via_last = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        via_last[agent] += reward
        action = None if term or trunc else choose(obs["action_mask"], rng, style)
        hand_number = raw.game.hand_number
        env.step(action)
        per_step.append(dict(raw.rewards))
        if action is not None and (raw.game.hand_number != hand_number or hand_scored_and_done(raw)):
            hand_steps.append(len(per_step) - 1)
    return per_step, hand_steps, via_last


def hand_scored_and_done(raw):
    return any(raw.terminations.values()) or any(raw.truncations.values())


def _totals(per_step, agents):
    return {a: sum(step.get(a, 0.0) for step in per_step) for a in agents}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale", [0.01, 1.0])
def test_team_score_pays_each_partner_its_sides_score_change(seed, scale):
    kwargs = {} if scale == 0.01 else {"reward_scale": scale}
    env = spades_v0.env(reward="team_score", episode="game", **kwargs)
    env.reset(seed=seed)
    per_step, hand_steps, via_last = _play_tracking_rewards(env, seed)
    hands = env.unwrapped.game_record()["hands"]
    assert len(hands) == len(hand_steps) >= 2
    for i, step in enumerate(per_step):
        if i in hand_steps:
            change = hands[hand_steps.index(i)]["score_change"]
            for seat, agent in enumerate(env.possible_agents):
                assert step[agent] == pytest.approx(change[seat % 2] * scale, abs=1e-12)
        else:
            assert not any(step.values()), "rewards arrive only when a hand is scored"
    totals = _totals(per_step, env.possible_agents)
    assert via_last == pytest.approx(totals, abs=1e-9), "last() hands out every reward exactly once"
    final = env.unwrapped.game_record()["scores"]
    for seat, agent in enumerate(env.possible_agents):
        assert totals[agent] == pytest.approx(final[seat % 2] * scale, abs=1e-9)


def test_made_bid_of_five_is_worth_half_a_point():
    found = 0
    for seed in range(60):
        env = spades_v0.raw_env(episode="hand")
        env.reset(seed=seed, options={"dealer": 3})
        for bid in (3, 4, 2, 4):  # seats 0..3: side 0 bids 5 in total, side 1 bids 8
            env.step(52 + bid)
        rng = random.Random(seed)
        while not env.terminations[env.agent_selection]:
            env.step(choose(env.observe(env.agent_selection)["action_mask"], rng))
        taken = env.game.tricks_taken
        if taken[0] + taken[2] == 5:
            found += 1
            assert env.rewards["player_0"] == pytest.approx(0.5, abs=1e-12)
            assert env.rewards["player_2"] == pytest.approx(0.5, abs=1e-12)
            assert env.scores[0] == 50
            side1 = taken[1] + taken[3]
            expected1 = (80 + side1 - 8) if side1 >= 8 else -80
            assert env.rewards["player_1"] == pytest.approx(expected1 / 100, abs=1e-12)
    assert found >= 3


@pytest.mark.parametrize("seed", range(4))
def test_team_diff_is_own_change_minus_the_others(seed):
    env = spades_v0.env(reward="team_diff", episode="game")
    env.reset(seed=seed)
    per_step, hand_steps, via_last = _play_tracking_rewards(env, seed)
    hands = env.unwrapped.game_record()["hands"]
    for idx, i in enumerate(hand_steps):
        change = hands[idx]["score_change"]
        step = per_step[i]
        for seat, agent in enumerate(env.possible_agents):
            own, other = change[seat % 2], change[1 - seat % 2]
            assert step[agent] == pytest.approx((own - other) * 0.01, abs=1e-12)
    for step in per_step:
        if len(step) == 4:
            assert step["player_0"] == pytest.approx(-step["player_1"], abs=1e-12)
            assert step["player_0"] == step["player_2"] and step["player_1"] == step["player_3"]
    assert via_last["player_0"] == pytest.approx(-via_last["player_1"], abs=1e-9)


def test_team_diff_opponents_get_exact_negatives():
    env = spades_v0.raw_env(reward="team_diff", episode="hand")
    env.reset(seed=0)
    rng = random.Random(0)
    while not env.terminations["player_0"]:
        env.step(rng.choice(env.legal_actions()))
    assert env.game_record()["hands"][0]["score_change"] == [-250, -120]
    assert env.rewards["player_0"] == -env.rewards["player_1"]


def test_team_diff_in_cutthroat_is_own_minus_mean_of_others():
    env = spades_v0.env(rules="cutthroat", reward="team_diff", episode="hand")
    env.reset(seed=3)
    per_step, hand_steps, _ = _play_tracking_rewards(env, 3)
    change = env.unwrapped.game_record()["hands"][0]["score_change"]
    step = per_step[hand_steps[0]]
    for seat, agent in enumerate(env.possible_agents):
        others = [c for i, c in enumerate(change) if i != seat]
        assert step[agent] == pytest.approx((change[seat] - sum(others) / 3) * 0.01, abs=1e-12)
    assert sum(step.values()) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_win_reward_is_plus_minus_one_at_the_end(seed):
    env = spades_v0.env(reward="win", episode="game")
    env.reset(seed=seed)
    per_step, hand_steps, via_last = _play_tracking_rewards(env, seed)
    winner = env.unwrapped.game_record()["winner"]
    assert winner in (0, 1)
    final_step = hand_steps[-1]
    for i, step in enumerate(per_step):
        if i != final_step:
            assert not any(step.values())
    for seat, agent in enumerate(env.possible_agents):
        expected = 1.0 if seat % 2 == winner else -1.0
        assert per_step[final_step][agent] == expected
        assert via_last[agent] == expected


def test_win_reward_in_cutthroat():
    env = spades_v0.env(rules="cutthroat", reward="win", episode="game")
    env.reset(seed=1)
    _, _, via_last = _play_tracking_rewards(env, 1)
    winner = env.unwrapped.game_record()["winner"]
    for seat, agent in enumerate(env.possible_agents):
        assert via_last[agent] == pytest.approx(1.0 if seat == winner else -1.0 / 3)


@pytest.mark.parametrize("scheme", ["team_score", "team_diff"])
def test_win_bonus_is_added_at_the_end_of_the_game(scheme):
    totals = {}
    for bonus in (0.0, 2.0):
        env = spades_v0.env(reward=scheme, win_bonus=bonus, episode="game")
        env.reset(seed=8)
        per_step, hand_steps, via_last = _play_tracking_rewards(env, 8)
        totals[bonus] = (per_step, hand_steps, env.unwrapped.game_record()["winner"])
    (s0, h0, w0), (s2, h2, w2) = totals[0.0], totals[2.0]
    assert h0 == h2 and w0 == w2 and w0 in (0, 1)
    for i, (a, b) in enumerate(zip(s0, s2)):
        assert a.keys() == b.keys()
        for agent in a:
            seat = int(agent.split("_")[1])
            extra = 2.0 * (1 if seat % 2 == w0 else -1) if i == h0[-1] else 0.0
            assert b[agent] == pytest.approx(a[agent] + extra, abs=1e-12)


@pytest.mark.parametrize("kwargs", [{"reward": "score"}, {"reward": "win", "win_bonus": 1.0},
                                    {"reward_scale": 0}, {"shaping": -1.0}])
def test_bad_reward_settings_raise(kwargs):
    with pytest.raises(spades_env.RewardError) as info:
        spades_v0.env(**kwargs)
    assert list(kwargs)[-1] in str(info.value) or str(list(kwargs.values())[0]) in str(info.value)


def test_unknown_reward_scheme_names_it():
    with pytest.raises(ValueError, match="'fancy'"):
        spades_v0.raw_env(reward="fancy")


@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_single_hand_episode_ends_in_termination(label, kwargs):
    env = spades_v0.env(episode="hand", **kwargs)
    env.reset(seed=0)
    rng = random.Random(17)
    done_flags = []
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            done_flags.append((term, trunc))
            assert info["hands_played"] == 1
            env.step(None)
        else:
            env.step(choose(obs["action_mask"], rng))
    assert done_flags == [(True, False)] * env.unwrapped.rules.players
    assert env.unwrapped.game.hand_number == 1
    assert len(env.unwrapped.game_record()["hands"]) == 1


def test_max_hands_in_a_game_episode_is_a_truncation():
    truncated = 0
    for seed in range(12):
        env = spades_v0.env(episode="game", max_hands=2)
        env.reset(seed=seed)
        flags = []
        rng = random.Random(seed)
        infos = []
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if term or trunc:
                flags.append((term, trunc))
                infos.append(info)
                env.step(None)
            else:
                env.step(choose(obs["action_mask"], rng, "low"))
        rec = env.unwrapped.game_record()
        natural = game_winner(env.unwrapped.rules, rec["scores"]) is not None
        if natural:
            assert set(flags) == {(True, False)}
            assert not rec["truncated"]
        else:
            assert len(rec["hands"]) == 2
            assert set(flags) == {(False, True)}
            assert rec["truncated"]
            truncated += 1
        assert len(rec["hands"]) <= 2
    assert truncated >= 3


@pytest.mark.parametrize("seed", range(3))
def test_cutthroat_players_score_alone(seed):
    env = spades_v0.env(rules="cutthroat", reward="team_score", episode="game")
    env.reset(seed=seed)
    per_step, hand_steps, _ = _play_tracking_rewards(env, seed)
    hands = env.unwrapped.game_record()["hands"]
    distinct = 0
    for idx, i in enumerate(hand_steps):
        change = hands[idx]["score_change"]
        assert len(change) == 4
        for seat, agent in enumerate(env.possible_agents):
            assert per_step[i][agent] == pytest.approx(change[seat] * 0.01, abs=1e-12)
        distinct += change[0] != change[2]
    assert distinct >= 1, "partners opposite each other score separately"


# ---------------------------------------------------------------------------------------------
# Game records and replay
# ---------------------------------------------------------------------------------------------

HAND_KEYS = {"dealer", "deal", "bids", "blind", "passes", "tricks", "tricks_taken", "score_change",
             "bags", "scores"}


@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_game_record_is_json_and_complete(label, kwargs):
    env = play_game(dict(kwargs, episode="game"), seed=13, style="low")
    raw = env.unwrapped
    rec = raw.game_record()
    assert json.loads(json.dumps(rec)) == rec
    assert rec["rules"] == raw.rules.to_dict()
    n = raw.rules.players
    per_hand = 4 * raw.rules.deck_ranks // n          # 13 (17 with three players), 6 in the short deck
    assert rec["winner"] == raw.game.winner and rec["winner"] is not None
    prev_dealer = None
    for hand in rec["hands"]:
        assert HAND_KEYS <= set(hand)
        assert len(hand["deal"]) == n and all(len(h) == per_hand for h in hand["deal"])
        assert all(isinstance(c, str) for h in hand["deal"] for c in h)
        assert len(hand["bids"]) == n and all(isinstance(b, int) for b in hand["bids"])
        assert len(hand["blind"]) == n
        assert len(hand["tricks"]) == per_hand
        for trick in hand["tricks"]:
            assert set(trick) >= {"leader", "cards", "winner"}
            assert len(trick["cards"]) == n
        assert sum(hand["tricks_taken"]) == per_hand
        if raw.rules.signals:                          # one message a seat, before every bid
            assert all(0 <= m < raw.rules.signals for m in hand["messages"]) and len(hand["messages"]) == n
            assert [a for _, a in hand["actions"][:n]] == [68 + m for m in
                                                           (hand["messages"][(hand["dealer"] + 1 + k) % n]
                                                            for k in range(n))]
        else:
            assert "messages" not in hand
        sides = raw.rules.num_sides
        assert len(hand["score_change"]) == len(hand["bags"]) == len(hand["scores"]) == sides
        if prev_dealer is not None and raw.rules.fixed_dealer is None:
            assert hand["dealer"] == (prev_dealer + 1) % n, "the deal passes to the left"
        prev_dealer = hand["dealer"]
    assert rec["scores"] == rec["hands"][-1]["scores"] == raw.scores


def test_game_record_mid_game_has_the_hand_in_progress():
    env = spades_v0.env()
    env.reset(seed=2)
    advance(env, random.Random(2), 9)
    rec = env.unwrapped.game_record()
    json.dumps(rec)
    assert rec["winner"] is None
    hand = rec["hands"][-1]
    assert hand["complete"] is False
    assert sum(b is not None for b in hand["bids"]) == 4
    assert len(hand["tricks"]) == 1
    assert len(hand["actions"]) == 9


def test_game_record_lists_blind_nil_and_passes():
    env = spades_v0.raw_env(episode="hand", blind_nil_pass=2)
    env.reset(seed=0, options={"scores": [0, 300], "dealer": 3})
    env.step(66)  # seat 0: blind nil
    rng = random.Random(1)
    run_loop(env, rng)
    hand = env.game_record()["hands"][0]
    assert hand["blind"][0] is True and hand["bids"][0] == 0
    assert len(hand["passes"]) == 4
    assert [(p["from"], p["to"]) for p in hand["passes"]] == [(2, 0), (2, 0), (0, 2), (0, 2)]
    assert all(isinstance(p["card"], str) for p in hand["passes"])


@pytest.mark.parametrize("label,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
@pytest.mark.parametrize("mid_game", [False, True])
def test_replay_reproduces_the_record(label, kwargs, mid_game):
    env = spades_v0.env(episode="game", **kwargs)
    env.reset(seed=17)
    if mid_game:
        advance(env, random.Random(17), 150, "low")
    else:
        run_loop(env, random.Random(17), "low")
    rec = env.unwrapped.game_record()
    replayed = spades_env.replay(json.loads(json.dumps(rec)))
    assert replayed.game_record() == rec
    assert replayed.scores == env.unwrapped.scores
    assert replayed.bags == env.unwrapped.bags


def _finished_record():
    return play_game({"rules": "standard", "episode": "game"}, seed=3, style="low").unwrapped.game_record()


@pytest.mark.parametrize("where", ["hand_score_change", "hand_scores", "hand_bags"])
def test_replay_rejects_a_tampered_hand_score(where):
    rec = _finished_record()
    assert len(rec["hands"]) >= 2
    hand = rec["hands"][0]
    key = where[len("hand_"):]
    hand[key][0] += 1
    with pytest.raises(spades_env.ReplayError):
        spades_env.replay(rec)


@pytest.mark.parametrize("key", ["scores", "bags", "winner"])
def test_replay_rejects_a_tampered_final_result(key):
    rec = _finished_record()
    if key == "winner":
        rec["winner"] = 1 - rec["winner"]
    else:
        rec[key][0] = (rec[key][0] + 1) % 10
    with pytest.raises(spades_env.ReplayError):
        spades_env.replay(rec)


@pytest.mark.parametrize("what", ["bids", "tricks_taken", "trick_winner"])
def test_replay_rejects_a_record_contradicting_its_actions(what):
    rec = _finished_record()
    hand = rec["hands"][0]
    if what == "bids":
        hand["bids"][0] = hand["bids"][0] % 13 + 1
    elif what == "tricks_taken":
        hand["tricks_taken"][0] += 1
    else:
        hand["tricks"][0]["winner"] = (hand["tricks"][0]["winner"] + 1) % 4
    with pytest.raises(spades_env.ReplayError):
        spades_env.replay(rec)


def test_replay_rejects_what_is_not_a_record():
    with pytest.raises(spades_env.ReplayError):
        spades_env.replay({"hello": 1})
    rec = _finished_record()
    del rec["hands"]
    with pytest.raises(spades_env.ReplayError):
        spades_env.replay(rec)


def test_replay_rejects_a_record_whose_deal_does_not_fit_its_actions():
    rec = _finished_record()
    deal = rec["hands"][0]["deal"]
    deal[0][0], deal[1][0] = deal[1][0], deal[0][0]
    # A clear error either way (ReplayError would be the more consistent one).
    with pytest.raises((spades_env.ReplayError, spades_env.IllegalActionError)):
        spades_env.replay(rec)


PETTINGZOO_PRIVATE_STATE = ("_prev_obs", "_prev_info", "_terminated", "_illegal_value", "_has_reset", "_has_updated")


def test_fast_wrappers_keep_no_state_in_pettingzoo_private_attributes():
    """Our wrappers own their state: with PettingZoo's private attributes gone from every layer
    the order checks, an illegal move's ending and whole games behave as before."""
    env = spades_v0.env()
    layers, layer = [], env
    while hasattr(layer, "env"):
        layers.append(layer)
        layer = layer.env
    for layer in layers:
        for name in PETTINGZOO_PRIVATE_STATE:
            layer.__dict__.pop(name, None)
    with pytest.raises(AttributeError):
        env.agents
    env.reset(seed=0)
    advance(env, random.Random(0), 9)
    offender = env.agent_selection
    env.step(int(np.flatnonzero(env.observe(offender)["action_mask"] == 0)[0]))
    assert env.rewards[offender] == -1.0 and all(env.terminations.values())
    for agent in env.agent_iter():
        env.step(None)
    env.reset(seed=1)
    rng = random.Random(1)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert env.agents == []
    for layer in layers:
        assert not set(PETTINGZOO_PRIVATE_STATE) & set(layer.__dict__), type(layer).__name__


def test_raw_env_encoder_is_the_observation_encoder_it_fills():
    env = spades_v0.raw_env()
    env.reset(seed=0)
    seat = env.agent_name_mapping[env.agent_selection]
    buffer = env.encoder.buffer
    assert np.array_equal(env.observe(env.agent_selection)["observation"], buffer.take(env.encoder.gather[seat]))


@pytest.mark.parametrize("preset", ["standard", "basic", "tournament", "openspiel", "cutthroat"])
def test_observation_bounds_are_finite_and_hold(preset):
    """The observation space has finite bounds derived from the rules (no gymnasium warning), and
    every observation of random games, from 0-0 and from the extreme starting scores the rules
    allow (just inside the mercy score and the target), lies inside."""
    import random as _random

    import numpy as np

    env = spades_v0.raw_env(rules=preset, episode="game")
    space = env.observation_space(env.possible_agents[0])["observation"]
    assert np.isfinite(space.low).all() and np.isfinite(space.high).all()
    rng = _random.Random(0)
    sides = 2 if env.rules.partnerships else env.rules.players
    top, bottom = env.rules.target_score - 1, env.rules.mercy_score + 1
    for start in ([0] * sides, [top] + [bottom] * (sides - 1), [bottom] * sides):
        env.reset(seed=rng.randrange(1000), options={"scores": start})
        for step, agent in enumerate(env.agent_iter(max_iter=400)):
            obs, _, term, trunc, _ = env.last()
            assert space.contains(obs["observation"]), [
                (i, float(v)) for i, v in enumerate(obs["observation"])
                if not space.low[i] <= v <= space.high[i]][:5]
            if term or trunc:
                env.step(None)
                continue
            env.step(rng.choice(np.flatnonzero(obs["action_mask"]).tolist()))
