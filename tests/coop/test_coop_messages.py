"""The free signal's measures (coop/measures/messages.py) on agents with known answers, under
the ``short_signals`` rules (the short deck, four messages)."""

import json

import numpy as np
import pytest

import agents
from coop.cli import main
from coop.measures.bid_decoder import HONOURS, hand_features
from coop.measures.messages import changed_message, decoder_ranks, sent_messages
from coop.measures.signals import measure_signals
from spades_env.rules import make_rules

RULES = "short_signals"
DEALS = 40
MESSAGE_BASE = 68


def _spades(obs) -> int:
    """Spades in the hand (cells 39..51 of the observation's 52-cell hand block)."""
    from spades_env.observation import layout_for
    start = layout_for(make_rules(RULES)).obs_blocks["hand"].offset
    return int(np.asarray(obs["observation"])[start + 39:start + 52].sum())


class SpadesTeller(agents.Agent):
    """Sends min(spades, 3) (a function of the hand: about 1.8 bits on the short deck), then bids
    and plays at random: its messages tell, its choices never listen."""

    name = "spades_teller"

    def act(self, obs, info=None):
        legal = np.flatnonzero(obs["action_mask"])
        messages = [a for a in legal if a >= MESSAGE_BASE]
        if messages:
            return MESSAGE_BASE + min(_spades(obs), len(messages) - 1)
        return int(self.rng.choice(legal))


class QuietListener(agents.Agent):
    """Always sends message 0 (tells nothing) and bids its partner's message plus one where that
    bid is legal, else the lowest legal bid; plays its lowest legal card: it listens at the bid."""

    name = "quiet_listener"

    def act(self, obs, info=None):
        from spades_env.observation import layout_for
        legal = np.flatnonzero(obs["action_mask"])
        if any(a >= MESSAGE_BASE for a in legal):
            return MESSAGE_BASE
        rules = make_rules(RULES)
        block = layout_for(rules).obs_blocks["messages"]
        row = np.asarray(obs["observation"])[block.offset + 2 * rules.signals:block.offset + 3 * rules.signals]
        bids = [a for a in legal if 52 <= a < 66]
        if bids:
            wanted = 52 + 1 + int(np.argmax(row)) if row.any() else None
            return wanted if wanted in bids else int(bids[0])
        return int(legal[0])


@pytest.fixture
def registered(monkeypatch):
    for cls in (SpadesTeller, QuietListener):
        monkeypatch.setitem(agents.base._REGISTRY, cls.name, cls)     # registered for this test


def test_a_hand_telling_message_carries_over_a_bit_and_silence_nothing(registered):
    teller = measure_signals("spades_teller", deals=DEALS, rules=RULES, workers=2)
    info = teller["message_information_hand"]
    assert info["hands"] == DEALS * 2 * 2                   # two plays of a duplicate deal, two seats each
    assert info["value"] > 1.0 and info["low"] > 0.8, info
    assert abs(info["value"] - (info["raw"] - info["control"])) < 1e-9 and "message" in info["method"]
    assert teller["message_listening"]["value"] == 0.0       # random choices do not depend on the message...
    assert teller["message_listening_control"]["n"] > 0
    quiet = measure_signals("quiet_listener", deals=DEALS, rules=RULES, workers=2)
    assert quiet["message_information_hand"]["value"] == 0.0     # one message: exactly nothing
    assert quiet["message_use"]["shares"] == [1.0, 0.0, 0.0, 0.0]
    random_messages = measure_signals("random", deals=DEALS, rules=RULES, workers=2)["message_information_hand"]
    assert random_messages["low"] <= 0.0 <= random_messages["high"], random_messages


def test_a_partner_that_bids_by_the_message_listens_and_one_that_does_not_does_not(registered):
    quiet = measure_signals("quiet_listener", deals=12, rules=RULES, workers=1)
    bidding = quiet["message_listening_by_phase"]["bidding"]
    assert bidding["n"] > 0 and bidding["low"] > 0.5, bidding
    assert quiet["message_listening_by_phase"]["play"]["value"] == 0.0    # lowest legal card: deaf in play
    assert quiet["message_listening_control"]["value"] == 0.0
    heuristic = measure_signals("heuristic", deals=8, rules=RULES, workers=1)
    assert heuristic["message_listening"]["n"] > 0 and heuristic["message_listening"]["value"] == 0.0


def test_without_signals_the_result_has_no_message_measures():
    result = measure_signals("heuristic", deals=4, rules="short", workers=1)
    assert not any(key.startswith("message") for key in result)
    assert result["bid_information_hand"]["hands"] == 16


def test_the_changed_message_is_another_one_and_only_after_it_was_sent():
    rng = np.random.default_rng(0)
    obs = np.zeros(20, dtype=np.float32)
    assert changed_message(obs, 10, 4, rng) is None
    obs[12] = 1.0
    for _ in range(20):
        changed = changed_message(obs, 10, 4, rng)
        assert changed[12] == 0.0 and changed[10:14].sum() == 1.0 and (changed[:10] == 0).all()


def test_messages_are_read_from_the_hand_records_actions():
    hand = {"actions": [[1, 70], [2, 68], [3, 71], [0, 69], [1, 55], [2, 53]]}
    assert sent_messages(hand) == {1: 2, 2: 0, 3: 3, 0: 1}


def test_the_decoder_sees_every_rank_of_a_short_deck_and_the_honours_of_the_full_one():
    assert decoder_ranks(make_rules("standard")) == HONOURS
    assert decoder_ranks(make_rules(RULES)) == (12, 11, 10, 9, 8, 7)
    ten_of_spades = 3 * 13 + 8
    assert hand_features([ten_of_spades], 1).sum() == 4 + 1           # suit lengths and the estimate
    assert hand_features([ten_of_spades], 1, ranks=(12, 11, 10, 9, 8, 7)).sum() == 4 + 1 + 1


def test_spades_coop_signals_takes_the_rules(tmp_path, capsys, registered):
    out = tmp_path / "signals.json"
    assert main(["signals", "spades_teller", "--rules", RULES, "--deals", "6", "--workers", "1", "--json", str(out),
                 "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert {"value", "low", "high"} <= set(result["message_information_hand"])
    assert result["rules"] == RULES
    assert "message about hand" in capsys.readouterr().out
    assert main(["signals", "heuristic", "--rules", "nosuch", "--deals", "4"]) == 2
    assert "spades-coop: error:" in capsys.readouterr().err
