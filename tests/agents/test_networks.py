"""The policy network's derived card features, checked against the game engine's own state, and
the card-feature policy's plumbing (shapes, masking, save and load)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.neural import NeuralAgent, policy_from_checkpoint
from agents.networks import CardFeatures, PolicyNet
from spades_env import spades_v0

from helpers_networks import batched, heuristic_decisions, observed_positions

FEATURE = {name: i for i, name in enumerate(
    ["held", "unseen", "played", "in_trick", "winner", "higher_unseen", "lower_unseen", "higher_held", "master",
     "beats", "held_in_suit", "unseen_in_suit"])}


def bits(mask: int) -> set[int]:
    return {c for c in range(52) if mask >> c & 1}


def expected_features(game, seat: int) -> dict[str, set | list]:
    """What a player at ``seat`` can count, computed from the engine's state directly."""
    played = set().union(*(bits(m) for m in game.played))
    trick = set(game.trick_cards)
    held = bits(game.hands[seat])
    unseen = set(range(52)) - held - played - trick
    winner = {game.win_card} if game.trick_cards else set()
    out = {"held": held, "unseen": unseen, "in_trick": trick, "winner": winner, "higher": {}, "lower": {},
           "master": {c for c in held if not any(d // 13 == c // 13 and d > c for d in unseen)}}
    for c in range(52):
        out["higher"][c] = sum(1 for d in unseen if d // 13 == c // 13 and d > c)
        out["lower"][c] = sum(1 for d in unseen if d // 13 == c // 13 and d < c)
    beats = set()
    if game.trick_cards:
        w = game.win_card
        for c in held:
            if (c // 13 == w // 13 and c > w) or (c // 13 == 3 and w // 13 != 3):
                beats.add(c)
    out["beats"] = beats
    out["winner_seat"] = (game.win_seat - seat) % game.n if game.trick_cards else None
    return out


@pytest.mark.parametrize("rules", ["standard", "tournament", "cutthroat"])
def test_card_features_match_the_engine(rules):
    features = None
    checked = 0
    for game, seat, obs in heuristic_decisions(rules, hands=4):
        features = features or CardFeatures(obs["observation"].shape[0])
        per_card, summary = features(torch.from_numpy(obs["observation"])[None])
        f = per_card[0].numpy()
        want = expected_features(game, seat)
        if game.phase == 3:      # play phase: the hand is visible
            for key in ("held", "unseen", "in_trick", "winner", "master", "beats"):
                got = set(np.flatnonzero(f[:, FEATURE[key]] > 0.5).tolist())
                assert got == want[key], (key, got, want[key])
            for c in range(52):
                assert f[c, FEATURE["higher_unseen"]] * 13 == pytest.approx(want["higher"][c])
                assert f[c, FEATURE["lower_unseen"]] * 13 == pytest.approx(want["lower"][c])
            winner_seat = summary[0, 1:1 + game.n].numpy()
            if want["winner_seat"] is None:
                assert winner_seat.sum() == 0
            else:
                assert int(np.argmax(winner_seat)) == want["winner_seat"] and winner_seat.sum() == 1
            voids = f[:, len(FEATURE):]
            for k in range(1, game.n):
                other = (seat + k) % game.n
                for c in range(52):
                    assert voids[c, k - 1] == float(game.voids[other] >> (c // 13) & 1)
            checked += 1
    assert checked > 150


def test_card_feature_policy_masks_saves_and_loads(tmp_path):
    torch.manual_seed(0)
    net = PolicyNet(742, hidden=32, layers=2, head_hidden=16, card_features=True)
    obs = torch.rand(5, 742).round()
    mask = torch.zeros(5, 68, dtype=torch.bool)
    mask[:, [3, 17, 40]] = True
    logits = net(obs, mask)
    assert logits.shape == (5, 68) and bool((logits[~mask] < -1e8).all()) and bool((logits[mask] > -1e8).all())
    path = tmp_path / "model.pt"
    torch.save({"format": "spades-neural-policy", "arch": net.arch, "policy": net.state_dict(), "rules": "standard"},
               path)
    again, info = policy_from_checkpoint(torch.load(path, weights_only=True))
    assert info["arch"]["card_features"] is True
    assert torch.equal(again(obs, mask), logits)
    env = spades_v0.raw_env(rules="standard", episode="hand")
    env.reset(seed=0)
    bot = NeuralAgent(checkpoint=path)
    obs_dict, *_ = env.last()
    assert obs_dict["action_mask"][bot.act(obs_dict)]


def test_models_without_card_features_still_load():
    """Models written before the option existed have no ``card_features`` key in their shape."""
    plain = PolicyNet(742, hidden=32, layers=1, head_hidden=16)
    assert plain.arch == {"obs_size": 742, "hidden": 32, "layers": 1, "head_hidden": 16}
    again, _ = policy_from_checkpoint({"arch": dict(plain.arch), "policy": plain.state_dict()})
    assert again.features is None


def observed_batch(rules: str, players: int | None = None, hands: int = 2):
    """Every decision's observation and mask from a few hands of heuristic play."""
    return batched(observed_positions(rules, players, hands))


@pytest.mark.parametrize("rules, players", [("standard", None), ("cutthroat", 3)])
def test_legal_card_logits_equal_every_card_on_legal_cards(rules, players):
    """The fast card head (legal cards only; 17 in a three-player hand) gives the readable
    reference's logits exactly, and its gradients up to float rounding."""
    obs, mask = observed_batch(rules, players)
    torch.manual_seed(1)
    net = PolicyNet(obs.shape[1], hidden=32, layers=2, head_hidden=16, card_features=True)
    with torch.no_grad():                          # not the tiny initial scores: a trained-looking head
        net.card_score.weight.normal_()
    legal = mask[:, :52]
    most = int(legal.sum(1).max())
    assert most > 13 if players == 3 else most == 13          # three players hold 17 cards
    trunk, per_card = net.embed(obs)
    fast = net.legal_card_logits(trunk, per_card, legal)
    slow = net.every_card_logits(trunk, per_card)
    assert torch.equal(fast[legal], slow[legal])
    grads = []
    for logits in (net(obs, mask), torch.cat([slow, net.bid_head(trunk)], 1).masked_fill(~mask, -1e9)):
        net.zero_grad()
        torch.log_softmax(logits, 1)[mask].sum().backward(retain_graph=True)
        grads.append([p.grad.clone() for p in net.parameters()])
    for fast_grad, slow_grad in zip(*grads):
        assert torch.allclose(fast_grad, slow_grad, rtol=1e-5, atol=1e-6)
