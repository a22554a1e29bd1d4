"""Egocentric observations and the global state, as flat float32 vectors with named slices.

The encoder keeps one *global* vector in the absolute frame (seat 0 first), updated in place
after every action (a few writes per card). A seat's observation is one gather from it with a
precomputed index: the seat's private blocks (its visible hand, the cards it passed and received)
and every per-seat block rotated so that the observer comes first, then its left-hand opponent,
its partner, its right-hand opponent. ``state()`` is a copy of the global vector followed by
every seat's true hand (block ``true_hands`` of ``Layout.state_slices``), for centralized critics.

Observation layout (``n`` seats, ``S`` sides: 2 partnerships, or ``n`` cutthroat players;
``T`` tricks per hand). Relative seat ``r`` is ``(seat + r) % n``; relative side ``j`` is
``(own side + j) % S``:

=================  ==========  ==============================================================
name               size        meaning
=================  ==========  ==============================================================
hand               52          own cards (all zero while the seat has not looked at them)
phase              6           one-hot: blind-nil decision, bidding, passing, play, hand over,
                               game over
dealer             n           one-hot relative seat of the dealer
to_act             n           one-hot relative seat of the player to act
bids               n x 15      per relative seat: one-hot bid 0 (nil)..13, then a blind flag
passed             52          cards this seat passed (blind-nil passing)
received           52          cards this seat received
tricks_taken       n x (T+1)   per relative seat: one-hot number of tricks taken this hand
trick_leader       n           one-hot relative seat that led the current trick
current_trick      n x 52      per relative seat: the card it played to the current trick
played             n x 52      per relative seat: every card it played this hand
voids              n x 4       per relative seat: suits it is known to be void in
spades_broken      1           a spade has been played this hand
sides              S x 7       per relative side: score / target, bags / bag_limit,
                               (target - score) / target, (score - mercy) / target (0 without
                               mercy), may bid blind nil, tricks counted toward the contract / T,
                               contract (sum of non-nil bids) / T
game               5           target_score / 1000, mercy_score / 1000 (0 without mercy), 1 if
                               there is a mercy score, bag_limit / 100, hands played / max_hands
                               (0 without a limit)
signal_phase       1           1 while the free signal lasts (the ``phase`` one-hot is all zero
                               then); only under ``signals: N`` with N > 0
messages           n x N       per relative seat: one-hot of the message it sent this hand;
                               only under ``signals: N`` with N > 0
=================  ==========  ==============================================================

The two blocks of the signal come last, so every other offset is the same with or without it:
``observation[:size without signals]`` is the observation of the same game without the signal.
A short deck (``deck_ranks``) changes only T; the card blocks stay 52 wide (cards outside the
deck are always zero).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .cards import NUM_CARDS
from .game import (PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_ONE_HOT_WIDTH, PHASE_PASSING, PHASE_PLAY,
                   PHASE_SIGNAL, PHASES_DONE, SIGNAL_ACTION_BASE, SpadesGame)
from .rules import Rules

BID_SLOTS = 15  # bid 0..13 one-hot + blind flag
SIDE_SLOTS = 7


@dataclass(frozen=True)
class Block:
    name: str
    offset: int
    size: int
    kind: str        # "shared", "seat" (n rotated rows), "side" (S rotated rows), "private" (n rows, own only)
    width: int       # row width for seat/side/private blocks

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)


class Layout:
    """Where every field lives in the global vector and in a seat's observation."""

    def __init__(self, rules: Rules) -> None:
        n, S, T = rules.players, rules.num_sides, rules.tricks_per_hand
        self.n, self.num_sides, self.tricks_per_hand = n, S, T
        self.signals = N = rules.signals
        spec = [
            ("hand", "private", NUM_CARDS),
            ("phase", "shared", PHASE_ONE_HOT_WIDTH),
            ("dealer", "seat", 1),
            ("to_act", "seat", 1),
            ("bids", "seat", BID_SLOTS),
            ("passed", "private", NUM_CARDS),
            ("received", "private", NUM_CARDS),
            ("tricks_taken", "seat", T + 1),
            ("trick_leader", "seat", 1),
            ("current_trick", "seat", NUM_CARDS),
            ("played", "seat", NUM_CARDS),
            ("voids", "seat", 4),
            ("spades_broken", "shared", 1),
            ("sides", "side", SIDE_SLOTS),
            ("game", "shared", 5),
        ]
        if N:      # appended, so that no other offset moves
            spec += [("signal_phase", "shared", 1), ("messages", "seat", N)]
        self.global_blocks: dict[str, Block] = {}
        self.obs_blocks: dict[str, Block] = {}
        g_off = o_off = 0
        for name, kind, width in spec:
            rows = {"shared": 1, "seat": n, "side": S, "private": n}[kind]
            self.global_blocks[name] = Block(name, g_off, rows * width, kind, width)
            obs_rows = 1 if kind in ("shared", "private") else rows
            self.obs_blocks[name] = Block(name, o_off, obs_rows * width, kind, width)
            g_off += rows * width
            o_off += obs_rows * width
        # The true hands exist only in the global state (for centralized critics).
        self.global_blocks["true_hands"] = Block("true_hands", g_off, n * NUM_CARDS, "private", NUM_CARDS)
        g_off += n * NUM_CARDS
        self.state_size = g_off
        self.public_size = g_off - n * NUM_CARDS   # the encoder's buffer: everything but true_hands
        self.obs_size = o_off
        self.gather = np.stack([self._gather_index(seat, rules) for seat in range(n)])

    def _gather_index(self, seat: int, rules: Rules) -> np.ndarray:
        n, S = self.n, self.num_sides
        own_side = rules.side_of(seat)
        index = []
        for name, block in self.obs_blocks.items():
            g = self.global_blocks[name]
            w = g.width
            if g.kind == "shared":
                index.extend(range(g.offset, g.offset + g.size))
            elif g.kind == "private":
                index.extend(range(g.offset + seat * w, g.offset + (seat + 1) * w))
            else:
                rows, first = (n, seat) if g.kind == "seat" else (S, own_side)
                for j in range(rows):
                    row = (first + j) % rows
                    index.extend(range(g.offset + row * w, g.offset + (row + 1) * w))
        return np.asarray(index, dtype=np.intp)

    @property
    def slices(self) -> dict[str, slice]:
        """Named slices into an observation vector."""
        return {name: b.slice for name, b in self.obs_blocks.items()}

    @property
    def state_slices(self) -> dict[str, slice]:
        """Named slices into the global state vector (absolute seats)."""
        return {name: b.slice for name, b in self.global_blocks.items()}

    def suit_permutation(self, suits: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Index arrays that relabel the suits of an observation: suit ``s`` becomes ``suits[s]``.

        Returns ``(obs_index, card_index)``: ``observation[obs_index]`` is the observation of the
        relabelled position, ``cards[card_index]`` a per-card array (52 cells: the action mask's
        cards, values per card) relabelled the same way. Spades must stay spades (``suits[3] == 3``).
        Where the rules treat the three side suits alike (no two of clubs removed or leading), the
        relabelled observation is exactly what the env shows in the deal with the suits swapped."""
        suits = tuple(int(s) for s in suits)
        if sorted(suits) != [0, 1, 2, 3] or suits[3] != 3:
            raise ValueError(f"suit_permutation: {suits!r} is not a permutation of the suits 0-3 that "
                             "keeps spades (3) in place")
        new_card = np.array([suits[c // 13] * 13 + c % 13 for c in range(NUM_CARDS)])
        card_index = np.argsort(new_card)             # new card d shows old card card_index[d]
        suit_index = np.argsort(np.array(suits))
        obs_index = np.arange(self.obs_size)
        for block in self.obs_blocks.values():
            if block.width == NUM_CARDS:
                inner = card_index
            elif block.name == "voids":
                inner = suit_index
            else:
                continue
            for row in range(block.size // block.width):
                start = block.offset + row * block.width
                obs_index[start:start + block.width] = start + inner
        return obs_index, card_index

    def split(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """An observation cut into its named fields, reshaped to (rows, width) where it has rows."""
        out = {}
        for name, b in self.obs_blocks.items():
            part = observation[..., b.slice]
            if b.kind in ("seat", "side"):
                part = part.reshape(*part.shape[:-1], b.size // b.width, b.width)
            out[name] = part
        return out


def cards_matrix(masks) -> np.ndarray:
    """Rows of 52 float32 0/1 cells, one per card bitmask."""
    packed = np.frombuffer(b"".join(m.to_bytes(8, "little") for m in masks), dtype=np.uint8)
    bits = np.unpackbits(packed.reshape(len(masks), 8), axis=1, count=NUM_CARDS, bitorder="little")
    return bits.astype(np.float32)


_LAYOUTS: dict[Rules, Layout] = {}


def layout_for(rules: Rules) -> Layout:
    layout = _LAYOUTS.get(rules)
    if layout is None:
        layout = _LAYOUTS[rules] = Layout(rules)
    return layout


def observation_bounds(layout: "Layout", rules) -> tuple[np.ndarray, np.ndarray]:
    """Finite (low, high) of every observation cell under ``rules``: 0/1 for the one-hot and
    card cells, a range holding each constant of the ``game`` block, and for the ``sides`` block the range
    that scores within twice ``SCORE_LIMIT`` give (starting scores are refused beyond
    ``SCORE_LIMIT``; a hand moves a score by a few hundred points, so a game would need millions
    of hands to leave the range)."""
    from .game import SCORE_LIMIT

    size = layout.obs_size
    low = np.zeros(size, dtype=np.float32)
    high = np.ones(size, dtype=np.float32)
    target = float(rules.target_score)
    reach = 2.0 * SCORE_LIMIT / target            # |score| / target at most
    mercy = rules.mercy_score / target if rules.mercy_score is not None else None
    per_side = [(-reach, reach),                                   # score / target
                (-1.0 if rules.bags_from_score_digit else 0.0, 1.0),   # bags / bag_limit (a score's
                                                                   # last digit is negative below 0)
                (1.0 - reach, 1.0 + reach),                        # (target - score) / target
                ((-reach - mercy, reach - mercy) if mercy is not None else (0.0, 1.0)),   # 0 without mercy
                (0.0, 1.0),                                        # may bid blind nil
                (0.0, 2.0),                                        # tricks counted toward the contract / T
                (0.0, 2.0)]                                        # contract / T
    sides = layout.obs_blocks["sides"]
    for side in range(sides.size // SIDE_SLOTS):
        for k, (lo, hi) in enumerate(per_side):
            low[sides.offset + side * SIDE_SLOTS + k] = lo
            high[sides.offset + side * SIDE_SLOTS + k] = hi
    game = layout.obs_blocks["game"].offset
    constants = [rules.target_score / 1000.0, rules.mercy_score / 1000.0 if rules.mercy_score is not None else 0.0,
                 float(rules.mercy_score is not None), rules.bag_limit / 100.0]
    for k, value in enumerate(constants):            # a range that holds the constant (equal bounds
        low[game + k] = min(0.0, value)              # make gymnasium's checker warn)
        high[game + k] = max(1.0, value)
    low[game + 4], high[game + 4] = 0.0, 1.0                       # hands played / max_hands
    return low, high


class ObservationEncoder:
    """Keeps the global vector in step with a :class:`SpadesGame`.

    Call :meth:`encode_all` after a reset or a new hand, and :meth:`after_card` /
    :meth:`after_action` after each action; :meth:`observe` gathers one seat's view.
    """

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.layout = layout = layout_for(rules)
        self.buffer = np.zeros(layout.public_size, dtype=np.float32)
        self.gather = layout.gather
        g = layout.global_blocks
        self.o_hand = g["hand"].offset
        self.o_phase = g["phase"].offset
        self.o_dealer = g["dealer"].offset
        self.o_to_act = g["to_act"].offset
        self.o_bids = g["bids"].offset
        self.o_passed = g["passed"].offset
        self.o_received = g["received"].offset
        self.o_tricks = g["tricks_taken"].offset
        self.w_tricks = g["tricks_taken"].width
        self.o_leader = g["trick_leader"].offset
        self.o_trick = g["current_trick"].offset
        self.o_played = g["played"].offset
        self.o_voids = g["voids"].offset
        self.o_broken = g["spades_broken"].offset
        self.o_sides = g["sides"].offset
        self.o_game = g["game"].offset
        self.signals = rules.signals
        self.o_signal_phase = g["signal_phase"].offset if rules.signals else -1
        self.o_messages = g["messages"].offset if rules.signals else -1
        self.trick_block = slice(self.o_trick, self.o_trick + g["current_trick"].size)
        self._nil_tricks_count = rules.nil_tricks_count_for_partner
        self._counted = [0] * rules.num_sides   # tricks counting toward each side's contract
        n = rules.players
        # Per seat: (its hand row, played row, current-trick row, to_act cell, voids row).
        self.seat_offsets = [(self.o_hand + s * NUM_CARDS, self.o_played + s * NUM_CARDS,
                              self.o_trick + s * NUM_CARDS, self.o_to_act + s, self.o_voids + s * 4)
                             for s in range(n)]

    def copy(self) -> "ObservationEncoder":
        """An independent encoder in the same state (to follow a copy of the game)."""
        new = object.__new__(ObservationEncoder)
        new.__dict__.update(self.__dict__)
        new.buffer = self.buffer.copy()
        new._counted = list(self._counted)
        new._hand_shown = list(getattr(self, "_hand_shown", ()))
        return new

    def observe(self, seat: int) -> np.ndarray:
        """A fresh array: the seat's egocentric observation."""
        return self.buffer[self.gather[seat]]

    def state(self, game: SpadesGame) -> np.ndarray:
        """The global state: the public vector plus every true hand."""
        return np.concatenate([self.buffer, cards_matrix(game.hands).ravel()])

    # ------------------------------------------------------------------ full encode
    def encode_all(self, game: SpadesGame) -> None:
        """Write the whole state from scratch (reset, new hand; also the reference in tests)."""
        buf = self.buffer
        buf[:] = 0.0
        n = game.n
        self._hand_shown = list(game.looked)
        rows = NUM_CARDS * n
        buf[self.o_hand:self.o_hand + rows] = cards_matrix(
            [h if seen else 0 for h, seen in zip(game.hands, game.looked)]).ravel()
        if game.passes:
            buf[self.o_passed:self.o_passed + rows] = cards_matrix(game.passed).ravel()
            buf[self.o_received:self.o_received + rows] = cards_matrix(game.received).ravel()
        if game.tricks_played or game.trick_cards:
            buf[self.o_played:self.o_played + rows] = cards_matrix(game.played).ravel()
        for seat in range(n):
            if game.bids[seat] >= 0:
                buf[self.o_bids + seat * BID_SLOTS + game.bids[seat]] = 1.0
                if game.blind[seat]:
                    buf[self.o_bids + seat * BID_SLOTS + 14] = 1.0
            buf[self.o_tricks + seat * self.w_tricks + game.tricks_taken[seat]] = 1.0
            for suit in range(4):
                if game.voids[seat] >> suit & 1:
                    buf[self.o_voids + seat * 4 + suit] = 1.0
        self._write_phase(game.phase)
        if self.signals:
            for seat, message in enumerate(game.messages):
                if message >= 0:
                    buf[self.o_messages + seat * self.signals + message] = 1.0
        buf[self.o_dealer + game.dealer] = 1.0
        if game.phase not in PHASES_DONE:
            buf[self.o_to_act + game.to_act] = 1.0
        if game.trick_cards:
            for seat, card in game.current_trick:
                buf[self.o_trick + seat * NUM_CARDS + card] = 1.0
            buf[self.o_leader + game.trick_leader] = 1.0
        elif game.phase == PHASE_PLAY:
            buf[self.o_leader + game.to_act] = 1.0
        buf[self.o_broken] = float(game.spades_broken)
        self.encode_scores(game)

    def after_hand(self, game: SpadesGame) -> None:
        """Update after the last trick of an episode's final hand: the phase and the scores
        (after_card has already cleared the trick and the player to act)."""
        self._write_phase(game.phase)
        self.encode_scores(game)

    def _write_phase(self, phase: int) -> None:
        """The phase one-hot (phases 0..5), or the ``signal_phase`` cell in the signal phase."""
        buf = self.buffer
        buf[self.o_phase:self.o_phase + PHASE_ONE_HOT_WIDTH] = 0.0
        if phase == PHASE_SIGNAL:
            buf[self.o_signal_phase] = 1.0
            return
        if self.signals:
            buf[self.o_signal_phase] = 0.0
        buf[self.o_phase + phase] = 1.0

    def _write_cards(self, offset: int, mask: int) -> None:
        """Set the 52 cells at ``offset`` for the cards in ``mask`` (cells assumed zero)."""
        buf = self.buffer
        while mask:
            low = mask & -mask
            buf[offset + low.bit_length() - 1] = 1.0
            mask ^= low

    def encode_scores(self, game: SpadesGame) -> None:
        """The per-side block and hand progress (they change only between hands and on bids)."""
        r = self.rules
        buf = self.buffer
        target = float(r.target_score)
        T = float(game.tricks_per_hand)
        for side in range(game.num_sides):
            score = game.scores[side]
            base = self.o_sides + side * SIDE_SLOTS
            buf[base] = score / target
            buf[base + 1] = game.bags[side] / r.bag_limit
            buf[base + 2] = (target - score) / target
            buf[base + 3] = (score - r.mercy_score) / target if r.mercy_score is not None else 0.0
            buf[base + 4] = float(game._side_may_bid_blind(side))
            self._counted[side] = self._counted_tricks(game, side)
            buf[base + 5] = self._counted[side] / T
            buf[base + 6] = game.contract(side) / T
        hands_done = game.hand_number - (0 if game.phase in PHASES_DONE else 1)
        o = self.o_game
        buf[o] = r.target_score / 1000.0
        buf[o + 1] = r.mercy_score / 1000.0 if r.mercy_score is not None else 0.0
        buf[o + 2] = float(r.mercy_score is not None)
        buf[o + 3] = r.bag_limit / 100.0
        buf[o + 4] = hands_done / r.max_hands if r.max_hands else 0.0

    @staticmethod
    def _counted_tricks(game: SpadesGame, side: int) -> int:
        r = game.rules
        return sum(game.tricks_taken[s] for s in r.side_members(side)
                   if r.nil_tricks_count_for_partner or game.bids[s] != 0)

    # ------------------------------------------------------------------ incremental updates
    def after_card(self, game: SpadesGame, seat: int, card: int) -> None:
        """Update after ``seat`` played ``card`` (the hot path: a few scalar writes)."""
        buf = self.buffer
        hand_row, played_row, trick_row, to_act_cell, voids_row = self.seat_offsets[seat]
        buf[hand_row + card] = 0.0
        buf[played_row + card] = 1.0
        buf[to_act_cell] = 0.0
        if card >= 39:
            buf[self.o_broken] = 1.0
        led = game.led_suit
        if card // 13 != led:
            buf[voids_row + led] = 1.0
        if game.trick_cards:
            buf[trick_row + card] = 1.0
            buf[self.o_to_act + game.to_act] = 1.0
            return
        # The trick is complete: clear it, move the lead to the winner and credit it.
        buf[self.trick_block] = 0.0
        buf[self.o_leader + (seat + 1) % game.n] = 0.0   # the last card is played just before the leader
        winner = game.win_seat
        taken = game.tricks_taken[winner]
        base = self.o_tricks + winner * self.w_tricks
        buf[base + taken - 1] = 0.0
        buf[base + taken] = 1.0
        if game.phase == PHASE_PLAY:
            buf[self.o_leader + winner] = 1.0
            buf[self.o_to_act + winner] = 1.0
            if self._nil_tricks_count or game.bids[winner] != 0:
                side = game.side_of[winner]
                counted = self._counted
                counted[side] += 1
                buf[self.o_sides + side * SIDE_SLOTS + 5] = counted[side] / game.tricks_per_hand

    def after_action(self, game: SpadesGame, seat: int, action: int, phase_before: int) -> None:
        """Update after a message, a bid, a blind-nil decision or a pass (rarer, simpler to re-derive)."""
        buf = self.buffer
        n = game.n
        if phase_before == PHASE_SIGNAL:
            buf[self.o_messages + seat * self.signals + action - SIGNAL_ACTION_BASE] = 1.0
        elif phase_before == PHASE_BLIND_DECISION and game.bids[seat] < 0:
            pass  # looked at the cards: shown below
        elif phase_before in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            buf[self.o_bids + seat * BID_SLOTS + game.bids[seat]] = 1.0
            if game.blind[seat]:
                buf[self.o_bids + seat * BID_SLOTS + 14] = 1.0
            side = game.side_of[seat]
            buf[self.o_sides + side * SIDE_SLOTS + 6] = game.contract(side) / game.tricks_per_hand
        else:  # a pass: the card moved between two hands
            frm, to, card = game.passes[-1]
            buf[self.o_hand + frm * NUM_CARDS + card] = 0.0
            buf[self.o_hand + to * NUM_CARDS + card] = 1.0
            buf[self.o_passed + frm * NUM_CARDS + card] = 1.0
            buf[self.o_received + to * NUM_CARDS + card] = 1.0
        if game.phase != phase_before:
            self._write_phase(game.phase)
        if phase_before != PHASE_PASSING:
            shown = self._hand_shown
            for s in range(n):
                if game.looked[s] and not shown[s]:  # became visible: its turn, or bidding over
                    self._write_cards(self.o_hand + s * NUM_CARDS, game.hands[s])
                    shown[s] = True
        buf[self.o_to_act:self.o_to_act + n] = 0.0
        buf[self.o_to_act + game.to_act] = 1.0
        if game.phase == PHASE_PLAY:
            buf[self.o_leader:self.o_leader + n] = 0.0
            buf[self.o_leader + game.to_act] = 1.0


# ---------------------------------------------------------------------- reading observations
@dataclass(frozen=True)
class ObservationView:
    """One observation read back into plain values. Seats and sides are relative to the observer
    (0 = itself, 1 = its left-hand opponent, 2 = its partner, 3 = its right-hand opponent; side 0
    is its own). Cards are ids 0..51."""

    players: int
    partnerships: bool
    hand: list[int]                      # own cards (empty before looking at them)
    phase: int                           # spades_env.game.PHASE_* (PHASE_NAMES[phase] names it)
    dealer: int
    to_act: Optional[int]                # None once the episode is over
    bids: list[Optional[int]]            # None: not bid yet; 0: nil
    blind: list[bool]                    # the bid was blind nil
    passed: list[int]
    received: list[int]
    tricks_taken: list[int]
    trick_leader: Optional[int]          # None outside the play phase
    current_trick: list[tuple[int, int]]  # (relative seat, card) in play order
    played: list[list[int]]              # every card each seat played this hand
    voids: list[set[int]]                # suits each seat is known to be void in
    spades_broken: bool
    scores: list[int]                    # per relative side, in points
    bags: list[int]
    may_bid_blind_nil: list[bool]        # per relative side
    target_score: int
    mercy_score: Optional[int]
    tricks_per_hand: int = 13            # T: a short deck's hands have fewer (the T highest ranks of a suit)
    messages: list[Optional[int]] = dataclasses.field(default_factory=list)
    """Per relative seat, the message it sent this hand (None: not yet); empty without a signal."""
    signals: int = 0                     # messages of the free signal (0: none)

    @property
    def tricks_played(self) -> int:
        return sum(self.tricks_taken)

    def partner_bid(self) -> Optional[int]:
        return self.bids[2] if self.partnerships else None


_LAYOUTS_BY_SIZE: dict[tuple[int, int], Layout] = {}


def layout_for_size(size: int, signals: int = 0) -> Layout:
    """The layout of an observation vector from its length and the rules' number of messages
    (the action mask is ``68 + signals`` long). Full deck: partnerships 742, four-player cutthroat
    756, three players 621; a short deck of R ranks has 4 * (13 - R) fewer, a signal of N messages
    1 + 4 * N (3 * N with three players) more. Given ``signals`` the size is unambiguous.
    Cached: agents call it at every decision."""
    key = (size, signals)
    layout = _LAYOUTS_BY_SIZE.get(key)
    if layout is not None:
        return layout
    from .rules import SIGNALS_LIMIT, make_rules

    if isinstance(signals, bool) or not isinstance(signals, int) or not 0 <= signals <= SIGNALS_LIMIT:
        raise ValueError(f"layout_for_size: signals={signals!r}: expected 0..{SIGNALS_LIMIT} messages")
    candidates = [make_rules("cutthroat", players=3, signals=signals)]
    for deck_ranks in range(13, 1, -1):
        candidates += [make_rules("standard", signals=signals, deck_ranks=deck_ranks, blind_nil=False),
                       make_rules("cutthroat", signals=signals, deck_ranks=deck_ranks)]
    for rules in candidates:
        layout = layout_for(rules)
        if layout.obs_size == size:
            _LAYOUTS_BY_SIZE[key] = layout
            return layout
    plain = layout_for(make_rules("standard", signals=signals)).obs_size
    raise ValueError(f"no observation layout has {size} values with signals={signals} (the full-deck "
                     f"partnership game has {plain}; a short deck 4 fewer per rank removed)")


def _cards(row: np.ndarray) -> list[int]:
    return [int(c) for c in np.flatnonzero(row > 0.5)]


_CELL_TABLES: dict[int, tuple[list, list, list]] = {}


def _cell_table(layout: Layout) -> tuple[list, list, list]:
    """Per observation index of the 0/1 blocks: (block name, row, column); None elsewhere."""
    table = _CELL_TABLES.get(id(layout))
    if table is None:
        names, rows, cols = [None] * layout.obs_size, [0] * layout.obs_size, [0] * layout.obs_size
        for name, b in layout.obs_blocks.items():
            if name in ("sides", "game"):
                continue
            for i in range(b.size):
                names[b.offset + i], rows[b.offset + i], cols[b.offset + i] = name, i // b.width, i % b.width
        table = _CELL_TABLES[id(layout)] = (names, rows, cols)
    return table


def decode_observation(observation: np.ndarray, layout: Optional[Layout] = None, signals: int = 0) -> ObservationView:
    """Read an observation vector (``obs["observation"]``) back into an :class:`ObservationView`.
    Without ``layout`` it is found from the size and ``signals`` (:func:`layout_for_size`).

    One pass over the set cells (a few dozen) rather than block by block: ~20 us.
    """
    observation = np.asarray(observation)
    if layout is None:
        layout = layout_for_size(observation.shape[-1], signals)
    n = layout.n
    messages: list[Optional[int]] = [None] * n if layout.signals else []
    names, rows, cols = _cell_table(layout)
    hand, passed, received = [], [], []
    played: list[list[int]] = [[] for _ in range(n)]
    voids: list[set[int]] = [set() for _ in range(n)]
    bids: list[Optional[int]] = [None] * n
    blind = [False] * n
    tricks_taken = [0] * n
    trick_cards: dict[int, int] = {}
    one: dict[str, int] = {}
    broken = False
    for i in np.flatnonzero(observation > 0.5).tolist():
        name = names[i]
        if name is None:
            continue
        row, col = rows[i], cols[i]
        if name == "played":
            played[row].append(col)
        elif name == "hand":
            hand.append(col)
        elif name == "current_trick":
            trick_cards[row] = col
        elif name == "bids":
            if col == 14:
                blind[row] = True
            else:
                bids[row] = col
        elif name == "tricks_taken":
            tricks_taken[row] = col
        elif name == "voids":
            voids[row].add(col)
        elif name == "passed":
            passed.append(col)
        elif name == "received":
            received.append(col)
        elif name == "spades_broken":
            broken = True
        elif name == "phase":
            one[name] = col
        elif name == "messages":
            messages[row] = col
        elif name == "signal_phase":
            one["phase"] = PHASE_SIGNAL
        else:  # dealer, to_act, trick_leader: one cell per relative seat
            one[name] = row
    game = observation[layout.obs_blocks["game"].slice].tolist()
    target = int(round(game[0] * 1000.0))
    mercy = int(round(game[1] * 1000.0)) if game[2] > 0.5 else None
    bag_limit = int(round(game[3] * 100.0))
    sides_block = layout.obs_blocks["sides"]
    sides = observation[sides_block.slice].reshape(-1, sides_block.width).tolist()
    leader = one.get("trick_leader")
    current = []
    if leader is not None:
        for k in range(n):
            seat = (leader + k) % n
            if seat in trick_cards:
                current.append((seat, trick_cards[seat]))
    return ObservationView(
        players=n, partnerships=layout.num_sides == 2, hand=hand, phase=one.get("phase"),
        dealer=one.get("dealer"), to_act=one.get("to_act"), bids=bids, blind=blind, passed=passed,
        received=received, tricks_taken=tricks_taken, trick_leader=leader, current_trick=current,
        played=played, voids=voids, spades_broken=broken,
        scores=[int(round(row[0] * target)) for row in sides],
        bags=[int(round(row[1] * bag_limit)) for row in sides],
        may_bid_blind_nil=[row[4] > 0.5 for row in sides],
        target_score=target, mercy_score=mercy, tricks_per_hand=layout.tricks_per_hand, messages=messages,
        signals=layout.signals)


def view_from_game(game: SpadesGame, seat: int) -> ObservationView:
    """What ``seat`` may know, straight from the engine (no encoding): equal to
    ``decode_observation`` of that seat's observation, and much cheaper (for search rollouts)."""
    from .cards import mask_to_cards

    r = game.rules
    n = game.n
    rel = [(seat + k) % n for k in range(n)]
    sides = game.num_sides
    own = game.side_of[seat]
    side_order = [(own + j) % sides for j in range(sides)]
    in_play = game.phase == PHASE_PLAY
    done = game.phase in PHASES_DONE
    trick_leader = None
    if in_play:
        trick_leader = (game.trick_leader if game.trick_cards else game.to_act)
    played = game.played
    return ObservationView(
        players=n,
        partnerships=r.partnerships,
        hand=mask_to_cards(game.hands[seat]) if game.looked[seat] else [],
        phase=game.phase,
        dealer=(game.dealer - seat) % n,
        to_act=None if done else (game.to_act - seat) % n,
        bids=[game.bids[s] if game.bids[s] >= 0 else None for s in rel],
        blind=[game.blind[s] for s in rel],
        passed=mask_to_cards(game.passed[seat]),
        received=mask_to_cards(game.received[seat]),
        tricks_taken=[game.tricks_taken[s] for s in rel],
        trick_leader=None if trick_leader is None else (trick_leader - seat) % n,
        current_trick=[((s - seat) % n, c) for s, c in game.current_trick],
        played=[mask_to_cards(played[s]) for s in rel],
        voids=[{x for x in range(4) if game.voids[s] >> x & 1} for s in rel],
        spades_broken=game.spades_broken,
        scores=[game.scores[s] for s in side_order],
        bags=[game.bags[s] for s in side_order],
        may_bid_blind_nil=[game._side_may_bid_blind(s) for s in side_order],
        target_score=r.target_score,
        mercy_score=r.mercy_score,
        tricks_per_hand=r.tricks_per_hand,
        messages=[game.messages[s] if game.messages[s] >= 0 else None for s in rel] if r.signals else [],
        signals=r.signals,
    )
