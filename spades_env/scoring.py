"""Hand scoring and the end-of-game test: pure functions over plain numbers.

A *side* is a partnership (seats 0+2 = side 0, seats 1+3 = side 1) or, in cutthroat, a player.

This is the reference. The same rule is written three more times, for speed where a Python call
per hand would dominate: ``spades_env/vector.py`` ``SpadesVectorEnv._score_hand`` and
``_game_end`` (torch, every table at once), ``spades_env/native/engine.c`` ``score_hand`` (the
batched engine's C step) and ``spades_env/native/search.c`` ``side_points`` (the search's
play-outs). A change to scoring changes all four; tests/spades_env/test_scoring_twins.py scores the same
random hands with each, in every preset, and fails on any difference.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

from .rules import Rules

POINTS_PER_BID_TRICK = 10
"""A contract made scores this per trick bid; a contract set loses as much."""


class SideResult(NamedTuple):
    """How one side's hand was scored."""

    contract: int          # sum of the side's non-nil bids
    tricks: int            # tricks that count toward the contract
    made: bool             # contract made (trivially true for a contract of 0)
    contract_points: int   # +10 per trick bid (or -10 per trick bid when set)
    overtrick_points: int  # +1 per overtrick when bags are on
    nil_points: int        # nil and blind-nil bonuses and penalties
    bags_taken: int        # bags added to the counter this hand
    bag_penalties: int     # how many times the penalty was applied
    points: int            # total score change, penalties included
    bags_after: int        # the bag counter after this hand


def _cpp_remainder(value: int, divisor: int) -> int:
    """C++'s ``%``: the remainder takes the sign of the dividend."""
    return value - divisor * int(value / divisor)


def bags_in_score(score: int) -> int:
    """The bag count OpenSpiel reads from a score's last digit (negative for negative scores)."""
    return _cpp_remainder(score, 10)


def nils_kept(bids: Sequence[int], tricks: Sequence[int]) -> list[Optional[bool]]:
    """Per seat: True for a nil (or blind nil) kept (no trick taken), False for one broken,
    None where the seat did not bid nil. :func:`score_side` scores nils by this; game records
    state it per hand."""
    return [taken == 0 if bid == 0 else None for bid, taken in zip(bids, tricks)]


def score_side(rules: Rules, bids: Sequence[int], blind: Sequence[bool], tricks: Sequence[int],
               score_before: int, bags_before: int) -> SideResult:
    """Score one side's hand. ``bids``/``blind``/``tricks`` list the side's members (nil = 0)."""
    contract = sum(b for b in bids if b > 0)
    nil_points = 0
    counted = 0
    nil_bags = 0
    for is_blind, taken, kept in zip(blind, tricks, nils_kept(bids, tricks)):
        if kept is not None:
            value = rules.blind_nil_bonus if is_blind else rules.nil_bonus
            nil_points += value if kept else -value
            if rules.nil_tricks_count_for_partner:
                counted += taken
            else:
                nil_bags += taken
        else:
            counted += taken
    made = counted >= contract
    if made:
        contract_points = POINTS_PER_BID_TRICK * contract
        overtricks = counted - contract
    else:
        contract_points = -POINTS_PER_BID_TRICK * contract
        overtricks = 0
    if not rules.bags:
        return SideResult(contract, counted, made, contract_points, 0, nil_points, 0, 0,
                          contract_points + nil_points, 0)
    overtrick_points = overtricks
    bags_taken = overtricks + nil_bags
    if rules.bags_from_score_digit:
        counter = bags_in_score(score_before) + bags_taken
        penalties = int(counter / 10) if counter > 0 else 0
        points = contract_points + overtrick_points + nil_points - rules.bag_penalty * penalties
        bags_after = bags_in_score(score_before + points)
    else:
        counter = bags_before + bags_taken
        penalties = counter // rules.bag_limit
        bags_after = counter - penalties * rules.bag_limit
        points = contract_points + overtrick_points + nil_points - rules.bag_penalty * penalties
    return SideResult(contract, counted, made, contract_points, overtrick_points, nil_points,
                      bags_taken, penalties, points, bags_after)


def carried_bags(rules: Rules, result: SideResult) -> int:
    """The change a scored hand made to its side's carried bag counter: the bags it added, less
    the ones a penalty cleared (``bag_limit`` each; ten where the score's last digit keeps them)."""
    limit = 10 if rules.bags_from_score_digit else rules.bag_limit
    return result.bags_taken - result.bag_penalties * limit


def bag_priced_points(rules: Rules, result: SideResult, bag_cost: float) -> float:
    """A side's score change with its carried bags priced at ``bag_cost`` points each: the score
    change less ``bag_cost`` per bag added to the counter (plus per bag a penalty cleared). With
    :func:`game_bag_cost` every bag costs its share of the penalty wherever the counter stands,
    so the cliff at the limit disappears: an overtrick nets +1 - 10. The rewards' ``bag_cost``,
    the search's and the solver's all mean this."""
    if not bag_cost:
        return float(result.points)
    return result.points - bag_cost * carried_bags(rules, result)


def game_bag_cost(rules: Rules) -> float:
    """What a carried bag costs over a game under ``rules``: the penalty shared by the bags that
    bring it (10 points in the standard rules); 0 where bags are not counted."""
    if not rules.bags or not rules.bag_limit:
        return 0.0
    return rules.bag_penalty / rules.bag_limit


def score_hand(rules: Rules, bids: Sequence[int], blind: Sequence[bool], tricks: Sequence[int],
               scores: Sequence[int], bags: Sequence[int]) -> list[SideResult]:
    """Score a hand for every side. ``bids``, ``blind``, ``tricks`` are per seat; ``scores`` and
    ``bags`` per side, before the hand."""
    results = []
    for side in range(rules.num_sides):
        members = rules.side_members(side)
        results.append(score_side(rules, [bids[s] for s in members], [blind[s] for s in members],
                                  [tricks[s] for s in members], scores[side], bags[side]))
    return results


def game_winner(rules: Rules, scores: Sequence[int]) -> Optional[int]:
    """The winning side after a hand, or None if the game goes on.

    The game ends when a side reached ``target_score`` or fell to ``mercy_score``, and then the
    single highest score wins (a side at the target with more points than the other; both over:
    the higher; both at the mercy score: the higher). A tie at the top plays another hand.
    """
    reached = any(s >= rules.target_score for s in scores)
    if rules.mercy_score is not None:
        reached = reached or any(s <= rules.mercy_score for s in scores)
    if not reached:
        return None
    return leader(scores)


def leader(scores: Sequence[int]) -> Optional[int]:
    """The side with the single highest score, or None when tied at the top."""
    best = max(scores)
    top = [i for i, s in enumerate(scores) if s == best]
    return top[0] if len(top) == 1 else None
