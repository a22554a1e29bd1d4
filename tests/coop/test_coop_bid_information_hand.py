"""``bid_information_hand`` (coop/measures/bid_decoder.py): the information a bid carries about the
hand, whatever the convention. A bidder that plays like the heuristic but bids its number of
hearts (a convention the trick estimate does not see) tells at least 1 bit; a constant bidder 0.
Both are agents registered in this process with ``agents.register``."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.base import available
from agents.heuristic import HeuristicAgent
from coop.measures.bid_decoder import bid_information_hand, hand_features
from coop.measures.signals import measure_signals
from spades_env.observation import layout_for_size

DEALS = 40


class HeartsBidder(HeuristicAgent):
    """The heuristic's card play; bids its number of hearts (nil with none)."""

    def act(self, obs, info=None):
        mask = obs["action_mask"]
        if mask[52:66].any():
            hand = layout_for_size(len(obs["observation"])).obs_blocks["hand"].offset
            hearts = int(obs["observation"][hand + 26:hand + 39].sum())
            if mask[52 + hearts]:
                return 52 + hearts
        return super().act(obs, info)


class ConstantBidder(HeuristicAgent):
    """The heuristic's card play; bids 3 whatever its hand."""

    def act(self, obs, info=None):
        if obs["action_mask"][55]:
            return 55
        return super().act(obs, info)


@pytest.fixture
def registered():
    for name, maker in (("test_hearts_bidder", HeartsBidder), ("test_constant_bidder", ConstantBidder)):
        if name not in available():
            agents.register(name, maker)


def test_a_hearts_bidder_tells_over_a_bit_about_its_hand_and_a_constant_one_nothing(registered):
    hearts = measure_signals("test_hearts_bidder", deals=DEALS, workers=1)
    about_hand = hearts["bid_information_hand"]
    assert {"value", "low", "high", "control"} <= set(about_hand)
    assert about_hand["value"] >= 1.0 and about_hand["low"] > 0.8, about_hand
    assert hearts["bid_information"]["value"] < 0.3          # the trick estimate does not see it
    constant = measure_signals("test_constant_bidder", deals=DEALS, workers=1)["bid_information_hand"]
    assert constant["value"] <= 0.05 and constant["low"] <= 0.0 <= constant["high"], constant


def test_the_decoder_scores_on_unseen_deals_and_random_bids_tell_nothing():
    """Random bids: the decoder's fitting noise costs bits on unseen deals (raw below 0), the
    shuffled control pays the same, so the value is about 0; a function of the features tells
    about its entropy."""
    rng = np.random.default_rng(0)
    features, hearts, units = [], [], []
    for deal in range(60):
        deck = rng.permutation(52)
        for seat in range(4):
            hand = deck[13 * seat:13 * seat + 13].tolist()
            features.append(hand_features(hand, potential=0))
            hearts.append(sum(card // 13 == 2 for card in hand))
            units.append(deal)
    features, hearts, units = np.array(features), np.array(hearts), np.array(units)
    random_bids = bid_information_hand(rng.integers(1, 8, len(units)), features, units, seed=1)
    assert random_bids["raw"] < 0 and random_bids["low"] <= 0.0 <= random_bids["high"], random_bids
    told = bid_information_hand(hearts, features, units, seed=1)
    assert 1.5 < told["value"] < 2.6 and told["low"] > 1.2, told
    # the suit lengths are binned one-hot (7 and more together): a bid of the hearts' count is read
    assert np.array_equal(hand_features([26 + k for k in range(13)], potential=0)[:32].reshape(4, 8).argmax(1),
                          [0, 0, 7, 0])
