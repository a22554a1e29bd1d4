"""Matches as results: :func:`evaluate`, :func:`compare` and :func:`crossplay` play through
:mod:`evaluation.matches` and sum the plays into per-team statistics and intervals paired by deal
(:mod:`evaluation.statistics`); the result objects print themselves (:mod:`evaluation.report`)
and ``to_dict()`` is what ``spades-eval --json`` writes.

    from evaluation import evaluate, compare, crossplay
    result = evaluate("heuristic", "random", deals=500, duplicate=True, seed=0)
    print(result.format()); result.to_dict()
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from .matches import (MatchConfig, Player, Team, TeamSpec, check_agents_build, check_workers, default_reference,
                      derive_seed, match_config, play_matches)
from .outcomes import HAND_KINDS, TEAMS, EvaluationError, PlayOutcome, TeamTally, points_by_kind
from .report import format_comparison, format_crossplay, format_match, plot_crossplay
from .statistics import Interval, contrast_interval, mean_interval, ratio_interval, wilson_interval

# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------

def _ratio(a: float, b: float) -> Optional[float]:
    return a / b if b else None


@dataclass
class TeamStats:
    """One team's play over the whole match (every hand it played, both plays of a duplicate)."""

    name: str
    hands: int
    points: int
    points_per_hand: float
    contracts: int
    contracts_made: int
    contracts_set: int
    make_rate: Optional[float]
    bid_error_mean: Optional[float]       # tricks toward the contract minus the contract
    bid_error_abs_mean: Optional[float]
    nil_bids: int
    nil_kept: int
    nil_rate: Optional[float]
    blind_nil_bids: int
    blind_nil_kept: int
    blind_nil_rate: Optional[float]
    bags: int
    bags_per_hand: float
    games: int
    wins: int
    losses: int
    ties: int
    decisions: int
    seconds_per_decision: Optional[float]
    # Where the points come from (POINT_KINDS; they add up to ``points``), in all and per hand.
    points_by_kind: dict = field(default_factory=dict)
    points_by_kind_per_hand: dict = field(default_factory=dict)
    bag_penalties: int = 0           # times the bags reached the limit
    wins_by_bag_out: int = 0         # games won that the loser's bag penalty in the last hand decided
    wins_by_blind_nil: int = 0       # games won that a blind nil in the last hand decided
    wins_from_behind: int = 0        # games won that the team trailed going into the last hand

    @classmethod
    def from_tally(cls, name: str, t: TeamTally) -> "TeamStats":
        return cls(name=name, hands=t.hands, points=t.points, points_per_hand=t.points / t.hands,
                   contracts=t.contracts, contracts_made=t.made, contracts_set=t.set,
                   make_rate=_ratio(t.made, t.contracts), bid_error_mean=_ratio(t.bid_error_sum, t.contracts),
                   bid_error_abs_mean=_ratio(t.bid_error_abs_sum, t.contracts),
                   nil_bids=t.nil_bids, nil_kept=t.nil_kept, nil_rate=_ratio(t.nil_kept, t.nil_bids),
                   blind_nil_bids=t.blind_nil_bids, blind_nil_kept=t.blind_nil_kept,
                   blind_nil_rate=_ratio(t.blind_nil_kept, t.blind_nil_bids), bags=t.bags,
                   bags_per_hand=t.bags / t.hands, games=t.games, wins=t.wins, losses=t.losses, ties=t.ties,
                   decisions=t.decisions, seconds_per_decision=_ratio(t.seconds, t.decisions),
                   points_by_kind=points_by_kind(t),
                   points_by_kind_per_hand={k: v / t.hands for k, v in points_by_kind(t).items()},
                   bag_penalties=t.bag_penalties, wins_by_bag_out=t.wins_by_bag_out,
                   wins_by_blind_nil=t.wins_by_blind_nil, wins_from_behind=t.wins_from_behind)


TIMING_FIELDS = ("elapsed_s", "hands_per_s", "seconds_per_decision", "workers")


