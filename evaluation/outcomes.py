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
    # Where the points come from (they sum to ``points``): see :func:`tally_hand`.
    contract_points: int = 0        # made contracts' 10 a trick, set contracts' -10 a trick
    overtrick_points: int = 0       # +1 a bag
    nil_points: int = 0             # nil bids (not blind): +-nil_bonus
    blind_nil_points: int = 0       # blind nil bids: +-blind_nil_bonus
    bag_penalty_points: int = 0     # -bag_penalty each time the bags reach the limit
    bag_penalties: int = 0          # how many times
    # Games won that a last hand decided (:func:`decided_by`): by the loser's bag-out, by a blind nil.
    wins_by_bag_out: int = 0
    wins_by_blind_nil: int = 0
    # Games won from behind: the winner trailed going into the last hand (:func:`won_from_behind`).
    wins_from_behind: int = 0

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
    # False for a game read back from a version-3 journal, written before wins from behind were
    # counted: its tallies' ``wins_from_behind`` is 0 for want of a count (not written to journals).
    counts_wins_from_behind: bool = True

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
        for d in sides:
            result = hand["results"][d]
            t.contract_points += result["contract_points"]
            t.overtrick_points += result["overtrick_points"]
            blind_points = sum((1 if nil["kept"] else -1) * rules.blind_nil_bonus
                               for nil in result["nils"] if blind[nil["seat"]])
            t.blind_nil_points += blind_points
            t.nil_points += result["nil_points"] - blind_points
            t.bag_penalties += result["bag_penalties"]
            t.bag_penalty_points -= result["bag_penalties"] * rules.bag_penalty


POINT_KINDS = ("contracts", "overtricks", "nils", "blind_nils", "bag_penalties")
"""The kinds of points of "where the points come from" (TeamTally fields ``<kind>_points``)."""
_KIND_FIELDS = dict(zip(POINT_KINDS, ("contract_points", "overtrick_points", "nil_points", "blind_nil_points",
                                      "bag_penalty_points")))


def points_by_kind(t: "TeamTally") -> dict[str, int]:
    """A tally's points split by :data:`POINT_KINDS` (they add up to ``t.points``)."""
    return {kind: getattr(t, name) for kind, name in _KIND_FIELDS.items()}


def decided_by(hands: list[dict], rules: Rules, team_seats: dict[str, tuple[int, int]],
               winner: Optional[str]) -> dict[str, bool]:
    """Whether a won game's last hand decided it, and how (``{"bag_out": ..., "blind_nil": ...}``).

    With the final margin M (the winner's final score minus the loser's, points of the sides):
    - ``bag_out``: the loser paid a bag penalty in the last hand, and its points were at least M
      (without it the loser would have ended level or ahead);
    - ``blind_nil``: in the last hand the winner kept a blind nil or the loser broke one, and
      its bonus (200 in the standard rules) was at least M.
    A game without a winner (a tie, or truncated) is decided by neither."""
    out = {"bag_out": False, "blind_nil": False}
    if winner is None or not hands:
        return out
    loser = "B" if winner == "A" else "A"
    last = hands[-1]
    side = {team: sorted({rules.side_of(s) for s in seats}) for team, seats in team_seats.items()}
    margin = sum(last["scores"][d] for d in side[winner]) - sum(last["scores"][d] for d in side[loser])
    penalty = sum(last["results"][d]["bag_penalties"] for d in side[loser]) * rules.bag_penalty
    out["bag_out"] = penalty > 0 and penalty >= margin
    for team, kept_wanted in ((winner, True), (loser, False)):
        for d in side[team]:
            for nil in last["results"][d]["nils"]:
                if last["blind"][nil["seat"]] and nil["kept"] == kept_wanted and rules.blind_nil_bonus >= margin:
                    out["blind_nil"] = True
    return out


def won_from_behind(hands: list[dict], rules: Rules, team_seats: dict[str, tuple[int, int]],
                    winner: Optional[str]) -> bool:
    """Whether the winner trailed going into the game's last hand (its side's score before that hand,
    the final score less the hand's change, below the loser's): the games a lead was lost in the
    last hand, where a blind nil or a set decides more games than anything earlier does. A level
    score is not trailing; a game without a winner counts for neither."""
    if winner is None or not hands:
        return False
    loser = "B" if winner == "A" else "A"
    last = hands[-1]
    before = {team: sum(last["scores"][d] - last["score_change"][d] for d in sorted({rules.side_of(s) for s in seats}))
              for team, seats in team_seats.items()}
    return before[winner] < before[loser]


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


