"""Every agent at the tables of issue 74: the free signal (``signals``: actions 68 + m, its own
phase) and the short deck (``deck_ranks``). Whole games of ``short`` and ``short_signals`` played
legally by every agent; the heuristic sends message 0, bids at most the hand's tricks and values
a short hand in its own tricks; its C and torch twins decide as it does there; the search samples
its worlds from the deck's cards only; a network with 68 + N outputs chooses its messages, one
with 68 plays the signals table from its observation's prefix and sends message 0."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import agents
from agents.batched_heuristic import choose_actions as batched_actions
from agents.heuristic import choose_action, estimate_tricks
from agents.heuristic_decisions import deck_mask
from agents.networks import PolicyNet
from agents.neural import NeuralAgent
from agents.search import SearchAgent
from agents.search_worlds import Knowledge
from spades_env import spades_v0
from spades_env.cards import mask_to_cards
from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, PHASE_PLAY, PHASE_SIGNAL, SIGNAL_ACTION_BASE
from spades_env.native import unavailable_reason
from spades_env.observation import decode_observation, layout_for
from spades_env.rules import make_rules

NATIVE = unavailable_reason() is None
needs_native = pytest.mark.skipif(not NATIVE, reason=f"no native library: {unavailable_reason()}")
SHORT_PRESETS = ("short", "short_signals")


def play_game(rules, players, seed, watch=None, max_hands=None):
    """One whole game (``max_hands`` to shorten it) with ``players[seat]``; every action is checked
    against the mask; ``watch(env, seat, obs, action)`` sees each decision. Returns the env."""
    env = spades_v0.raw_env(rules=rules, episode="game", **({"max_hands": max_hands} if max_hands else {}))
    env.reset(seed=seed)
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        seat = env.agent_name_mapping[name]
        action = int(players[seat].act(obs, info))
        assert obs["action_mask"][action], (rules, seat, action)
        if watch is not None:
            watch(env, seat, obs, action)
        env.step(action)
    return env


def count_actions(env_rules: str, players, seed, max_hands=None):
    """Messages, bids and cards chosen in one game."""
    seen = {"messages": 0, "bids": [], "cards": 0}

    def watch(env, seat, obs, action):
        if action >= SIGNAL_ACTION_BASE:
            seen["messages"] += 1
        elif BID_ACTION_BASE <= action < BLIND_NIL_ACTION:
            seen["bids"].append(action - BID_ACTION_BASE)
        elif action < 52:
            seen["cards"] += 1
    env = play_game(env_rules, players, seed, watch, max_hands)
    return env, seen


# ---------------------------------------------------------------------- whole games, every agent
AGENT_SPECS = [("random", {}), ("heuristic", {"backend": "python"}), ("search_v1", {"backend": "python", "worlds": 6}),
               ("search", {"backend": "python", "worlds": 4})]
if NATIVE:
    AGENT_SPECS += [("heuristic", {"backend": "native"}), ("search_v1", {"backend": "native", "worlds": 40}),
                    ("search", {"backend": "native", "worlds": 20})]


@pytest.mark.parametrize("rules", SHORT_PRESETS)
@pytest.mark.parametrize("name, options", AGENT_SPECS, ids=[f"{n}-{o.get('backend', '')}" for n, o in AGENT_SPECS])
def test_every_agent_plays_whole_short_games_legally(rules, name, options):
    r = make_rules(rules)
    slow = name.startswith("search") and options.get("backend") == "python"
    players = [agents.make(name, seed=seat, **options) for seat in range(4)]
    env, seen = count_actions(rules, players, seed=7, max_hands=2 if slow else None)
    assert env.game.game_over or env.game.hand_number >= 2
    assert seen["cards"] and seen["bids"] and max(seen["bids"]) <= r.tricks_per_hand
    assert seen["messages"] == (4 * env.game.hands_completed if r.signals else 0)
    record = env.game_record()
    assert all(len(hand["actions"]) >= 4 * r.tricks_per_hand for hand in record["hands"] if hand.get("complete"))


@pytest.mark.parametrize("rules", SHORT_PRESETS)
def test_the_heuristic_sends_message_0_and_bids_within_the_hand(rules):
    r = make_rules(rules)
    sent, bids = [], []

    def watch(env, seat, obs, action):
        if action >= SIGNAL_ACTION_BASE:
            sent.append(action - SIGNAL_ACTION_BASE)
        elif BID_ACTION_BASE <= action < BLIND_NIL_ACTION:
            bids.append(action - BID_ACTION_BASE)
    for seed in range(3):
        play_game(rules, [agents.make("heuristic", backend="python") for _ in range(4)], seed, watch)
    assert bids and max(bids) <= r.tricks_per_hand and min(bids) >= 1          # nil is rare on a short deck
    assert (sent and set(sent) == {0}) if r.signals else not sent


def test_the_heuristic_reads_no_message():
    """The same hand with other messages sent: the same bids and cards (it ignores them)."""
    env = spades_v0.raw_env(rules="short_signals", episode="hand")
    bot = agents.make("heuristic", backend="python")
    plays = []
    for messages in ((0, 0, 0, 0), (3, 1, 2, 0)):
        env.reset(seed=5)
        chosen = []
        for name in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            if env.game.phase == PHASE_SIGNAL:
                env.step(SIGNAL_ACTION_BASE + messages[env.game.to_act])
                continue
            chosen.append(bot.act(obs))
            env.step(chosen[-1])
        plays.append(chosen)
    assert plays[0] == plays[1]


def test_short_deck_estimates_are_within_the_hand_and_the_full_deck_is_unchanged():
    rng = random.Random(0)
    short = mask_to_cards(deck_mask(4, 6))
    full = list(range(52))
    for _ in range(300):
        hand = rng.sample(short, 6)
        value = estimate_tricks(hand, 4, 6)
        assert 0.0 <= value <= 6.0
        assert value <= estimate_tricks(hand, 4) or value == 0.0        # scaled down from the full count
        big = rng.sample(full, 13)
        assert estimate_tricks(big, 4, 13) == estimate_tricks(big, 4)
    # The six top cards of spades and hearts take their tricks: the estimate says most of them.
    top = [c for c in short if c // 13 == 3][:6]
    assert 4.0 <= estimate_tricks(top, 4, 6) <= 6.0
    assert deck_mask(4, 13) == (1 << 52) - 1 and deck_mask(3, 17) == (1 << 52) - 2
    assert mask_to_cards(deck_mask(4, 2)) == [11, 12, 24, 25, 37, 38, 50, 51]


# ---------------------------------------------------------------------- the twins decide alike
def _rows(rules: str, games: int, seed: int = 0):
    """Observations and masks of every decision of ``games`` heuristic games (some moves random)."""
    rng = random.Random(seed)
    bot = agents.make("heuristic", backend="python")
    obs_rows, mask_rows = [], []

    def watch(env, seat, obs, action):
        obs_rows.append(obs["observation"].copy())
        mask_rows.append(obs["action_mask"].copy())

    class Mixed:
        def act(self, obs, info=None):
            legal = np.flatnonzero(obs["action_mask"])
            return int(rng.choice(legal)) if rng.random() < 0.2 else bot.act(obs)
    for game in range(games):
        play_game(rules, [Mixed() for _ in range(4)], seed + game, watch)
    return np.stack(obs_rows), np.stack(mask_rows)


@pytest.mark.parametrize("rules", SHORT_PRESETS + ("standard+signals",))
def test_the_batched_and_native_heuristics_decide_as_the_heuristic(rules):
    preset, _, extra = rules.partition("+")
    r = make_rules(preset, **({"signals": 3} if extra else {}))
    obs, masks = _rows(r, games=3 if preset != "standard" else 1)
    expected = [choose_action(decode_observation(o, signals=r.signals), np.flatnonzero(m).tolist())
                for o, m in zip(obs, masks)]
    fast = batched_actions(torch.from_numpy(obs), torch.from_numpy(masks), min_batch=1)
    assert fast.tolist() == expected
    if r.signals:
        signal_rows = [i for i, m in enumerate(masks) if m[SIGNAL_ACTION_BASE:].any()]
        assert signal_rows and all(expected[i] == SIGNAL_ACTION_BASE for i in signal_rows)
    if NATIVE:
        from agents.native_heuristic import choose_actions as native_actions
        assert native_actions(obs, masks).tolist() == expected
        native = agents.make("heuristic", backend="native")
        assert [native.act({"observation": o, "action_mask": m}) for o, m in zip(obs, masks)] == expected


# ---------------------------------------------------------------------- the search's worlds
def _play_positions(rules: str, count: int, seed: int = 3):
    """Observations of the seat to play at ``count`` card decisions of heuristic short games."""
    found = []

    def watch(env, seat, obs, action):
        if env.game.phase == PHASE_PLAY and obs["action_mask"][:52].sum() > 1 and len(found) < count:
            found.append({"observation": obs["observation"].copy(), "action_mask": obs["action_mask"].copy()})
    play_game(rules, [agents.make("heuristic") for _ in range(4)], seed, watch, max_hands=3)
    return found


@pytest.mark.parametrize("rules", SHORT_PRESETS)
def test_the_search_samples_its_worlds_from_the_deck_only(rules):
    r = make_rules(rules)
    deck = deck_mask(4, r.tricks_per_hand)
    agent = SearchAgent(seed=0, backend="python", worlds=30)
    positions = _play_positions(rules, 6)
    assert positions
    searched = 0
    for obs in positions:
        view = decode_observation(obs["observation"], signals=r.signals)
        knowledge = Knowledge(view)
        assert knowledge.unseen & ~deck == 0 and knowledge.unseen
        worlds = agent.draw_worlds(view, agent._rules(view), 30, random.Random(1))
        for hands, _ in worlds:
            dealt = 0
            for hand in hands:
                assert hand & ~deck == 0
                assert dealt & hand == 0
                dealt |= hand
            assert [h.bit_count() for h in hands[1:]] == [knowledge.sizes[s] for s in (1, 2, 3)]
        if NATIVE:
            native = SearchAgent(seed=0, backend="native", worlds=50)
            action = native.act(obs)
            assert obs["action_mask"][action]
            assert native.last_info.get("fallback", "one candidate") == "one candidate", native.last_info
            searched += native.last_info.get("backend") == "native"
    assert searched or not NATIVE            # the C search ran (not a fallback) at some position


@needs_native
def test_the_native_sampler_deals_only_deck_cards():
    """spades_search_sample's worlds (the hands the C play-outs receive) hold only deck cards."""
    from agents import native_search
    from agents.native_search import _library, _ptr, position_array, rules_array
    r = make_rules("short")
    deck = deck_mask(4, r.tricks_per_hand)
    obs = _play_positions("short", 1)[0]
    view = decode_observation(obs["observation"])
    k = Knowledge(view)
    seats = k.hidden_seats
    caps = np.array([k.sizes[s] - k.known[s].bit_count() for s in seats], dtype=np.int64)
    voids = np.array([k.voids[s] for s in seats], dtype=np.int64)
    known = np.array(k.known, dtype=np.int64)
    hidden = np.array(seats, dtype=np.int64)
    hands = np.zeros((200, 4), dtype=np.int64)
    likelihood = np.ones(200)
    infer = np.zeros((1, native_search.INFER_SIZE), dtype=np.int64)
    rules_np, position = rules_array(r), position_array(view, r)
    code = _library().spades_search_sample(_ptr(rules_np), _ptr(position), k.hand, k.free(), _ptr(hidden), _ptr(caps),
                                           _ptr(voids), _ptr(known), len(seats), 200, 11, _ptr(infer), 0, 1.0, 0.05,
                                           _ptr(hands), _ptr(likelihood))
    assert code == 0
    assert not np.any(hands & ~np.int64(deck)) and set((hands[:, 1] | hands[:, 2] | hands[:, 3]).tolist()) != {0}
    # A free card outside the deck is refused, never dealt.
    outside = k.free() | 1                     # the two of clubs: not in the short deck
    caps[0] += 1
    code = _library().spades_search_sample(_ptr(rules_np), _ptr(position), k.hand, outside, _ptr(hidden), _ptr(caps),
                                           _ptr(voids), _ptr(known), len(seats), 1, 11, _ptr(infer), 0, 1.0, 0.05,
                                           _ptr(hands), _ptr(likelihood))
    assert code == -10


