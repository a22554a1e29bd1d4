"""Expert iteration (train/labelling/expert_iteration.py): the improved-policy targets, the config checks,
and a tiny run that labels, fits, evaluates and resumes round by round."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import pytest
import torch

from agents.neural import NeuralAgent, read_checkpoint
from spades_env.game import PHASE_BIDDING
from train.ppo.config import ConfigError, load_config
from train.labelling.expert_iteration import improved_policy, opponent_folder_name
from train.ppo.trainer import Trainer, main

NAN = float("nan")


def test_completed_q_adds_the_normalised_values_to_the_logits():
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.0]])
    values = torch.tensor([[10.0, 0.0, 5.0, NAN]])
    legal = torch.tensor([[True, True, True, False]])
    got = improved_policy(logits, values, legal, "completed_q", scale=4.0, floor=2.0, tie=0.0)
    # range 10 points: +4, +0, +2 nats on top of the logits; the illegal action gets nothing
    expected = torch.softmax(torch.tensor([0.0 + 4.0, 1.0 + 0.0, 2.0 + 2.0]), 0)
    assert torch.allclose(got[0, :3], expected)
    assert got[0, 3] == 0


def test_completed_q_floor_keeps_near_ties_near():
    logits = torch.zeros(1, 3)
    values = torch.tensor([[0.0, 0.5, 0.0]])           # half a point apart, floor 5 points
    legal = torch.ones(1, 3, dtype=torch.bool)
    got = improved_policy(logits, values, legal, "completed_q", scale=5.0, floor=5.0, tie=0.0)
    assert math.isclose(float(got[0, 1] / got[0, 0]), math.exp(0.5), rel_tol=1e-5)


def test_completed_q_counts_a_legal_action_without_a_value_as_the_worst():
    logits = torch.zeros(1, 3)
    values = torch.tensor([[3.0, NAN, 1.0]])
    legal = torch.ones(1, 3, dtype=torch.bool)
    got = improved_policy(logits, values, legal, "completed_q", scale=2.0, floor=0.1, tie=0.0)
    assert math.isclose(float(got[0, 1]), float(got[0, 2]), rel_tol=1e-6)
    assert got[0, 0] > got[0, 2]


def test_best_target_shares_the_probability_among_ties():
    values = torch.tensor([[4.0, 4.02, 1.0, NAN]])
    legal = torch.tensor([[True, True, True, False]])
    got = improved_policy(torch.zeros(1, 4), values, legal, "best", scale=1.0, floor=1.0, tie=0.05)
    assert got[0].tolist() == [0.5, 0.5, 0.0, 0.0]


def test_opponent_folder_names_are_plain():
    assert opponent_folder_name("search:worlds=20,seed=3") == "labels_search_worlds-20_seed-3"
    assert opponent_folder_name("heuristic") == "labels_heuristic"


@pytest.mark.parametrize("override, message", [
    ("expert_target=argmax", r"expert_target='argmax': expected 'completed_q' or 'best'"),
    ("expert_scale=0", r"expert_scale=0.0: expected a positive finite number"),
    ("expert_deals=0", r"expert_deals=0: expected a positive integer"),
    ("expert_rounds=-1", r"expert_rounds=-1: expected 0 or more"),
    ("expert_follow_teacher=1.5", r"expert_follow_teacher=1.5: expected a number in \[0, 1\]"),
    ("expert_teacher=serch", r"expert_teacher: unknown agent 'serch'"),
    ("expert_opponents={heuristc: 1}", r"expert_opponents: unknown agent 'heuristc'"),
    ("expert_opponents={heuristic: -1}", r"expert_opponents=.*non-negative shares"),
    ("expert_eval_opponents=[]", r"expert_eval_opponents=\[\]: expected a list"),
    ("expert_eval_start=varied", r"expert_eval_start='varied': expected 'zero' or 'real'"),
])
def test_expert_config_errors_name_the_field(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


TINY_EXPERT = ["hidden=32", "head_hidden=16", "layers=1", "threads=1", "progress=false", "tensorboard=false",
               "max_updates=0", "num_envs=16", "rollout_steps=16", "minibatch_size=64",
               "imitation_decisions=512", "imitation_epochs=1", "final_eval_deals=2",
               "expert_deals=6", "expert_shard_deals=3", "expert_teacher=search_v1:worlds=8,stage=0",
               "expert_opponents={heuristic: 0.5, self: 0.5}", "expert_epochs=4", "expert_learning_rate=0.03",
               "expert_eval_deals=2", "expert_workers=1", "eval_opponents=[heuristic]"]
# (a learning rate at which the fit moves the policy here: round 1 keeps its epoch 3, so the tests
# below can tell the fitted policy from the round's start; test_the_tiny_fit_moves_the_policy checks it)


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_expert_rounds_label_fit_evaluate_and_resume(tmp_path, capsys):
    base = TINY_EXPERT + [f"run_dir={tmp_path}", "name=ei"]
    log: list[str] = []
    Trainer(load_config(None, base + ["expert_rounds=1"]), log=log.append).train()
    run = tmp_path / "ei"
    round_1 = run / "expert" / "round_01"
    assert sorted(p.name for p in round_1.iterdir()) == ["fit.json", "fitted.pt", "label_manifest.json",
                                                         "labels_heuristic", "labels_self", "round.json",
                                                         "student.pt"]
    assert json.loads((run / "expert" / "manifest.json").read_text())["rounds"].keys() == {"1"}
    row = json.loads((round_1 / "round.json").read_text())
    assert row["round"] == 1 and row["labels"] > 0
    for key in ("vs_heuristic", "gain_vs_heuristic", "vs_previous", "fit_value", "fit_agreement"):
        assert math.isfinite(row[key]), key
    assert read_checkpoint(run / "checkpoints" / "last.pt")["expert_rounds_done"] == 1
    # the fit moved the policy (else the checks below could not fail), and the run's policy is the fitted one
    fitted = read_checkpoint(round_1 / "fitted.pt")["policy"]
    assert row["fit_epoch"] >= 1 and not same_weights(fitted, read_checkpoint(round_1 / "student.pt")["policy"])
    final = read_checkpoint(run / "model.pt")["policy"]
    assert same_weights(fitted, final)
    assert any("expert iteration, round 1:" in line for line in log)

    # one more round on resume: round 2 starts from round 1's fitted policy, round 1 is not redone
    log.clear()
    Trainer(load_config(None, base + ["expert_rounds=2"]), resume=True, log=log.append).train()
    round_2 = run / "expert" / "round_02"
    student_2 = read_checkpoint(round_2 / "student.pt")["policy"]
    assert all(torch.equal(fitted[k], student_2[k]) for k in fitted)
    assert not any("round 1/2" in line for line in log)
    with (run / "expert" / "rounds.csv").open() as f:
        assert [int(r["round"]) for r in csv.DictReader(f)] == [1, 2]
    assert (run / "expert" / "rounds.png").stat().st_size > 0
    # round 2 fitted the labels of both rounds (expert_replay_rounds 2)
    assert "from 4 folder(s)" in " ".join(log)
    NeuralAgent(checkpoint=run / "model.pt")

    # the learning-curve diagnostic fits nested subsets of those labels, each from the same start
    from train.experimental.learning_curve import main as learning_curve
    folders = [str(p) for p in sorted((run / "expert").glob("round_*/labels_*"))]
    out = tmp_path / "curve"
    assert learning_curve(["--labels", *folders, "--init", str(round_1 / "student.pt"), "--fractions", "1,0.5",
                           "--set", "expert_epochs=1", "--set", "minibatch_size=64", "--out", str(out)]) == 0
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [r["fraction"] for r in rows] == [0.5, 1.0] and rows[0]["rows"] < rows[1]["rows"]
    assert rows[0]["fit_value_start"] == rows[1]["fit_value_start"]        # one held-out set, one start
    assert out.with_suffix(".png").stat().st_size > 0
    assert learning_curve(["--labels", *folders, "--init", str(round_1 / "student.pt"), "--fractions", "1",
                           "--set", "expert_epochs=1", "--set", "minibatch_size=64", "--hinted",
                           "--out", str(tmp_path / "hinted")]) == 0
    hinted = json.loads((tmp_path / "hinted.json").read_text())["rows"][0]
    assert hinted["fit_value_start"] == rows[1]["fit_value_start"]     # the residual starts at zero
    assert learning_curve(["--labels", *folders, "--measure-labels", *folders, "--init", str(round_1 / "student.pt"),
                           "--fractions", "1", "--set", "expert_epochs=1", "--set", "minibatch_size=64",
                           "--out", str(tmp_path / "measured")]) == 0
    measured = json.loads((tmp_path / "measured.json").read_text())["rows"][0]
    assert measured["fit_value_start"] == rows[1]["fit_value_start"]
    assert learning_curve(["--labels", *folders, "--measure-labels", folders[0], "--init",
                           str(round_1 / "student.pt"), "--out", str(tmp_path / "mismatch")]) == 2
    assert learning_curve(["--labels", *folders, "--init", str(round_1 / "student.pt"), "--fractions", "0",
                           "--out", str(out)]) == 2


@pytest.fixture(scope="module")
def one_round(tmp_path_factory):
    """A run whose first expert round is done (kept as ``pristine/``), and the checkpoint from
    just before that round (``pre_round.pt``: the imitation alone)."""
    root = tmp_path_factory.mktemp("expert")
    base = TINY_EXPERT + [f"run_dir={root}", "name=ei"]
    Trainer(load_config(None, base + ["expert_rounds=0"]), log=lambda line: None).train()
    shutil.copy(root / "ei" / "checkpoints" / "last.pt", root / "pre_round.pt")
    Trainer(load_config(None, base + ["expert_rounds=1"]), resume=True, log=lambda line: None).train()
    shutil.copytree(root / "ei", root / "pristine")
    return root / "ei"


def copy_run(run: Path, before_round: bool = False) -> list[str]:
    """Put the run back as it was, to tamper with (at its own path: the label settings name
    files by path); ``before_round``: with the checkpoint from before round 1, as if killed
    during it. Returns the overrides that resume it."""
    shutil.rmtree(run)
    shutil.copytree(run.parent / "pristine", run)
    if before_round:
        shutil.copy(run.parent / "pre_round.pt", run / "checkpoints" / "last.pt")
    return TINY_EXPERT + [f"run_dir={run.parent}", "name=ei"]


def test_the_tiny_fit_moves_the_policy(one_round):
    fit = json.loads((one_round / "expert" / "round_01" / "fit.json").read_text())
    assert fit["fit_epoch"] >= 1
    assert not same_weights(read_checkpoint(one_round / "expert" / "round_01" / "fitted.pt")["policy"],
                            read_checkpoint(one_round / "expert" / "round_01" / "student.pt")["policy"])


def test_a_killed_round_reuses_what_it_had_finished(one_round):
    """Killed during the round's evaluation: the checkpoint is the one from before the round (its
    policy the round's start), round.json is not written. The resumed round labels and fits
    nothing again, goes on from the fitted policy, and writes the round.json of the run never
    stopped."""
    base = copy_run(one_round, before_round=True)
    round_1 = one_round / "expert" / "round_01"
    uninterrupted = json.loads((round_1 / "round.json").read_text())
    fitted_before = (round_1 / "fitted.pt").read_bytes()
    shard = sorted((round_1 / "labels_heuristic").glob("shard_*.pt"))[0]
    shard_before = shard.stat().st_mtime_ns
    (round_1 / "round.json").unlink()
    assert read_checkpoint(one_round / "checkpoints" / "last.pt")["expert_rounds_done"] == 0
    log: list[str] = []
    Trainer(load_config(None, base + ["expert_rounds=1"]), resume=True, log=log.append).train()
    assert (round_1 / "fitted.pt").read_bytes() == fitted_before        # not fitted again
    assert shard.stat().st_mtime_ns == shard_before                      # not labelled again
    assert any("fitted policy found" in line for line in log)
    assert json.loads((round_1 / "round.json").read_text()) == uninterrupted
    fitted = read_checkpoint(round_1 / "fitted.pt")["policy"]
    assert same_weights(fitted, read_checkpoint(one_round / "model.pt")["policy"])   # goes on from it
    with (one_round / "expert" / "rounds.csv").open() as f:
        assert [int(r["round"]) for r in csv.DictReader(f)] == [1]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def _set_round(path: Path) -> None:
    row = json.loads(path.read_text())
    row["round"] = 7
    path.write_text(json.dumps(row, indent=2))


def _checkpoint_says_five_rounds(run: Path) -> None:
    data = torch.load(run / "checkpoints" / "last.pt", weights_only=False)
    data["expert_rounds_done"] = 5
    torch.save(data, run / "checkpoints" / "last.pt")


def _copy_shard_across(run: Path) -> None:
    round_1 = run / "expert" / "round_01"
    shutil.copy(round_1 / "labels_heuristic" / "shard_00000.pt", round_1 / "labels_self" / "shard_00000.pt")


# Round 1 is done (the checkpoint says so) and round 2 would build on it: what was tampered with.
AFTER_ROUND_1 = [
    ("round.json deleted", lambda run: (run / "expert/round_01/round.json").unlink(),
     r"round_01/round\.json: missing"),
    ("round folder deleted", lambda run: shutil.rmtree(run / "expert/round_01"), r"expert/round_01: missing"),
    ("round.json says round 7", lambda run: _set_round(run / "expert/round_01/round.json"),
     r"round_01/round\.json: changed since"),
    ("round.json truncated", lambda run: _truncate(run / "expert/round_01/round.json"),
     r"round_01/round\.json: changed since"),
    ("checkpoint says 5 rounds", _checkpoint_says_five_rounds, r"last\.pt: counts 5 expert rounds done but records 1"),
    ("shard deleted", lambda run: (run / "expert/round_01/labels_self/shard_00000.pt").unlink(),
     r"labels_self/shard_00000\.pt: missing"),
    ("shard copied across", _copy_shard_across, r"labels_self/shard_00000\.pt: changed since"),
    ("fitted.pt replaced", lambda run: shutil.copy(run / "expert/round_01/student.pt", run / "expert/round_01/fitted.pt"),
     r"round_01/fitted\.pt: changed since"),
    ("rounds.csv a folder", lambda run: ((run / "expert/rounds.csv").unlink(), (run / "expert/rounds.csv").mkdir()),
     r"expert/rounds\.csv is a folder: expected the file the run writes there"),
]


def _assert_resume_refused(settings: list[str], capsys, message: str) -> None:
    """``--resume`` with these settings exits 2 with one line matching ``message``, no traceback."""
    assert main([f"--set={item}" for item in settings] + ["--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert re.search(message, err), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("what, tamper, message", AFTER_ROUND_1, ids=[case[0] for case in AFTER_ROUND_1])
def test_a_resume_refuses_a_finished_round_that_is_not_as_recorded(one_round, capsys, what, tamper, message):
    base = copy_run(one_round)
    tamper(one_round)
    _assert_resume_refused(base + ["expert_rounds=2"], capsys, message)
    assert not (one_round / "expert" / "round_02").exists()        # refused before round 2 began


def test_labels_outside_the_replay_window_may_be_deleted(tmp_path):
    """With expert_replay_rounds 1 no later fit reads round 1's labels: a resume (elsewhere, say,
    with only the rounds' policies and records) goes on without them. (With a window that reaches
    round 1, a deleted shard is refused: AFTER_ROUND_1.)"""
    base = TINY_EXPERT + [f"run_dir={tmp_path}", "name=ei", "expert_replay_rounds=1"]
    Trainer(load_config(None, base + ["expert_rounds=1"]), log=lambda line: None).train()
    for folder in (tmp_path / "ei/expert/round_01").glob("labels_*"):
        shutil.rmtree(folder)
    log: list[str] = []
    Trainer(load_config(None, base + ["expert_rounds=2"]), resume=True, log=log.append).train()
    assert json.loads((tmp_path / "ei/expert/round_02/round.json").read_text())["round"] == 2
    assert "from 2 folder(s)" in " ".join(log)                     # round 2's own two label folders


def _forget_labels_manifest(run: Path) -> None:
    (run / "expert/round_01/label_manifest.json").unlink()


# Killed during round 1 (the checkpoint from before it): what was tampered with in the round's files.
DURING_ROUND_1 = [
    ("fit.json truncated", lambda run: _truncate(run / "expert/round_01/fit.json"),
     r"round_01/fit\.json: unreadable or not JSON \(JSONDecodeError\)"),
    ("round.json truncated", lambda run: _truncate(run / "expert/round_01/round.json"),
     r"round_01/round\.json: unreadable or not JSON"),
    ("round.json says round 7", lambda run: _set_round(run / "expert/round_01/round.json"),
     r"round_01/round\.json: says round 7, its folder is round 1"),
    ("labels.json truncated", lambda run: _truncate(run / "expert/round_01/labels_self/labels.json"),
     r"labels_self/labels\.json: changed since"),
    ("labels.json truncated mid-labelling", lambda run: (_forget_labels_manifest(run),
                                                         _truncate(run / "expert/round_01/labels_self/labels.json")),
     r"labels_self/labels\.json: unreadable or not JSON"),
    ("label_manifest.json truncated", lambda run: _truncate(run / "expert/round_01/label_manifest.json"),
     r"round_01/label_manifest\.json: unreadable or not JSON"),
    ("shard deleted", lambda run: (run / "expert/round_01/labels_heuristic/shard_00000.pt").unlink(),
     r"labels_heuristic/shard_00000\.pt: missing"),
    ("shard copied across", _copy_shard_across, r"labels_self/shard_00000\.pt: changed since"),
    ("shard copied across mid-labelling", lambda run: (_forget_labels_manifest(run), _copy_shard_across(run)),
     r"labels_self/shard_00000\.pt: labelled with other settings .*opponents.* differ"),
    ("fitted.pt replaced", lambda run: shutil.copy(run / "expert/round_01/student.pt", run / "expert/round_01/fitted.pt"),
     r"round_01/fitted\.pt: changed since .*fit\.json recorded it"),
]


@pytest.mark.parametrize("what, tamper, message", DURING_ROUND_1, ids=[case[0] for case in DURING_ROUND_1])
def test_a_resumed_round_refuses_its_own_files_when_not_as_written(one_round, capsys, what, tamper, message):
    base = copy_run(one_round, before_round=True)
    tamper(one_round)
    _assert_resume_refused(base + ["expert_rounds=1"], capsys, message)


def test_a_round_refuses_a_student_that_is_not_its_start(one_round, capsys):
    """The old form of the killed-round test: the checkpoint after the round (its policy the fitted
    one) with expert_rounds_done set back to 0 is not the round's start."""
    base = copy_run(one_round)
    data = torch.load(one_round / "checkpoints" / "last.pt", weights_only=False)
    data["expert_rounds_done"], data["expert_manifest"] = 0, {}
    torch.save(data, one_round / "checkpoints" / "last.pt")
    assert main([f"--set={item}" for item in base + ["expert_rounds=1"]] + ["--resume"]) == 2
    assert re.search(r"round_01/student\.pt: not the policy round 1 starts from", capsys.readouterr().err)


