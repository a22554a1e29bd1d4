"""The cooperative rating from the mixed-team cross-play matrix (issue 48, item 4): who helps whom."""

import numpy as np

from evaluation.cooperative_rating import cooperative_rating, format_cooperative_rating
from evaluation.results import crossplay

NAMES = ["a", "b", "c", "d", "e"]


def synthetic(skills, deals, seed=0, shock=0.0, noise=5.0, bonus=None, fit=None):
    """Per-deal points (two hands a deal) of every team i+j: mean -10 + skill(i) + skill(j), a
    deal-wide shock shared by every cell, noise; ``bonus`` on the diagonal, ``fit`` (i, j, x)."""
    rng = np.random.default_rng(seed)
    n = len(skills)
    s = np.asarray(skills, dtype=float)
    per_hand = -10 + s[:, None] + s[None, :] + np.zeros((n, n))
    if bonus is not None:
        per_hand[np.diag_indices(n)] += bonus
    if fit is not None:
        i, j, x = fit
        per_hand[i, j] += x
        per_hand[j, i] += x
    per_deal = per_hand[:, :, None] + shock * rng.normal(size=deals) + noise * rng.normal(size=(n, n, deals))
    return 2 * per_deal, np.full((n, n, deals), 2.0)


def rows(result):
    return {r["agent"]: r for r in result["ratings"]}


def test_the_fit_is_the_least_squares_additive_model():
    points, hands = synthetic([0, 0, 0, 0, 0], deals=3, noise=20.0, seed=4)
    result = cooperative_rating(points, hands, NAMES, resamples=10)
    cells = points.sum(2) / hands.sum(2)
    design, target = [], []
    for i in range(5):
        for j in range(5):
            if i != j:
                x = np.zeros(6)
                x[0], x[1 + i], x[1 + j] = 1, 1, 1
                design.append(x)
                target.append(cells[i, j])
    design.append(np.r_[0, np.full(5, 1000.0)])      # skills sum to 0
    target.append(0.0)
    fitted = np.linalg.lstsq(np.array(design), np.array(target), rcond=None)[0]
    by = rows(result)
    assert np.allclose([by[n]["skill"] for n in NAMES], fitted[1:]) and np.isclose(result["mean"], fitted[0])
    interaction = np.array([[0.0 if v is None else v for v in row] for row in result["interaction"]])
    assert np.allclose(interaction.sum(1), 0) and np.allclose(interaction, interaction.T)


def test_planted_skills_fit_and_self_play_bonus_are_found():
    skills = [12, 4, 0, -4, -12]
    points, hands = synthetic(skills, deals=200, bonus=np.array([0, 0, 0, 0, 15.0]), fit=(1, 3, 10.0))
    result = cooperative_rating(points, hands, NAMES, seed=1, resamples=400)
    by = rows(result)
    assert [r["agent"] for r in result["ratings"]] == NAMES
    for name, truth in zip(NAMES, skills):
        # the planted fit of b and d adds 10/(n-1) to both their partner scores: within the noise
        assert abs(by[name]["skill"] - truth) < 5, (name, by[name]["skill"])
        assert by[name]["skill_low"] <= by[name]["skill"] <= by[name]["skill_high"]
    assert by["e"]["self_play_bonus_low"] > 5 and abs(by["a"]["self_play_bonus"]) < 3
    assert by["b"]["best_fit"] == "d" and by["d"]["best_fit"] == "b"
    assert result["interaction"][1][3] > 5


def test_the_bootstrap_resamples_deals_together():
    """A deal-wide shock (the cards' luck) moves every cell alike: the partner score's interval
    spreads as its per-deal values do (no resampling: no spread), the skills' does not (each
    cell resampled on its own deals: the shock would not cancel)."""
    deals = 400
    points, hands = synthetic([5, 0, 0, 0, -5], deals=deals, shock=40.0, noise=2.0, seed=2)
    result = cooperative_rating(points, hands, NAMES, seed=3, resamples=1000)
    per_deal = points / hands
    pair = (per_deal + per_deal.transpose(1, 0, 2)) / 2
    score_a = pair[0, 1:].mean(0)                  # agent a's partner score on each deal
    se = score_a.std(ddof=1) / np.sqrt(deals)
    a = rows(result)["a"]
    width = (a["partner_score_high"] - a["partner_score_low"]) / (2 * 1.96)
    assert 0.85 < width / se < 1.15, (width, se)
    skill_width = (a["skill_high"] - a["skill_low"]) / (2 * 1.96)
    assert 0 < skill_width < se / 10, (skill_width, se)


def test_two_agents_have_no_rating_and_the_report_is_empty():
    points, hands = synthetic([1, -1], deals=5)
    assert cooperative_rating(points, hands, ["a", "b"]) is None and format_cooperative_rating(None) == ""


def test_crossplay_reports_the_rating(tmp_path):
    result = crossplay(["heuristic", "heuristic:bidding=aggressive,nil=eager,cover=strong", "random"], deals=6,
                       duplicate=True, workers=1)
    rating = result.to_dict()["cooperative_rating"]
    assert rating["ratings"][-1]["agent"] == "random" and len(rating["interaction"]) == 3
    for r in rating["ratings"]:
        assert r["skill_low"] <= r["skill"] <= r["skill_high"] and r["skill_low"] < r["skill_high"]
    assert "cooperative rating" in result.format() and "fits best with" in result.format()
    assert crossplay(["heuristic", "random"], deals=2, workers=1).to_dict()["cooperative_rating"] is None
