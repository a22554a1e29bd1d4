"""Whole games in the evaluation (issue 46): where the points come from by kind (contracts,
overtricks, nils, blind nils, bag penalties), the games a last hand decided (a bag-out, a blind
nil), and spades-train's evaluation in games."""

from __future__ import annotations

import csv
import json

import pytest

from evaluation import evaluate
from evaluation.outcomes import POINT_KINDS, TeamTally, decided_by, points_by_kind, tally_hand, won_from_behind
from spades_env.rules import make_rules
from train.ppo.config import load_config
from train.ppo.trainer import Trainer

RULES = make_rules("standard")
SEATS = {"A": (0, 2), "B": (1, 3)}


def side_result(contract_points=0, overtricks=0, nil_points=0, penalties=0, nils=(), contract=4, made=True):
    points = contract_points + overtricks + nil_points - 100 * penalties
    return {"contract": contract, "tricks": contract + overtricks, "made": made, "contract_points": contract_points,
            "overtrick_points": overtricks, "nil_points": nil_points, "bags_taken": overtricks,
            "bag_penalties": penalties, "points": points, "nils": [{"seat": s, "kept": k} for s, k in nils]}


def last_hand(scores, results, blind=(False,) * 4):
    return {"scores": list(scores), "results": results, "blind": list(blind),
            "score_change": [r["points"] for r in results], "bags_taken": [r["bags_taken"] for r in results]}


def test_a_game_lost_to_a_bag_penalty_in_the_last_hand_is_a_bag_out():
    # B paid 100 for its bags in the last hand and lost by 60: without it B would have been ahead
    hand = last_hand([510, 450], [side_result(60), side_result(40, 3, penalties=1)])
    assert decided_by([hand], RULES, SEATS, "A") == {"bag_out": True, "blind_nil": False}
    # lost by 120: the penalty did not decide it
    hand = last_hand([510, 390], [side_result(60), side_result(40, 3, penalties=1)])
    assert decided_by([hand], RULES, SEATS, "A")["bag_out"] is False
    # the winner's own penalty is no bag-out
    hand = last_hand([505, 450], [side_result(60, 5, penalties=1), side_result(40)])
    assert decided_by([hand], RULES, SEATS, "A")["bag_out"] is False
    # seats swapped (the duplicate's second play): team A on side 1 loses to its own bags
    hand = last_hand([510, 450], [side_result(60), side_result(40, 3, penalties=1)])
    assert decided_by([hand], RULES, {"A": (1, 3), "B": (0, 2)}, "B") == {"bag_out": True, "blind_nil": False}
    assert decided_by([hand], RULES, SEATS, None) == {"bag_out": False, "blind_nil": False}   # no winner


def test_a_blind_nil_in_the_last_hand_that_outweighs_the_margin_decides_the_game():
    blind0 = (True, False, False, False)
    kept = last_hand([520, 380], [side_result(50, nil_points=200, nils=[(0, True)]), side_result(40)], blind0)
    assert decided_by([kept], RULES, SEATS, "A") == {"bag_out": False, "blind_nil": True}     # 200 >= 140
    wide = last_hand([520, 300], [side_result(50, nil_points=200, nils=[(0, True)]), side_result(40)], blind0)
    assert decided_by([wide], RULES, SEATS, "A")["blind_nil"] is False                          # 200 < 220
    # the loser broke one: B wins by 100
    broken = last_hand([410, 510], [side_result(50, nil_points=-200, nils=[(0, False)]), side_result(40)], blind0)
    assert decided_by([broken], RULES, SEATS, "B")["blind_nil"] is True
    # a nil that is not blind does not count, nor a blind nil the loser kept
    plain = last_hand([520, 380], [side_result(50, nil_points=100, nils=[(0, True)]), side_result(40)])
    assert decided_by([plain], RULES, SEATS, "A")["blind_nil"] is False
    loser_kept = last_hand([520, 480], [side_result(50), side_result(40, nil_points=200, nils=[(1, True)])],
                           (False, True, False, False))
    assert decided_by([loser_kept], RULES, SEATS, "A")["blind_nil"] is False