def _as_older_run(run: Path) -> None:
    """The checkpoint as a run from before the records wrote it (no expert_manifest)."""
    data = torch.load(run / "checkpoints" / "last.pt", weights_only=False)
    del data["expert_manifest"]
    torch.save(data, run / "checkpoints" / "last.pt")


def test_an_older_run_is_checked_for_its_files_and_then_recorded(one_round, capsys):
    """A checkpoint from before the records: its rounds must at least be there (a deleted
    round.json, a round number that is not its folder's, a count beyond the folders are
    refused); when they are, they are recorded as they are and the next round builds on them."""
    base = copy_run(one_round)
    _as_older_run(one_round)
    (one_round / "expert/round_01/round.json").unlink()
    assert main([f"--set={item}" for item in base + ["expert_rounds=2"]] + ["--resume"]) == 2
    assert re.search(r"round_01/round\.json: missing", capsys.readouterr().err)
    copy_run(one_round)
    _as_older_run(one_round)
    _set_round(one_round / "expert/round_01/round.json")
    assert main([f"--set={item}" for item in base + ["expert_rounds=2"]] + ["--resume"]) == 2
    assert re.search(r"round_01/round\.json: says round 7, its folder is round 1", capsys.readouterr().err)
    copy_run(one_round)
    _as_older_run(one_round)
    _checkpoint_says_five_rounds(one_round)
    assert main([f"--set={item}" for item in base + ["expert_rounds=2"]] + ["--resume"]) == 2
    assert re.search(r"round_02/round\.json: missing", capsys.readouterr().err)
    copy_run(one_round)
    _as_older_run(one_round)
    log: list[str] = []
    Trainer(load_config(None, base + ["expert_rounds=2"]), resume=True,
            log=log.append).train()
    assert any("recorded from their files as they are" in line for line in log)
    records = read_checkpoint(one_round / "checkpoints" / "last.pt")["expert_manifest"]
    assert sorted(records) == ["1", "2"]
    assert "from 4 folder(s)" in " ".join(log)                 # round 2 fitted round 1's labels too


