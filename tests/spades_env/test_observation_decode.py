"""decode_observation reads every field back exactly, for every seat, at every step."""

import random

import numpy as np
import pytest

from spades_env import decode_observation, spades_v0, view_from_game
from spades_env.cards import mask_to_cards
from spades_env.game import PHASE_PASSING, PHASE_PLAY
from spades_env.observation import layout_for_size


@pytest.mark.parametrize("kwargs", [
    {"rules": "standard"},
    {"rules": "standard", "scores": None},
    {"rules": "tournament", "max_hands": 4},
    {"rules": "cutthroat"},
    {"rules": "cutthroat", "players": 3},
    {"rules": "openspiel"},
    {"rules": "short"},
    {"rules": "short_signals"},
    {"rules": "standard", "signals": 3},
])
def test_decode_matches_the_game(kwargs):
    kwargs = {k: v for k, v in kwargs.items() if k != "scores"}
    env = spades_v0.raw_env(**kwargs)
    signals = env.rules.signals
    pick = random.Random(0)
    options = {"scores": [0, 250]} if kwargs.get("rules") == "standard" else None
    for episode in range(4):
        env.reset(seed=episode, options=options)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            game = env.game
            n = game.n
            for viewer in range(n):
                view = decode_observation(env.observe(f"player_{viewer}")["observation"], signals=signals)
                assert view_from_game(game, viewer) == view
                rel = [(viewer + r) % n for r in range(n)]
                assert view.players == n
                assert view.hand == (mask_to_cards(game.hands[viewer]) if game.looked[viewer] else [])
                assert view.phase == game.phase
                assert rel[view.dealer] == game.dealer
                if not (term or trunc):
                    assert rel[view.to_act] == game.to_act
                assert view.bids == [game.bids[s] if game.bids[s] >= 0 else None for s in rel]
                assert view.blind == [game.blind[s] for s in rel]
                assert view.passed == mask_to_cards(game.passed[viewer])
                assert view.received == mask_to_cards(game.received[viewer])
                assert view.tricks_taken == [game.tricks_taken[s] for s in rel]
                assert [(rel[s], c) for s, c in view.current_trick] == game.current_trick
                if game.phase == PHASE_PLAY:
                    assert rel[view.trick_leader] == game.trick_leader
                assert view.played == [mask_to_cards(game.played[s]) for s in rel]
                assert view.voids == [{x for x in range(4) if game.voids[s] >> x & 1} for s in rel]
                assert view.spades_broken == game.spades_broken
                sides = game.num_sides
                own = game.side_of[viewer]
                assert view.scores == [game.scores[(own + j) % sides] for j in range(sides)]
                assert view.bags == [game.bags[(own + j) % sides] for j in range(sides)]
                assert view.target_score == game.rules.target_score
                assert view.mercy_score == game.rules.mercy_score
                assert view.tricks_per_hand == game.tricks_per_hand and view.signals == signals
                assert view.messages == ([game.messages[s] if game.messages[s] >= 0 else None for s in rel]
                                         if signals else [])
            if term or trunc:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[pick.randrange(len(legal))]))


def test_decode_rejects_an_unknown_size():
    with pytest.raises(ValueError, match="742"):
        decode_observation(np.zeros(10, dtype=np.float32))


@pytest.mark.parametrize("suits", [(1, 2, 0, 3), (2, 0, 1, 3), (0, 2, 1, 3)])
def test_suit_permutation_gives_the_observation_of_the_relabelled_deal(suits):
    """Swapping the side suits of a deal (and of every card played) swaps them in every
    observation, mask and reward of the hand exactly as Layout.suit_permutation says (standard
    rules, blind nil and its passing offered)."""
    pick = random.Random(1)
    passing_steps = 0
    for episode in range(6):
        original, relabelled = spades_v0.raw_env(rules="standard"), spades_v0.raw_env(rules="standard")
        deck = list(range(52))
        pick.shuffle(deck)
        deal = [sorted(deck[13 * s:13 * s + 13]) for s in range(4)]
        new_card = [suits[c // 13] * 13 + c % 13 for c in range(52)]
        options = {"deal": deal, "dealer": episode % 4, "scores": [-120, 30]}
        original.reset(seed=episode, options=options)
        relabelled.reset(seed=episode, options={**options, "deal": [[new_card[c] for c in h] for h in deal]})
        obs_index, card_index = layout_for_size(742).suit_permutation(suits)
        for agent in original.agent_iter():
            if original.game.hand_number > 1:     # the next hand's deal is not the relabelled one
                break
            obs, reward, term, trunc, _ = original.last()
            obs2, reward2, _, _, _ = relabelled.last()
            assert relabelled.agent_selection == agent
            assert reward2 == reward
            for viewer in original.agents:
                np.testing.assert_array_equal(relabelled.observe(viewer)["observation"],
                                              original.observe(viewer)["observation"][obs_index])
            np.testing.assert_array_equal(obs2["action_mask"][:52], obs["action_mask"][:52][card_index])
            np.testing.assert_array_equal(obs2["action_mask"][52:], obs["action_mask"][52:])
            if term or trunc:
                original.step(None)
                relabelled.step(None)
                continue
            passing_steps += original.game.phase == PHASE_PASSING
            action = pick.choice([int(a) for a in np.flatnonzero(obs["action_mask"])])
            original.step(action)
            relabelled.step(new_card[action] if action < 52 else action)
    assert passing_steps > 0       # a blind nil and its card passing were relabelled too


def test_suit_permutation_refuses_moving_spades():
    with pytest.raises(ValueError, match="keeps spades"):
        layout_for_size(742).suit_permutation((3, 1, 2, 0))
    with pytest.raises(ValueError, match="keeps spades"):
        layout_for_size(742).suit_permutation((0, 0, 1, 3))
