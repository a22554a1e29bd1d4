"""The ad-hoc teamwork suite: normalisation anchors, bit-identical reruns, the standard suite's
coverage and ``spades-coop run``."""

import json

import pytest

import agents
from coop.partners import zoo
from coop.cli import main
from evaluation.outcomes import EvaluationError
from coop.measures.scenarios import Scenario, Suite, get_suite, run_suite, suite_definition, suite_hash
from spades_env.rules import PRESET_NAMES, make_rules

SMALL = Suite("small", (Scenario("plain", ("heuristic",), deals=6),
                        Scenario("seats", ("high-asks", "conservative"), focal_seats=(0, 2), deals=4, seed=1)))


def test_the_partners_copy_scores_exactly_one_and_random_exactly_zero():
    copy = run_suite("heuristic", Suite("one", SMALL.scenarios[:1]), workers=1)
    (scenario,) = copy["scenarios"]
    assert scenario["normalised"] == 1.0
    assert scenario["partners"][0]["score"] == scenario["partners"][0]["copy"]
    rand = run_suite("random", Suite("one", SMALL.scenarios[:1]), workers=1)
    assert rand["scenarios"][0]["normalised"] == 0.0
    assert rand["scenarios"][0]["high"] < scenario["low"]      # random hurts its partner


def test_partner_nil_scenarios_count_only_the_partners_nil_hands():
    eager = Scenario("nil", ("eager-nil",), hands="partner_nil", deals=6, deals_factor=2)
    result = run_suite("heuristic", Suite("nil", (eager,)), workers=1)
    assert result["scenarios"][0]["deals"] == 12 == len(result["scenarios"][0]["per_deal"])
    (row,) = result["scenarios"][0]["partners"]
    assert row["partner_nil_plays"] > 0 and result["scenarios"][0]["hands"] == "partner_nil"
    whole = run_suite("heuristic", Suite("all", (Scenario("all", ("eager-nil",), deals=12),)), workers=1)
    assert row["score"] != whole["scenarios"][0]["partners"][0]["score"]
    assert run_suite("heuristic:nil=eager,bidding=aggressive", Suite("nil", (eager,)),
                     workers=1)["scenarios"][0]["normalised"] == 1.0          # the partner's own copy
    never = run_suite("heuristic", Suite("never", (Scenario("never", ("never-nil",), hands="partner_nil",
                                                            deals=6),)), workers=1)
    (row,) = never["scenarios"][0]["partners"]
    assert row["partner_nil_plays"] == 0 and row["score"] == row["copy"] == row["random"] == 0.0
    assert never["scenarios"][0]["normalised"] is None


def test_reruns_are_bit_identical_whatever_the_workers():
    first = run_suite("heuristic:bidding=aggressive", SMALL, workers=1)
    second = run_suite("heuristic:bidding=aggressive", SMALL, workers=2)
    assert json.dumps(first) == json.dumps(second)
    keys = {"suite", "suite_hash", "agent", "scenarios", "normalised"}
    assert keys <= set(first)
    for s in first["scenarios"]:
        assert {"name", "score", "low", "high", "normalised"} <= set(s)
        assert s["low"] <= s["score"] <= s["high"]
    other_seed = run_suite("heuristic:bidding=aggressive", SMALL, workers=2, seed=1)
    assert other_seed["suite_hash"] != first["suite_hash"]
    assert other_seed["scenarios"] != first["scenarios"]


def test_standard_suite_covers_held_out_groups_nil_and_every_partnership_preset():
    suite = get_suite("standard")
    names = [s.name for s in suite.scenarios]
    held_out = {p.name for p in zoo.partners("held-out", purpose="evaluation")}
    assert set(suite.scenarios[names.index("held-out")].partners) == held_out
    assert {f"group:{g}" for g in zoo.groups()} <= set(names)
    assert "partner-nil" in names
    presets = [p for p in PRESET_NAMES if make_rules(p).partnerships]
    assert {f"rules:{p}" for p in presets} <= set(names)
    for s in suite.scenarios:
        s.check()
        for entry in s.partners:
            assert entry in {p.name for p in zoo.PARTNERS}
    definition = suite_definition(suite, None, 0)
    nil = suite.scenarios[names.index("partner-nil")]
    assert nil.hands == "partner_nil" and nil.deals_factor > 1
    assert definition["scenarios"][names.index("partner-nil")]["deals"] == nil.deals * nil.deals_factor
    assert suite_hash(definition) == suite_hash(suite_definition(get_suite("standard"), None, 0))
    assert suite_hash(definition) != suite_hash(suite_definition(suite, 10, 0))


