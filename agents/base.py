"""The agent protocol and the registry behind ``agents.make``.

An agent acts from exactly what ``env.last()`` hands its own seat::

    action = agent.act(obs, info)     # obs = {"observation": float32[...], "action_mask": int8[68]}

and nothing else: no access to the env, the engine or other seats. Agents are deterministic
given their seed (the same sequence of observations gives the same actions).
"""

from __future__ import annotations

import difflib
import math
import random
from typing import Any, Callable, Optional

import numpy as np


class Agent:
    """Base class. Subclasses implement :meth:`act`; :meth:`reset` is called between episodes."""

    name = "agent"
    asks_a_person = False
    """True for a player that asks a person for every move (``human``): no match, measurement or
    labelling run by a program can use it (:func:`asks_a_person`)."""

    def __init__(self, seed: Optional[int] = None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63):
            # a negative or huge seed was silently accepted and meant nothing reproducible (issue 50)
            raise ValueError(f"{self.name}: seed={seed!r}: expected a whole number from 0 to 2**63 - 1")
        self.seed = seed
        self.rng = random.Random(seed)

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        raise NotImplementedError

    def reset(self, seed: Optional[int] = None) -> None:
        """Start a new episode; a seed restarts the agent's random stream."""
        if seed is not None:
            self.seed = seed
            self.rng = random.Random(seed)

    def __call__(self, obs: dict, info: Optional[dict] = None) -> int:
        return self.act(obs, info)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed!r})"


def whole_option(agent: str, option: str, value: Any, least: int = 1, most: Optional[int] = None) -> int:
    """An agent option that must be a whole number, checked in our words (``int("abc")``'s own
    message named neither the agent nor the option)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer()))):
        raise ValueError(f"{agent}: {option}={value!r}: expected a whole number >= {least}")
    value = int(value)
    if value < least or (most is not None and value > most):
        bound = f"from {least} to {most}" if most is not None else f">= {least}"
        raise ValueError(f"{agent}: {option}={value!r}: expected a whole number {bound}")
    return value


def legal_actions(obs: dict) -> list[int]:
    """The legal action ids in an observation's mask."""
    return [int(a) for a in np.flatnonzero(obs["action_mask"])]


def observation_view(obs: dict):
    """What ``obs`` (as ``env.last()`` gives it) tells its seat, as an
    :class:`~spades_env.ObservationView`. The layout is found from the observation's size and the
    mask's length (68 + signals): under ``signals`` the size alone does not fix it."""
    from spades_env.observation import decode_observation, layout_for_size

    observation = np.asarray(obs["observation"])
    signals = len(obs["action_mask"]) - 68
    return decode_observation(observation, layout_for_size(observation.shape[-1], signals=signals))


class RandomAgent(Agent):
    """Uniformly random among the legal actions."""

    name = "random"

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        legal = np.flatnonzero(obs["action_mask"])
        if len(legal) == 0:
            raise ValueError("RandomAgent.act: the action mask is empty (is it this agent's turn?)")
        return int(legal[self.rng.randrange(len(legal))])


_REGISTRY: dict[str, Callable[..., Agent]] = {}


def register(name: str, factory: Optional[Callable[..., Agent]] = None):
    """Register an agent factory under ``name`` (usable as a decorator)."""
    def add(f: Callable[..., Agent]) -> Callable[..., Agent]:
        _REGISTRY[name] = f
        return f
    return add(factory) if factory is not None else add


def available() -> list[str]:
    """Names ``make`` accepts."""
    return sorted(_REGISTRY)


def asks_a_person(name: str) -> bool:
    """Whether the agent registered as ``name`` asks a person for every move (its factory is an
    :class:`Agent` class whose ``asks_a_person`` is true), so that a command that plays thousands
    of decisions by itself can refuse it by name before it blocks on a terminal."""
    return bool(getattr(_REGISTRY.get(name), "asks_a_person", False))


def make(name: str, **options: Any) -> Agent:
    """Build a registered agent: ``agents.make("heuristic", seed=0)``."""
    factory = _REGISTRY.get(name)
    if factory is None:
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown agent {name!r}{hint}; available: {', '.join(available())}")
    try:
        return factory(**options)
    except TypeError as exc:
        raise TypeError(f"agents.make({name!r}): bad options {sorted(options)}: {exc}") from None


register("random", RandomAgent)
