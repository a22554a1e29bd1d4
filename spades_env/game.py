"""The pure Spades engine: deal, blind-nil decision, bidding, card passing, play, scoring.

No PettingZoo, no observation arrays: just the game state and its transitions. Hands are 52-bit
integers, legal actions a 68-bit integer (bit ``a`` set when action ``a`` is legal), so the
per-card work is a handful of integer operations.

Actions (one space for every phase):
    0..51   play (or pass) the card with that id
    52 + b  bid b tricks, b in 0..13 (52 is nil)
    66      bid blind nil
    67      decline blind nil and look at the cards
    68 + m  send message m, m in 0..signals-1 (only under ``signals: N``, the free signal)

Under a short deck (``deck_ranks`` below 13) the card ids stay ``suit*13 + rank``: only the
highest ``deck_ranks`` ranks of each suit exist, and bids run 0..``tricks_per_hand``.
"""

from __future__ import annotations

import random
from typing import Any, Optional, Sequence

import numpy as np

from .cards import (NON_SPADES_MASK, NUM_CARDS, SUIT_MASKS, TWO_OF_CLUBS,
                    card_str, cards_to_mask, mask_to_cards, parse_card)
from .rules import SIGNALS_LIMIT, Rules, make_rules
from .scoring import SideResult, bags_in_score, game_winner, leader, nils_kept, score_hand

NUM_ACTIONS = 68
"""Actions of the game without a signal; a rule set's space is ``rules.num_actions`` (68 + signals)."""
SIGNAL_ACTION_BASE = 68
"""Action ``SIGNAL_ACTION_BASE + m`` sends message ``m`` (rules ``signals: N``, m in 0..N-1)."""
BID_ACTION_BASE = 52
NIL_ACTION = 52
BLIND_NIL_ACTION = 66
LOOK_ACTION = 67
BID_ACTIONS_MASK = ((1 << 14) - 1) << BID_ACTION_BASE

PHASE_BLIND_DECISION = 0
PHASE_BIDDING = 1
PHASE_PASSING = 2
PHASE_PLAY = 3
PHASE_HAND_OVER = 4
PHASE_GAME_OVER = 5
PHASE_SIGNAL = 6
"""The free signal (``signals: N``): after the deal, before any blind-nil decision or bid. It is
numbered after the others so that every existing phase keeps its number; it is not "over"
(compare phases by equality or ``phase in PHASES_DONE``, never ``phase >= PHASE_HAND_OVER``)."""
PHASE_NAMES = ("blind_nil_decision", "bidding", "passing", "play", "hand_over", "game_over", "signal")
NUM_PHASES = len(PHASE_NAMES)
"""How many phases there are (7); the observation's phase one-hot is ``PHASE_ONE_HOT_WIDTH`` wide."""
PHASE_ONE_HOT_WIDTH = 6
"""Width of the observation's ``phase`` one-hot: phases 0..5 (the signal phase has its own
``signal_phase`` cell, appended under ``signals: N`` so that no existing offset moves)."""
PHASES_DONE = (PHASE_HAND_OVER, PHASE_GAME_OVER)
"""The phases in which no action is expected."""

_SPADE_FIRST = 39


class IllegalActionError(ValueError):
    """An action that is not legal in the current state."""


# Starting scores beyond this are refused by both engines alike (scores move by at most a few
# hundred points a hand, so no game in play comes near it).
SCORE_LIMIT = 10 ** 9


class DealError(ValueError):
    """A malformed reset option: the deal, the dealer, the scores or the bags."""


def start_scores_problem(rules: Rules, scores: Sequence[int]) -> Optional[str]:
    """What is wrong with ``scores`` (one per side) as the start of a game under ``rules``, or None.

    A start lies strictly between ``mercy_score`` and ``target_score``: a side already at or past
    either has lost or won before the first card, and the "game" played from there is no game
    (a game in progress may stand at or over the target, tied: :meth:`SpadesGame.from_view`)."""
    low = rules.mercy_score
    if any(s >= rules.target_score for s in scores) or (low is not None and any(s <= low for s in scores)):
        between = (f"strictly between mercy_score {low} and target_score {rules.target_score}" if low is not None
                   else f"strictly below target_score {rules.target_score}")
        return (f"expected every starting score {between} (the {rules.name} rules; a side at or past either "
                "has already lost or won)")
    return None


ResetOptionError = DealError  # the same error, under a name that says what it covers


def _as_action_id(value: Any) -> Optional[int]:
    """An integer from an int-like value (numpy integers included), or None."""
    if isinstance(value, bool) or isinstance(value, float):
        return None
    try:
        return int(value.__index__())
    except (AttributeError, TypeError):
        return None


