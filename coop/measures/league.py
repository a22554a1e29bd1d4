"""A league: ``spades-league SPEC SPEC ...`` plays a round robin on duplicate deals and rates it.

Every pair of the roster plays the same deals (the same seed), each deal twice with the seats
swapped. Two views of the result:

- **Bradley-Terry ratings, Elo-scaled.** A deal is won by the pair member with more points over
  its two plays (a tie is half a win each). The strengths maximise the Bradley-Terry likelihood
  of these wins, with one virtual tied deal per pair so that a side that wins every deal keeps a
  finite rating; ``rating = 400 log10(strength)``, centred on a mean of 0. Intervals: 95%
  percentile bootstrap over deals (every pair's result on a resampled deal moves together).
- **Nash averaging** (Balduzzi et al., 2018, "Re-evaluating evaluation"): the payoff matrix is
  points per hand of each agent against each other, a symmetric zero-sum game; its
  maximum-entropy Nash equilibrium is a mixture over the roster, and an agent's Nash average is its
  payoff against that mixture (0 for the agents in the equilibrium, below 0 for those it
  exploits). Unlike Elo or alpha-rank, it is not moved by copies: a copy's payoffs equal its
  original's, the maximum-entropy equilibrium shares the original's weight among them, and every
  agent's payoff against the mixture stays the same. It is not fooled by a cycle either (rock,
  paper and scissors all score 0). Copies (agents whose payoffs are exactly equal, the payoff
  between them 0) are merged before solving, which makes the invariance exact, not just up to
  the solver's tolerance.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from coop.common import PlayerCache, check_positive, deal_scores, fmean, player_key
from evaluation.matches import Team, derive_seed, match_config, play_matches
from evaluation.outcomes import EvaluationError
from spades_env.files import save_figure

ELO = 400.0 / math.log(10.0)
NASH_METHOD = "Nash averaging: payoff against the maximum-entropy Nash equilibrium of the points-per-hand game"


# ------------------------------------------------------------------ Bradley-Terry
def bradley_terry(wins: np.ndarray, prior: float = 1.0, iterations: int = 5000, tol: float = 1e-12) -> np.ndarray:
    """Elo-scaled Bradley-Terry ratings (mean 0) from ``wins[i, j]`` = deals i won against j;
    ``prior`` virtual tied deals per pair (Hunter's minorise-maximise iterations)."""
    n = len(wins)
    w = wins + prior / 2.0 * (1 - np.eye(n))
    games = w + w.T
    total = w.sum(1)
    p = np.ones(n)
    for _ in range(iterations):
        denom = (games / (p[:, None] + p[None, :])).sum(1)
        new = total / denom
        new /= math.exp(np.log(new).mean())
        if np.max(np.abs(new - p)) < tol:
            p = new
            break
        p = new
    ratings = ELO * np.log(p)
    return ratings - ratings.mean()


# ------------------------------------------------------------------ Nash averaging
def _copies(payoff: np.ndarray) -> list[int]:
    """For each agent, the first agent it is an exact copy of (itself if none)."""
    rep = []
    for i in range(len(payoff)):
        for j in range(i):
            if rep[j] == j and payoff[i, j] == 0 and np.array_equal(payoff[i], payoff[j]):
                rep.append(j)
                break
        else:
            rep.append(i)
    return rep


def _max_entropy_nash(m: np.ndarray) -> np.ndarray:
    """The maximum-entropy p with m @ p <= 0 on the simplex (m antisymmetric)."""
    from scipy.optimize import linprog, minimize

    n = len(m)
    if n == 1:
        return np.ones(1)
    points = []
    for k in range(n):          # the largest weight each agent can have in an equilibrium
        c = np.zeros(n)
        c[k] = -1.0
        res = linprog(c, A_ub=m, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0, 1)] * n,
                      method="highs")
        if res.status != 0:
            raise RuntimeError(f"Nash averaging: the equilibrium program failed ({res.message})")
        points.append(res.x)
    support = np.array([p[k] > 1e-9 for k, p in enumerate(points)])
    start = np.mean(points, axis=0)[support]
    start /= start.sum()
    if support.sum() == 1:
        p = np.zeros(n)
        p[support] = 1.0
        return p
    sub = m[:, support]

    def negative_entropy(q):
        q = np.clip(q, 1e-15, None)
        return float((q * np.log(q)).sum())

    res = minimize(negative_entropy, start, jac=lambda q: np.log(np.clip(q, 1e-15, None)) + 1.0, method="SLSQP",
                   bounds=[(0, 1)] * len(start),
                   constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones_like(q)},
                                {"type": "ineq", "fun": lambda q: -(sub @ q), "jac": lambda q: -sub}],
                   options={"ftol": 1e-12, "maxiter": 500})
    q = np.clip(res.x if res.success else start, 0.0, None)
    p = np.zeros(n)
    p[support] = q / q.sum()
    return p


