"""Shared helpers for the environment-level tests: seeded policies and the standard AEC loop."""

from __future__ import annotations

import random
from typing import Any, Callable, Optional

import numpy as np

from spades_env import spades_v0
from spades_env.cards import parse_card

PRESETS = ("standard", "basic", "tournament", "cutthroat", "openspiel")

# (label, constructor kwargs): every preset, plus the 3-player variant, a blind-nil-heavy
# variant (a deficit of 0 offers blind nil to both sides at every hand), the short deck and the
# free signal (with blind nil offered, so that seats signal before looking at their cards).
CONFIGS = [(p, {"rules": p}) for p in PRESETS] + [
    ("cutthroat3", {"rules": "cutthroat", "players": 3}),
    ("blindheavy", {"rules": "standard", "blind_nil_min_deficit": 0}),
    ("short", {"rules": "short"}),
    ("short_signals", {"rules": "short_signals"}),
    ("signals-blindheavy", {"rules": "standard", "signals": 3, "blind_nil_min_deficit": 0}),
]

BID_BASE = 52
BLIND_NIL = 66
LOOK = 67


def legal_from_mask(mask: np.ndarray) -> list[int]:
    return [int(a) for a in np.flatnonzero(mask)]


def choose(mask: np.ndarray, rng: random.Random, style: str = "uniform", p_blind: float = 0.5) -> int:
    """A random legal action. ``style="low"`` bids 1..4 (nil now and then) so that games last
    many hands and bags pile up; ``p_blind`` is the chance of taking blind nil when offered."""
    legal = legal_from_mask(mask)
    assert legal, "empty action mask for the agent to act"
    if BLIND_NIL in legal:
        return BLIND_NIL if rng.random() < p_blind else LOOK
    if style == "low" and legal[0] >= BID_BASE:
        low = [a for a in legal if BID_BASE + 1 <= a <= BID_BASE + 4]
        if BID_BASE in legal and rng.random() < 0.08:
            return BID_BASE
        if low:
            return rng.choice(low)
    return legal[rng.randrange(len(legal))]


def run_loop(env, rng: random.Random, style: str = "uniform", p_blind: float = 0.5,
             max_steps: Optional[int] = None,
             on_step: Optional[Callable[[Any, str, Optional[int]], None]] = None) -> list:
    """The PettingZoo loop of API.md with a seeded random policy. Returns the actions taken
    (None on dead steps). ``on_step(env, agent, action)`` runs after each ``env.step``."""
    actions = []
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        if termination or truncation:
            action = None
        else:
            action = choose(obs["action_mask"], rng, style, p_blind)
        env.step(action)
        actions.append(action)
        if on_step is not None:
            on_step(env, agent, action)
        if max_steps is not None and len(actions) >= max_steps:
            break
    return actions


def play_game(kwargs: dict, seed: int, style: str = "uniform", wrapped: bool = True, options=None):
    """A whole episode with a seeded env and a seeded policy; returns the env."""
    env = (spades_v0.env if wrapped else spades_v0.raw_env)(**kwargs)
    env.reset(seed=seed, options=options)
    run_loop(env, random.Random(seed ^ 0x5EED), style)
    return env


def card_ids(cards) -> list[int]:
    return [parse_card(c) for c in cards]


def mask_to_list(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def advance(env, rng: random.Random, steps: int, style: str = "uniform") -> None:
    """Take ``steps`` live actions (stops early at the end of the episode)."""
    raw = env.unwrapped
    for _ in range(steps):
        agent = env.agent_selection
        if raw.terminations[agent] or raw.truncations[agent]:
            return
        env.step(choose(env.observe(agent)["action_mask"], rng, style))