def strip_timing(value: Any) -> Any:
    """A result's dict without what depends on the machine (:data:`TIMING_FIELDS`)."""
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


@dataclass
class MatchResult:
    """The outcome of :func:`evaluate`. ``to_dict()`` is what ``--json`` writes."""

    team_a: str
    team_b: str
    rules: str
    mode: str
    duplicate: bool
    seed: int
    units: int                       # deals (hands mode) or game seeds (games mode)
    hands: int                       # hands played in all
    confidence: float
    score_diff: Interval             # points per hand, A minus B
    teams: dict[str, TeamStats]
    unit_diffs: list[float]          # per unit: A minus B points per hand (plays pooled)
    unit_points: list[int] = field(default_factory=list)   # per unit: A minus B points (plays summed)
    unit_hands: list[int] = field(default_factory=list)    # per unit: hands played (plays summed)
    unit_wins: list[float] = field(default_factory=list)   # games mode, per unit: A's share of the games won
    game_diff: Optional[Interval] = None   # games mode: points won per game, A minus B
    win_rate: Optional[Interval] = None    # games mode: A's win rate (ties count 1/2)
    hands_per_game: Optional[float] = None
    start_scores: Optional[tuple[int, int]] = None
    rules_settings: dict = field(default_factory=dict)
    elapsed_s: Optional[float] = None
    workers: Optional[int] = None
    records: Optional[list[dict]] = None   # with keep_records: one record per play, in order
    hand_kinds: dict[str, dict] = field(default_factory=dict)   # where the points come from (HAND_KINDS)
    start: str = "zero"              # hands mode: where every hand started (spades_env.starts)
    # Games mode: the games over which ``wins_from_behind`` was counted; fewer than the games
    # played where some were read back from a version-3 journal, which did not count them.
    wins_from_behind_games: Optional[int] = None

    @property
    def wins_from_behind_note(self) -> Optional[str]:
        """What the report and the JSON say when wins from behind cover only part of the games."""
        games = self.teams["A"].games
        if self.wins_from_behind_games is None or self.wins_from_behind_games == games:
            return None
        return (f"won from behind counts {self.wins_from_behind_games} of the {games} games: the other "
                f"{games - self.wins_from_behind_games} were read from a version-3 journal, which did not count it")

    @property
    def decided_by(self) -> Optional[dict]:
        """Games mode: how many games a last hand decided, by a bag-out or by a blind nil
        (:func:`evaluation.outcomes.decided_by`), of how many games played."""
        if self.mode != "games":
            return None
        a, b = self.teams["A"], self.teams["B"]
        return {"games": a.games, "bag_out": a.wins_by_bag_out + b.wins_by_bag_out,
                "blind_nil": a.wins_by_blind_nil + b.wins_by_blind_nil}

    @property
    def hands_per_s(self) -> Optional[float]:
        return self.hands / self.elapsed_s if self.elapsed_s else None

    def to_dict(self, timing: bool = True, unit_diffs: bool = True) -> dict:
        """A JSON-ready dict; ``timing=False`` drops everything that depends on the machine."""
        out = {
            "team_a": self.team_a, "team_b": self.team_b, "seats": {"A": [0, 2], "B": [1, 3]},
            "rules": self.rules, "mode": self.mode, "duplicate": self.duplicate, "seed": self.seed,
            "units": self.units, "unit": "deal" if self.mode == "hands" else "game",
            "hands": self.hands, "confidence": self.confidence,
            "start_scores": list(self.start_scores) if self.start_scores else None,
            "start": self.start,
            "score_diff_per_hand": self.score_diff.to_dict(),
            "game_diff": self.game_diff.to_dict() if self.game_diff else None,
            "win_rate_a": self.win_rate.to_dict() if self.win_rate else None,
            "hands_per_game": self.hands_per_game,
            "teams": {k: asdict(v) for k, v in self.teams.items()},
            "elapsed_s": self.elapsed_s, "hands_per_s": self.hands_per_s, "workers": self.workers,
            "rules_settings": self.rules_settings,
            "hand_kinds": self.hand_kinds,
            "points_by_kind": {team: t.points_by_kind for team, t in self.teams.items()},
            "decided_by": self.decided_by,
        }
        if self.mode == "games":
            out["wins_from_behind_games"] = self.wins_from_behind_games
            if self.wins_from_behind_note:
                out["notes"] = [self.wins_from_behind_note]
        if unit_diffs:
            out["unit_diffs"] = list(self.unit_diffs)
        return out if timing else strip_timing(out)

    def format(self) -> str:
        return format_match(self)


