"""Nil practice from scratch (issue 73): the adaptive nil exploration (``nil_explore_target``) holds
the share of positions with an intact nil near its target, refuses settings that contradict it,
resumes exactly, and leaves runs without it as they were; the training-time evaluation reports
how often the greedy policy bids nil and keeps it, and how often the other side's nils get through."""

from __future__ import annotations

import csv
import math
from types import SimpleNamespace

import pytest
import torch

from evaluation import evaluate
from train.ppo.config import NIL_EXPLORE_FLOOR, ConfigError, load_config
from train.ppo.policy_eval import eval_columns, eval_line, nil_statistics
from train.ppo.schedules import nil_explore_at, nil_explore_step
from train.ppo.trainer import Trainer

from helpers_train import tiny

TARGET = ["nil_explore=0.5", "nil_explore_target=0.12"]


def test_a_step_moves_nil_explore_by_the_relative_error_within_its_bounds():
    cfg = load_config(None, [*TARGET, "nil_explore_gain=0.2", "nil_explore_max=0.6"])
    assert nil_explore_step(cfg, 0.3, 0.12) == pytest.approx(0.3)                     # at the target: stays
    assert nil_explore_step(cfg, 0.3, 0.24) == pytest.approx(0.3 * math.exp(-0.2))    # twice the target
    assert nil_explore_step(cfg, 0.3, 0.0) == pytest.approx(0.3 * math.exp(0.2))      # no intact nil
    assert nil_explore_step(cfg, 0.59, 0.0) == 0.6                                    # the ceiling
    assert nil_explore_step(cfg, NIL_EXPLORE_FLOOR, 0.9) == NIL_EXPLORE_FLOOR          # the floor: it can rise again
    assert nil_explore_step(cfg, NIL_EXPLORE_FLOOR, 0.0) > NIL_EXPLORE_FLOOR


@pytest.mark.parametrize("own, k", [(0.0, 0.25), (0.0, 0.6), (0.03, 1.0), (0.2, 0.5)])
def test_the_rule_settles_at_the_target_whatever_how_many_turns_qualify(own, k):
    """A model of the rollout: intact share = own + k * nil_explore (own: the policy's own nils, k:
    how many turns qualify and how long their nils last) with a deterministic +-0.02 of noise. The
    step's loop gain does not depend on k, so one gain settles every case without swinging; where
    the policy's own nils exceed the target, exploration sinks to its floor."""
    cfg = load_config(None, TARGET)
    p, path = 0.5, []
    for u in range(200):
        measured = own + k * p + 0.02 * (-1) ** u
        p = nil_explore_step(cfg, p, measured)
        path.append(p)
    if own >= 0.12:
        assert path[-1] == NIL_EXPLORE_FLOOR
        return
    settled = [own + k * q for q in path[100:]]
    assert min(settled) > 0.12 - 0.02 and max(settled) < 0.12 + 0.02
    # monotone approach to the target from above (no overshoot beyond the noise's own swing)
    assert all(own + k * q > 0.12 - 0.02 for q in path)


@pytest.mark.parametrize("override, message", [
    (["nil_explore_target=0"], r"nil_explore_target=0.0: expected a share of table steps in \(0, 1\)"),
    (["nil_explore_target=1.5"], r"nil_explore_target=1.5: expected a share"),
    (["nil_explore_target=0.1"], r"nil_explore=0.0: with nil_explore_target it is where the adaptive exploration starts"),
    (["nil_explore=0.5", "nil_explore_target=0.1", "nil_explore_max=0.3"], r"nil_explore=0.5: .*nil_explore_max=0.3"),
    (["nil_explore=0.5", "nil_explore_target=0.1", "nil_explore_gain=0"], r"nil_explore_gain=0.0: expected a number in \(0, 1\]"),
    (["nil_explore=0.5", "nil_explore_target=0.1", "nil_explore_gain=3"], r"nil_explore_gain=3.0"),
    (["nil_explore=0.5", "nil_explore_target=0.1", "nil_explore_max=0"], r"nil_explore_max=0.0: expected a number in"),
    (["nil_explore=0.5", "nil_explore_target=0.1", "nil_explore_decisions=1000"], r"both would set it; keep one"),
    (["nil_explore=0.5", "nil_explore_target=0.1", "nil_explore_final=0.2", "nil_explore_decisions=1000"],
     r"both would set it"),
    (["nil_explore_gain=0.5"], r"set nil_explore_target too"),
    (["nil_explore_max=0.5"], r"set nil_explore_target too"),
])
def test_settings_that_contradict_the_adaptive_exploration_are_refused(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, override)