def test_distillation_refuses_a_shard_copied_from_another_folder(one_round):
    from train.labelling.labeller import LabelError, load_labels
    copy_run(one_round)
    _copy_shard_across(one_round)
    with pytest.raises(LabelError, match=r"labels_self/shard_00000\.pt: labelled with other settings"):
        load_labels(one_round / "expert" / "round_01" / "labels_self")


def test_valued_bids_are_fitted_to_their_values_like_cards():
    """``search`` labels the bids it tried with their game values (test_label.py); the round's fit
    must move the bids toward them, not hold them at the start as it does unvalued rows."""
    from types import SimpleNamespace
    from train.labelling.expert_iteration import fit_to_search_values

    torch.manual_seed(0)
    rows, actions = 400, 68
    legal = torch.zeros(rows, actions, dtype=torch.bool)
    legal[:, 52:66] = True                                   # the bids 0..13
    values = torch.full((rows, actions), NAN)
    values[:, 52 + 2], values[:, 52 + 3], values[:, 52 + 4] = 280.0, 300.0, 330.0   # three tried, 4 the best

    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(8, actions)

        def forward(self, obs, mask):
            return self.net(obs).masked_fill(~mask, -1e9)
    policy = Policy()
    data = {"obs": torch.randn(rows, 8).half(), "mask": legal, "values": values.half(),
            "deal": torch.arange(rows), "phase": torch.full((rows,), PHASE_BIDDING)}
    cfg = SimpleNamespace(expert_target="completed_q", expert_scale=5.0, expert_value_floor=4.0, expert_tie=0.05,
                          expert_epochs=6, expert_learning_rate=0.05, minibatch_size=64, max_grad_norm=1.0)
    with torch.no_grad():
        before = torch.softmax(policy(data["obs"].float(), legal), 1)[:, 56].mean()
    fit = fit_to_search_values(policy, data, cfg, torch.Generator().manual_seed(0), log=lambda line: None)
    with torch.no_grad():
        after = torch.softmax(policy(data["obs"].float(), legal), 1)[:, 56].mean()
    assert fit["valued"] == rows and fit["fit_epoch"] >= 1
    assert before < 0.1 and after > 0.25                     # toward the best-valued bid (its target: 0.88)


