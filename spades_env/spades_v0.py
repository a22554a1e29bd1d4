"""``spades_v0.env()`` (wrapped, PettingZoo's usual wrappers) and ``spades_v0.raw_env()``."""

from __future__ import annotations

from typing import Any

from .env import SpadesEnv
from .wrappers import wrap


def raw_env(**kwargs: Any) -> SpadesEnv:
    """The bare AEC env: an illegal action raises ``IllegalActionError``."""
    return SpadesEnv(**kwargs)


def env(illegal_reward: float = -1.0, **kwargs: Any):
    """The wrapped AEC env: an illegal action ends the game with ``illegal_reward`` for the
    player who made it (PettingZoo's convention); accessing state before ``reset`` is an error."""
    return wrap(SpadesEnv(**kwargs), illegal_reward=illegal_reward)
