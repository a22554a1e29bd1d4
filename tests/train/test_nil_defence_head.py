"""The policy's nil-defence head (agents.networks.PolicyNet, ``nil_defence_head``): where it plays,
that it starts as the card head, and that training it moves nothing else."""

from __future__ import annotations

import random

import pytest
import torch

from agents.neural import NeuralAgent, check_declared_sizes, policy_from_checkpoint
from agents.networks import PolicyNet
from spades_env import spades_v0
from spades_env.observation import Layout
from spades_env.rules import make_rules
from train.ppo.config import ConfigError, load_config
from train.labelling.positions import nil_defence_position, random_start
from train.ppo.trainer import Trainer
from train.ppo.update import learner_logits

from helpers_networks import batched, observed_positions
from helpers_train import tiny


def heuristic_positions(hands: int = 12) -> tuple[list[dict], torch.Tensor, torch.Tensor]:
    """Every decision of ``hands`` hands of the heuristic from random scores (so blind nils come
    up as well as nils): the observation dicts and their batched tensors."""
    rules, rng = make_rules("standard"), random.Random(3)
    seen = observed_positions("standard", hands=hands, starts=lambda hand: random_start(rules, 1.0, rng))
    return (seen, *batched(seen))


@pytest.fixture(scope="module")
def positions():
    return heuristic_positions()


def small_policy(nil_defence_head: bool = True, seed: int = 0) -> PolicyNet:
    torch.manual_seed(seed)
    net = PolicyNet(742, hidden=32, layers=2, head_hidden=16, card_features=True, nil_defence_head=nil_defence_head)
    with torch.no_grad():                     # a trained-looking card head, not the tiny initial scores
        net.card_score.weight.normal_()
        if nil_defence_head:
            net.copy_card_head_to_nil_defence()
    return net.eval()


def test_the_gate_is_exactly_the_labellers_nil_defence_positions(positions):
    seen, obs, _ = positions
    gate = small_policy().nil_defence_gate(obs)
    reference = torch.tensor([nil_defence_position(o) for o in seen])
    assert torch.equal(gate, reference)
    assert 30 < int(gate.sum()) < len(seen) - 100                    # both kinds of position are there
    from spades_env.observation import decode_observation
    blind = [decode_observation(o["observation"]) for o, g in zip(seen, gate) if g]
    assert any(v.blind[1] or v.blind[3] for v in blind)               # against a blind nil too


def test_a_new_head_plays_as_the_card_head_and_moves_only_its_positions(positions):
    _, obs, mask = positions
    plain = small_policy(nil_defence_head=False)
    grown = PolicyNet(742, hidden=32, layers=2, head_hidden=16, card_features=True, nil_defence_head=True).eval()
    grown.load_adding_nil_defence(plain.state_dict())
    with torch.no_grad():
        assert torch.equal(grown(obs, mask), plain(obs, mask))
        for p in grown.part_parameters("nil_defence"):
            p.add_(torch.randn_like(p) * 0.5)
        moved, before = grown(obs, mask), plain(obs, mask)
    gate = grown.nil_defence_gate(obs)
    assert torch.equal(moved[~gate], before[~gate])                   # elsewhere exactly as before
    changed = (moved[gate] - before[gate]).abs().amax(1) > 1e-4
    assert bool(changed.all())
    assert bool((moved[gate][~mask[gate]] < -1e8).all()) and bool((moved[gate][mask[gate]] > -1e8).all())
    with pytest.raises(ValueError, match="without its nil-defence head"):
        grown.load_adding_nil_defence({**plain.state_dict(), "stray": torch.zeros(1)})


def trick_winner(view):
    """The relative seat whose card wins the current trick so far (None before the first card)."""
    if not view.current_trick:
        return None
    led = view.current_trick[0][1] // 13
    def strength(card):
        suit = card // 13
        return (2 if suit == 3 else 1 if suit == led else 0, card % 13)
    return max(view.current_trick, key=lambda seat_card: strength(seat_card[1]))[0]