# ---------------------------------------------------------------------- neural
def _policy(rules, signals: int) -> PolicyNet:
    torch.manual_seed(0)
    return PolicyNet(layout_for(rules).obs_size if not signals else layout_for(make_rules(rules, signals=signals)).obs_size,
                     hidden=32, layers=1, head_hidden=16, signals=signals)


def test_a_network_with_message_outputs_chooses_its_messages():
    r = make_rules("short_signals")
    agent = NeuralAgent(policy=_policy(make_rules("short"), r.signals), greedy=False, seed=0)
    sent = []

    def watch(env, seat, obs, action):
        if action >= SIGNAL_ACTION_BASE:
            sent.append(action)
            probabilities = agent.action_probabilities(obs)
            assert probabilities.shape == (r.num_actions,) and probabilities[:SIGNAL_ACTION_BASE].sum() == 0
    play_game("short_signals", [agent] * 4, 2, watch, max_hands=3)
    assert len(set(sent)) > 1                   # sampled from its own message head: not a fixed message


def test_a_network_without_messages_plays_a_signals_table_from_the_prefix():
    plain = _policy(make_rules("short"), 0)
    agent = NeuralAgent(policy=plain)
    r = make_rules("short_signals")
    size = layout_for(make_rules("short")).obs_size
    checked = []

    def watch(env, seat, obs, action):
        mask = obs["action_mask"]
        if mask[SIGNAL_ACTION_BASE:].any():
            assert action == SIGNAL_ACTION_BASE
            probabilities = agent.action_probabilities(obs)
            assert probabilities[SIGNAL_ACTION_BASE] == 1.0
        else:
            alone = NeuralAgent(policy=plain).act({"observation": obs["observation"][:size], "action_mask": mask[:68]})
            assert action == alone
            checked.append(action)
    play_game("short_signals", [agent] * 4, 4, watch, max_hands=2)
    assert checked
    rows = _rows(r, games=1)
    batch = [{"observation": o, "action_mask": m} for o, m in zip(*rows)]
    assert agent.act_batch(batch) == [agent.act(o) for o in batch]