def action_str(action: int) -> str:
    """A readable name for an action id: ``"AS"``, ``"bid 4"``, ``"bid nil"``, ``"blind nil"``, ``"message 2"``."""
    if 0 <= action < NUM_CARDS:
        return card_str(action)
    if action == NIL_ACTION:
        return "bid nil"
    if BID_ACTION_BASE < action < BLIND_NIL_ACTION:
        return f"bid {action - BID_ACTION_BASE}"
    if action == BLIND_NIL_ACTION:
        return "blind nil"
    if action == LOOK_ACTION:
        return "look at cards"
    if SIGNAL_ACTION_BASE <= action < SIGNAL_ACTION_BASE + SIGNALS_LIMIT:
        return f"message {action - SIGNAL_ACTION_BASE}"
    return f"<invalid action {action}>"


def deck_cards(rules: Rules) -> list[int]:
    """The card ids dealt under ``rules``, ascending: all 52, less the two of clubs with three
    players, or the ``deck_ranks`` highest ranks of every suit in a short deck."""
    low = rules.lowest_rank
    return [c for c in range(NUM_CARDS) if c % 13 >= low and not (rules.players == 3 and c == TWO_OF_CLUBS)]


def mask_to_actions(mask: int) -> list[int]:
    """Action ids set in a legal-action bitmask, ascending."""
    return mask_to_cards(mask)


def parse_deal(deal: Any, rules: Rules) -> list[int]:
    """Validate a deal (one list of cards per seat, ids or strings) into per-seat hand masks."""
    n = rules.players
    per_hand = rules.cards_per_hand
    if isinstance(deal, (str, bytes)) or not isinstance(deal, Sequence) and not hasattr(deal, "__len__"):
        raise DealError(f"deal must be {n} lists of {per_hand} cards, got {type(deal).__name__}")
    deal = list(deal)
    if len(deal) != n:
        raise DealError(f"deal must have {n} hands (one per seat), got {len(deal)}")
    masks = []
    seen: dict[int, int] = {}
    for seat, hand in enumerate(deal):
        if isinstance(hand, (str, bytes)):
            hand = hand.split()
        if not isinstance(hand, Sequence) and not hasattr(hand, "__len__"):
            raise DealError(f"deal: seat {seat}'s hand is {hand!r} ({type(hand).__name__}): expected a list of "
                            f"{per_hand} cards (ids 0..51 or names like 'AS')")
        hand = list(hand)
        if len(hand) != per_hand:
            raise DealError(f"deal: seat {seat} has {len(hand)} cards, expected {per_hand}")
        mask = 0
        for value in hand:
            try:
                card = parse_card(value)
            except ValueError as exc:
                raise DealError(f"deal: seat {seat}: {exc}") from None
            if card in seen:
                raise DealError(f"deal: card {card_str(card)} appears twice (seats {seen[card]} and {seat})")
            if n == 3 and card == TWO_OF_CLUBS:
                raise DealError("deal: the two of clubs is removed in the three-player game")
            if card % 13 < rules.lowest_rank:
                raise DealError(f"deal: seat {seat}: {card_str(card)} is not in the short deck (deck_ranks="
                                f"{rules.deck_ranks}: ranks {card_str(rules.lowest_rank)[:-1]} to A of each suit)")
            seen[card] = seat
            mask |= 1 << card
        masks.append(mask)
    return masks


