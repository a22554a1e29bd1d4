"""The two rules options of issue 74 in the readable engine: the free signal (``signals: N``) and
the short deck (``deck_ranks``). Each rule of docs/rules.md has a test here; the last ones pin
that with both options off every observation, state, mask and record is byte for byte what it
was before the options existed (golden hashes computed at the commit before them)."""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spades_env import spades_v0
from spades_env.cards import card_str, mask_to_cards, parse_card
from spades_env.env import mask_array
from spades_env.game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, NIL_ACTION, PHASE_BIDDING,
                             PHASE_BLIND_DECISION, PHASE_NAMES, PHASE_ONE_HOT_WIDTH, PHASE_PLAY, PHASE_SIGNAL,
                             PHASES_DONE, SIGNAL_ACTION_BASE, DealError, IllegalActionError, SpadesGame,
                             action_str, deck_cards, parse_deal)
from spades_env.observation import decode_observation, layout_for, layout_for_size, view_from_game
from spades_env.record import ReplayError, replay
from spades_env.render import render_table
from spades_env.rules import RulesError, make_rules
from spades_env.scoring import score_hand
from spades_env.single_agent import SpadesSingleAgentEnv
from spades_env.starts import StartError, sample_starts
from spades_env.symmetries import Relabelling, SymmetryError, symmetries

SHORT, SIGNALS = make_rules("short"), make_rules("short_signals")
TRAILING_SIGNALS = make_rules("standard", signals=3)      # with scores [0, 150]: side 0 may bid blind nil


def play_random(env, seed: int, max_steps: int = 10_000) -> list[int]:
    """Seeded uniform play through the AEC loop; the actions taken."""
    rng = random.Random(seed)
    taken = []
    for agent in env.agent_iter(max_steps):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        taken.append(action)
    return taken


# --------------------------------------------------------------------------- the names
def test_the_new_names():
    assert PHASE_SIGNAL == 6 and PHASE_NAMES[PHASE_SIGNAL] == "signal" and len(PHASE_NAMES) == 7
    assert PHASE_ONE_HOT_WIDTH == 6 and PHASE_SIGNAL not in PHASES_DONE
    assert SIGNAL_ACTION_BASE == 68 and action_str(68) == "message 0" and action_str(71) == "message 3"
    assert (SIGNALS.num_actions, SHORT.num_actions, make_rules("standard").num_actions) == (72, 68, 68)
    assert (SHORT.tricks_per_hand, SHORT.cards_per_hand, SHORT.lowest_rank, SHORT.max_bid) == (6, 6, 7, 6)
    assert make_rules("cutthroat", players=3).max_bid == 13           # 17 cards, bids still up to 13


def test_rules_refuse_what_the_options_cannot_do():
    for settings_, words in [({"signals": 17}, "signals=17"), ({"signals": -1}, "signals=-1"),
                             ({"deck_ranks": 1}, "deck_ranks=1"), ({"deck_ranks": 14}, "deck_ranks=14"),
                             ({"deck_ranks": 6, "two_of_clubs_leads": True}, "two_of_clubs_leads"),
                             ({"deck_ranks": 6, "min_team_bid": 7}, "min_team_bid=7")]:
        with pytest.raises(RulesError, match=words):
            make_rules("standard", **settings_)
    with pytest.raises(RulesError, match="players=4"):
        make_rules("cutthroat", players=3, deck_ranks=6)


def test_to_dict_shows_the_options_only_when_set():
    assert "signals" not in make_rules("standard").to_dict() and "deck_ranks" not in make_rules("standard").to_dict()
    d = SIGNALS.to_dict()
    assert d["signals"] == 4 and d["deck_ranks"] == 6 and make_rules(d) == SIGNALS
    assert make_rules(make_rules("standard").to_dict()) == make_rules("standard")


# --------------------------------------------------------------------------- the short deck
def test_the_short_deck_deals_its_cards_only():
    deck = deck_cards(SHORT)
    assert len(deck) == 24 and [card_str(c) for c in deck[:6]] == ["9C", "TC", "JC", "QC", "KC", "AC"]
    for seed in range(20):
        g = SpadesGame(SHORT, seed)
        assert all(h.bit_count() == 6 for h in g.hands)
        assert sum(g.hands) == g.deck_mask == sum(1 << c for c in deck)
    assert len(deck_cards(make_rules("standard", deck_ranks=2))) == 8
    assert len(deck_cards(make_rules("standard"))) == 52 and len(deck_cards(make_rules("cutthroat", players=3))) == 51


