"""The batched engine as a gymnasium vector env: one learning seat per table, the other seats
played by given batched policies.

    from spades_env.vector_gym import SpadesGymVectorEnv
    import agents
    heuristic = agents.make("heuristic")
    envs = SpadesGymVectorEnv(4096, seat=0, opponents=heuristic.act_batch)   # partner: opponents too
    obs, info = envs.reset(seed=0)                       # (B, 742) float32, info["action_mask"] (B, 68)
    obs, reward, terminated, truncated, info = envs.step(actions)            # actions: (B,) ints

Every table of a :class:`~spades_env.vector.SpadesVectorEnv` always has one player to act. A
``step`` applies the learner's action at every table, then lets the given policies play the other
seats until the learner is to act again at every table: the tables still waiting for another
seat are stepped together, the others are held as they were (a masked step: their state,
observation and mask are kept). ``reward`` is the learner's reward since its previous decision
(rewards that arrive during the other seats' moves included), ``terminated`` marks tables whose
episode ended since then; those tables have already begun the next episode, and the observation
returned is the learner's first decision in it (same-step autoreset: there is no terminal
observation to return, the terminal value being 0). Policies take the engine's tensors,
``policy(obs, mask) -> actions`` ((B, obs_size) float32, (B, 68) bool, (B,) int64), e.g. a
heuristic's ``act_batch`` or a network; the default plays uniformly random legal actions.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Callable, Optional

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .game import NUM_ACTIONS
from .observation import observation_bounds
from .vector import SpadesVectorEnv, VecState, VectorEnvError

Policy = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def random_policy(generator: torch.Generator) -> Policy:
    """Uniformly random legal actions, from ``generator`` (the C picker where it is built)."""
    def act(obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        uniform = torch.rand(mask.shape[0], generator=generator, device=mask.device)
        if mask.device.type == "cpu":
            from .native import random_legal, unavailable_reason
            if unavailable_reason() is None:
                return random_legal(mask, uniform)
        counts = mask.sum(1)
        k = (uniform * counts).long().clamp(max=counts - 1)
        return (mask.long().cumsum(1) > k[:, None]).long().argmax(1)
    return act


class SpadesGymVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` tables, the learner in ``seat`` at each (module doc). ``opponents``: the
    policy of the other side; ``partner``: the learner's partner (default: ``opponents``'s
    policy). The other arguments go to :class:`~spades_env.vector.SpadesVectorEnv` (``rules``,
    ``reward``, ``reward_scale``, ``episode``, ``device``, ``backend``, ``threads``...)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, seat: int = 0, opponents: Optional[Policy] = None,
                 partner: Optional[Policy] = None, seed: Optional[int] = None, **engine_options: Any) -> None:
        engine_options.setdefault("check_actions", False)      # the learner's actions are checked here
        self.engine = SpadesVectorEnv(num_envs, seed=seed, **engine_options)
        n = self.engine.rules.players
        if not isinstance(seat, (int, np.integer)) or isinstance(seat, bool) or not 0 <= seat < n:
            raise VectorEnvError(f"seat={seat!r}: expected the learning seat, 0..{n - 1}")
        self.seat = int(seat)
        self.num_envs = num_envs
        self._generator = torch.Generator(device=self.engine.device)
        self._generator.manual_seed(0 if seed is None else seed)
        self.opponents = opponents if opponents is not None else random_policy(self._generator)
        self.partner = partner if partner is not None else self.opponents
        for name, policy in (("opponents", self.opponents), ("partner", self.partner)):
            if not callable(policy):
                raise VectorEnvError(f"{name}={policy!r}: expected a batched policy, policy(obs, mask) -> actions")
        low, high = observation_bounds(self.engine.layout, self.engine.rules)
        self.single_observation_space = spaces.Box(low=low, high=high, dtype=np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._obs: Optional[torch.Tensor] = None
        self._mask: Optional[torch.Tensor] = None

    # ------------------------------------------------------------------ gymnasium
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None:
            self._generator.manual_seed(seed)
        obs, mask = self.engine.reset(seed=seed, **(options or {}))
        reward = torch.zeros(self.num_envs, dtype=torch.float64, device=self.engine.device)
        ended = torch.zeros(self.num_envs, dtype=torch.bool, device=self.engine.device)
        self._obs, self._mask = self._advance(obs, mask, reward, ended)
        return self._obs.cpu().numpy(), {"action_mask": self._mask.cpu().numpy().astype(np.int8)}

    def step(self, actions: Any):
        if self._obs is None:
            raise VectorEnvError("step() before reset(): call reset() first")
        actions = torch.as_tensor(np.asarray(actions), device=self.engine.device)
        if actions.shape != (self.num_envs,) or actions.is_floating_point() or actions.dtype == torch.bool:
            raise VectorEnvError(f"actions of shape {tuple(actions.shape)} and dtype {actions.dtype}: expected "
                                 f"({self.num_envs},) integer action ids")
        actions = actions.to(torch.int64)
        legal = (actions >= 0) & (actions < NUM_ACTIONS)
        legal &= self._mask.gather(1, actions.clamp(0, NUM_ACTIONS - 1)[:, None])[:, 0]
        if not bool(legal.all()):
            bad = int(torch.nonzero(~legal)[0, 0])
            raise VectorEnvError(f"illegal learner action {int(actions[bad])} at table {bad}; legal there: "
                                 f"{torch.nonzero(self._mask[bad])[:, 0].tolist()}")
        obs, mask, rewards, done, _ = self.engine.step(actions)
        reward = rewards[:, self.seat].to(torch.float64)
        ended = done.clone()
        self._obs, self._mask = self._advance(obs, mask, reward, ended)
        zeros = np.zeros(self.num_envs, dtype=bool)
        return (self._obs.cpu().numpy(), reward.cpu().numpy(), ended.cpu().numpy(), zeros,
                {"action_mask": self._mask.cpu().numpy().astype(np.int8)})

    def action_masks(self) -> np.ndarray:
        """(B, 68) bool: the learner's legal actions at every table (sb3-contrib's name)."""
        return self._mask.cpu().numpy()

    # ------------------------------------------------------------------ the other seats
    def _advance(self, obs: torch.Tensor, mask: torch.Tensor, reward: torch.Tensor, ended: torch.Tensor):
        """Play the other seats until the learner is to act at every table; adds the learner's
        rewards to ``reward`` and the tables whose episode ended to ``ended`` (in place)."""
        engine = self.engine
        partner_seat = (self.seat + 2) % 4 if engine.rules.partnerships and engine.rules.players == 4 else None
        while True:
            to_act = engine.to_act
            waiting = to_act != self.seat
            if not bool(waiting.any()):
                return obs, mask
            chosen = self.opponents(obs, mask).to(torch.int64)
            if partner_seat is not None and self.partner is not self.opponents:
                chosen = torch.where(to_act == partner_seat, self.partner(obs, mask).to(torch.int64), chosen)
            held = ~waiting
            if not bool(held.any()):                               # every table moves: a plain step
                obs, mask, rewards, done, _ = engine.step(chosen)
                reward += rewards[:, self.seat].to(torch.float64)
                ended |= done
                continue
            moving = torch.nonzero(waiting)[:, 0]
            first_legal = mask.view(torch.uint8).argmax(1)          # held tables: their first legal action,
            chosen = torch.where(waiting, chosen, first_legal)      # then their state is put back
            before = engine.state.clone()
            new_obs, new_mask, rewards, done, _ = engine.step(chosen)
            engine.state = _merge(engine.state, before, held)
            reward[moving] += rewards[moving, self.seat].to(torch.float64)
            ended[moving] |= done[moving]
            obs[moving] = new_obs[moving]        # in place: obs and mask are the engine's fresh tensors of
            mask[moving] = new_mask[moving]      # this step, not yet handed to the caller


def _merge(new: VecState, old: VecState, keep_old: torch.Tensor) -> VecState:
    """``new`` with the tables in ``keep_old`` taken from ``old`` (every field is (B, ...))."""
    merged = {}
    for f in fields(new):
        a, b = getattr(new, f.name), getattr(old, f.name)
        where = keep_old.view(-1, *([1] * (a.dim() - 1)))
        merged[f.name] = torch.where(where, b, a)
    return VecState(**merged)


def benchmark(batch_sizes=(256, 1024, 4096), seconds: float = 3.0, backend: str = "native",
              threads: int = 2) -> list[dict]:
    """Learner decisions per second through the view (random learner and random other seats,
    observation and mask produced), beside the raw engine's decisions per second (random
    actions at every table) in the same run."""
    import time

    from .native import random_legal
    rows = []
    for batch in batch_sizes:
        generator = torch.Generator().manual_seed(batch)
        view = SpadesGymVectorEnv(batch, seat=0, seed=0, backend=backend, threads=threads, episode="hand")
        obs, info = view.reset(seed=0)
        steps, began = 0, time.perf_counter()
        while time.perf_counter() - began < seconds:
            actions = random_legal(torch.from_numpy(view.action_masks()), torch.rand(batch, generator=generator))
            view.step(actions.numpy())
            steps += 1
        view_rate = steps * batch / (time.perf_counter() - began)
        engine = SpadesVectorEnv(batch, seed=0, backend=backend, threads=threads, episode="hand", check_actions=False)
        _, mask = engine.reset(seed=0)
        steps, began = 0, time.perf_counter()
        while time.perf_counter() - began < seconds:
            _, mask, *_ = engine.step(random_legal(mask, torch.rand(batch, generator=generator)))
            steps += 1
        rows.append({"batch": batch, "view_learner_decisions_per_s": view_rate,
                     "engine_decisions_per_s": steps * batch / (time.perf_counter() - began)})
    return rows


if __name__ == "__main__":       # python -m spades_env.vector_gym: the benchmark
    for row in benchmark():
        print(f"batch {row['batch']:>6}: the gymnasium view {row['view_learner_decisions_per_s']:>12,.0f} learner "
              f"decisions/s; the raw engine {row['engine_decisions_per_s']:>12,.0f} decisions/s")
