"""python -m train.bids.bid_tilt: the tilt lives in the network and plays as the probe measured it."""

import hashlib

import numpy as np
import pytest
import torch

import agents
from agents.neural import PREVIOUS_MODELS, ModelError, read_checkpoint
from spades_env import spades_v0
from spades_env.game import BID_ACTION_BASE
from train.bids import bid_tilt
from train.experimental.probes import BidTilt

from helpers_files import (assert_one_line_refusal, is_char_device, leftovers, model_with_declared_critic,
                           private_device, private_fifo, run_module)

SOURCE = PREVIOUS_MODELS["neural_v3"]


def _positions(hands: int):
    """Observations met in hands from varied scores (bids, blind-nil offers and card play)."""
    for seed in range(hands):
        env = spades_v0.raw_env(rules="standard", episode="hand")
        env.reset(seed=seed, options={"scores": [seed * 37 % 500 - 150, seed * 53 % 500 - 150], "dealer": seed % 4})
        for _ in range(12):
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                break
            yield obs
            env.step(int(np.flatnonzero(obs["action_mask"])[seed % int(obs["action_mask"].sum())]))


def test_the_tilted_network_plays_as_the_probe(tmp_path):
    out = bid_tilt.tilt_bids(SOURCE, tmp_path / "tilted.pt", 1.4)
    tilted, probe, plain = agents.make("neural", checkpoint=str(out)), BidTilt(1.4, checkpoint=str(SOURCE)), \
        agents.make("neural", checkpoint=str(SOURCE))
    bids = raised = 0
    for obs in _positions(30):
        choice = tilted.act(obs, {})
        assert choice == probe.act(obs, {})
        before = plain.act(obs, {})
        if BID_ACTION_BASE <= before <= BID_ACTION_BASE + 13:
            bids += 1
            raised += choice > before
            assert choice >= before                      # a tilt upwards never lowers a bid
        else:
            assert choice == before                      # cards, blind nil and "look" are untouched
    assert bids >= 80 and 0 < raised < bids, (bids, raised)


def test_only_the_bid_logits_move(tmp_path):
    out = bid_tilt.tilt_bids(SOURCE, tmp_path / "tilted.pt", 0.5, blind_nil=0.25, nil=-0.75)
    before, after = read_checkpoint(SOURCE), read_checkpoint(out)
    changed = [k for k in before["policy"] if not torch.equal(before["policy"][k], after["policy"][k])]
    assert changed == ["bid_head.2.bias"]
    delta = after["policy"]["bid_head.2.bias"] - before["policy"]["bid_head.2.bias"]
    expected = torch.zeros_like(delta)
    expected[1:14] = 0.5 * torch.arange(0, 13, dtype=delta.dtype)    # bid b gets 0.5 * (b - 1)
    expected[0], expected[14] = -0.75, 0.25                            # nil, blind nil; "look" (15) keeps its own
    assert torch.allclose(delta, expected, atol=1e-6)
    record = after["provenance"]["bid_tilt"]
    assert (record["tilt"], record["blind_nil"], record["nil"]) == (0.5, 0.25, -0.75) and record["source_sha256"] == hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert after["provenance"]["config_name"] == before["provenance"]["config_name"]
    again = read_checkpoint(bid_tilt.tilt_bids(out, tmp_path / "again.pt", 0.25))
    assert again["provenance"]["bid_tilt"]["tilt"] == 0.25 and again["provenance"]["bid_tilt"]["earlier"] == record


@pytest.mark.parametrize("tilt", [float("nan"), float("inf"), 50.0])
def test_a_bad_tilt_is_refused(tmp_path, tilt):
    with pytest.raises(ValueError, match="expected a finite number"):
        bid_tilt.tilt_bids(SOURCE, tmp_path / "x.pt", tilt)
    assert not (tmp_path / "x.pt").exists()


def test_the_command_line_names_what_was_wrong(tmp_path, capsys):
    assert bid_tilt.main([str(tmp_path / "missing.pt"), str(tmp_path / "x.pt"), "--tilt", "1"]) == 2
    assert "missing.pt" in capsys.readouterr().err
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a model")
    assert bid_tilt.main([str(junk), str(tmp_path / "x.pt"), "--tilt", "1"]) == 2
    assert "bid_tilt: error" in capsys.readouterr().err
    assert bid_tilt.main([str(SOURCE), str(SOURCE), "--tilt", "1"]) == 2     # would overwrite its source
    assert "is the input" in capsys.readouterr().err
    assert bid_tilt.main([str(SOURCE), str(tmp_path / "ok.pt"), "--tilt", "1"]) == 0
    assert not list(tmp_path.glob("*.tmp"))


