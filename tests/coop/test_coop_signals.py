"""Signalling and listening measured on agents with known answers."""

import json

import numpy as np

import agents
from coop.cli import main
from coop.measures.signals import measure_signals, mutual_information

DEALS = 24


class ConstantBidder(agents.Agent):
    """Bids 3 whatever its hand (the lowest legal bid where 3 is not allowed), then plays its
    lowest legal card: its bids tell nothing."""

    name = "constant_bidder"

    def act(self, obs, info=None):
        legal = np.flatnonzero(obs["action_mask"])
        bids = [a for a in legal if 52 <= a < 66]
        if bids:
            return 55 if 55 in bids else int(bids[0])
        return int(legal[0])


def test_mutual_information_of_known_pairs():
    x = np.array([0, 1, 2, 3] * 50)
    assert abs(mutual_information(x, x) - 2.0) < 1e-12
    assert mutual_information(np.zeros(200, dtype=int), x) == 0.0
    assert abs(mutual_information(x, np.array([0, 0, 1, 1] * 50)) - 1.0) < 1e-12


def test_a_constant_bidder_tells_nothing_and_the_heuristic_does(monkeypatch):
    monkeypatch.setitem(agents.base._REGISTRY, "constant_bidder", ConstantBidder)   # registered for this test
    constant = measure_signals("constant_bidder", deals=DEALS, workers=2)["bid_information"]
    assert constant["value"] == 0.0 and constant["low"] <= 0.0 <= constant["high"]
    heuristic = measure_signals("heuristic", deals=DEALS, workers=2)
    info = heuristic["bid_information"]
    assert info["low"] > 0.3, info
    assert info["raw"] > info["control"] > 0          # the control measures the plug-in's bias
    random_bids = measure_signals("random", deals=DEALS, workers=2)["bid_information"]
    assert random_bids["low"] <= 0.0 <= random_bids["high"], random_bids   # bids unrelated to the hand
    # the heuristic listens to its partner's bid; it is a function of its observation
    assert heuristic["listening"]["low"] > 0.0
    assert heuristic["listening_to_leads"]["low"] > 0.0
    assert heuristic["listening_control"]["value"] == 0.0
    calibration = heuristic["bid_calibration"]
    assert sum(b["hands"] for b in calibration["by_bid"]) == info["hands"] == DEALS * 2 * 2
    assert 0.0 <= heuristic["nil_cover"]["value"] <= 1.0 and heuristic["nil_cover"]["n"] > 0
    counts = np.array(heuristic["lead_reply"]["counts"])
    assert counts.shape == (4, 4) and counts.sum() > 0 and counts[3, 2] == 0   # nobody trumps a spade lead


def test_an_agent_that_ignores_bids_does_not_listen():
    result = measure_signals("random", deals=8, workers=1)
    listening = result["listening"]
    assert listening["n"] > 50
    assert listening["value"] == 0.0 and listening["low"] <= 0.0 <= listening["high"]
    leads = result["listening_to_leads"]
    assert leads["n"] > 10 and leads["value"] == 0.0


def test_spades_coop_signals_writes_json(tmp_path, capsys):
    out = tmp_path / "signals.json"
    assert main(["signals", "heuristic", "--deals", "4", "--workers", "1", "--json", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    for key in ("bid_information", "listening", "nil_cover"):
        assert {"value", "low", "high"} <= set(result[key])
    assert "bid information" in capsys.readouterr().out
    assert main(["signals", "nosuch"]) == 2
    assert main(["signals", "heuristic", "--deals", "0"]) == 2
    assert capsys.readouterr().err.count("spades-coop: error:") == 2


def test_the_trick_potential_is_binned_by_rounding_with_seven_and_more_together(monkeypatch):
    """bid_information's buckets: the heuristic's estimate rounded, below 0 as 0, 7 and more as 7."""
    import agents.heuristic
    from coop.measures.signals import POTENTIAL_BUCKETS, potential_bucket
    assert POTENTIAL_BUCKETS == 8
    for estimate, bucket in ((-0.4, 0), (0.4, 0), (0.6, 1), (1.49, 1), (3.51, 4), (6.4, 6), (6.6, 7), (7.0, 7),
                             (9.8, 7), (12.0, 7)):
        monkeypatch.setattr(agents.heuristic, "estimate_tricks", lambda hand, value=estimate: value)
        assert potential_bucket(list(range(13))) == bucket, estimate
    x = np.array([0, 1, 2, 3] * 50)
    assert abs(mutual_information(x // 2, x) - 1.0) < 1e-12     # four values in two bins: 1 bit


class SmoothedHeuristic(agents.Agent):
    """The heuristic's choice with 90% of the weight, the rest spread over the legal actions: an
    agent that exposes its action probabilities, as neural agents do."""

    name = "smoothed_heuristic"

    def __init__(self, seed=None):
        from agents.heuristic import HeuristicAgent
        super().__init__(seed)
        self.inner = HeuristicAgent(seed=seed)

    def reset(self, seed=None):
        super().reset(seed)
        self.inner.reset(seed)

    def act(self, obs, info=None):
        return self.inner.act(obs, info)

    def action_probabilities(self, obs):
        legal = np.asarray(obs["action_mask"], dtype=float)
        probs = 0.1 * legal / legal.sum()
        probs[self.act(obs)] += 0.9
        return probs


def test_listening_on_the_partners_own_bids_and_the_size_of_the_change(monkeypatch):
    """The partner's bid swapped for one its copy makes on similar hands: the heuristic changes
    some choices, random none; the KL (bits) is reported where the agent has probabilities."""
    monkeypatch.setitem(agents.base._REGISTRY, "smoothed_heuristic", SmoothedHeuristic)
    smoothed = measure_signals("smoothed_heuristic", deals=8, workers=1)
    on, kl = smoothed["listening_on_distribution"], smoothed["listening_kl"]
    assert on["n"] > 30 and on["value"] > 0, on
    assert kl["value"] > 0 and kl["low"] <= kl["value"] <= kl["high"] and kl["n"] == on["n"], kl
    rand = measure_signals("random", deals=4, workers=1)
    assert rand["listening_on_distribution"]["value"] == 0.0 and rand["listening_kl"]["value"] is None


def test_the_listening_kl_interval_divides_each_resample_by_its_own_probes():
    """Deals hold different numbers of probes: a resample's mean KL is its KL over its probes, so
    no resample can exceed the largest per-deal mean (1.0 here; over all probes it is 10/11)."""
    import numpy as np

    from coop.measures.signals import _kl_summary
    summary = _kl_summary(np.array([10.0, 0.0]), np.array([10.0, 1.0]), True, seed=0)
    assert summary["value"] == 10 / 11
    assert 0.0 <= summary["low"] <= summary["high"] <= 1.0