def test_a_given_deal_must_use_the_decks_cards():
    good = [["9S", "TS", "JS", "QS", "KS", "AS"], [f"{r}H" for r in "9TJQKA"], [f"{r}D" for r in "9TJQKA"],
            [f"{r}C" for r in "9TJQKA"]]
    assert parse_deal(good, SHORT)[0] == sum(1 << parse_card(c) for c in good[0])
    bad = [list(h) for h in good]
    bad[2][0] = "2C"
    with pytest.raises(DealError, match=r"seat 2: 2C is not in the short deck \(deck_ranks=6: ranks 9 to A"):
        parse_deal(bad, SHORT)
    with pytest.raises(DealError, match="seat 0 has 13 cards, expected 6"):
        parse_deal([[c + s for c in "23456789TJQKA"] for s in "SHDC"], SHORT)
    env = spades_v0.raw_env(rules="short")
    with pytest.raises(DealError, match="not in the short deck"):
        env.reset(options={"deal": bad})


def test_bids_run_to_the_tricks_of_a_hand_and_a_bid_above_is_refused():
    g = SpadesGame(SHORT, 3)
    assert g.phase == PHASE_BIDDING
    assert g.legal_actions() == list(range(BID_ACTION_BASE, BID_ACTION_BASE + 7))
    with pytest.raises(IllegalActionError, match=r"bid 7; a hand has 6 tricks \(deck_ranks=6\): bids are 0..6"):
        g.apply(BID_ACTION_BASE + 7)
    with pytest.raises(IllegalActionError, match="no signal"):
        g.apply(SIGNAL_ACTION_BASE)


def test_a_short_deck_hand_scored_as_worked_by_hand():
    """docs/rules.md's worked example. North holds the six spades and leads them all; the others
    are void in spades and discard. Bids: North 4, East nil, South 1, West 2; North-South carry
    4 bags. North-South: contract 5, 6 tricks: 50 + 1 overtrick, the 5th bag reaches the limit
    (5 in the short preset): -50, bags back to 0: +1. East-West: East's nil kept +50, West's 2
    set -20: +30."""
    deal = [["9S", "TS", "JS", "QS", "KS", "AS"], [f"{r}H" for r in "9TJQKA"], [f"{r}D" for r in "9TJQKA"],
            [f"{r}C" for r in "9TJQKA"]]
    env = spades_v0.raw_env(rules="short", episode="hand")
    env.reset(seed=0, options={"deal": deal, "dealer": 3, "bags": [4, 0]})
    for bid in (4, 0, 1, 2):                       # North (the first bidder) .. West
        env.step(BID_ACTION_BASE + bid)
    assert env.game.phase == PHASE_PLAY and env.game.to_act == 0
    tricks = 0
    while env.agents and not env.terminations[env.agent_selection]:
        env.step(env.legal_actions()[-1] if env.game.to_act == 0 else env.legal_actions()[0])
        tricks += not env.game.trick_cards
    hand = env.game_record()["hands"][0]
    assert tricks == 6 and hand["tricks_taken"] == [6, 0, 0, 0] and len(hand["tricks"]) == 6
    assert hand["score_change"] == [1, 30] and hand["bags"] == [0, 0] and hand["bag_penalties"] == [1, 0]
    assert [r["contract_points"] for r in hand["results"]] == [50, -20]
    assert [r["nil_points"] for r in hand["results"]] == [0, 50]
    assert score_hand(SHORT, [4, 0, 1, 2], [False] * 4, [6, 0, 0, 0], [0, 0], [4, 0])[0].points == 1
    assert env.rewards == pytest.approx({"player_0": 0.01, "player_1": 0.3, "player_2": 0.01, "player_3": 0.3})


def test_real_starts_refuse_the_short_deck_by_name():
    with pytest.raises(StartError, match="deck_ranks=8 .a short deck"):
        sample_starts("real", 2, 0, rules=make_rules("standard", deck_ranks=8))
    env = spades_v0.raw_env(rules="short")
    with pytest.raises(DealError, match="deck_ranks=6"):
        env.reset(seed=0, options={"start": "real"})
    assert sample_starts("real", 2, 0, rules=make_rules("standard", signals=2))[0].shape == (2, 2)


