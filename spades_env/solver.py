"""Exact endgames: the value of every legal card when all four hands are known.

    from spades_env.solver import solve
    values = solve(game)                     # {card id: points for the side to act}
    values = solve(game, objective="tricks") # {card id: tricks its side takes from now on}

``solve(game, objective)`` takes a :class:`~spades_env.game.SpadesGame` in the play phase (at any
trick, mid-trick too) and returns, for every legal card of the seat to act, the value for that
seat's side under optimal play by all four seats (a "double dummy" solve):

- ``"tricks"``: the tricks the side takes from now to the end of the hand;
- ``"points"``: the side's score change for the hand minus the other side's, by the rules' own
  scoring (:func:`spades_env.scoring.score_side`: contracts, nil and blind nil made or broken,
  bags with the counters carried into the hand, and their penalty). ``bag_cost`` (points, 0
  by default; ``"game"``: the penalty shared by the bags that bring it, 10 in the standard rules)
  prices the bags each side carries into later hands as the rewards' ``bag_cost`` does
  (:func:`spades_env.scoring.bag_priced_points`), so an overtrick is worth +1 - 10 wherever the
  counter stands.

Both objectives are one payoff table per side over its members' final tricks, built here from
``scoring.py`` (so the scoring is never written twice); the search maximises the side to act's
entry minus the other's. Two implementations: :func:`reference_values`, a readable minimax with
memo in Python, and the C solver (``spades_env/native/solver.c``: alpha-beta, a transposition
table, equivalent cards, payoff bounds), the default where the native library builds. They are
tested against each other and against a brute force on the engine itself
(tests/test_solver.py); ``python -m spades_env.solver_bench`` times them.

Rules: the four-seat partnership game, with every play rule of the rule book (spades broken,
``any`` or ``forced_only`` leads, no spades on the first trick, the two of clubs leading), the
short deck (``deck_ranks``: fewer cards, fewer tricks) and a free signal (the messages are over
before the play). Cutthroat and three players are refused by name (a hand is then not a
two-sided contest).
"""

from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np

from .cards import NON_SPADES_MASK, SUIT_MASKS, mask_to_cards
from .game import PHASE_NAMES, PHASE_PLAY, SpadesGame
from .scoring import bag_priced_points, game_bag_cost, score_side

OBJECTIVES = ("points", "tricks")
BACKENDS = ("native", "python")
TABLE = 14                      # final tricks 0..13 per member of a side
SPADES_LEAD = {"broken": 0, "any": 1, "forced_only": 2}
_FIELDS = 20                    # solver.c's F_COUNT
_ERRORS = {-20: "the C solver refused the position", -21: "a card is not legal in the position",
           -22: "out of memory"}


class SolverError(ValueError):
    """A position, objective or rule set the solver cannot solve (says which and why)."""


# ====================================================================== checks and tables
def check_position(game: SpadesGame, objective: str = "points") -> None:
    """A :class:`SolverError` naming what is wrong unless ``game`` can be solved for ``objective``."""
    if not isinstance(game, SpadesGame):
        raise SolverError(f"solve: expected a SpadesGame, got {type(game).__name__}")
    if objective not in OBJECTIVES:
        raise SolverError(f"solve: objective={objective!r}: expected one of {', '.join(OBJECTIVES)}")
    r = game.rules
    if r.players != 4 or not r.partnerships:
        raise SolverError(f"solve: the {r.name!r} rules are cutthroat ({r.players} players, no partnerships); the "
                          "solver plays the four-seat partnership game only")
    if game.phase != PHASE_PLAY:
        raise SolverError(f"solve: the game is in the {PHASE_NAMES[game.phase]!r} phase; expected the "
                          f"{PHASE_NAMES[PHASE_PLAY]!r} phase")
    left = game.tricks_per_hand - game.tricks_played
    seen = 0
    for seat, hand in enumerate(game.hands):
        in_trick = (seat - game.trick_leader) % 4 < len(game.trick_cards)
        if hand.bit_count() != left - in_trick:
            raise SolverError(f"solve: seat {seat} holds {hand.bit_count()} cards, expected {left - in_trick} "
                              f"({left} tricks left{', one card on the table' if in_trick else ''})")
        if hand & seen:
            raise SolverError(f"solve: seat {seat} holds a card another seat holds")
        seen |= hand


