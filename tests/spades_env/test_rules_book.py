"""The rule book's worked scoring examples (docs/rules.md) are what the engine scores."""

import pytest

from spades_env.rules import make_rules
from spades_env.scoring import score_side

STANDARD = make_rules("standard")

# (bids, blind, tricks, score before, bags before) -> (points, bags after), as in docs/rules.md
EXAMPLES = [
    (([4], [False], [6], 0, 0), (42, 2)),
    (([7], [False], [5], 0, 0), (-70, 0)),
    (([3], [False], [5], 212, 9), (-68, 1)),
    (([0, 6], [False, False], [0, 5], 0, 0), (40, 0)),
    (([0, 3], [False, False], [2, 3], 0, 0), (-70, 2)),
    (([0, 5], [True, False], [0, 6], 0, 0), (251, 1)),
    (([0, 2], [True, False], [1, 4], 0, 0), (-178, 3)),
]


@pytest.mark.parametrize("hand,expected", EXAMPLES)
def test_worked_example(hand, expected):
    result = score_side(STANDARD, *hand)
    assert (result.points, result.bags_after) == expected