def test_the_head_reads_who_holds_the_nil_and_the_learner_sees_the_same_logits(positions):
    seen, obs, mask = positions
    net = small_policy()
    gate = net.nil_defence_gate(obs)
    trunk, per_card = net.embed(obs[gate])
    context = net.nil_defence_context(obs[gate], per_card)
    from spades_env.observation import decode_observation
    for row, o in zip(context, [o for o, g in zip(seen, gate) if g]):
        view = decode_observation(o["observation"])
        intact = [float(view.bids[s] == 0 and view.tricks_taken[s] == 0) for s in (1, 3)]
        in_trick = [float(any(seat == s for seat, _ in view.current_trick)) for s in (1, 3)]
        winning = [float(trick_winner(view) == s) for s in (1, 3)]
        assert row.tolist() == intact + in_trick + winning
    assert context[:, 4:].sum() > 0
    with torch.no_grad():
        for p in net.part_parameters("nil_defence"):
            p.add_(torch.randn_like(p) * 0.5)
        config = load_config(None, ["card_features=true", "nil_defence_head=true"])
        assert torch.equal(learner_logits(net, obs, mask, config, torch.device("cpu")), net(obs, mask))


def test_a_model_with_the_head_saves_loads_and_plays(tmp_path, positions):
    _, obs, mask = positions
    net = small_policy()
    data = {"format": "spades-neural-policy", "arch": net.arch, "policy": net.state_dict(), "rules": "standard"}
    check_declared_sizes(data, "model.pt")
    path = tmp_path / "model.pt"
    torch.save(data, path)
    again, info = policy_from_checkpoint(torch.load(path, weights_only=True))
    assert info["arch"]["nil_defence_head"] is True
    with torch.no_grad():
        assert torch.equal(again(obs, mask), net(obs, mask))
    bot = NeuralAgent(checkpoint=path)
    env = spades_v0.raw_env(rules="standard", episode="hand")
    env.reset(seed=0)
    obs_dict, *_ = env.last()
    assert obs_dict["action_mask"][bot.act(obs_dict)]
    plain = small_policy(nil_defence_head=False)
    assert not plain.can_grow_from(net.arch) and not net.can_grow_from(plain.arch)
    with pytest.raises(ValueError, match="no nil-defence head"):
        plain.part_parameters("nil_defence")
    with pytest.raises(ValueError, match="nil_defence_head: expected card_features"):
        PolicyNet(742, hidden=32, nil_defence_head=True)
    three_players = Layout(make_rules("cutthroat")).obs_size
    with pytest.raises(ValueError, match="four players in two sides"):
        PolicyNet(three_players, hidden=32, card_features=True, nil_defence_head=True)


def test_policy_parts_nil_defence_trains_the_head_alone_from_a_policy_without_one(tmp_path):
    """init_from a policy without the head gives it one that plays as before; PPO then moves the
    head's weights and nothing else of the policy (the critic trains)."""
    source = Trainer(tiny(tmp_path, "source", "imitation_decisions=0", "card_features=true"), log=lambda line: None)
    start = tmp_path / "start.pt"
    torch.save({"format": "spades-neural-policy", "arch": source.policy.arch, "policy": source.policy.state_dict(),
                "rules": "standard"}, start)
    lines = []
    trainer = Trainer(tiny(tmp_path, "head", "card_features=true", "nil_defence_head=true",
                           "policy_parts=nil_defence", f"init_from={start}"), log=lines.append)
    assert any("gets a nil-defence head" in line for line in lines)
    _, obs, mask = heuristic_positions(hands=3)
    with torch.no_grad():
        assert torch.equal(trainer.policy(obs, mask), source.policy(obs, mask))
    before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    critic_before = {k: v.clone() for k, v in trainer.critic.state_dict().items()}
    for _ in range(3):
        trainer.learn(trainer.collect())
    moved = {k for k, v in trainer.policy.state_dict().items() if not torch.equal(before[k], v)}
    assert moved and all(k.startswith("nil_") for k in moved), moved
    trainer.opponents.add(trainer.policy)                          # past policies keep the head too
    with torch.no_grad():
        assert torch.equal(trainer.opponents.nets[0](obs, mask), trainer.policy(obs, mask))
    assert any(not torch.equal(critic_before[k], v) for k, v in trainer.critic.state_dict().items())
    with pytest.raises(ConfigError, match="policy_parts: nil_defence needs nil_defence_head: true"):
        load_config(None, ["policy_parts=nil_defence"])
    with pytest.raises(ConfigError, match="nil_defence_head: true needs card_features: true"):
        load_config(None, ["nil_defence_head=true"])
