"""Card ids, parsing and printing.

A card id is ``suit * 13 + rank`` with suits clubs=0, diamonds=1, hearts=2, spades=3 and ranks
2..A = 0..12 (the same ids as OpenSpiel). Hands are kept as 52-bit integers (bit ``id`` set when
the card is held), which makes following suit and trick resolution a couple of bit operations.
"""

from __future__ import annotations

from typing import Iterable

NUM_CARDS = 52
NUM_SUITS = 4
NUM_RANKS = 13
CLUBS, DIAMONDS, HEARTS, SPADES = range(4)

SUIT_LETTERS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
RANK_LETTERS = "23456789TJQKA"

FULL_DECK = (1 << NUM_CARDS) - 1
SUIT_MASKS = tuple(((1 << NUM_RANKS) - 1) << (NUM_RANKS * s) for s in range(NUM_SUITS))
SPADES_MASK = SUIT_MASKS[SPADES]
NON_SPADES_MASK = FULL_DECK & ~SPADES_MASK
TWO_OF_CLUBS = 0
FIRST_SPADE = SPADES * NUM_RANKS
"""The two of spades' id: the spades are FIRST_SPADE..51, so ``card >= FIRST_SPADE`` is a trump."""

# The four-seat partnership table (the batched engine plays only this one; the AEC env also
# seats three players in cutthroat, and reads its counts from the rules).
NUM_SEATS = 4
NUM_SIDES = 2
"""Partnerships: side 0 is seats 0 and 2, side 1 seats 1 and 3 (``seat % NUM_SIDES``)."""
CARDS_PER_SEAT = NUM_CARDS // NUM_SEATS
"""Cards dealt to each seat, and so the tricks in a hand (13)."""


def card_suit(card: int) -> int:
    return card // NUM_RANKS


def card_rank(card: int) -> int:
    return card % NUM_RANKS


def make_card(suit: int, rank: int) -> int:
    return suit * NUM_RANKS + rank


def card_str(card: int) -> str:
    """``"AS"``, ``"TD"``, ``"2C"``: rank letter then suit letter."""
    return RANK_LETTERS[card % NUM_RANKS] + SUIT_LETTERS[card // NUM_RANKS]


def card_pretty(card: int) -> str:
    """``"A♠"``, ``"10♦"``: for people."""
    rank = RANK_LETTERS[card % NUM_RANKS]
    return ("10" if rank == "T" else rank) + SUIT_SYMBOLS[card // NUM_RANKS]


def parse_card(value: int | str) -> int:
    """A card id from an id or a string such as ``"AS"``, ``"TD"``, ``"10D"``, ``"s2"``, ``"A♠"``.

    Raises ``ValueError`` naming the value and the accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a card: {value!r} (expected an id 0..51 or a string like 'AS', 'TD', '10D')")
    if isinstance(value, int) or (hasattr(value, "__index__") and not isinstance(value, str)):
        card = int(value)
        if 0 <= card < NUM_CARDS:
            return card
        raise ValueError(f"card id {card} is out of range (expected 0..51)")
    if not isinstance(value, str):
        raise ValueError(f"not a card: {value!r} (expected an id 0..51 or a string like 'AS', 'TD', '10D')")
    text = value.strip().upper().replace("10", "T")
    for symbol, letter in zip(SUIT_SYMBOLS, SUIT_LETTERS):
        text = text.replace(symbol, letter)
    if len(text) == 2:
        for rank_char, suit_char in ((text[0], text[1]), (text[1], text[0])):
            if rank_char in RANK_LETTERS and suit_char in SUIT_LETTERS:
                return make_card(SUIT_LETTERS.index(suit_char), RANK_LETTERS.index(rank_char))
    raise ValueError(f"unknown card {value!r} (expected an id 0..51 or a string like 'AS', 'TD', '10D')")


def cards_to_mask(cards: Iterable[int]) -> int:
    mask = 0
    for card in cards:
        mask |= 1 << card
    return mask


def mask_to_cards(mask: int) -> list[int]:
    """Card ids in a bitmask, ascending."""
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def highest_card(mask: int) -> int:
    return mask.bit_length() - 1


def lowest_card(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def format_hand(mask: int, pretty: bool = False) -> str:
    """A hand by suit, spades first, high to low: ``S: A K 7  H: Q 3 ...``."""
    parts = []
    for suit in (SPADES, HEARTS, DIAMONDS, CLUBS):
        ranks = [RANK_LETTERS[card_rank(c)] for c in reversed(mask_to_cards(mask & SUIT_MASKS[suit]))]
        if pretty:
            ranks = ["10" if r == "T" else r for r in ranks]
            label = SUIT_SYMBOLS[suit]
        else:
            label = SUIT_LETTERS[suit] + ":"
        parts.append(f"{label} {' '.join(ranks) if ranks else '-'}")
    return "  ".join(parts)
