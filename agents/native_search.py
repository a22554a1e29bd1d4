"""The search player's card play on the native library (``spades_env/native/search.c``).

The method is :class:`agents.search.SearchAgent`'s, step for step: the same knowledge of the
hidden cards (:class:`~agents.search_worlds.Knowledge`), the same candidates (touching cards merged,
the heuristic's card first), worlds drawn exactly uniformly and weighted by the bids, the same
staged dropping of losing candidates (:func:`~agents.search_worlds.drop_losers`) and the same final
choice (:func:`~agents.search_worlds.pick_candidate`). What runs in C is the costly part: drawing the worlds
and playing every (world, candidate) pair to the end of the hand with the C heuristic on every
seat. The decisions are deterministic given the agent's seed and the observation (the C random
stream is seeded from the same per-decision hash), but they are not the Python backend's
decisions: the two draw different worlds.
"""

from __future__ import annotations

import ctypes
import math
import time
from typing import Any, Optional

import numpy as np

from spades_env.cards import cards_to_mask
from spades_env.native import NativeEngineError, load, usable_threads
from spades_env.observation import ObservationView
from spades_env.rules import Rules

from .search_worlds import Knowledge, drop_losers, pick_candidate

RULE_FIELDS = ("players", "partnerships", "no_spades_first_trick", "spades_lead", "nil_tricks_count_for_partner",
               "nil_bonus", "blind_nil_bonus", "bags", "bag_limit", "bag_penalty", "bags_from_score_digit",
               "deck_ranks")
SPADES_LEAD = {"broken": 0, "any": 1, "forced_only": 2}
POSITION_SIZE = 39          # search.c's P_COUNT
INFER_SIZE = 14             # search.c's I_COUNT
_ERRORS = {-10: "bad arguments", -11: "no deal fits what the seat knows", -12: "a candidate is not legal in the "
           "simulated position", -13: "the heuristic gave no legal card", -14: "out of memory"}


class NativeSearchError(RuntimeError):
    """The native search could not run on this position (says why)."""


_LIB: Optional[ctypes.CDLL] = None


def _library() -> ctypes.CDLL:
    global _LIB
    if _LIB is None:
        lib = load()
        counts = (ctypes.c_int64 * 2)()
        lib.spades_search_counts(counts)
        if tuple(counts) != (len(RULE_FIELDS) + 1, POSITION_SIZE):
            raise NativeEngineError(f"the compiled search's layout {tuple(counts)} does not match the Python side's")
        p = ctypes.c_void_p
        lib.spades_search_sample.argtypes = [p, p, ctypes.c_int64, ctypes.c_int64, p, p, p, p, ctypes.c_int64,
                                             ctypes.c_int64, ctypes.c_uint64, p, ctypes.c_int64, ctypes.c_double,
                                             ctypes.c_double, p, p]
        lib.spades_search_sample.restype = ctypes.c_int64
        lib.spades_search_playouts.argtypes = [p, p, p, ctypes.c_int64, p, ctypes.c_int64, p, ctypes.c_int64]
        lib.spades_search_playouts.restype = ctypes.c_int64
        lib.spades_search_playouts_endgame.argtypes = [p, p, p, ctypes.c_int64, p, ctypes.c_int64, p, ctypes.c_int64,
                                                       ctypes.c_int64]
        lib.spades_search_playouts_endgame.restype = ctypes.c_int64
        lib.spades_search_playouts_tricks.argtypes = [p, p, p, ctypes.c_int64, p, ctypes.c_int64, p, ctypes.c_int64]
        lib.spades_search_playouts_tricks.restype = ctypes.c_int64
        _LIB = lib
    return _LIB


def _ptr(array: np.ndarray) -> int:
    return array.ctypes.data


def rules_array(rules: Rules, bag_cost: int = 0) -> np.ndarray:
    """search.c's rule parameters: ``RULE_FIELDS`` from ``rules``, then ``bag_cost`` (whole points a
    carried bag costs in the play-outs' hand values and the endgame tables; 0: the game's points)."""
    values = {name: getattr(rules, name) for name in RULE_FIELDS if name != "spades_lead"}
    values["spades_lead"] = SPADES_LEAD[rules.spades_lead]
    return np.array([int(values[name]) for name in RULE_FIELDS] + [int(bag_cost)], dtype=np.int64)


