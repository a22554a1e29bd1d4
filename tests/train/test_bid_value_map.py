"""``spades-coop bid-values``: every bid played out under a policy's own play, by trick potential."""

import json

import numpy as np
import pytest

from train.bids.bid_value_map import bid_value_map
from coop.cli import main


def test_the_table_is_consistent_with_its_own_values():
    result = bid_value_map("neural_v1", deals=24, seed=3)
    assert result["bidding_turns"] == sum(row["hands"] for row in result["buckets"]) > 0
    for row in result["buckets"]:
        values = [v for v in row["values"] if v is not None]
        assert row["values"][row["best_bid"]] == max(values)          # the best bid is the best mean
        if row["best_bid"] == row["usual_bid"] and row["usual_share"] == 1.0:
            assert row["gain"]["value"] == 0.0                        # nothing to gain where it already bids it
        assert row["gain"]["value"] >= 0 or row["usual_share"] < 1.0 or row["hands"] == 0
    assert result["distinct_best_bids"] == len({row["best_bid"] for row in result["buckets"]})
    again = bid_value_map("neural_v1", deals=24, seed=3)
    assert again == result                                           # the same deals, the same play


def test_the_command_prints_writes_json_and_refuses_what_is_not_a_policy(tmp_path, capsys):
    out = tmp_path / "bv.json"
    assert main(["bid-values", "neural_v1", "--deals", "8", "--json", str(out), "--no-progress"]) == 0
    assert "best bid" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["deals"] == 8 and data["buckets"]
    assert main(["bid-values", "heuristic", "--deals", "8", "--no-progress"]) == 2
    assert "not a neural policy" in capsys.readouterr().err
    assert main(["bid-values", "neural:checkpoint=/nonexistent.pt", "--deals", "8", "--no-progress"]) == 2
    assert main(["bid-values", "neural_v1", "--deals", "1", "--no-progress"]) == 2
    with pytest.raises(SystemExit):
        main(["bid-values", "--help"])
