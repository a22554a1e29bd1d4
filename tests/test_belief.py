"""The policy's belief (which other seat holds each unseen card): grown in without changing the
policy, fitted on labelled deals, read by the policy without being trained by its losses."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import torch

import agents
from agents.neural import DEFAULT_MODEL, policy_from_checkpoint, read_checkpoint, save_model
from agents.networks import PolicyNet
from spades_env import spades_v0
from train.belief import BeliefError, fit_belief, main, owners_of_unseen, train_belief
from train.config import ConfigError, config_from_dict
from train.label import label

from test_label import quiet, settings


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    out = tmp_path_factory.mktemp("belief") / "labels"
    return label(settings(out, deals=20, shard_deals=10, follow_teacher=0.5), progress=False, log=quiet)


def test_owners_are_the_true_holders_of_the_unseen_cards(labels):
    data = owners_of_unseen(labels)
    owner, obs = data["owner"].long(), data["obs"].float()
    assert owner.shape == (obs.shape[0], 52)
    assert set(owner.unique().tolist()) == {-1, 0, 1, 2}
    # Every seat holds 13 cards: at a seat's first bid it has seen only its own hand, so the 39
    # others are unseen, 13 with each other seat.
    first = (obs[:, :52].sum(1) == 13) & ((owner >= 0).sum(1) == 39)
    assert first.any()
    for cls in range(3):
        assert ((owner[first] == cls).sum(1) == 13).all()
    # The cards in one's own hand are never unseen.
    assert not ((obs[:, :52] > 0.5) & (owner >= 0)).any()


def test_fitting_learns_owners_that_follow_from_the_position(labels):
    # Synthetic owners that the belief can learn from these few positions (each unseen card's
    # owner fixed by the card): the held-out loss must fall far below a uniform guess, so the
    # loss, the classes, the held-out split and the optimizer work together.
    data = owners_of_unseen(labels)
    synthetic = (torch.arange(52) * 7 + 1) % 3
    owner = torch.where(data["owner"] >= 0, synthetic, -1).to(torch.int8)
    policy = PolicyNet(742, hidden=16, layers=1, head_hidden=8, card_features=True, belief_hidden=32)
    report = fit_belief(policy, {"obs": data["obs"], "deal": data["deal"], "owner": owner}, epochs=20, batch=64,
                        learning_rate=3e-3, log=quiet)
    assert report["cross_entropy"] < 0.05 < math.log(3)
    assert report["accuracy"] > 0.99


def test_a_grown_belief_changes_nothing_until_a_fit_reads_it(labels, tmp_path):
    out = train_belief(DEFAULT_MODEL, [labels], tmp_path / "belief.pt", hidden=32, epochs=1, batch=64, log=quiet)
    data = read_checkpoint(out)
    assert data["arch"]["belief_hidden"] == 32
    assert math.isfinite(data["provenance"]["belief"]["cross_entropy"])
    # The policy's logits are those of the model it grew from: nothing reads the belief yet.
    start, _ = policy_from_checkpoint(read_checkpoint(DEFAULT_MODEL))
    grown, _ = policy_from_checkpoint(data)
    env = spades_v0.raw_env(rules="standard")
    bots = [agents.make("heuristic", seed=s) for s in range(4)]
    env.reset(seed=3)
    rows, masks = [], []
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        rows.append(obs["observation"])
        masks.append(obs["action_mask"].astype(bool))
        env.step(bots[env.agent_name_mapping[name]].act(obs, info))
    x, m = torch.as_tensor(np.stack(rows)), torch.as_tensor(np.stack(masks))
    with torch.no_grad():
        torch.testing.assert_close(grown(x, m), start(x, m), rtol=0, atol=1e-5)
    # agents.make loads and plays the model.
    env.reset(seed=4)
    obs, _, _, _, info = env.last()
    assert agents.make("neural", checkpoint=str(out)).act(obs, info) == agents.make("neural").act(obs, info)


def test_the_policys_losses_do_not_train_the_belief():
    policy = PolicyNet(742, hidden=16, layers=1, head_hidden=8, card_features=True, belief_hidden=8)
    obs = torch.zeros(3, 742)
    obs[:, :13] = 1
    mask = torch.zeros(3, 68, dtype=torch.bool)
    mask[:, :13] = True
    torch.log_softmax(policy(obs, mask), 1)[:, 0].sum().backward()
    assert all(p.grad is None for p in policy.belief.parameters())
    assert policy.card_own.weight.grad is not None


def test_belief_errors_name_what_was_wrong(labels, tmp_path, capsys):
    with pytest.raises(ValueError, match="belief_hidden needs card_features"):
        PolicyNet(742, belief_hidden=8)
    with pytest.raises(ConfigError, match="belief_hidden=8 needs card_features: true"):
        config_from_dict({"belief_hidden": 8})
    with pytest.raises(ConfigError, match="belief_hidden=-1"):
        config_from_dict({"belief_hidden": -1, "card_features": True})
    with pytest.raises(BeliefError, match="no labels.json"):
        owners_of_unseen(tmp_path)
    varied = label(settings(tmp_path / "varied", deals=2, varied_start=1.0), progress=False, log=quiet)
    with pytest.raises(BeliefError, match="--varied-start"):
        owners_of_unseen(varied)
    with pytest.raises(ValueError, match="no belief"):
        PolicyNet(742, card_features=True).belief_logits(torch.zeros(1, 742))
    assert main([str(DEFAULT_MODEL), str(labels), "--out", str(tmp_path / "m.pt"), "--hidden", "0"]) == 2
    assert "hidden=0" in capsys.readouterr().err
    with pytest.raises(BeliefError, match="batch=0: expected a positive integer"):
        train_belief(DEFAULT_MODEL, [labels], tmp_path / "m.pt", batch=0, log=quiet)
    with pytest.raises(BeliefError, match="learning_rate=0"):
        train_belief(DEFAULT_MODEL, [labels], tmp_path / "m.pt", learning_rate=0, log=quiet)
    plain = save_model(PolicyNet(742, hidden=8, layers=1, head_hidden=8), tmp_path / "plain.pt", "standard", {})
    with pytest.raises(BeliefError, match="needs a policy with card_features"):
        train_belief(plain, [labels], tmp_path / "m.pt", log=quiet)
    fitted = train_belief(DEFAULT_MODEL, [labels], tmp_path / "b8.pt", hidden=8, epochs=1, log=quiet)
    with pytest.raises(BeliefError, match="its belief is 8 wide, not --hidden 16"):
        train_belief(fitted, [labels], tmp_path / "m.pt", hidden=16, log=quiet)
    # Labels whose recorded seed does not deal the hands they hold are refused.
    other = tmp_path / "other_seed"
    shutil.copytree(labels, other)
    meta = json.loads((other / "labels.json").read_text())
    (other / "labels.json").write_text(json.dumps({**meta, "seed": meta["seed"] + 1}))
    with pytest.raises(BeliefError, match="do not match the deals regenerated from its seed 1"):
        owners_of_unseen(other)
    data = owners_of_unseen(labels)
    with pytest.raises(BeliefError, match="too few deals to hold a tenth out"):
        fit_belief(PolicyNet(742, hidden=8, layers=1, head_hidden=8, card_features=True, belief_hidden=8),
                   {**data, "deal": torch.zeros_like(data["deal"])}, log=quiet)


def test_training_a_policy_with_a_belief_warns_unless_it_starts_from_a_fitted_one(labels, tmp_path):
    from train.ppo import Trainer
    from test_train import tiny
    lines: list[str] = []
    Trainer(tiny(tmp_path, "bare", "card_features=true", "belief_hidden=8"), log=lines.append)
    assert any("belief starts untrained" in line for line in lines)
    fitted = train_belief(DEFAULT_MODEL, [labels], tmp_path / "belief.pt", hidden=8, epochs=1, log=quiet)
    lines.clear()
    trainer = Trainer(tiny(tmp_path, "fitted", "card_features=true", "belief_hidden=8", f"init_from={fitted}",
                           "hidden=256", "layers=2", "head_hidden=128"), log=lines.append)
    assert not any("untrained" in line for line in lines)
    torch.testing.assert_close(trainer.policy.state_dict(), read_checkpoint(fitted)["policy"])
