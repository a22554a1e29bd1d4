"""The rules of bidding and play (docs/rules.md "Table, cards, deal", "Bidding", "Play", "Presets"),
through the engine and the env, with hand-made deals and exact legal-action sets; then bad input.
"""

import random
import re
import warnings

import numpy as np
import pytest

from spades_env import DealError, IllegalActionError, card_str, make_rules, spades_v0
from spades_env.game import (PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_HAND_OVER, PHASE_PASSING,
                             PHASE_PLAY, SpadesGame)

from helpers import (apply_bids, bid, card, cards, env_play_script, fill_deal, names,
                     play_first_legal, scripted_deal, suit_deal, whole_suit,
                     winners_for)

STD = make_rules("standard")
ALL_BIDS = list(range(52, 66))

# ---------------------------------------------------------------------------------------------
# Hand-made deals (checked complete and disjoint by fill_deal).

# Trick-winner deal: seat 0 leads 2H (dealer 3); see test_trick_winner.
DEAL_T = fill_deal({
    0: "2H 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC",
    1: "AC 4S 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD",
    2: "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH 2S",
    3: "KD AD 3S 5S 6S 7S 8S 9S TS JS QS KS AS",
})

# Breaking deal: seat 0 all hearts; seat 1 2S + clubs; seat 2 spades, AC, diamonds;
# seat 3 spades and diamonds.
DEAL_B = fill_deal({
    0: "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    1: "2S 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC",
    2: "3S 4S 5S 6S AC 2D 3D 4D 5D 6D 7D 8D 9D",
    3: "7S 8S 9S TS JS QS KS AS TD JD QD KD AD",
})


def new_game(rules=STD, deal=None, dealer=3, scores=None, bags=None, seed=0, **over):
    if isinstance(rules, str) or over:
        rules = make_rules(rules, **over)
    return SpadesGame(rules, seed, dealer=dealer, scores=scores, bags=bags, deal=deal)


def to_play(rules=STD, deal=None, dealer=3, bids=(3, 3, 3, 3), **kw):
    """A game in the play phase after everyone bid (no blind nil)."""
    game = new_game(rules, deal, dealer, **kw)
    apply_bids(game, bids)
    assert game.phase == PHASE_PLAY
    return game


def legal_cards(game):
    return names(game.legal_actions())


def hand_cards(game, seat):
    return names(c for c in range(52) if game.hands[seat] >> c & 1)


def play(game, *texts):
    """Play the given cards in turn order, checking each is legal first."""
    for text in texts:
        c = card(text)
        assert c in game.legal_actions(), (text, legal_cards(game))
        game.apply(c)


# ============================================================================= bidding

@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_bidding_starts_left_of_dealer_and_ends_with_dealer(dealer):
    game = new_game(dealer=dealer)
    order = []
    while game.phase == PHASE_BIDDING:
        order.append(game.to_act)
        game.apply(bid(3))
    assert order == [(dealer + i) % 4 for i in (1, 2, 3, 4)]
    assert game.phase == PHASE_PLAY


def test_bids_are_nil_and_1_to_13_with_no_pass():
    game = new_game()
    for _ in range(4):
        assert game.legal_actions() == ALL_BIDS  # 52 = nil, 53..65 = 1..13; nothing else
        game.apply(bid(13))  # even 13 + 13: no team maximum in the standard game


def test_nil_false_removes_nil():
    game = new_game("basic")
    for _ in range(4):
        assert game.legal_actions() == ALL_BIDS[1:]
        game.apply(bid(1))
    with pytest.raises(IllegalActionError):
        new_game("basic").apply(52)


def test_both_partners_may_bid_nil():
    game = new_game()
    game.apply(bid(0))   # seat 0
    game.apply(bid(4))   # seat 1
    assert 52 in game.legal_actions()  # seat 2, partner of a nil bidder
    game.apply(bid(0))
    game.apply(bid(4))
    assert game.bids == [0, 4, 0, 4]


def test_bids_are_recorded_per_seat():
    game = new_game(dealer=1)  # order 2, 3, 0, 1
    apply_bids(game, {2: 5, 3: 0, 0: 7, 1: 13})
    assert game.bids == [7, 13, 5, 0]


# ============================================================================= blind nil: offer

def trailing_game(scores, dealer=3, **over):
    return new_game(STD if not over else make_rules("standard", **over), dealer=dealer, scores=scores)


@pytest.mark.parametrize("scores,offered", [
    ([0, 100], True),      # exactly 100 behind qualifies
    ([0, 99], False),      # 99 behind does not
    ([0, 101], True),
    ([150, 250], True),
    ([-100, 0], True),
    ([-150, -51], False),
    ([100, 0], False),     # leading
    ([0, 0], False),
])
def test_blind_nil_offered_when_trailing_by_at_least_100(scores, offered):
    game = trailing_game(scores)  # seat 0 (side 0) bids first
    if offered:
        assert game.phase == PHASE_BLIND_DECISION
        assert game.legal_actions() == [66, 67]
    else:
        assert game.phase == PHASE_BIDDING
        assert game.legal_actions() == ALL_BIDS


def test_blind_nil_offered_only_to_the_trailing_side_at_its_own_turn():
    game = trailing_game([0, 100], dealer=0)  # order 1, 2, 3, 0; side 0 trails
    seen = []
    while game.phase in (PHASE_BIDDING, PHASE_BLIND_DECISION):
        seat = game.to_act
        seen.append((seat, game.phase))
        if game.phase == PHASE_BLIND_DECISION:
            assert game.legal_actions() == [66, 67]
            game.apply(67)
            assert game.to_act == seat and game.phase == PHASE_BIDDING
        game.apply(bid(3))
    assert seen == [(1, PHASE_BIDDING), (2, PHASE_BLIND_DECISION), (3, PHASE_BIDDING),
                    (0, PHASE_BLIND_DECISION)]


