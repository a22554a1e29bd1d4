"""Spades agents behind one registry: ``agents.make(name, **options)``.

    import agents
    bot = agents.make("random", seed=0)
    action = bot.act(obs, info)        # exactly what env.last() gave this seat
"""

from .base import Agent, RandomAgent, asks_a_person, available, legal_actions, make, register
from . import heuristic  # registers "heuristic"
from . import human  # registers "human"
from . import search  # registers "search_v1"
from . import endgame_search  # registers "search"


def _make_neural(**options):
    """``agents.make("neural", checkpoint=...)``: the model the manifest's alias ``neural`` names
    (agents/models/manifest.json); imports torch only when a neural agent is built."""
    from .neural import NeuralAgent
    return NeuralAgent(**options)


def _previous_neural(name: str, shipped: str):
    """The maker of ``agents.make(name)``: a policy once shipped as ``neural`` (docs/shipped_model.md),
    kept for comparisons; its ``checkpoint`` is fixed."""
    def make_previous(**options):
        from .neural import VERSIONED_MODELS, NeuralAgent
        if "checkpoint" in options or "model" in options:
            raise ValueError(f"{name} is one fixed model; use neural:checkpoint=FILE for another")
        return NeuralAgent(checkpoint=VERSIONED_MODELS[name], **options)
    make_previous.__doc__ = f"``agents.make({name!r})``: the policy shipped as ``neural`` {shipped}."
    return make_previous


register("neural", _make_neural)
register("neural_v1", _previous_neural("neural_v1", "until 2026-11-26 (PPO and play-out fits)"))
register("neural_v2", _previous_neural("neural_v2", "from 2026-11-26 to 2026-11-27 (expert iteration's round 4)"))
register("neural_v3", _previous_neural("neural_v3", "from 2026-11-27 to 2026-11-28 (blind nil learnt, card play priced for bags)"))
register("neural_v4", _previous_neural("neural_v4", "on 2026-11-28 until noon (neural_v3 with its bids tilted upwards)"))
register("neural_v5", _previous_neural("neural_v5", "on 2026-11-28 from noon to the evening (neural_v4 with its bids safer "
                                                   "ahead near 500)"))
register("neural_v6", _previous_neural("neural_v6", "from the evening of 2026-11-28 to 2026-11-29 (neural_v5 with a head of "
                                                   "its own for the nil defence)"))
register("neural_v7", _previous_neural("neural_v7", "since 2026-11-29 (neural_v6 with its bids valued by the game)"))

__all__ = ["Agent", "RandomAgent", "asks_a_person", "available", "legal_actions", "make", "register"]