def check_bag_cost(game: SpadesGame, objective: str, bag_cost) -> int:
    """``bag_cost`` as the whole number of points the tables charge a carried bag (``"game"``: the
    rules' own price), or a :class:`SolverError` naming what is wrong."""
    if isinstance(bag_cost, str):
        if bag_cost != "game":
            raise SolverError(f"solve: bag_cost={bag_cost!r}: expected a whole number of points >= 0 or 'game'")
        bag_cost = game_bag_cost(game.rules)
    if isinstance(bag_cost, bool) or not isinstance(bag_cost, (int, float, np.integer, np.floating)) or \
            not float(bag_cost).is_integer() or not 0 <= bag_cost <= 1000:
        raise SolverError(f"solve: bag_cost={bag_cost!r}: expected a whole number of points from 0 to 1000 "
                          "(the payoff tables are integers) or 'game'")
    if bag_cost and objective != "points":
        raise SolverError(f"solve: bag_cost prices bags in points; objective={objective!r} counts tricks")
    return int(bag_cost)


def payoff_tables(game: SpadesGame, objective: str, side: int, bag_cost: int = 0) -> np.ndarray:
    """(2, 14, 14) int64: ``[s][a][b]`` the value side ``s`` counts when the hand ends with its
    first member (seat ``s``) on ``a`` tricks and its second (seat ``s + 2``) on ``b``; the
    solver's value for ``side`` is its entry minus the other side's. ``"points"``: the side's
    score change (:func:`spades_env.scoring.score_side`), less ``bag_cost`` a carried bag;
    ``"tricks"``: ``side``'s tricks from now on (the other side's table is zero)."""
    tables = np.zeros((2, TABLE, TABLE), dtype=np.int64)
    r = game.rules
    if objective == "tricks":
        already = game.tricks_taken[side] + game.tricks_taken[side + 2]
        tables[side] = np.add.outer(np.arange(TABLE), np.arange(TABLE)) - already
        return tables
    for s in (0, 1):
        bids = [game.bids[s], game.bids[s + 2]]
        blind = [game.blind[s], game.blind[s + 2]]
        for a in range(TABLE):
            for b in range(TABLE - a):
                result = score_side(r, bids, blind, [a, b], game.scores[s], game.bags[s])
                tables[s, a, b] = round(bag_priced_points(r, result, bag_cost))
    return tables


def _legal(game: SpadesGame) -> list[int]:
    return mask_to_cards(game.legal_mask())


# ====================================================================== the public entry points
def solve(game: SpadesGame, objective: str = "points", backend: Optional[str] = None,
          bag_cost: int | str = 0) -> dict[int, int]:
    """``{card id: value}`` for every legal card of the seat to act (module doc). ``backend``:
    ``"native"`` (the C solver, the default where the library builds) or ``"python"`` (the
    reference); ``bag_cost``: points a carried bag costs (``"points"`` only; module doc)."""
    check_position(game, objective)
    cost = check_bag_cost(game, objective, bag_cost)
    backend = _backend(backend)
    side = game.side_of[game.to_act]
    tables = payoff_tables(game, objective, side, cost)
    cards = _legal(game)
    if backend == "python":
        return reference_values(game, tables, side, cards)
    return dict(zip(cards, native_values(game, tables, side, cards)))


def position_value(game: SpadesGame, objective: str = "points", backend: Optional[str] = None,
                   bag_cost: int | str = 0) -> int:
    """The value of the position for the side of the seat to act: the best of :func:`solve`'s
    values (one solve, cheaper than asking for every card)."""
    check_position(game, objective)
    cost = check_bag_cost(game, objective, bag_cost)
    side = game.side_of[game.to_act]
    tables = payoff_tables(game, objective, side, cost)
    if _backend(backend) == "python":
        return max(reference_values(game, tables, side, _legal(game)).values())
    return native_values(game, tables, side, [])[0]