# --------------------------------------------------------------------------- the free signal
@pytest.mark.parametrize("dealer", range(4))
def test_every_seat_signals_once_in_bidding_order_then_the_bidding_starts(dealer):
    g = SpadesGame(SIGNALS, 5, dealer=dealer)
    order = [(dealer + 1 + k) % 4 for k in range(4)]
    sent = [3, 1, 0, 2]
    for seat, message in zip(order, sent):
        assert g.phase == PHASE_SIGNAL and g.to_act == seat
        assert g.legal_mask() == 0b1111 << SIGNAL_ACTION_BASE
        g.apply(SIGNAL_ACTION_BASE + message)
    assert g.phase == PHASE_BIDDING and g.to_act == order[0]
    assert [g.messages[s] for s in order] == sent
    assert g.legal_actions() == list(range(BID_ACTION_BASE, BID_ACTION_BASE + 7))
    assert [a for _, a in g.actions] == [SIGNAL_ACTION_BASE + m for m in sent]


def test_messages_reset_every_hand_and_the_record_names_them():
    env = spades_v0.raw_env(rules="short_signals")
    env.reset(seed=8)
    play_random(env, 8)
    rec = env.game_record()
    assert len(rec["hands"]) >= 2
    for hand in rec["hands"]:
        first = (hand["dealer"] + 1) % 4
        assert [a for _, a in hand["actions"][:4]] == [68 + hand["messages"][(first + k) % 4] for k in range(4)]
        assert [s for s, _ in hand["actions"][:4]] == [(first + k) % 4 for k in range(4)]
    assert rec["rules"]["signals"] == 4 and rec["rules"]["deck_ranks"] == 6
    assert replay(rec).game_record() == rec
    tampered = json.loads(json.dumps(rec))
    tampered["hands"][0]["messages"][0] = (tampered["hands"][0]["messages"][0] + 1) % 4
    with pytest.raises(ReplayError, match="messages"):
        replay(tampered)
    for seat, action in rec["hands"][0]["actions"][:4]:
        assert action_str(action).startswith("message ")


def test_an_illegal_message_is_refused_clearly():
    g = SpadesGame(SIGNALS, 1, dealer=0)
    with pytest.raises(IllegalActionError, match=r"signals=4\): actions 68..71"):
        g.apply(SIGNAL_ACTION_BASE + 4)
    with pytest.raises(IllegalActionError, match="in phase signal; legal actions: 68 .message 0."):
        g.apply(BID_ACTION_BASE + 3)
    for _ in range(4):
        g.apply(SIGNAL_ACTION_BASE)
    with pytest.raises(IllegalActionError, match=r"illegal action 69 \(message 1\) for seat 1 in phase bidding"):
        g.apply(SIGNAL_ACTION_BASE + 1)


def test_seats_that_may_bid_blind_nil_signal_without_looking():
    env = spades_v0.raw_env(rules=TRAILING_SIGNALS)
    env.reset(seed=2, options={"scores": [0, 150], "dealer": 3})
    g = env.game
    layout = env.observation_layout
    hand = layout.slices["hand"]
    assert g.phase == PHASE_SIGNAL and g.looked == [False, True, False, True]
    for seat in range(4):                         # side 0 (seats 0, 2) trails by 150: it sees no card
        seen = env.observe(f"player_{seat}")["observation"][hand]
        assert seen.sum() == (0 if seat % 2 == 0 else 13)
    for _ in range(4):
        env.step(SIGNAL_ACTION_BASE + 2)
    assert g.phase == PHASE_BLIND_DECISION and g.to_act == 0      # North decides blind nil as ever
    assert env.observe("player_0")["observation"][hand].sum() == 0
    env.step(LOOK_ACTION)
    assert g.phase == PHASE_BIDDING and env.observe("player_0")["observation"][hand].sum() == 13
    assert env.observe("player_2")["observation"][hand].sum() == 0
    env.step(BID_ACTION_BASE + 3)
    env.step(BID_ACTION_BASE + 3)
    assert g.phase == PHASE_BLIND_DECISION and g.to_act == 2
    env.step(BLIND_NIL_ACTION)
    assert g.blind[2] and g.messages == [2, 2, 2, 2]


