"""The heuristic's parameters and decisions: pure functions of what a seat may know (an
:class:`~spades_env.ObservationView`) and its legal actions, read by the player
(:mod:`agents.heuristic`), its torch twin (:mod:`agents.batched_heuristic`) and the search's
play-outs. They work on card bitmasks and plain lists, which keeps a decision to microseconds;
the strategy is described in :mod:`agents.heuristic` and ``docs/agents.md``. Every decision
function takes ``conventions`` (``None``: standard); the rules that change with them are marked
"convention" below.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence, Union

import numpy as np

from spades_env.cards import cards_to_mask, mask_to_cards
from spades_env.game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, PHASE_BIDDING,
                             PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY, PHASE_SIGNAL, SIGNAL_ACTION_BASE)
from spades_env.observation import ObservationView
from spades_env.rules import SIGNALS_LIMIT

from .heuristic_conventions import STANDARD_CONVENTIONS, Conventions, optional_conventions

__all__ = ["choose_action", "choose_bid", "choose_blind_nil", "choose_pass", "choose_message",
           "choose_card", "estimate_tricks", "nil_success_chance", "only_bags_left", "deck_mask"]

SPADES = 3
_SUIT_MASKS = tuple(0x1FFF << (13 * s) for s in range(4))
_SPADE_MASK = _SUIT_MASKS[SPADES]
# For each card: the cards of its suit ranked above it / below it.
_ABOVE = tuple(_SUIT_MASKS[c // 13] & ~((2 << c) - 1) for c in range(52))
_BELOW = tuple(_SUIT_MASKS[c // 13] & ((1 << c) - 1) for c in range(52))

ACE, KING, QUEEN, JACK, TEN = 12, 11, 10, 9, 8

# Tunable thresholds (documented where they are used).
BID_MARGIN = 0.5           # bid round(estimate - BID_MARGIN): being set costs more than a bag
NIL_MAX_ESTIMATE = 3.0     # never nil a hand expected to take more tricks than this
NIL_EDGE = 5.0             # points a nil must be expected to beat a plain bid by
UNCLAIMED_TRICKS = 3       # the last bidder adds a trick when the bids leave this many unclaimed
RUFF_RISK_LIMIT = 0.3      # a side-suit master is "safe" while the chance of a ruff is below this
BLIND_NIL_FAR_BEHIND = 200
BLIND_NIL_CLOSE_TO_TARGET = 100
# Conventions (agents/heuristic_conventions.py; the same numbers in heuristic.c).
BID_ADJUSTMENT = {"standard": 0, "conservative": -1, "aggressive": 1}   # tricks added to the plain bid
EAGER_NIL_MAX_ESTIMATE = 4.0   # nil=eager: nils hands expected to take up to this many tricks
EAGER_NIL_EDGE = -20.0         # nil=eager: and accepts a nil expected to score this much below a bid
SIGNAL_HIGH_RANK = 6           # discards: a card of this rank (the eight) or above is "high", below it "low"

# A short deck (deck_ranks < 13): the full deck's count is scaled to the hand's tricks, fitted
# likewise to this agent's own play (experiments/2026-12-02-short-deck-heuristic/README.md).
SHORT_DECK_SCALE = 0.89
SHORT_DECK_SHIFT = -0.29

Legal = Union[int, Iterable[int]]


def _legal_mask(legal: Legal) -> int:
    """Legal actions as a bitmask over action ids (accepts a bitmask, a list or an array)."""
    if isinstance(legal, int):
        return legal
    if (isinstance(legal, np.ndarray) and legal.dtype != np.int64
            and NUM_ACTIONS <= legal.size <= NUM_ACTIONS + SIGNALS_LIMIT):
        legal = np.flatnonzero(legal)          # an action mask given as is (68 + signals long)
    return cards_to_mask(int(a) for a in legal)


def deck_mask(players: int, tricks_per_hand: int) -> int:
    """The cards in play as a bitmask: four players hold the ``tricks_per_hand`` highest ranks
    of every suit (13: the whole deck; fewer: a short deck), three players the deck without
    the two of clubs."""
    if players == 3:
        return (1 << 52) - 2
    lowest = 13 - tricks_per_hand
    return sum(((1 << tricks_per_hand) - 1) << (13 * s + lowest) for s in range(4))


# ====================================================================== top level
def choose_action(view: ObservationView, legal_actions: Legal, rng=None,
                  conventions: Optional[Conventions] = None) -> int:
    """The heuristic's action for ``view`` (what the seat may know) among ``legal_actions``
    (a list of action ids, or a bitmask over them as ``SpadesGame.legal_mask()`` returns) under
    ``conventions`` (``None``: standard). ``rng`` is accepted for callers that pass one; the
    decisions do not use it."""
    legal = _legal_mask(legal_actions)
    if not legal:
        raise ValueError("choose_action: no legal action (is it this seat's turn?)")
    if legal & (legal - 1) == 0:                     # exactly one legal action
        return legal.bit_length() - 1
    phase = view.phase
    if phase == PHASE_SIGNAL:
        return choose_message(legal)
    if phase == PHASE_PLAY:
        action = choose_card(view, legal, conventions=conventions)
    elif phase == PHASE_BIDDING:
        action = choose_bid(view, legal, conventions)
    elif phase == PHASE_PASSING:
        action = choose_pass(view, legal)
    elif phase == PHASE_BLIND_DECISION:
        action = choose_blind_nil(view, legal, conventions)
    else:
        action = (legal & -legal).bit_length() - 1
    if not legal >> action & 1:                      # never happens; never play illegally
        action = (legal & -legal).bit_length() - 1
    return action


# ====================================================================== the free signal
def choose_message(legal: Legal) -> int:
    """Message 0 (action 68), the lowest legal message otherwise: the heuristic gives the free
    signal no meaning, so it sends the same message with every hand and reads none."""
    legal = _legal_mask(legal) >> SIGNAL_ACTION_BASE
    if not legal:
        raise ValueError("choose_message: no message is legal (is this the signal phase?)")
    return SIGNAL_ACTION_BASE + (legal & -legal).bit_length() - 1


# ====================================================================== bidding
def estimate_tricks(hand: Sequence[int], players: int = 4, tricks_per_hand: Optional[int] = None) -> float:
    """Expected tricks of a hand (list of card ids) played for tricks.

    A linear count whose weights were fitted to this agent's own full-effort play (6,000
    deals): side-suit aces, kings and queens by what guards them, spade honours that will be
    (or are half-way to being) the highest spade left, every spade's length value, and small
    spades that can ruff a void, singleton or doubleton or win as long trumps. A short deck
    (four players, ``tricks_per_hand`` below 13: the ranks from ``13 - tricks_per_hand`` up)
    counts the same cards, its ranks read from the top as they are (an ace is an ace), then
    scales the count to the hand's tricks (SHORT_DECK_SCALE, SHORT_DECK_SHIFT) and caps it at
    the tricks there are."""
    by_suit: list[list[int]] = [[], [], [], []]
    for c in hand:
        by_suit[c // 13].append(c % 13)
    total = -0.7                 # the fitted constant (a share of the tricks nobody counts on)
    shortness = 0.0              # ruffing chances offered by short side suits
    for suit in range(3):
        ranks = by_suit[suit]
        length = len(ranks)
        shortness += (2.0, 1.0, 0.4)[length] if length < 3 else 0.0
        has_ace, has_king = ACE in ranks, KING in ranks
        if has_ace:
            total += 1.0 if length <= 5 else 0.85
        if has_king:
            total += 0.67 if has_ace else (0.73 if length >= 2 else 0.2)
        if QUEEN in ranks and length >= 3:
            total += 0.2
    spades = sorted(by_suit[SPADES], reverse=True)
    count = len(spades)
    spare = 0                    # small spades, free to ruff or to win as long trumps
    for j, rank in enumerate(spades):
        higher_missing = (12 - rank) - j      # higher spades we do not hold
        guards = count - 1 - j                # our smaller spades
        if higher_missing <= 0:
            total += 0.77                     # a top spade
        elif higher_missing == 1 and guards >= 1:
            total += 0.6                      # a guarded second-best spade
        elif higher_missing == 2 and guards >= 2:
            total += 0.4
        else:
            spare += 1
    ruffs = min(float(spare), shortness)
    long_trumps = max(0.0, min(spare - ruffs, count - 3.0))
    total += 0.51 * count + 0.36 * ruffs + 0.28 * long_trumps
    if players == 3:
        total = 1.08 * total + 0.7   # 17 cards each: honours and length win more (fitted likewise)
    elif tricks_per_hand is not None and tricks_per_hand < 13:
        total = min(SHORT_DECK_SCALE * total + SHORT_DECK_SHIFT, float(tricks_per_hand))
    return max(0.0, total)


def nil_success_chance(hand: Sequence[int], partner_bid: Optional[int] = None,
                       players: int = 4, partnership: bool = True) -> float:
    """The chance that this agent keeps a nil with this hand: a logistic model fitted to 7,000
    nils forced on the weakest hand of self-play deals. Risks: the jack, ten and nine of
    spades, more than two spades, no small spade; side-suit honours short of small cards
    (2..7) to duck with (an ace needs three, a king or queen two, a jack or ten one), suits
    whose lowest card is high. A partner who bid more tricks covers better. Without a partner
    to cover (cutthroat) the log-odds drop by 1.35, with 17 cards each (three players) by 3.15
    (fitted the same way): nil is then rarely worth it."""
    by_suit: list[list[int]] = [[], [], [], []]
    for c in hand:
        by_suit[c // 13].append(c % 13)
    spades = by_suit[SPADES]
    if any(rank >= QUEEN for rank in spades):
        return 0.0
    z = 1.68
    z -= 0.46 * spades.count(JACK) + 0.33 * spades.count(TEN) + 0.21 * spades.count(7)
    z -= 0.63 * max(0, len(spades) - 2)
    if spades and min(spades) >= 6:
        z -= 0.31                                   # no spade below the eight
    for suit in range(3):
        ranks = by_suit[suit]
        if not ranks:
            continue
        small = sum(1 for r in ranks if r <= 5)
        for rank in ranks:
            if rank == ACE:
                z -= 0.29 * (1 + max(0, 3 - small))
            elif rank == KING:
                z -= 0.53 * max(0, 2 - small)
            elif rank == QUEEN:
                z -= 0.31 * max(0, 2 - small)
            elif rank == JACK:
                z -= 0.42 * max(0, 1 - small)
            elif rank == TEN:
                z -= 0.31 * max(0, 1 - small)
        z -= 0.12 * max(0, min(ranks) - 2)          # the suit's lowest card is not low
        z += 0.18 * max(0, len(ranks) - 4)
    if partner_bid:
        z += 0.07 * (partner_bid - 2)
    if players == 3:
        z -= 3.15
    elif not partnership:
        z -= 1.35
    return 1.0 / (1.0 + math.exp(-z))


def _prefers_nil(hand: Sequence[int], estimate: float, partner_bid: Optional[int],
                 players: int = 4, partnership: bool = True, nil: str = "standard") -> bool:
    """Nil when its expected value (+-100) beats bidding the hand's tricks (about ten points a
    trick) by NIL_EDGE. Convention nil=never: never; nil=eager: up to EAGER_NIL_MAX_ESTIMATE
    tricks and EAGER_NIL_EDGE."""
    if nil == "never":
        return False
    eager = nil == "eager"
    if estimate > (EAGER_NIL_MAX_ESTIMATE if eager else NIL_MAX_ESTIMATE):
        return False
    chance = nil_success_chance(hand, partner_bid, players, partnership)
    return 200.0 * chance - 100.0 - 10.0 * max(1.0, estimate) >= (EAGER_NIL_EDGE if eager else NIL_EDGE)


def choose_bid(view: ObservationView, legal: Legal, conventions: Optional[Conventions] = None) -> int:
    """The bid action (52 + bid; 52 is nil) for the seat's hand among the legal bids. Convention
    bidding: conservative bids a trick less than standard, aggressive one more (at least 1)."""
    conventions = optional_conventions(conventions)
    legal = _legal_mask(legal)
    hand = view.hand
    tricks_in_hand = view.tricks_per_hand
    estimate = estimate_tricks(hand, view.players, tricks_in_hand)
    partner = 2 if view.partnerships else None
    partner_bid = view.bids[partner] if partner is not None else None
    if partner_bid == 0:
        estimate += 1.0 if view.blind[partner] else -0.3   # a blind nil passes us its high cards
    nil_legal = legal >> BID_ACTION_BASE & 1
    if (nil_legal and partner_bid != 0
            and _prefers_nil(hand, estimate, partner_bid, view.players, view.partnerships, conventions.nil)):
        return BID_ACTION_BASE
    desired = max(1, math.floor(estimate + 0.5 - BID_MARGIN) + BID_ADJUSTMENT[conventions.bidding])
    others = view.bids[1:]
    if all(b is not None for b in others) and sum(others) + desired <= tricks_in_hand - UNCLAIMED_TRICKS:
        desired += 1            # the last bidder: the table leaves tricks unclaimed, take one more
    best, best_key = None, None
    for bid in range(1, 14):
        if legal >> (BID_ACTION_BASE + bid) & 1:
            key = (abs(bid - desired), bid > desired)   # nearest; on a tie the lower bid
            if best_key is None or key < best_key:
                best, best_key = bid, key
    if best is None:                                    # only nil is legal
        return BID_ACTION_BASE
    return BID_ACTION_BASE + best


def choose_blind_nil(view: ObservationView, legal: Legal, conventions: Optional[Conventions] = None) -> int:
    """66 (blind nil) only when far behind, else 67 (look at the cards). The engine offers the
    choice only while the side trails by the rules' deficit; we take it when it trails by
    BLIND_NIL_FAR_BEHIND, or by 100 while the opponents are within BLIND_NIL_CLOSE_TO_TARGET
    of the target, and never beside a partner's nil (the side needs someone to take tricks).
    Convention nil=never: never."""
    legal = _legal_mask(legal)
    if not legal >> BLIND_NIL_ACTION & 1:
        return LOOK_ACTION
    if conventions is not None and conventions.nil == "never":
        return LOOK_ACTION
    if view.partnerships and view.bids[2] == 0:
        return LOOK_ACTION
    own, other = view.scores[0], view.scores[1]
    deficit = other - own
    far_behind = deficit >= BLIND_NIL_FAR_BEHIND
    about_to_lose = deficit >= 100 and other >= view.target_score - BLIND_NIL_CLOSE_TO_TARGET
    return BLIND_NIL_ACTION if (far_behind or about_to_lose) else LOOK_ACTION


# ====================================================================== passing
def choose_pass(view: ObservationView, legal: Legal) -> int:
    """One card to pass after a blind nil: low side cards to the blind-nil partner, the most
    dangerous cards back from the blind-nil bidder."""
    legal = _legal_mask(legal) & ((1 << 52) - 1)
    cards = mask_to_cards(legal)
    hand = cards_to_mask(view.hand)
    if view.blind[0]:                            # we bid blind nil: pass our dangerous cards back
        return max(cards, key=lambda c: (_danger_for_nil(c, hand), c))
    # We pass to our blind-nil partner: our lowest cards, side suits first (we keep spades to
    # ruff), from the shortest suit on ties (a void to ruff in later).
    return min(cards, key=lambda c: (c % 13 + (4 if c >= 39 else 0),
                                     (hand & _SUIT_MASKS[c // 13]).bit_count(), c))


def _danger_for_nil(card: int, hand: int) -> float:
    """How likely a card is to win a trick for a nil bidder: rank, spades worse, small cards
    of the same suit (to duck with) make it safer."""
    rank = card % 13
    if card >= 39:
        return rank + 5.0
    below = (hand & _BELOW[card]).bit_count()
    return rank - 1.5 * min(below, 3)


# ====================================================================== play
class _Table:
    """What the seat knows about the current trick and hand, as bitmasks and small lists."""

    __slots__ = ("n", "hand", "legal", "unseen", "trick", "led", "win_card", "win_seat",
                 "after", "opps_after", "partner", "voids", "hand_sizes", "remaining",
                 "bids", "tricks", "played", "conventions")

    def __init__(self, view: ObservationView, legal: int, conventions: Conventions = STANDARD_CONVENTIONS) -> None:
        self.conventions = conventions
        self.played = view.played
        n = self.n = view.players
        hand = 0
        for c in view.hand:
            hand |= 1 << c
        self.hand = hand
        self.legal = legal & ((1 << 52) - 1)
        seen = hand
        for cards in view.played:
            for c in cards:
                seen |= 1 << c
        unseen = deck_mask(n, view.tricks_per_hand) & ~seen
        partner = self.partner = 2 if (view.partnerships and n == 4) else None
        if partner is not None and view.passed:
            unseen &= ~cards_to_mask(view.passed)      # cards we passed sit in the partner's hand
        self.unseen = unseen
        trick = self.trick = view.current_trick
        tricks = self.tricks = view.tricks_taken
        self.bids = view.bids
        self.remaining = view.tricks_per_hand - sum(tricks)
        if trick:
            self.led = trick[0][1] // 13
            win_seat, win_card = trick[0]
            for seat, c in trick:
                if (c // 13 == win_card // 13 and c > win_card) or (c >= 39 and win_card < 39):
                    win_seat, win_card = seat, c
            self.win_seat, self.win_card = win_seat, win_card
        else:
            self.led = None
            self.win_seat = self.win_card = None
        self.after = after = list(range(1, n - len(trick)))
        self.opps_after = [s for s in after if s != partner]
        self.voids = view.voids
        # Seats still to play hold `remaining` cards; those that played to this trick one fewer.
        played_now = {s for s, _ in trick}
        self.hand_sizes = [self.remaining - (1 if s in played_now else 0) for s in range(n)]

    # ------------------------------------------------------------------ knowledge
    def ruff_chance(self, suit: int, seats: Iterable[int]) -> float:
        """The chance that one of ``seats`` (opponents still to play) is void in ``suit`` and
        holds a spade to ruff with."""
        unseen = self.unseen
        spades_out = unseen & _SPADE_MASK
        if not spades_out:
            return 0.0
        in_suit = (unseen & _SUIT_MASKS[suit]).bit_count()
        total = unseen.bit_count()
        none_void = 1.0
        for s in seats:
            voids = self.voids[s]
            if SPADES in voids:
                continue
            if suit in voids:
                return 1.0
            share = self.hand_sizes[s] / total if total else 1.0
            p_void = (1.0 - share) ** in_suit if share < 1.0 else (0.0 if in_suit else 1.0)
            none_void *= 1.0 - p_void
        return 1.0 - none_void

    def holds(self, card: int) -> bool:
        """Would ``card``, if it were winning the trick now, stay winning against the opponents
        still to play (no higher card of its suit can appear, no likely ruff)?"""
        opps = self.opps_after
        if not opps:
            return True
        suit = card // 13
        led = suit if self.led is None else self.led
        higher = self.unseen & _ABOVE[card]
        voids = self.voids
        if suit == led:
            if higher and any(led not in voids[o] for o in opps):
                return False
            if suit != SPADES and self.ruff_chance(suit, opps) >= RUFF_RISK_LIMIT:
                return False
            return True
        # A ruff of a side suit: only a higher spade from a player void in the led suit beats it.
        if not higher:
            return True
        for o in opps:
            if SPADES not in voids[o] and (led in voids[o] or self.ruff_chance(led, (o,)) >= RUFF_RISK_LIMIT):
                return False
        return True

    def is_master(self, card: int) -> bool:
        """No unseen card of its suit ranks above it."""
        return not self.unseen & _ABOVE[card]

    def intact_nil(self, seat: int) -> bool:
        """The seat bid nil and has taken no trick yet (its nil can still be kept or broken)."""
        return self.bids[seat] == 0 and self.tricks[seat] == 0

    def wants_tricks(self) -> bool:
        """Does the side still need tricks (its contract), or is a set of the opponents in reach?"""
        bids, tricks = self.bids, self.tricks
        team = (0, 2) if self.partner is not None else (0,)
        contract = sum(bids[s] for s in team if bids[s])
        taken = sum(tricks[s] for s in team if bids[s])
        if taken < contract:
            return True
        if self.partner is None:
            return False
        opp_contract = sum(bids[s] for s in (1, 3) if bids[s])
        opp_taken = sum(tricks[s] for s in (1, 3) if bids[s])
        opp_need = opp_contract - opp_taken
        if opp_need <= 0:
            return False
        to_set = self.remaining - opp_need + 1      # tricks we must take to set them
        masters = sum(1 for c in mask_to_cards(self.hand) if self.is_master(c))
        return to_set <= masters + 1


def only_bags_left(view: ObservationView, legal: Legal, no_set_possible: bool = False) -> bool:
    """A card decision where, as the heuristic reads the table, only bags are left to play for: the
    seat's side has made its contract, no set of the other side is in reach and no seat's nil is
    still intact (covering or breaking one is another matter). Where this holds the heuristic
    ducks; ``spades-label --only ducking`` keeps its labels there. With ``no_set_possible`` the
    stricter test: both sides are past their contracts (every trick left is a bag)."""
    if view.phase != PHASE_PLAY or not view.partnerships:
        return False
    table = _Table(view, _legal_mask(legal))
    if any(table.intact_nil(seat) for seat in range(table.n)):
        return False
    if no_set_possible:
        return all(sum(table.tricks[s] for s in side if table.bids[s]) >= sum(table.bids[s] for s in side)
                   for side in ((0, 2), (1, 3)))
    return not table.wants_tricks()


def choose_card(view: ObservationView, legal: Legal, rng=None, conventions: Optional[Conventions] = None) -> int:
    """The card to play (see the module docstring for the strategy). Convention cover=none plays
    as if the partner had not bid nil; cover=strong leads a suit the nil partner has shown void
    in first (it sheds its dangerous cards on it)."""
    conventions = optional_conventions(conventions)
    t = _Table(view, _legal_mask(legal), conventions)
    cards = mask_to_cards(t.legal)
    if len(cards) == 1:
        return cards[0]
    partner = t.partner
    my_nil = t.intact_nil(0)
    partner_nil = partner is not None and t.intact_nil(partner) and conventions.cover != "none"
    nil_opps = [s for s in range(1, t.n) if s != partner and t.intact_nil(s)]
    if not t.trick:
        if my_nil:
            return _lead_low(t, cards)
        if partner_nil:
            if conventions.cover == "strong":
                shed = [c for c in cards if c // 13 in t.voids[partner]]
                if shed:
                    return max(shed, key=lambda c: (c % 13, -c))
            return _lead_high(t, cards)
        if nil_opps:
            return _lead_against_nil(t, cards, nil_opps)
        return _lead_for_tricks(t, cards) if t.wants_tricks() else _lead_low(t, cards)

    win_card = t.win_card
    if win_card >= 39:
        winners_mask = t.legal & _ABOVE[win_card]
    else:
        winners_mask = t.legal & (_ABOVE[win_card] | _SPADE_MASK)
    winners = mask_to_cards(winners_mask)
    losers = mask_to_cards(t.legal & ~winners_mask)
    if my_nil:
        return _duck(t, winners, losers)
    played = [s for s, _ in t.trick]
    if partner_nil:
        if partner in played:
            if t.win_seat == partner and winners:
                return winners[0]                 # overtake the nil partner as cheaply as possible
        elif winners and t.led not in t.voids[partner] and t.unseen & _ABOVE[win_card]:
            # The partner plays after us and might have to beat the winning card: play high
            # in the suit (or ruff) so that it can duck.
            in_suit = [c for c in winners if c // 13 == t.led]
            return in_suit[-1] if in_suit else winners[0]
    if nil_opps:
        if t.win_seat in nil_opps:               # the nil bidder is winning: let it
            if losers:
                return _throw_low(t, losers) if t.wants_tricks() else _most_dangerous(losers, t)
        elif t.win_seat == partner and any(s not in played for s in nil_opps):
            # A nil bidder plays after us and our partner's card is winning: keep it low.
            if losers:
                return _throw_low(t, losers)
    if t.wants_tricks():
        return _follow_for_tricks(t, winners, losers)
    return _duck(t, winners, losers)


def _follow_for_tricks(t: _Table, winners: list[int], losers: list[int]) -> int:
    """Follow when the side wants the trick: let a partner's safe winner stand, else win with
    the cheapest card that holds (or, last to play, the cheapest winner); second hand low."""
    partner = t.partner
    if partner is not None and t.win_seat == partner:
        if t.holds(t.win_card):
            return _throw_low(t, losers or winners)
        covering = [c for c in winners if t.holds(c)]
        if covering:
            return covering[0]                    # third hand high, as cheaply as possible
        return _throw_low(t, losers or winners)
    if winners:
        if not t.opps_after:
            return winners[0]                     # last to play: the cheapest winner
        safe = [c for c in winners if t.holds(c)]
        if safe:
            return safe[0]
        if partner is not None and partner in t.after:
            return _throw_low(t, losers or winners)   # second hand low: the partner is still to play
        return winners[0]                         # no partner behind us: try the cheapest winner
    return _throw_low(t, losers)


def _throw_low(t: _Table, cards: list[int]) -> int:
    """A card we are happy to lose: the lowest of the led suit, or a low discard."""
    if t.led is not None and cards[0] // 13 == t.led:
        return cards[0]
    return _discard_low(t, cards)


def _discard_low(t: _Table, cards: list[int]) -> int:
    """Discard (void in the led suit): a low side card, from a short suit, never a master or
    a spade if a side card will do. Conventions: discards=none throws the lowest-ranked side
    card; high_asks and low_asks signal (:func:`_signal_discard`)."""
    side = [c for c in cards if c < 39]
    if not side:
        return cards[0]
    discards = t.conventions.discards
    if discards == "none":
        return min(side, key=lambda c: (c % 13, c))
    if discards != "standard":
        return _signal_discard(t, side, discards == "high_asks")
    return _plain_discard(t, side)


def _plain_discard(t: _Table, side: list[int]) -> int:
    """Standard's discard among side cards: low, from a short suit, masters last."""
    hand = t.hand
    return min(side, key=lambda c: (t.is_master(c),
                                    c % 13 + 0.5 * (hand & _SUIT_MASKS[c // 13]).bit_count(), c))


def _signal_discard(t: _Table, side: list[int], high_asks: bool) -> int:
    """Convention discards=high_asks / low_asks: ask the partner to lead a side suit in which we
    hold the master by discarding from it a card that is high (rank SIGNAL_HIGH_RANK or above) /
    low (below it), never the master; with no such suit, a discard that asks for nothing (a low /
    high non-master card, else the plain discard). When several suits can ask: the one in which
    we hold the most cards, then the lower suit."""
    hand = t.hand
    best_suit, best_length = None, 0
    for suit in range(3):
        held = hand & _SUIT_MASKS[suit]
        if not held or not t.is_master(held.bit_length() - 1):
            continue
        if any(c // 13 == suit and _is_signal(t, c, high_asks) for c in side):
            length = held.bit_count()
            if length > best_length:
                best_suit, best_length = suit, length
    if best_suit is not None:
        return min(c for c in side if c // 13 == best_suit and _is_signal(t, c, high_asks))
    quiet = [c for c in side if not t.is_master(c) and (c % 13 >= SIGNAL_HIGH_RANK) != high_asks]
    return _plain_discard(t, quiet or side)


def _is_signal(t: _Table, card: int, high_asks: bool) -> bool:
    """A card whose discard asks for its suit under the convention (and not a master: we keep it)."""
    return not t.is_master(card) and (card % 13 >= SIGNAL_HIGH_RANK) == high_asks


def _asked_suit(t: _Table, cards: list[int]) -> Optional[int]:
    """The side suit the partner asked for by its discards (convention discards=high_asks /
    low_asks, read by a partner with the same one), among the suits we can lead; else None.
    The observation keeps no trick history, so a partner's cards of a suit are known to be
    discards only while no trick has been led in the suit: some other seat, not shown void in
    it, has played none of it. The partner asks when its highest (high_asks) / lowest (low_asks)
    such discard is high / low, and is not void in the suit since. The lowest such suit."""
    partner = t.partner
    if partner is None or t.conventions.discards not in ("high_asks", "low_asks"):
        return None
    high_asks = t.conventions.discards == "high_asks"
    voids, played = t.voids, t.played
    for suit in range(3):
        if suit in voids[partner] or not any(c // 13 == suit for c in cards):
            continue
        ranks = [c % 13 for c in played[partner] if c // 13 == suit]
        if not ranks:
            continue
        unled = any(suit not in voids[s] and not any(c // 13 == suit for c in played[s]) for s in (0, 1, 3))
        if not unled:
            continue
        if (max(ranks) >= SIGNAL_HIGH_RANK) if high_asks else (min(ranks) < SIGNAL_HIGH_RANK):
            return suit
    return None


def _duck(t: _Table, winners: list[int], losers: list[int]) -> int:
    """Try not to take the trick: the most dangerous card that loses; if every card wins, the
    highest when last to play, else the lowest (someone may still overtake)."""
    if losers:
        return _most_dangerous(losers, t)
    if not t.after:
        return winners[-1]
    return winners[0]


def _most_dangerous(cards: list[int], t: _Table) -> int:
    """The card a ducking player most wants to be rid of."""
    hand = t.hand
    return max(cards, key=lambda c: (_danger_for_nil(c, hand), c))


def _lead_low(t: _Table, cards: list[int]) -> int:
    """The lead least likely to win: many unseen cards above it, none below it, no spade."""
    unseen = t.unseen

    def key(c: int):
        higher = (unseen & _ABOVE[c]).bit_count()
        lower = (unseen & _BELOW[c]).bit_count()
        return (higher == 0, lower, c >= 39, -higher, c)
    return min(cards, key=key)


def _lead_high(t: _Table, cards: list[int]) -> int:
    """Cover a nil partner: lead masters, else the highest card (room for the partner to duck)."""
    return max(cards, key=lambda c: (t.is_master(c) and c < 39, t.is_master(c), c % 13, -c))


def _lead_against_nil(t: _Table, cards: list[int], nil_opps: list[int]) -> int:
    """Lead low in a suit the nil bidder still holds (it must play under or win)."""
    voids = t.voids
    held = [c for c in cards if all(c // 13 not in voids[s] for s in nil_opps)]
    pool = held or cards
    return min(pool, key=lambda c: (c % 13, c >= 39, c))


def _lead_for_tricks(t: _Table, cards: list[int]) -> int:
    """Lead when the side wants tricks: safe side masters, top spades, the partner's void,
    else low from the most useful suit. Conventions: leads=trumps first draws trumps when long in
    spades (:func:`_trump_lead`); after the safe masters, discards=high_asks / low_asks leads low
    in the suit the partner asked for and leads=partner_suit low in the partner's suit
    (:func:`_partner_suit`)."""
    opps = [s for s in range(1, t.n) if s != t.partner]
    conventions = t.conventions
    if conventions.leads == "trumps":
        trump = _trump_lead(t, cards, opps)
        if trump is not None:
            return trump
    # 1. Side-suit masters while a ruff is unlikely, the safest first.
    best, best_risk = None, RUFF_RISK_LIMIT
    for c in cards:
        if c < 39 and t.is_master(c):
            risk = t.ruff_chance(c // 13, opps)
            if risk < best_risk:
                best, best_risk = c, risk
    if best is not None:
        return best
    if not conventions.is_standard:
        asked = _asked_suit(t, cards)
        if asked is None and conventions.leads == "partner_suit":
            asked = _partner_suit(t, cards, opps)
        if asked is not None:
            return _lowest_in_suit(cards, asked)
    # 2. Top spades.
    spade_masters = [c for c in cards if c >= 39 and t.is_master(c)]
    if spade_masters:
        return spade_masters[-1]
    hand = t.hand
    voids = t.voids
    partner = t.partner
    have_spades = bool(hand & _SPADE_MASK)
    # 3. The partner's void (it ruffs), unless an opponent shows the same void.
    if partner is not None and SPADES not in voids[partner] and t.unseen & _SPADE_MASK:
        for c in cards:
            s = c // 13
            if c < 39 and s in voids[partner] and not any(s in voids[o] for o in opps):
                return _lowest_in_suit(cards, s)
    # 4. Lead low from a good suit.
    best, best_score = None, None
    for suit in range(4):
        in_suit = [c for c in cards if c // 13 == suit]
        if not in_suit:
            continue
        length = (hand & _SUIT_MASKS[suit]).bit_count()
        low = in_suit[0]
        score = 0.3 * length
        if suit == SPADES:
            score -= 1.0 if length * 2 < (t.unseen & _SPADE_MASK).bit_count() else -0.5
        else:
            if length <= 2 and have_spades and not t.is_master(in_suit[-1]):
                score += 2.0                      # shorten a suit to ruff it later
            top = in_suit[-1]
            if not t.is_master(top) and top % 13 >= QUEEN and length >= 2:
                score -= 2.0                      # do not lead away from a guarded honour
            if any(suit in voids[o] and SPADES not in voids[o] for o in opps):
                score -= 3.0                      # an opponent ruffs it
        key = (score, -(low % 13))
        if best_score is None or key > best_score:
            best, best_score = low, key
    return best


def _trump_lead(t: _Table, cards: list[int], opps: list[int]) -> Optional[int]:
    """Convention leads=trumps: with four spades or more, or three with the master spade, lead
    spades while an opponent may still hold one: the master spade if we hold it, else the lowest
    (the partner may hold the top ones)."""
    spades = [c for c in cards if c >= 39]
    count = (t.hand & _SPADE_MASK).bit_count()
    if not spades or not t.unseen & _SPADE_MASK or all(SPADES in t.voids[o] for o in opps):
        return None
    top = spades[-1]
    if t.is_master(top) and count >= 3:
        return top
    return spades[0] if count >= 4 else None


def _partner_suit(t: _Table, cards: list[int], opps: list[int]) -> Optional[int]:
    """Convention leads=partner_suit: the side suit in which the partner has played its highest
    card this hand (where it led, won or showed strength; the observation has no trick
    history), if we can lead it, the partner is not void in it and no opponent shows a void in
    it while it may hold spades; ties: the lower suit."""
    partner = t.partner
    if partner is None:
        return None
    voids = t.voids
    best, best_rank = None, -1
    for c in t.played[partner]:
        suit = c // 13
        if suit == SPADES or c % 13 <= best_rank or suit in voids[partner]:
            continue
        if not any(d // 13 == suit for d in cards):
            continue
        if any(suit in voids[o] and SPADES not in voids[o] for o in opps):
            continue
        best, best_rank = suit, c % 13
    return best


def _lowest_in_suit(cards: list[int], suit: int) -> int:
    for c in cards:
        if c // 13 == suit:
            return c
    return cards[0]
