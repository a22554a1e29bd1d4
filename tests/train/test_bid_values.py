"""Monte-Carlo bid values (train/bids/bid_values.py): the values are the hands played out with each
bid (checked against the AEC env), the fit moves the bidding head alone, rounds resume."""

from __future__ import annotations

import pytest
import torch

from agents.neural import read_checkpoint
from spades_env import spades_v0
from train.ppo.config import config_from_dict
from train.ppo.trainer import Trainer

from helpers_train import tiny


def replay_bid(policy, deal: torch.Tensor, turn: int, action: int, scores=None, opponent=None) -> float:
    """The AEC env, the same deal, greedy play, ``action`` (a bid, blind nil or look) forced at the
    ``turn``-th bidding turn (a blind-nil decision there not being valued, the seat looks and
    ``action`` is its bid): the bidder's side's points minus the other side's. ``opponent``: an
    agent playing the other side of the bidder's."""
    from agents.neural import NeuralAgent
    from spades_env.cards import mask_to_cards
    env = spades_v0.raw_env(rules="standard", reward="team_diff", episode="hand", reward_scale=1.0)
    options = {"deal": [mask_to_cards(int(h)) for h in deal[:4]], "dealer": int(deal[4])}
    if scores is not None:
        options["scores"] = scores
    env.reset(seed=0, options=options)
    player = NeuralAgent(policy=policy)
    other_side = (int(deal[4]) + 1 + turn + 1) % 2          # the side that is not the bidder's
    bids_made, bidder, total = 0, None, 0.0
    for name in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        if opponent is not None and int(name[-1]) % 2 == other_side:
            chosen = opponent.act(obs)
        else:
            chosen = player.act(obs)
        if bids_made == turn and bidder is None and 52 <= chosen < 68:
            if obs["action_mask"][66] and action < 66:
                chosen = 67                              # look, then bid ``action``
            else:
                bidder, chosen = name, action
        if 52 <= chosen < 67:
            bids_made += 1
        env.step(chosen)
        if bidder is not None:
            total += env.rewards[bidder]
    return total


def test_bid_values_are_the_hands_played_out_with_each_bid():
    from agents.networks import PolicyNet
    from train.bids.bid_values import collect_bid_values
    torch.manual_seed(3)
    policy = PolicyNet(742, hidden=32, layers=1, head_hidden=16)
    generator = torch.Generator().manual_seed(0)
    data = collect_bid_values(policy, "standard", 6, generator, torch.device("cpu"), deals_per_batch=4)
    assert data["values"].shape == (6, 16) and data["obs"].shape == (6, 742)
    legal = data["mask"][:, 52:68]
    assert torch.equal(~torch.isnan(data["values"]), legal)
    assert not legal[:, 14:].any()                  # from 0-0 nobody is offered blind nil
    assert set(data["turn"].tolist()) <= {0, 1, 2, 3}
    for d in range(2):
        for bid in torch.nonzero(legal[d])[:, 0].tolist()[:5]:
            assert replay_bid(policy, data["deal"][d], int(data["turn"][d]), 52 + bid) == float(data["values"][d, bid]), (d, bid)


def test_blind_nil_decisions_are_valued_too():
    """From a score where one side trails by 300 its seats are offered blind nil first: on some
    deals that decision is valued (blind nil against looking), on the others the seat looks and
    its bid is valued; every value is the hand played out (the AEC env)."""
    from agents.networks import PolicyNet
    from train.bids.bid_values import collect_bid_values
    torch.manual_seed(3)
    policy = PolicyNet(742, hidden=32, layers=1, head_hidden=16)
    generator = torch.Generator().manual_seed(1)
    trailing = collect_bid_values(policy, "standard", 16, generator, torch.device("cpu"), deals_per_batch=16,
                                  start=lambda n: (torch.tensor([[-150, 100]]).repeat(n, 1), None))
    values, legal = trailing["values"], trailing["mask"][:, 52:68]
    assert values.shape == (16, 16) and torch.equal(~torch.isnan(values), legal)
    blind = legal[:, 14]
    assert torch.equal(blind, legal[:, 15]) and torch.equal(blind, ~legal[:, :14].any(1))
    assert 0 < int(blind.sum()) < 16                # both kinds of decision occur
    checked = 0
    for d in range(16):
        actions = [66, 67] if blind[d] else [52 + b for b in torch.nonzero(legal[d])[:, 0].tolist()[:2]]
        for action in actions:
            assert replay_bid(policy, trailing["deal"][d], int(trailing["turn"][d]), action,
                              scores=[-150, 100]) == float(values[d, action - 52]), (d, action)
            checked += 1
    assert checked >= 16