def summarize(config: MatchConfig, outcomes: list[list[PlayOutcome]], confidence: float = 0.95,
              elapsed: Optional[float] = None, workers: Optional[int] = None) -> MatchResult:
    """Aggregate the plays of a match, in deal order."""
    tallies = {team: TeamTally() for team in TEAMS}
    diffs, hands = [], []
    game_values, win_values = [], []
    records = [] if config.keep_records else None
    kinds = {kind: [0, 0] for kind in HAND_KINDS}
    behind_games = 0                 # games whose wins from behind were counted
    for unit_outcomes in outcomes:
        behind_games += sum(o.tallies["A"].games for o in unit_outcomes if o.counts_wins_from_behind)
        d = sum(o.diff for o in unit_outcomes)
        h = sum(o.hands for o in unit_outcomes)
        diffs.append(d)
        hands.append(h)
        k = len(unit_outcomes)
        game_values.append(d / k)
        w = sum(1.0 if o.winner == "A" else 0.5 if o.winner is None else 0.0 for o in unit_outcomes)
        win_values.append(w / k)
        for o in unit_outcomes:
            for team in TEAMS:
                tallies[team].add(o.tallies[team])
            if records is not None:
                records.append(o.record)
            for kind, (n, points) in o.kinds.items():
                kinds[kind][0] += n
                kinds[kind][1] += points
    if config.mode == "hands":
        score_diff = mean_interval([d / h for d, h in zip(diffs, hands)], confidence)
        game_diff = win_rate = hands_per_game = None
    else:
        score_diff = ratio_interval(diffs, hands, confidence)
        game_diff = mean_interval(game_values, confidence)
        # Wilson over the units (games, or duplicate pairs: their two games share the cards).
        win_rate = wilson_interval(math.fsum(win_values), config.units, confidence)
        if config.duplicate:
            win_rate.method = "Wilson over duplicate pairs"
        hands_per_game = sum(hands) / sum(len(u) for u in outcomes)
    names = {"A": config.team_a.label, "B": config.team_b.label}
    total_hands = sum(hands)
    hand_kinds = {kind: {"hands": n, "share": n / total_hands, "mean_diff": points / n if n else None,
                         "points_per_hand": points / total_hands}
                  for kind, (n, points) in kinds.items()}
    return MatchResult(
        team_a=names["A"], team_b=names["B"], rules=config.rules.name, mode=config.mode,
        duplicate=config.duplicate, seed=config.seed, units=config.units, hands=sum(hands),
        confidence=confidence, score_diff=score_diff,
        teams={team: TeamStats.from_tally(names[team], tallies[team]) for team in TEAMS},
        unit_diffs=[d / h for d, h in zip(diffs, hands)], unit_points=diffs, unit_hands=hands,
        unit_wins=win_values if config.mode == "games" else [], game_diff=game_diff, win_rate=win_rate,
        hands_per_game=hands_per_game, start_scores=config.start_scores,
        rules_settings=config.rules.to_dict(), elapsed_s=elapsed, workers=workers, records=records,
        hand_kinds=hand_kinds, start=config.start,
        wins_from_behind_games=behind_games if config.mode == "games" else None)


def _check_confidence(confidence: Any) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise EvaluationError(f"confidence={confidence!r}: expected a number between 0 and 1")


# ---------------------------------------------------------------------------------------------
# The Python API
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# The Python API
# ---------------------------------------------------------------------------------------------

