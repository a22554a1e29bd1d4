"""The batched engine's observation: the AEC env's encoding, value for value, for every table at
once (:class:`VectorEncoding`, a mixin of :class:`~spades_env.vector.SpadesVectorEnv`: it reads
the env's state tensors, layout and rules). Two paths build the same cells: ``_encode`` (one
buffer, card planes copied in, every one-hot cell set by one scatter) and the fused path the
compiled step uses (bits packed in words, then unpacked). The tests compare both with the AEC
env's ``observe`` after every step of many games.
"""

from __future__ import annotations

from typing import Optional

import torch

from .cards import FIRST_SPADE, NUM_CARDS, NUM_RANKS, NUM_SEATS, NUM_SIDES  # noqa: F401 (re-export)
from .game import (BID_ACTION_BASE, BLIND_NIL_ACTION, PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_HAND_OVER,
                   PHASE_ONE_HOT_WIDTH, PHASE_PLAY, PHASE_SIGNAL, SIGNAL_ACTION_BASE)
from .observation import BID_SLOTS, SIDE_SLOTS
from .vector_checks import VectorEnvError

from .vector_state import VecState

I64 = torch.int64
F32 = torch.float32
F64 = torch.float64
NUM_BIDS = BLIND_NIL_ACTION - BID_ACTION_BASE        # nil and 1..13


