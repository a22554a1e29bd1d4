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


register("neural", _make_neural)

__all__ = ["Agent", "RandomAgent", "available", "legal_actions", "make", "register"]
