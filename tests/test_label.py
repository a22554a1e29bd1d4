"""Distillation: spades-label's labels (equivalent cards, resumable shards, clear errors) and
spades-train's ``distill_data`` (fits the teacher, keeps the best held-out epoch, resumes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import agents
from agents.neural import DEFAULT_MODEL, read_checkpoint
from spades_env import spades_v0
from spades_env.cards import parse_card
from train.config import ConfigError, config_from_dict
from train.label import FIELDS, LabelError, equivalent_actions, label, load_labels, main, shard_path
from train.ppo import Trainer

from test_train import tiny


def settings(out: Path, **changes) -> dict:
    base = {"student": str(DEFAULT_MODEL), "teacher": "heuristic", "opponents": "heuristic", "deals": 4,
            "shard_deals": 2, "follow_teacher": 0.5, "rules": "standard", "seed": 0, "workers": 1, "out": str(out)}
    base.update(changes)
    return base


def quiet(line: str) -> None:
    pass


def test_touching_cards_are_labelled_as_one_class():
    clubs = ["AC", "KC", "QC", "9C", "7C"]
    rest = [c for c in (f"{r}{s}" for s in "DHSC" for r in "23456789TJQKA") if c not in clubs]   # clubs last
    hands = [clubs + rest[:8]] + [rest[8 + 13 * k: 8 + 13 * (k + 1)] for k in range(3)]
    env = spades_v0.raw_env(rules="standard")
    env.reset(seed=0, options={"deal": [[parse_card(c) for c in h] for h in hands], "dealer": 3})
    bidder = agents.make("heuristic", seed=0)
    for _ in range(4):
        obs, *_ = env.last()
        env.step(bidder.act(obs))
    obs, *_ = env.last()
    assert env.agent_name_mapping[env.agent_selection] == 0          # left of the dealer leads
    assert sorted(equivalent_actions(obs, parse_card("KC"))) == sorted(parse_card(c) for c in ("QC", "KC", "AC"))
    assert equivalent_actions(obs, parse_card("9C")) == [parse_card("9C")]    # TC and JC are still out
    assert equivalent_actions(obs, parse_card("7C")) == [parse_card("7C")]    # so is 8C
    bidding = spades_v0.raw_env(rules="standard")
    bidding.reset(seed=0)
    obs, *_ = bidding.last()
    bid = int(np.flatnonzero(obs["action_mask"])[3])
    assert equivalent_actions(obs, bid) == [bid]


def test_labels_are_legal_reproducible_and_resumable(tmp_path):
    out = label(settings(tmp_path / "a"), progress=False, log=quiet)
    data = load_labels(out)
    n = data["teacher"].numel()
    assert n > 4 * 15                                      # 26 student decisions a deal, minus forced ones
    assert (data["mask"].sum(1) > 1).all()                 # forced moves are not labelled
    assert not (data["target"] & ~data["mask"]).any()       # the labels are legal actions
    assert data["target"].gather(1, data["teacher"][:, None]).all()
    assert data["mask"].gather(1, data["student"][:, None]).all()
    assert set(data["phase"].tolist()) == {1, 3}           # bids and card play (standard rules from 0-0)
    for deal in range(4):                                   # the student side alternates
        seats = set(data["seat"][data["deal"] == deal].tolist())
        assert seats == ({0, 2} if deal % 2 == 0 else {1, 3})
    # With the heuristic as teacher and the shipped model as student both sides of the labels exist.
    assert 0 < float((data["teacher"] == data["student"]).float().mean()) < 1
    again = load_labels(label(settings(tmp_path / "b"), progress=False, log=quiet))
    for key in FIELDS:
        assert torch.equal(data[key], again[key]), key
    # A killed run resumes: finished shards are kept, a torn or missing one is labelled again.
    shard_path(out, 1).write_bytes(b"torn")
    before = shard_path(out, 0).stat().st_mtime_ns
    lines: list[str] = []
    label(settings(tmp_path / "a"), progress=False, log=lines.append)
    assert "1 of 2 shards already" in lines[0]
    assert shard_path(out, 0).stat().st_mtime_ns == before
    resumed = load_labels(out)
    for key in FIELDS:
        assert torch.equal(data[key], resumed[key]), key


def test_follow_teacher_one_plays_the_teachers_game(tmp_path):
    data = load_labels(label(settings(tmp_path, deals=2, follow_teacher=1.0, teacher="random:seed=1"),
                             progress=False, log=quiet))
    assert float((data["teacher"] == data["student"]).float().mean()) < 0.9


def test_label_errors_name_what_was_wrong(tmp_path, capsys):
    with pytest.raises(LabelError, match=r"unknown agent 'serch'"):
        label(settings(tmp_path, teacher="serch"), log=quiet)
    with pytest.raises(LabelError, match=r"deals=0: expected a positive integer"):
        label(settings(tmp_path, deals=0), log=quiet)
    with pytest.raises(LabelError, match=r"follow_teacher=1.5"):
        label(settings(tmp_path, follow_teacher=1.5), log=quiet)
    with pytest.raises(LabelError, match=r"four players in partnerships"):
        label(settings(tmp_path, rules="cutthroat"), log=quiet)
    with pytest.raises(LabelError, match=r"no such model file"):
        label(settings(tmp_path, student=str(tmp_path / "none.pt")), log=quiet)
    label(settings(tmp_path / "made", deals=2), progress=False, log=quiet)
    with pytest.raises(LabelError, match=r"other settings \(seed: 0 there, 1 now\)"):
        label(settings(tmp_path / "made", deals=2, seed=1), log=quiet)
    with pytest.raises(FileNotFoundError, match="no shard_"):
        load_labels(tmp_path)
    shard_path(tmp_path / "made", 0).write_bytes(b"not torch")
    with pytest.raises(LabelError, match="corrupt or not a labels shard"):
        load_labels(tmp_path / "made")
    assert main(["--out", str(tmp_path / "cli"), "--teacher", "nobody", "--deals", "1"]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def heuristic_labels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("labels") / "heuristic"
    return label(settings(out, deals=20, shard_deals=5, follow_teacher=1.0), progress=False, log=quiet)


def test_distillation_fits_the_teacher_and_keeps_the_best_epoch(tmp_path, heuristic_labels):
    logs: list[str] = []
    config = tiny(tmp_path, "distilled", "imitation_decisions=0", f"distill_data={heuristic_labels}",
                  "distill_epochs=20", "distill_learning_rate=0.005", "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=logs.append)
    trainer.train()
    start = next(line for line in logs if line.startswith("distillation:"))
    kept = [line for line in logs if line.startswith("distillation: kept")][0]
    before = float(start.split("teacher on ")[1].split("%")[0])
    after = float(kept.split("(")[1].split("%")[0])
    assert after > before + 15                  # from an untrained net to most of the heuristic's choices
    checkpoint = read_checkpoint(tmp_path / "distilled" / "checkpoints" / "last.pt")
    assert checkpoint["distilled"] is True and (tmp_path / "distilled" / "model.pt").exists()
    # A step size that only makes things worse: the starting weights are kept.
    logs.clear()
    config = tiny(tmp_path, "diverged", "imitation_decisions=0", f"distill_data={heuristic_labels}",
                  "distill_epochs=1", "distill_learning_rate=1000", "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=logs.append)
    start_weights = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    trainer.distill()
    assert "kept epoch 0" in logs[-1]
    for key, value in trainer.policy.state_dict().items():
        assert torch.equal(value, start_weights[key])


def test_distillation_checks_its_data_and_is_not_repeated_on_resume(tmp_path, heuristic_labels):
    with pytest.raises(ConfigError, match=r"labelled under the rules 'standard', this run plays 'openspiel'"):
        Trainer(tiny(tmp_path, "other_rules", "rules=openspiel", "imitation_decisions=0",
                     f"distill_data={heuristic_labels}"), log=quiet).train()
    with pytest.raises(FileNotFoundError, match="no shard_"):
        Trainer(tiny(tmp_path, "empty", "imitation_decisions=0", f"distill_data={tmp_path}"), log=quiet).train()
    config = tiny(tmp_path, "resumed", f"distill_data={heuristic_labels}", "max_updates=1", "eval_every=0")
    Trainer(config, log=quiet).train()
    logs: list[str] = []
    more = config_from_dict({**config.to_dict(), "max_updates": 2})
    Trainer(more, resume=True, log=logs.append).train()
    assert not any(line.startswith("distillation") for line in logs), "\n".join(logs)
    assert read_checkpoint(tmp_path / "resumed" / "checkpoints" / "last.pt")["update"] == 2
