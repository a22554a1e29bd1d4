"""The long from-scratch runs' parts (issue 73): a learning-rate schedule and a nil exploration
that depend on the decisions made only (a run extended or resumed follows the schedule of one never
stopped), the count of positions with an intact nil, and bids valued by play-outs of the policy
joining the counterfactual bids' fit, all resumed exactly."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import pytest
import torch

from spades_env.game import PHASE_BIDDING, PHASE_PLAY
from train.bids.bid_counterfactual import NUM_BIDS, CounterfactualBids
from train.ppo.config import ConfigError, load_config
from train.ppo.rollout import intact_nils
from train.ppo.schedules import learning_rate_at, nil_explore_at
from train.ppo.trainer import Trainer

from helpers_train import tiny

DECISIONS_SCHEDULE = ["anneal_lr=false", "learning_rate=0.001", "lr_warmup_decisions=1024",
                      "lr_half_life_decisions=1024", "lr_floor=0.0002"]


def rates(cfg, updates: int) -> list[float]:
    return [learning_rate_at(cfg, u) for u in range(updates)]


def test_the_decisions_schedule_warms_up_halves_and_stops_at_its_floor():
    cfg = load_config(None, ["num_envs=32", "rollout_steps=16", "minibatch_size=256", "total_decisions=8192", *DECISIONS_SCHEDULE])
    # 512 decisions an update: half the warm-up after the first, then halving every 1,024 decisions
    assert learning_rate_at(cfg, 0) == pytest.approx(0.001 * 0.5)
    assert learning_rate_at(cfg, 1) == pytest.approx(0.001 * 0.5 ** 0.5)
    assert learning_rate_at(cfg, 4) == pytest.approx(0.001 * 0.25)
    assert learning_rate_at(cfg, 12) == pytest.approx(0.0002)         # the floor: 0.001 * 0.5 ** 6 is below it
    constant = load_config(None, ["anneal_lr=false", "learning_rate=0.001"])
    assert set(rates(constant, 50)) == {0.001}


def test_the_decisions_schedule_does_not_depend_on_the_planned_length():
    short = load_config(None, ["num_envs=32", "rollout_steps=16", "minibatch_size=256", "total_decisions=4096", *DECISIONS_SCHEDULE])
    long = load_config(None, ["num_envs=32", "rollout_steps=16", "minibatch_size=256", "total_decisions=40960", *DECISIONS_SCHEDULE])
    assert rates(short, 8) == rates(long, 8)
    # the linear anneal does: the reason a run extended on resume needs anneal_lr: false
    assert rates(short.replace(anneal_lr=True, lr_warmup_decisions=0, lr_half_life_decisions=None, lr_floor=0.0), 8) \
        != rates(long.replace(anneal_lr=True, lr_warmup_decisions=0, lr_half_life_decisions=None, lr_floor=0.0), 8)
    # and it is the formula it always was
    quick = load_config("configs/quickstart.yaml")
    assert learning_rate_at(quick, 7) == pytest.approx(quick.learning_rate * (1 - 7 / quick.updates))


def test_nil_exploration_falls_to_its_final_share_and_stays():
    cfg = load_config(None, ["num_envs=32", "rollout_steps=16", "minibatch_size=256", "nil_explore=0.3", "nil_explore_final=0.1",
                             "nil_explore_decisions=2048"])
    assert [nil_explore_at(cfg, u) for u in (0, 2, 4, 9)] == pytest.approx([0.3, 0.2, 0.1, 0.1])
    assert nil_explore_at(cfg.replace(nil_explore_decisions=None, nil_explore_final=0.0), 9) == 0.3


@pytest.mark.parametrize("override, message", [
    ("lr_half_life_decisions=1000", r"set anneal_lr: false"),
    ("lr_floor=0.5", r"lr_floor=0.5: expected 0 up to learning_rate"),
    ("nil_explore_final=0.2", r"set nil_explore_decisions too"),
    ("nil_explore_decisions=0", r"nil_explore_decisions=0: expected a positive number of decisions"),
    ("bid_playout_every=5", r"needs bid_learning: counterfactual"),
    ("bid_playout_deals=0", r"bid_playout_deals=0: expected a positive integer"),
])
def test_bad_schedule_settings_are_refused_by_name(override, message):
    extra = ["anneal_lr=false"] if override.startswith("lr_floor") else []
    with pytest.raises(ConfigError, match=message):
        load_config(None, [*extra, override])


def test_intact_nils_are_nils_bid_and_not_broken_while_cards_are_played():
    state = SimpleNamespace(phase=torch.tensor([PHASE_PLAY, PHASE_PLAY, PHASE_PLAY, PHASE_BIDDING]),
                            bids=torch.tensor([[3, 0, 4, 2], [3, 0, 4, 2], [3, 1, 4, 2], [3, 0, -1, -1]]),
                            tricks_taken=torch.tensor([[1, 0, 2, 0], [1, 1, 2, 0], [0, 0, 0, 0], [0, 0, 0, 0]]))
    assert intact_nils(state).tolist() == [True, False, False, False]


def test_played_out_values_join_the_fit_and_survive_a_checkpoint():
    env = SimpleNamespace(num_envs=4, reward_scheme=SimpleNamespace(reward="team_diff"))
    bids = CounterfactualBids(env, obs_size=5, keep_updates=2, device=torch.device("cpu"),
                              bid_offsets=torch.full((NUM_BIDS,), 0.5))
    assert bids.records() is None
    values = torch.full((3, 16), float("nan"))
    values[0, :NUM_BIDS], values[2, 3] = 10.0, -20.0       # row 1: a valued blind-nil decision, no bid
    values[1, 14:] = 5.0
    data = {"obs": torch.ones(3, 5, dtype=torch.float16), "mask": torch.ones(3, 68, dtype=torch.bool),
            "values": values}
    assert bids.set_played_out(data, reward_scale=0.01) == 2
    obs, mask, target = bids.records()
    assert obs.dtype == torch.float32 and obs.shape == (2, 5) and mask.shape == (2, 68)
    assert target[0].tolist() == pytest.approx([0.6] * NUM_BIDS)
    assert target[1, 3].item() == pytest.approx(0.3) and torch.isnan(target[1, 0])
    again = CounterfactualBids(env, obs_size=5, keep_updates=2, device=torch.device("cpu"))
    again.load_state_dict(bids.state_dict())
    for a, b in zip(again.records(), bids.records()):
        assert torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))


SCRATCH_LONG = ["bid_learning=counterfactual", "bid_counterfactual_nil=played", "imitation_decisions=0",
                "opponents={self: 0.8, pool: 0.2}", "nil_explore=0.3", "nil_explore_max_bid=1",
                "nil_explore_final=0.1", "nil_explore_decisions=2048", "bid_playout_every=2", "bid_playout_deals=4",
                "start=varied", "varied_start_share=0.5", "bag_cost=10", "eval_every=0", *DECISIONS_SCHEDULE]


def metrics(path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def test_a_long_scratch_run_extended_on_resume_is_the_run_never_stopped(tmp_path):
    """Stopped at update 2 as a kill after a checkpoint would leave it, then resumed with a longer
    total_decisions: the same learning rates, nil exploration and weights as one straight run."""
    straight = Trainer(tiny(tmp_path, "straight", *SCRATCH_LONG, "total_decisions=2560"), log=lambda line: None)
    straight.train()
    first = Trainer(tiny(tmp_path, "legs", *SCRATCH_LONG, "total_decisions=1024"), log=lambda line: None)
    first.train()
    second = Trainer(tiny(tmp_path, "legs", *SCRATCH_LONG, "total_decisions=2560"), resume=True, log=lambda line: None)
    second.train()
    rows, legs = metrics(tmp_path / "straight" / "metrics.csv"), metrics(tmp_path / "legs" / "metrics.csv")
    for column in ("learning_rate", "nil_explore", "bid_playout_bids", "train__intact_nil_share", "loss__approx_kl"):
        assert [r[column] for r in legs] == [r[column] for r in rows], column
    assert any(r["bid_playout_bids"] for r in rows)
    for key, value in straight.policy.state_dict().items():
        assert torch.equal(value, second.policy.state_dict()[key]), key


def test_play_outs_are_refused_under_rules_with_messages():
    from spades_env.rules import RulesError, make_rules
    try:
        if not getattr(make_rules("short_signals"), "signals", 0):
            pytest.skip("no rules with messages in this tree")
    except RulesError:
        pytest.skip("no rules with messages in this tree")
    with pytest.raises(ConfigError, match=r"rules with signals are not played out yet"):
        load_config(None, ["rules=short_signals", "bid_learning=counterfactual", "bid_playout_every=3"])
