"""The heuristic for a whole batch of observations at once, as torch tensor ops.

:func:`choose_actions` returns exactly what :func:`agents.heuristic.choose_action` returns at every
row, without a Python loop over the rows of four-player partnership games: the rules of the
heuristic's play (:func:`choose_cards`), bidding (:func:`choose_bids`), blind-nil decision and
passing are evaluated for every row (and every card), and the branch of each row is picked with
``torch.where`` (tested against the per-row heuristic on whole games in every partnership preset).
Games without partnerships (cutthroat, three players) go to the per-row Python heuristic. Under
``signals`` the signal rows send message 0 (the layout is found from the mask's width too), and
a short deck's rows count its tricks and only its cards as unseen (the layout's ``tricks_per_hand``).
It is ``HeuristicAgent.act_batch``'s path for the Python backend and for tensors on a GPU (the
native backend decides in C); CPU batches under ``MIN_BATCH`` rows go row by row (throughput:
``docs/agents.md``).

Cards are sets as (B, 52) bool tensors; the card choices of the heuristic, which compare tuples
(``min(cards, key=...)``), become one integer key per card whose order is the tuple's order.
The ruff chances are products of per-seat factors ``1 - (1 - share) ** cards`` read from a table
computed with Python floats, and the bidding's sums are the same float64 operations in the same
order as the Python code (its ``exp`` is Python's), so that every comparison falls as in Python.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional

import numpy as np
import torch

from spades_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS
from spades_env.game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, PHASE_BIDDING,
                             PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY, SIGNAL_ACTION_BASE)
from spades_env.observation import Layout, decode_observation, layout_for_size

from .heuristic_decisions import (ACE, BID_MARGIN, BLIND_NIL_CLOSE_TO_TARGET, BLIND_NIL_FAR_BEHIND, JACK, KING, NIL_EDGE,
                                  NIL_MAX_ESTIMATE, QUEEN, RUFF_RISK_LIMIT, SHORT_DECK_SCALE, SHORT_DECK_SHIFT, SPADES,
                                  TEN, UNCLAIMED_TRICKS, choose_action, deck_mask)

SEATS = 4                                        # batched: four-player partnership games only
TRICKS_PER_HAND = NUM_CARDS // SEATS             # of the full deck; a short deck's is its layout's
FIRST_SPADE = SPADES * NUM_RANKS                 # card ids of spades are FIRST_SPADE..51
BID_LEVELS = BLIND_NIL_ACTION - BID_ACTION_BASE  # bids 0..13
BLIND_FLAG = BID_LEVELS                          # in the observation's bids block, per seat: a one-hot bid, then this flag
BIG = 1 << 40
# Below this many rows a CPU batch goes row by row: the tensor ops cost about 5 ms whatever the
# batch, the per-row heuristic about 35 us a row (`spades-bench --heuristic`: break-even near 250).
MIN_BATCH = 256


@lru_cache(maxsize=None)
def _card_tables(device: torch.device) -> dict[str, torch.Tensor]:
    """Per card: suit, rank, spade flag; ``above[c, d]``: d is of c's suit and ranks above it."""
    card = torch.arange(NUM_CARDS, device=device)
    suit, rank = card // NUM_RANKS, card % NUM_RANKS
    same = suit[:, None] == suit[None, :]
    return {"card": card, "suit": suit, "rank": rank, "spade": suit == SPADES,
            "above": same & (rank[None, :] > rank[:, None]), "below": same & (rank[None, :] < rank[:, None]),
            "suit_of": torch.stack([suit == s for s in range(NUM_SUITS)])}          # (4, 52)


@lru_cache(maxsize=None)
def _no_void_factor(device: torch.device) -> torch.Tensor:
    """``factor[hand_size, unseen, in_suit]``: the chance that a seat holding ``hand_size`` of the
    ``unseen`` cards is *not* void in a suit with ``in_suit`` unseen cards, as
    ``_Table.ruff_chance`` computes it (Python floats, so the values are bit-identical)."""
    factors = []
    for size in range(NUM_RANKS + 1):
        for total in range(NUM_CARDS + 1):
            share = size / total if total else 1.0
            for in_suit in range(NUM_RANKS + 1):
                p_void = (1.0 - share) ** in_suit if share < 1.0 else (0.0 if in_suit else 1.0)
                factors.append(1.0 - p_void)
    table = torch.tensor(factors, dtype=torch.float64).reshape(NUM_RANKS + 1, NUM_CARDS + 1, NUM_RANKS + 1)
    return table.to(device)


@lru_cache(maxsize=None)
def _deck(tricks_per_hand: int, device: torch.device) -> torch.Tensor:
    """(52,) bool: the cards in play in a four-player deck of ``tricks_per_hand`` ranks a suit."""
    mask = deck_mask(SEATS, tricks_per_hand)
    return torch.tensor([bool(mask >> c & 1) for c in range(NUM_CARDS)], device=device)