def test_other_side_offered_when_it_trails():
    game = trailing_game([100, 0], dealer=3)
    assert game.to_act == 0 and game.phase == PHASE_BIDDING
    game.apply(bid(3))
    assert game.to_act == 1 and game.phase == PHASE_BLIND_DECISION


def test_blind_nil_min_deficit_variant():
    assert trailing_game([0, 150], blind_nil_min_deficit=200).phase == PHASE_BIDDING
    assert trailing_game([0, 200], blind_nil_min_deficit=200).phase == PHASE_BLIND_DECISION


def test_side_may_bid_blind_is_the_offer_rule():
    """The public query agrees with when the engine offers blind nil: the trailing side only,
    by at least the rules' deficit, and never when the rules have no blind nil."""
    assert trailing_game([0, 100]).side_may_bid_blind(0) and not trailing_game([0, 100]).side_may_bid_blind(1)
    assert not trailing_game([0, 99]).side_may_bid_blind(0)
    assert not trailing_game([0, 150], blind_nil_min_deficit=200).side_may_bid_blind(0)
    assert not new_game(make_rules("standard", blind_nil=False), scores=[0, 400]).side_may_bid_blind(0)


def test_blind_nil_false_never_offers():
    game = new_game(make_rules("standard", blind_nil=False), scores=[0, 400])
    assert game.phase == PHASE_BIDDING and game.legal_actions() == ALL_BIDS
    game = new_game("basic", scores=[0, 400])
    assert game.phase == PHASE_BIDDING and game.legal_actions() == ALL_BIDS[1:]


def test_blind_decision_actions_only_in_the_decision():
    game = new_game()
    for action in (66, 67):
        with pytest.raises(IllegalActionError):
            game.apply(action)
    game = trailing_game([0, 100])
    for action in (52, 55, 0):
        with pytest.raises(IllegalActionError):
            game.apply(action)


def test_after_look_the_same_player_bids_normally():
    game = trailing_game([0, 100])
    game.apply(67)
    assert game.to_act == 0 and game.phase == PHASE_BIDDING
    assert game.legal_actions() == ALL_BIDS  # a plain nil is still possible
    game.apply(bid(0))
    assert game.bids[0] == 0 and game.blind[0] is False
    assert game.to_act == 1


def test_blind_nil_bid_is_nil_and_blind():
    game = trailing_game([0, 100])
    game.apply(66)
    assert game.bids[0] == 0 and game.blind[0] is True
    assert game.to_act == 1 and game.phase == PHASE_BIDDING


def test_both_partners_may_bid_blind_nil_and_nobody_passes():
    game = trailing_game([0, 100])
    game.apply(66)        # seat 0
    game.apply(bid(3))    # seat 1
    assert game.phase == PHASE_BLIND_DECISION and game.to_act == 2
    game.apply(66)        # seat 2
    game.apply(bid(3))    # seat 3, the dealer
    assert game.blind == [True, False, True, False]
    assert game.phase == PHASE_PLAY  # no passing
    assert game.to_act == 0
    assert game.hands == game.deal


# ============================================================================= blind nil: what the seat sees

def obs_hand(env, seat):
    obs = env.observe(f"player_{seat}")["observation"]
    return obs[env.observation_layout.obs_blocks["hand"].slice]


def trailing_env(deal=None, dealer=0, scores=(0, 100), **kw):
    env = spades_v0.raw_env(**kw)
    options = {"dealer": dealer, "scores": list(scores)}
    if deal is not None:
        options["deal"] = deal
    env.reset(seed=3, options=options)
    return env


def test_blind_nil_seat_sees_no_card_before_its_decision():
    env = trailing_env(dealer=0)  # order 1, 2, 3, 0; side 0 trails
    assert env.agent_selection == "player_1"
    for seat in (0, 2):
        assert not obs_hand(env, seat).any()
    for seat in (1, 3):
        assert obs_hand(env, seat).sum() == 13
    env.step(bid(3))  # seat 1
    assert env.agent_selection == "player_2" and env.phase == "blind_nil_decision"
    mask = env.observe("player_2")["action_mask"]
    assert list(np.flatnonzero(mask)) == [66, 67]
    assert not obs_hand(env, 2).any() and not obs_hand(env, 0).any()
    env.step(67)  # seat 2 looks
    assert obs_hand(env, 2).sum() == 13
    assert not obs_hand(env, 0).any()  # the partner's look shows seat 0 nothing
    assert env.agent_selection == "player_2" and env.phase == "bidding"
    assert list(np.flatnonzero(env.observe("player_2")["action_mask"])) == ALL_BIDS
    env.step(bid(3))  # seat 2
    env.step(bid(3))  # seat 3
    assert env.agent_selection == "player_0" and env.phase == "blind_nil_decision"
    assert not obs_hand(env, 0).any()
    env.step(67)
    hand = obs_hand(env, 0)
    assert hand.sum() == 13
    assert set(np.flatnonzero(hand)) == {c for c in range(52) if env.game.hands[0] >> c & 1}


def test_blind_nil_bidder_sees_no_card_until_bidding_is_over():
    env = trailing_env(dealer=3)  # order 0, 1, 2, 3
    assert env.agent_selection == "player_0"
    assert not obs_hand(env, 0).any()
    env.step(66)
    assert not obs_hand(env, 0).any()
    env.step(bid(3))  # seat 1
    assert not obs_hand(env, 0).any()
    env.step(67)      # seat 2 looks
    assert not obs_hand(env, 0).any()
    env.step(bid(4))  # seat 2
    assert not obs_hand(env, 0).any()
    env.step(bid(3))  # seat 3, the dealer: bidding over
    assert env.phase == "passing"
    assert obs_hand(env, 0).sum() == 13


