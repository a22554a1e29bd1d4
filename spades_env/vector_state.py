"""The batched engine's state (:class:`VecState`), in a module of its own: the engine
(:mod:`spades_env.vector`), its encoding, its checks and its C step (:mod:`spades_env.native`)
all read it, and none of them needs the engine to know its fields."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


@dataclass(frozen=True)
class VecState:
    """Every table's state; each field has the batch as its first dimension. Frozen: a change
    is a new state (:meth:`replace`), so that ``backend="native"``, which steps the tensors in
    place, can tell a new state from the one it is stepping by identity alone."""

    hands: torch.Tensor          # (B, 4) bitboards of the cards each seat holds
    deal: torch.Tensor           # (B, 4) the hand's deal (before passing)
    phase: torch.Tensor          # (B,) PHASE_*
    to_act: torch.Tensor         # (B,)
    dealer: torch.Tensor         # (B,)
    bids: torch.Tensor           # (B, 4) -1 before bidding, 0 nil
    blind: torch.Tensor          # (B, 4) 1 for blind nil
    looked: torch.Tensor         # (B, 4) 1 once the seat has seen its cards
    passed: torch.Tensor         # (B, 4) bitboards
    received: torch.Tensor       # (B, 4) bitboards
    pass_from: torch.Tensor      # (B, Q) the passing order
    pass_to: torch.Tensor        # (B, Q)
    pass_len: torch.Tensor       # (B,)
    pass_pos: torch.Tensor       # (B,)
    trick: torch.Tensor          # (B, 4) card each seat played to the current trick, -1 none
    trick_len: torch.Tensor      # (B,)
    leader: torch.Tensor         # (B,) leader of the current trick
    led_suit: torch.Tensor       # (B,)
    win_card: torch.Tensor       # (B,)
    win_seat: torch.Tensor       # (B,)
    tricks_taken: torch.Tensor   # (B, 4)
    tricks_played: torch.Tensor  # (B,)
    played: torch.Tensor         # (B, 4) bitboards
    voids: torch.Tensor          # (B, 4) 4-bit suit sets
    broken: torch.Tensor         # (B,) spades broken
    scores: torch.Tensor         # (B, 2)
    bags: torch.Tensor           # (B, 2)
    hand_number: torch.Tensor    # (B,) hands started in this game
    deal_index: torch.Tensor     # (B,) next entry of the table's deal queue
    potential: torch.Tensor      # (B, 2) shaping potential (points)
    messages: torch.Tensor       # (B, 4) the message each seat sent this hand (the free signal), -1 none

    def clone(self) -> "VecState":
        return VecState(**{f.name: getattr(self, f.name).clone() for f in fields(self)})

    def replace(self, **changes: torch.Tensor) -> "VecState":
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return VecState(**values)
