"""A cooperative rating: who helps whom, from the mixed-team cross-play matrix.

The league rates each agent beside its own copy (a competitive rating); cross-play
(:func:`evaluation.results.crossplay`) seats every agent with every other as partners against
one reference team, on the same deals. This reads that matrix as partners:

- ``partner_score``: the points per hand (minus the reference's) of the teams an agent sits in
  with the *other* agents, both seat orders, each partner weighing the same. The plain reading:
  how well do teams with it in them do?
- ``skill``: the additive model ``score(i with j) = mean + skill(i) + skill(j)`` fitted by least
  squares to the mixed teams (self-play left out), skills summing to 0: how many points per hand
  a team gains by having this agent rather than the roster's average one. On the complete design
  of cross-play it has a closed form, ``skill = (n-1)/(n-2) (partner_score - mean)``: the same
  order as ``partner_score``, freed of the fact that an agent never partners itself (a strong
  agent's partners are, on average, weaker than the roster). It needs three agents or more (with
  two, only their one team is seen and no one's share of it).
- ``self_play_bonus``: self-play (an agent beside its copy) minus what the additive model
  predicts for that team (``mean + 2 skill``): how much better an agent plays with itself than
  with others of the same strength, i.e. conventions of its own.
- ``interaction[i][j]``: a mixed team's score (both seat orders averaged) minus the additive
  model's prediction: who fits whom beyond their skills (the matrix's rows sum to 0 over partners).

Intervals: 95% percentile bootstrap over deals (or game seeds): every cell of the matrix played
the same deals, so a resample draws deals and every cell's result on them moves together (the
luck of the cards, shared by all cells, then cancels in ``skill``, as it does in the point
estimate). Each cell's score on a resample is its points over its hands, as cross-play's own.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

RESAMPLES = 1000
METHOD = ("additive model score(i with j) = mean + skill(i) + skill(j), least squares over the mixed teams "
          "(self-play left out), skills summing to 0; partner_score: mean over the other agents, both seats")


def _fit(cells: np.ndarray) -> dict:
    """Partner scores, skills, self-play bonuses and interactions of mean cell scores ``cells``
    (..., n, n): leading axes are resamples."""
    n = cells.shape[-1]
    off = ~np.eye(n, dtype=bool)
    pair = (cells + np.swapaxes(cells, -1, -2)) / 2            # both seat orders of a team
    mixed = np.where(off, pair, 0.0)
    partner_score = mixed.sum(-1) / (n - 1)
    mean = partner_score.mean(-1, keepdims=True)
    skill = (n - 1) / (n - 2) * (partner_score - mean)
    predicted = mean[..., None] + skill[..., :, None] + skill[..., None, :]
    diagonal = np.diagonal(cells, axis1=-2, axis2=-1)
    bonus = diagonal - (mean + 2 * skill)
    interaction = np.where(off, pair - predicted, np.nan)
    return {"partner_score": partner_score, "skill": skill, "self_play_bonus": bonus, "mean": mean[..., 0],
            "interaction": interaction}


def resample_cells(points: np.ndarray, hands: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Every cell's points per hand on each resample of units: ``points``/``hands`` (n, n, units),
    ``draws`` (resamples, units) unit indices, the same draw for every cell. (resamples, n, n)."""
    units = points.shape[-1]
    weights = np.stack([np.bincount(row, minlength=units) for row in draws]).astype(float)
    return np.einsum("ru,iju->rij", weights, points) / np.einsum("ru,iju->rij", weights, hands)


def cooperative_rating(points: Sequence, hands: Sequence, agents: Sequence[str], seed: int = 0,
                       resamples: int = RESAMPLES) -> Optional[dict]:
    """The cooperative rating (module docstring) of a cross-play matrix given per cell and unit
    (deal or game) the team's points minus the reference's, ``points[i][j][u]``, and the hands
    played, ``hands[i][j][u]`` (agent i on seat 0, j on seat 2). None with fewer than three
    agents (no one's share of a team can be told apart)."""
    points, hands = np.asarray(points, dtype=float), np.asarray(hands, dtype=float)
    n = len(agents)
    if n < 3:
        return None
    if points.shape != hands.shape or points.shape[:2] != (n, n) or points.ndim != 3 or points.shape[2] < 1:
        raise ValueError(f"cooperative_rating: expected points and hands of shape ({n}, {n}, units), "
                         f"got {points.shape} and {hands.shape}")
    cells = points.sum(-1) / hands.sum(-1)
    fit = _fit(cells)
    draws = np.random.default_rng(seed).integers(0, points.shape[2], (resamples, points.shape[2]))
    boot = _fit(resample_cells(points, hands, draws))
    bounds = {k: np.percentile(v, [2.5, 97.5], axis=0) for k, v in boot.items() if k != "interaction"}
    best = [max((j for j in range(n) if j != i), key=lambda j: (fit["interaction"][i, j], -j)) for i in range(n)]

    def entry(i: int) -> dict:
        out = {"agent": agents[i]}
        for key in ("partner_score", "skill", "self_play_bonus"):
            out[key] = float(fit[key][i])
            out[f"{key}_low"], out[f"{key}_high"] = float(bounds[key][0][i]), float(bounds[key][1][i])
        out["best_fit"] = agents[best[i]]
        return out

    return {
        "method": METHOD,
        "interval": f"95% percentile bootstrap over units ({resamples} resamples, every cell on the same draw)",
        "unit": "points per hand, the team minus the reference",
        "mean": float(fit["mean"]), "mean_low": float(bounds["mean"][0]), "mean_high": float(bounds["mean"][1]),
        "ratings": [entry(i) for i in sorted(range(n), key=lambda i: (-fit["skill"][i], i))],
        "agents": list(agents),
        "interaction": [[None if i == j else float(fit["interaction"][i, j]) for j in range(n)] for i in range(n)],
    }


def format_cooperative_rating(rating: Optional[dict]) -> str:
    """The report's lines (empty with fewer than three agents)."""
    if rating is None:
        return ""
    rows = [("partner", "skill", "95% interval", "with others", "95% interval", "self-play bonus", "95% interval",
             "fits best with")]
    for r in rating["ratings"]:
        rows.append((r["agent"], f"{r['skill']:+.1f}", f"[{r['skill_low']:+.1f}, {r['skill_high']:+.1f}]",
                     f"{r['partner_score']:+.1f}", f"[{r['partner_score_low']:+.1f}, {r['partner_score_high']:+.1f}]",
                     f"{r['self_play_bonus']:+.1f}",
                     f"[{r['self_play_bonus_low']:+.1f}, {r['self_play_bonus_high']:+.1f}]", r["best_fit"]))
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    lines = ["cooperative rating (points per hand a team gains with the partner, additive model over the mixed "
             f"teams; mean of mixed teams {rating['mean']:+.1f})"]
    lines += ["  ".join(c.rjust(w) if 0 < k < len(row) - 1 else c.ljust(w) for k, (c, w) in enumerate(zip(row, widths)))
              .rstrip() for row in rows]
    return "\n".join(lines)


__all__ = ["cooperative_rating", "format_cooperative_rating", "resample_cells", "METHOD"]
