"""reward_bias (coop.methods.hidden_utility): the events each decision earns, checked against a readable
reference that works the trick out from the cards on the table; the learner's rewards in a
rollout carry exactly the bias; the counterfactual bids are offset; bad settings are refused."""

from __future__ import annotations

import pytest
import torch

from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, NIL_ACTION
from spades_env.vector import SpadesVectorEnv
from train.ppo.config import ConfigError
from coop.methods.hidden_utility import EVENTS, HiddenUtility, HiddenUtilityError, check_reward_bias
from train.ppo.trainer import Trainer

from helpers_train import tiny

WEIGHTS = {"bid": 3.0, "nil": 20.0, "lead_spade": 5.0, "ruff": 7.0, "overtake": -11.0}


def reference_bias(weights: dict, trick: list[int], leader: int, seat: int, action: int) -> float:
    """One decision's bias from the cards on the table (-1: not played yet), read as a person
    would: who played first, which suit was led, who is winning now."""
    if action >= BID_ACTION_BASE:
        if action in (NIL_ACTION, BLIND_NIL_ACTION):
            return weights.get("nil", 0.0)
        return weights.get("bid", 0.0) * (action - BID_ACTION_BASE) if action < BID_ACTION_BASE + 14 else 0.0
    order = [(leader + i) % 4 for i in range(4)]
    played = [(s, trick[s]) for s in order if trick[s] >= 0]
    suit = action // 13
    if not played:
        return weights.get("lead_spade", 0.0) if suit == 3 else 0.0
    led = played[0][1] // 13
    winner, best = played[0]
    for s, card in played[1:]:
        if (card // 13 == best // 13 and card > best) or (card // 13 == 3 and best // 13 != 3):
            winner, best = s, card
    total = 0.0
    if suit == 3 and led != 3:
        total += weights.get("ruff", 0.0)
    beats = (suit == best // 13 and action > best) or (suit == 3 and best // 13 != 3)
    if winner == (seat + 2) % 4 and beats:
        total += weights.get("overtake", 0.0)
    return total


@pytest.mark.parametrize("backend", ["torch", "native"])
def test_events_match_the_readable_reference(backend):
    tables = 16
    env = SpadesVectorEnv(tables, rules="standard", reward="team_diff", episode="hand", seed=3, backend=backend)
    gen = torch.Generator().manual_seed(4)
    obs, mask = env.reset(scores=torch.full((tables, 2), -150) * torch.tensor([1, 0]), bags=None)
    utility = HiddenUtility(WEIGHTS, reward_scale=1.0)
    seen = {event: 0 for event in EVENTS}
    for _ in range(300):
        actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
        seat = env.to_act
        got = utility.rewards(env.state, seat, actions)
        s = env.state
        for b in range(tables):
            want = reference_bias(WEIGHTS, s.trick[b].tolist(), int(s.leader[b]), int(seat[b]), int(actions[b]))
            assert float(got[b]) == pytest.approx(want), (b, int(actions[b]))
            for event in EVENTS:
                if reference_bias({event: 1.0}, s.trick[b].tolist(), int(s.leader[b]), int(seat[b]),
                                  int(actions[b])) > 0:
                    seen[event] += 1
        obs, mask, _, _, _ = env.step(actions)
    assert all(count > 5 for count in seen.values()), seen      # every event was met and checked


def test_bid_offsets_and_scale():
    utility = HiddenUtility({"bid": 2.0, "nil": 30.0}, reward_scale=0.01)
    offsets = utility.bid_offsets()
    assert offsets[0].item() == pytest.approx(0.30)
    assert offsets[5].item() == pytest.approx(0.10)
    assert offsets[13].item() == pytest.approx(0.26)
    assert not HiddenUtility({}, 0.01) and not HiddenUtility({"ruff": 0}, 0.01)


@pytest.mark.parametrize("bias, message", [
    ({"trumps": 5}, "unknown event 'trumps'"),
    ({"ruff": "lots"}, "ruff='lots'"),
    ({"nil": float("nan")}, "expected points between"),
    ({"nil": 1e6}, "expected points between"),
    ({"nil": True}, "expected points between"),
    ([1, 2], "expected a mapping"),
])
def test_bad_biases_are_refused(bias, message):
    with pytest.raises(HiddenUtilityError, match=message):
        check_reward_bias(bias)


def test_config_refuses_a_bad_bias_and_the_win_reward(tmp_path):
    with pytest.raises(ConfigError, match="unknown event 'trump'"):
        tiny(tmp_path, "x", "reward_bias={trump: 1}")
    with pytest.raises(ConfigError, match="need reward team_score or team_diff"):
        tiny(tmp_path, "x", "reward_bias={ruff: 1}", "reward=win", "episode=game")
    with pytest.raises(ConfigError, match="expert iteration's labels"):
        tiny(tmp_path, "x", "reward_bias={ruff: 1}", "expert_rounds=1")
    with pytest.raises(ConfigError, match="expert iteration's labels"):
        tiny(tmp_path, "x", "diversity_from=[scratch-s1]", "diversity_coef=1", "expert_rounds=1")
    with pytest.raises(ConfigError, match="need reward team_score or team_diff"):
        tiny(tmp_path, "x", "diversity_from=[scratch-s1]", "diversity_coef=1", "reward=win", "episode=game")
    assert tiny(tmp_path, "x", "reward_bias={ruff: 10, nil: -5}").reward_bias == {"ruff": 10, "nil": -5}


def test_the_learners_rewards_carry_exactly_the_bias(tmp_path):
    """The same seeded rollout with and without a bias: the rewards differ only at the learner's
    ruffs, by the weight; the heuristic's seats are paid the plain game."""
    def rollout(bias: str):
        trainer = Trainer(tiny(tmp_path, f"b{len(bias)}", "imitation_decisions=0", "num_envs=32",
                               "rollout_steps=64", "opponents={self: 0.5, heuristic: 0.5}",
                               f"reward_bias={bias}"), log=lambda line: None)
        try:
            buf = trainer.collect()
            return {k: getattr(buf, k).clone() for k in ("reward", "action", "seat", "learner")}
        finally:
            trainer.run_lock.release()

    plain, biased = rollout("{}"), rollout("{ruff: 25}")
    assert torch.equal(plain["action"], biased["action"])
    extra = biased["reward"] - plain["reward"]                  # (T, B, 4)
    acted = torch.nn.functional.one_hot(plain["seat"], 4).bool()
    paid = extra[acted].view_as(plain["seat"])
    assert torch.all(extra[~acted] == 0)
    ruffs = torch.isclose(paid, torch.tensor(0.25))
    assert torch.all((paid == 0) | ruffs)
    assert int(ruffs.sum()) > 10 and bool(plain["learner"][ruffs].all())
    assert bool((plain["action"][ruffs] >= 39).all())            # spades
    assert not bool(plain["learner"].all())                     # the heuristic sat at some tables


def test_counterfactual_bids_are_offset_by_the_bid_events():
    from train.bids.bid_counterfactual import CounterfactualBids
    tables = 16
    env = SpadesVectorEnv(tables, rules="standard", reward="team_diff", episode="hand", seed=8, backend="native")
    offsets = HiddenUtility({"bid": 4.0, "nil": 50.0}, reward_scale=0.01).bid_offsets()
    plain = CounterfactualBids(env, env.obs_size, keep_updates=10, device=torch.device("cpu"))
    biased = CounterfactualBids(env, env.obs_size, keep_updates=10, device=torch.device("cpu"), bid_offsets=offsets)
    gen = torch.Generator().manual_seed(0)
    obs, mask = env.reset()
    for _ in range(60):
        actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
        everyone = torch.ones(tables, dtype=torch.bool)
        plain.before_step(obs, mask, actions, everyone)
        biased.before_step(obs, mask, actions, everyone)
        obs, mask, _, done, _ = env.step(actions)
        plain.after_step(done)
        biased.after_step(done)
    plain.end_rollout()
    biased.end_rollout()
    _, _, want = plain.records()
    _, _, got = biased.records()
    legal = ~torch.isnan(want)
    assert torch.equal(legal, ~torch.isnan(got)) and int(legal.sum()) > 50
    assert torch.allclose((got - want)[legal], offsets.expand_as(got)[legal])
