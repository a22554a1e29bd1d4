"""Positions from real play for the network tests (the neural agent's and the nil-defence
head's): every decision's observation from a few hands of heuristic play."""

import numpy as np
import torch

import agents
from spades_env import spades_v0


def heuristic_decisions(rules: str, hands: int = 2, players: int | None = None, starts=None, seed: int = 0,
                        override=None):
    """(game, seat, obs) at every decision of ``hands`` hands of heuristic play (hand ``i`` dealt
    with seed ``seed + i``), yielded before the action is played; ``starts(hand)`` gives each
    hand's reset options, ``override(game, obs, action)`` may replace the heuristic's action."""
    kwargs = {} if players is None else {"players": players}
    env = spades_v0.raw_env(rules=rules, episode="hand", **kwargs)
    for hand_no in range(hands):
        env.reset(seed=seed + hand_no, options=None if starts is None else starts(hand_no))
        bots = {name: agents.make("heuristic", seed=i) for i, name in enumerate(env.agents)}
        for name in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            game = env.unwrapped.game
            action = bots[name].act(obs, info)
            if override is not None:
                action = override(game, obs, action)
            yield game, int(name.split("_")[-1]), obs
            env.step(action)


def observed_positions(rules: str, players: int | None = None, hands: int = 2, starts=None) -> list[dict]:
    """Every decision's observation (a copy of the env's dict) from a few hands of heuristic
    play; ``starts(hand)`` gives each hand's reset options (random scores, say)."""
    return [{k: np.array(v) for k, v in obs.items()}
            for _, _, obs in heuristic_decisions(rules, hands, players, starts)]


def batched(seen: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """The observations and masks of :func:`observed_positions` as tensors."""
    return (torch.from_numpy(np.stack([o["observation"] for o in seen])).float(),
            torch.from_numpy(np.stack([o["action_mask"] for o in seen])).bool())