def evaluate(team_a: TeamSpec, team_b: TeamSpec, deals: Optional[int] = None, *,
             games: Optional[int] = None, mode: Optional[str] = None, duplicate: bool = False,
             rules: Any = "standard", seed: int = 0, workers: Optional[int] = None,
             progress: bool = False, start_scores: Optional[Sequence[int]] = None,
             confidence: float = 0.95, keep_records: bool = False, ray: Optional[str] = None,
             journal: Optional[str] = None, start: str = "zero") -> MatchResult:
    """Play team A (seats 0+2) against team B (seats 1+3) and summarize.

    Args:
        team_a, team_b: an agent spec (``"heuristic"``, ``"search:worlds=20,seed=3"``), a factory
            returning a new agent, or a pair of them (seat 0/1 partner, seat 2/3 partner).
        deals: number of deals (hands mode; default 100). With ``duplicate`` each is played twice.
        games: number of games (or game seeds, with ``duplicate``); sets ``mode="games"``.
        mode: ``"hands"`` (single hands) or ``"games"`` (to the target score).
        duplicate: replay every deal / game seed with the teams' seats swapped.
        rules: a preset name, a YAML path, a mapping or a ``Rules``.
        seed: the match seed; deals and agent seeds derive from it.
        workers: processes (default: the CPUs available); the result does not depend on it.
        progress: a tqdm bar on stderr.
        start_scores: (team A, team B) scores at the start of every hand / game (e.g. to let
            blind nil be offered in hands mode).
        confidence: level of every interval.
        keep_records: keep every play's game record in ``result.records``.
        ray: play on a Ray cluster at this address (``"local"``: start one here, ``workers`` CPUs);
            the same result (:mod:`evaluation.ray_cluster`).
        journal: keep every finished deal (game) in this file; called again with it, a killed
            match resumes where it stopped, to the same result (:mod:`evaluation.journal`).
        start: hands mode, where every hand starts (:mod:`spades_env.starts`): ``"zero"`` (0-0),
            or ``"real"``: scores, bags and dealer drawn per deal from the states whole games
            reach, bound to the seats like the cards (both plays of a duplicate meet the same
            table, each team once on either side).
    """
    config = match_config(team_a, team_b, deals, games, mode, duplicate, rules, seed, start_scores, keep_records,
                          start)
    _check_confidence(confidence)
    workers = check_workers(workers)
    check_agents_build([config])
    start = time.perf_counter()
    outcomes = play_matches([config], workers, progress, desc=f"{config.team_a.label} vs {config.team_b.label}",
                            ray=ray, journal=journal, check_agents=False)[0]
    elapsed = time.perf_counter() - start
    return summarize(config, outcomes, confidence, elapsed, min(workers, config.units))


@dataclass
class CrossplayResult:
    """Every pairing of partners (row: seat 0, column: seat 2) against one reference team."""

    agents: list[str]
    reference: str
    cells: list[list[MatchResult]]     # cells[i][j]: agents[i] on seat 0, agents[j] on seat 2
    self_play: Optional[float]         # mean of the diagonal (points per hand vs the reference)
    cross_play: Optional[float]        # mean off the diagonal
    gap: Optional[Interval]            # self-play minus cross-play, paired by deal (game)
    elapsed_s: Optional[float] = None
    workers: Optional[int] = None
    cooperative_rating: Optional[dict] = None   # who helps whom (evaluation.cooperative_rating); 3+ agents

    def matrix(self, metric: str = "score_diff") -> list[list[Optional[float]]]:
        """``score_diff`` (points per hand vs the reference) or ``win_rate`` (games mode)."""
        def value(r: MatchResult) -> Optional[float]:
            interval = r.score_diff if metric == "score_diff" else r.win_rate
            return None if interval is None else interval.mean
        if metric not in ("score_diff", "win_rate"):
            raise ValueError(f"metric={metric!r}: expected 'score_diff' or 'win_rate'")
        return [[value(r) for r in row] for row in self.cells]

    def to_dict(self, timing: bool = True) -> dict:
        first = self.cells[0][0]
        out = {
            "agents": self.agents, "reference": self.reference, "rows": "seat 0 partner",
            "columns": "seat 2 partner", "rules": first.rules, "mode": first.mode,
            "duplicate": first.duplicate, "seed": first.seed, "units": first.units, "start": first.start,
            "confidence": first.confidence,
            "score_diff": self.matrix("score_diff"),
            "score_diff_low": [[r.score_diff.low for r in row] for row in self.cells],
            "score_diff_high": [[r.score_diff.high for r in row] for row in self.cells],
            "win_rate": self.matrix("win_rate") if first.mode == "games" else None,
            "self_play": self.self_play, "cross_play": self.cross_play,
            "gap": self.gap.to_dict() if self.gap else None,
            "cooperative_rating": self.cooperative_rating,
            "cells": [[r.to_dict(timing=timing, unit_diffs=False) for r in row] for row in self.cells],
            "elapsed_s": self.elapsed_s, "workers": self.workers,
        }
        return out if timing else strip_timing(out)

    def format(self) -> str:
        return format_crossplay(self)

    def plot(self, path: Union[str, os.PathLike]) -> Path:
        return plot_crossplay(self, path)


