"""The words every face of the game uses for seats, partnerships, bids, cards and actions.

One place for them so that ``env.render()``, the terminal table (``spades-play``), the web table
(``spades-web``, which sends them to the page) and evaluation reports say the same thing.
Seats are 0..3 = North, East, South, West; partners sit opposite (0+2 = North-South, side 0;
1+3 = East-West, side 1). In cutthroat (three or four players alone) a seat is "Player N".
"""

from __future__ import annotations

from typing import Optional

from .cards import card_pretty, card_str          # noqa: F401  (card text: "AS", "A♠")
from .game import action_str                       # noqa: F401  (action text: "bid 4", "AS")

SEAT_NAMES = ("North", "East", "South", "West")
SIDE_NAMES = ("North-South", "East-West")     # the partnerships, by side index
SIDE_SHORT = ("N/S", "E/W")


def seat_name(seat: int, players: int = 4) -> str:
    """``"North"`` for seat 0 at a four-seat table; ``"Player 2"`` where seats have no compass."""
    return SEAT_NAMES[seat] if players == 4 else f"Player {seat}"


def seat_label(seat: int, players: int = 4) -> str:
    """``"North (0)"``: the name with the seat number that the API uses."""
    return f"{SEAT_NAMES[seat]} ({seat})" if players == 4 else f"Player {seat}"


def side_name(side: int, partnerships: bool = True, short: bool = False) -> str:
    """A partnership's name (``"North-South"``, or ``"N/S"`` when short); in cutthroat a side is
    a player."""
    if not partnerships:
        return f"Player {side}"
    return (SIDE_SHORT if short else SIDE_NAMES)[side]


def bid_word(bid: Optional[int], blind: bool = False) -> str:
    """A bid as people say it: ``"-"`` not yet bid (None or a negative placeholder), ``"nil"``,
    ``"blind nil"``, or the number of tricks."""
    if bid is None or bid < 0:
        return "-"
    if bid == 0:
        return "blind nil" if blind else "nil"
    return str(bid)