def test_messages_in_the_observation():
    env = spades_v0.raw_env(rules="short_signals")
    env.reset(seed=4, options={"dealer": 1})
    layout = env.observation_layout
    s = layout.slices
    assert list(layout.obs_blocks)[-2:] == ["signal_phase", "messages"]
    assert list(layout.global_blocks)[-3:] == ["signal_phase", "messages", "true_hands"]
    assert s["messages"].stop - s["messages"].start == 16 and s["signal_phase"].stop - s["signal_phase"].start == 1
    obs = env.observe("player_0")["observation"]
    assert obs[s["signal_phase"]][0] == 1 and obs[s["phase"]].sum() == 0 and obs[s["messages"]].sum() == 0
    view = decode_observation(obs, signals=4)
    assert view.phase == PHASE_SIGNAL and view.messages == [None] * 4 and view.tricks_per_hand == 6
    env.step(SIGNAL_ACTION_BASE + 3)              # South (seat 2), the first bidder after dealer East
    env.step(SIGNAL_ACTION_BASE + 1)              # West (seat 3)
    for seat in range(4):
        obs = env.observe(f"player_{seat}")["observation"]
        rows = obs[s["messages"]].reshape(4, 4)
        expected = {2: 3, 3: 1}                   # absolute seat: message
        for rel in range(4):
            absolute = (seat + rel) % 4
            assert list(rows[rel]) == [float(absolute in expected and expected[absolute] == m) for m in range(4)]
        assert decode_observation(obs, signals=4) == view_from_game(env.game, seat)
    env.step(SIGNAL_ACTION_BASE)
    env.step(SIGNAL_ACTION_BASE + 2)
    obs = env.observe("player_2")["observation"]
    assert obs[s["signal_phase"]][0] == 0 and obs[s["phase"]][PHASE_BIDDING] == 1
    assert decode_observation(obs, signals=4).messages == [3, 1, 0, 2]      # seats 2, 3, 0, 1 as South sees them


def test_the_layout_is_found_from_size_and_signals():
    assert layout_for(SIGNALS).obs_size == layout_for(make_rules("standard", deck_ranks=9, signals=1)).obs_size == 731
    assert layout_for_size(731, signals=4).tricks_per_hand == 6 and layout_for_size(731, signals=1).tricks_per_hand == 9
    assert layout_for_size(742).signals == 0 and layout_for_size(714).tricks_per_hand == 6
    with pytest.raises(ValueError, match="no observation layout has 700 values with signals=2"):
        layout_for_size(700, signals=2)


@pytest.mark.parametrize("signals", [1, 4])
def test_an_observation_without_the_signal_is_the_head_of_one_with_it(signals):
    """The signal's blocks come last: once the messages are sent, every observation and state of
    a signal game, cut to the size without them, is the same game's without the signal."""
    plain = spades_v0.raw_env(rules="short")
    signal = spades_v0.raw_env(rules="short", signals=signals)
    plain.reset(seed=6)
    signal.reset(seed=6)
    assert signal.game.hands == plain.game.hands
    size, public = plain.observation_layout.obs_size, plain.observation_layout.public_size
    rng = random.Random(6)
    hands = 0
    while plain.agents and not plain.terminations[plain.agent_selection]:
        if signal.game.phase == PHASE_SIGNAL:    # every hand: four messages first
            hands += 1
            for k in range(4):
                signal.step(SIGNAL_ACTION_BASE + (k + hands) % signals)
        for agent in plain.possible_agents:
            a, b = plain.observe(agent), signal.observe(agent)
            np.testing.assert_array_equal(b["observation"][:size], a["observation"])
            np.testing.assert_array_equal(b["action_mask"][:68], a["action_mask"])
        state_a, state_b = plain.state(), signal.state()
        np.testing.assert_array_equal(state_b[:public], state_a[:public])
        np.testing.assert_array_equal(state_b[-4 * 52:], state_a[-4 * 52:])
        action = rng.choice(plain.legal_actions())
        plain.step(action)
        signal.step(action)
    assert signal.game.scores == plain.game.scores and hands >= 2


def test_spaces_masks_and_the_single_agent_view_are_num_actions_long():
    env = spades_v0.env(rules="short_signals")
    env.reset(seed=0)
    assert env.action_space("player_0").n == 72
    assert env.observation_space("player_0")["action_mask"].shape == (72,)
    assert env.last()[0]["action_mask"].shape == (72,)
    mask = mask_array(0b1011 << 68 | 1 << 60 | 1 << 3, 72)
    assert list(np.flatnonzero(mask)) == [3, 60, 68, 69, 71] and mask.shape == (72,)
    solo = SpadesSingleAgentEnv(rules="short_signals", seed=0)
    obs, info = solo.reset(seed=1)
    assert solo.action_space.n == 72 and info["action_mask"].shape == (72,) and obs.shape == (731,)
    assert solo.action_masks().shape == (72,)
    while True:
        legal = np.flatnonzero(solo.action_masks())
        _, _, term, trunc, _ = solo.step(int(legal[0]))
        if term or trunc:
            break


