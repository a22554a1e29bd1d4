"""Positions from real play for the network tests (the neural agent's and the nil-defence
head's): every decision's observation from a few hands of heuristic play."""

import numpy as np
import torch

import agents
from spades_env import spades_v0


def observed_positions(rules: str, players: int | None = None, hands: int = 2, starts=None) -> list[dict]:
    """Every decision's observation (a copy of the env's dict) from a few hands of heuristic
    play; ``starts(hand)`` gives each hand's reset options (random scores, say)."""
    kwargs = {} if players is None else {"players": players}
    env = spades_v0.raw_env(rules=rules, episode="hand", **kwargs)
    seen = []
    for hand_no in range(hands):
        env.reset(seed=hand_no, options=None if starts is None else starts(hand_no))
        bots = {name: agents.make("heuristic", seed=i) for i, name in enumerate(env.agents)}
        for name in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            seen.append({k: np.array(v) for k, v in obs.items()})
            env.step(bots[name].act(obs, info))
    return seen


def batched(seen: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """The observations and masks of :func:`observed_positions` as tensors."""
    return (torch.from_numpy(np.stack([o["observation"] for o in seen])).float(),
            torch.from_numpy(np.stack([o["action_mask"] for o in seen])).bool())
