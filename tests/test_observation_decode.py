"""decode_observation reads every field back exactly, for every seat, at every step."""

import random

import pytest

from spades_env import decode_observation, spades_v0, view_from_game
from spades_env.cards import mask_to_cards
from spades_env.game import PHASE_PLAY


@pytest.mark.parametrize("kwargs", [
    {"rules": "standard"},
    {"rules": "standard", "scores": None},
    {"rules": "tournament", "max_hands": 4},
    {"rules": "cutthroat"},
    {"rules": "cutthroat", "players": 3},
    {"rules": "openspiel"},
])
def test_decode_matches_the_game(kwargs):
    kwargs = {k: v for k, v in kwargs.items() if k != "scores"}
    env = spades_v0.raw_env(**kwargs)
    pick = random.Random(0)
    options = {"scores": [0, 250]} if kwargs.get("rules") == "standard" else None
    for episode in range(4):
        env.reset(seed=episode, options=options)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            game = env.game
            n = game.n
            for viewer in range(n):
                view = decode_observation(env.observe(f"player_{viewer}")["observation"])
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
            if term or trunc:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[pick.randrange(len(legal))]))


def test_decode_rejects_an_unknown_size():
    import numpy as np
    with pytest.raises(ValueError, match="742"):
        decode_observation(np.zeros(10, dtype=np.float32))
