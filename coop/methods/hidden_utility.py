"""Hidden utilities (``reward_bias``): partners that want something besides the score.

Hidden-utility self-play (Yu et al., "Learning Zero-Shot Cooperation with Humans, Assuming
Humans Are Biased", ICLR 2023) trains partners whose reward adds a weight on chosen events to the
game's own, so that a population holds conventions that score well enough but differ in ways a
policy trained with one of them would not guess. Here the events are the acting seat's own
decisions, read from the engine's state just before the step:

- ``bid``: per trick bid (a bid of 4 earns ``4 * w``; nil and blind nil earn nothing);
- ``nil``: bidding nil or blind nil;
- ``lead_spade``: leading a spade (drawing trumps);
- ``ruff``: playing a spade to a trick led in another suit (trumping in);
- ``overtake``: beating the partner's card when the partner is winning the trick.

Weights are in points (the reward's scale is applied here), paid to the seat that made the
decision, and only to the learner's decisions: past policies, partners and the heuristic at the
table play the plain game. A card event's count varies from hand to hand (playing a spade at
all does not: every card is played), so each weight changes what is best. Evaluation never sees
the bias: it scores the game.
"""

from __future__ import annotations

import math
from typing import Mapping

import torch

from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, NIL_ACTION

EVENTS = ("bid", "nil", "lead_spade", "ruff", "overtake")
MAX_WEIGHT = 200.0                    # points per event: beyond a blind nil's worth is a typo
CARDS_PER_SUIT, SPADES, NUM_CARDS = 13, 3, 52
NUM_BIDS = 14                         # nil, 1..13 (the bidding phase's bids)


class HiddenUtilityError(ValueError):
    """A ``reward_bias`` that names an unknown event or an unusable weight."""


def check_reward_bias(bias: object) -> dict[str, float]:
    """``bias`` as {event: points}, or :class:`HiddenUtilityError` naming what is wrong."""
    if bias is None:
        return {}
    if not isinstance(bias, Mapping):
        raise HiddenUtilityError(f"reward_bias={bias!r}: expected a mapping of events to points, e.g. "
                                 "{ruff: 10, nil: 20} (events: " + ", ".join(EVENTS) + ")")
    checked = {}
    for event, weight in bias.items():
        if event not in EVENTS:
            raise HiddenUtilityError(f"reward_bias: unknown event {event!r}; expected one of {', '.join(EVENTS)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) \
                or abs(weight) > MAX_WEIGHT:
            raise HiddenUtilityError(f"reward_bias: {event}={weight!r}: expected points between "
                                     f"-{MAX_WEIGHT:g} and {MAX_WEIGHT:g}")
        checked[str(event)] = float(weight)
    return checked


class HiddenUtility:
    """The bias of one run: :meth:`rewards` for the card and bid decisions of a step (reward
    units), :meth:`bid_offsets` for the counterfactual values of the 14 bids."""

    def __init__(self, bias: Mapping[str, float], reward_scale: float) -> None:
        self.weights = {event: float(w) * reward_scale for event, w in check_reward_bias(bias).items() if w}

    def __bool__(self) -> bool:
        return bool(self.weights)

    def bid_offsets(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """(14,) what bidding nil, 1, ..., 13 earns besides the score, in reward units."""
        offsets = torch.arange(NUM_BIDS, dtype=torch.float32, device=device) * self.weights.get("bid", 0.0)
        offsets[0] = self.weights.get("nil", 0.0)
        return offsets

    @torch.no_grad()
    def rewards(self, state, seat: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """(B,) the bias each table's acting ``seat`` earns for ``actions``, given the engine's
        ``state`` before the step (``trick_len``, ``led_suit``, ``win_seat``, ``win_card``)."""
        w = self.weights
        out = torch.zeros(actions.shape[0], dtype=torch.float32, device=actions.device)
        if not w:
            return out
        is_bid = (actions > BID_ACTION_BASE) & (actions < BID_ACTION_BASE + NUM_BIDS)
        if "bid" in w:
            out += torch.where(is_bid, (actions - BID_ACTION_BASE).to(torch.float32) * w["bid"], 0.0)
        if "nil" in w:
            out += ((actions == NIL_ACTION) | (actions == BLIND_NIL_ACTION)).to(torch.float32) * w["nil"]
        card = actions < NUM_CARDS
        spade = card & (actions // CARDS_PER_SUIT == SPADES)
        following = card & (state.trick_len > 0)
        if "lead_spade" in w:
            out += (spade & (state.trick_len == 0)).to(torch.float32) * w["lead_spade"]
        if "ruff" in w:
            out += (spade & following & (state.led_suit != SPADES)).to(torch.float32) * w["ruff"]
        if "overtake" in w:
            partner_wins = following & (state.win_seat == (seat + 2) % 4)
            win = state.win_card
            same_suit = actions // CARDS_PER_SUIT == win // CARDS_PER_SUIT
            beats = (same_suit & (actions > win)) | (spade & (win // CARDS_PER_SUIT != SPADES))
            out += (partner_wins & beats).to(torch.float32) * w["overtake"]
        return out


__all__ = ["EVENTS", "HiddenUtility", "HiddenUtilityError", "check_reward_bias"]
