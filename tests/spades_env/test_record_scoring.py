"""A game record carries the scoring as the engine did it: per hand and side the contract, the
tricks that counted, made or set, the points by kind, bags, and each nil kept or broken. Readers
(evaluation, the terminal and web tables) take them from the record instead of recomputing;
records written before this field existed still replay."""

import copy

import pytest

from spades_env import ReplayError, replay, spades_v0
from spades_env.scoring import score_side

from helpers import heuristic_record


def _play_game(rules: str, seed: int, max_hands: int = 4) -> dict:
    return heuristic_record(seed, episode="game", rules=rules, max_hands=max_hands)


@pytest.mark.parametrize("rules", ["standard", "basic", "tournament", "cutthroat", "openspiel"])
def test_every_scored_hand_states_the_engines_results(rules):
    record = _play_game(rules, seed=3)
    env = spades_v0.raw_env(rules=rules)
    r = env.rules
    for hand in record["hands"]:
        if not hand["complete"]:
            continue
        assert [res["side"] for res in hand["results"]] == list(range(r.num_sides))
        for res in hand["results"]:
            side = res["side"]
            members = r.side_members(side)
            assert res["seats"] == list(members)
            # contract and counted tricks do not depend on the bags before the hand
            expected = score_side(r, [hand["bids"][m] for m in members], [hand["blind"][m] for m in members],
                                  [hand["tricks_taken"][m] for m in members], hand["scores_before"][side], 0)
            assert res["contract"] == expected.contract and res["tricks"] == expected.tricks
            assert res["made"] == (res["tricks"] >= res["contract"])
            assert res["points"] == hand["score_change"][side]
            assert res["bags_after"] == hand["bags"][side]
            assert (res["contract_points"] + res["overtrick_points"] + res["nil_points"]
                    - r.bag_penalty * res["bag_penalties"]) == res["points"]
            nil_seats = [m for m in members if hand["bids"][m] == 0]
            assert [n["seat"] for n in res["nils"]] == nil_seats
            for n in res["nils"]:
                assert n["kept"] == (hand["tricks_taken"][n["seat"]] == 0)
    assert record["hands"][0]["complete"]


def test_nils_kept_and_broken_are_both_recorded():
    kept = broken = 0
    for seed in range(30):
        for hand in _play_game("standard", seed=seed, max_hands=2)["hands"]:
            for res in hand.get("results", []):
                kept += sum(n["kept"] for n in res["nils"])
                broken += sum(not n["kept"] for n in res["nils"])
    assert kept > 0 and broken > 0


def test_a_record_without_results_still_replays():
    """Records saved before hands carried their results (the field is optional on input)."""
    record = _play_game("standard", seed=5)
    old = copy.deepcopy(record)
    for hand in old["hands"]:
        hand.pop("results", None)
    replayed = replay(old).game_record()
    assert replayed["hands"][0]["results"] == record["hands"][0]["results"]


def test_a_record_whose_results_disagree_with_the_engine_is_refused():
    record = _play_game("standard", seed=6)
    record["hands"][0]["results"][0]["made"] = not record["hands"][0]["results"][0]["made"]
    with pytest.raises(ReplayError, match="hand 1: the record says results="):
        replay(record)