def test_blind_seat_observation_does_not_depend_on_its_cards():
    """Seats 0 and 2 (both hidden) swap hands: seat 0's whole observation is unchanged until it
    may see its cards."""
    deal = [list(h) for h in DEAL_B]
    swapped = [deal[2], deal[1], deal[0], deal[3]]
    envs = [trailing_env(deal=d, dealer=3) for d in (deal, swapped)]
    for action in (66, bid(3), 67, bid(4)):
        a, b = (e.observe("player_0")["observation"] for e in envs)
        assert np.array_equal(a, b)
        for e in envs:
            e.step(action)
    a, b = (e.observe("player_0")["observation"] for e in envs)
    assert np.array_equal(a, b)


def test_blind_nil_offer_follows_the_running_score():
    """Hand 1 puts side 0 behind by 166: in hand 2 its seats get the offer (and see nothing)."""
    deal, script = scripted_deal(winners_for([1, 6, 0, 6]))
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"deal": deal, "dealer": 3, "scores": [0, 40]})
    for _ in range(4):
        assert env.phase == "bidding"
        env.step(bid(3))
    env_play_script(env, script)
    assert env.scores == [-60, 106]
    assert env.game.hand_number == 2 and env.game.dealer == 0
    assert env.agent_selection == "player_1" and env.phase == "bidding"
    assert not obs_hand(env, 0).any() and not obs_hand(env, 2).any()
    assert obs_hand(env, 1).sum() == 13 and obs_hand(env, 3).sum() == 13
    env.step(bid(3))
    assert env.agent_selection == "player_2" and env.phase == "blind_nil_decision"


# ============================================================================= blind nil: passing

def blind_nil_to_passing(k=2, dealer=3, **over):
    """Seat 0 bids blind nil (side 0 trails by 100); everybody else bids 3."""
    game = new_game(make_rules("standard", blind_nil_pass=k, **over), deal=DEAL_T, dealer=dealer,
                    scores=[0, 100])
    while game.phase in (PHASE_BIDDING, PHASE_BLIND_DECISION):
        if game.phase == PHASE_BLIND_DECISION:
            game.apply(66 if game.to_act == 0 else 67)
        else:
            game.apply(bid(3))
    return game


def test_passing_after_blind_nil():
    game = blind_nil_to_passing()
    assert game.phase == PHASE_PASSING
    # the partner passes two cards, one per action
    assert game.to_act == 2
    assert legal_cards(game) == names(DEAL_T[2])
    game.apply(card("AH"))
    assert game.phase == PHASE_PASSING and game.to_act == 2
    assert "AH" not in legal_cards(game) and len(game.legal_actions()) == 12
    game.apply(card("KH"))
    # then the blind-nil bidder passes two back: any of its cards, the received ones included
    assert game.to_act == 0
    assert legal_cards(game) == names(DEAL_T[0] + cards("AH KH"))
    game.apply(card("AH"))  # a received card goes straight back
    assert game.to_act == 0
    game.apply(card("KC"))
    assert game.phase == PHASE_PLAY
    assert game.to_act == 0  # the first lead is still left of the dealer (3)
    assert hand_cards(game, 0) == names(cards("2H KH 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC"))
    assert hand_cards(game, 2) == names(cards("3H 4H 5H 6H 7H 8H 9H TH JH QH AH 2S KC"))
    assert hand_cards(game, 1) == names(DEAL_T[1]) and hand_cards(game, 3) == names(DEAL_T[3])


def test_passing_when_the_dealer_bids_blind_nil():
    game = new_game(STD, deal=DEAL_T, dealer=2, scores=[0, 100])  # order 3, 0, 1, 2
    game.apply(bid(3))   # seat 3
    game.apply(67)
    game.apply(bid(4))   # seat 0
    game.apply(bid(3))   # seat 1
    assert game.to_act == 2 and game.phase == PHASE_BLIND_DECISION
    game.apply(66)       # the dealer: bidding is over
    assert game.phase == PHASE_PASSING
    assert game.to_act == 0
    play(game, "2H", "KC")
    assert game.to_act == 2
    play(game, "2H", "2S")
    assert game.phase == PHASE_PLAY and game.to_act == 3


@pytest.mark.parametrize("k", [1, 3])
def test_blind_nil_pass_variants(k):
    game = blind_nil_to_passing(k)
    passers = []
    while game.phase == PHASE_PASSING:
        passers.append(game.to_act)
        game.apply(game.legal_actions()[-1])
    assert passers == [2] * k + [0] * k
    assert [bin(h).count("1") for h in game.hands] == [13] * 4


def test_blind_nil_pass_zero_means_no_passing():
    game = blind_nil_to_passing(0)
    assert game.blind[0] is True
    assert game.phase == PHASE_PLAY
    assert game.hands == game.deal


# ============================================================================= min_team_bid (tournament)

@pytest.mark.parametrize("first,expected", [
    (0, list(range(56, 66))),            # nil partner: 4 or more, no second nil
    (1, list(range(55, 66))),            # total must reach 4: 3..13, no nil
    (2, list(range(54, 66))),
    (3, list(range(53, 66))),            # 1..13, still no nil (3 + 0 < 4)
    (4, ALL_BIDS),                       # already 4: nil allowed
    (9, ALL_BIDS),
])
def test_min_team_bid_second_partner(first, expected):
    game = new_game("tournament")
    assert game.legal_actions() == ALL_BIDS      # seat 0, first of its side: anything
    game.apply(bid(first))
    assert game.legal_actions() == ALL_BIDS      # seat 1, first of its side
    game.apply(bid(0))
    assert game.legal_actions() == expected      # seat 2
    game.apply(expected[0])
    assert game.legal_actions() == list(range(56, 66))  # seat 3: partner bid nil


