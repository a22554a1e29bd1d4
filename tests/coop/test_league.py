"""The league: Bradley-Terry ratings order a clear roster with separate intervals, and the Nash
averaging view does not move when copies join."""

import json

import numpy as np

from coop.cli import league_main
from coop.measures.league import bradley_terry, nash_average, run_league


def test_random_heuristic_search_are_ordered_with_separate_intervals():
    result = run_league(["search_v1:worlds=100", "random", "heuristic"], deals=60, seed=0, workers=2, resamples=300)
    by_agent = {r["agent"]: r for r in result["ratings"]}
    rnd, heu, sea = by_agent["random"], by_agent["heuristic"], by_agent["search_v1:worlds=100"]
    assert rnd["high"] < heu["low"] and heu["high"] < sea["low"], result["ratings"]
    assert [r["agent"] for r in result["ratings"]] == ["search_v1:worlds=100", "heuristic", "random"]
    nash = {r["agent"]: r for r in result["nash"]["ratings"]}
    assert nash["search_v1:worlds=100"]["nash_average"] == 0.0 and nash["search_v1:worlds=100"]["weight"] == 1.0
    assert nash["random"]["nash_average"] < nash["heuristic"]["nash_average"] < 0


def test_bradley_terry_on_known_wins():
    even = np.array([[0, 5, 5], [5, 0, 5], [5, 5, 0]], dtype=float)
    assert np.allclose(bradley_terry(even), 0.0)
    two = bradley_terry(np.array([[0, 30], [10, 0]], dtype=float), prior=0.0)
    assert abs((two[0] - two[1]) - 400 * np.log10(3)) < 1e-6       # 3:1 odds = 191 Elo
    ordered = bradley_terry(np.array([[0, 8, 9], [2, 0, 7], [1, 3, 0]], dtype=float))
    assert ordered[0] > ordered[1] > ordered[2] and abs(ordered.sum()) < 1e-9


def test_nash_averaging_ignores_copies_and_cycles():
    rps = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], dtype=float)
    values, weights = nash_average(rps)
    assert np.allclose(values, 0) and np.allclose(weights, 1 / 3)
    rng = np.random.default_rng(3)
    for _ in range(20):
        upper = np.triu(rng.normal(size=(5, 5)), 1)
        m = upper - upper.T
        values, weights = nash_average(m)
        copies = [0, 1, 2, 3, 4, 2, 2, 4]          # agent 2 three times, agent 4 twice
        bigger = m[np.ix_(copies, copies)]
        values2, weights2 = nash_average(bigger)
        assert np.array_equal(values2[:5], values) and np.array_equal(values2[5:], values[[2, 2, 4]])
        assert np.allclose(weights2[[2, 5, 6]].sum(), weights[2]) and np.allclose(weights2[[4, 7]].sum(), weights[4])
        assert values.max() <= 1e-7 and abs(weights.sum() - 1) < 1e-9


def test_adding_copies_to_a_league_does_not_move_the_nash_view():
    small = run_league(["random", "heuristic"], deals=6, workers=1, resamples=50)
    copies = run_league(["random", "heuristic", "heuristic", "heuristic:seed=7"], deals=6, workers=1, resamples=50)
    before = {r["agent"]: r["nash_average"] for r in small["nash"]["ratings"]}
    after = {r["agent"]: r["nash_average"] for r in copies["nash"]["ratings"]}
    assert after == {**before, "heuristic:seed=7": before["heuristic"]}


def test_spades_league_command(tmp_path, capsys):
    out, journal = tmp_path / "league.json", tmp_path / "league.journal"
    argv = ["random", "heuristic", "--deals", "4", "--workers", "1", "--json", str(out), "--no-progress",
            "--journal", str(journal)]
    assert league_main(argv) == 0
    first = out.read_text()
    assert len(journal.read_text().splitlines()) == 1 + 4            # its header and every deal
    assert league_main(argv) == 0 and out.read_text() == first      # resumed: every deal read back
    result = json.loads(first)
    assert {r["agent"] for r in result["ratings"]} == {"random", "heuristic"}
    for r in result["ratings"]:
        assert {"agent", "rating", "low", "high"} <= set(r) and r["low"] <= r["rating"] <= r["high"]
    assert "nash" in result and (tmp_path / "league.png").stat().st_size > 1000
    assert "Nash average" in capsys.readouterr().out
    assert league_main(["random"]) == 2
    assert league_main(["random", "nosuch"]) == 2
    assert league_main(["random", "heuristic", "--deals", "-1"]) == 2
    assert capsys.readouterr().err.count("spades-league: error:") == 3


def test_the_bootstrap_resamples_deals_and_its_spread_is_the_binomial_ones():
    """Two agents, the first wins 60% of 400 deals: the resampled Elo difference spreads as the
    binomial share does (delta method); without the resampling it would not spread at all."""
    from coop.measures.league import bootstrap_ratings
    deals = 400
    wins = (np.random.default_rng(0).random(deals) < 0.6).astype(float)
    outcome = np.zeros((2, 2, deals))
    outcome[0, 1], outcome[1, 0] = wins, 1 - wins
    draws = np.random.default_rng(1).integers(0, deals, (500, deals))
    boots = bootstrap_ratings(outcome, 0.0, draws)
    p = wins.mean()
    expected = 400 / (np.log(10) * p * (1 - p)) * np.sqrt(p * (1 - p) / deals)
    assert 0.85 < (boots[:, 0] - boots[:, 1]).std() / expected < 1.15


def test_both_views_of_a_league_have_intervals_over_deals():
    result = run_league(["heuristic", "heuristic:leads=trumps", "heuristic:bidding=aggressive"], deals=10, workers=1,
                        resamples=200, nash_resamples=50)
    assert "bootstrap" in result["nash"]["interval"]
    for r in result["ratings"]:
        assert r["low"] < r["high"] and r["low"] <= r["rating"] <= r["high"], r     # the resampled deals move them
    nash = {r["agent"]: r for r in result["nash"]["ratings"]}
    assert all(r["low"] - 1e-9 <= r["nash_average"] <= r["high"] + 1e-9 for r in nash.values())
    assert nash["heuristic"]["low"] == nash["heuristic"]["high"] == 0.0           # in the equilibrium on every resample
    assert nash["heuristic:leads=trumps"]["low"] < nash["heuristic:leads=trumps"]["high"]