def test_a_training_checkpoint_is_refused(tmp_path):
    data = read_checkpoint(SOURCE)
    path = tmp_path / "ckpt.pt"
    torch.save({**data, "format": "spades-train-checkpoint"}, path)
    with pytest.raises(ModelError):
        bid_tilt.tilt_bids(path, tmp_path / "x.pt", 1.0)


def test_the_blind_nil_shift_is_a_threshold_on_its_probability(tmp_path):
    """--blind-nil log(4): the greedy network bids blind nil where the source gave it more than 0.2."""
    import math
    from spades_env.game import BLIND_NIL_ACTION
    from train.experimental.probes import BlindNilAt
    out = bid_tilt.tilt_bids(SOURCE, tmp_path / "bn.pt", 0.0, blind_nil=math.log(4.0))
    shifted, probe = agents.make("neural", checkpoint=str(out)), BlindNilAt(0.2, checkpoint=str(SOURCE))
    plain = agents.make("neural", checkpoint=str(SOURCE))
    offers = more = 0
    for seed in range(40):
        env = spades_v0.raw_env(rules="standard", episode="hand")
        env.reset(seed=seed, options={"scores": [0, 100 + 5 * seed], "dealer": 3})   # seats 0 and 2 trail
        obs, *_ = env.last()
        assert obs["action_mask"][BLIND_NIL_ACTION]
        offers += 1
        assert shifted.act(obs, {}) == probe.act(obs, {})
        more += shifted.act(obs, {}) == BLIND_NIL_ACTION and plain.act(obs, {}) != BLIND_NIL_ACTION
    assert offers == 40 and more > 0
    assert read_checkpoint(out)["provenance"]["bid_tilt"]["blind_nil"] == math.log(4.0)


def test_score_tilts_in_the_network_play_as_the_probe(tmp_path):
    """--lead-tilt/--trail-tilt: the network's rule chooses exactly as the probe with the same tilts,
    at bids from scores that lead, trail and tie; card play and the other actions untouched."""
    out = bid_tilt.tilt_bids(SOURCE, tmp_path / "scored.pt", 0.0,
                             score_tilts={"lead": [250, -2.0], "trail": [100, 1.5]})
    scored, plain = agents.make("neural", checkpoint=str(out)), agents.make("neural", checkpoint=str(SOURCE))
    probe = BidTilt(0.0, lead_tilt=(250, -2.0), trail_tilt=(100, 1.5), checkpoint=str(SOURCE))
    assert scored.policy.arch["score_tilts"] == {"lead": [250, -2.0], "trail": [100, 1.5]}
    kinds, changed = set(), 0
    for obs in _positions(40):
        choice, before = scored.act(obs, {}), plain.act(obs, {})
        assert choice == probe.act(obs, {})
        kinds.add(probe.tilt_at(obs))
        if BID_ACTION_BASE + 1 <= before <= BID_ACTION_BASE + 13:
            changed += choice != before
        else:
            assert choice == before
    assert kinds == {0.0, -2.0, 1.5} and changed > 0, (kinds, changed)


def test_score_tilts_reach_the_learner_and_bad_ones_are_refused(tmp_path):
    """PPO's logits (the bfloat16 path too) carry the rule as the forward pass does; a model file
    with a malformed rule is refused by name (init_from: tests/train/test_train.py)."""
    from types import SimpleNamespace

    from agents.networks import PolicyNet
    from train.ppo.update import learner_logits
    out = bid_tilt.tilt_bids(SOURCE, tmp_path / "scored.pt", 0.0, score_tilts={"lead": [0, 3.0]})
    scored, plain = agents.make("neural", checkpoint=str(out)).policy, agents.make("neural", checkpoint=str(SOURCE)).policy
    observations = list(_positions(6))
    obs = torch.as_tensor(np.stack([o["observation"] for o in observations]), dtype=torch.float32)
    mask = torch.as_tensor(np.stack([o["action_mask"] for o in observations]).astype(bool))
    for precision in ("float32", "bfloat16"):
        cfg = SimpleNamespace(learn_precision=precision)
        shift = learner_logits(scored, obs, mask, cfg, torch.device("cpu")) - \
            learner_logits(plain, obs, mask, cfg, torch.device("cpu"))
        assert torch.allclose(shift, scored(obs, mask) - plain(obs, mask), atol=1e-3)
    assert (shift[:, BID_ACTION_BASE + 1:BID_ACTION_BASE + 14].abs().amax(1) > 1).any()   # some position leads
    assert shift[:, :BID_ACTION_BASE + 1].abs().max() < 1e-3
    data = read_checkpoint(out)
    for bad in ({"lead": [250]}, {"ahead": [250, 1.0]}, {"lead": [250, float("inf")]}, {"trail": ["x", 1.0]}):
        torch.save({**data, "arch": {**data["arch"], "score_tilts": bad}}, tmp_path / "bad.pt")
        with pytest.raises(ModelError, match="score_tilts"):
            read_checkpoint(tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="score_tilts"):
        PolicyNet(742, score_tilts={"lead": [250, 99.0]})
    with pytest.raises(SystemExit) as stop:
        bid_tilt.main([str(SOURCE), str(tmp_path / "x.pt"), "--tilt", "0", "--lead-tilt", "oops"])
    assert stop.value.code == 2 and not (tmp_path / "x.pt").exists()