def test_render_shows_the_messages():
    env = spades_v0.raw_env(rules="short_signals", render_mode="ansi")
    env.reset(seed=2, options={"dealer": 0})
    env.step(SIGNAL_ACTION_BASE + 2)
    text = env.render()
    assert "phase: signal" in text and "East (1)   message 2  bid -" in text and "North (0)  message -" in text
    assert "Last action: East (1) message 2" in text
    assert "message" not in render_table(SpadesGame("short", 2))


def test_copies_and_views_carry_the_messages():
    g = SpadesGame(SIGNALS, 3, dealer=2)
    g.apply(SIGNAL_ACTION_BASE + 1)
    g.apply(SIGNAL_ACTION_BASE + 3)
    for other in (g.copy(), g.clone()):            # seats 3 then 0 have sent
        assert other.messages == [3, -1, -1, 1] and other.phase == PHASE_SIGNAL
        other.apply(SIGNAL_ACTION_BASE)
        assert g.messages == [3, -1, -1, 1]
    seat = g.to_act
    view = view_from_game(g, seat)
    rotated = [g.hands[(seat + k) % 4] for k in range(4)]
    world = SpadesGame.from_view(view, SIGNALS, rotated)     # seat 1 becomes seat 0, the dealer seat 1
    assert world.phase == PHASE_SIGNAL and world.messages == [-1, -1, 1, 3] and view.messages == [None, None, 1, 3]
    assert world.legal_mask() == g.legal_mask() and world.looked == [True] * 4
    world.apply(SIGNAL_ACTION_BASE + 2)
    assert world.phase == PHASE_SIGNAL and world.to_act == 1      # the dealer signals last
    world.apply(SIGNAL_ACTION_BASE)
    assert world.phase == PHASE_BIDDING and world.to_act == 2 and world.messages == [2, 0, 1, 3]
    with pytest.raises(ValueError, match="do not fit the observation"):
        SpadesGame.from_view(view, make_rules("short"), rotated)


# --------------------------------------------------------------------------- message relabellings
def test_message_relabellings_map_actions_masks_and_observations():
    g = Relabelling((0, 1, 2, 3), SIGNALS, (1, 0, 3, 2))
    assert g.name == "messages:1032" and not g.is_identity
    assert [g.map_action(a) for a in (68, 69, 70, 71, 60, 5)] == [69, 68, 71, 70, 60, 5]
    assert g.map_mask(1 << 68 | 1 << 70 | 1 << 55) == 1 << 69 | 1 << 71 | 1 << 55
    swap = Relabelling((1, 0, 2, 3), SIGNALS)
    both = g.then(swap)
    assert both.name == "(C D) messages:1032" and both == swap.then(g)
    assert both.map_action(68) == 69 and both.map_action(parse_card("9C")) == parse_card("9D")
    assert both.inverse.then(both).is_identity
    layout = layout_for(SIGNALS)
    obs = np.zeros(layout.obs_size, dtype=np.float32)
    rows = layout.slices["messages"]
    obs[rows.start + 4 * 1 + 2] = 1.0              # relative seat 1 sent message 2
    mapped = g.map_observation(obs)
    assert np.flatnonzero(mapped).tolist() == [rows.start + 4 * 1 + 3]
    state_rows = layout.state_slices["messages"]
    assert np.flatnonzero(g.map_state(np.eye(layout.state_size)[state_rows.start]))[0] == state_rows.start + 1
    with pytest.raises(SymmetryError, match="no signal"):
        Relabelling((0, 1, 2, 3), "standard", (0,))
    with pytest.raises(SymmetryError, match="permutation of the 4 messages"):
        Relabelling((0, 1, 2, 3), SIGNALS, (0, 0, 1, 2))


def test_the_group_of_a_signal_variant_holds_the_message_relabellings():
    group = symmetries("short_signals")
    assert len(group) == 6 * 24 and group[0].is_identity and group.by_name("messages:3210").messages == (3, 2, 1, 0)
    assert len(symmetries("short")) == 6 and symmetries("short").names == symmetries("standard").names
    assert all(g.messages == () for g in symmetries("standard")) and len(symmetries("standard")) == 6
    big = symmetries("standard", signals=7)
    assert len(big) == 6 * 7 and all(g.then(h) in big for g in big[:9] for h in big[:9])