def test_the_shipped_model_plays_a_standard_table_with_signals():
    """A shipped model (68 outputs, the standard observation) at a standard table with messages."""
    agent = agents.make("neural")
    env, seen = count_actions(make_rules("standard", signals=2), [agent] * 4, seed=1, max_hands=1)
    assert seen["messages"] == 4 and seen["cards"] == 52


def test_a_network_refuses_a_table_it_cannot_read():
    from agents.neural import ModelError
    agent = NeuralAgent(policy=_policy(make_rules("standard"), 0))
    env = spades_v0.raw_env(rules="short")
    env.reset(seed=0)
    obs, *_ = env.last()
    with pytest.raises(ModelError, match="this model expects"):
        agent.act(obs)
    two = NeuralAgent(policy=_policy(make_rules("short"), 2))
    env = spades_v0.raw_env(rules="short_signals")       # 4 messages for a head of 2
    env.reset(seed=0)
    obs, *_ = env.last()
    with pytest.raises(ModelError, match="this model expects"):
        two.act(obs)


def test_the_searchs_play_out_plays_a_hand_from_its_signal_phase():
    """``play_out`` sends the messages, bids and plays: a hand dealt under signals ends scored."""
    from agents.search import hand_value, play_out
    from spades_env.game import PHASE_HAND_OVER, PHASE_GAME_OVER, SpadesGame

    game = SpadesGame(make_rules("short_signals"), 1)
    assert game.phase == PHASE_SIGNAL
    play_out(game)
    assert game.phase in (PHASE_HAND_OVER, PHASE_GAME_OVER)
    assert all(m >= 0 for m in game.messages)
    hand_value(game, 0)
