"""What one play of a deal yields: each team's tally (points, contracts, nils, bags, decisions
and their time), the kind of each hand, and the error every evaluation module raises.

The worker processes of :mod:`evaluation.matches` fill these in, :mod:`evaluation.journal`
writes and reads them back, and :mod:`evaluation.results` sums them over a match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from spades_env.rules import Rules

TEAMS = ("A", "B")


class EvaluationError(ValueError):
    """Bad input to an evaluation: an unknown agent, a malformed spec, a bad count or bad rules."""


# ---------------------------------------------------------------------------------------------
# One play's tallies
# ---------------------------------------------------------------------------------------------

@dataclass
class TeamTally:
    """Raw counts for one team; summed over plays in deal order."""

    hands: int = 0
    points: int = 0
    contracts: int = 0
    made: int = 0
    set: int = 0
    bid_error_sum: int = 0
    bid_error_abs_sum: int = 0
    nil_bids: int = 0
    nil_kept: int = 0
    blind_nil_bids: int = 0
    blind_nil_kept: int = 0
    bags: int = 0
    games: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    decisions: int = 0
    seconds: float = 0.0

    def add(self, other: "TeamTally") -> None:
        mine, theirs = self.__dict__, other.__dict__
        for name in self.__dataclass_fields__:
            mine[name] += theirs[name]


@dataclass
class PlayOutcome:
    """One play of a deal (a hand) or of a game seed (a game) as the worker reports it."""

    unit: int
    play: int                       # 0, or 1 for the swapped play of a duplicate
    hands: int
    tallies: dict[str, TeamTally]   # "A", "B"
    winner: Optional[str] = None    # games mode: "A", "B" or None (tie)
    record: Optional[dict] = None
    kinds: dict[str, list[int]] = field(default_factory=dict)   # hand kind -> [hands, A minus B points]

    @property
    def diff(self) -> int:
        return self.tallies["A"].points - self.tallies["B"].points


def team_points(hand: dict, rules: Rules, seats: tuple[int, int]) -> int:
    """The points a team's seats scored in a hand (their sides' score changes)."""
    return sum(hand["score_change"][d] for d in sorted({rules.side_of(s) for s in seats}))


def tally_hand(hand: dict, rules: Rules, team_seats: dict[str, tuple[int, int]],
               tallies: dict[str, TeamTally]) -> None:
    """Add one scored hand of a game record to the teams' tallies: contracts, made or set, and
    nils kept as the engine scored them (the hand's ``results``)."""
    blind = hand["blind"]
    nils = {nil["seat"]: nil["kept"] for result in hand["results"] for nil in result["nils"]}
    for team, seats in team_seats.items():
        t = tallies[team]
        sides = sorted({rules.side_of(s) for s in seats})
        t.hands += 1
        t.points += team_points(hand, rules, seats)
        t.bags += sum(hand["bags_taken"][d] for d in sides)
        for d in sides:
            result = hand["results"][d]
            contract, counted = result["contract"], result["tricks"]
            if contract == 0:
                continue
            t.contracts += 1
            if result["made"]:
                t.made += 1
            else:
                t.set += 1
            t.bid_error_sum += counted - contract
            t.bid_error_abs_sum += abs(counted - contract)
        for s in seats:
            if s in nils:
                if blind[s]:
                    t.blind_nil_bids += 1
                    t.blind_nil_kept += int(nils[s])
                else:
                    t.nil_bids += 1
                    t.nil_kept += int(nils[s])


HAND_KINDS = ("no nil: both made", "no nil: A set", "no nil: B set", "no nil: both set",
              "A nil kept", "A nil broken", "B nil kept", "B nil broken", "nil by both teams")


def hand_kind(hand: dict, rules: Rules, team_seats: dict[str, tuple[int, int]]) -> str:
    """Which of :data:`HAND_KINDS` a scored hand is, seen from team A: whether a team bid nil
    (or blind nil; "broken": any of its nil bidders took a trick), else which contracts were set
    (as the engine scored them: the hand's ``results``)."""
    nils = {nil["seat"]: nil["kept"] for result in hand["results"] for nil in result["nils"]}
    nil_kept = {team: [nils[s] for s in seats if s in nils] for team, seats in team_seats.items()}
    if nil_kept["A"] and nil_kept["B"]:
        return "nil by both teams"
    for team in TEAMS:
        if nil_kept[team]:
            return f"{team} nil {'kept' if all(nil_kept[team]) else 'broken'}"
    set_ = {team: any(not hand["results"][d]["made"] for d in {rules.side_of(s) for s in seats})
            for team, seats in team_seats.items()}
    if set_["A"] and set_["B"]:
        return "no nil: both set"
    return "no nil: A set" if set_["A"] else "no nil: B set" if set_["B"] else "no nil: both made"