def test_a_relabelled_signal_game_is_a_game_of_the_same_rules():
    """Relabel a played record's messages (and suits), replay it: every observation of the
    replay is the relabelled observation of the original, step by step."""
    env = spades_v0.raw_env(rules="short_signals")
    env.reset(seed=11)
    play_random(env, 11, max_steps=60)
    record = env.game_record()
    g = symmetries("short_signals").by_name("(C D H) messages:2301")
    mapped = g.map_record(record)
    assert mapped["hands"][0]["messages"] == [g.messages[m] for m in record["hands"][0]["messages"]]
    a, b = replay(record), replay(mapped)
    for agent in a.possible_agents:
        np.testing.assert_array_equal(b.observe(agent)["observation"], g.map_observation(a.observe(agent)["observation"]))
    with pytest.raises(SymmetryError, match="signals=4, the record's rules have signals=0"):
        g.map_record(replay_record_without_signals())


def replay_record_without_signals() -> dict:
    env = spades_v0.raw_env(rules="short")
    env.reset(seed=1)
    play_random(env, 1, max_steps=10)
    return env.game_record()


# --------------------------------------------------------------------------- random play, both presets
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(preset=st.sampled_from(["short", "short_signals"]), seed=st.integers(0, 2 ** 31))
def test_random_play_to_the_end_of_a_game(preset, seed):
    env = spades_v0.raw_env(rules=preset, episode="game")
    env.reset(seed=seed)
    rules = env.rules
    steps = 0
    rng = random.Random(seed)
    while env.agents and not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        g = env.game
        seat = g.to_act
        obs = env.observe(f"player_{seat}")
        assert obs["action_mask"].shape == (rules.num_actions,)
        assert decode_observation(obs["observation"], signals=rules.signals) == view_from_game(g, seat)
        legal = np.flatnonzero(obs["action_mask"]).tolist()
        assert legal == g.legal_actions()
        if g.phase == PHASE_SIGNAL:
            assert legal == list(range(68, 68 + rules.signals))
        elif g.phase == PHASE_BIDDING:
            assert max(legal) <= BID_ACTION_BASE + 6 and NIL_ACTION in legal
        else:
            assert all(c % 13 >= rules.lowest_rank for c in legal)
        env.step(rng.choice(legal))
        steps += 1
    g = env.game
    assert g.game_over or g.truncated
    rec = env.game_record()
    for hand in rec["hands"]:
        assert sum(hand["tricks_taken"]) == 6 and len(hand["tricks"]) == 6
        assert sorted(parse_card(c) for h in hand["deal"] for c in h) == deck_cards(rules)
        assert ("messages" in hand) == bool(rules.signals)
    assert steps == sum(len(h["actions"]) for h in rec["hands"])
    assert replay(rec).game_record() == rec


# --------------------------------------------------------------------------- nothing changes with both off
CASES = [("standard", {}, "game", 3), ("basic", {}, "hand", 5), ("tournament", {}, "hand", 7),
         ("cutthroat", {}, "hand", 11), ("cutthroat", {"players": 3}, "hand", 13), ("openspiel", {}, "hand", 17),
         ("standard", {"scores": [0, 150]}, "hand", 19), ("standard", {}, "game", 23), ("standard", {}, "game", 29),
         ("standard", {}, "game", 31), ("tournament", {}, "game", 37), ("openspiel", {}, "game", 41)]
GOLDEN = [  # sha256 of fingerprint() at commit 5b69e18, before the options existed
    "ca8df2a5dec675c1b6cc5c342453abcfdb52a29969b300a89098afedfb470c12",
    "e9a495aa3e6405473ff293d1e1e5c0683eeab1f04e1529df75663356a55f19fb",
    "c404070f76ee54371e1c1c558f4d1864f8b391dd226fbdd664258e593a6ea6f5",
    "4538ee0b39e5efeca4d0d344e74cb4b4a645391af9df28a74d29324b12e3c96a",
    "6c644d2d05b3cbdb885183c0d2e0301cc658d780ab40bc23dce9eb85f34f3291",
    "e758eea0b4d45c8f73caf17474d549b97090061d33fe16a52f4f9eedaf935a1b",
    "8e81684e6a65379de34e9ec3a08a540912201b82e72aa9a07e8ce299e76b2585",
    "68742ccd9981437fcd6c78904d945dc219fa429cf614a6270baa8ffa0147c022",
    "20987bb2bbd30ff1969ca90a8e8451808d8b2747c66526d16f0db7c4396da68a",
    "bfc73b1594932c15ff8368037cd2f973ffcc7fd6683c0c49b676c457fc2e675b",
    "6d349b35bcb81ec8852f1324e4f41007020f70c1c346f1d5ad967151719e5e49",
    "3dcf030ace379dfa2c66e82dae20b18ad19c6628b33fc4539e3f5637fa6ddf8a",
]