def test_bids_can_be_valued_against_the_heuristic():
    """On a share of the deals the heuristic plays the other side (bids and cards): those values
    are the hands played out in the AEC env with the heuristic there; the rest are self-play."""
    from agents.heuristic import HeuristicAgent
    from agents.networks import PolicyNet
    from train.bids.bid_values import collect_bid_values
    torch.manual_seed(3)
    policy = PolicyNet(742, hidden=32, layers=1, head_hidden=16)
    data = collect_bid_values(policy, "standard", 12, torch.Generator().manual_seed(2), torch.device("cpu"),
                              deals_per_batch=12, opponent=HeuristicAgent(), opponent_share=0.5)
    against = data["against_opponent"]
    assert 0 < int(against.sum()) < 12
    legal = data["mask"][:, 52:68]
    assert torch.equal(~torch.isnan(data["values"]), legal)
    differs = 0
    for d in range(12):
        for bid in torch.nonzero(legal[d])[:, 0].tolist()[:3]:
            value = float(data["values"][d, bid])
            deal, turn = data["deal"][d], int(data["turn"][d])
            if against[d]:
                assert replay_bid(policy, deal, turn, 52 + bid, opponent=HeuristicAgent()) == value, (d, bid)
                differs += replay_bid(policy, deal, turn, 52 + bid) != value
            else:
                assert replay_bid(policy, deal, turn, 52 + bid) == value, (d, bid)
    assert differs > 0                              # the heuristic did play those deals
    with pytest.raises(ValueError, match="opponent_share > 0 needs an opponent"):
        collect_bid_values(policy, "standard", 1, torch.Generator(), torch.device("cpu"), opponent_share=0.5)


