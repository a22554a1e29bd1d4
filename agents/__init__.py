"""Spades agents behind one registry: ``agents.make(name, **options)``.

    import agents
    bot = agents.make("random", seed=0)
    action = bot.act(obs, info)        # exactly what env.last() gave this seat
"""

from .base import Agent, RandomAgent, available, legal_actions, make, register
from . import heuristic  # registers "heuristic"
from . import human  # registers "human"
from . import search  # registers "search"

__all__ = ["Agent", "RandomAgent", "available", "legal_actions", "make", "register"]
