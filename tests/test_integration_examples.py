"""The library examples run and learn: sb3-contrib's MaskablePPO, TorchRL's PPO on the batched
adapter, RLlib's PPO with action masking. Each runs where its library is installed (the
integrations steps of .ci/run); the numbers they print are in docs/integrations.md."""

from __future__ import annotations

import pytest

from test_examples import load_example as _example


def test_sb3_maskable_ppo_learns():
    pytest.importorskip("sb3_contrib")
    result = _example("sb3_maskable_ppo").main(["--steps", "40000"])
    assert result["after"] > result["before"] + 40        # points per hand against random players


def test_torchrl_ppo_learns():
    pytest.importorskip("torchrl")
    result = _example("torchrl_ppo").main(["--updates", "30", "--tables", "512"])
    assert result["after"]["random"] > result["before"]["random"] + 40
    assert result["after"]["heuristic"] > result["before"]["heuristic"]


def test_rllib_ppo_learns():
    pytest.importorskip("ray.rllib")
    result = _example("rllib_ppo").main(["--iterations", "6"])
    assert result["after"] > result["before"] + 25
