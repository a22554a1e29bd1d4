"""Bids valued by the game (train/bids/game_bid_values.py): the win table is a correct Markov chain on the
two scores, the collection's per-side values add up to the hand's, collect resumes, fit moves the
bidding head alone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from agents.neural import policy_from_checkpoint, read_checkpoint
from spades_env.rules import make_rules
from train.bids.game_bid_values import WinTable, load_collection, main, win_values

RULES = make_rules("standard")
SHIPPED = "agents/models/neural_v6.pt"        # the policy the shipped bids were valued under


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
    from train.bids.bid_values import collect_bid_values
    from train.ppo.rollout import StartingScores
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
                 "--min-held-out", "1", "--out", str(model)]) == 0
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
    assert "played with other settings than this collection's (bag_cost=10.0, expected 0.0)" in capsys.readouterr().err
    record = after["provenance"]["game_bid_values"]
    assert record["objective"] == "win" and record["win_table"]["high"] == 500
    assert "score_tilts" not in after["arch"] and record["score_tilts_dropped"] == before["arch"]["score_tilts"]


def test_a_step_from_the_policy_with_no_value_differences_keeps_its_bids():
    """With ``prior_logits`` the target is the policy's own bids plus the values: where every
    action is worth the same, the starting head is the fit (held-out loss 0) and stays."""
    from train.bids.bid_values import collect_bid_values, fit_bid_head
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


# ---- issue 75: collections and shards checked, settings before anything is written ------------

import os  # noqa: E402
import pickle  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402

from agents.neural import PREVIOUS_MODELS  # noqa: E402

from helpers_files import (assert_one_line_refusal, is_char_device, leftovers, private_device,  # noqa: E402
                           private_fifo, run_module)

STUDENT = str(PREVIOUS_MODELS["neural_v6"])


def _refused(capsys, argv, *expected) -> str:
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("game_bid_values: error: "), err
    for text in expected:
        assert text in err, err
    return err.strip()


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """A collection of 16 deals in two shards, made once (tests copy it before changing it)."""
    out = tmp_path_factory.mktemp("collection") / "bids"
    assert main(["collect", "--student", STUDENT, "--deals", "16", "--shard-deals", "8", "--workers", "1",
                 "--seed", "4", "--out", str(out)]) == 0
    return out


def _copy(collection, tmp_path, name="data"):
    target = tmp_path / name
    shutil.copytree(collection, target)
    return target


@pytest.mark.parametrize("flags, expected", [
    (["--seed", str(10 ** 19)], "--seed 10000000000000000000: expected a whole number from 0"),
    (["--seed", "-7"], "--seed -7: expected a whole number from 0"),
    (["--bag-cost", "nan"], "--bag-cost nan: expected a finite number"),
    (["--rules", "nonsense"], "--rules nonsense"),
    (["--rules", "cutthroat"], "expected four players in two partnerships"),
    (["--deals", str(10 ** 15)], "--deals 1000000000000000: expected a whole number from 1 to 10,000,000"),
])
def test_collect_refuses_bad_settings_before_writing_anything(tmp_path, capsys, flags, expected):
    out = tmp_path / "c"
    _refused(capsys, ["collect", "--student", STUDENT, "--deals", "8", "--workers", "1", "--out", out, *flags],
             expected)
    assert not out.exists()


def test_collect_refuses_a_student_that_is_not_a_model_and_a_bad_out(tmp_path, capsys):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"PK\x03\x04 not really a zip")
    zero, fifo = private_device(tmp_path, "zero", minor=5), private_fifo(tmp_path)
    out = tmp_path / "c"
    base = ["collect", "--deals", "8", "--workers", "1"]
    _refused(capsys, base + ["--student", junk, "--out", out], "--student", "junk.pt: corrupt or not a spades model")
    _refused(capsys, base + ["--student", zero, "--out", out], "zero is a device, not a regular file")
    _refused(capsys, base + ["--student", fifo, "--out", out], "pipe is a FIFO, not a regular file")
    assert not out.exists()
    (tmp_path / "FILE").write_text("x")
    _refused(capsys, base + ["--student", STUDENT, "--out", tmp_path / "FILE"], "FILE is a file: expected a folder")
    _refused(capsys, base + ["--student", STUDENT, "--out", tmp_path / "FILE" / "c"], "FILE is not a folder")
    _refused(capsys, base + ["--student", STUDENT, "--out", zero], "is a device: expected a folder")
    assert is_char_device(zero)


def test_a_corrected_rerun_after_a_refusal_goes_ahead(tmp_path, capsys):
    out = tmp_path / "c"
    _refused(capsys, ["collect", "--student", STUDENT, "--deals", "8", "--bag-cost", "nan", "--out", out], "nan")
    assert main(["collect", "--student", STUDENT, "--deals", "8", "--workers", "1", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["settings.json", "shard_00000.pt"]


def test_a_truncated_shard_is_played_again_on_resume(collection, tmp_path, capsys):
    data = _copy(collection, tmp_path)
    shard = data / "shard_00001.pt"
    shard.write_bytes(shard.read_bytes()[:5000])
    assert main(["collect", "--student", STUDENT, "--deals", "16", "--shard-deals", "8", "--workers", "1",
                 "--seed", "4", "--out", str(data)]) == 0
    out = capsys.readouterr().out
    assert "1 of 2 shards" in out and "played again: shard_00001.pt" in out
    assert len(load_collection(data)["values"]) == len(load_collection(collection)["values"])


def _fit(data, out, *flags):
    return ["fit", "--data", *map(str, data), "--student", STUDENT, "--epochs", "1", "--min-held-out", "1",
            "--out", str(out), *flags]


def _replace_shard(folder, payload, raw: bytes = None):
    path = folder / "shard_00001.pt"
    path.unlink()
    if raw is not None:
        path.write_bytes(raw)
    else:
        torch.save(payload, path)
    return path


class _Code:                                     # pickled, it would run os.system on load
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_fit_refuses_shards_that_are_not_what_collect_wrote(collection, tmp_path, capsys):
    good = torch.load(collection / "shard_00001.pt", weights_only=True)
    n = len(good["data"]["values"])
    narrow = {**good["data"], "obs": good["data"]["obs"][:, :100].contiguous()}
    claims = {name: torch.zeros(1, dtype=t.dtype).expand(2_000_000, *t.shape[1:]) for name, t in good["data"].items()}
    cases = [
        (None, (collection / "shard_00001.pt").read_bytes()[:3000], "expected a file written by torch.save"),
        ({"x": 1}, None, "expected a dict of 'data' and 'job'"),
        (torch.zeros(3), None, "expected a dict of 'data' and 'job'"),
        ({**good, "data": narrow}, None, "obs is float16 of shape (%d, 100); expected float16 of shape (rows, 742)" % n),
        ({**good, "data": {**good["data"], "values": good["data"]["values"][:-1].clone()}}, None, "a truncated shard"),
        ({**good, "data": claims}, None, "expected contiguous tensors"),
        ({**good, "job": {**good["job"], "bag_cost": 0.0}}, None, "bag_cost=0.0, expected 10.0"),
        (None, pickle.dumps(_Code()), "expected a file written by torch.save"),
        ({"data": _Code(), "job": good["job"]}, None, "(UnpicklingError: Weights only load failed"),
    ]
    for payload, raw, expected in cases:
        data = _copy(collection, tmp_path, f"case{len(list(tmp_path.iterdir()))}")
        _replace_shard(data, payload, raw)
        started = time.monotonic()
        _refused(capsys, _fit([data], tmp_path / "m.pt"), "shard_00001.pt", expected)
        assert time.monotonic() - started < 30 and not (tmp_path / "m.pt").exists()
    data = _copy(collection, tmp_path, "fifo")
    (data / "shard_00001.pt").unlink()
    private_fifo(data, "shard_00001.pt")
    _refused(capsys, _fit([data], tmp_path / "m.pt"), "shard_00001.pt is a FIFO, not a regular file")


def test_fit_refuses_a_folder_twice_bad_numbers_and_a_bad_out_before_fitting(collection, tmp_path, capsys):
    (tmp_path / "link").symlink_to(collection)
    _refused(capsys, _fit([collection, collection], tmp_path / "m.pt"), "again: give each collection once")
    _refused(capsys, _fit([collection, tmp_path / "link"], tmp_path / "m.pt"), "again: give each collection once")
    for flag, value in (("--temperature", "0"), ("--temperature", "nan"), ("--temperature", "-10"),
                        ("--temperature", "inf"), ("--step", "0")):
        _refused(capsys, _fit([collection], tmp_path / "m.pt", flag, value), f"{flag} {float(value) if flag == '--temperature' else value}")
    _refused(capsys, ["fit", "--data", str(collection), "--student", STUDENT, "--out", STUDENT], "is the input")
    device = private_device(tmp_path)
    started = time.monotonic()
    _refused(capsys, _fit([collection], device), "null is a device, not a regular file")
    assert is_char_device(device) and time.monotonic() - started < 10
    _refused(capsys, _fit([collection], f"{tmp_path}/newdir/"), "ends in a slash")
    assert not leftovers(tmp_path) and not (tmp_path / "m.pt").exists()


def test_fit_refuses_a_collection_too_small_to_hold_deals_out(collection, tmp_path, capsys):
    _refused(capsys, ["fit", "--data", str(collection), "--student", STUDENT, "--out", str(tmp_path / "m.pt")],
             "held out; expected at least 50")
    assert not (tmp_path / "m.pt").exists()


def test_the_refusals_are_one_line_from_the_command(tmp_path):
    device = private_device(tmp_path)
    run = run_module("train.game_bid_values", "fit", "--data", tmp_path, "--student", STUDENT, "--out", device)
    assert_one_line_refusal(run, "is a device, not a regular file")
    assert is_char_device(device)
