"""Smoke tests of the command-line entry points (tiny workloads; the figures are not checked)."""

import json

from spades_env import bench, demo


def test_bench_runs_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--decisions", "3000", "--repeats", "1", "--batch-sizes", "1,8",
                       "--vector-seconds", "0.05", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "spades_v0.raw_env" in printed and "spades_v0.env (wrapped)" in printed
    assert "Batched engine" in printed
    data = json.loads(out.read_text())
    assert data["results"]["spades_v0.raw_env"]["decisions"] >= 3000
    assert data["results"]["spades_v0.raw_env"]["decisions_per_s"] > 0
    assert [row["batch_size"] for row in data["vector"]] == [1, 8]
    assert all(row["decisions_per_s"] > 0 for row in data["vector"])


def test_bench_rejects_bad_arguments(capsys):
    import pytest
    with pytest.raises(SystemExit):
        bench.main(["--decisions", "0"])
    with pytest.raises(SystemExit):
        bench.main(["--batch-sizes", "4,x"])


def test_bench_other_rules():
    results = bench.run_benchmarks(decisions=2000, rules="cutthroat", repeats=1, openspiel=False,
                                   progress=lambda line: None)
    assert set(results) == {"spades_v0.raw_env", "spades_v0.env (wrapped)"}


def test_bench_vector_only():
    row = bench.run_vector(16, seconds=0.05, rules="tournament")
    assert row["batch_size"] == 16 and row["steps"] > 0 and not row["compiled"]


def test_demo_plays_a_rendered_game(capsys):
    assert demo.main(["--no-bench", "--hands", "2", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "Hand 1 scored" in printed and "Game over" in printed
    assert "North (0)" in printed and "bid" in printed
