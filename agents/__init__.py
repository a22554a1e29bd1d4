"""Spades agents behind one registry: ``agents.make(name, **options)``.

    import agents
    bot = agents.make("random", seed=0)
    action = bot.act(obs, info)        # exactly what env.last() gave this seat
"""

from .base import Agent, RandomAgent, available, legal_actions, make, register
from . import heuristic  # registers "heuristic"
from . import human  # registers "human"
from . import search  # registers "search"


def _make_neural(**options):
    """``agents.make("neural", checkpoint=...)``: imports torch only when a neural agent is built."""
    from .neural import NeuralAgent
    return NeuralAgent(**options)


def _make_neural_v1(**options):
    """``agents.make("neural_v1")``: the policy shipped as ``neural`` until 2026-11-26 (PPO and
    play-out fits, docs/shipped_model.md), kept for comparisons; ``checkpoint`` is fixed."""
    from .neural import PREVIOUS_MODEL, NeuralAgent
    if "checkpoint" in options:
        raise ValueError("neural_v1 is one fixed model; use neural:checkpoint=FILE for another")
    return NeuralAgent(checkpoint=PREVIOUS_MODEL, **options)


register("neural", _make_neural)
register("neural_v1", _make_neural_v1)

__all__ = ["Agent", "RandomAgent", "available", "legal_actions", "make", "register"]