def principal_line(game: SpadesGame, objective: str = "points", backend: Optional[str] = None,
                   bag_cost: int | str = 0) -> dict:
    """The hand played to its end under optimal play from ``game`` (ties: the lowest card id),
    with the tricks already taken counted: ``{"cards": [...], "tricks_taken": per seat at the end,
    "score_change": per side (the game's points, bags unpriced), "value": the first seat's side's
    value}``. ``game`` is not changed."""
    check_position(game, objective)
    check_bag_cost(game, objective, bag_cost)
    g = game.copy()
    first_side = g.side_of[g.to_act]
    cards = []
    value = None
    while g.phase == PHASE_PLAY:
        values = solve(g, objective, backend, bag_cost)
        best = max(values.values())
        if value is None:
            value = best
        card = min(c for c, v in values.items() if v == best)
        cards.append(card)
        g.apply(card)
    return {"cards": cards, "tricks_taken": list(g.tricks_taken),
            "score_change": [res.points for res in g.last_results], "value": value, "side": first_side}


def _backend(backend: Optional[str]) -> str:
    if backend is None:
        from .native import unavailable_reason
        return "native" if unavailable_reason() is None else "python"
    if backend not in BACKENDS:
        raise SolverError(f"solve: backend={backend!r}: expected one of {', '.join(BACKENDS)}")
    return backend


# ====================================================================== the C solver
_SOLVE = None


def _c_solver():
    global _SOLVE
    if _SOLVE is None:
        from .native import NativeEngineError, load
        lib = load()
        if lib.spades_solver_fields() != _FIELDS:
            raise NativeEngineError(f"the compiled solver's layout ({lib.spades_solver_fields()} fields) does not "
                                    f"match the Python side's ({_FIELDS})")
        fn = lib.spades_solve_cards
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] + [ctypes.c_void_p] * 2
        fn.restype = ctypes.c_int64
        _SOLVE = fn
    return _SOLVE


def position_fields(game: SpadesGame, side: int) -> np.ndarray:
    """The position in solver.c's F_* layout (int64), valued for ``side``."""
    f = np.zeros(_FIELDS, dtype=np.int64)
    for s in range(4):
        h = game.hands[s]
        f[s] = h - (1 << 64) if h >> 63 else h
        f[14 + s] = game.tricks_taken[s]
    f[4] = len(game.trick_cards)
    for i, card in enumerate(game.trick_cards[:3]):
        f[5 + i] = card
    f[8] = game.trick_leader if game.trick_cards else game.to_act
    r = game.rules
    f[9], f[10] = int(game.spades_broken), game.tricks_played
    f[11], f[12], f[13] = SPADES_LEAD[r.spades_lead], int(r.no_spades_first_trick), int(r.two_of_clubs_leads)
    f[18] = side
    f[19] = game.tricks_per_hand       # 13, or a short deck's
    return f


def native_values(game: SpadesGame, tables: np.ndarray, side: int, cards: list[int],
                  stats: Optional[np.ndarray] = None) -> list[int]:
    """The C solver's value of each of ``cards`` for ``side`` (no cards: the position's value)."""
    fields = position_fields(game, side)
    tables = np.ascontiguousarray(tables, dtype=np.int64)
    chosen = np.array(cards or [0], dtype=np.int64)
    out = np.zeros(max(1, len(cards)), dtype=np.int64)
    counter = stats if stats is not None else np.zeros(1, dtype=np.int64)
    status = _c_solver()(fields.ctypes.data, tables.ctypes.data, chosen.ctypes.data, len(cards), out.ctypes.data,
                         counter.ctypes.data)
    if status:
        raise SolverError(f"solve: {_ERRORS.get(int(status), f'error {status}')}")
    return [int(v) for v in out]


# ====================================================================== the Python reference
def reference_values(game: SpadesGame, tables: np.ndarray, side: int, cards: list[int]) -> dict[int, int]:
    """The readable reference: minimax over every card, with the value of each position at the
    start of a trick remembered (keyed by the hands, the leader, spades broken and the tricks
    taken) and equivalent cards tried once. Values are for ``side``: its table entry minus the
    other side's at the end of the hand."""
    return _Reference(game, tables, side).card_values(cards)