def position_array(view: ObservationView, rules: Rules, opponents_passed: tuple[int, int] = (0, 0)) -> np.ndarray:
    """The play-phase position of ``view`` in search.c's layout (the observer is seat 0);
    ``opponents_passed``: the cards relative seats 1 and 3 passed, where they are known (a true
    table; a searching seat never knows them)."""
    n = view.players
    pos = np.zeros(POSITION_SIZE, dtype=np.int64)
    for s in range(n):
        pos[0 + s] = cards_to_mask(view.played[s])
        pos[4 + s] = sum(1 << x for x in view.voids[s])
        pos[8 + s] = -1 if view.bids[s] is None else view.bids[s]
        pos[12 + s] = int(view.blind[s])
        pos[16 + s] = view.tricks_taken[s]
    pos[20] = len(view.current_trick)
    for i, (_, card) in enumerate(view.current_trick):
        pos[21 + i] = card
    pos[25] = view.current_trick[0][0] if view.current_trick else 0
    pos[26] = int(view.spades_broken)
    pos[27] = cards_to_mask(view.passed)
    pos[28] = cards_to_mask(view.received) if view.partnerships else 0
    for j, score in enumerate(view.scores[:4]):
        pos[29 + j] = score
    for j, bags in enumerate(view.bags[:4]):
        pos[33 + j] = bags if rules.bags_from_score_digit else min(max(bags, 0), rules.bag_limit - 1)
    pos[37], pos[38] = opponents_passed
    return pos


def _table_arrays(game, seat: int, cards: list[int], bag_cost: int = 0):
    """The C arguments of one true table seen from ``seat`` (to play): rules, position, the one
    world's hands in relative seats, the candidates; and the relative-to-absolute seat order."""
    from spades_env.observation import view_from_game

    n = game.n
    view = view_from_game(game, seat)
    rel = [(seat + k) % n for k in range(n)]
    passed = (game.passed[rel[1]], game.passed[rel[3]]) if game.rules.partnerships else (0, 0)
    rules_np, position = rules_array(game.rules, bag_cost), position_array(view, game.rules, passed)
    hands = np.array([[game.hands[s] for s in rel] + [0] * (4 - n)], dtype=np.int64)
    return rules_np, position, hands, np.array(cards, dtype=np.int64), rel


def table_values(game, seat: int, cards: list[int], threads: int = 1, endgame: int = 0,
                 bag_cost: int = 0) -> list[float]:
    """The value of each of ``cards`` for ``seat`` (to play) on the true table ``game``: the card
    played and the hand played out by the heuristic on every seat, scored as the hand's score
    difference for the seat's side. Exactly :func:`agents.search.play_out` and
    :func:`~agents.search.hand_value` on copies of the table, in C. ``endgame`` >= 1 (partnership
    rules): the last ``endgame`` tricks solved exactly instead (agents/endgame_search.py).
    ``bag_cost``: carried bags priced in the hand values (:func:`~agents.search.hand_value`)."""
    rules_np, position, hands, chosen, _ = _table_arrays(game, seat, cards, bag_cost)
    out = np.zeros((1, len(cards)), dtype=np.float64)
    if endgame and game.rules.players == 4 and game.rules.partnerships:
        status = _library().spades_search_playouts_endgame(_ptr(rules_np), _ptr(position), _ptr(hands), 1,
                                                           _ptr(chosen), len(cards), _ptr(out),
                                                           usable_threads(threads), int(endgame))
    else:
        status = _library().spades_search_playouts(_ptr(rules_np), _ptr(position), _ptr(hands), 1, _ptr(chosen),
                                                   len(cards), _ptr(out), usable_threads(threads))
    if status:
        raise NativeSearchError(f"table_values: {_ERRORS.get(int(status), f'error {status}')}")
    return out[0].tolist()


