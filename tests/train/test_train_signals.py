"""spades-train under the free signal and the short deck (issue 74): the policy has a message
per extra action, the rollout's masks are the rules' width, the run's model plays its rules, and
Other-Play on a signals variant trains through the message relabellings."""

from __future__ import annotations

import torch

from agents.networks import PolicyNet
from agents.neural import read_checkpoint
from spades_env.rules import make_rules
from train.ppo.rollout import HAND_STEPS, hand_steps
from train.ppo.trainer import Trainer

from helpers_train import tiny

torch.set_num_threads(1)
SHORT = ["rules=short_signals", "start=zero", "imitation_decisions=0", "opponents={self: 0.7, pool: 0.3}"]


def test_a_hand_has_the_steps_of_its_rules():
    assert hand_steps(make_rules("standard")) == HAND_STEPS == 56
    assert hand_steps(make_rules("short")) == 4 * (1 + 6)
    assert hand_steps(make_rules("short_signals")) == 4 * (1 + 6 + 1)


def test_a_policy_with_messages_scores_them_with_its_bidding_head():
    from spades_env.observation import layout_for
    policy = PolicyNet(layout_for(make_rules("short_signals")).obs_size, hidden=16, head_hidden=8, signals=4)
    assert policy.arch["signals"] == 4 and policy.bid_head[-1].out_features == 16 + 4
    assert "signals" not in PolicyNet(742, hidden=16, head_hidden=8).arch      # model files of the game unchanged
    obs = torch.zeros(3, policy.arch["obs_size"])
    mask = torch.zeros(3, 72, dtype=torch.bool)
    mask[:, 68:] = True
    logits = policy(obs, mask)
    assert logits.shape == (3, 72) and bool((logits[:, :68] < -1e8).all())
    other = PolicyNet(742, hidden=16, head_hidden=8, signals=2)
    assert not PolicyNet(742, hidden=32, head_hidden=8, signals=4).can_grow_from(other.arch)
    for bad in (-1, 17, True, 2.0):
        try:
            PolicyNet(742, hidden=8, head_hidden=8, signals=bad)
        except ValueError as exc:
            assert "signals=" in str(exc)
        else:
            raise AssertionError(f"signals={bad!r} was accepted")


def test_training_on_short_signals_sends_messages_and_writes_a_model_of_its_rules(tmp_path):
    cfg = tiny(tmp_path, "signals", *SHORT, "desync_tables=true")
    trainer = Trainer(cfg, log=lambda _: None)
    assert trainer.collector.num_actions == 72 and trainer.policy.arch["signals"] == 4
    trainer.train()
    buf = trainer.collector.storage
    assert buf.mask.shape[-1] == 72
    sent = buf.action[buf.learner & (buf.action >= 68)]
    assert sent.numel() > 0 and int(sent.max()) < 72            # the learner sent messages, all legal
    data = read_checkpoint(tmp_path / "signals" / "model.pt")
    assert data["arch"]["signals"] == 4
    assert data["arch"]["obs_size"] == trainer.env.obs_size


def test_other_play_trains_on_a_signals_variant(tmp_path):
    cfg = tiny(tmp_path, "other_play", *SHORT, "other_play=partner", "total_decisions=1024")
    trainer = Trainer(cfg, log=lambda _: None)
    assert len(trainer.cooperation.other_play.maps) == 6 * 24
    trainer.train()
    assert (tmp_path / "other_play" / "model.pt").is_file()


class HandReader(torch.nn.Module):
    """Message logits read from the hand alone (``hand_weight``) or from the seat to act alone
    (``seat_weight``): a policy whose messages tell about the hand, or only about the seat."""

    def __init__(self, hand_weight: float, seat_weight: float) -> None:
        super().__init__()
        self.hand_weight, self.seat_weight = hand_weight, seat_weight

    def forward(self, obs, mask):
        from spades_env.observation import layout_for
        blocks = layout_for(make_rules("short_signals")).obs_blocks
        spades = obs[:, blocks["hand"].offset + 39:blocks["hand"].offset + 52].sum(1).long().clamp(max=3)
        seat = obs[:, blocks["to_act"].offset:blocks["to_act"].offset + 4].argmax(1)
        logits = torch.zeros(obs.shape[0], 72)
        logits[torch.arange(obs.shape[0]), 68 + spades] += self.hand_weight
        logits[torch.arange(obs.shape[0]), 68 + seat] += self.seat_weight
        return logits.masked_fill(~mask, -1e9)


def test_the_message_information_term_is_about_the_hand_not_the_seat():
    from types import SimpleNamespace

    from spades_env.vector import SpadesVectorEnv
    from train.ppo.update import message_information
    env = SpadesVectorEnv(64, rules="short_signals", seed=3)
    obs, mask = env.reset()
    rows = [(obs, mask)]
    for _ in range(3):                                  # every seat's signal turn
        obs, mask, *_ = env.step(torch.full((64,), 68))
        rows.append((obs, mask))
    order = torch.randperm(4 * 64, generator=torch.Generator().manual_seed(0))    # a minibatch's random order
    obs, mask = torch.cat([o for o, _ in rows])[order], torch.cat([m for _, m in rows])[order]
    action = torch.full((obs.shape[0],), 68)
    cfg = SimpleNamespace(learn_precision="float32")

    def information(policy):
        return float(message_information(policy, obs, mask, policy(obs, mask), action, cfg, torch.device("cpu")))

    assert information(HandReader(0.0, 0.0)) < 1e-6          # uniform messages
    assert information(HandReader(0.0, 30.0)) < 0.05         # messages by the seat: nothing about the hand
    mixed = information(HandReader(30.0, 30.0))               # by the hand and the seat: part of it
    told = information(HandReader(30.0, 0.0))                 # messages by the spades held
    assert 0.5 < told <= float(torch.log(torch.tensor(4.0))) and mixed < told - 0.2
    cards = torch.arange(obs.shape[0])[:, None]
    no_messages = message_information(HandReader(30.0, 0.0), obs, mask, torch.zeros(obs.shape[0], 72),
                                      torch.zeros(obs.shape[0], dtype=torch.long) + cards[:, 0] % 52, cfg,
                                      torch.device("cpu"))
    assert float(no_messages) == 0.0                          # no message decision in the minibatch


def test_message_information_needs_rules_with_messages(tmp_path):
    import pytest

    from train.ppo.config import ConfigError
    with pytest.raises(ConfigError, match="have no messages"):
        tiny(tmp_path, "no_messages", "message_information_coef=0.1").validate()
    with pytest.raises(ConfigError, match="message_information_coef=-1"):
        tiny(tmp_path, "negative", *SHORT, "message_information_coef=-1").validate()
    tiny(tmp_path, "fine", *SHORT, "message_information_coef=0.1").validate()


def test_a_partner_population_plays_a_signals_table(tmp_path):
    first = tiny(tmp_path, "member", *SHORT, "total_decisions=512", "checkpoint_every=1")
    Trainer(first, log=lambda _: None).train()
    members = [str(tmp_path / "member" / "checkpoints" / "update_*.pt"), "heuristic"]
    cfg = tiny(tmp_path, "population", *SHORT, "total_decisions=1024", f"partner_population={members}",
               "partner_population_share=1.0")
    trainer = Trainer(cfg, log=lambda _: None)
    trainer.train()
    assert (tmp_path / "population" / "model.pt").is_file()