def fingerprint(preset: str, overrides: dict, episode: str, seed: int) -> str:
    """One hash over a seeded random game: the spaces, the layouts' slices, every seat's
    observation and mask and the state before every step, rewards and infos, and the record."""
    h = hashlib.sha256()
    opts = {}
    if "scores" in overrides:
        opts, overrides = {"scores": overrides["scores"]}, {}
    env = spades_v0.raw_env(rules=make_rules(preset, **overrides), episode=episode)
    env.reset(seed=seed, options=opts)
    rng = random.Random(seed)
    h.update(repr((env.action_space("player_0"), env.observation_space("player_0")["observation"].shape,
                   env.observation_space("player_0")["action_mask"], env.state_space.shape)).encode())
    h.update(json.dumps({k: [s.start, s.stop] for k, s in env.observation_layout.slices.items()}).encode())
    h.update(json.dumps({k: [s.start, s.stop] for k, s in env.observation_layout.state_slices.items()}).encode())
    for agent in env.agent_iter():
        for a in env.possible_agents:
            o = env.observe(a)
            h.update(o["observation"].tobytes())
            h.update(o["action_mask"].tobytes())
        h.update(env.state().tobytes())
        obs, rew, term, trunc, info = env.last()
        h.update(repr((agent, round(rew, 9), term, trunc, sorted(info.items()))).encode())
        if term or trunc:
            env.step(None)
            continue
        env.step(int(rng.choice(list(np.flatnonzero(obs["action_mask"])))))
    h.update(json.dumps(env.unwrapped.game_record(), sort_keys=True).encode())
    return h.hexdigest()


@pytest.mark.parametrize("case,expected", list(zip(CASES, GOLDEN)), ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_without_the_options_every_observation_state_and_record_is_unchanged(case, expected):
    assert fingerprint(*case) == expected


def test_without_a_signal_a_hand_starts_with_the_bids_as_before():
    g = SpadesGame("standard", 0)
    assert g.phase in (PHASE_BIDDING, PHASE_BLIND_DECISION) and g.messages == [-1] * 4
    assert "messages" not in g.record()["hands"][0] and "signals" not in g.record()["rules"]
    assert len(mask_to_cards(g.legal_mask())) == 14 and g.legal_mask() >> 68 == 0


def test_the_batched_maps_of_a_signal_variant_equal_the_per_state_maps():
    import torch

    group = symmetries("short_signals")
    maps = group.batched("cpu")
    layout = layout_for(SIGNALS)
    gen = np.random.default_rng(0)
    rows = 32
    which = torch.as_tensor(gen.integers(0, len(group), rows))
    obs = torch.as_tensor(gen.random((rows, layout.obs_size)), dtype=torch.float32)
    masks = torch.as_tensor(gen.random((rows, SIGNALS.num_actions)) < 0.3)
    actions = torch.as_tensor(gen.integers(0, SIGNALS.num_actions, rows))
    mapped_obs, mapped_masks = maps.map_observations(obs, which), maps.map_masks(masks, which)
    mapped_actions = maps.map_actions(actions, which)
    for row, k in enumerate(which.tolist()):
        g = group[k]
        np.testing.assert_array_equal(mapped_obs[row].numpy(), g.map_observation(obs[row].numpy()))
        np.testing.assert_array_equal(mapped_masks[row].numpy(), g.map_mask(masks[row].numpy()))
        assert int(mapped_actions[row]) == g.map_action(int(actions[row]))
    back = maps.map_actions(mapped_actions, maps.inverse(which))
    assert torch.equal(back, actions)
    with pytest.raises(SymmetryError, match="0..71"):
        maps.map_actions(torch.tensor([72]), 0)