def test_min_team_bid_no_blind_nil_for_second_partner_of_a_nil():
    game = new_game("tournament", scores=[0, 200])
    assert game.phase == PHASE_BLIND_DECISION
    game.apply(66)                # seat 0 blind nil
    game.apply(bid(3))            # seat 1
    assert game.to_act == 2
    assert game.phase == PHASE_BIDDING  # two nils impossible: no blind-nil offer
    assert game.legal_actions() == list(range(56, 66))


def test_min_team_bid_partner_may_still_blind_nil_after_a_big_bid():
    game = new_game("tournament", scores=[0, 200])
    game.apply(67)
    game.apply(bid(5))            # seat 0
    game.apply(bid(3))            # seat 1
    assert game.phase == PHASE_BLIND_DECISION and game.to_act == 2


# ============================================================================= bids_may_total_13

@pytest.mark.parametrize("first_three,forbidden", [
    ((4, 3, 3), 3),
    ((5, 4, 4), 0),      # the dealer may not bid nil: 13 + 0 = 13
    ((0, 5, 4), 4),      # nil counts as 0
    ((1, 1, 1), 10),
])
def test_dealer_may_not_make_bids_total_13(first_three, forbidden):
    game = new_game(make_rules("standard", bids_may_total_13=False))  # dealer 3
    for b in first_three:
        game.apply(bid(b))
    assert game.to_act == 3
    assert game.legal_actions() == [a for a in ALL_BIDS if a != bid(forbidden)]


def test_bids_may_total_13_only_binds_the_dealer():
    game = new_game(make_rules("standard", bids_may_total_13=False))
    game.apply(bid(6))
    game.apply(bid(6))
    assert game.legal_actions() == ALL_BIDS  # seat 2 could make 13 with 1 + dealer's 0; fine
    game.apply(bid(6))
    assert game.legal_actions() == ALL_BIDS  # total 18 already: nothing forbidden


def test_bids_may_total_13_by_default():
    game = new_game()
    for b in (4, 3, 3):
        game.apply(bid(b))
    assert game.legal_actions() == ALL_BIDS


# ============================================================================= play: lead, follow, win

@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_first_lead_left_of_dealer(dealer):
    game = to_play(dealer=dealer)
    assert game.to_act == (dealer + 1) % 4


def test_trick_winner_follow_suit_and_next_leader():
    game = to_play(deal=DEAL_T)
    # trick 1: seat 0 leads 2H
    assert legal_cards(game) == names(DEAL_T[0])
    play(game, "2H")
    assert legal_cards(game) == names(DEAL_T[1])        # void in hearts: anything, 4S included
    play(game, "AC")                                     # discards an ace
    assert legal_cards(game) == names(cards("3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH"))  # must follow
    play(game, "3H")
    assert legal_cards(game) == names(DEAL_T[3])        # void: anything
    play(game, "AD")
    assert game.tricks_taken == [0, 0, 1, 0]            # the highest heart, not an ace of another suit
    assert game.to_act == 2                              # the winner leads
    # trick 2: spades not broken, seat 2 leads a heart; seat 3 trumps, seat 1 overtrumps
    assert legal_cards(game) == names(cards("4H 5H 6H 7H 8H 9H TH JH QH KH AH"))
    play(game, "4H", "3S", "2C", "4S")
    assert game.tricks_taken == [0, 1, 1, 0]            # the highest spade
    assert game.to_act == 1
    # trick 3: a lone low spade beats the king of the suit led
    play(game, "2D", "2S", "KD", "3C")
    assert game.tricks_taken == [0, 1, 2, 0]
    assert game.to_act == 2


def test_follow_suit_offers_exactly_the_suit():
    game = to_play(deal=DEAL_T)
    play(game, "5C")  # seat 0 leads a club
    assert legal_cards(game) == ["AC"]  # seat 1 holds one club
    play(game, "AC")
    assert legal_cards(game) == names(DEAL_T[2])  # seat 2 void in clubs: anything, 2S included
    play(game, "2S")
    assert legal_cards(game) == names(DEAL_T[3])
    play(game, "AS")
    assert game.tricks_taken == [0, 0, 0, 1]


def test_spades_not_led_until_broken():
    game = to_play(deal=DEAL_B, dealer=0)  # seat 1 leads: 2S and clubs
    assert game.to_act == 1
    assert legal_cards(game) == names(cards("2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC"))
    with pytest.raises(IllegalActionError):
        game.apply(card("2S"))


def test_leader_with_only_spades_may_lead_them():
    game = to_play(deal=suit_deal("S", "H", "D", "C"))
    assert legal_cards(game) == names(whole_suit("S"))
    play(game, "2S")
    assert legal_cards(game) == names(whole_suit("H"))  # the others are void: anything


def test_spades_broken_by_a_spade_played_to_a_trick():
    game = to_play(deal=DEAL_B)  # seat 0 leads hearts
    play(game, "2H", "2C", "2D")
    assert legal_cards(game) == names(DEAL_B[3])  # void in hearts: may trump
    play(game, "7S")
    assert game.tricks_taken == [0, 0, 0, 1] and game.to_act == 3
    # broken: seat 3 may now lead a spade though it holds diamonds
    assert legal_cards(game) == names(cards("8S 9S TS JS QS KS AS TD JD QD KD AD"))
    play(game, "8S")
    assert legal_cards(game) == names(cards("3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH"))  # void
    play(game, "3H")
    assert legal_cards(game) == ["2S"]
    play(game, "2S")
    assert legal_cards(game) == names(cards("3S 4S 5S 6S"))


