"""Checks of what enters the batched engine from outside: snapshots, deal tensors and actions.

The C step trusts the state tensors it is given (it indexes arrays with them), and the torch
step would quietly play on from a corrupt state. So every snapshot loaded with
:meth:`SpadesVectorEnv.load_state_dict` (a training checkpoint, say) and every deal tensor given
to ``reset`` is checked here first: shapes, dtypes, value ranges and the invariants of a real
game (four disjoint hands that, with the cards played, make the deck: the rules' deck, short or
full). A failed check raises
:class:`~spades_env.vector.VectorEnvError` naming the entry, and the env is left unchanged.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from .cards import CARDS_PER_SEAT, NUM_CARDS, NUM_RANKS, NUM_SEATS, card_str
from .game import PHASE_PLAY, PHASE_SIGNAL
from .rules import Rules

from .vector_state import VecState
# ``env`` below is the SpadesVectorEnv these checks serve (not imported: spades_env.vector imports this module).

ALL_CARDS = (1 << NUM_CARDS) - 1
CARDS_PER_HAND = CARDS_PER_SEAT
MAX_ABS_SCORE = 10 ** 9
"""Scores beyond this are refused (far past any real game; the step's arithmetic stays exact)."""
LAST_PHASE = 4          # the engine's phases run 0 (blind decision) .. 4 (hand over); 6 (signal) with signals

# Inclusive value ranges of the state fields whose values index something.
_STATE_RANGES = {
    "phase": (0, LAST_PHASE), "to_act": (0, 3), "dealer": (0, 3), "bids": (-1, 13), "blind": (0, 1),
    "looked": (0, 1), "pass_from": (0, 3), "pass_to": (0, 3), "trick": (-1, NUM_CARDS - 1),
    "trick_len": (0, NUM_SEATS - 1), "leader": (0, 3), "led_suit": (-1, 3), "win_card": (-1, NUM_CARDS - 1),
    "win_seat": (-1, 3), "tricks_taken": (0, CARDS_PER_HAND), "tricks_played": (0, CARDS_PER_HAND),
    "voids": (0, 15), "broken": (0, 1), "scores": (-MAX_ABS_SCORE, MAX_ABS_SCORE),
    "hand_number": (0, 2 ** 40), "deal_index": (0, 2 ** 40),
    "hands": (0, ALL_CARDS), "deal": (0, ALL_CARDS), "passed": (0, ALL_CARDS), "received": (0, ALL_CARDS),
    "played": (0, ALL_CARDS),
}


class VectorEnvError(ValueError):
    """A rule set, option, action, deal or snapshot the batched engine cannot take."""


def deck_mask(rules: Rules) -> int:
    """The bitboard of the rules' deck: all 52 cards, or the ``deck_ranks`` highest of each suit."""
    return sum(1 << c for c in range(NUM_CARDS) if c % NUM_RANKS >= rules.lowest_rank)


MAX_NUM_ENVS = 1 << 26
"""The most tables one engine takes (67 million: its deal pool alone then needs ~90 GB); more is
refused up front rather than failing inside an allocation."""


def check_seed(seed: Any) -> None:
    """A seed is None or an integer torch's generators take (-2**63 .. 2**64 - 1)."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or not -(1 << 63) <= int(seed) < (1 << 64)):
        raise VectorEnvError(f"seed={seed!r:.40}: expected None or an integer within -2**63..2**64-1")


def check_options(num_envs: Any, compile: Any, check_actions: Any, deal_pool_size: Any) -> None:
    """The engine's size and switches: a positive number of tables (at most ``MAX_NUM_ENVS``),
    true/false switches (``compile="no"`` would compile), an integer pool size."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise VectorEnvError(f"num_envs={num_envs!r:.40}: expected a positive integer")
    if num_envs > MAX_NUM_ENVS:
        raise VectorEnvError(f"num_envs={num_envs}: expected at most {MAX_NUM_ENVS:,} tables (MAX_NUM_ENVS); "
                             "use several engines")
    for name, value in (("compile", compile), ("check_actions", check_actions)):
        if not isinstance(value, bool):
            raise VectorEnvError(f"{name}={value!r:.40}: expected True or False")
    if deal_pool_size is not None and (isinstance(deal_pool_size, bool) or not isinstance(deal_pool_size, int)):
        raise VectorEnvError(f"deal_pool_size={deal_pool_size!r:.40}: expected an integer (or None: the default)")


def checked_actions(actions: Any, mask: torch.Tensor, who: str, tables: Optional[torch.Tensor] = None,
                    seat: Optional[int] = None) -> torch.Tensor:
    """``actions`` as (B,) int64 on the mask's device, refused with a :class:`VectorEnvError` that
    names ``who`` gave them (``"learner"``, ``"policy"``; and the ``seat`` it plays, if given)
    unless there is one integer action id per table and each is legal at the ``tables`` that take
    it ((B,) bool; every table by default). A float (``52.7``), a 0-d tensor or an out-of-range id would otherwise be cast or
    clamped into a wrong move, and an illegal one leaves its table where it was."""
    num_envs = mask.shape[0]
    expected = f"({num_envs},) integer action ids, one per table"
    at_seat = "" if seat is None else f" (seat {seat} to act)"
    try:
        if not isinstance(actions, torch.Tensor):
            actions = np.asarray(actions)
        actions = torch.as_tensor(actions, device=mask.device)
    except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
        raise VectorEnvError(f"{who}{at_seat}: actions={actions!r:.80}: expected {expected} "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    if (tuple(actions.shape) != (num_envs,) or actions.is_floating_point() or actions.is_complex()
            or actions.dtype == torch.bool):
        raise VectorEnvError(f"{who}{at_seat}: actions of shape {tuple(actions.shape)} and dtype {actions.dtype}: "
                             f"expected {expected}")
    actions = actions.to(torch.int64)
    num_actions = mask.shape[1]            # 68, and one per message of the free signal
    legal = (actions >= 0) & (actions < num_actions)
    legal &= mask.gather(1, actions.clamp(0, num_actions - 1)[:, None])[:, 0]
    if tables is not None:
        legal |= ~tables
    if not bool(legal.all()):
        bad = int(torch.nonzero(~legal)[0, 0])
        raise VectorEnvError(f"illegal {who} action {int(actions[bad])} at table {bad}{at_seat}; legal there: "
                             f"{torch.nonzero(mask[bad])[:, 0].tolist()}")
    return actions


def _fail(where: str, message: str) -> None:
    raise VectorEnvError(f"{where}: {message}")


def _tensor(value: Any, where: str, shape: tuple, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        _fail(where, f"expected a tensor, got {type(value).__name__}")
    if value.dtype != dtype:
        _fail(where, f"expected dtype {dtype}, got {value.dtype}")
    if tuple(value.shape) != tuple(shape):
        _fail(where, f"expected shape {tuple(shape)}, got {tuple(value.shape)}")
    return value.detach().to("cpu")


def _in_range(t: torch.Tensor, where: str, low: int, high: int) -> None:
    if t.numel() and bool(((t < low) | (t > high)).any()):
        bad = t[(t < low) | (t > high)][0].item()
        _fail(where, f"value {bad} outside {low}..{high}")


def _popcount(bits: torch.Tensor) -> torch.Tensor:
    count = torch.zeros_like(bits)
    for card in range(NUM_CARDS):
        count += (bits >> card) & 1
    return count


def _outside_deck(cards: torch.Tensor, deck: int) -> Optional[int]:
    """The lowest card of any of the bitboards ``cards`` that is not in ``deck``, or None."""
    stray = cards & ~deck
    if not stray.numel() or not bool((stray != 0).any()):
        return None
    board = int(stray[stray != 0][0])
    return (board & -board).bit_length() - 1


def _deck_words(rules: Rules) -> str:
    if rules.deck_ranks == 13:
        return "all 52 cards"
    low = card_str(rules.lowest_rank)[:-1]
    return f"the {4 * rules.deck_ranks} cards of the short deck (deck_ranks={rules.deck_ranks}: {low} to A of each suit)"


def check_deals(hands: torch.Tensor, where: str, rules: Optional[Rules] = None) -> None:
    """Each row of ``hands`` (..., 4) bitboards is a deal of the rules' deck (the full deck by
    default): ``cards_per_hand`` cards per seat, disjoint, every card of the deck and no other."""
    per_hand = CARDS_PER_HAND if rules is None else rules.cards_per_hand
    deck = ALL_CARDS if rules is None else deck_mask(rules)
    _in_range(hands, where, 0, ALL_CARDS)
    stray = _outside_deck(hands, deck)
    if stray is not None:
        _fail(where, f"card {card_str(stray)} is not in the deck: a deal holds {_deck_words(rules or Rules())}")
    sizes = _popcount(hands)
    if hands.numel() and bool((sizes != per_hand).any()):
        _fail(where, f"every hand must hold {per_hand} cards (got a hand of {int(sizes[sizes != per_hand][0])})")
    union = hands[..., 0] | hands[..., 1] | hands[..., 2] | hands[..., 3]
    if hands.numel() and bool((union != deck).any()):
        _fail(where, f"the four hands must be disjoint and hold {_deck_words(rules or Rules())}")


def check_deal_tensor(deals: torch.Tensor, num_envs: int, rules: Optional[Rules] = None) -> None:
    """Deals given to ``reset`` as bitboards: (B, 4) or (B, H, 4) int64, every row a deal."""
    if deals.dim() not in (2, 3) or deals.shape[0] != num_envs or deals.shape[-1] != NUM_SEATS:
        _fail("deals", f"expected bitboards of shape ({num_envs}, 4) or ({num_envs}, H, 4), got {tuple(deals.shape)}")
    check_deals(deals.detach().to("cpu"), "deals", rules)


def check_snapshot(env, snapshot: Any) -> None:
    """Everything :meth:`SpadesVectorEnv.load_state_dict` will read, checked before any of it is used."""
    B = env.num_envs
    where = "load_state_dict"
    if not isinstance(snapshot, dict) or snapshot.get("format") != "spades-vector-env":
        _fail(where, "expected a SpadesVectorEnv.state_dict() snapshot")
    missing = [k for k in ("num_envs", "rules", "state", "generator", "steps", "fixed_start_dealer", "deal_pool",
                           "pool_ptr", "deal_queue", "start_scores", "start_bags", "mask") if k not in snapshot]
    if missing:
        _fail(where, f"the snapshot has no {', '.join(map(repr, missing))}")
    if snapshot["num_envs"] != B or snapshot["rules"] != env.rules.name:
        _fail(where, f"snapshot of {snapshot['num_envs']!r} tables under rules {snapshot['rules']!r}; this env has "
                     f"{B} under {env.rules.name!r}")
    state = snapshot["state"]
    if not isinstance(state, dict):
        _fail(where, "the snapshot's 'state' must be a mapping of tensors")
    empty = env._empty_state()
    values = {}
    r = env.rules
    ranges = dict(_STATE_RANGES, tricks_taken=(0, r.tricks_per_hand), tricks_played=(0, r.tricks_per_hand),
                  messages=(-1, r.signals - 1), phase=(0, PHASE_SIGNAL if r.signals else LAST_PHASE))
    for name in empty.__dataclass_fields__:
        if name == "messages" and name not in state and not r.signals:
            values[name] = empty.messages.to("cpu")     # a snapshot from before the free signal: none sent
            continue
        if name not in state:
            _fail(where, f"the snapshot's state has no {name!r}")
        template = getattr(empty, name)
        values[name] = t = _tensor(state[name], f"{where}: state {name!r}", template.shape, template.dtype)
        if t.dtype.is_floating_point:           # the shaping potential
            if not bool(torch.isfinite(t).all()):
                _fail(where, f"state {name!r} holds a value that is not finite")
            continue
        if name in ranges:                      # pass_len, pass_pos and bags: checked below
            low, high = ranges[name]
            _in_range(t, f"{where}: state {name!r}", low, high)
    if r.signals and bool((values["phase"] == LAST_PHASE + 1).any()):     # (0..6 checked above: 5 is no phase here)
        _fail(where, f"state 'phase': value {LAST_PHASE + 1} outside 0..{LAST_PHASE} or {PHASE_SIGNAL}")
    _check_state_invariants(values, env, where)
    if isinstance(snapshot["steps"], bool) or not isinstance(snapshot["steps"], int) or snapshot["steps"] < 0:
        _fail(where, f"'steps' must be a count >= 0, got {snapshot['steps']!r}")
    _tensor(snapshot["generator"], f"{where}: 'generator'", tuple(env._generator.get_state().shape), torch.uint8)
    pool = snapshot["deal_pool"]
    if not isinstance(pool, torch.Tensor) or pool.dim() != 2:
        _fail(where, "'deal_pool' must be a (P, 5) int64 tensor")
    pool = _tensor(pool, f"{where}: 'deal_pool'", (pool.shape[0], NUM_SEATS + 1))
    check_deals(pool[:, :NUM_SEATS], f"{where}: 'deal_pool'", r)
    _in_range(pool[:, NUM_SEATS], f"{where}: 'deal_pool' dealers", 0, 3)
    ptr = _tensor(snapshot["pool_ptr"], f"{where}: 'pool_ptr'", ())
    _in_range(ptr, f"{where}: 'pool_ptr'", 0, pool.shape[0])
    queue = snapshot["deal_queue"]
    if not isinstance(queue, torch.Tensor) or queue.dim() != 3:
        _fail(where, f"'deal_queue' must be a ({B}, H, 4) int64 tensor")
    queue = _tensor(queue, f"{where}: 'deal_queue'", (B, queue.shape[1], NUM_SEATS))
    check_deals(queue, f"{where}: 'deal_queue'", r)
    scores = _tensor(snapshot["start_scores"], f"{where}: 'start_scores'", (B, 2))
    _in_range(scores, f"{where}: 'start_scores'", -MAX_ABS_SCORE, MAX_ABS_SCORE)
    bags = _tensor(snapshot["start_bags"], f"{where}: 'start_bags'", (B, 2))
    _in_range(bags, f"{where}: 'start_bags'", -(env.rules.bag_limit - 1), env.rules.bag_limit - 1)
    saved_mask = _tensor(snapshot["mask"], f"{where}: 'mask'", (B, env.num_actions), torch.bool)
    check_mask(env, VecState(**{k: v.to(env.device) for k, v in values.items()}), saved_mask, where)
    fixed = snapshot["fixed_start_dealer"]
    if fixed is not None:
        _in_range(_tensor(fixed, f"{where}: 'fixed_start_dealer'", (B,)), f"{where}: 'fixed_start_dealer'", 0, 3)


def _check_state_invariants(s: dict, env, where: str) -> None:
    """The invariants of a real position at every table."""
    hands, played = s["hands"], s["played"]
    deck = deck_mask(env.rules)
    held = hands[:, 0] | hands[:, 1] | hands[:, 2] | hands[:, 3]
    gone = played[:, 0] | played[:, 1] | played[:, 2] | played[:, 3]
    total = _popcount(hands).sum(1) + _popcount(played).sum(1)
    if bool(((held | gone) != deck).any() or (total != 4 * env.rules.deck_ranks).any()):
        table = int((((held | gone) != deck) | (total != 4 * env.rules.deck_ranks)).nonzero()[0, 0])
        _fail(where, f"table {table}: the hands and the cards played must be disjoint and make the deck "
                     f"({_deck_words(env.rules)})")
    queue_depth = s["pass_from"].shape[1]
    _in_range(s["pass_len"], f"{where}: state 'pass_len'", 0, queue_depth)
    if bool((s["pass_pos"] < 0).any() or (s["pass_pos"] > s["pass_len"]).any()):
        _fail(where, "state 'pass_pos' must lie in 0..pass_len")
    if bool((s["tricks_taken"].sum(1) != s["tricks_played"]).any()):
        _fail(where, "state 'tricks_played' must equal the sum of 'tricks_taken'")
    bag_limit = env.rules.bag_limit
    _in_range(s["bags"], f"{where}: state 'bags'", -(bag_limit - 1), bag_limit - 1)
    _check_trick(s, where)


def _check_trick(s: dict, where: str) -> None:
    """In the play phase, the trick in progress is consistent: as many cards as ``trick_len``,
    a winner among them when it has begun, and the right seat to act."""
    play = s["phase"] == PHASE_PLAY
    laid = (s["trick"] >= 0).sum(1)
    started = play & (s["trick_len"] > 0)
    seat_of_winner = s["win_seat"].clamp(0, NUM_SEATS - 1)
    winner_card = s["trick"].gather(1, seat_of_winner[:, None])[:, 0]
    bad = play & ((laid != s["trick_len"]) | (s["to_act"] != (s["leader"] + s["trick_len"]) % NUM_SEATS))
    bad |= started & ((s["win_seat"] < 0) | (s["win_card"] < 0) | (s["led_suit"] < 0) | (winner_card != s["win_card"]))
    bad |= play & (s["bids"] < 0).any(1)
    if bool(bad.any()):
        _fail(where, f"table {int(bad.nonzero()[0, 0])}: the trick in progress is inconsistent (cards laid, "
                     "trick_len, the winner and the seat to act must agree; every seat has bid)")


def check_mask(env, state: "VecState", saved_mask: torch.Tensor, where: str) -> None:
    """The legal actions the state implies are the saved ones, and every table has one."""
    try:
        mask = env.legal_mask(state).to("cpu")
    except (RuntimeError, IndexError) as exc:
        _fail(where, f"the state's legal actions cannot be computed ({str(exc).splitlines()[0]})")
    if not bool(mask.any(1).all()):
        _fail(where, f"table {int((~mask.any(1)).nonzero()[0, 0])} has no legal action")
    if not torch.equal(mask, saved_mask.to("cpu")):
        _fail(where, f"table {int((mask != saved_mask.to('cpu')).any(1).nonzero()[0, 0])}: the saved mask does not "
                     "match the legal actions of the saved state")
