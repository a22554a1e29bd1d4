"""The scripts in examples/ run, and their pieces do what their docstrings say."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch

import agents
from spades_env import spades_v0

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_custom_agent_bids_one_less_and_compares(capsys, monkeypatch):
    monkeypatch.setattr(agents.base, "_REGISTRY", dict(agents.base._REGISTRY))   # the example registers a name
    example = load_example("custom_agent")
    assert "underbidding_heuristic" in agents.available()
    env = spades_v0.env(rules="standard")
    changed = 0
    for seed in range(20):
        env.reset(seed=seed)
        mine, theirs = example.UnderbiddingHeuristic(seed=0), agents.make("heuristic", seed=0)
        obs, _, _, _, info = env.last()
        bid, plain = mine.act(obs, info) - 52, theirs.act(obs, info) - 52
        assert bid == (plain - 1 if plain >= 2 else plain)
        changed += bid != plain
    assert changed > 0
    example.main(["--deals", "4", "--workers", "1"])
    out = capsys.readouterr().out
    assert "candidate minus baseline" in out and "where the difference comes from" in out


def test_seat_returns_credits_each_seat_until_its_hand_ends():
    example = load_example("vector_selfplay")
    # one table, five steps; the hand ends at step 2, a new one starts at step 3
    seats = torch.tensor([[0], [1], [2], [3], [0]])
    done = torch.tensor([[False], [False], [True], [False], [False]])
    rewards = torch.zeros(5, 1, 4)
    rewards[1, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0])       # seat 0 earns 1 at step 1
    rewards[2, 0] = torch.tensor([2.0, -2.0, 2.0, -2.0])      # the hand's score
    rewards[4, 0] = torch.tensor([5.0, 5.0, 5.0, 5.0])        # the next hand, unfinished
    returns, complete = example.seat_returns(rewards, seats, done)
    assert returns[:3, 0].tolist() == [3.0, -2.0, 2.0]
    assert complete[:, 0].tolist() == [True, True, True, False, False]


def test_vector_selfplay_runs_end_to_end():
    example = load_example("vector_selfplay")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = example.main(["--tables", "32", "--steps", "64", "--updates", "2", "--eval-deals", "4"])
    finally:
        torch.set_num_threads(threads)
    assert "against random" in result["before"] and "against heuristic" in result["after"]
    weights = [p.detach() for p in result["policy"].parameters()]
    assert all(np.isfinite(w.numpy()).all() for w in weights)
