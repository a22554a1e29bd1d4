"""Model files from outside: weights that are not finite are refused by every load path."""

from pathlib import Path

import pytest
import torch

import agents
from agents.neural import DEFAULT_MODEL, ModelError, NeuralAgent, read_checkpoint

from helpers import play_hand_asserting_legal


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused(tmp_path, value):
    data = torch.load(DEFAULT_MODEL, weights_only=True)
    name = next(k for k, v in data["policy"].items() if v.is_floating_point())
    data["policy"][name] = data["policy"][name].clone()
    data["policy"][name].view(-1)[0] = value
    path = tmp_path / "bad.pt"
    torch.save(data, path)
    with pytest.raises(ModelError, match="not finite"):
        read_checkpoint(path)
    with pytest.raises(ModelError, match="not finite"):
        NeuralAgent(checkpoint=path)
    with pytest.raises(ModelError, match="not finite"):
        agents.make("neural", checkpoint=str(path))


def test_the_shipped_model_loads():
    assert NeuralAgent().policy is not None


def test_the_expert_iteration_candidate_plays_legal_games():
    """agents/models/experimental/ keeps the best policy of expert iteration (docs/shipped_model.md)."""
    path = Path(agents.__file__).parent / "models" / "experimental" / "expert_iteration_round4.pt"
    play_hand_asserting_legal(agents.make("neural", checkpoint=str(path)), seed=4)
