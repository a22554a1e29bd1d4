"""The forced-nil measurement (evaluation/nil_play.py): it tells a player who ducks from one
who does not, and refuses bad input by name."""

from __future__ import annotations

import json

import pytest

from evaluation.nil_play import main, nil_play
from evaluation.outcomes import EvaluationError


def test_the_heuristic_ducks_and_keeps_most_nils_random_play_does_not():
    careful = nil_play("heuristic", hands=20, seed=4)
    assert careful["hands"] == 20 and careful["duck_chances"] > 100
    assert careful["duck_errors"] == 0 and careful["kept_share"] >= 0.7
    careless = nil_play("random", hands=20, seed=4)
    assert careless["duck_error_share"] > 0.05 and careless["kept_share"] < careful["kept_share"]
    assert careless["duck_errors"] == (careless["errors_following"] + careless["errors_ruffing"])
    # the same seed deals the same hands: the heuristic's count repeats
    assert nil_play("heuristic", hands=20, seed=4) == careful


def test_bad_input_is_refused_by_name(tmp_path, capsys):
    with pytest.raises(EvaluationError, match="hands=0"):
        nil_play("heuristic", hands=0)
    with pytest.raises(EvaluationError, match="min_chance=1.5"):
        nil_play("heuristic", hands=2, min_chance=1.5)
    with pytest.raises(EvaluationError, match="lower --min-chance"):
        nil_play("heuristic", hands=5, min_chance=0.999, max_deals=30)
    assert main(["--agent", "nosuchagent", "--hands", "2"]) == 2
    assert "unknown agent" in capsys.readouterr().err
    out = tmp_path / "nil.json"
    assert main(["--agent", "heuristic", "--opponents", "random", "--hands", "3", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["opponents"] == "random" and data["hands"] == 3