class _Reference:
    def __init__(self, game: SpadesGame, tables: np.ndarray, side: int) -> None:
        self.rules = game.rules
        self.tables = tables.tolist()
        self.side = side
        self.start = game
        self.tricks_per_hand = game.tricks_per_hand
        self.memo: dict = {}

    def legal(self, hands, seat, trick, broken, tricks_played) -> int:
        """Legal cards of ``seat`` as a mask: game.py's rule, restated for this light state."""
        hand = hands[seat]
        r = self.rules
        first = tricks_played == 0
        if trick:
            follow = hand & SUIT_MASKS[trick[0] // 13]
            if follow:
                return follow
            if first and r.no_spades_first_trick and hand & NON_SPADES_MASK:
                return hand & NON_SPADES_MASK
            return hand
        if first and r.two_of_clubs_leads and hand & 1:
            return 1
        if hand & NON_SPADES_MASK:
            restricted = r.spades_lead != "any" and not (broken and r.spades_lead == "broken")
            if restricted or (first and r.no_spades_first_trick):
                return hand & NON_SPADES_MASK
        return hand

    def classes(self, hands, seat, legal: int, trick) -> list[int]:
        """One card per class of equivalent legal cards: cards of one suit with no card between
        them in another hand or on the table win the same tricks."""
        others = (hands[0] | hands[1] | hands[2] | hands[3]) & ~hands[seat]
        for c in trick:
            others |= 1 << c
        reps, prev = [], None
        for card in mask_to_cards(legal):
            if prev is not None and prev // 13 == card // 13:
                between = ((1 << card) - 1) & ~((2 << prev) - 1)
                if not between & others:
                    prev = card
                    continue
            reps.append(card)
            prev = card
        return reps

    def final_value(self, taken) -> int:
        t, s = self.tables, self.side
        o = 1 - s
        return t[s][taken[s]][taken[s + 2]] - t[o][taken[o]][taken[o + 2]]

    def value(self, hands, seat, trick, leader, broken, taken, tricks_played) -> int:
        """The value of the position with ``seat`` to play to ``trick`` (cards led by ``leader``)."""
        if not trick:
            if tricks_played == self.tricks_per_hand:
                return self.final_value(taken)
            key = (hands, seat, broken, taken)
            if key in self.memo:
                return self.memo[key]
        legal = self.legal(hands, seat, trick, broken, tricks_played)
        values = [self.after(hands, seat, card, trick, leader, broken, taken, tricks_played)
                  for card in self.classes(hands, seat, legal, trick)]
        best = max(values) if seat % 2 == self.side else min(values)
        if not trick:
            self.memo[(hands, seat, broken, taken)] = best
        return best

    def after(self, hands, seat, card, trick, leader, broken, taken, tricks_played) -> int:
        """The value once ``seat`` plays ``card``."""
        hands = list(hands)
        hands[seat] &= ~(1 << card)
        hands = tuple(hands)
        broken = broken or card // 13 == 3
        if not trick:
            leader = seat
        trick = trick + (card,)
        if len(trick) < 4:
            return self.value(hands, (seat + 1) % 4, trick, leader, broken, taken, tricks_played)
        win = 0
        for i in range(1, 4):
            c, w = trick[i], trick[win]
            if (c // 13 == w // 13 and c > w) or (c >= 39 and w < 39):
                win = i
        winner = (leader + win) % 4
        taken = tuple(t + (s == winner) for s, t in enumerate(taken))
        return self.value(hands, winner, (), winner, broken, taken, tricks_played + 1)

    def card_values(self, cards: list[int]) -> dict[int, int]:
        g = self.start
        hands = tuple(g.hands)
        seat = g.to_act
        trick = tuple(g.trick_cards)
        leader = g.trick_leader if trick else seat
        taken = tuple(g.tricks_taken)
        out = {}
        for card in cards:
            out[card] = self.after(hands, seat, card, trick, leader, g.spades_broken, taken, g.tricks_played)
        return out