def table_tricks(game, seat: int, cards: list[int]) -> list[list[int]]:
    """For each of ``cards`` played by ``seat`` (to play) on the true table ``game`` and the hand
    played out by the heuristic on every seat: every seat's tricks taken at the end of the hand
    (absolute seats). Exactly :func:`agents.search.play_out`'s tricks, in C; the caller scores
    them (the bid search values a hand by the game)."""
    rules_np, position, hands, chosen, rel = _table_arrays(game, seat, cards)
    out = np.zeros((1, len(cards), 4), dtype=np.int64)
    status = _library().spades_search_playouts_tricks(_ptr(rules_np), _ptr(position), _ptr(hands), 1, _ptr(chosen),
                                                      len(cards), _ptr(out), 1)
    if status:
        raise NativeSearchError(f"table_tricks: {_ERRORS.get(int(status), f'error {status}')}")
    tricks = []
    for row in out[0]:
        absolute = [0] * game.n
        for k, s in enumerate(rel):
            absolute[s] = int(row[k])
        tricks.append(absolute)
    return tricks


def _inference_array(agent: Any, view: ObservationView, rules: Rules, seats: list[int]) -> np.ndarray:
    """Per inferred seat: what it saw when it bid (search.c's I_* layout), as
    :meth:`SearchAgent._bid_likelihood` rebuilds it."""
    n = view.players
    order = [(view.dealer + 1 + i) % n for i in range(n)]
    rows = np.zeros((max(1, len(seats)), INFER_SIZE), dtype=np.int64)
    passing = bool(view.passed or view.received)
    for q, s in enumerate(seats):
        before = set(order[:order.index(s)])
        rel = [(s + k) % n for k in range(n)]
        row = rows[q]
        row[0] = s
        for t in range(4):
            seen = t < n and rel[t] in before
            row[1 + t] = view.bids[rel[t]] if seen and view.bids[rel[t]] is not None else -1
            row[5 + t] = int(view.blind[rel[t]]) if seen else 0
        partner_bid = (view.bids[rel[2]] if rel[2] in before else None) if view.partnerships else None
        legal = agent._approx_legal_bids(rules, partner_bid)
        low_word = legal & ((1 << 64) - 1)
        row[9] = low_word - (1 << 64) if low_word >> 63 else low_word      # the same 64 bits, signed
        row[10] = legal >> 64
        row[11] = view.bids[s]
        if s == 2 and passing:
            row[12] = cards_to_mask(view.passed)
            row[13] = cards_to_mask(view.received)
    return rows


