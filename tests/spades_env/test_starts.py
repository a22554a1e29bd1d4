"""Hand starts by name (spades_env.starts): the recorded "real" table, its draws, and every face
that takes a start by name (the AEC env's reset, spades-eval, spades-train)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from evaluation import EvaluationError, evaluate, main
from evaluation.record_starts import both_orientations, hand_starts, record_starts
from spades_env import spades_v0
from spades_env.game import DealError
from spades_env.rules import make_rules
from spades_env.starts import (StartError, hand_start_names, load_table, parse_table, sample_starts,
                               start_summary)
from train.ppo.config import ConfigError, load_config
from train.ppo.rollout import StartingScores


def table_states() -> set[tuple[int, int, int, int]]:
    t = load_table()
    return {(int(s[0]), int(s[1]), int(b[0]), int(b[1])) for s, b in zip(t.scores, t.bags)}


def test_the_table_loads_and_every_state_is_a_legal_hand_start():
    rules = make_rules("standard")
    t = load_table()
    assert hand_start_names() == ("zero", "real")
    assert t.hands >= 6000 and t.meta["rules"] == "standard"
    assert (t.scores < rules.target_score).all() and (t.scores > rules.mercy_score).all()
    assert ((t.bags >= 0) & (t.bags < rules.bag_limit)).all()
    assert ((t.dealers >= 0) & (t.dealers <= 3)).all() and (t.counts > 0).all()
    # both orientations are in the table, equally often: it favours neither side
    for column in (t.scores, t.bags):
        assert int((column[:, 0] * t.counts).sum()) == int((column[:, 1] * t.counts).sum())


def test_real_starts_meet_blind_nil_and_bags_as_games_do():
    real, zero = start_summary("real"), start_summary("zero")
    assert zero["blind_nil_offered_share"] == 0 and zero["mean_bags"] == 0
    assert 0.15 < real["blind_nil_offered_share"] < 0.6        # 32% in the committed table
    assert 1.5 < real["mean_bags"] < 6                          # 3.2 bags carried a side


def test_draws_are_deterministic_from_the_seed():
    a = sample_starts("real", 200, 7)
    b = sample_starts("real", 200, 7)
    c = sample_starts("real", 200, 8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    assert a[0].shape == (200, 2) and a[1].shape == (200, 2) and a[2].shape == (200,)
    assert {tuple(s) + tuple(g) for s, g in zip(a[0].tolist(), a[1].tolist())} <= table_states()
    r1, r2 = sample_starts("real", 5, random.Random(3)), sample_starts("real", 5, random.Random(3))
    assert np.array_equal(r1[0], r2[0])
    g = sample_starts("real", 5, np.random.default_rng(3))
    assert g[0].shape == (5, 2)
    scores, bags, dealers = sample_starts("zero", 50, 1)
    assert not scores.any() and not bags.any() and set(dealers.tolist()) <= {0, 1, 2, 3}


def test_bad_names_seeds_counts_and_rules_are_refused_clearly(tmp_path):
    with pytest.raises(StartError, match=r"start='games': expected one of 'zero', 'real'"):
        sample_starts("games", 3, 0)
    with pytest.raises(StartError, match=r"count=-1: expected a whole number"):
        sample_starts("real", -1, 0)
    with pytest.raises(StartError, match=r"seed='x': expected an integer seed"):
        sample_starts("real", 1, "x")
    with pytest.raises(StartError, match=r"under rules 'openspiel'.*mercy_score=-350"):
        sample_starts("real", 1, 0, rules="openspiel")
    with pytest.raises(StartError, match=r"target_score=300 \(recorded under 500\)"):
        sample_starts("real", 1, 0, rules=make_rules("standard", target_score=300))
    with pytest.raises(StartError, match="format"):
        parse_table({"format": "other"})
    bad = tmp_path / "t.json"
    bad.write_text("{")
    with pytest.raises(StartError, match="cannot be read"):
        load_table(str(bad))


def test_the_env_draws_a_real_start_from_the_reset_seed():
    env = spades_v0.raw_env()
    env.reset(seed=11, options={"start": "real"})
    first = (list(env.game.scores), list(env.game.bags), env.game.dealer, env.game.hands[:])
    env.reset(seed=11, options={"start": "real"})
    assert (list(env.game.scores), list(env.game.bags), env.game.dealer, env.game.hands[:]) == first
    seen = set()
    for seed in range(40):
        env.reset(seed=seed, options={"start": "real"})
        seen.add(tuple(env.game.scores) + tuple(env.game.bags))
    assert seen <= table_states() and len(seen) > 20
    env.reset(seed=11, options={"start": "zero"})
    zero = (list(env.game.scores), env.game.dealer, env.game.hands[:])
    env.reset(seed=11)
    assert (list(env.game.scores), env.game.dealer, env.game.hands[:]) == zero   # zero = no option
    env.reset(seed=1, options={"scores": [0, 150], "bags": [3, 0]})                 # the old options work
    assert env.game.scores == [0, 150] and env.game.bags == [3, 0]
    with pytest.raises(DealError, match=r"start='nope': expected one of"):
        env.reset(seed=1, options={"start": "nope"})
    with pytest.raises(DealError, match="do not also give scores"):
        env.reset(seed=1, options={"start": "real", "scores": [0, 0]})


def test_spades_eval_real_starts_are_the_same_for_both_plays_of_a_deal(tmp_path):
    result = evaluate("heuristic", "random", deals=8, duplicate=True, start="real", keep_records=True,
                      workers=1, seed=3)
    assert result.to_dict()["start"] == "real"
    starts = [r["start"] for r in result.records]
    for play0, play1 in zip(starts[::2], starts[1::2]):      # the start stays with the seats, as the cards do
        assert play0 == play1
    assert any(s["scores"] != [0, 0] for s in starts)
    mirror = evaluate("heuristic", "heuristic", deals=8, duplicate=True, start="real", workers=1, seed=3)
    assert mirror.score_diff.mean == 0                         # each team played both sides of every start
    zero = evaluate("heuristic", "random", deals=8, duplicate=True, workers=1, seed=3)
    assert zero.to_dict()["start"] == "zero" and zero.score_diff.mean != result.score_diff.mean
    with pytest.raises(EvaluationError, match="start='real' draws the start of single hands"):
        evaluate("heuristic", "random", games=1, start="real")
    with pytest.raises(EvaluationError, match="give it or start_scores, not both"):
        evaluate("heuristic", "random", deals=1, start="real", start_scores=(0, 100))
    with pytest.raises(EvaluationError, match="expected one of 'zero', 'real'"):
        evaluate("heuristic", "random", deals=1, start="middle")
    out = tmp_path / "r.json"
    assert main(["--team-a", "heuristic", "--team-b", "random", "--deals", "2", "--start", "real", "--workers", "1",
                 "--quiet", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["start"] == "real"


def test_record_starts_reads_every_hand_start_of_a_record():
    record = {"start": {"bags": [1, 2]},
              "hands": [{"scores_before": [0, 0], "dealer": 3, "bags": [4, 2], "complete": True},
                        {"scores_before": [60, -30], "dealer": 0, "bags": [5, 3], "complete": True}]}
    assert hand_starts(record) == [(0, 0, 1, 2, 3), (60, -30, 4, 2, 0)]
    assert both_orientations((60, -30, 4, 2, 3)) == [(60, -30, 4, 2, 3), (-30, 60, 2, 4, 0)]
    one = record_starts([("heuristic", "heuristic", 2, False)], workers=1)
    two = record_starts([("heuristic", "heuristic", 2, False)], workers=2)
    assert one == two and parse_table(one).hands == 2 * sum(s["hands"] for s in one["sources"])


def test_the_trainer_takes_start_real(tmp_path):
    config = load_config(None, ["start=real", f"run_dir={tmp_path}"])
    assert config.start_kind == "real"
    assert load_config(None, ["varied_start=true"]).start_kind == "varied"
    assert load_config(None, ["start=varied"]).start_kind == "varied"
    with pytest.raises(ConfigError, match=r"start='middle': expected one of 'zero', 'varied', 'real'"):
        load_config(None, ["start=middle"])
    with pytest.raises(ConfigError, match="varied_start: true and start: real"):
        load_config(None, ["start=real", "varied_start=true"])
    with pytest.raises(ConfigError, match="start='real' under rules 'openspiel'"):
        load_config(None, ["start=real", "rules=openspiel"])
    gen = torch.Generator().manual_seed(0)
    starts = StartingScores("real", 1.0, make_rules("standard"), 500, gen, torch.device("cpu"))
    scores, bags = starts.sample()
    drawn = {tuple(s) + tuple(b) for s, b in zip(scores.tolist(), bags.tolist())}
    assert drawn <= table_states() and len(drawn) > 100 and starts.varied
    offered = float(((scores[:, 0] - scores[:, 1]).abs() >= 100).float().mean())
    assert 0.15 < offered < 0.6
    assert not StartingScores(False, 1.0, make_rules("standard"), 4, gen, torch.device("cpu")).varied
    assert StartingScores(True, 1.0, make_rules("standard"), 4, gen, torch.device("cpu")).kind == "varied"


# Starting scores lie strictly between the mercy score and the target (issue 75): 600-0 or
# -1000-0 is a game over before its first card, and used to be played as one.
@pytest.mark.parametrize("scores", [[600, 0], [0, 500], [-1000, 0], [0, -200], [10 ** 30, 0]])
def test_a_start_past_the_target_or_the_mercy_score_is_refused_by_both_engines(scores):
    from spades_env.vector import SpadesVectorEnv, VectorEnvError
    with pytest.raises(DealError, match=rf"scores=.*: (expected every starting score strictly between mercy_score -200 "
                                        rf"and target_score 500|each starting score must lie within)"):
        spades_v0.env().reset(seed=0, options={"scores": scores})
    with pytest.raises(VectorEnvError, match=r"scores"):
        SpadesVectorEnv(2).reset(seed=0, scores=scores)
    with pytest.raises(VectorEnvError, match=r"scores"):
        SpadesVectorEnv(2).set_start(scores=scores)


def test_the_bounds_are_the_rules_own_and_a_game_in_progress_may_stand_over_the_target():
    from spades_env.game import SpadesGame
    spades_v0.env().reset(seed=0, options={"scores": [499, -199]})          # just inside: a game
    spades_v0.env(target_score=300, mercy_score=-100).reset(seed=0, options={"scores": [299, -99]})
    with pytest.raises(DealError, match=r"strictly between mercy_score -100 and target_score 300"):
        spades_v0.env(target_score=300, mercy_score=-100).reset(seed=0, options={"scores": [300, 0]})
    spades_v0.env(mercy_score=None, max_hands=5).reset(seed=0, options={"scores": [-10 ** 6, 0]})
    with pytest.raises(DealError, match=r"strictly below target_score 500"):
        spades_v0.env(mercy_score=None, max_hands=5).reset(seed=0, options={"scores": [500, 0]})
    assert SpadesGame("standard", 0, scores=[510, 510], mid_game=True).scores == [510, 510]   # a tie plays on


@pytest.mark.parametrize("flag", ["600,0", "-1000,0", f"{10 ** 30},0", "0,-200"])
@pytest.mark.parametrize("count", [["--games", "1"], ["--deals", "2"]])
def test_spades_eval_refuses_a_start_outside_the_game_in_one_line(flag, count, capsys):
    assert main(["--team-a", "random", "--team-b", "random", *count, f"--start-scores={flag}", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"spades-eval: error: start_scores=[{flag.replace(',', ', ')}]: expected every starting "
                          "score strictly between mercy_score -200 and target_score 500")
    with pytest.raises(EvaluationError, match=r"start_scores=\[600, 0\]"):
        evaluate("random", "random", games=1, start_scores=(600, 0))


def test_real_starts_must_lie_within_the_rules_game_and_the_recorder_keeps_only_such():
    from evaluation.record_starts import game_starts
    from spades_env.starts import check_rules
    table = load_table()
    check_rules(table, make_rules("standard"))
    beyond = parse_table({**table.meta, "states": [[510, 510, 0, 0, 0, 1], [0, 0, 0, 0, 1, 1]]})
    with pytest.raises(StartError, match=r"its scores reach 0\.\.510: expected every starting score strictly between"):
        check_rules(beyond, make_rules("standard"))
    record = {"start": {"bags": [0, 0]}, "hands": [
        {"scores_before": [0, 0], "dealer": 0, "bags": [1, 2]},
        {"scores_before": [505, 505], "dealer": 1, "bags": [3, 4]},       # tied over the target: plays on
        {"scores_before": [560, 530], "dealer": 2, "bags": [5, 6], "complete": False}]}
    assert hand_starts(record)[:2] == [(0, 0, 0, 0, 0), (505, 505, 1, 2, 1)]
    assert game_starts(record, make_rules("standard")) == [(0, 0, 0, 0, 0)]


def test_varied_starts_must_fit_the_rules_of_a_run_and_of_labels(tmp_path, capsys):
    from train.labelling.cli import main as label_main
    short = tmp_path / "short.yaml"
    short.write_text("target_score: 300\n")
    expected = (r"varied starts draw scores -150\.\.490: expected every starting score strictly between mercy_score "
                r"-200 and target_score 300")
    with pytest.raises(ConfigError, match=expected):
        load_config("configs/quickstart.yaml", ["varied_start=true", f"rules={short}"])
    load_config("configs/quickstart.yaml", ["varied_start=true"])               # the standard rules hold them
    assert label_main(["--teacher", "heuristic", "--deals", "4", "--varied-start", "0.5", "--rules", str(short),
                       "--out", str(tmp_path / "labels"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--varied-start: varied starts draw scores -150..490" in err
    assert not (tmp_path / "labels").exists()