def crossplay(agents: Sequence[Any], reference: Any = None, deals: Optional[int] = None, *,
              games: Optional[int] = None, mode: Optional[str] = None, duplicate: bool = False,
              rules: Any = "standard", seed: int = 0, workers: Optional[int] = None,
              progress: bool = False, start_scores: Optional[Sequence[int]] = None,
              confidence: float = 0.95, ray: Optional[str] = None,
              journal: Optional[str] = None, start: str = "zero") -> CrossplayResult:
    """Pair every agent with every agent (seat 0 x seat 2) against a fixed reference team.

    Every cell plays the same deals (the same seed), so cells are compared on equal cards and
    the self-play minus cross-play gap is paired by deal. ``reference`` defaults to
    :func:`default_reference`. Other arguments as for :func:`evaluate`.
    """
    if isinstance(agents, str) or not agents:
        raise EvaluationError("crossplay needs a list of agent specs (at least one)")
    players = [Player.of(a) for a in agents]
    reference = default_reference() if reference is None else reference
    ref_team = Team.of(reference)
    _check_confidence(confidence)
    configs = [match_config(Team(x, y), ref_team, deals, games, mode, duplicate, rules, seed, start_scores, False,
                            start)
               for x in players for y in players]
    workers = check_workers(workers)
    check_agents_build(configs)
    start = time.perf_counter()
    outcomes = play_matches(configs, workers, progress, desc="crossplay", ray=ray, journal=journal, check_agents=False)
    elapsed = time.perf_counter() - start
    n = len(players)
    results = [summarize(c, o, confidence, None, None) for c, o in zip(configs, outcomes)]
    cells = [results[i * n:(i + 1) * n] for i in range(n)]
    diag = [cells[i][i] for i in range(n)]
    off = [cells[i][j] for i in range(n) for j in range(n) if i != j]
    self_play = sum(r.score_diff.mean for r in diag) / n
    cross_play = sum(r.score_diff.mean for r in off) / len(off) if off else None
    gap = None
    if off:
        terms = [(1 / len(diag), r.unit_points, r.unit_hands) for r in diag]
        terms += [(-1 / len(off), r.unit_points, r.unit_hands) for r in off]
        unit = "deal" if configs[0].mode == "hands" else "game"
        gap = contrast_interval(terms, confidence, method=f"paired by {unit}, delta method")
    from .cooperative_rating import cooperative_rating
    rating = cooperative_rating([[r.unit_points for r in row] for row in cells],
                                [[r.unit_hands for r in row] for row in cells], [p.label for p in players],
                                seed=derive_seed("crossplay", "cooperative-rating", seed))
    return CrossplayResult([p.label for p in players], ref_team.label, cells, self_play, cross_play, gap,
                           elapsed, min(workers, sum(c.units for c in configs)), rating)