class VectorEncoding:
    """Observations and masks of the batched engine (see the module doc)."""

    # ------------------------------------------------------------------ observation
    def observe(self, s: Optional[VecState] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(observation (B, obs_size) float32 (or ``obs_dtype``), action mask (B, num_actions) bool) of the
        players to act."""
        s = self.state if s is None else s
        return self._cast(self._observation(s)), self.legal_mask(s)

    def observe_seat(self, seat: int | torch.Tensor, s: Optional[VecState] = None) -> torch.Tensor:
        """(B, obs_size) float32 (or ``obs_dtype``): what ``seat`` (an int, or one seat per table) sees at every
        table, whether or not it is to act: the AEC env's ``observe(agent)``. Training uses it
        to bootstrap the value of seats waiting for their turn."""
        s = self.state if s is None else s
        if s is None:
            raise VectorEnvError("observe_seat() before reset(): call reset() first")
        try:
            frame = torch.as_tensor(seat, device=self.device)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            frame = None
        if (frame is None or frame.is_floating_point() or frame.is_complex() or frame.dtype == torch.bool
                or frame.shape not in ((), (self.num_envs,))):
            raise VectorEnvError(f"seat={seat!r:.60}: expected a seat 0..{NUM_SEATS - 1}, or one per table "
                                 f"({self.num_envs})")
        frame = frame.to(I64).expand(self.num_envs).contiguous()
        if bool(((frame < 0) | (frame >= NUM_SEATS)).any()):
            raise VectorEnvError(f"seat: expected seats 0..3, got {frame.unique().tolist()}")
        return self._cast(self._encode(s, frame, egocentric=True))

    def _observation(self, s: VecState) -> torch.Tensor:
        """(B, obs_size) float32 observations of the players to act, built in one buffer: card
        planes copied in, every one-hot cell set by a single scatter."""
        return self._encode(s, s.to_act, egocentric=True)

    def _encode(self, s: VecState, frame: torch.Tensor, egocentric: bool) -> torch.Tensor:
        """The observation of seat ``frame`` (egocentric) or the global state (absolute frame,
        ``frame`` = 0, every seat's private rows, then the true hands). Written as elementwise
        pieces joined by one ``cat``, which ``torch.compile`` fuses into a single pass."""
        B = self.num_envs
        rot = (frame[:, None] + self._seat_range[None, :]) & 3         # absolute seat of relative r
        g = lambda t: t.gather(1, rot)                                   # noqa: E731
        done = self._hand_over(s.phase)
        if egocentric:
            mine = lambda t: t.gather(1, frame[:, None])                 # noqa: E731
            visible, passed, received = mine(s.hands) * mine(s.looked), mine(s.passed), mine(s.received)
        else:
            visible, passed, received = s.hands * s.looked, s.passed, s.received
        bids = g(s.bids)
        leader = torch.where(s.trick_len > 0, s.leader, s.to_act)
        in_play = (s.phase == PHASE_PLAY).to(F32)[:, None]
        sides = self._side_features(s)                                  # (B, 2, 7) absolute sides
        if egocentric:
            own = frame & 1
            sides = sides.gather(1, torch.stack([own, 1 - own], 1)[..., None].expand(B, 2, SIDE_SLOTS))
        parts = {
            "hand": self._planes(visible),
            "phase": self._one_hot(s.phase[:, None], PHASE_ONE_HOT_WIDTH),       # the signal phase (6): no cell
            "dealer": self._one_hot(((s.dealer - frame) & 3)[:, None], 4),
            "to_act": self._one_hot(((s.to_act - frame) & 3)[:, None], 4) * (~done).to(F32)[:, None],
            "bids": torch.cat([(bids[..., None] == self._ranges[14]).to(F32),
                               g(s.blind).to(F32)[..., None]], 2).reshape(B, 4 * BID_SLOTS),
            "passed": self._planes(passed),
            "received": self._planes(received),
            "tricks_taken": self._one_hot(g(s.tricks_taken), self.rules.tricks_per_hand + 1),
            "trick_leader": self._one_hot(((leader - frame) & 3)[:, None], 4) * in_play,
            "current_trick": self._one_hot(g(s.trick), NUM_CARDS),             # -1 (no card) matches nothing
            "played": self._planes(g(s.played)),
            "voids": ((g(s.voids)[..., None] >> self._ranges[4]) & 1).to(F32).reshape(B, 16),
            "spades_broken": s.broken.to(F32)[:, None],
            "sides": sides.reshape(B, 2 * SIDE_SLOTS),
            "game": self._game_cells(s),
        }
        if self.rules.signals:
            parts["signal_phase"] = (s.phase == PHASE_SIGNAL).to(F32)[:, None]
            parts["messages"] = self._one_hot(g(s.messages), self.rules.signals)   # -1 (not sent) matches nothing
        pieces = [parts[name] for name in self.layout.obs_blocks]
        if not egocentric:
            pieces.append(self._planes(s.hands))
        return torch.cat(pieces, 1)

    def _hand_over(self, phase: torch.Tensor) -> torch.Tensor:
        """(B,) bool: the hand (or the game) is over. The signal phase (6) comes before the bids,
        so it is not over: with signals the test is two comparisons, without them the one it always was."""
        over = phase >= PHASE_HAND_OVER
        return over & (phase != PHASE_SIGNAL) if self.rules.signals else over

    def _planes(self, boards: torch.Tensor) -> torch.Tensor:
        """(B, K) bitboards -> (B, K * 52) float32 0/1 cells."""
        return ((boards[..., None] & self._card_bits) != 0).to(F32).reshape(boards.shape[0], -1)

    def _one_hot(self, index: torch.Tensor, classes: int) -> torch.Tensor:
        """(B, R) indices -> (B, R * classes) float32 one-hot rows (out-of-range: all zero)."""
        return (index[..., None] == self._ranges[classes]).to(F32).reshape(index.shape[0], -1)

    def _game_cells(self, s: VecState) -> torch.Tensor:
        """(B, 5): the observation's ``game`` block."""
        r = self.rules
        game = torch.zeros(self.num_envs, 5, dtype=F32, device=self.device)
        game[:, 0] = r.target_score / 1000.0
        game[:, 1] = r.mercy_score / 1000.0 if r.mercy_score is not None else 0.0
        game[:, 2] = float(r.mercy_score is not None)
        game[:, 3] = r.bag_limit / 100.0
        if r.max_hands:
            hands_done = s.hand_number - (~self._hand_over(s.phase)).to(I64)
            game[:, 4] = _ratio(hands_done, r.max_hands)
        return game

    def _side_features(self, s: VecState) -> torch.Tensor:
        """(B, 2, 7) per absolute side: the observation's ``sides`` block."""
        r = self.rules
        target = r.target_score
        scores = s.scores
        f = torch.zeros(self.num_envs, 2, SIDE_SLOTS, dtype=F32, device=self.device)
        f[..., 0] = _ratio(scores, target)
        f[..., 1] = _ratio(s.bags, r.bag_limit)
        f[..., 2] = _ratio(r.target_score - scores, target)
        if r.mercy_score is not None:
            f[..., 3] = _ratio(scores - r.mercy_score, target)
        f[..., 4] = self._side_may_blind(scores).to(F32)
        counted, contract = self._counted_and_contract(s)
        f[..., 5] = _ratio(counted, r.tricks_per_hand)
        f[..., 6] = _ratio(contract, r.tricks_per_hand)
        return f

    def _counted_and_contract(self, s: VecState) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 2) tricks counting toward each side's contract, and the contract."""
        bids = _by_side(s.bids)                                        # (B, 2 sides, 2 members)
        taken = _by_side(s.tricks_taken)
        counts = torch.ones_like(bids) if self.rules.nil_tricks_count_for_partner else (bids != 0).to(I64)
        return (taken * counts).sum(2), bids.clamp(min=0).sum(2)

    # ------------------------------------------------------------------ fused encoders (compiled path)
    # Every binary cell of the observation and of the mask is one bit of a few 32-bit words per
    # table (held in int64), built with scalar-per-table shifts and ors; the words are expanded to
    # cells by one broadcast shift. Under torch.compile this is a single vectorized pass that
    # writes each cell once (the eager encoders' many small one-hot blocks and their ``cat``
    # compile into slow code on CPU).
    @staticmethod
    def _pack_words(pieces: list[tuple[int, int, torch.Tensor]], total_bits: int) -> torch.Tensor:
        """(B, ceil(total_bits / 32)) int64 words of 32 bits: each piece ``(offset, width,
        value)`` puts the low ``width`` bits of ``value`` (B,) (non-negative, < 2**width) at bit
        ``offset`` of the concatenated bit string. Offsets and widths are Python constants."""
        words: list[Optional[torch.Tensor]] = [None] * ((total_bits + 31) // 32)
        for offset, width, value in pieces:
            end = offset + width
            for w in range(offset // 32, (end + 31) // 32):
                lo = max(offset, 32 * w)                          # this word's bits of the piece
                hi = min(end, 32 * (w + 1))
                part = value >> (lo - offset) if lo > offset else value
                if hi < end:                                      # the piece goes on: cut it here
                    part = part & ((1 << (hi - lo)) - 1)
                if lo > 32 * w:
                    part = part << (lo - 32 * w)
                words[w] = part if words[w] is None else words[w] | part
        zero = pieces[0][2] * 0
        return torch.stack([zero if w is None else w for w in words], 1)

    def _unpack_bits(self, words: torch.Tensor, count: int, dtype: torch.dtype) -> torch.Tensor:
        """(B, W) 32-bit words (in int64) -> (B, count) 0/1 cells of ``dtype``; the words are
        narrowed to int32 (bit 31 becomes the sign, which the arithmetic shift and ``& 1`` keep)."""
        bits = (words.to(torch.int32)[:, :, None] >> self._shifts32) & 1       # 16 lanes per vector op
        return bits.to(dtype).reshape(words.shape[0], -1)[:, :count]

    def _observation_fused(self, s: VecState, frame: torch.Tensor) -> torch.Tensor:
        """``_cast(_encode(s, frame, egocentric=True))``, value for value, from packed bit words."""
        blocks = self.layout.obs_blocks
        one = torch.ones_like(frame)
        rot = (frame[:, None] + self._seat_range[None, :]) & 3         # absolute seat of relative r
        g = lambda t: t.gather(1, rot)                                   # noqa: E731
        mine = lambda t: t.gather(1, frame[:, None])[:, 0]              # noqa: E731
        rel_bit = lambda seat: one << ((seat - frame) & 3)               # noqa: E731
        done = self._hand_over(s.phase)
        in_play = s.phase == PHASE_PLAY
        signals, T = self.rules.signals, self.rules.tricks_per_hand
        phase_bit = torch.where(s.phase < PHASE_ONE_HOT_WIDTH, one << s.phase, 0) if signals else one << s.phase
        leader = torch.where(s.trick_len > 0, s.leader, s.to_act)
        bids, blind, taken = g(s.bids), g(s.blind), g(s.tricks_taken)
        trick, played, voids = g(s.trick), g(s.played), g(s.voids)
        seat_rows = lambda name, rows, width: [(blocks[name].offset + r * width, width, rows[r])  # noqa: E731
                                               for r in range(4)]
        pieces = [
            (blocks["hand"].offset, NUM_CARDS, mine(s.hands) * mine(s.looked)),
            (blocks["phase"].offset, PHASE_ONE_HOT_WIDTH, phase_bit),
            (blocks["dealer"].offset, 4, rel_bit(s.dealer)),
            (blocks["to_act"].offset, 4, torch.where(done, 0, rel_bit(s.to_act))),
            (blocks["passed"].offset, NUM_CARDS, mine(s.passed)),
            (blocks["received"].offset, NUM_CARDS, mine(s.received)),
            (blocks["trick_leader"].offset, 4, torch.where(in_play, rel_bit(leader), 0)),
            (blocks["spades_broken"].offset, 1, s.broken),
        ]
        pieces += seat_rows("bids", [torch.where(bids[:, r] >= 0, one << bids[:, r].clamp(min=0), 0)
                                     | (blind[:, r] << 14) for r in range(4)], BID_SLOTS)
        pieces += seat_rows("tricks_taken", [one << taken[:, r] for r in range(4)], T + 1)
        pieces += seat_rows("current_trick", [torch.where(trick[:, r] >= 0, one << trick[:, r].clamp(min=0), 0)
                                              for r in range(4)], NUM_CARDS)
        pieces += seat_rows("played", [played[:, r] for r in range(4)], NUM_CARDS)
        pieces += seat_rows("voids", [voids[:, r] for r in range(4)], 4)
        float_start = blocks["sides"].offset                            # the last blocks: sides, game
        words = self._pack_words(sorted(pieces, key=lambda p: p[0]), float_start)
        parts = [self._unpack_bits(words, float_start, F32), self._float_cells_fused(s, frame)]
        if signals:                                                     # then the signal's blocks, after game
            tail = blocks["game"].offset + blocks["game"].size
            first = blocks["messages"].offset - tail
            messages = g(s.messages)
            rows = [(first + r * signals, signals,
                     torch.where(messages[:, r] >= 0, one << messages[:, r].clamp(min=0), 0)) for r in range(4)]
            sent = (blocks["signal_phase"].offset - tail, 1, (s.phase == PHASE_SIGNAL).to(I64))
            tail_words = self._pack_words(sorted([sent] + rows, key=lambda p: p[0]), self.obs_size - tail)
            parts.append(self._unpack_bits(tail_words, self.obs_size - tail, F32))
        obs = torch.cat(parts, 1)
        return self._cast(obs)       # converting afterwards compiles to faster CPU code than 16-bit cells

    def _float_cells_fused(self, s: VecState, frame: torch.Tensor) -> torch.Tensor:
        """(B, 19): the ``sides`` block (own side first) and the ``game`` block, each cell computed
        from per-table scalars exactly as ``_side_features`` and ``_game_cells`` do."""
        r = self.rules
        target = r.target_score
        own = (frame & 1) == 0                                           # own side is side 0
        pick = lambda t, j: torch.where(own, t[:, j], t[:, 1 - j])       # noqa: E731  relative side j
        scores, bags = s.scores, s.bags
        may = self._side_may_blind(scores)
        counted, contract = self._counted_and_contract(s)
        zero = torch.zeros_like(scores[:, 0], dtype=F32)
        cells = []
        for j in range(2):
            sc = pick(scores, j)
            cells += [_ratio(sc, target), _ratio(pick(bags, j), r.bag_limit), _ratio(r.target_score - sc, target),
                      _ratio(sc - r.mercy_score, target) if r.mercy_score is not None else zero,
                      pick(may, j).to(F32), _ratio(pick(counted, j), r.tricks_per_hand),
                      _ratio(pick(contract, j), r.tricks_per_hand)]
        cells += [zero + r.target_score / 1000.0, zero + (r.mercy_score / 1000.0 if r.mercy_score is not None else 0.0),
                  zero + float(r.mercy_score is not None), zero + r.bag_limit / 100.0]
        if r.max_hands:
            hands_done = s.hand_number - (~self._hand_over(s.phase)).to(I64)
            cells.append(_ratio(hands_done, r.max_hands))
        else:
            cells.append(zero)
        return torch.stack(cells, 1)

    def _legal_bid_bits(self, s: VecState, seat: torch.Tensor) -> torch.Tensor:
        """(B,) bit b set where ``seat`` may bid b (0 = nil, at most the ``T`` tricks of a hand):
        ``_legal_bids`` as a bitboard."""
        r = self.rules
        T = r.tricks_per_hand
        partner_bid = s.bids.gather(1, ((seat + 2) & 3)[:, None])[:, 0]
        has_partner = partner_bid >= 0
        low = torch.full_like(seat, 1)
        high = torch.full_like(seat, T)
        nil_ok = torch.full_like(seat, int(r.nil))
        if r.min_team_bid:
            low = torch.where(has_partner, torch.clamp(r.min_team_bid - partner_bid, min=1), low)
            nil_ok = nil_ok * (~has_partner | (partner_bid >= r.min_team_bid)).to(I64)
        if r.max_team_bid is not None:
            high = torch.where(has_partner, torch.clamp(r.max_team_bid - partner_bid, max=T),
                               torch.full_like(seat, min(T, r.max_team_bid - (0 if r.nil else 1))))
        low = low.clamp(1, 14)
        ones = torch.ones_like(seat)
        legal = torch.where(high >= low, (ones << (high.clamp(0, T) + 1)) - (ones << low), 0) | nil_ok
        if not r.bids_may_total_13:
            others = torch.where(self._seat_range[None, :] == seat[:, None], 0, s.bids.clamp(min=0)).sum(1)
            forbidden = T - others                 # the bids may not total the tricks of a hand
            hit = torch.where((seat == s.dealer) & (forbidden >= 0) & (forbidden <= T),
                              ones << forbidden.clamp(0, T), 0)
            without = legal & ~hit
            legal = torch.where(without != 0, without, legal)
        return legal

    def _legal_mask_fused(self, s: VecState) -> torch.Tensor:
        """``legal_mask(s)`` as (B, num_actions) 0/1 uint8 cells, from packed bit words."""
        bids = torch.where(s.phase == PHASE_BIDDING, self._legal_bid_bits(s, s.to_act), 0)
        blind = torch.where(s.phase == PHASE_BLIND_DECISION, 3, torch.zeros_like(s.phase))
        pieces = [(0, NUM_CARDS, self._legal_cards(s)), (BID_ACTION_BASE, NUM_BIDS, bids), (BLIND_NIL_ACTION, 2, blind)]
        signals = self.rules.signals
        if signals:                                      # every message, in the signal phase
            pieces.append((SIGNAL_ACTION_BASE, signals,
                           torch.where(s.phase == PHASE_SIGNAL, (1 << signals) - 1, torch.zeros_like(s.phase))))
        words = self._pack_words(pieces, self.num_actions)
        return self._unpack_bits(words, self.num_actions, torch.uint8)


def _ratio(numerator: torch.Tensor, denominator: int) -> torch.Tensor:
    """``numerator / denominator`` for integer tensors and an integer constant, as float32 rounded
    exactly as the AEC env's Python division is, on every device and under ``torch.compile``.

    float32 division by a constant is not enough: CUDA multiplies by the constant's reciprocal,
    one float32 ulp off now and then (7/13, ...). In float64 any such error is far too small to
    move the float32 rounding of a ratio of small integers (never halfway between two float32)."""
    return (numerator.to(F64) / denominator).to(F32)


def _suit(card: torch.Tensor) -> torch.Tensor:
    """Suits of cards 0..51 (``card // 13`` without an integer division, cheaper when compiled)."""
    return (card >= NUM_RANKS).to(I64) + (card >= 2 * NUM_RANKS).to(I64) + (card >= FIRST_SPADE).to(I64)


def _by_side(t: torch.Tensor) -> torch.Tensor:
    """(B, 4) per seat -> (B, 2 sides, 2 members): side 0 = seats 0, 2; side 1 = seats 1, 3."""
    return t.view(t.shape[0], NUM_SEATS // NUM_SIDES, NUM_SIDES).transpose(1, 2)
