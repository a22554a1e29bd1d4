"""Scoring's four twins agree hand for hand: spades_env/scoring.py (the reference), the torch
engine's SpadesVectorEnv._score_hand, engine.c's score_hand (the batched C step) and search.c's
side_points (the search's play-outs).

The same random hand outcomes (bids with nil and blind nil, tricks, scores and bags before the
hand, many of them near the target and mercy scores) are scored by each, in every partnership
preset and the variants that change scoring: the two batched engines play the last card of the
hand from a constructed position (so their own step scores it and decides the game's end), the
torch one is also asked directly, and search.c is called through its test entry point. Each
engine's points, bags after, new scores and winner must be the reference's."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from spades_env import native
from spades_env.cards import NUM_CARDS, SPADES, make_card
from spades_env.game import PHASE_PLAY
from spades_env.scoring import bags_in_score, game_winner, score_hand
from spades_env.vector import SpadesVectorEnv

pytestmark = pytest.mark.skipif(native.unavailable_reason() is not None, reason="no native library")

SCORING_CASES = [
    {"rules": "standard"},
    {"rules": "basic"},
    {"rules": "tournament"},
    {"rules": "openspiel"},                                   # bags from the score's last digit, mercy -350
    {"rules": "standard", "nil_tricks_count_for_partner": True, "bag_limit": 5, "bag_penalty": 50},
    {"rules": "standard", "bags": False, "nil_bonus": 50, "blind_nil_bonus": 150},
    {"rules": "standard", "mercy_score": None, "target_score": 250, "max_hands": 30},
    {"rules": "openspiel", "nil_tricks_count_for_partner": False, "target_score": 200, "mercy_score": -100},
]
TABLES = 400
ACE_OF_SPADES = make_card(SPADES, 12)


def _random_hands(rules, rng: random.Random) -> list[dict]:
    """Hand outcomes: per seat a bid (nil often, blind nil where the rules have it) and tricks
    that total 13; per side a score (spread around the target and mercy scores) and bags."""
    hands = []
    for _ in range(TABLES):
        bids = [0 if rng.random() < 0.3 else rng.randint(1, 6) for _ in range(4)]
        blind = [int(b == 0 and rules.blind_nil and rng.random() < 0.4) for b in bids]
        cuts = sorted(rng.randint(0, 13) for _ in range(3))
        tricks = [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], 13 - cuts[2]]
        rng.shuffle(tricks)
        low = rules.mercy_score - 60 if rules.mercy_score is not None else -300
        scores = [rng.randint(low, rules.target_score + 40) for _ in range(2)]
        if rules.bags_from_score_digit:
            bags = [bags_in_score(s) for s in scores]
        else:
            bags = [rng.randint(0, rules.bag_limit - 1) if rules.bags else 0 for _ in range(2)]
        hands.append({"bids": bids, "blind": blind, "tricks": tricks, "scores": scores, "bags": bags,
                      "leader": rng.randrange(4), "winner": rng.choice([s for s in range(4) if tricks[s]]),
                      "dealer": rng.randrange(4)})
    return hands


def _reference(rules, hand) -> dict:
    sides = score_hand(rules, hand["bids"], [bool(b) for b in hand["blind"]], hand["tricks"], hand["scores"],
                       hand["bags"])
    new_scores = [hand["scores"][i] + sides[i].points for i in range(2)]
    winner = game_winner(rules, new_scores)
    return {"points": [s.points for s in sides], "bags": [s.bags_after for s in sides], "scores": new_scores,
            "winner": -1 if winner is None else winner}


def _last_trick_state(env: SpadesVectorEnv, hands: list[dict]):
    """Every table one card before the end of its hand: twelve tricks taken as the outcome says
    (less the last one, which ``winner`` takes with the ace of spades; the others play low clubs),
    three cards of the last trick down, the fourth seat to play its only card."""
    s = env._empty_state()
    B = len(hands)
    fields = {name: getattr(s, name).clone() for name in ("hands", "played", "trick", "bids", "blind", "looked",
                                                          "tricks_taken", "scores", "bags", "deal")}
    to_act, leader, led, win_card, win_seat, last_cards = [], [], [], [], [], []
    for b, hand in enumerate(hands):
        w, lead = hand["winner"], hand["leader"]
        order = [(lead + i) % 4 for i in range(4)]
        clubs = iter(range(3))                                     # 2, 3, 4 of clubs
        card_of = {seat: ACE_OF_SPADES if seat == w else next(clubs) for seat in order}
        rest = list(range(3, ACE_OF_SPADES))                       # the 48 cards of the first twelve tricks
        for seat in range(4):
            taken = rest[12 * seat:12 * seat + 12]
            played = sum(1 << c for c in taken) | ((1 << card_of[seat]) if seat != order[3] else 0)
            fields["played"][b, seat] = played
            fields["hands"][b, seat] = (1 << card_of[seat]) if seat == order[3] else 0
            fields["deal"][b, seat] = sum(1 << c for c in taken) | (1 << card_of[seat])
            fields["trick"][b, seat] = card_of[seat] if seat != order[3] else -1
        best = order[0]
        for seat in order[1:3]:
            a, c = card_of[seat], card_of[best]
            if (a // 13 == c // 13 and a > c) or (a // 13 == SPADES and c // 13 != SPADES):
                best = seat
        to_act.append(order[3]), leader.append(lead), led.append(card_of[lead] // 13)
        win_card.append(card_of[best]), win_seat.append(best), last_cards.append(card_of[order[3]])
        tricks = list(hand["tricks"])
        tricks[w] -= 1
        fields["tricks_taken"][b] = torch.tensor(tricks)
        fields["bids"][b] = torch.tensor(hand["bids"])
        fields["blind"][b] = torch.tensor(hand["blind"])
        fields["looked"][b] = 1
        fields["scores"][b] = torch.tensor(hand["scores"])
        fields["bags"][b] = torch.tensor(hand["bags"])
    t = lambda values: torch.tensor(values, dtype=torch.int64)      # noqa: E731
    state = s.replace(**fields, phase=torch.full((B,), PHASE_PLAY), to_act=t(to_act), leader=t(leader),
                      led_suit=t(led), win_card=t(win_card), win_seat=t(win_seat), trick_len=torch.full((B,), 3),
                      tricks_played=torch.full((B,), 12), broken=torch.ones(B, dtype=torch.int64),
                      dealer=t([h["dealer"] for h in hands]), hand_number=torch.ones(B, dtype=torch.int64),
                      deal_index=torch.ones(B, dtype=torch.int64))
    return state, t(last_cards)


def _play_last_card(kwargs, hands, backend):
    env = SpadesVectorEnv(len(hands), seed=0, backend=backend, reward="team_score", reward_scale=1.0, episode="game",
                          **kwargs)
    env.reset(seed=0)
    env.state, last = _last_trick_state(env, hands)
    env._mask = env.legal_mask(env.state)
    direct_points, direct_bags = env._score_hand(env.state.replace(tricks_taken=torch.tensor([h["tricks"] for h in hands])))
    _, _, rewards, done, info = env.step(last)                     # check_actions: the card is legal
    return {"rewards": rewards, "done": done, "final_scores": info["final_scores"], "winner": info["winner"],
            "bags": env.state.bags.clone(), "direct": (direct_points, direct_bags)}


@pytest.mark.parametrize("kwargs", SCORING_CASES, ids=lambda k: "-".join(f"{v}" for v in k.values()))
def test_the_four_scoring_twins_agree_hand_for_hand(kwargs):
    from agents.native_search import rules_array
    rules = SpadesVectorEnv(1, **kwargs).rules
    hands = _random_hands(rules, random.Random(str(kwargs)))
    expected = [_reference(rules, h) for h in hands]
    points = torch.tensor([e["points"] for e in expected])
    # the hands cover what scoring distinguishes: kept and broken (blind) nils, set contracts,
    # bag penalties, and games ended by the target, by the mercy score, and going on
    ends = [e["winner"] for e in expected]
    assert ends.count(-1) > 20 and len(ends) - ends.count(-1) > 20
    if rules.mercy_score is not None:
        assert any(min(e["scores"]) <= rules.mercy_score and e["winner"] >= 0 for e in expected)
    assert any(h["bids"][s] == 0 and h["tricks"][s] for h in hands for s in range(4))
    if rules.blind_nil:
        assert any(h["blind"][s] and not h["tricks"][s] for h in hands for s in range(4))
    if rules.bags:
        assert any(e["points"][i] < 0 < h["tricks"][i] + h["tricks"][i + 2] - h["bids"][i] - h["bids"][i + 2]
                   for h, e in zip(hands, expected) for i in range(2))           # a penalty despite overtricks

    for backend in ("torch", "native"):
        out = _play_last_card(kwargs, hands, backend)
        assert torch.equal(out["rewards"].to(torch.int64), points.repeat(1, 2)), backend     # per seat: its side's
        assert torch.equal(out["final_scores"], torch.tensor([e["scores"] for e in expected])), backend
        winners = torch.tensor([e["winner"] for e in expected])
        assert torch.equal(out["winner"], winners), backend
        assert torch.equal(out["done"], winners >= 0), backend
        going_on = winners < 0            # (where the game ended the tables began the next one)
        assert torch.equal(out["bags"][going_on], torch.tensor([e["bags"] for e in expected])[going_on]), backend
        if backend == "torch":
            direct_points, direct_bags = out["direct"]
            assert torch.equal(direct_points, points)
            assert torch.equal(direct_bags, torch.tensor([e["bags"] for e in expected]) if rules.bags
                               else torch.zeros_like(direct_bags))

    search_rules = rules_array(rules)
    for hand, e in zip(hands, expected):
        for side in range(2):
            members = (side, side + 2)
            got = native.search_side_points(search_rules, [hand["bids"][m] for m in members],
                                            [hand["blind"][m] for m in members], [hand["tricks"][m] for m in members],
                                            hand["scores"][side], hand["bags"][side])
            assert got == e["points"][side], (hand, side)


def test_the_search_scoring_entry_point_checks_its_arguments():
    from agents.native_search import rules_array
    good = rules_array(SpadesVectorEnv(1).rules)
    assert native.search_side_points(good, [3, 0], [0, 1], [4, 0], 0, 0) == 30 + 1 + 200
    for args, message in [
        ((good[:-1], [3], [0], [3], 0, 0), r"rules_values: expected a C-contiguous \(13,\) int64 array"),
        ((good.astype(np.int32), [3], [0], [3], 0, 0), r"rules_values: .*int32"),
        ((good, [3, 0, 1], [0, 0, 0], [3, 0, 0], 0, 0), r"bids: expected one or two integers 0..13"),
        ((good, [14], [0], [3], 0, 0), r"bids: expected one or two integers 0..13"),
        ((good, [3], [2], [3], 0, 0), r"blind: expected one or two integers 0..1"),
        ((good, [3], [0], [-1], 0, 0), r"tricks: expected one or two integers 0..13"),
        ((good, [3, 1], [0, 0], [3], 0, 0), r"bids, blind, tricks: expected one entry per member"),
        ((good, [3], [0], [3], 10 ** 12, 0), r"score_before: expected an integer within"),
        ((good, [3], [0], [3], 0, 1.5), r"bags_before: expected an integer within"),
        ((np.where(np.arange(13) == 8, 0, good), [3], [0], [3], 0, 0), r"rules_values: expected the search's rule"),
    ]:
        with pytest.raises(native.NativeEngineError, match="search_side_points: " + message):
            native.search_side_points(*args)
    assert NUM_CARDS == 52
