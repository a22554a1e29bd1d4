"""Bids valued by the game (train/game_bid_values.py): the win table is a correct Markov chain on the
two scores, the collection's per-side values add up to the hand's, collect resumes, fit moves the
bidding head alone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from agents.neural import policy_from_checkpoint, read_checkpoint
from spades_env.rules import make_rules
from train.game_bid_values import WinTable, load_collection, main, win_values

RULES = make_rules("standard")
SHIPPED = "agents/models/neural_standard_v6.pt"        # the policy the shipped bids were valued under


def test_a_fair_game_is_even_and_a_lead_is_worth_more_the_nearer_the_end():
    rng = np.random.default_rng(0)
    ours = rng.choice([-60, -40, 50, 60, 70, 80, 200, -200], size=4000)
    theirs = rng.choice([-60, -40, 50, 60, 70, 80, 200, -200], size=4000)
    pairs = np.stack([ours, theirs], 1)
    even = WinTable(np.concatenate([pairs, pairs[:, ::-1]]), RULES)     # each hand also with the sides swapped
    for a, b in ((0, 0), (250, 250), (-100, -100), (490, 490)):
        assert even.win(a, b) == pytest.approx(0.5, abs=1e-6)
    # a swapped table: what one side wins the other loses
    table, swapped = WinTable(pairs, RULES), WinTable(pairs[:, ::-1], RULES)
    for a, b in ((0, 100), (300, 450), (-150, 200)):
        assert table.win(a, b) == pytest.approx(1 - swapped.win(b, a), abs=1e-6)
    # more points are better, the other side's worse
    scores = np.arange(-190, 500, 10)
    assert np.all(np.diff(table.win(scores, 200)) >= -1e-9) and np.all(np.diff(table.win(200, scores)) <= 1e-9)
    # the same 100-point lead is worth more at 450-350 than at 100-0
    assert table.win(450, 350) > table.win(100, 0) > 0.5


def test_a_side_that_always_gains_more_always_wins():
    table = WinTable(np.array([[100, 0]] * 10), RULES)
    assert table.win(0, 0) == pytest.approx(1.0) and table.win(-150, 400) == pytest.approx(1.0)   # B never gains
    assert WinTable(np.array([[0, 100]] * 10), RULES).win(490, -150) == pytest.approx(0.0)
    level = WinTable(np.array([[100, 100]] * 10), RULES)
    assert level.win(0, 0) == pytest.approx(0.5)            # both reach 500 in the same hand, tied at the top
    assert level.win(10, 0) == pytest.approx(1.0)


def test_a_hand_that_ends_the_game_is_worth_its_result_and_the_others_the_table():
    table = WinTable(np.array([[60, 50], [-40, 70], [80, -50]]), RULES)
    final = np.array([[520, 480], [480, 520], [-200, 100], [300, 300], [510, 510]])
    effective = final - np.array([[0, 0], [0, 0], [0, 0], [30, 0], [0, 0]])
    value = table.value_after_hand(final, effective)
    assert value[:3].tolist() == [1.0, 0.0, 0.0]            # reached 500 first; the other did; fell to -200
    assert value[3] == pytest.approx(table.win(270, 300))   # the game goes on: carried bags priced
    assert value[4] == pytest.approx(table.win(510, 510))   # tied at the top: plays on


def test_bad_changes_are_refused():
    for changes in (np.zeros((0, 2)), np.zeros((3,)), np.array([[np.nan, 1.0]])):
        with pytest.raises(ValueError, match="changes"):
            WinTable(changes, RULES)


def test_the_collection_keeps_each_sides_values_and_the_scores(tmp_path):
    from train.bid_values import collect_bid_values
    from train.rollout import StartingScores
    policy, _ = policy_from_checkpoint(read_checkpoint(SHIPPED))
    generator = torch.Generator().manual_seed(4)
    starts = StartingScores("real", 1.0, RULES, 1, generator, torch.device("cpu"))
    for bag_cost in (0.0, 10.0):
        data = collect_bid_values(policy, RULES, 12, generator, torch.device("cpu"), deals_per_batch=6,
                                  start=lambda n: starts.sample(n), bag_cost=bag_cost)
        legal = ~torch.isnan(data["values"])
        sides = data["side_values"]
        assert torch.equal(sides[..., 0][legal] - sides[..., 1][legal], data["values"][legal])
        assert torch.isnan(sides[~legal]).all()
        if bag_cost == 0:                                     # unpriced: the score changes themselves
            change = data["final_scores"] - data["start_scores"][:, None, :]
            assert torch.equal(change[legal].float(), sides[legal])
        assert (data["start_bags"] >= 0).all() and data["start_scores"].shape == (len(data["values"]), 2)


def test_collect_resumes_refuses_other_settings_and_fit_moves_only_the_bids(tmp_path, capsys):
    out = tmp_path / "bids"
    command = ["collect", "--student", SHIPPED, "--deals", "16", "--shard-deals", "8", "--workers", "1",
               "--seed", "2", "--out", str(out)]
    assert main(command) == 0
    first = (out / "shard_00001.pt").stat().st_mtime_ns
    (out / "shard_00001.pt").unlink()
    assert main(command) == 0                                 # only the missing shard is played again
    assert "1 of 2 shards" in capsys.readouterr().out
    assert (out / "shard_00001.pt").stat().st_mtime_ns >= first
    assert main(command[:-4] + ["--seed", "3", "--out", str(out)]) == 2
    assert "other settings (seed)" in capsys.readouterr().err
    data = load_collection(out)
    assert len(data["values"]) <= 16 and data["side_values"].shape[1:] == (16, 2)
    table_values, slope = win_values(data, WinTable(data["side_values"][:, 5].nan_to_num().numpy(), RULES), 10.0)
    assert slope > 0 and torch.equal(torch.isnan(table_values), torch.isnan(data["values"]))
    model = tmp_path / "win.pt"
    assert main(["fit", "--data", str(out), "--student", SHIPPED, "--objective", "win", "--epochs", "2",
                 "--out", str(model)]) == 0
    before, after = read_checkpoint(SHIPPED), read_checkpoint(model)
    for name, tensor in before["policy"].items():
        if not name.startswith("bid_head."):
            assert torch.equal(tensor, after["policy"][name]), name
    other = tmp_path / "other_bag_cost"                         # a folder priced otherwise cannot join
    other.mkdir()
    for path in out.glob("shard_*.pt"):
        (other / path.name).write_bytes(path.read_bytes())
    settings = json.loads((out / "settings.json").read_text())
    (other / "settings.json").write_text(json.dumps({**settings, "bag_cost": 0.0}))
    assert main(["fit", "--data", str(out), str(other), "--student", SHIPPED, "--out", str(tmp_path / "x.pt")]) == 2
    assert "other bag costs or other rules" in capsys.readouterr().err
    record = after["provenance"]["game_bid_values"]
    assert record["objective"] == "win" and record["win_table"]["high"] == 500
    assert "score_tilts" not in after["arch"] and record["score_tilts_dropped"] == before["arch"]["score_tilts"]


def test_a_step_from_the_policy_with_no_value_differences_keeps_its_bids():
    """With ``prior_logits`` the target is the policy's own bids plus the values: where every
    action is worth the same, the starting head is the fit (held-out loss 0) and stays."""
    from train.bid_values import collect_bid_values, fit_bid_head
    policy, _ = policy_from_checkpoint(read_checkpoint(SHIPPED))
    generator = torch.Generator().manual_seed(6)
    data = collect_bid_values(policy, RULES, 20, generator, torch.device("cpu"), deals_per_batch=10)
    data["values"] = torch.where(torch.isnan(data["values"]), data["values"], torch.zeros_like(data["values"]))
    with torch.no_grad():
        prior = policy.bid_head(policy.embed(data["obs"].float())[0])
    before = {k: v.clone() for k, v in policy.bid_head.state_dict().items()}
    result = fit_bid_head(policy, data, 10.0, 2, 1e-2, 8, generator, log=lambda line: None, prior_logits=prior)
    assert result["bid_value_epoch"] == 0 and result["bid_value_loss"] == pytest.approx(0.0, abs=1e-9)
    assert all(torch.equal(before[k], v) for k, v in policy.bid_head.state_dict().items())
    # without the prior the same zero values pull the logits level: the head moves
    fit_bid_head(policy, data, 10.0, 2, 1e-2, 8, generator, log=lambda line: None)
    assert not all(torch.equal(before[k], v) for k, v in policy.bid_head.state_dict().items())


def test_missing_inputs_are_one_line_errors(tmp_path, capsys):
    assert main(["fit", "--data", str(tmp_path / "none"), "--student", SHIPPED, "--out", str(tmp_path / "m.pt")]) == 2
    assert "no shard_*.pt (run collect first)" in capsys.readouterr().err
    missing = ["collect", "--student", str(tmp_path / "absent.pt"), "--deals", "4", "--out", str(tmp_path / "c")]
    assert main(missing) == 2
    assert "absent.pt" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["collect", "--student", SHIPPED, "--deals", "0", "--out", str(tmp_path / "c")])