def test_bad_scenarios_are_refused():
    with pytest.raises(EvaluationError, match="partnerships"):
        run_suite("heuristic", Suite("x", (Scenario("cut", ("heuristic",), rules="cutthroat", deals=2),)))
    with pytest.raises(EvaluationError, match="focal_seats"):
        run_suite("heuristic", Suite("x", (Scenario("s", ("heuristic",), focal_seats=(1,), deals=2),)))
    with pytest.raises(EvaluationError, match="hands"):
        run_suite("heuristic", Suite("x", (Scenario("s", ("heuristic",), hands="some", deals=2),)))
    with pytest.raises(EvaluationError, match="unknown suite"):
        run_suite("heuristic", "nope")
    with pytest.raises(EvaluationError, match="deals"):
        run_suite("heuristic", SMALL, deals=0)


def test_a_registered_agent_runs_with_one_worker(monkeypatch):
    monkeypatch.setitem(agents.base._REGISTRY, "coop_test_random", None)    # removed again after the test
    agents.register("coop_test_random", agents.RandomAgent)
    result = run_suite("coop_test_random", Suite("one", SMALL.scenarios[:1]), workers=1)
    assert result["agent"] == "coop_test_random"
    assert result["scenarios"][0]["normalised"] == run_suite("random", Suite("one", SMALL.scenarios[:1]),
                                                             workers=1)["scenarios"][0]["normalised"]


def test_spades_coop_run_writes_json_and_heat_map_and_resumes(tmp_path, capsys):
    out, journal = tmp_path / "run.json", tmp_path / "run.journal"
    argv = ["run", "heuristic", "--suite", "quick", "--deals", "3", "--workers", "2", "--json", str(out),
            "--journal", str(journal), "--no-progress"]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["suite"] == "quick" and len(result["suite_hash"]) == 64
    assert (tmp_path / "run.png").stat().st_size > 1000
    assert "overall normalised" in capsys.readouterr().out
    first = out.read_text()
    assert main(argv) == 0                       # everything read back from the journal
    assert out.read_text() == first
    assert main(["run", "nosuchagent", "--suite", "quick"]) == 2
    assert main(["run", "heuristic", "--suite", "nosuch"]) == 2
    assert main(["run", "heuristic:bogus=1", "--suite", "quick", "--deals", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("spades-coop: error: ") for line in err)


def test_the_held_out_suite_is_the_standard_suites_held_out_scenario():
    from coop.partners import zoo
    from coop.measures.scenarios import get_suite, standard_suite
    suite = get_suite("held-out")
    assert [s.name for s in suite.scenarios] == ["held-out"]
    assert suite.scenarios[0] == standard_suite().scenarios[0]
    assert set(suite.scenarios[0].partners) == {p.name for p in zoo.partners("held-out", purpose="evaluation")}
    assert suite.scenarios[0].focal_seats == (0, 2)


def test_a_scenarios_normalised_score_is_the_mean_of_its_partners_ratios():
    """Per partner (focal - random) / (copy - random); a scenario's value is the mean over its
    partners (each partner weighs the same), the suite's the mean over scenarios."""
    result = run_suite("heuristic:bidding=aggressive", SMALL, workers=1)
    for scenario in result["scenarios"]:
        ratios = [(p["score"] - p["random"]) / (p["copy"] - p["random"]) for p in scenario["partners"]]
        for p, ratio in zip(scenario["partners"], ratios):
            assert p["normalised"] == pytest.approx(ratio, abs=1e-12)
        assert scenario["normalised"] == pytest.approx(sum(ratios) / len(ratios), abs=1e-12)
    two = result["scenarios"][1]["partners"]
    assert two[0]["normalised"] != pytest.approx(two[1]["normalised"])        # the mean is not one partner's
    assert result["normalised"] == pytest.approx(sum(s["normalised"] for s in result["scenarios"]) / 2, abs=1e-12)


def test_normalised_scores_have_bootstrap_intervals_over_deals():
    import numpy as np
    from coop.measures.scenarios import normalised_bootstrap
    result = run_suite("heuristic:bidding=aggressive", SMALL, workers=1)
    for part in result["scenarios"] + [result]:
        assert part["normalised_low"] < part["normalised"] < part["normalised_high"], part.get("name")
    assert "each partner weighs the same" in result["normalised_weighting"]
    copy = run_suite("heuristic", Suite("one", SMALL.scenarios[:1]), workers=1)
    assert copy["scenarios"][0]["normalised_low"] == copy["scenarios"][0]["normalised_high"] == 1.0
    # two partners over 3 deals, every resample drawing deal 0 only: the ratios of deal 0, averaged
    focal, copy_, random = np.array([4.0, 0, 0]), np.array([6.0, 0, 0]), np.array([2.0, 1, 1])
    draws = np.zeros((5, 3), dtype=int)
    values = normalised_bootstrap([(focal, copy_, random), (focal, copy_ * 2, random)], draws)
    assert np.allclose(values, ((4 - 2) / (6 - 2) + (4 - 2) / (12 - 2)) / 2)
    tied = normalised_bootstrap([(focal, random, random)], draws)
    assert np.isnan(tied).all()                                   # copy = random: no ratio, as the point estimate