class SpadesGame:
    """One game of Spades: hands are dealt and played until a side wins (or ``max_hands``).

    ``rng`` (a ``random.Random`` or a seed) shuffles the deals and draws the first dealer.
    ``dealer``, ``scores``, ``bags`` and ``deal`` (the first hand's cards) may be given; they
    are validated here and refused with a :class:`DealError` naming the problem (starting scores
    lie strictly between the mercy score and the target: :func:`start_scores_problem`;
    ``mid_game=True`` takes the scores of a game in progress instead, which may stand tied at or
    over the target).
    After a hand is scored the phase is ``PHASE_HAND_OVER`` (call :meth:`next_hand`) or
    ``PHASE_GAME_OVER``. Under ``signals: N`` every hand starts in ``PHASE_SIGNAL``: each seat,
    in bidding order, sends one message (:attr:`messages`, -1 until sent), then the bidding
    starts as without it. A short deck (``deck_ranks``) deals only its cards (:func:`deck_cards`).
    """

    def __init__(self, rules: Rules | str | None = None, rng: random.Random | int | None = None, *,
                 dealer: Optional[int] = None, scores: Optional[Sequence[int]] = None,
                 bags: Optional[Sequence[int]] = None, deal: Any = None, mid_game: bool = False) -> None:
        self.rules = rules if isinstance(rules, Rules) else make_rules(rules)
        r = self.rules
        self.rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        self.n = r.players
        self.num_sides = r.num_sides
        self.tricks_per_hand = r.tricks_per_hand
        self.partner = [(s + 2) % 4 if r.partnerships else -1 for s in range(self.n)]
        self.side_of = [r.side_of(s) for s in range(self.n)]
        self._restricted_lead = r.spades_lead != "any"
        deck = deck_cards(r)
        self.deck_mask = cards_to_mask(deck)
        self._deck_bits = np.array([1 << c for c in deck], dtype=np.uint64)

        first_deal = parse_deal(deal, r) if deal is not None else None
        self.start_scores = self._check_side_values("scores", scores, 0)
        problem = None if mid_game else start_scores_problem(r, self.start_scores)
        if problem:
            raise DealError(f"scores={list(self.start_scores)}: {problem}")
        self.scores = list(self.start_scores)
        if r.bags_from_score_digit:
            derived = [bags_in_score(s) for s in self.scores]
            if bags is not None and list(bags) != derived:
                raise DealError(f"bags={list(bags)}: under bags_from_score_digit the bags are the "
                                f"scores' last digits, {derived}")
            self.bags = derived
        else:
            self.bags = self._check_side_values("bags", bags, 0)
            for side, b in enumerate(self.bags):
                if not 0 <= b < r.bag_limit:
                    raise DealError(f"bags={list(self.bags)}: side {side} has {b} bags, expected 0..{r.bag_limit - 1}")
        self.start_bags = list(self.bags)
        if dealer is not None and _as_action_id(dealer) is not None:
            dealer = _as_action_id(dealer)
        if r.fixed_dealer is not None:
            if dealer is not None and dealer != r.fixed_dealer:
                raise DealError(f"dealer={dealer!r}: the {r.name} rules fix the dealer at seat {r.fixed_dealer}")
            dealer = r.fixed_dealer
        elif dealer is None:
            dealer = self.rng.randrange(self.n)
        elif isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < self.n:
            raise DealError(f"dealer={dealer!r} is not a seat: expected an integer 0..{self.n - 1}")
        self.start_dealer = dealer
        self.dealer = dealer
        self.hand_number = 0          # hands started so far
        self.winner: Optional[int] = None
        self.truncated = False
        self.last_results: list[SideResult] = []
        self._hand_logs: list[tuple] = []    # completed hands, raw; turned into dicts on demand
        self.deal_queue: list[list[int]] = []   # deals to use before drawing from rng (replay)
        self._start_hand(first_deal)

    # ------------------------------------------------------------------ setup
    def _check_side_values(self, name: str, values: Optional[Sequence[int]], default: int) -> list[int]:
        sides = self.num_sides
        if values is None:
            return [default] * sides
        who = "partnership" if self.rules.partnerships else "player"
        expected = f"expected a list of {sides} integers, one per {who}"
        if isinstance(values, (str, bytes)):
            raise DealError(f"{name}={values!r}: {expected}")
        try:
            values = list(values)
        except TypeError:
            raise DealError(f"{name}={values!r}: {expected}") from None
        checked = [_as_action_id(v) for v in values]
        if len(values) != sides or any(v is None for v in checked):
            raise DealError(f"{name}={values!r}: {expected}")
        if name == "scores" and any(abs(v) > SCORE_LIMIT for v in checked):
            raise DealError(f"scores={values!r}: each starting score must lie within -{SCORE_LIMIT:,}..{SCORE_LIMIT:,} "
                            "(the batched engine keeps scores in 64-bit integers and float32 observations)")
        return checked

    def _draw_deal(self) -> list[int]:
        if self.deal_queue:
            return self.deal_queue.pop(0)
        # A uniform shuffle: sort the deck by 64-bit random keys from the seeded stdlib stream
        # (reproducible across platforms and numpy versions; ~2x faster than random.shuffle).
        deck = self._deck_bits
        keys = np.frombuffer(self.rng.getrandbits(64 * len(deck)).to_bytes(8 * len(deck), "little"), dtype="<u8")
        order = keys.argsort(kind="stable").reshape(self.n, -1)
        return deck[order].sum(axis=1).tolist()

    def _start_hand(self, deal: Optional[list[int]] = None) -> None:
        n = self.n
        hands = list(deal) if deal is not None else self._draw_deal()
        self.hands = hands
        self.deal = list(hands)
        self.hand_number += 1
        self.bids = [-1] * n
        self.blind = [False] * n
        self.passed = [0] * n
        self.received = [0] * n
        self.pass_queue: list[tuple[int, int]] = []
        self.voids = [0] * n
        self.tricks_taken = [0] * n
        self.tricks_played = 0
        self.trick_cards: list[int] = []
        self.trick_leader = -1
        self.led_suit = -1
        self.win_card = -1
        self.win_seat = -1
        self.spades_broken = False
        self.actions: list[tuple[int, int]] = []
        self.tricks: list[tuple[int, list[int], int]] = []   # (leader, cards in play order, winner)
        self.passes: list[tuple[int, int, int]] = []
        # A seat whose side may bid blind nil sees no card until its bidding turn.
        eligible_side = [self._side_may_bid_blind(side) for side in range(self.num_sides)]
        self.looked = [not eligible_side[self.side_of[s]] for s in range(n)]
        self.messages = [-1] * n
        self._legal = -1
        self.to_act = (self.dealer + 1) % n
        if self.rules.signals:
            self.phase = PHASE_SIGNAL      # the free signal comes first: every seat, in bidding order
        else:
            self.phase = PHASE_BIDDING
            self._begin_bidding_turn()

    def next_hand(self) -> None:
        """Deal the next hand (the deal passes to the left unless the dealer is fixed)."""
        if self.phase != PHASE_HAND_OVER:
            raise IllegalActionError(f"next_hand() needs a finished hand, the phase is {PHASE_NAMES[self.phase]}")
        if self.rules.fixed_dealer is None:
            self.dealer = (self.dealer + 1) % self.n
        self._start_hand()

    # ------------------------------------------------------------------ queries
    def side_may_bid_blind(self, side: int) -> bool:
        """Whether ``side`` may bid blind nil this hand (the rules allow it and it trails by enough)."""
        r = self.rules
        if not r.blind_nil:
            return False
        scores = self.scores
        return scores[1 - side] - scores[side] >= r.blind_nil_min_deficit  # blind nil needs partnerships

    _side_may_bid_blind = side_may_bid_blind      # the name the observation encoder calls

    def legal_mask(self) -> int:
        """Legal actions of the player to act, as a bitmask over the ``rules.num_actions`` action ids."""
        m = self._legal
        if m < 0:
            m = self._compute_legal()
        return m

    def legal_actions(self) -> list[int]:
        return mask_to_cards(self.legal_mask())

    def _compute_legal(self) -> int:
        """Compute (and cache) the legal-action bitmask."""
        phase = self.phase
        if phase == PHASE_PLAY:
            if self.trick_cards:  # following: the led suit if possible (the common case)
                hand = self.hands[self.to_act]
                m = hand & SUIT_MASKS[self.led_suit]
                if not m:
                    m = self._legal_cards()
            else:
                m = self._legal_cards()
        elif phase == PHASE_BIDDING:
            m = self._legal_bids(self.to_act) << BID_ACTION_BASE
        elif phase == PHASE_PASSING:
            m = self.hands[self.to_act]
        elif phase == PHASE_BLIND_DECISION:
            m = (1 << BLIND_NIL_ACTION) | (1 << LOOK_ACTION)
        elif phase == PHASE_SIGNAL:
            m = ((1 << self.rules.signals) - 1) << SIGNAL_ACTION_BASE
        else:
            m = 0
        self._legal = m
        return m

    def _legal_cards(self) -> int:
        hand = self.hands[self.to_act]
        if self.trick_cards:
            follow = hand & SUIT_MASKS[self.led_suit]
            if follow:
                return follow
            if self.tricks_played == 0 and self.rules.no_spades_first_trick and hand & NON_SPADES_MASK:
                return hand & NON_SPADES_MASK
            return hand
        r = self.rules
        first_trick = self.tricks_played == 0
        if first_trick and r.two_of_clubs_leads and hand & 1:
            return 1
        if hand & NON_SPADES_MASK:
            if (self._restricted_lead and not (self.spades_broken and r.spades_lead == "broken")) \
                    or (first_trick and r.no_spades_first_trick):
                return hand & NON_SPADES_MASK
        return hand

    def _legal_bids(self, seat: int) -> int:
        """Bits b (0..``rules.max_bid``: 13, or the tricks of a short deck's hand) of the bids this seat may make."""
        r = self.rules
        low = 0 if r.nil else 1
        high = r.max_bid
        bids = 0
        partner_bid = self.bids[self.partner[seat]] if r.partnerships else -1
        nil_ok = r.nil
        if partner_bid >= 0:
            if r.min_team_bid:
                low = max(low, r.min_team_bid - partner_bid)
                nil_ok = nil_ok and partner_bid >= r.min_team_bid
            if r.max_team_bid is not None:
                high = min(high, r.max_team_bid - partner_bid)
        elif r.partnerships and r.max_team_bid is not None:
            # Leave the partner at least one legal bid.
            high = min(high, r.max_team_bid - (0 if r.nil else 1))
        for b in range(max(low, 1), high + 1):
            bids |= 1 << b
        if nil_ok:
            bids |= 1
        if not r.bids_may_total_13 and seat == self.dealer:
            total = sum(b for i, b in enumerate(self.bids) if i != seat and b > 0)
            forbidden = self.tricks_per_hand - total
            if 0 <= forbidden <= 13 and bids & ~(1 << forbidden):
                bids &= ~(1 << forbidden)
        return bids

    def _begin_bidding_turn(self) -> None:
        """At a seat's bidding turn: offer blind nil, or let it see its cards and bid."""
        seat = self.to_act
        self._legal = -1
        if not self.looked[seat]:
            if self._side_may_bid_blind(self.side_of[seat]) and self._legal_bids(seat) & 1:
                self.phase = PHASE_BLIND_DECISION
                return
            self.looked[seat] = True
        self.phase = PHASE_BIDDING

    @property
    def current_trick(self) -> list[tuple[int, int]]:
        """(seat, card) pairs of the trick in progress, in play order."""
        n = self.n
        return [((self.trick_leader + i) % n, c) for i, c in enumerate(self.trick_cards)]

    @property
    def played(self) -> list[int]:
        """Cards each seat has played this hand, as bitmasks."""
        played = [0] * self.n
        for first, cards, _ in self.tricks + [(self.trick_leader, self.trick_cards, -1)]:
            for i, card in enumerate(cards):
                played[(first + i) % self.n] |= 1 << card
        return played

    def contract(self, side: int) -> int:
        """The side's contract so far: the sum of its members' non-nil bids."""
        bids = self.bids
        if self.num_sides == 2:
            return max(bids[side], 0) + max(bids[side + 2], 0)
        return max(bids[side], 0)

    # ------------------------------------------------------------------ transitions
    def apply(self, action: int) -> None:
        """Apply the action of the player to act. Raises :class:`IllegalActionError` if illegal."""
        if type(action) is not int:
            coerced = _as_action_id(action)
            if coerced is None:
                self._raise_illegal(action)
            action = coerced
        legal = self._legal
        if legal < 0:
            legal = self._compute_legal()
        if action < 0 or not (legal >> action) & 1:
            self._raise_illegal(action)
        seat = self.to_act
        self.actions.append((seat, action))
        phase = self.phase
        if phase == PHASE_PLAY:
            # Playing a card (inlined: this is the hot path of every environment).
            hands = self.hands
            hands[seat] ^= 1 << action
            trick = self.trick_cards
            suit = action // 13
            if suit == 3:
                self.spades_broken = True
            if trick:
                trick.append(action)
                led = self.led_suit
                if suit != led:
                    self.voids[seat] |= 1 << led
                win = self.win_card
                if (action > win and suit == win // 13) or (suit == 3 and win < _SPADE_FIRST):
                    self.win_card = action
                    self.win_seat = seat
                if len(trick) == self.n:
                    self._legal = -1
                    self._finish_trick()
                    return
            else:
                trick.append(action)
                self.trick_leader = seat
                self.led_suit = led = suit
                self.win_card = action
                self.win_seat = seat
            # The next player follows suit if it can: its legal cards, computed while at hand.
            self.to_act = nxt = (seat + 1) % self.n
            follow = hands[nxt] & SUIT_MASKS[led]
            self._legal = follow if follow else -1
        elif phase == PHASE_BIDDING:
            self._bid(seat, action - BID_ACTION_BASE, blind=False)
        elif phase == PHASE_PASSING:
            self._pass_card(seat, action)
        elif phase == PHASE_SIGNAL:
            self._send_message(seat, action - SIGNAL_ACTION_BASE)
        elif action == BLIND_NIL_ACTION:
            self._bid(seat, 0, blind=True)
        else:  # looked at the cards; now bids normally
            self.looked[seat] = True
            self.phase = PHASE_BIDDING
            self._legal = -1

    def _raise_illegal(self, action: Any) -> None:
        phase = PHASE_NAMES[self.phase]
        if self.phase in PHASES_DONE:
            raise IllegalActionError(f"action {action!r}: no action is expected, the {phase}")
        legal = ", ".join(f"{a} ({action_str(a)})" for a in self.legal_actions())
        action_id = _as_action_id(action)
        shown = action_str(action_id) if action_id is not None else "not an action id"
        why = self._why_not_in_rules(action_id) if action_id is not None else None
        raise IllegalActionError(f"illegal action {action!r} ({shown}{'; ' + why if why else ''}) for seat "
                                 f"{self.to_act} in phase {phase}; legal actions: {legal}")

    def _why_not_in_rules(self, action: int) -> Optional[str]:
        """Why an action no phase of these rules accepts is not one, or None: the bids above a
        short deck's tricks, the messages past ``signals``, ids past the action space."""
        r = self.rules
        if BID_ACTION_BASE + r.max_bid < action < BLIND_NIL_ACTION:
            return f"a hand has {r.tricks_per_hand} tricks (deck_ranks={r.deck_ranks}): bids are 0..{r.max_bid}"
        if action >= r.num_actions or action < 0:
            if action >= SIGNAL_ACTION_BASE and r.signals:
                return (f"the {r.name} rules have {r.signals} messages (signals={r.signals}): actions "
                        f"{SIGNAL_ACTION_BASE}..{r.num_actions - 1}")
            if action >= SIGNAL_ACTION_BASE:
                return f"the {r.name} rules have no signal (signals=0): actions are 0..{r.num_actions - 1}"
            return f"actions are 0..{r.num_actions - 1}"
        return None

    def _send_message(self, seat: int, message: int) -> None:
        """One seat's message of the free signal; after the dealer's, the bidding starts at the
        first bidder exactly as without a signal."""
        self.messages[seat] = message
        self._legal = -1
        self.to_act = (seat + 1) % self.n
        if seat == self.dealer:
            self.phase = PHASE_BIDDING
            self._begin_bidding_turn()

    def _bid(self, seat: int, bid: int, blind: bool) -> None:
        self.bids[seat] = bid
        self.blind[seat] = blind
        self._legal = -1
        if seat != self.dealer:
            self.to_act = (seat + 1) % self.n
            self._begin_bidding_turn()
            return
        # Bidding is over: everyone sees their cards; blind nil brings card passing.
        self.looked = [True] * self.n
        k = self.rules.blind_nil_pass
        queue = []
        if k:
            for i in range(1, self.n + 1):
                bidder = (self.dealer + i) % self.n
                partner = self.partner[bidder]
                if self.blind[bidder] and not self.blind[partner]:
                    queue += [(partner, bidder)] * k + [(bidder, partner)] * k
        self.pass_queue = queue
        if queue:
            self.phase = PHASE_PASSING
            self.to_act = queue[0][0]
        else:
            self._start_play()

    def _pass_card(self, seat: int, card: int) -> None:
        _, to_seat = self.pass_queue.pop(0)
        bit = 1 << card
        self.hands[seat] ^= bit
        self.hands[to_seat] |= bit
        self.passed[seat] |= bit
        self.received[to_seat] |= bit
        self.passes.append((seat, to_seat, card))
        self._legal = -1
        if self.pass_queue:
            self.to_act = self.pass_queue[0][0]
        else:
            self._start_play()

    def _start_play(self) -> None:
        self.phase = PHASE_PLAY
        self._legal = -1
        if self.rules.two_of_clubs_leads:
            self.to_act = next(s for s in range(self.n) if self.hands[s] & 1)
        else:
            self.to_act = (self.dealer + 1) % self.n
        self.trick_leader = self.to_act

    def _finish_trick(self) -> None:
        winner = self.win_seat
        self.tricks_taken[winner] += 1
        self.tricks_played += 1
        self.tricks.append((self.trick_leader, self.trick_cards, winner))
        self.trick_cards = []
        self.to_act = winner
        self.trick_leader = winner
        if self.tricks_played == self.tricks_per_hand:
            self._finish_hand()

    def _finish_hand(self) -> None:
        r = self.rules
        scores_before = list(self.scores)
        results = score_hand(r, self.bids, self.blind, self.tricks_taken, self.scores, self.bags)
        self.last_results = results
        for side, res in enumerate(results):
            self.scores[side] += res.points
            self.bags[side] = res.bags_after
        self.winner = game_winner(r, self.scores)
        if self.winner is None and r.max_hands is not None and self.hand_number >= r.max_hands:
            self.truncated = True
            self.winner = leader(self.scores)
        self.phase = PHASE_GAME_OVER if (self.winner is not None or self.truncated) else PHASE_HAND_OVER
        self._legal = 0
        self._hand_logs.append(self._hand_log(results, scores_before))

    @property
    def game_over(self) -> bool:
        return self.phase == PHASE_GAME_OVER

    # ------------------------------------------------------------------ records
    def _hand_log(self, results: Optional[list[SideResult]], scores_before: list[int]) -> tuple:
        return (self.hand_number, self.dealer, self.deal, self.actions, list(self.bids), list(self.blind),
                self.passes, self.tricks, list(self.tricks_taken), results, scores_before,
                list(self.scores), list(self.bags), list(self.messages))

    def _log_to_dict(self, log: tuple) -> dict:
        (number, dealer, deal, actions, bids, blind, passes, tricks, taken, results, scores_before,
         scores, bags, messages) = log
        rec: dict[str, Any] = {
            "number": number,
            "dealer": dealer,
            "deal": [[card_str(c) for c in mask_to_cards(m)] for m in deal],
            "actions": [[s, a] for s, a in actions],
            "bids": [b if b >= 0 else None for b in bids],
            "blind": list(blind),
            "passes": [{"from": f, "to": t, "card": card_str(c)} for f, t, c in passes],
            "tricks": [{"leader": leader, "cards": [card_str(c) for c in cards], "winner": winner}
                       for leader, cards, winner in tricks],
            "tricks_taken": list(taken),
            "complete": results is not None,
        }
        if self.rules.signals:      # (absent without a signal: those records read as before it existed)
            rec["messages"] = [m if m >= 0 else None for m in messages]
        if results is not None:
            rec.update({
                "score_change": [res.points for res in results],
                "bags_taken": [res.bags_taken for res in results],
                "bag_penalties": [res.bag_penalties for res in results],
                "bags": list(bags),
                "scores": list(scores),
                "scores_before": list(scores_before),
                "results": [self._result_dict(side, res, bids, taken) for side, res in enumerate(results)],
            })
        return rec

    def _result_dict(self, side: int, res: SideResult, bids: list[int], taken: list[int]) -> dict:
        """One side's scoring of a hand as the engine did it (``spades_env.scoring.score_side``):
        readers of records take contracts, made/set and nils from here instead of recomputing."""
        members = self.rules.side_members(side)
        return {
            "side": side, "seats": list(members),
            "contract": res.contract, "tricks": res.tricks, "made": res.made,
            "contract_points": res.contract_points, "overtrick_points": res.overtrick_points,
            "nil_points": res.nil_points, "bags_taken": res.bags_taken,
            "bag_penalties": res.bag_penalties, "points": res.points, "bags_after": res.bags_after,
            "nils": [{"seat": seat, "kept": kept} for seat, kept in
                     zip(members, nils_kept([bids[m] for m in members], [taken[m] for m in members]))
                     if kept is not None],
        }

    @property
    def hands_completed(self) -> int:
        return len(self._hand_logs)

    def hand_record(self, index: int) -> dict:
        """The record of a completed hand (0 = the first of this game)."""
        return self._log_to_dict(self._hand_logs[index])

    @property
    def hand_records(self) -> list[dict]:
        """Records of the completed hands, oldest first."""
        return [self._log_to_dict(log) for log in self._hand_logs]

    def record(self) -> dict:
        """A JSON-serializable record of the game so far (see ``spades_env.record``)."""
        hands = self.hand_records
        if self.phase not in PHASES_DONE:
            hands.append(self._log_to_dict(self._hand_log(None, list(self.scores))))
        return {
            "format": "spades-record/1",
            "rules": self.rules.to_dict(),
            "start": {"dealer": self.start_dealer, "scores": list(self.start_scores),
                      "bags": list(self.start_bags)},
            "hands": hands,
            "scores": list(self.scores),
            "bags": list(self.bags),
            "game_over": self.phase == PHASE_GAME_OVER,
            "truncated": self.truncated,
            "winner": self.winner if self.phase == PHASE_GAME_OVER else None,
        }

    def clone(self) -> "SpadesGame":
        """An independent copy (the random stream is copied too)."""
        import copy
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ search support
    _PER_HAND_LISTS = ("hands", "bids", "blind", "passed", "received", "pass_queue", "voids", "tricks_taken",
                       "trick_cards", "looked", "scores", "bags", "tricks", "passes", "messages")

    def copy(self) -> "SpadesGame":
        """A cheap independent copy of the hand in progress, for play-outs (over 100 times faster
        than :meth:`clone`): the per-hand lists are copied, the rules and the random stream shared
        (a play-out never deals), the history (actions, hand records, last results) left empty."""
        new = object.__new__(type(self))
        d = new.__dict__
        d.update(self.__dict__)
        for name in self._PER_HAND_LISTS:
            d[name] = list(d[name])
        d["actions"] = []
        d["_hand_logs"] = []
        d["last_results"] = []
        return new

    @classmethod
    def from_view(cls, view: Any, rules: Rules, hands: Sequence[int]) -> "SpadesGame":
        """A game in the public state of ``view`` (a :class:`spades_env.observation.ObservationView`,
        not imported here: the observation encoder builds on this module; its seat becomes seat 0) with the given hands
        (bitmasks, one per seat, relative to the viewer), ready for seat 0 to act: the worlds a
        search samples and plays out.

        Earlier tricks are not grouped (a view does not say which cards fell together): each
        card played to them becomes a one-card pseudo trick ``(seat, [card], -1)`` in ``tricks``,
        which keeps :attr:`played` right; ``tricks_played`` is the real count. The messages of
        the free signal come from the view. Supported phases: signal, blind-nil decision, bidding
        and play; others raise ``ValueError``."""
        n = view.players
        view_tricks = getattr(view, "tricks_per_hand", rules.tricks_per_hand)
        view_signals = getattr(view, "signals", 0)
        if rules.players != n or rules.partnerships != view.partnerships:
            raise ValueError(f"rules {rules.name!r} ({rules.players} players, partnerships "
                             f"{rules.partnerships}) do not fit the observation")
        if view_tricks != rules.tricks_per_hand or view_signals != rules.signals:
            raise ValueError(f"rules {rules.name!r} ({rules.tricks_per_hand} tricks a hand, signals={rules.signals}) "
                             f"do not fit the observation ({view_tricks} tricks a hand, signals={view_signals})")
        phase = view.phase
        if phase not in (PHASE_PLAY, PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_SIGNAL):
            raise ValueError(f"from_view: phase {phase} is not supported (expected "
                             f"{PHASE_SIGNAL}, {PHASE_BLIND_DECISION}, {PHASE_BIDDING} or {PHASE_PLAY})")
        bags = None if rules.bags_from_score_digit else [min(max(b, 0), rules.bag_limit - 1) for b in view.bags]
        g = cls(rules, 0, dealer=None if rules.fixed_dealer is not None else view.dealer,
                scores=list(view.scores), bags=bags, mid_game=True)
        g.dealer = view.dealer
        g.hands = list(hands)
        g.deal = list(hands)
        g.bids = [-1 if b is None else b for b in view.bids]
        g.blind = list(view.blind)
        g.voids = [sum(1 << x for x in v) for v in view.voids]
        g.tricks_taken = list(view.tricks_taken)
        g.tricks_played = sum(view.tricks_taken)
        g.passed = [0] * n
        g.received = [0] * n
        g.passed[0] = cards_to_mask(view.passed)
        g.received[0] = cards_to_mask(view.received)
        if view.partnerships and (view.passed or view.received):
            g.passed[2] = g.received[0]          # the partner passed us what we received
            g.received[2] = g.passed[0]
        g.pass_queue = []
        g.passes = []
        g.actions = []
        g.spades_broken = view.spades_broken
        g.messages = [-1 if m is None else m for m in getattr(view, "messages", ())] or [-1] * n
        g._legal = -1
        g.to_act = 0
        if phase == PHASE_PLAY:
            in_trick = {c for _, c in view.current_trick}
            g.tricks = [(s, [c], -1) for s in range(n) for c in view.played[s] if c not in in_trick]
            g.trick_cards = [c for _, c in view.current_trick]
            if view.current_trick:
                g.trick_leader = view.current_trick[0][0]
                g.led_suit = g.trick_cards[0] // 13
                g.win_seat, g.win_card = _trick_winner(view.current_trick)
            else:
                g.trick_leader = 0
                g.led_suit = g.win_card = g.win_seat = -1
            g.looked = [True] * n
        else:
            g.tricks = []
            g.trick_cards = []
            g.trick_leader = -1
            g.led_suit = g.win_card = g.win_seat = -1
            # Seats yet to bid keep the engine's rule (a seat whose side may bid blind nil sees its
            # cards at its turn); those that bid have looked, unless they bid blind.
            for s in range(n):
                if g.bids[s] >= 0:
                    g.looked[s] = True
            if phase != PHASE_SIGNAL:     # (signalling, seat 0 sees its cards unless its side may bid blind)
                g.looked[0] = phase == PHASE_BIDDING
        g.phase = phase
        return g


def card_beats(card: int, winning: int) -> bool:
    """Whether ``card``, played to a trick, takes it from the card ``winning`` it so far: a higher
    card of its suit, or any spade over a card of another suit. (``SpadesGame.apply`` writes the
    same test inline: it is the engine's hot path.)"""
    return (card // 13 == winning // 13 and card > winning) or (card >= _SPADE_FIRST and winning < _SPADE_FIRST)


def _trick_winner(trick: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """(seat, card) winning so far among (seat, card) pairs in play order: the highest spade,
    else the highest card of the led suit."""
    win_seat, win_card = trick[0]
    for seat, c in trick[1:]:
        if card_beats(c, win_card):
            win_seat, win_card = seat, c
    return win_seat, win_card