def test_a_trick_without_spades_does_not_break_them():
    game = to_play(deal=DEAL_B, dealer=0)
    play(game, "2C", "AC", "TD", "2H")  # seat 2 wins with AC, nobody played a spade
    assert game.to_act == 2
    assert legal_cards(game) == names(cards("2D 3D 4D 5D 6D 7D 8D 9D"))


def test_thirteen_tricks_make_a_hand():
    for seed in range(4):
        game = SpadesGame(STD, seed)
        apply_bids(game, (3, 3, 3, 3))
        start_hands = list(game.hands)
        applied = play_first_legal(game)
        assert game.phase == PHASE_HAND_OVER
        assert len(applied) == 52 and sum(game.tricks_taken) == 13
        assert sorted(c for _, c in applied) == list(range(52))
        for seat in range(4):
            assert sorted(c for s, c in applied if s == seat) == \
                [c for c in range(52) if start_hands[seat] >> c & 1]
            assert game.hands[seat] == 0


def test_whole_deck_dealt_13_each():
    for seed in range(5):
        game = SpadesGame(STD, seed)
        assert [bin(h).count("1") for h in game.hands] == [13] * 4
        assert sum(game.hands) == (1 << 52) - 1


# ============================================================================= dealer

def test_dealer_rotates_left_each_hand():
    game = new_game(dealer=1)
    for expected in (1, 2, 3, 0, 1):
        assert game.dealer == expected
        assert game.to_act == (expected + 1) % 4  # bidding starts left of the new dealer
        apply_bids(game, (3, 3, 3, 3))
        assert game.to_act == (expected + 1) % 4  # and so does the first lead
        play_first_legal(game)
        assert game.phase == PHASE_HAND_OVER
        game.next_hand()


def test_dealer_rotates_in_the_env():
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"dealer": 2})
    while env.game.hand_number == 1:
        env.step(bid(1) if env.phase == "bidding" else env.legal_actions()[0])
    assert not any(env.terminations.values())
    assert env.game.dealer == 3
    assert env.agent_selection == "player_0"


def test_first_dealer_is_drawn_and_seeded():
    dealers = set()
    for seed in range(24):
        env = spades_v0.raw_env()
        env.reset(seed=seed)
        again = spades_v0.raw_env()
        again.reset(seed=seed)
        assert again.game.dealer == env.game.dealer
        assert again.game.deal == env.game.deal
        dealers.add(env.game.dealer)
    assert dealers == {0, 1, 2, 3}


# ============================================================================= variants of play

def test_no_spades_first_trick():
    rules = make_rules("tournament")
    game = to_play(rules, deal=DEAL_B, bids=(4, 4, 4, 4))  # seat 0 leads hearts
    play(game, "2H")
    assert legal_cards(game) == names(cards("2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC"))  # not 2S
    play(game, "2C")
    assert legal_cards(game) == names(cards("AC 2D 3D 4D 5D 6D 7D 8D 9D"))
    play(game, "2D")
    assert legal_cards(game) == names(cards("TD JD QD KD AD"))
    play(game, "TD")
    assert game.to_act == 0 and game.tricks_taken == [1, 0, 0, 0]
    # second trick: a void player may trump again
    play(game, "3H")
    assert "2S" in legal_cards(game)
    assert legal_cards(game) == names(cards("2S 3C 4C 5C 6C 7C 8C 9C TC JC QC KC"))


def test_no_spades_first_trick_unless_nothing_else():
    rules = make_rules("standard", no_spades_first_trick=True)
    game = to_play(rules, deal=suit_deal("H", "S", "D", "C"))
    play(game, "2H")
    assert legal_cards(game) == names(whole_suit("S"))  # holds only spades
    game = to_play(rules, deal=suit_deal("S", "H", "D", "C"))
    assert legal_cards(game) == names(whole_suit("S"))  # the leader holds only spades


def test_no_spades_first_trick_with_spades_lead_any():
    rules = make_rules("standard", no_spades_first_trick=True, spades_lead="any")
    game = to_play(rules, deal=DEAL_B, dealer=0)
    assert legal_cards(game) == names(cards("2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC"))
    play(game, "2C", "AC", "TD", "2H")  # seat 2 wins; no spade played
    assert legal_cards(game) == names(DEAL_B[2][:4] + DEAL_B[2][5:])  # any card now, spades too


def test_two_of_clubs_leads():
    rules = make_rules("standard", two_of_clubs_leads=True)
    game = to_play(rules, deal=DEAL_B, dealer=1)  # seat 2 would lead; seat 1 holds the 2C
    assert game.to_act == 1
    assert game.legal_actions() == [card("2C")]
    play(game, "2C")
    assert legal_cards(game) == ["AC"]
    play(game, "AC", "TD", "2H")
    assert game.to_act == 2  # afterwards, as usual: the winner leads
    assert legal_cards(game) == names(cards("2D 3D 4D 5D 6D 7D 8D 9D"))


def test_two_of_clubs_leads_even_left_of_dealer():
    rules = make_rules("standard", two_of_clubs_leads=True)
    game = to_play(rules, deal=DEAL_B, dealer=0)
    assert game.to_act == 1 and game.legal_actions() == [card("2C")]
    standard = to_play(STD, deal=DEAL_B, dealer=1)
    assert standard.to_act == 2


def test_spades_lead_any():
    rules = make_rules("standard", spades_lead="any")
    game = to_play(rules, deal=DEAL_B, dealer=0)
    assert legal_cards(game) == names(DEAL_B[1])  # 2S may be led at once
    play(game, "2S")
    assert legal_cards(game) == names(cards("3S 4S 5S 6S"))