# ---- issue 75: the output rule and the input rule, through the command ---------------------------

def _refused(tmp_path, source, out, *expected):
    run = run_module("train.bids.bid_tilt", source, out, "--tilt", "1")
    line = assert_one_line_refusal(run, *expected)
    assert not leftovers(tmp_path)
    return line


def test_a_device_or_fifo_output_is_refused_and_stays_what_it_was(tmp_path):
    device, fifo = private_device(tmp_path), private_fifo(tmp_path)
    _refused(tmp_path, SOURCE, device, "is a device, not a regular file")
    assert is_char_device(device)
    _refused(tmp_path, SOURCE, fifo, "is a FIFO, not a regular file")


def test_an_output_under_a_file_in_a_folder_or_ending_in_a_slash_is_refused(tmp_path):
    (tmp_path / "FILE").write_text("x")
    _refused(tmp_path, SOURCE, tmp_path / "FILE" / "m.pt", "FILE is not a folder")
    (tmp_path / "folder").mkdir()
    _refused(tmp_path, SOURCE, tmp_path / "folder", "is a folder: expected a file")
    assert list((tmp_path / "folder").iterdir()) == []
    _refused(tmp_path, SOURCE, f"{tmp_path}/newdir/", "ends in a slash")
    assert not (tmp_path / "newdir").exists()


def test_a_source_that_is_not_a_model_file_is_refused_without_reading_it(tmp_path):
    zero, fifo = private_device(tmp_path, "zero", minor=5), private_fifo(tmp_path)
    _refused(tmp_path, zero, tmp_path / "x.pt", "is a device, not a regular file")
    _refused(tmp_path, fifo, tmp_path / "x.pt", "is a FIFO, not a regular file")      # no hang
    _refused(tmp_path, tmp_path, tmp_path / "x.pt", "is a folder: expected a file")
    assert not (tmp_path / "x.pt").exists()


def test_an_int64_bid_bias_is_refused(tmp_path):
    data = torch.load(SOURCE, weights_only=True)
    name = sorted(k for k in data["policy"] if k.startswith("bid_head.") and k.endswith(".bias"))[-1]
    data["policy"][name] = data["policy"][name].round().to(torch.int64)
    torch.save(data, tmp_path / "int.pt")
    _refused(tmp_path, tmp_path / "int.pt", tmp_path / "x.pt", f"policy weight {name} is int64: expected float32")
    assert not (tmp_path / "x.pt").exists()


def test_a_small_file_declaring_a_huge_critic_is_refused_before_allocation(tmp_path):
    """2.1G weights (8.6 GB) declared by a file of a few MB: refused from its shapes, at once,
    by the command, by agents.make (a ModelError) and through a neural:checkpoint= spec."""
    import time

    huge = model_with_declared_critic(SOURCE, tmp_path / "huge.pt", hidden=8192, layers=32)
    assert huge.stat().st_size < 5_000_000
    started = time.monotonic()
    _refused(tmp_path, huge, tmp_path / "x.pt", "declares", "weights; expected at most")
    with pytest.raises(ModelError, match="declares .* weights; expected at most"):
        agents.make("neural", checkpoint=str(huge))
    assert time.monotonic() - started < 60
    run = run_module("evaluation.cli", "--team-a", f"neural:checkpoint={huge}", "--team-b", "random",
                     "--deals", "2", "--quiet")
    assert_one_line_refusal(run, "declares")


def test_stride_zero_weights_are_refused_as_views(tmp_path):
    small = model_with_declared_critic(SOURCE, tmp_path / "views.pt", hidden=64, layers=2)
    with pytest.raises(ModelError, match="expected a contiguous tensor"):
        agents.make("neural", checkpoint=str(small))
    _refused(tmp_path, small, tmp_path / "x.pt", "expected a contiguous tensor")
