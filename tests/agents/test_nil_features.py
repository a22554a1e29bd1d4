"""The card features' nil channels (``nil_features``), checked against the game engine's state,
and their plumbing: the older features unchanged, the shape saved and refused where it cannot
apply, a tiny run trained with them."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import agents
from agents.networks import CardFeatures, PolicyNet
from agents.neural import policy_from_checkpoint
from spades_env import spades_v0
from spades_env.game import BID_ACTION_BASE, PHASE_PLAY, card_beats
from train.ppo.config import ConfigError
from train.ppo.trainer import Trainer

from helpers_networks import heuristic_decisions
from helpers_train import tiny

NIL_CARD_CHANNELS = ("own_nil_must_duck", "partner_nil_winning", "opponent_nil_winning", "opponent_nil_intact")


def expected_nil_features(game, seat: int) -> tuple[dict[str, set[int]], list[float], list[float]]:
    """What the nil channels should hold at ``seat``, read from the engine: per channel the cards
    set, each relative seat's nil intact, and each such seat winning the trick."""
    relative = [(seat + r) % 4 for r in range(4)]
    intact = [float(game.bids[s] == 0 and game.tricks_taken[s] == 0) for s in relative]
    winning = [0.0] * 4
    if game.trick_cards:
        winning[(game.win_seat - seat) % 4] = 1.0
    nil_winning = [a * b for a, b in zip(intact, winning)]
    held = {c for c in range(52) if game.hands[seat] >> c & 1}
    beating = {c for c in held if game.trick_cards and card_beats(c, game.win_card)}
    channels = {
        "own_nil_must_duck": beating if intact[0] else set(),
        "partner_nil_winning": beating if nil_winning[2] else set(),
        "opponent_nil_winning": beating if nil_winning[1] or nil_winning[3] else set(),
        "opponent_nil_intact": beating if intact[1] or intact[3] else set(),
    }
    return channels, intact, nil_winning


def nil_heavy_positions(hands: int, seed: int = 0):
    """(game, seat, observation) at every card play of ``hands`` hands of heuristic play in which
    about a third of the bids are forced to nil (and blind nil is bid where offered half the
    time), so intact and broken nils of every seat occur."""
    coins = random.Random(seed)

    def force_nils(game, obs, action):
        if game.phase == PHASE_PLAY:
            return action
        if obs["action_mask"][BID_ACTION_BASE] and BID_ACTION_BASE <= action < BID_ACTION_BASE + 14 \
                and coins.random() < 0.35:
            return BID_ACTION_BASE                            # a forced nil
        if obs["action_mask"][66] and coins.random() < 0.5:
            return 66                                         # blind nil
        return action

    for game, seat, obs in heuristic_decisions("standard", hands, seed=seed * 1000, override=force_nils):
        if game.phase == PHASE_PLAY:
            yield game, seat, obs["observation"]


def test_nil_channels_match_the_engine():
    plain, with_nil = None, None
    seen = {name: 0 for name in NIL_CARD_CHANNELS}
    intact_seen = np.zeros(4)
    checked = 0
    for game, seat, observation in nil_heavy_positions(12):
        plain = plain or CardFeatures(observation.shape[0])
        with_nil = with_nil or CardFeatures(observation.shape[0], nil_features=True)
        obs = torch.from_numpy(observation)[None]
        base_card, base_summary = plain(obs)
        per_card, summary = with_nil(obs)
        # the older features are the leading columns, unchanged
        assert torch.equal(per_card[:, :, :plain.per_card_size], base_card)
        assert torch.equal(summary[:, :plain.summary_size], base_summary)
        assert per_card.shape[2] == plain.per_card_size + len(NIL_CARD_CHANNELS)
        channels, intact, nil_winning = expected_nil_features(game, seat)
        extra = per_card[0, :, plain.per_card_size:].numpy()
        for k, name in enumerate(NIL_CARD_CHANNELS):
            got = set(np.flatnonzero(extra[:, k] > 0.5).tolist())
            assert got == channels[name], (name, got, channels[name])
            seen[name] += bool(got)
        tail = summary[0, plain.summary_size:].numpy()
        assert tail[:4].tolist() == intact and tail[4:].tolist() == nil_winning
        intact_seen += np.array(intact)
        checked += 1
    assert checked > 500
    # every channel and every relative seat's intact nil was met, so none is checked only at zero
    assert all(count > 3 for count in seen.values()), seen
    assert bool((intact_seen > 20).all()), intact_seen


def test_nil_feature_policy_shape_saves_loads_and_is_refused_where_it_cannot_apply(tmp_path):
    torch.manual_seed(0)
    net = PolicyNet(742, hidden=32, layers=2, head_hidden=16, card_features=True, nil_features=True)
    assert net.arch["nil_features"] is True and net.features.nil_features
    plain = PolicyNet(742, hidden=32, layers=2, head_hidden=16, card_features=True)
    assert "nil_features" not in plain.arch          # models written before keep their shape
    assert net.card_own.weight.shape[1] == plain.card_own.weight.shape[1] + 4
    obs = torch.rand(4, 742).round()
    mask = torch.zeros(4, 68, dtype=torch.bool)
    mask[:, [1, 20, 45]] = True
    logits = net(obs, mask)
    again, info = policy_from_checkpoint({"arch": dict(net.arch), "policy": net.state_dict()})
    assert info["arch"]["nil_features"] is True and torch.equal(again(obs, mask), logits)
    # neither grows into the other: the card head's inputs differ
    assert not net.can_grow_from(plain.arch) and not plain.can_grow_from(net.arch)
    with pytest.raises(ValueError, match="nil_features: expected card_features"):
        PolicyNet(742, hidden=32, card_features=False, nil_features=True)
    cutthroat = next(iter(nil_free_observation_sizes()))
    with pytest.raises(ValueError, match="four players in two sides"):
        PolicyNet(cutthroat, hidden=32, card_features=True, nil_features=True)
    with pytest.raises(ConfigError, match="nil_features: true needs card_features"):
        tiny(tmp_path, "refused", "nil_features=true", "card_features=false")


def nil_free_observation_sizes():
    """The observation size of a game where the nil channels cannot apply (cutthroat, 4 seats)."""
    env = spades_v0.raw_env(rules="cutthroat", episode="hand")
    env.reset(seed=0)
    yield env.last()[0]["observation"].shape[0]


def test_a_run_trains_with_nil_features_and_its_model_plays(tmp_path):
    config = tiny(tmp_path, "nilf", "card_features=true", "nil_features=true", "total_decisions=1024",
                  "eval_every=0", "imitation_decisions=0")
    trainer = Trainer(config, log=lambda line: None)
    assert trainer.policy.features.nil_features
    trainer.train()
    bot = agents.make("neural", checkpoint=tmp_path / "nilf" / "model.pt")
    assert bot.policy.arch["nil_features"] is True
    env = spades_v0.raw_env(rules="standard", episode="hand")
    env.reset(seed=3)
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        action = None if term or trunc else bot.act(obs, info)
        assert action is None or obs["action_mask"][action]
        env.step(action)
