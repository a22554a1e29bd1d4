"""Card ids and parsing (docs/rules.md, "Seats, cards and the deal"; docs/api.md, reset option ``deal``)."""

import numpy as np
import pytest

from spades_env import card_str, parse_card
from spades_env.cards import card_rank, card_suit

# docs/rules.md: id = suit * 13 + rank, suits clubs=0, diamonds=1, hearts=2, spades=3; ranks 2..A = 0..12.
FIXED_IDS = {"2C": 0, "AC": 12, "2D": 13, "2H": 26, "2S": 39, "AS": 51}


@pytest.mark.parametrize("text,expected", sorted(FIXED_IDS.items()))
def test_documented_ids(text, expected):
    assert parse_card(text) == expected
    assert card_str(expected) == text


def test_id_formula_for_every_card():
    seen = set()
    for s, suit in enumerate("CDHS"):
        for r, rank in enumerate("23456789TJQKA"):
            card = parse_card(rank + suit)
            assert card == s * 13 + r
            assert card_suit(card) == s and card_rank(card) == r
            assert card_str(card) == rank + suit
            seen.add(card)
    assert seen == set(range(52))


@pytest.mark.parametrize("text,expected", [
    ("AS", 51), ("KS", 50), ("TD", 13 + 8), ("10D", 13 + 8), ("JH", 26 + 9), ("QC", 10),
    ("10S", 39 + 8), ("9C", 7),
])
def test_parse_rank_then_suit(text, expected):
    assert parse_card(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("as", 51), ("td", 21), ("10d", 21), ("Td", 21), ("tD", 21), ("2c", 0), ("qh", 36),
])
def test_parse_lower_and_mixed_case(text, expected):
    assert parse_card(text) == expected


def test_ten_written_two_ways_is_the_same_card():
    for suit in "CDHS":
        assert parse_card("10" + suit) == parse_card("T" + suit)


@pytest.mark.parametrize("value", [0, 12, 13, 26, 39, 51, np.int64(7), np.int8(51)])
def test_parse_accepts_ids(value):
    assert parse_card(value) == int(value)


@pytest.mark.parametrize("value", ["ZZ", "1S", "AX", "A", "", "ASS", "11D", "S", "AS KS"])
def test_bad_string_is_a_value_error_naming_it(value):
    with pytest.raises(ValueError) as info:
        parse_card(value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("value", [52, -1, 100])
def test_out_of_range_id_is_a_value_error_naming_it(value):
    with pytest.raises(ValueError, match=str(value)):
        parse_card(value)


@pytest.mark.parametrize("value", [None, 1.0, True, ["AS"]])
def test_non_card_types_are_value_errors(value):
    with pytest.raises(ValueError) as info:
        parse_card(value)
    assert repr(value) in str(info.value)


def test_round_trip_all_ids():
    for card in range(52):
        assert parse_card(card_str(card)) == card
        assert parse_card(card_str(card).lower()) == card