def _layout(obs: torch.Tensor, layout: Optional[Layout]) -> Layout:
    """The rows' layout: the one given (``choose_actions`` finds it with the mask's width, which
    the size alone does not fix under ``signals``), else the one of their size."""
    return layout if layout is not None else layout_for_size(obs.shape[1])


def _has(cards: torch.Tensor) -> torch.Tensor:
    """Whether each row's set is not empty (a sum: faster than ``any`` on CPU)."""
    return cards.sum(1) > 0


def _lowest(cards: torch.Tensor) -> torch.Tensor:
    """The lowest card id of each row's set (rows must not be empty to be meaningful)."""
    card = torch.arange(NUM_CARDS, device=cards.device)
    return torch.where(cards, card, NUM_CARDS).min(1).values.clamp(max=NUM_CARDS - 1)


def _highest(cards: torch.Tensor) -> torch.Tensor:
    card = torch.arange(NUM_CARDS, device=cards.device)
    return torch.where(cards, card, -1).max(1).values.clamp(min=0)


def _argmin(key: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The card of smallest ``key`` among ``allowed`` (keys are unique per card)."""
    return torch.where(allowed, key, BIG).argmin(1)


def _argmax(key: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    return torch.where(allowed, key, -BIG).argmax(1)


def _pick(cards: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    return cards.gather(1, chosen[:, None])[:, 0]


def _suit_lengths(cards: torch.Tensor) -> torch.Tensor:
    """(B, 4): how many cards of each suit each row's set holds."""
    return cards.reshape(cards.shape[0], NUM_SUITS, NUM_RANKS).sum(2)


def _below_in_hand(hand: torch.Tensor) -> torch.Tensor:
    """(B, 52): for every card, how many cards of its suit below it the hand holds."""
    below = _card_tables(hand.device)["below"].to(torch.float32)
    return (hand.to(torch.float32) @ below.T).to(torch.int64)


def _most_dangerous(cards: torch.Tensor, below_in_hand: torch.Tensor) -> torch.Tensor:
    """``heuristic._most_dangerous``: the card of ``cards`` a ducking player most wants to be rid
    of, by ``_danger_for_nil`` (doubled: integers), then by card id."""
    tab = _card_tables(cards.device)
    danger2 = torch.where(tab["spade"], 2 * tab["rank"] + 10, 2 * tab["rank"] - 3 * below_in_hand.clamp(max=3))
    return _argmax((danger2 + 20) * 64 + tab["card"], cards)


class _Positions:
    """What the seat to act knows at each row (relative seats: 0 itself, 1 left, 2 partner,
    3 right), read from the observations, plus the per-card quantities the rules use."""

    def __init__(self, obs: torch.Tensor, legal: torch.Tensor, layout: Optional[Layout] = None) -> None:
        layout = _layout(obs, layout)
        dev = obs.device
        B = obs.shape[0]
        self.tables = tab = _card_tables(dev)

        def block(name: str, rows: int) -> torch.Tensor:
            b = layout.obs_blocks[name]
            part = obs[:, b.slice] > 0.5
            return part.reshape(B, rows, b.size // rows) if rows > 1 else part

        self.legal = legal
        self.hand = hand = block("hand", 1)
        played = block("played", 4)
        passed = block("passed", 1)
        trick = block("current_trick", 4)
        bids_block = block("bids", SEATS)[:, :, :BID_LEVELS]
        self.bids = bids = bids_block.to(torch.int64).argmax(2)                       # (B, 4)
        self.tricks = tricks = block("tricks_taken", 4).to(torch.int64).argmax(2)     # (B, 4)
        self.voids = block("voids", 4)                                                # (B, 4, 4)
        self.unseen = unseen = ~(hand | (played.sum(1) > 0) | passed) & _deck(layout.tricks_per_hand, dev)
        self.remaining = layout.tricks_per_hand - tricks.sum(1)
        in_trick = trick.any(2)                                                       # (B, 4)
        self.k = k = in_trick.sum(1)                                                  # cards in the trick
        self.hand_sizes = self.remaining[:, None] - in_trick.to(torch.int64)
        self.intact = (bids == 0) & (tricks == 0) & bids_block.any(2)
        seat = torch.arange(4, device=dev)
        self.after = (seat[None, :] >= 1) & (seat[None, :] <= 3 - k[:, None])        # still to play after us
        self.opps_after = self.after & (seat[None, :] != 2)
        # The k cards of the trick came from the k seats before ours (relative 4 - k .. 3): the
        # leader is 4 - k. The winner: the highest spade if any, else the highest of the led suit.
        leader = (4 - k) % 4
        trick_cards = torch.where(trick, tab["card"], -1).max(2).values               # (B, 4), -1: none
        led_card = trick_cards.gather(1, leader[:, None])[:, 0]
        self.led = torch.where(k > 0, led_card.div(NUM_RANKS, rounding_mode="floor"), -1)
        is_spade = trick_cards >= FIRST_SPADE
        led_suit_card = (trick_cards >= 0) & (trick_cards.div(NUM_RANKS, rounding_mode="floor") == self.led[:, None])
        any_spade = is_spade.any(1)
        strength = torch.where(any_spade[:, None], torch.where(is_spade, trick_cards, -1),
                               torch.where(led_suit_card, trick_cards, -1))
        self.win_card = strength.max(1).values                                        # -1 when leading
        self.win_seat = torch.where(k > 0, strength.argmax(1), -1)
        # Per card.
        above = tab["above"].to(torch.float32)
        self.higher_unseen = (unseen.to(torch.float32) @ above.T).to(torch.int64)     # (B, 52)
        self.lower_unseen = (unseen.to(torch.float32) @ tab["below"].to(torch.float32).T).to(torch.int64)
        self.master = self.higher_unseen == 0
        self.below_in_hand = _below_in_hand(hand)
        self.suit_length = _suit_lengths(hand)                                        # (B, 4)
        self.unseen_count = unseen.sum(1)
        self.unseen_in_suit = _suit_lengths(unseen)

    # ------------------------------------------------------------------ knowledge
    def ruff_chance(self, suit: torch.Tensor, seats: torch.Tensor) -> torch.Tensor:
        """``_Table.ruff_chance(suit, seats)`` per row: ``suit`` (B,), ``seats`` (B, 4) bool."""
        factor_table = _no_void_factor(self.unseen.device)
        suit = suit.clamp(min=0)
        voids = self.voids
        void_spade = voids[:, :, SPADES]
        void_suit = voids.gather(2, suit[:, None, None].expand(-1, 4, 1))[:, :, 0]
        counted = seats & ~void_spade
        in_suit = self.unseen_in_suit.gather(1, suit[:, None])[:, 0]
        none_void = torch.ones(suit.shape[0], dtype=torch.float64, device=suit.device)
        for s in range(4):
            factor = factor_table[self.hand_sizes[:, s].clamp(0, NUM_RANKS), self.unseen_count, in_suit.clamp(max=NUM_RANKS)]
            none_void = torch.where(counted[:, s], none_void * factor, none_void)
        chance = 1.0 - none_void
        chance = torch.where((counted & void_suit).any(1), torch.ones_like(chance), chance)
        return torch.where(self.unseen_in_suit[:, SPADES] > 0, chance, torch.zeros_like(chance))

    def holds(self) -> torch.Tensor:
        """``_Table.holds(c)`` for every card c (B, 52), at rows where the trick has begun."""
        tab = self.tables
        led = self.led.clamp(min=0)
        opps = self.opps_after
        voids = self.voids
        void_led = voids.gather(2, led[:, None, None].expand(-1, 4, 1))[:, :, 0]      # (B, 4)
        higher = self.higher_unseen > 0
        # Following suit: a higher card from an opponent who still has the suit, or a likely ruff.
        opp_has_led = (opps & ~void_led).any(1)
        ruff_led = self.ruff_chance(self.led, opps) >= RUFF_RISK_LIMIT
        fails_in_suit = (higher & opp_has_led[:, None]) | ((led != SPADES) & ruff_led)[:, None]
        # Ruffing: only a higher spade from a player void in the led suit (or likely to be) beats it.
        seat_mask = torch.eye(4, dtype=torch.bool, device=led.device)
        overruff = torch.zeros_like(opp_has_led)
        for s in (1, 3):
            alone = seat_mask[s].expand(led.shape[0], 4)
            risky = void_led[:, s] | (self.ruff_chance(self.led, alone) >= RUFF_RISK_LIMIT)
            overruff |= opps[:, s] & ~voids[:, s, SPADES] & risky
        fails_ruff = higher & overruff[:, None]
        in_led = tab["suit"][None, :] == led[:, None]
        fails = torch.where(in_led, fails_in_suit, fails_ruff)
        return ~fails | ~opps.any(1)[:, None]

    def wants_tricks(self) -> torch.Tensor:
        bids, tricks = self.bids, self.tricks
        counted = tricks * (bids != 0)                  # tricks of the seats that bid tricks (not nil)
        contract = bids[:, 0] + bids[:, 2]
        taken = counted[:, 0] + counted[:, 2]
        opp_need = bids[:, 1] + bids[:, 3] - counted[:, 1] - counted[:, 3]
        to_set = self.remaining - opp_need + 1
        masters = (self.hand & self.master).sum(1)
        return (taken < contract) | ((opp_need > 0) & (to_set <= masters + 1))

    # ------------------------------------------------------------------ card choices
    def throw_low(self, cards: torch.Tensor) -> torch.Tensor:
        first = _lowest(cards)
        in_led = self.tables["suit"][first] == self.led
        return torch.where(in_led, first, self.discard_low(cards))

    def discard_low(self, cards: torch.Tensor) -> torch.Tensor:
        tab = self.tables
        side = cards & ~tab["spade"]
        length = self.suit_length.gather(1, tab["suit"].expand(cards.shape[0], -1))
        key = (self.master.to(torch.int64) * 64 + 2 * tab["rank"] + length) * 64 + tab["card"]
        return torch.where(_has(side), _argmin(key, side), _lowest(cards))

    def most_dangerous(self, cards: torch.Tensor) -> torch.Tensor:
        return _most_dangerous(cards, self.below_in_hand)

    def duck(self, winners: torch.Tensor, losers: torch.Tensor) -> torch.Tensor:
        last = self.k == 3
        return torch.where(_has(losers), self.most_dangerous(losers),
                           torch.where(last, _highest(winners), _lowest(winners)))

    def lead_low(self) -> torch.Tensor:
        tab = self.tables
        higher, lower = self.higher_unseen, self.lower_unseen
        key = ((((higher == 0).to(torch.int64) * 16 + lower) * 2 + tab["spade"].to(torch.int64)) * 16
               + (15 - higher)) * 64 + tab["card"]
        return _argmin(key, self.legal)

    def lead_high(self) -> torch.Tensor:
        tab = self.tables
        side_master = (self.master & ~tab["spade"]).to(torch.int64)
        key = ((side_master * 2 + self.master.to(torch.int64)) * 16 + tab["rank"]) * 64 + (63 - tab["card"])
        return _argmax(key, self.legal)

    def lead_against_nil(self, nil_opps: torch.Tensor) -> torch.Tensor:
        tab = self.tables
        # A suit is "held" unless a nil opponent has shown a void in it.
        shown_void = (self.voids & nil_opps[:, :, None]).any(1)                       # (B, 4 suits)
        held = self.legal & ~shown_void.gather(1, tab["suit"].expand(self.legal.shape[0], -1))
        pool = torch.where(held.sum(1, keepdim=True) > 0, held, self.legal)
        key = (tab["rank"] * 2 + tab["spade"].to(torch.int64)) * 64 + tab["card"]
        return _argmin(key, pool)

    def lead_for_tricks(self) -> torch.Tensor:
        tab = self.tables
        legal, hand, voids = self.legal, self.hand, self.voids
        B = legal.shape[0]
        dev = legal.device
        opponents = torch.zeros(B, 4, dtype=torch.bool, device=dev)
        opponents[:, 1] = opponents[:, 3] = True
        # 1. A side-suit master while a ruff is unlikely: the safest, the lowest card on ties.
        risk = torch.stack([self.ruff_chance(torch.full((B,), s, device=dev), opponents) for s in range(3)]
                           + [torch.full((B,), 2.0, dtype=torch.float64, device=dev)], 1)      # (B, 4)
        card_risk = risk.gather(1, tab["suit"].expand(B, -1))
        eligible = legal & self.master & ~tab["spade"] & (card_risk < RUFF_RISK_LIMIT)
        least = torch.where(eligible, card_risk, torch.full_like(card_risk, 9.0)).min(1, keepdim=True).values
        safest = _lowest(eligible & (card_risk == least))
        choice = torch.where(_has(eligible), safest, -1)
        # 2. Top spades.
        spade_masters = legal & self.master & tab["spade"]
        choice = torch.where((choice < 0) & _has(spade_masters), _highest(spade_masters), choice)
        # 3. The partner's void (it ruffs), unless an opponent shows the same void.
        partner_ruffs = ~voids[:, 2, SPADES] & (self.unseen_in_suit[:, SPADES] > 0)
        good_suit = voids[:, 2, :3] & ~voids[:, 1, :3] & ~voids[:, 3, :3] & partner_ruffs[:, None]   # (B, 3)
        good_suit = torch.cat([good_suit, torch.zeros(B, 1, dtype=torch.bool, device=dev)], 1)
        into_void = legal & good_suit.gather(1, tab["suit"].expand(B, -1))
        choice = torch.where((choice < 0) & _has(into_void), _lowest(into_void), choice)
        # 4. Low from the best suit by a score, as in the Python code (same float operations).
        have_spades = _has(hand & tab["spade"])
        best = torch.full((B,), -1, dtype=torch.int64, device=dev)
        best_score = torch.full((B,), -1e9, dtype=torch.float64, device=dev)
        best_low_rank = torch.zeros(B, dtype=torch.int64, device=dev)
        for suit in range(4):
            in_suit = legal & tab["suit_of"][suit]
            present = _has(in_suit)
            length = self.suit_length[:, suit]
            low, top = _lowest(in_suit), _highest(in_suit)
            score = 0.3 * length.to(torch.float64)
            if suit == SPADES:
                score = torch.where(length * 2 < self.unseen_in_suit[:, SPADES], score - 1.0, score - (-0.5))
            else:
                top_master = _pick(self.master, top)
                score = torch.where((length <= 2) & have_spades & ~top_master, score + 2.0, score)
                score = torch.where(~top_master & (top % NUM_RANKS >= QUEEN) & (length >= 2), score - 2.0, score)
                ruffed = (voids[:, [1, 3], suit] & ~voids[:, [1, 3], SPADES]).any(1)
                score = torch.where(ruffed, score - 3.0, score)
            low_rank = low % NUM_RANKS
            better = present & ((best < 0) | (score > best_score) | ((score == best_score) & (low_rank < best_low_rank)))
            best = torch.where(better, low, best)
            best_score = torch.where(better, score, best_score)
            best_low_rank = torch.where(better, low_rank, best_low_rank)
        return torch.where(choice < 0, best, choice)

    def follow_for_tricks(self, winners: torch.Tensor, losers: torch.Tensor, holds: torch.Tensor) -> torch.Tensor:
        any_w, any_l = _has(winners), _has(losers)
        loose = torch.where(any_l[:, None], losers, winners)           # "losers or winners"
        throw = self.throw_low(loose)
        safe = winners & holds
        lowest_safe = _lowest(safe)
        holds_win = _pick(holds, self.win_card.clamp(min=0))
        partner_wins = torch.where(holds_win, throw, torch.where(_has(safe), lowest_safe, throw))
        lowest_win = _lowest(winners)
        partner_after = self.after[:, 2]
        we_win = torch.where(~self.opps_after.any(1), lowest_win,
                             torch.where(_has(safe), lowest_safe,
                                         torch.where(partner_after, throw, lowest_win)))
        other = torch.where(any_w, we_win, self.throw_low(losers))
        return torch.where(self.win_seat == 2, partner_wins, other)


def choose_cards(obs: torch.Tensor, legal: torch.Tensor, layout: Optional[Layout] = None) -> torch.Tensor:
    """:func:`agents.heuristic.choose_card` at every row: ``obs`` (B, 742) observations of
    four-player partnership games in the play phase, ``legal`` (B, 52) bool, at least one card;
    ``layout``: theirs (default: the layout of their size)."""
    t = _Positions(obs, legal, layout)
    tab = t.tables
    intact = t.intact
    my_nil, partner_nil = intact[:, 0], intact[:, 2]
    nil_opps = intact.clone()
    nil_opps[:, 0] = nil_opps[:, 2] = False
    any_nil_opp = nil_opps.any(1)
    wants = t.wants_tricks()
    leading = t.k == 0

    # Leading.
    low = t.lead_low()
    lead = torch.where(my_nil, low, torch.where(
        partner_nil, t.lead_high(), torch.where(
            any_nil_opp, t.lead_against_nil(nil_opps), torch.where(wants, t.lead_for_tricks(), low))))

    # Following.
    win_card = t.win_card.clamp(min=0)
    win_is_spade = t.win_card >= FIRST_SPADE
    beats = tab["above"][win_card] | (tab["spade"][None, :] & ~win_is_spade[:, None])
    winners = legal & beats
    losers = legal & ~beats
    any_w, any_l = _has(winners), _has(losers)
    holds = t.holds()
    duck = t.duck(winners, losers)
    result = torch.full_like(t.k, -1)
    decided = torch.zeros_like(leading)

    def take(condition: torch.Tensor, card: torch.Tensor) -> None:
        nonlocal result, decided
        now = condition & ~decided
        result = torch.where(now, card, result)
        decided = decided | condition

    played = t.k[:, None] >= 4 - torch.arange(4, device=obs.device)[None, :]        # seat s played to the trick
    played[:, 0] = False
    win_seat = t.win_seat
    take(my_nil, duck)
    # Cover a nil partner.
    led_void_partner = t.voids[:, 2].gather(1, t.led.clamp(min=0)[:, None])[:, 0]
    higher_out = _pick(t.higher_unseen, win_card) > 0
    take(partner_nil & played[:, 2] & (win_seat == 2) & any_w, _lowest(winners))
    winners_in_led = winners & (tab["suit"][None, :] == t.led[:, None])
    high_in_led = torch.where(_has(winners_in_led), _highest(winners_in_led), _lowest(winners))
    take(partner_nil & ~played[:, 2] & any_w & ~led_void_partner & higher_out, high_in_led)
    # Attack an opponent's nil.
    nil_winning = nil_opps.gather(1, win_seat.clamp(min=0)[:, None])[:, 0] & (win_seat >= 0)
    nil_to_play = (nil_opps & ~played).any(1)
    take(any_nil_opp & nil_winning & any_l,
         torch.where(wants, t.throw_low(losers), t.most_dangerous(losers)))
    take(any_nil_opp & ~nil_winning & (win_seat == 2) & nil_to_play & any_l, t.throw_low(losers))
    take(wants, t.follow_for_tricks(winners, losers, holds))
    take(torch.ones_like(decided), duck)
    return torch.where(leading, lead, result)


def _estimate_tricks(ranks: torch.Tensor, tricks_per_hand: int = TRICKS_PER_HAND) -> torch.Tensor:
    """:func:`agents.heuristic.estimate_tricks` of four-player hands: ``ranks`` (B, 4 suits, 13)
    bool, ``tricks_per_hand`` below 13 for a short deck. The same float64 operations in the same
    order as the Python code, so the sums are equal."""
    B, dev = ranks.shape[0], ranks.device
    f64 = torch.float64

    def c(value: float) -> torch.Tensor:            # a float64 constant (a bare 0.85 would be float32)
        return torch.tensor(value, dtype=f64, device=dev)

    zero = torch.zeros(B, dtype=f64, device=dev)
    total = torch.full((B,), -0.7, dtype=f64, device=dev)
    shortness = zero.clone()
    for suit in range(3):
        length = ranks[:, suit].sum(1)
        short = torch.tensor([2.0, 1.0, 0.4], dtype=f64, device=dev)[length.clamp(max=2)]
        shortness = shortness + torch.where(length < 3, short, zero)
        ace, king, queen = ranks[:, suit, ACE], ranks[:, suit, KING], ranks[:, suit, QUEEN]
        total = total + torch.where(ace, torch.where(length <= 5, c(1.0), c(0.85)), zero)
        king_value = torch.where(ace, c(0.67), torch.where(length >= 2, c(0.73), c(0.2)))
        total = total + torch.where(king, king_value, zero)
        total = total + torch.where(queen & (length >= 3), c(0.2), zero)
    spades = ranks[:, SPADES]
    count = spades.sum(1)
    held_above = torch.zeros(B, dtype=torch.int64, device=dev)     # j: our spades ranked above
    spare = torch.zeros(B, dtype=torch.int64, device=dev)
    for rank in range(12, -1, -1):
        here = spades[:, rank]
        higher_missing = (12 - rank) - held_above
        guards = count - 1 - held_above
        top = higher_missing <= 0
        second = ~top & (higher_missing == 1) & (guards >= 1)
        third = ~top & ~second & (higher_missing == 2) & (guards >= 2)
        value = torch.where(top, c(0.77), torch.where(second, c(0.6), c(0.4)))
        total = torch.where(here & (top | second | third), total + value, total)
        spare = spare + (here & ~(top | second | third)).to(torch.int64)
        held_above = held_above + here.to(torch.int64)
    ruffs = torch.minimum(spare.to(f64), shortness)
    long_trumps = torch.clamp(torch.minimum(spare.to(f64) - ruffs, count.to(f64) - 3.0), min=0.0)
    total = total + (0.51 * count.to(f64) + 0.36 * ruffs + 0.28 * long_trumps)
    if tricks_per_hand < TRICKS_PER_HAND:
        total = torch.clamp(SHORT_DECK_SCALE * total + SHORT_DECK_SHIFT, max=float(tricks_per_hand))
    return torch.clamp(total, min=0.0)


def _nil_log_odds(ranks: torch.Tensor, partner_bid: torch.Tensor) -> torch.Tensor:
    """The log-odds ``z`` of :func:`agents.heuristic.nil_success_chance` (partnership, four
    players; ``partner_bid`` -1 when not bid yet), same operations in the same order; NaN where
    the chance is 0 (a spade of queen or above)."""
    B, dev = ranks.shape[0], ranks.device
    f64 = torch.float64
    zero = torch.zeros(B, dtype=f64, device=dev)
    spades = ranks[:, SPADES]
    count = spades.sum(1)
    z = torch.full((B,), 1.68, dtype=f64, device=dev)
    held = [spades[:, r].to(f64) for r in (JACK, TEN, 7)]
    z = z - (0.46 * held[0] + 0.33 * held[1] + 0.21 * held[2])
    z = z - 0.63 * (count - 2).clamp(min=0).to(f64)
    lowest_spade = torch.where(spades, torch.arange(NUM_RANKS, device=dev), NUM_RANKS).min(1).values
    z = torch.where((count > 0) & (lowest_spade >= 6), z - 0.31, z)
    for suit in range(3):
        suit_ranks = ranks[:, suit]
        length = suit_ranks.sum(1)
        small = suit_ranks[:, :6].sum(1)
        for rank, weight, needed in ((TEN, 0.31, 1), (JACK, 0.42, 1), (QUEEN, 0.31, 2), (KING, 0.53, 2)):
            term = weight * (needed - small).clamp(min=0).to(f64)
            z = torch.where(suit_ranks[:, rank], z - term, z)
        ace_term = 0.29 * (1 + (3 - small).clamp(min=0)).to(f64)
        z = torch.where(suit_ranks[:, ACE], z - ace_term, z)
        lowest = torch.where(suit_ranks, torch.arange(NUM_RANKS, device=dev), NUM_RANKS).min(1).values
        present = length > 0
        z = torch.where(present, z - 0.12 * (lowest - 2).clamp(min=0).to(f64), z)
        z = torch.where(present, z + 0.18 * (length - 4).clamp(min=0).to(f64), z)
    z = torch.where(partner_bid > 0, z + 0.07 * (partner_bid - 2).to(f64), z)
    no_chance = spades[:, QUEEN:].any(1)
    return torch.where(no_chance, torch.full_like(zero, float("nan")), z)


def choose_bids(obs: torch.Tensor, mask: torch.Tensor, layout: Optional[Layout] = None) -> torch.Tensor:
    """:func:`agents.heuristic.choose_bid` at every row (four-player partnership games in the
    bidding phase; ``mask`` (B, 68 + signals) bool)."""
    layout = _layout(obs, layout)
    tricks_per_hand = layout.tricks_per_hand
    B, dev = obs.shape[0], obs.device
    f64 = torch.float64
    ranks = (obs[:, layout.obs_blocks["hand"].slice] > 0.5).reshape(B, NUM_SUITS, NUM_RANKS)
    bids_block = (obs[:, layout.obs_blocks["bids"].slice] > 0.5).reshape(B, SEATS, BID_LEVELS + 1)
    has_bid = bids_block[:, :, :BID_LEVELS].any(2)
    bids = torch.where(has_bid, bids_block[:, :, :BID_LEVELS].to(torch.int64).argmax(2), -1)   # -1: not yet
    partner_bid = bids[:, 2]
    estimate = _estimate_tricks(ranks, tricks_per_hand)
    partner_nil = partner_bid == 0
    adjust = torch.where(bids_block[:, 2, BLIND_FLAG], torch.tensor(1.0, dtype=f64, device=dev),
                         torch.tensor(-0.3, dtype=f64, device=dev))
    estimate = torch.where(partner_nil, estimate + adjust, estimate)
    # Nil: its chance (a logistic of z, computed with Python's exp as the heuristic does).
    z = _nil_log_odds(ranks, partner_bid).tolist()
    chance = torch.tensor([0.0 if math.isnan(v) else 1.0 / (1.0 + math.exp(-v)) for v in z], dtype=f64, device=dev)
    nil_value = 200.0 * chance - 100.0 - 10.0 * torch.clamp(estimate, min=1.0)
    prefers_nil = (estimate <= NIL_MAX_ESTIMATE) & (nil_value >= NIL_EDGE)
    nil = mask[:, BID_ACTION_BASE] & ~partner_nil & prefers_nil
    # Otherwise the nearest legal bid to the estimate (the last bidder takes one more when the
    # table leaves tricks unclaimed), the lower one on a tie.
    desired = torch.clamp(torch.floor(estimate + 0.5 - BID_MARGIN), min=1).to(torch.int64)
    others_done = has_bid[:, 1:].all(1)
    unclaimed = others_done & (bids[:, 1:].clamp(min=0).sum(1) + desired <= tricks_per_hand - UNCLAIMED_TRICKS)
    desired = desired + unclaimed.to(torch.int64)
    levels = torch.arange(1, BID_LEVELS, device=dev)
    legal_levels = mask[:, BID_ACTION_BASE + 1:BID_ACTION_BASE + BID_LEVELS]
    key = (levels[None, :] - desired[:, None]).abs() * 2 + (levels[None, :] > desired[:, None]).to(torch.int64)
    nearest = BID_ACTION_BASE + 1 + _argmin(key, legal_levels)
    bid = torch.where(_has(legal_levels), nearest, torch.full_like(nearest, BID_ACTION_BASE))
    return torch.where(nil, torch.full_like(bid, BID_ACTION_BASE), bid)


def choose_blind_nils(obs: torch.Tensor, mask: torch.Tensor, layout: Optional[Layout] = None) -> torch.Tensor:
    """:func:`agents.heuristic.choose_blind_nil` at every row (partnership blind-nil decisions)."""
    layout = _layout(obs, layout)
    B = obs.shape[0]
    game = obs[:, layout.obs_blocks["game"].slice].double()
    target = torch.round(game[:, 0] * 1000.0)
    sides = obs[:, layout.obs_blocks["sides"].slice].double().reshape(B, 2, -1)
    scores = torch.round(sides[:, :, 0] * target[:, None])           # as decode_observation reads them
    partner_nil = (obs[:, layout.obs_blocks["bids"].slice] > 0.5).reshape(B, SEATS, BID_LEVELS + 1)[:, 2, 0]
    deficit = scores[:, 1] - scores[:, 0]
    far_behind = deficit >= BLIND_NIL_FAR_BEHIND
    about_to_lose = (deficit >= 100) & (scores[:, 1] >= target - BLIND_NIL_CLOSE_TO_TARGET)
    blind = mask[:, BLIND_NIL_ACTION] & ~partner_nil & (far_behind | about_to_lose)
    return torch.where(blind, BLIND_NIL_ACTION, LOOK_ACTION)


def choose_passes(obs: torch.Tensor, mask: torch.Tensor, layout: Optional[Layout] = None) -> torch.Tensor:
    """:func:`agents.heuristic.choose_pass` at every row (partnership passing after a blind nil)."""
    layout = _layout(obs, layout)
    B = obs.shape[0]
    tab = _card_tables(obs.device)
    legal = mask[:, :NUM_CARDS]
    hand = obs[:, layout.obs_blocks["hand"].slice] > 0.5
    we_bid_blind = (obs[:, layout.obs_blocks["bids"].slice] > 0.5).reshape(B, SEATS, BID_LEVELS + 1)[:, 0, BLIND_FLAG]
    dangerous = _most_dangerous(legal, _below_in_hand(hand))
    length = _suit_lengths(hand).gather(1, tab["suit"].expand(B, -1))
    key = ((tab["rank"] + 4 * tab["spade"].to(torch.int64)) * 16 + length) * 64 + tab["card"]
    low = _argmin(key, legal)
    return torch.where(we_bid_blind, dangerous, low)


def choose_actions(obs: torch.Tensor, mask: torch.Tensor, conventions=None, min_batch: int = MIN_BATCH) -> torch.Tensor:
    """:func:`agents.heuristic.choose_action` at every row of ``obs`` (B, obs_size) and ``mask``
    (B, 68 + signals): the rows of partnership games batched by phase (in the signal phase:
    message 0), those of games without partners
    by the per-row heuristic, and so are all rows of a CPU batch smaller than ``min_batch``
    (there the tensor ops' fixed cost is more than the rows' Python cost). The tensor ops are
    the standard conventions' play; other ``conventions`` (:mod:`agents.heuristic_conventions`)
    go row by row (the native backend decides them in C at full speed)."""
    mask = mask.bool()
    B = obs.shape[0]
    layout = layout_for_size(obs.shape[1], signals=mask.shape[1] - NUM_ACTIONS)
    if conventions is not None and not conventions.is_standard:
        return _row_by_row(obs, mask, conventions)
    if B == 0 or layout.n != 4 or layout.num_sides != 2 or (B < min_batch and obs.device.type == "cpu"):
        return _row_by_row(obs, mask)
    actions = torch.zeros(B, dtype=torch.int64, device=obs.device)
    batched = torch.zeros(B, dtype=torch.bool, device=obs.device)
    phase = obs[:, layout.obs_blocks["phase"].slice].argmax(1)
    single = mask.sum(1) == 1
    only = mask.to(torch.int64).argmax(1)
    if "signal_phase" in layout.obs_blocks:        # the free signal: message 0 (choose_message), no phase cell set
        signalling = (obs[:, layout.obs_blocks["signal_phase"].offset] > 0.5) & mask[:, SIGNAL_ACTION_BASE:].any(1)
        rows = signalling.nonzero()[:, 0]
        if rows.numel():
            batched[rows] = True
            actions[rows] = SIGNAL_ACTION_BASE + mask[rows, SIGNAL_ACTION_BASE:].to(torch.int64).argmax(1)
        phase = torch.where(signalling, -1, phase)
    for code, choose in ((PHASE_PLAY, choose_cards), (PHASE_BIDDING, choose_bids),
                         (PHASE_BLIND_DECISION, choose_blind_nils), (PHASE_PASSING, choose_passes)):
        rows = ((phase == code) & mask.any(1)).nonzero()[:, 0]
        if rows.numel():
            batched[rows] = True
            if code == PHASE_PLAY:
                chosen = choose(obs[rows].float(), mask[rows, :NUM_CARDS], layout)
            else:
                chosen = choose(obs[rows].float(), mask[rows], layout)
            legal = mask[rows].gather(1, chosen[:, None])[:, 0]
            lowest = mask[rows].to(torch.int64).argmax(1)        # never needed: never play illegally
            chosen = torch.where(legal, chosen, lowest)
            actions[rows] = torch.where(single[rows], only[rows], chosen)
    others = (~batched).nonzero()[:, 0]
    if others.numel():              # rows without a legal action: the per-row heuristic raises, as act does
        actions[others] = _row_by_row(obs[others], mask[others])
    return actions


def _row_by_row(obs: torch.Tensor, mask: torch.Tensor, conventions=None) -> torch.Tensor:
    """The per-row heuristic at every row (as ``HeuristicAgent.act`` does it)."""
    obs_np, mask_np = obs.float().cpu().numpy(), mask.cpu().numpy()
    layout = layout_for_size(obs_np.shape[1], signals=mask_np.shape[1] - NUM_ACTIONS) if len(obs_np) else None
    chosen = []
    for o, m in zip(obs_np, mask_np):
        legal = np.flatnonzero(m).tolist()
        chosen.append(legal[0] if len(legal) == 1 else choose_action(decode_observation(o, layout), legal, None,
                                                                     conventions))
    return torch.tensor(chosen, dtype=torch.int64, device=obs.device)
