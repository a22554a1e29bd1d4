"""The evaluations of a training run: duplicate matches of the policy (greedy) against each of
``eval_opponents``, every ``eval_every`` updates and at the end; with ``eval_against_start`` the
policy PPO started from plays the same deals and the gain over it is paired deal by deal.
Also the lines and the table they are reported in."""

from __future__ import annotations

import copy
from typing import Any, Optional

import torch

from agents.neural import NeuralAgent


class PolicyEvaluator:
    """Evaluates policies for one run (``config``: its eval_* fields and rules). The start
    policy is fixed, so its match on a set of deals is played once and remembered."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self._start_results: dict[tuple, Any] = {}   # (deals, seed, opponent) -> its MatchResult
        self.last_results: dict[str, Any] = {}          # opponent -> MatchResult of the last evaluation
        self.last_gains: dict[str, Any] = {}            # opponent -> Interval of the last evaluation

    def evaluate(self, policy: torch.nn.Module, start_policy: Optional[dict], deals: int, seed: int,
                 progress: bool = False) -> dict:
        """The metrics row of one evaluation of ``policy`` (its gain over ``start_policy``, the
        start's weights, when given)."""
        from evaluation import evaluate, paired_difference

        def match(weights: Optional[dict], name: str, show: bool):
            player = copy.deepcopy(policy).to("cpu").eval()
            if weights is not None:
                player.load_state_dict(weights)

            def neural() -> NeuralAgent:          # the factory's name labels the team
                return NeuralAgent(policy=player)
            return evaluate(neural, name, deals=deals, duplicate=True, rules=self.config.rules, seed=seed,
                            workers=1, progress=show)

        row, results, gains = {}, {}, {}
        for name in self.config.eval_opponents:
            result = match(None, name, progress)
            a, b = result.teams["A"], result.teams["B"]
            row.update({f"eval__{name}__diff": result.score_diff.mean, f"eval__{name}__low": result.score_diff.low,
                        f"eval__{name}__high": result.score_diff.high, f"eval__{name}__made": a.make_rate,
                        f"eval__{name}__opp_made": b.make_rate})
            results[name] = result
            if start_policy is not None:
                key = (deals, seed, name)
                if key not in self._start_results:
                    self._start_results[key] = match(start_policy, name, False)
                gain, _ = paired_difference(result, self._start_results[key])
                row.update({f"eval__{name}__gain": gain.mean, f"eval__{name}__gain_low": gain.low,
                            f"eval__{name}__gain_high": gain.high})
                gains[name] = gain
        self.last_results, self.last_gains = results, gains
        return row


def eval_columns(opponents: list[str]) -> list[str]:
    """The metrics columns of the evaluations against ``opponents``."""
    return [f"eval__{name}__{s}" for name in opponents
            for s in ("diff", "low", "high", "made", "opp_made", "gain", "gain_low", "gain_high")]


def eval_line(row: dict, opponents: list[str]) -> str:
    """One evaluation as a line of the log."""
    parts = [f"update {row['update']}, {row['decisions']:,} decisions:"]
    for name in opponents:
        d, lo, hi = (row.get(f"eval__{name}__{s}") for s in ("diff", "low", "high"))
        parts.append(f"vs {name} {d:+.1f} [{lo:+.1f}, {hi:+.1f}]" if lo is not None else f"vs {name} {d:+.1f}")
        g, glo, ghi = (row.get(f"eval__{name}__{s}") for s in ("gain", "gain_low", "gain_high"))
        if g is not None:
            parts.append(f"(over the start {g:+.1f}" + (f" [{glo:+.1f}, {ghi:+.1f}])" if glo is not None else ")"))
    return " ".join(parts) + " points/hand (duplicate, 95% CI)"


def format_table(results: dict, cfg: Any, gains: Optional[dict] = None) -> str:
    """The final evaluation as a table; ``gains`` (opponent -> Interval) adds the gain over the
    policy PPO started from, paired on the same deals."""
    gains = gains or {}
    head = f"{'opponent':<12} {'points/hand':>12} {'95% CI':>18} {'contracts made':>15} {'opp. made':>10}"
    lines = [head + (f" {'gain over the start (95% CI)':>30}" if gains else "")]
    for name, r in results.items():
        d = r.score_diff
        ci = f"[{d.low:+.1f}, {d.high:+.1f}]" if d.low is not None else "-"
        made = lambda t: f"{100 * t.make_rate:.1f}%" if t.make_rate is not None else "-"   # noqa: E731
        line = f"{name:<12} {d.mean:>+12.1f} {ci:>18} {made(r.teams['A']):>15} {made(r.teams['B']):>10}"
        if name in gains:
            g = gains[name]
            line += f" {f'{g.mean:+.1f}' + (f' [{g.low:+.1f}, {g.high:+.1f}]' if g.low is not None else ''):>30}"
        lines.append(line)
    return (f"{cfg.name}: the trained policy (greedy) against the baselines, {next(iter(results.values())).units} "
            "duplicate deals each\n" + "\n".join(lines))
