"""spades-coop distance: action agreement on a shared set of states (issue 48, item 2)."""

import json

import numpy as np
import pytest

from coop.cli import main
from coop.measures.distance import (KINDS, agreement_counts, bootstrap_agreement, measure_distance,
                                 nearest_partners)

ROSTER = ["heuristic", "heuristic:backend=python", "high-asks", "cautious", "random"]


@pytest.fixture(scope="module")
def result():
    return measure_distance(ROSTER, states=400, seed=0)


def cell(result, a, b, kind="all"):
    i, j = result["agents"].index(a), result["agents"].index(b)
    entry = result["agreement"][kind]
    return entry["value"][i][j], entry["low"][i][j], entry["high"][i][j]


def test_an_agent_agrees_with_itself_and_the_two_backends_agree_everywhere(result):
    for kind in KINDS:
        assert cell(result, "heuristic", "heuristic:backend=python", kind) == (1.0, 1.0, 1.0), kind
        assert cell(result, "heuristic", "heuristic", kind)[0] == 1.0        # asked again: the same choice
    assert cell(result, "random", "random")[0] < 0.5          # random asked again under another seed


def test_other_conventions_agree_less_and_random_far_less(result):
    cautious = cell(result, "heuristic", "cautious")[0]
    high_asks = cell(result, "heuristic", "high-asks")[0]
    rnd = cell(result, "heuristic", "random")[0]
    assert 0.5 < cautious < 1.0 and 0.5 < high_asks < 1.0
    assert cell(result, "heuristic", "cautious", "bids")[0] < 0.5      # it bids low: most bids differ
    assert rnd < cautious - 0.3 and rnd < 0.5


def test_every_interval_holds_its_estimate_and_is_symmetric_in_the_pair(result):
    n = len(ROSTER)
    for kind in KINDS:
        entry = result["agreement"][kind]
        assert entry["states"] > 0, kind
        for i in range(n):
            for j in range(n):
                value, low, high = entry["value"][i][j], entry["low"][i][j], entry["high"][i][j]
                assert low <= value <= high, (kind, i, j)
                assert (value, low, high) == (entry["value"][j][i], entry["low"][j][i], entry["high"][j][i])
    rnd = cell(result, "heuristic", "random")
    assert rnd[2] - rnd[1] > 0.02           # a real spread over deals


def test_states_cover_bids_cards_and_nil_hands(result):
    counts = result["counts"]
    assert counts["all"] == result["states"] == 400 == counts["bids"] + counts["cards"]
    assert counts["bids"] >= 4 * (result["deals"] - 1) and counts["nil"] > 10 and counts["partner_nil"] > 10


def test_the_same_seed_gives_the_same_result_and_another_seed_other_states():
    a = measure_distance(["heuristic", "random"], states=60, seed=3, resamples=50)
    assert a == measure_distance(["heuristic", "random"], states=60, seed=3, resamples=50)
    b = measure_distance(["heuristic", "random"], states=60, seed=4, resamples=50)
    assert a["agreement"]["all"] != b["agreement"]["all"]


def test_the_bootstrap_resamples_deals():
    # 40 deals of 10 states each; the two agents agree on every state of half the deals only
    deals = 40
    data = {"deal": np.repeat(np.arange(deals), 10), "deals": deals, "bids": np.zeros(400, bool),
            "nil": np.zeros(400, bool), "partner_nil": np.zeros(400, bool)}
    agree_deal = np.repeat(np.arange(deals) % 2 == 0, 10)
    data["answers"] = np.stack([np.zeros(400, int), np.where(agree_deal, 0, 1)], axis=1)
    data["again"] = data["answers"].copy()
    agree, count = agreement_counts(data)
    assert agree[:, 0, 0, 1].sum() / count[:, 0].sum() == 0.5
    low, high = bootstrap_agreement(agree, count, seed=0, resamples=2000)
    # a share of 20 deals in 40: the resampled share spreads as a binomial's, sd 0.079
    assert 0.30 < low[0, 0, 1] < 0.40 and 0.60 < high[0, 0, 1] < 0.70, (low[0, 0, 1], high[0, 0, 1])
    assert low[2, 0, 0] == high[2, 0, 0] == 1.0                     # an agent asked again: always alike
    assert np.isnan(low[1, 0, 1]) and np.isnan(high[3, 0, 1])        # no bids, no nil hands: no interval


def test_nearest_partner_is_the_train_partner_agreeing_most():
    labels = ["a", "b", "h1", "v", "h2"]
    zoo_of = [{"name": "a", "split": "train"}, {"name": "b", "split": "train"}, {"name": "h1", "split": "held-out"},
              {"name": "v", "split": "validation"}, {"name": "h2", "split": "held-out"}]
    value = np.array([[1, .5, .7, .9, .6], [.5, 1, .9, .5, .75], [.7, .9, 1, .95, .5],
                      [.9, .5, .95, 1, .99], [.6, .75, .5, .99, 1]])
    found = nearest_partners(labels, zoo_of, value, value - 0.05, value + 0.05)
    assert [(n["held_out"], n["nearest_train"], n["value"], n["within_goal"]) for n in found] == [
        ("h1", "b", 0.9, False), ("h2", "b", 0.75, True)]
    value[4, 4] = 0.77                      # h2 a sampler: its interval with b reaches its own level
    assert [(n["ceiling"], n["as_alike_as_themselves"]) for n in
            nearest_partners(labels, zoo_of, value, value - 0.05, value + 0.05)] == [(1.0, False), (0.77, True)]
    assert not nearest_partners(labels, zoo_of, value, value - 0.01, value + 0.01)[1]["as_alike_as_themselves"]


def test_the_command_writes_json_and_a_heat_map(tmp_path, capsys):
    out = tmp_path / "distance.json"
    assert main(["distance", "heuristic", "low-asks", "conservative", "--states", "80", "--seed", "1",
                 "--json", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "behavioural distance: 3 agents, 80 decision states" in printed and "nearest train partner" in printed
    data = json.loads(out.read_text())
    assert {"agents", "specs", "zoo", "seed", "driver", "states", "deals", "counts", "agreement", "interval",
            "nearest"} <= set(data)
    assert data["specs"][1] == "heuristic:discards=low_asks" and data["zoo"][1] == {"name": "low-asks",
                                                                                       "split": "held-out"}
    assert set(data["agreement"]) == set(KINDS) and data["driver"] == "mix"
    assert [n["held_out"] for n in data["nearest"]] == ["low-asks"]
    assert data["nearest"][0]["nearest_train"] in ("heuristic", "conservative")
    assert out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.parametrize("argv, words", [
    (["heuristic"], "at least two agents"),
    (["heuristic", "nosuch"], "unknown agent 'nosuch'"),
    (["heuristic", "random", "--states", "0"], "--states=0"),
    (["heuristic", "random", "--driver", "nosuch"], "driver 'nosuch'"),
    (["heuristic", "human"], "a person cannot be asked"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    assert main(["distance", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