def nash_average(payoff: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """(Nash averages, equilibrium weights) of an antisymmetric payoff matrix; copies merged
    first, so adding a copy of an agent moves no one's Nash average."""
    m = np.asarray(payoff, dtype=float)
    if m.shape != (len(m), len(m)) or not np.allclose(m, -m.T):
        raise ValueError("nash_average: expected a square antisymmetric payoff matrix")
    rep = _copies(m)
    keep = sorted(set(rep))
    reduced = m[np.ix_(keep, keep)]
    weights = _max_entropy_nash(reduced)
    averages = reduced @ weights
    averages[np.abs(averages) < 1e-9] = 0.0          # the equilibrium's members: 0 up to rounding
    counts = {k: rep.count(k) for k in keep}
    value = np.array([averages[keep.index(rep[i])] for i in range(len(m))])
    mass = np.array([weights[keep.index(rep[i])] / counts[rep[i]] for i in range(len(m))])
    return value, mass


# ------------------------------------------------------------------ intervals
def bootstrap_ratings(outcome: np.ndarray, prior: float, draws: np.ndarray) -> np.ndarray:
    """Bradley-Terry ratings on every resample of deals: ``outcome`` (agents, agents, deals) of
    wins, ``draws`` (resamples, deals) deal indices; all pairs' results on a drawn deal move
    together, since every pair played the same deals."""
    return np.array([bradley_terry(outcome[:, :, idx].sum(2), prior) for idx in draws])


def bootstrap_nash(per_deal: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Nash averages on every resample of deals: the payoff matrix of the drawn deals (``per_deal``:
    points per hand of i minus j on each deal), solved again each time."""
    return np.array([nash_average(per_deal[:, :, idx].mean(2))[0] for idx in draws])


# ------------------------------------------------------------------ the league
def run_league(roster: Sequence[Any], *, deals: int = 100, seed: int = 0, workers: Optional[int] = None,
               progress: bool = False, ray: Optional[str] = None, journal: Optional[str] = None,
               rules: Any = "standard", resamples: int = 1000, prior: float = 1.0,
               nash_resamples: int = 200) -> dict:
    """Round robin over ``roster`` (specs or factories); returns what ``--json`` writes. Both
    views get 95% percentile bootstrap intervals over deals (the Nash view on the first
    ``nash_resamples`` resamples: each one solves the equilibrium again)."""
    if isinstance(roster, str) or len(roster) < 2:
        raise EvaluationError("a league needs a roster of at least two agents")
    check_positive(deals, "deals")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EvaluationError(f"seed={seed!r}: expected an integer")
    cache = PlayerCache()
    players = [cache.get(spec) for spec in roster]
    if len({player_key(p) for p in players}) < 2:      # nothing to play: every pair would be a copy
        raise EvaluationError(f"a league needs at least two different agents; the roster "
                              f"{[p.label for p in players]} holds copies of one agent only")
    n = len(players)
    match_seed = derive_seed("spades-league", seed)
    pairs: dict[tuple, int] = {}
    configs = []
    for i in range(n):
        for j in range(i + 1, n):
            key = (player_key(players[i]), player_key(players[j]))
            if key[0] != key[1] and key not in pairs:
                pairs[key] = len(configs)
                configs.append(match_config(Team(players[i], players[i]), Team(players[j], players[j]), deals=deals,
                                            duplicate=True, rules=rules, seed=match_seed))
    outcomes = (play_matches(configs, workers, progress, desc="spades-league", ray=ray, journal=journal)
                if configs else [])
    per_deal = np.zeros((n, n, deals))            # points per hand of i minus j, per deal
    for i in range(n):
        for j in range(i + 1, n):
            key = (player_key(players[i]), player_key(players[j]))
            if key in pairs:
                scores = np.array(deal_scores(outcomes[pairs[key]]))
                per_deal[i, j], per_deal[j, i] = scores, -scores
    payoff = np.array([[fmean(per_deal[i, j].tolist()) if i != j else 0.0 for j in range(n)] for i in range(n)])
    outcome = (per_deal > 0) + 0.5 * (per_deal == 0)          # 1 win, 0.5 tie, 0 loss (per deal)
    np.einsum("iid->id", outcome)[:] = 0.0
    ratings = bradley_terry(outcome.sum(2), prior)
    rng = np.random.default_rng(derive_seed("spades-league", "bootstrap", seed))
    draws = rng.integers(0, deals, (resamples, deals))
    low, high = np.percentile(bootstrap_ratings(outcome, prior, draws), [2.5, 97.5], axis=0)
    nash, mass = nash_average(payoff)
    nash_low, nash_high = np.percentile(bootstrap_nash(per_deal, draws[:nash_resamples]), [2.5, 97.5], axis=0)
    labels = [p.label for p in players]
    order = sorted(range(n), key=lambda i: -ratings[i])
    return {
        "roster": labels, "deals": deals, "seed": seed, "rules": configs[0].rules.name if configs else str(rules),
        "unit": "duplicate deals; payoff in points per hand",
        "ratings": [{"agent": labels[i], "rating": float(ratings[i]), "low": float(low[i]), "high": float(high[i])}
                    for i in order],
        "bradley_terry": {"scale": "Elo (400 log10 strength), mean 0", "prior_tied_deals_per_pair": prior,
                          "interval": f"95% percentile bootstrap over deals ({resamples} resamples)"},
        "nash": {"method": NASH_METHOD,
                 "interval": f"95% percentile bootstrap over deals ({min(nash_resamples, resamples)} resamples, "
                             "the equilibrium solved again on each)",
                 "ratings": [{"agent": labels[i], "nash_average": float(nash[i]), "weight": float(mass[i]),
                              "low": float(nash_low[i]), "high": float(nash_high[i])}
                             for i in sorted(range(n), key=lambda i: -nash[i])]},
        "payoff": payoff.tolist(),
        "wins": outcome.sum(2).tolist(),
    }


def format_league(result: dict) -> str:
    nash = {r["agent"]: r for r in result["nash"]["ratings"]}
    rows = [("agent", "Elo", "95% interval", "Nash average", "95% interval", "weight")]
    for r in result["ratings"]:
        x = nash[r["agent"]]
        rows.append((r["agent"], f"{r['rating']:+.0f}", f"[{r['low']:+.0f}, {r['high']:+.0f}]",
                     f"{x['nash_average']:+.1f}", f"[{x['low']:+.1f}, {x['high']:+.1f}]" if "low" in x else "-",
                     f"{x['weight']:.2f}"))
    widths = [max(len(row[k]) for row in rows) for k in range(6)]
    lines = [f"league: {len(result['roster'])} agents, {result['deals']} duplicate deals per pair "
             f"(seed {result['seed']})"]
    lines += ["  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(row, widths))) for row in rows]
    lines.append("Elo: Bradley-Terry over deals won; Nash average: points per hand against the "
                 "maximum-entropy Nash mixture (0 = in it)")
    return "\n".join(lines)


def plot_league(result: dict, path) -> Any:
    """Elo ratings with their intervals, and the Nash averages, side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratings = result["ratings"]
    nash = {r["agent"]: r["nash_average"] for r in result["nash"]["ratings"]}
    names = [r["agent"] for r in ratings]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 1.2 + 0.4 * len(names)), sharey=True)
    y = range(len(names))
    # a bootstrap percentile interval need not hold its point estimate (a Nash average is not
    # smooth in the data), and matplotlib refuses negative error bars: clip them at 0
    left.errorbar([r["rating"] for r in ratings], y, xerr=[[max(0.0, r["rating"] - r["low"]) for r in ratings],
                                                          [max(0.0, r["high"] - r["rating"]) for r in ratings]],
                  fmt="o")
    left.set_yticks(list(y), names)
    left.invert_yaxis()
    left.set_xlabel("Bradley-Terry rating (Elo, 95% bootstrap)")
    bounds = {r["agent"]: (r.get("low", r["nash_average"]), r.get("high", r["nash_average"]))
              for r in result["nash"]["ratings"]}
    right.barh(list(y), [nash[n] for n in names], xerr=[[max(0.0, nash[n] - bounds[n][0]) for n in names],
                                                        [max(0.0, bounds[n][1] - nash[n]) for n in names]])
    right.set_xlabel("Nash average (points per hand, 95% bootstrap)")
    fig.suptitle(f"league over {result['deals']} duplicate deals per pair")
    fig.tight_layout()
    save_figure(fig, path, "plot", dpi=110)
    plt.close(fig)
    return path


__all__ = ["run_league", "bradley_terry", "nash_average", "bootstrap_ratings", "bootstrap_nash", "format_league",
           "plot_league", "NASH_METHOD"]
