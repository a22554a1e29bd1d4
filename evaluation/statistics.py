"""Confidence intervals for match results: Student-t (with exact quantiles and p-values for
integer degrees of freedom), delta-method ratios and contrasts clustered by deal, and Wilson
intervals for win rates. Pure functions over plain numbers; :mod:`evaluation.results` uses them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Optional, Sequence

# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------

def _t_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4, exact)."""
    theta = math.atan(abs(t) / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:
        total, term = 1.0, 1.0
        for k in range(1, (df - 1) // 2):
            term *= 2 * k / (2 * k + 1) * c2
            total += term
        inner = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return min(1.0, 2 / math.pi * (theta + inner))
    total, term = 1.0, 1.0
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * c2
        total += term
    return min(1.0, math.sin(theta) * total)


def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student-t critical value: P(|T| <= q) = confidence."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    if df > 200:  # Cornish-Fisher expansion; error far below what matters here
        g1 = (z ** 3 + z) / 4
        g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
        g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
        return z + g1 / df + g2 / df ** 2 + g3 / df ** 3
    low, high = z, z
    while _t_two_sided(high, df) < confidence:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if _t_two_sided(mid, df) < confidence:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def t_p_value(t: float, df: int) -> float:
    """Two-sided p-value of a t statistic."""
    if df > 200:
        return 2 * (1 - NormalDist().cdf(abs(t)))
    return max(0.0, 1.0 - _t_two_sided(t, df))


@dataclass
class Interval:
    """A point estimate with its confidence interval (``low``/``high`` are None when n < 2)."""

    mean: float
    low: Optional[float]
    high: Optional[float]
    n: int                      # independent units behind it
    std: Optional[float] = None  # the units' standard deviation (standard error x sqrt(n))
    p_value: Optional[float] = None
    method: str = ""

    @property
    def half_width(self) -> Optional[float]:
        return None if self.low is None else (self.high - self.low) / 2

    def to_dict(self) -> dict:
        return asdict(self)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean with a Student-t interval and the p-value of mean = 0."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_interval: no values")
    mean = math.fsum(values) / n
    if n < 2:
        return Interval(mean, None, None, n, None, None, "t")
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    std = math.sqrt(var)
    se = std / math.sqrt(n)
    q = t_quantile(confidence, n - 1)
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        p = t_p_value(mean / se, n - 1)
    return Interval(mean, mean - q * se, mean + q * se, n, std, p, "t")


def contrast_interval(terms: Sequence[tuple[float, Sequence[float], Sequence[float]]],
                      confidence: float = 0.95, method: str = "ratio, delta method") -> Interval:
    """``sum_c w_c * R_c`` with ``R_c = sum(num_c) / sum(den_c)``, every term measured on the same
    independent units (paired), with a delta-method (cluster-robust) t interval.

    ``terms`` holds ``(w_c, num_c, den_c)``, the lists indexed by unit. One term with weight 1 is a
    ratio estimate; with equal denominators everything reduces to the plain paired t interval.
    """
    n = len(terms[0][1])
    estimate = 0.0
    influence = [0.0] * n
    for weight, num, den in terms:
        if len(num) != n or len(den) != n:
            raise ValueError("contrast_interval: every term needs one value per unit")
        total = math.fsum(den)
        ratio = math.fsum(num) / total
        estimate += weight * ratio
        scale = weight * n / total
        for u in range(n):
            influence[u] += scale * (num[u] - ratio * den[u])
    if n < 2:
        return Interval(estimate, None, None, n, None, None, method)
    se = math.sqrt(math.fsum(x * x for x in influence) / (n * (n - 1)))
    q = t_quantile(confidence, n - 1)
    p = (1.0 if estimate == 0 else 0.0) if se == 0 else t_p_value(estimate / se, n - 1)
    return Interval(estimate, estimate - q * se, estimate + q * se, n, se * math.sqrt(n), p, method)


def ratio_interval(numerators: Sequence[float], denominators: Sequence[float],
                   confidence: float = 0.95) -> Interval:
    """sum(num)/sum(den) over independent clusters, with a delta-method (cluster-robust) t interval."""
    return contrast_interval([(1.0, numerators, denominators)], confidence)


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> Interval:
    """A proportion with the Wilson score interval (ties may count as half a success)."""
    p = successes / n
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), n, None, None, "Wilson")