@pytest.mark.parametrize("preset", ["forced_only", "openspiel"])
def test_spades_lead_forced_only(preset):
    rules = make_rules("openspiel") if preset == "openspiel" else make_rules("standard", spades_lead="forced_only")
    game = to_play(rules, deal=DEAL_B, dealer=3)
    play(game, "2H", "2C", "2D", "7S")  # spades played (broken), seat 3 wins
    assert game.to_act == 3
    assert legal_cards(game) == names(cards("TD JD QD KD AD"))  # still no spade lead
    # a player with nothing but spades may lead them
    game = to_play(rules, deal=suit_deal("S", "H", "D", "C"), bids=(1, 1, 1, 1))
    assert legal_cards(game) == names(whole_suit("S"))


def test_forced_only_for_the_whole_hand():
    rules = make_rules("standard", spades_lead="forced_only")
    game = to_play(rules, deal=DEAL_B, dealer=3)
    play(game, "2H", "2C", "2D", "7S")  # spades are played to the first trick
    leads_checked = 0
    for i in range(48):
        if i % 4 == 0:  # a lead
            hand = [c for c in range(52) if game.hands[game.to_act] >> c & 1]
            non_spades = [c for c in hand if c < 39]
            assert game.legal_actions() == (non_spades or hand)
            leads_checked += bool(non_spades) and len(non_spades) < len(hand)
        game.apply(game.legal_actions()[0])
    assert game.phase == PHASE_HAND_OVER
    assert leads_checked >= 3  # several leads by a player holding spades and other cards


# ============================================================================= three players

THREE = make_rules("cutthroat", players=3)


def test_three_players_deal():
    for seed in range(4):
        game = SpadesGame(THREE, seed)
        assert game.n == 3
        assert [bin(h).count("1") for h in game.hands] == [17] * 3
        assert not any(h & 1 for h in game.hands)  # no two of clubs
        assert sum(game.hands) == ((1 << 52) - 1) & ~1


def test_three_players_bidding_and_17_tricks():
    game = SpadesGame(THREE, 0, dealer=2)
    order = []
    while game.phase == PHASE_BIDDING:
        order.append(game.to_act)
        game.apply(bid(5))
    assert order == [0, 1, 2]
    assert game.to_act == 0
    applied = play_first_legal(game)
    assert len(applied) == 51 and sum(game.tricks_taken) == 17
    assert game.phase == PHASE_HAND_OVER and len(game.scores) == 3
    game.next_hand()
    assert game.dealer == 0


def test_three_players_env():
    env = spades_v0.raw_env(rules="cutthroat", players=3)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    deal = fill_deal({}, players=3)
    env.reset(seed=0, options={"deal": deal, "dealer": 0})
    assert env.agent_selection == "player_1"
    while not any(env.terminations.values()) and env.game.hand_number == 1:
        env.step(env.legal_actions()[0])
    assert len(env.scores) == 3


def test_three_players_bad_deals():
    env = spades_v0.raw_env(rules="cutthroat", players=3)
    deal = fill_deal({}, players=3)
    with_c2 = [list(h) for h in deal]
    with_c2[0][0] = 0  # the two of clubs is not in the three-player deck
    with pytest.raises(DealError, match="two of clubs"):
        env.reset(options={"deal": with_c2})
    with pytest.raises(DealError):
        env.reset(options={"deal": suit_deal("S", "H", "D", "C")})  # four hands of 13


# ============================================================================= openspiel preset

OS = make_rules("openspiel")


def test_openspiel_dealer_fixed_at_3():
    env = spades_v0.raw_env(rules="openspiel")
    for seed in range(6):
        env.reset(seed=seed)
        assert env.game.dealer == 3
        assert env.agent_selection == "player_0"  # seat 0 bids first
    env.reset(seed=0, options={"dealer": 3})
    assert env.game.dealer == 3
    for bad in (0, 1, 2):
        with pytest.raises(DealError, match="dealer"):
            env.reset(seed=0, options={"dealer": bad})


def test_openspiel_seat_0_leads_and_dealer_never_moves():
    game = SpadesGame(OS, 0)
    apply_bids(game, (3, 3, 3, 3))
    assert game.to_act == 0
    play_first_legal(game)
    game.next_hand()
    assert game.dealer == 3 and game.to_act == 0


@pytest.mark.parametrize("first,expected", [
    (13, [52]),
    (9, list(range(52, 57))),   # nil, 1..4
    (0, ALL_BIDS),
    (1, ALL_BIDS[:-1]),
])
def test_openspiel_partners_total_at_most_13(first, expected):
    game = SpadesGame(OS, 0)
    assert game.legal_actions() == ALL_BIDS
    game.apply(bid(first))
    game.apply(bid(13))  # seat 1 may bid 13 too
    assert game.legal_actions() == expected  # seat 2
    game.apply(expected[-1])
    assert game.legal_actions() == [52]  # seat 3, partner of a 13


def test_openspiel_no_blind_nil():
    game = SpadesGame(OS, 0, scores=[0, 300])
    assert game.phase == PHASE_BIDDING and game.legal_actions() == ALL_BIDS


def test_openspiel_one_hand_per_episode():
    env = spades_v0.raw_env(rules="openspiel")
    env.reset(seed=1, options={"scores": [120, 40]})
    steps = 0
    while not all(env.terminations.values()):
        env.step(env.legal_actions()[0])
        steps += 1
    assert steps == 4 + 52
    assert env.game.hand_number == 1


def test_openspiel_bags_must_match_score_digits():
    env = spades_v0.raw_env(rules="openspiel")
    env.reset(seed=0, options={"scores": [108, 0], "bags": [8, 0]})
    assert env.bags == [8, 0]
    with pytest.raises(DealError, match="bags"):
        env.reset(seed=0, options={"scores": [108, 0], "bags": [0, 0]})


