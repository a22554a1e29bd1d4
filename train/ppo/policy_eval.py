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
        self.last_game_results: dict[str, Any] = {}     # opponent -> MatchResult of the last games evaluation

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
            row.update({f"eval__{name}__{k}": v for k, v in nil_statistics(result).items()})
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

    def evaluate_games(self, policy: torch.nn.Module, games: int, seed: int, progress: bool = False) -> dict:
        """The metrics row of duplicate whole games (``games`` game seeds, two games each, to the
        target score) of ``policy`` against each opponent: games won with the interval, points
        and bags a hand. Single hands from 0-0 price neither bags nor blind nil; games do."""
        from evaluation import evaluate

        player = copy.deepcopy(policy).to("cpu").eval()

        def neural() -> NeuralAgent:
            return NeuralAgent(policy=player)
        row, results = {}, {}
        for name in self.config.eval_opponents:
            result = evaluate(neural, name, games=games, duplicate=True, rules=self.config.rules, seed=seed,
                              workers=1, progress=progress)
            w, a = result.win_rate, result.teams["A"]
            row.update({f"eval__{name}__games_won": w.mean, f"eval__{name}__games_won_low": w.low,
                        f"eval__{name}__games_won_high": w.high,
                        f"eval__{name}__games_diff": result.score_diff.mean,
                        f"eval__{name}__games_bags": a.bags_per_hand})
            results[name] = result
        self.last_game_results = results
        return row


# Two bidders a team in every match of evaluation.matches (MatchConfig.team_seats).
BIDDERS_PER_TEAM = 2
NIL_COLUMNS = ("nil_share", "nil_kept", "opp_nil_kept")


def nil_statistics(result: Any) -> dict:
    """The nil game of a match's team A (the policy) from its tallies (:class:`evaluation.results.TeamStats`,
    blind nils included): ``nil_share`` of its bids nil, ``nil_kept`` of those kept, and
    ``opp_nil_kept`` of team B's nils kept against it (None where no nil was bid). A policy that
    loses points may bid nils it cannot keep, or never bid one, or let the other side's through."""
    a, b = result.teams["A"], result.teams["B"]

    def kept(team) -> Optional[float]:
        bids = team.nil_bids + team.blind_nil_bids
        return (team.nil_kept + team.blind_nil_kept) / bids if bids else None
    return {"nil_share": (a.nil_bids + a.blind_nil_bids) / (BIDDERS_PER_TEAM * a.hands) if a.hands else None,
            "nil_kept": kept(a), "opp_nil_kept": kept(b)}


GAME_COLUMNS = ("games_won", "games_won_low", "games_won_high", "games_diff", "games_bags")


def eval_columns(opponents: list[str], games: bool = False) -> list[str]:
    """The metrics columns of the evaluations against ``opponents`` (``games``: with the whole
    games' columns, :data:`GAME_COLUMNS`)."""
    kinds = ("diff", "low", "high", "made", "opp_made", *NIL_COLUMNS, "gain", "gain_low", "gain_high") + (
        GAME_COLUMNS if games else ())
    return [f"eval__{name}__{s}" for name in opponents for s in kinds]


def eval_line(row: dict, opponents: list[str]) -> str:
    """One evaluation as a line of the log."""
    parts = [f"update {row['update']}, {row['decisions']:,} decisions:"]
    for name in opponents:
        d, lo, hi = (row.get(f"eval__{name}__{s}") for s in ("diff", "low", "high"))
        parts.append(f"vs {name} {d:+.1f} [{lo:+.1f}, {hi:+.1f}]" if lo is not None else f"vs {name} {d:+.1f}")
        g, glo, ghi = (row.get(f"eval__{name}__{s}") for s in ("gain", "gain_low", "gain_high"))
        if g is not None:
            parts.append(f"(over the start {g:+.1f}" + (f" [{glo:+.1f}, {ghi:+.1f}])" if glo is not None else ")"))
        share, kept = row.get(f"eval__{name}__nil_share"), row.get(f"eval__{name}__nil_kept")
        if share is not None:
            parts.append(f"(nil on {100 * share:.0f}% of its bids" + (f", {100 * kept:.0f}% kept)" if kept is not None
                                                                     else ")"))
    line = " ".join(parts) + " points/hand (single hands from 0-0, duplicate, 95% CI)"
    games = [f"vs {name} {100 * row[f'eval__{name}__games_won']:.0f}%" for name in opponents
             if row.get(f"eval__{name}__games_won") is not None]
    return line + ("; whole games won: " + ", ".join(games) if games else "")


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
            "duplicate deals each (single hands from 0-0)\n" + "\n".join(lines))


def format_games_table(results: dict, cfg: Any) -> str:
    """The final evaluation in whole games: per opponent the policy's win rate (95% Wilson
    interval over duplicate pairs), points and bags a hand, and the opponent's bags a hand."""
    head = (f"{'opponent':<12} {'games won':>10} {'95% CI':>16} {'points/hand':>12} {'bags/hand':>10} "
            f"{'opp. bags/hand':>15} {'blind nils kept/bid':>20}")
    lines = [head]
    for name, r in results.items():
        w, a, b = r.win_rate, r.teams["A"], r.teams["B"]
        ci = f"[{100 * w.low:.1f}, {100 * w.high:.1f}]" if w.low is not None else "-"
        lines.append(f"{name:<12} {100 * w.mean:>9.1f}% {ci:>16} {r.score_diff.mean:>+12.1f} {a.bags_per_hand:>10.2f} "
                     f"{b.bags_per_hand:>15.2f} {f'{a.blind_nil_kept}/{a.blind_nil_bids}':>20}")
    first = next(iter(results.values()))
    return (f"{cfg.name}: the trained policy (greedy) in whole games to {first.rules_settings.get('target_score')}, "
            f"{first.units} duplicate game seeds ({2 * first.units} games) against each\n" + "\n".join(lines))