def test_a_game_won_from_behind_is_one_the_winner_trailed_going_into_the_last_hand():
    blind0 = (True, False, False, False)
    # A was at 320 against B's 430 before the last hand (520 - 200, 470 - 40): a comeback
    comeback = last_hand([520, 470], [side_result(0, nil_points=200, nils=[(0, True)]), side_result(40)], blind0)
    assert won_from_behind([comeback], RULES, SEATS, "A") is True
    assert won_from_behind([comeback], RULES, {"A": (1, 3), "B": (0, 2)}, "B") is True   # the seats swapped
    # A led going in (460 against 400) and kept the lead
    held = last_hand([520, 470], [side_result(60), side_result(70)])
    assert won_from_behind([held], RULES, SEATS, "A") is False
    # B, 40 ahead going in, lost it: A's win is from behind, B's would not have been
    lost_lead = last_hand([510, 420], [side_result(80), side_result(-50, made=False)])
    assert won_from_behind([lost_lead], RULES, SEATS, "A") is True
    # level going in is not behind; no winner, no comeback
    level = last_hand([510, 480], [side_result(60), side_result(30)])
    assert won_from_behind([level], RULES, SEATS, "A") is False
    assert won_from_behind([comeback], RULES, SEATS, None) is False
    assert won_from_behind([], RULES, SEATS, "A") is False


def test_points_by_kind_split_blind_nils_from_nils_and_add_up():
    hand = last_hand([0, 0], [side_result(50, 2, nil_points=200 - 100, penalties=1, nils=[(0, True), (2, False)]),
                              side_result(-60, made=False)], (True, False, False, False))
    hand.update(bags_taken=[2, 0])
    tallies = {"A": TeamTally(), "B": TeamTally()}
    tally_hand(hand, RULES, SEATS, tallies)
    a, b = points_by_kind(tallies["A"]), points_by_kind(tallies["B"])
    assert a == {"contracts": 50, "overtricks": 2, "nils": -100, "blind_nils": 200, "bag_penalties": -100}
    assert b == {"contracts": -60, "overtricks": 0, "nils": 0, "blind_nils": 0, "bag_penalties": 0}
    assert sum(a.values()) == tallies["A"].points == 52 and tallies["A"].bag_penalties == 1
    assert tuple(a) == POINT_KINDS


def test_games_report_the_breakdown_and_keep_every_field():
    result = evaluate("heuristic", "random", games=3, duplicate=True, seed=1, workers=1)
    data = result.to_dict()
    for key in ("win_rate_a", "score_diff_per_hand", "game_diff", "points_by_kind", "decided_by", "start"):
        assert key in data
    for team in ("A", "B"):
        t = data["teams"][team]
        for key in ("bags_per_hand", "blind_nil_bids", "blind_nil_kept", "nil_bids", "nil_kept", "bag_penalties",
                    "wins_by_bag_out", "wins_by_blind_nil", "wins_from_behind", "points_by_kind",
                    "points_by_kind_per_hand"):
            assert key in t
        assert t["wins_from_behind"] <= t["wins"]
        assert sum(t["points_by_kind"].values()) == t["points"]
    assert data["decided_by"]["games"] == 6
    assert data["decided_by"]["bag_out"] <= 6 and data["decided_by"]["blind_nil"] <= 6
    text = result.format()
    assert "points per hand: blind nils" in text and "won by a bag-out / blind nil" in text
    assert "won from behind in the last hand" in text
    assert evaluate("heuristic", "random", deals=2, workers=1).to_dict()["decided_by"] is None


def test_spades_train_evaluates_in_whole_games(tmp_path):
    config = load_config(None, [
        "num_envs=16", "rollout_steps=8", "total_decisions=256", "minibatch_size=64", "epochs=1", "hidden=16",
        "head_hidden=8", "layers=1", "imitation_decisions=0", "threads=1", "progress=false", "tensorboard=false",
        "eval_every=1", "eval_deals=2", "final_eval_deals=2", "eval_opponents=[random]", "eval_games=1",
        "final_eval_games=1", "eval_against_start=false", "opponents={self: 1.0}", "checkpoint_every=1",
        f"run_dir={tmp_path}", "name=games"])
    lines = []
    Trainer(config, log=lines.append).train()
    run = tmp_path / "games"
    summary = json.loads((run / "final_eval.json").read_text())
    games = summary["evaluation_games"]["random"]
    assert games["mode"] == "games" and games["units"] == 1 and games["win_rate_a"]["low"] is not None
    assert summary["evaluation"]["random"]["mode"] == "hands"          # the single hands stay beside them
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert "eval__random__games_won" in rows[0] and rows[-1]["eval__random__games_won"] != ""
    assert any("in whole games to 500" in line for line in lines)
    assert (run / "learning_curves.png").exists()
    with pytest.raises(Exception, match=r"eval_games=-1: expected 0 or more"):
        load_config(None, ["eval_games=-1"])