def search_card(agent: Any, view: ObservationView, rules: Rules, fallback: int,
                groups: list[list[int]]) -> int:
    """The card the search plays (its ``last_info`` filled as the Python backend does)."""

    start = time.perf_counter()
    if len(groups) <= 1:
        agent.last_info = {"fallback": "one candidate"}
        return groups[0][0] if groups else fallback
    if rules.players != view.players or rules.partnerships != view.partnerships:
        agent.last_info = {"fallback": "rules do not fit the observation"}
        return fallback
    knowledge = Knowledge(view)
    candidates = [grp[0] for grp in groups]
    k = len(candidates)
    per_playout = sum(knowledge.sizes)
    n_worlds = agent.worlds
    if agent.max_steps is not None:
        k_est = k if (k <= 3 or agent.stage <= 0) else agent.stage * k + (1 - agent.stage) * 3
        affordable = math.ceil(agent.max_steps / (per_playout * k_est))
        n_worlds = min(n_worlds, max(agent.min_worlds, affordable))
    lib = _library()
    rules_np = rules_array(rules, agent.bag_cost_for(rules))
    position = position_array(view, rules)
    seats = knowledge.hidden_seats
    free = knowledge.free()
    caps = np.array([knowledge.sizes[s] - knowledge.known[s].bit_count() for s in seats], dtype=np.int64)
    voids = np.array([knowledge.voids[s] for s in seats], dtype=np.int64)
    known = np.array(knowledge.known + [0] * (4 - view.players), dtype=np.int64)
    hidden = np.array(seats, dtype=np.int64)
    inferring = agent._inference_seats(view, rules) if agent.infer_bids else []
    infer = _inference_array(agent, view, rules, inferring)
    draws = n_worlds * (agent.oversample if inferring else 1)
    hands = np.zeros((draws, 4), dtype=np.int64)
    likelihood = np.ones(draws, dtype=np.float64)
    seed = agent._decision_rng.getrandbits(64)
    code = lib.spades_search_sample(_ptr(rules_np), _ptr(position), knowledge.hand, free, _ptr(hidden), _ptr(caps),
                                    _ptr(voids), _ptr(known), len(seats), draws, seed, _ptr(infer), len(inferring),
                                    agent.bid_sharpness, agent.nil_mismatch, _ptr(hands), _ptr(likelihood))
    if code:
        agent.last_info = {"fallback": _ERRORS.get(int(code), f"error {code}")}
        return fallback
    worlds, weights = _resample(hands, likelihood, n_worlds, agent._decision_rng) if inferring else \
        (hands, np.ones(draws))
    threads = usable_threads(agent.threads)
    base = candidates.index(fallback) if fallback in candidates else None
    stage_end = max(agent.min_worlds, int(agent.stage * len(worlds))) if agent.stage > 0 else len(worlds)
    stage_end = min(stage_end, len(worlds))
    values = np.full((len(worlds), k), np.nan)
    endgame = getattr(agent, "endgame_tricks", 0) if rules.players == 4 and rules.partnerships else 0
    active = list(range(k))
    dropped: list[int] = []

    def play(lo: int, hi: int) -> bool:
        chosen = np.array([candidates[i] for i in active], dtype=np.int64)
        out = np.zeros((hi - lo, len(active)), dtype=np.float64)
        rows = np.ascontiguousarray(worlds[lo:hi])
        if endgame:         # exact endgames (agents/endgame_search.py): solver.c once `endgame` tricks remain
            status = lib.spades_search_playouts_endgame(_ptr(rules_np), _ptr(position), _ptr(rows), hi - lo,
                                                        _ptr(chosen), len(active), _ptr(out), threads, endgame)
        else:
            status = lib.spades_search_playouts(_ptr(rules_np), _ptr(position), _ptr(rows), hi - lo, _ptr(chosen),
                                                len(active), _ptr(out), threads)
        if status:
            agent.last_info = {"fallback": _ERRORS.get(int(status), f"error {status}")}
            return False
        values[lo:hi, active] = out
        return True

    if not play(0, stage_end):
        return fallback
    steps = stage_end * k * per_playout
    used = stage_end
    if len(active) > 2 and stage_end < len(worlds):
        kept, out = drop_losers(active, values[:stage_end].tolist(), list(weights[:stage_end]), base, agent.drop_z)
        active = kept
        dropped = [candidates[i] for i in out]
    if used < len(worlds):
        more = len(worlds) - used
        if agent.max_steps is not None:         # as the Python loop: stop once the step cap is reached
            per_world = len(active) * per_playout
            more = min(more, max(agent.min_worlds - used, math.ceil(max(0, agent.max_steps - steps) / per_world)))
        if more > 0:
            if not play(used, used + more):
                return fallback
            steps += more * len(active) * per_playout
            used += more
    kept_candidates = [candidates[i] for i in active]
    rows = values[:used][:, active].tolist()
    choice, means, zs = pick_candidate(kept_candidates, rows, list(weights[:used]), fallback, agent.min_gain, agent.min_z,
                              agent._bonus(groups, kept_candidates))
    agent.last_info = {"candidates": kept_candidates, "means": means, "z": zs, "worlds": used,
                       "drawn_worlds": len(worlds), "dropped": dropped, "steps": steps, "choice": choice,
                       "base": fallback, "base_from": agent._base_from(),
                       "seconds": time.perf_counter() - start, "backend": "native"}
    return choice


def _resample(hands: np.ndarray, likelihood: np.ndarray, n_worlds: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Systematic resampling by the bids' likelihood, as :meth:`SearchAgent._draw_worlds`: a
    world drawn k times is kept once with weight k."""
    total = float(likelihood.sum())
    if total <= 0.0:
        return hands[:n_worlds], np.ones(min(n_worlds, len(hands)))
    step = total / n_worlds
    targets = rng.random() * step + step * np.arange(n_worlds)
    cumulative = np.cumsum(likelihood)
    picked = np.minimum(np.searchsorted(cumulative, targets, side="right"), len(hands) - 1)
    index, counts = np.unique(picked, return_counts=True)
    return hands[index], counts.astype(np.float64)