def test_every_shipped_config_but_the_long_recipe_leaves_it_off():
    """Off by default, so a config that does not name it trains as before."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "configs"
    on = sorted(path.relative_to(root).as_posix() for path in root.rglob("*.yaml")
                if "nil_explore_target" in path.read_text())
    assert on == ["recipes/scratch/long.yaml"]
    long = load_config(root / "recipes" / "scratch" / "long.yaml")
    assert (long.nil_explore, long.nil_explore_target, long.nil_explore_max) == (0.5, 0.12, 0.5)
    assert load_config(None).nil_explore_target is None


ADAPTIVE = ["imitation_decisions=0", "opponents={self: 0.8, pool: 0.2}", "nil_explore=0.5", "nil_explore_max_bid=2",
            "nil_explore_target=0.12", "nil_explore_gain=0.5", "start=varied", "varied_start_share=0.5", "eval_every=0",
            "desync_tables=true", "anneal_lr=false", "eval_opponents=[random]", "final_eval_games=0"]


def metrics(path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def test_an_adaptive_run_stopped_and_resumed_is_the_run_never_stopped(tmp_path):
    """As test_scratch_schedule's long-run test: stopped at update 2 (a kill after a checkpoint),
    resumed with a longer total_decisions. The exploration is the run's state, so the resumed
    run must read it from the checkpoint: the same nil_explore, intact shares and weights."""
    straight = Trainer(tiny(tmp_path, "straight", *ADAPTIVE, "total_decisions=2048"), log=lambda line: None)
    straight.train()
    first = Trainer(tiny(tmp_path, "legs", *ADAPTIVE, "total_decisions=1024"), log=lambda line: None)
    first.train()
    second = Trainer(tiny(tmp_path, "legs", *ADAPTIVE, "total_decisions=2048"), resume=True, log=lambda line: None)
    assert second.collector.nil_explore == first.collector.nil_explore != 0.5
    second.train()
    rows, legs = metrics(tmp_path / "straight" / "metrics.csv"), metrics(tmp_path / "legs" / "metrics.csv")
    assert len(rows) == len(legs) == 4
    for column in ("nil_explore", "train__intact_nil_share", "train__nil_bid_share", "loss__approx_kl"):
        assert [r[column] for r in legs] == [r[column] for r in rows], column
    explored = [float(r["nil_explore"]) for r in rows]
    assert explored[0] == 0.5 and len(set(explored)) == 4
    cfg = straight.config
    for before, after, row in zip(explored, explored[1:], rows):     # each row's share set the next step
        assert after == pytest.approx(nil_explore_step(cfg, before, float(row["train__intact_nil_share"])))
    for key, value in straight.policy.state_dict().items():
        assert torch.equal(value, second.policy.state_dict()[key]), key


def test_without_a_target_the_exploration_is_the_schedule_and_the_checkpoint_as_before(tmp_path):
    cfg = tiny(tmp_path, "plain", "nil_explore=0.3", "nil_explore_final=0.1", "nil_explore_decisions=1024",
               "eval_every=0", "total_decisions=1536", "imitation_decisions=0", "eval_opponents=[random]")
    trainer = Trainer(cfg, log=lambda line: None)
    trainer.train()
    rows = metrics(tmp_path / "plain" / "metrics.csv")
    assert [float(r["nil_explore"]) for r in rows] == pytest.approx([nil_explore_at(trainer.config, u) for u in range(3)])
    assert "nil_explore" not in trainer.checkpoint_data()


def test_the_evaluations_nil_statistics_count_what_the_records_show():
    """Counted from the match's hand records (bids of 0, tricks taken) independently of the
    tallies the statistics read."""
    result = evaluate("heuristic", "random", deals=12, duplicate=True, workers=1, seed=3, keep_records=True)
    bids = nils = kept = opp = opp_kept = 0
    for play, record in enumerate(result.records):
        ours, theirs = ((0, 2), (1, 3)) if play % 2 == 0 else ((1, 3), (0, 2))
        for hand in record["hands"]:
            for seat in ours:
                bids += 1
                if hand["bids"][seat] == 0:
                    nils += 1
                    kept += hand["tricks_taken"][seat] == 0
            for seat in theirs:
                if hand["bids"][seat] == 0:
                    opp += 1
                    opp_kept += hand["tricks_taken"][seat] == 0
    assert nils and opp, "the seed must give both teams nils"
    stats = nil_statistics(result)
    assert stats == pytest.approx({"nil_share": nils / bids, "nil_kept": kept / nils, "opp_nil_kept": opp_kept / opp})


def test_no_nil_bid_is_none_kept_not_zero():
    team = lambda nils, kept: SimpleNamespace(hands=10, nil_bids=nils, nil_kept=kept, blind_nil_bids=1 if nils else 0,  # noqa: E731
                                              blind_nil_kept=0)
    stats = nil_statistics(SimpleNamespace(teams={"A": team(0, 0), "B": team(3, 2)}))
    assert stats == {"nil_share": 0.0, "nil_kept": None, "opp_nil_kept": 0.5}


def test_the_training_evaluation_writes_the_nil_columns(tmp_path):
    trainer = Trainer(tiny(tmp_path, "evals", "eval_opponents=[random]", "eval_every=2", "total_decisions=1024",
                           "imitation_decisions=0"), log=lambda line: None)
    trainer.train()
    assert {"eval__random__nil_share", "eval__random__nil_kept", "eval__random__opp_nil_kept"} <= set(
        eval_columns(["random"]))
    row = metrics(tmp_path / "evals" / "metrics.csv")[1]
    assert 0 <= float(row["eval__random__nil_share"]) <= 1
    line = eval_line({"update": 2, "decisions": 1024, "eval__random__diff": 1.0, "eval__random__nil_share": 0.25,
                      "eval__random__nil_kept": 0.5}, ["random"])
    assert "nil on 25% of its bids, 50% kept" in line