def test_expert_ray_sends_the_rounds_labelling_to_ray(tmp_path, monkeypatch):
    """expert_ray reaches spades-label's Ray path (the labeller's own tests run it on Ray)."""
    from types import SimpleNamespace
    import train.labelling.labeller as labeller
    from train.labelling.expert_iteration import label_round
    from train.labelling.expert_manifest import ExpertIterationError
    seen: list[dict] = []

    def stop(settings, progress=True, log=print):
        seen.append(settings)
        raise labeller.LabelError("stopped here")
    monkeypatch.setattr(labeller, "label", stop)
    for ray in ("local", None):
        trainer = SimpleNamespace(config=load_config(None, [f"expert_ray={'null' if ray is None else ray}"]),
                                  run_path=tmp_path, log=lambda line: None)
        with pytest.raises(ExpertIterationError, match="stopped here"):
            label_round(trainer, 1, tmp_path / "student.pt")
        assert seen[-1]["ray"] == ray
    with pytest.raises(ConfigError, match=r"expert_ray=' ': expected a Ray address"):
        load_config(None, ["expert_ray=' '"])


def test_the_rounds_evaluation_plays_hands_from_real_starts_when_told(tmp_path, monkeypatch):
    """expert_eval_start: real reaches every match of the round's evaluation (blind nil is offered
    there: single hands from 0-0 never show a blind-nil leak)."""
    from types import SimpleNamespace
    import evaluation
    from train.labelling.expert_iteration import evaluate_round
    starts: list[str] = []
    interval = SimpleNamespace(mean=0.0, low=0.0, high=0.0)

    def fake_evaluate(team_a, team_b, deals=None, **options):
        starts.append(options["start"])
        return SimpleNamespace(score_diff=interval)
    monkeypatch.setattr(evaluation, "evaluate", fake_evaluate)
    monkeypatch.setattr(evaluation, "paired_difference", lambda a, b: (interval, None))
    for start in ("real", "zero"):
        starts.clear()
        cfg = load_config(None, [f"expert_eval_start={start}", "expert_eval_opponents=[heuristic, search_v1]",
                                 "expert_workers=1"])
        row = evaluate_round(SimpleNamespace(config=cfg), tmp_path / "fitted.pt", tmp_path / "student.pt", 1)
        assert starts == [start] * 5 and "vs_search_v1" in row