# ============================================================================= rules oracle on random games

def oracle_legal(rules, hand, trick, led, broken, first_trick):
    """The legal cards, straight from docs/rules.md."""
    non_spades = {c for c in hand if c < 39}
    if trick:
        follow = {c for c in hand if c // 13 == led}
        if follow:
            return follow
        if first_trick and rules.no_spades_first_trick and non_spades:
            return non_spades
        return set(hand)
    if first_trick and rules.two_of_clubs_leads and 0 in hand:
        return {0}
    if not non_spades:
        return set(hand)
    if first_trick and rules.no_spades_first_trick:
        return non_spades
    if rules.spades_lead == "any" or (rules.spades_lead == "broken" and broken):
        return set(hand)
    return non_spades


def oracle_winner(trick):
    """(seat, card) pairs in play order -> the winning seat."""
    led = trick[0][1] // 13
    spades = [(c, s) for s, c in trick if c >= 39]
    if spades:
        return max(spades)[1]
    return max((c, s) for s, c in trick if c // 13 == led)[1]


@pytest.mark.parametrize("rules", [
    STD, make_rules("tournament"), make_rules("standard", two_of_clubs_leads=True),
    make_rules("standard", spades_lead="any"), make_rules("standard", spades_lead="forced_only"),
    make_rules("openspiel"), THREE,
], ids=["standard", "tournament", "two_of_clubs", "any", "forced_only", "openspiel", "three"])
def test_random_hands_follow_the_rules(rules):
    rng = random.Random(7)
    n = rules.players
    for _ in range(6):
        deck = [c for c in range(52) if not (n == 3 and c == 0)]
        rng.shuffle(deck)
        per = len(deck) // n
        deal = [deck[i * per:(i + 1) * per] for i in range(n)]
        dealer = rules.fixed_dealer if rules.fixed_dealer is not None else rng.randrange(n)
        game = SpadesGame(rules, rng.randrange(1000), dealer=dealer, deal=deal)
        hands = [set(h) for h in deal]
        while game.phase in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            game.apply(rng.choice(game.legal_actions()))
        assert game.phase == PHASE_PLAY
        leader = (dealer + 1) % n
        if rules.two_of_clubs_leads:
            leader = next(s for s in range(n) if 0 in hands[s])
        broken = False
        for t in range(rules.tricks_per_hand):
            trick = []
            for i in range(n):
                seat = (leader + i) % n
                assert game.to_act == seat
                led = trick[0][1] // 13 if trick else -1
                expected = oracle_legal(rules, hands[seat], trick, led, broken, t == 0)
                assert set(game.legal_actions()) == expected
                c = rng.choice(sorted(expected))
                game.apply(c)
                hands[seat].discard(c)
                trick.append((seat, c))
                broken = broken or c >= 39
            leader = oracle_winner(trick)
        assert game.phase != PHASE_PLAY
        assert not any(hands)


# ============================================================================= bad input: actions

def env_at_bidding():
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"dealer": 3, "deal": DEAL_T})
    return env


def test_illegal_action_message_names_action_phase_and_legal_actions():
    env = env_at_bidding()
    with pytest.raises(IllegalActionError) as info:
        env.step(20)  # a card (9D) during bidding
    message = str(info.value)
    assert re.search(r"\b20\b", message) and "bidding" in message
    assert all(str(a) in message for a in ALL_BIDS)
    assert issubclass(IllegalActionError, ValueError)


def test_illegal_card_in_play_message():
    env = env_at_bidding()
    for _ in range(4):
        env.step(bid(3))
    env.step(card("2H"))  # seat 0 leads a heart; seat 1 is void
    env.step(card("AC"))
    with pytest.raises(IllegalActionError) as info:
        env.step(card("2S"))  # seat 2 holds hearts: must follow
    message = str(info.value)
    assert str(card("2S")) in message and "play" in message
    for c in cards("3H 4H KH AH"):
        assert str(c) in message


@pytest.mark.parametrize("action", [99, 68, -1, -100, 10 ** 20, None, 52.0, "52", True])
def test_out_of_range_or_non_integer_actions(action):
    env = env_at_bidding()
    with pytest.raises(IllegalActionError) as info:
        env.step(action)
    assert repr(action) in str(info.value)
    assert "bidding" in str(info.value)


def test_numpy_integer_actions_are_accepted():
    env = env_at_bidding()
    env.step(np.int64(bid(3)))
    assert env.game.bids[0] == 3


def test_illegal_action_changes_nothing():
    env = env_at_bidding()
    env.step(bid(3))
    before = env.game_record()
    selection = env.agent_selection
    obs = env.observe(selection)
    for action in (0, 66, 99, -1):
        with pytest.raises(IllegalActionError):
            env.step(action)
    assert env.agent_selection == selection
    assert env.game_record() == before
    after = env.observe(selection)
    assert np.array_equal(obs["observation"], after["observation"])
    assert np.array_equal(obs["action_mask"], after["action_mask"])
    env.step(bid(4))
    assert env.game.bids[1] == 4