@dataclass
class ComparisonResult:
    """Two teams, a candidate and a baseline, each against the same opponent on the same deals
    (:func:`compare`); ``difference`` is paired by deal (game)."""

    candidate: MatchResult             # team A = the candidate, team B = the opponent
    baseline: MatchResult              # team A = the baseline, team B = the opponent
    difference: Interval               # points per hand against the opponent, candidate minus baseline
    win_rate_difference: Optional[Interval] = None   # games mode: win rates, candidate minus baseline
    elapsed_s: Optional[float] = None
    workers: Optional[int] = None

    def hand_kinds_difference(self) -> dict[str, float]:
        """Per hand kind, the candidate's part of the points per hand minus the baseline's (the
        parts add up to ``difference.mean``)."""
        return {kind: self.candidate.hand_kinds[kind]["points_per_hand"] - self.baseline.hand_kinds[kind]["points_per_hand"]
                for kind in HAND_KINDS}

    def to_dict(self, timing: bool = True) -> dict:
        out = {
            "candidate": self.candidate.to_dict(timing=timing), "baseline": self.baseline.to_dict(timing=timing),
            "opponent": self.candidate.team_b, "unit": "deal" if self.candidate.mode == "hands" else "game",
            "difference": self.difference.to_dict(),
            "win_rate_difference": self.win_rate_difference.to_dict() if self.win_rate_difference else None,
            "hand_kinds_difference": self.hand_kinds_difference(),
            "elapsed_s": self.elapsed_s, "workers": self.workers,
        }
        return out if timing else strip_timing(out)

    def format(self) -> str:
        return format_comparison(self)


def compare(candidate: TeamSpec, baseline: TeamSpec, opponent: TeamSpec, deals: Optional[int] = None, *,
            games: Optional[int] = None, mode: Optional[str] = None, duplicate: bool = False,
            rules: Any = "standard", seed: int = 0, workers: Optional[int] = None,
            progress: bool = False, start_scores: Optional[Sequence[int]] = None,
            confidence: float = 0.95, ray: Optional[str] = None,
            journal: Optional[str] = None, start: str = "zero") -> ComparisonResult:
    """Is ``candidate`` better than ``baseline`` against ``opponent``? Both play the opponent over
    the same deals (the same seed: the same cards, dealers and opponent seeds), and the difference
    of their points per hand gets an interval paired by deal (game): far narrower than comparing
    two independent matches. Arguments as for :func:`evaluate`.
    """
    _check_confidence(confidence)
    configs = [match_config(team, opponent, deals, games, mode, duplicate, rules, seed, start_scores, False, start)
               for team in (candidate, baseline)]
    workers = check_workers(workers)
    check_agents_build(configs)
    start = time.perf_counter()
    outcomes = play_matches(configs, workers, progress, desc="compare", ray=ray, journal=journal, check_agents=False)
    elapsed = time.perf_counter() - start
    cand, base = (summarize(c, o, confidence, None, None) for c, o in zip(configs, outcomes))
    difference, win_difference = paired_difference(cand, base, confidence)
    return ComparisonResult(cand, base, difference, win_difference, elapsed,
                            min(workers, sum(c.units for c in configs)))


def paired_difference(candidate: MatchResult, baseline: MatchResult,
                      confidence: float = 0.95) -> tuple[Interval, Optional[Interval]]:
    """Two matches played over the same deals (the same seed and opponent): the candidate's points
    per hand minus the baseline's, paired by deal (game), and in games mode the paired difference
    of the win rates (else None)."""
    if candidate.mode == "hands":   # points per hand = the mean over the deals of each deal's points per hand
        difference = mean_interval([c - b for c, b in zip(candidate.unit_diffs, baseline.unit_diffs)], confidence)
        difference.method = "paired by deal"
        return difference, None
    # Games: total points / total hands; the two teams' games may differ in length.
    difference = contrast_interval([(1.0, candidate.unit_points, candidate.unit_hands),
                                    (-1.0, baseline.unit_points, baseline.unit_hands)], confidence)
    difference.method = "paired by game, delta method"
    wins = mean_interval([c - b for c, b in zip(candidate.unit_wins, baseline.unit_wins)], confidence)
    wins.method = "paired by game"
    return difference, wins