def test_a_run_from_init_from_killed_in_round_1_can_resume(tmp_path, monkeypatch):
    """No warm start before the rounds (init_from, imitation 0): the run still saves its start
    before round 1, so a kill in round 1 resumes it (the recipe runner resumes a train step only
    from a checkpoint; else it starts the step over and its labels are lost)."""
    import train.labelling.labeller as labeller
    from train.labelling.expert_manifest import ExpertIterationError
    base = TINY_EXPERT + [f"run_dir={tmp_path}", "name=start", "expert_rounds=0"]
    Trainer(load_config(None, base), log=lambda line: None).train()
    start = tmp_path / "start" / "model.pt"

    def killed(settings, progress=True, log=print):
        raise labeller.LabelError("killed here")
    monkeypatch.setattr(labeller, "label", killed)
    run = TINY_EXPERT + [f"run_dir={tmp_path}", "name=ei", "imitation_decisions=0", f"init_from={start}",
                         "expert_rounds=1"]
    with pytest.raises(ExpertIterationError, match="killed here"):
        Trainer(load_config(None, run), log=lambda line: None).train()
    checkpoint = read_checkpoint(tmp_path / "ei" / "checkpoints" / "last.pt")
    assert checkpoint["expert_rounds_done"] == 0
    assert same_weights(checkpoint["policy"], read_checkpoint(start)["policy"])