def test_wrapped_env_illegal_move_terminates_with_penalty():
    env = spades_v0.env()
    env.reset(seed=0, options={"dealer": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(5)  # a card during bidding
    assert all(env.terminations.values()) or all(env.truncations.values())
    assert env.rewards["player_0"] == -1.0
    assert env.rewards["player_1"] == 0


# ============================================================================= bad input: reset options

GOOD_DEAL = DEAL_T


def bad_deals():
    short = [list(h) for h in GOOD_DEAL]
    short[2] = short[2][:12]
    long = [list(h) for h in GOOD_DEAL]
    long[1] = long[1] + [long[2][0]]
    dup = [list(h) for h in GOOD_DEAL]
    dup[3][0] = dup[0][0]
    unknown = [[card_str(c) for c in h] for h in GOOD_DEAL]
    unknown[1][4] = "ZZ"
    return {
        "three hands": (GOOD_DEAL[:3], "3"),
        "five hands": (GOOD_DEAL + [GOOD_DEAL[0]], "5"),
        "12 cards": (short, "12"),
        "14 cards": (long, "14"),
        "duplicate": (dup, "2H"),
        "unknown card": (unknown, "ZZ"),
        "id out of range": ([[52] + h[1:] for h in GOOD_DEAL], "52"),
        "not a list": ("AS KS", "deal"),
        "number": (7, "deal"),
    }


@pytest.mark.parametrize("case", list(bad_deals()))
def test_malformed_deal_is_a_deal_error_naming_it(case):
    deal, named = bad_deals()[case]
    env = spades_v0.raw_env()
    with pytest.raises(DealError, match=named):
        env.reset(seed=0, options={"deal": deal})
    assert issubclass(DealError, ValueError)


def test_deal_accepts_strings_and_ids():
    as_strings = [[("10" + t[1:]) if t.startswith("T") else t.lower() for t in
                   (card_str(c) for c in h)] for h in GOOD_DEAL]
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"deal": as_strings, "dealer": 3})
    assert env.game.deal == [sum(1 << c for c in h) for h in GOOD_DEAL]
    mixed = [list(h) for h in GOOD_DEAL]
    mixed[0] = [card_str(c) for c in mixed[0]]
    env.reset(seed=0, options={"deal": mixed, "dealer": 3})
    assert env.game.deal == [sum(1 << c for c in h) for h in GOOD_DEAL]


@pytest.mark.parametrize("dealer", [5, 4, -1, "x", 1.5, True, None])
def test_bad_dealer(dealer):
    env = spades_v0.raw_env()
    if dealer is None:
        env.reset(seed=0, options={"dealer": None})  # None: draw at random
        return
    with pytest.raises(DealError, match="dealer"):
        env.reset(seed=0, options={"dealer": dealer})


def test_numpy_integer_dealer_is_a_seat():
    env = spades_v0.raw_env()
    env.reset(seed=0, options={"dealer": np.int64(2)})
    assert env.game.dealer == 2


@pytest.mark.parametrize("scores", ["x", [0], [0, 0, 0], ["a", 0], [1.5, 0], [None, 0], 5])
def test_bad_scores(scores):
    env = spades_v0.raw_env()
    with pytest.raises(DealError, match="scores"):
        env.reset(seed=0, options={"scores": scores})


@pytest.mark.parametrize("bags", ["x", [0], [10, 0], [0, 12], [-1, 0], [2.5, 0], [0, 0, 0]])
def test_bad_bags(bags):
    env = spades_v0.raw_env()
    with pytest.raises(DealError, match="bags"):
        env.reset(seed=0, options={"bags": bags})


def test_bags_limit_follows_the_rules():
    env = spades_v0.raw_env(bag_limit=5)
    env.reset(seed=0, options={"bags": [4, 0]})
    with pytest.raises(DealError, match="bags"):
        env.reset(seed=0, options={"bags": [5, 0]})


def test_cutthroat_scores_and_bags_per_player():
    env = spades_v0.raw_env(rules="cutthroat")
    env.reset(seed=0, options={"scores": [10, 20, 30, 40], "bags": [1, 2, 3, 4]})
    assert env.scores == [10, 20, 30, 40] and env.bags == [1, 2, 3, 4]
    with pytest.raises(DealError, match="scores"):
        env.reset(seed=0, options={"scores": [10, 20]})


def test_unknown_reset_option_only_warns():
    env = spades_v0.raw_env()
    with pytest.warns(UserWarning, match="colour"):
        env.reset(seed=0, options={"colour": "red"})
    assert env.phase in ("bidding", "blind_nil_decision")


def snapshot(env):
    sel = env.agent_selection
    return (env.game, env.game_record(), sel, env.observe(sel)["observation"].copy(),
            env.observe(sel)["action_mask"].copy(), dict(env.terminations), dict(env._cumulative_rewards))


@pytest.mark.parametrize("options", [
    {"deal": bad_deals()["duplicate"][0]},
    {"deal": GOOD_DEAL, "dealer": 7},
    {"deal": GOOD_DEAL, "dealer": 1, "scores": [0]},
    {"deal": GOOD_DEAL, "scores": [0, 150], "bags": [11, 0]},
])
def test_failed_reset_keeps_the_previous_state(options):
    env = spades_v0.raw_env()
    env.reset(seed=5, options={"dealer": 0})
    for _ in range(6):
        env.step(env.legal_actions()[0])
    game, record, sel, obs, mask, terms, cum = snapshot(env)
    with pytest.raises(DealError):
        env.reset(seed=9, options=options)
    assert env.game is game
    assert env.game_record() == record
    assert env.agent_selection == sel
    assert np.array_equal(env.observe(sel)["observation"], obs)
    assert np.array_equal(env.observe(sel)["action_mask"], mask)
    assert env.terminations == terms and env._cumulative_rewards == cum
    env.step(env.legal_actions()[0])  # and the game goes on


def test_failed_reset_does_not_reseed():
    a, b = spades_v0.raw_env(), spades_v0.raw_env()
    a.reset(seed=1)
    b.reset(seed=1)
    with pytest.raises(DealError):
        a.reset(seed=2, options={"dealer": 9})
    a.reset()
    b.reset()
    assert a.game.deal == b.game.deal and a.game.dealer == b.game.dealer