def test_training_values_bids_against_its_heuristic_when_asked(tmp_path, monkeypatch):
    """``bid_value_heuristic_share`` reaches the collection, with the trainer's heuristic as the opponent."""
    import train.bids.bid_values
    seen = {}
    collect = train.bids.bid_values.collect_bid_values

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return collect(*args, **kwargs)

    monkeypatch.setattr(train.bids.bid_values, "collect_bid_values", spy)
    config = tiny(tmp_path, "hbids", "imitation_decisions=0", "bid_value_deals=4", "bid_value_epochs=1",
                  "bid_value_heuristic_share=1.0", "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=lambda line: None)
    trainer.value_bids()
    assert seen["opponent"] is trainer.heuristic and seen["opponent_share"] == 1.0


def test_bid_value_fit_moves_only_the_bidding_head():
    from agents.networks import PolicyNet
    from train.bids.bid_values import fit_bid_head
    torch.manual_seed(0)
    policy = PolicyNet(742, hidden=32, layers=1, head_hidden=16)
    low = torch.rand(2000) < 0.5
    obs = low[:, None].float() + 0.1 * torch.rand(2000, 742)
    mask = torch.zeros(2000, 68, dtype=torch.bool)
    mask[:, 52:66] = True
    # A value that depends on the observation: bid 3 is best in "low" positions, bid 8 elsewhere.
    best = torch.where(low, 3, 8)
    values = -10.0 * (torch.arange(16)[None, :] - best[:, None]).abs().float() + 5 * torch.randn(2000, 16)
    values[:, 14:] = float("nan")                   # blind nil and look: not offered here
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    lines: list[str] = []
    result = fit_bid_head(policy, {"obs": obs.half(), "mask": mask, "values": values}, 10.0, 40, 3e-3, 256,
                          torch.Generator().manual_seed(0), lines.append)
    assert result["bid_value_epoch"] > 0 and "kept epoch" in lines[-1]
    with torch.no_grad():
        picked = policy(obs, mask)[:, 52:66].argmax(1)
    assert float((picked == best).float().mean()) > 0.8
    for key, value in policy.state_dict().items():
        assert torch.equal(value, before[key]) == (not key.startswith("bid_head")), key


def test_bid_value_rounds_run_in_training_and_are_not_repeated_on_resume(tmp_path):
    config = tiny(tmp_path, "bids", "imitation_decisions=0", "bid_value_deals=8", "bid_value_rounds=2",
                  "bid_value_epochs=2", "max_updates=1", "eval_every=0")
    logs: list[str] = []
    trainer = Trainer(config, log=logs.append)
    start = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    trainer.value_bids()
    for key, value in trainer.policy.state_dict().items():
        if not key.startswith("bid_head"):
            assert torch.equal(value, start[key]), key
    trainer.train()                                     # the second round, then one update
    assert sum(line.startswith("bid values: kept") for line in logs) == 2
    assert any(line.startswith("bid values, round 2: 8/8 deals played out") for line in logs)   # progress lines
    assert read_checkpoint(tmp_path / "bids" / "checkpoints" / "last.pt")["bid_value_rounds_done"] == 2
    logs.clear()
    Trainer(config_from_dict({**config.to_dict(), "max_updates": 2}), resume=True, log=logs.append).train()
    assert not any(line.startswith("bid values") for line in logs)


def test_bids_valued_by_the_game_in_training_are_the_tools_win_values(tmp_path, monkeypatch):
    """``bid_value_objective: win``: the bidding head is fitted to the values ``python -m
    train.bids.game_bid_values fit --objective win`` computes from the same collection (the win
    table built from the hands played with the policy's own bids), not to the hands' points."""
    import train.bids.bid_values
    from spades_env.rules import make_rules
    from train.bids.game_bid_values import WinTable, played_changes, win_values
    seen = {}
    collect, fit = train.bids.bid_values.collect_bid_values, train.bids.bid_values.fit_bid_head

    def collect_spy(*args, **kwargs):
        seen["collected"] = dict(collect(*args, **kwargs))
        return dict(seen["collected"])

    def fit_spy(policy, data, *args, **kwargs):
        raw = seen["collected"]
        table = WinTable(played_changes(raw, policy), make_rules("standard"))
        expected, _ = win_values(raw, table, 10.0)
        assert torch.equal(torch.isnan(data["values"]), torch.isnan(raw["values"]))
        assert torch.allclose(data["values"].nan_to_num(), expected.nan_to_num())
        assert not torch.allclose(data["values"].nan_to_num(), raw["values"].nan_to_num())    # not the points
        seen["fitted"] = True
        return fit(policy, data, *args, **kwargs)

    monkeypatch.setattr(train.bids.bid_values, "collect_bid_values", collect_spy)
    monkeypatch.setattr(train.bids.bid_values, "fit_bid_head", fit_spy)
    config = tiny(tmp_path, "winbids", "imitation_decisions=0", "bid_value_deals=48", "bid_value_epochs=1",
                  "bid_value_objective=win", "bag_cost=10", "start=real", "varied_start_share=1.0",
                  "max_updates=0", "eval_every=0")
    result = Trainer(config, log=lambda line: None).value_bids()
    assert seen["fitted"] and result["bid_value_win_table"]["step"] == 10


def test_a_bid_objective_that_does_not_exist_is_refused(tmp_path):
    from train.ppo.config import ConfigError
    with pytest.raises(ConfigError, match="bid_value_objective='wins': expected 'points' or 'win'"):
        tiny(tmp_path, "badbids", "bid_value_objective=wins")
