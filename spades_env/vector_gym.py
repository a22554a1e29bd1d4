"""The batched engine as a gymnasium vector env: one learning seat per table, the other seats
played by the native random or heuristic player or by given batched policies.

    from spades_env.vector_gym import SpadesGymVectorEnv
    envs = SpadesGymVectorEnv(4096, seat=0, opponents="heuristic")      # partner: as the opponents
    obs, info = envs.reset(seed=0)                       # (B, 742) float32, info["action_mask"] (B, 68)
    obs, reward, terminated, truncated, info = envs.step(actions)            # actions: (B,) ints

A ``step`` applies the learner's action at every table, then plays the other seats until the
learner is to act again at every table (:class:`~spades_env.vector_seats.SeatPlayers`: one C
call where the engine runs on ``backend="native"`` and the other seats are ``"random"`` or
``"heuristic"``, masked torch steps otherwise, the same games either way). ``reward`` is the
learner's reward since its previous decision (rewards that arrive during the other seats'
moves included), ``terminated`` marks tables whose episode ended since then; those tables have
already begun the next episode, and the observation returned is the learner's first decision in
it (same-step autoreset: there is no terminal observation to return, the terminal value being
0). ``partner="learner"`` lets the learning policy play its partner's seat too (every decision
of the side is a step). Policies take the engine's tensors, ``policy(obs, mask) -> actions``
((B, obs_size) float32, (B, 68) bool, (B,) int64), e.g. an agent's ``act_batch`` or a network.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .observation import observation_bounds
from .vector import SpadesVectorEnv, VectorEnvError
from .vector_checks import checked_actions
from .vector_seats import SEAT_NAMES, Policy, Seat, SeatPlayers

__all__ = ["SpadesGymVectorEnv", "Policy", "Seat", "seats_for", "check_learner_actions", "default_backend", "benchmark",
           "decisions_per_second", "engine_decisions_per_second"]


def seats_for(seat: int, opponents: Seat, partner: Optional[Seat], players: int = 4) -> list:
    """The four seats' players for a learner in ``seat`` (``partner`` None: as the opponents)."""
    if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < players:
        raise VectorEnvError(f"seat={seat!r}: expected the learning seat, 0..{players - 1}")
    for name, player in (("opponents", opponents), ("partner", partner)):
        if player is None and name == "partner":
            continue
        if isinstance(player, str) and player not in SEAT_NAMES or not isinstance(player, str) and not callable(player):
            raise VectorEnvError(f"{name}={player!r}: expected 'random', 'heuristic' or a batched policy, "
                                 "policy(obs, mask) -> actions" + (" (or 'learner')" if name == "partner" else ""))
    if opponents == "learner":
        raise VectorEnvError("opponents='learner': the learner plays one side; use partner='learner' for both seats "
                             "of it")
    seats: list = [opponents] * players
    seats[int(seat)] = "learner"
    seats[(int(seat) + 2) % players] = opponents if partner is None else partner
    return seats


class SpadesGymVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` tables, the learner in ``seat`` at each (module doc). ``opponents``: the other
    side's player, ``"random"`` (default), ``"heuristic"`` or a batched policy; ``partner``: the
    learner's partner (default: as ``opponents``; ``"learner"``: the learning policy). ``seed``
    seeds the deals and the random seats; ``native``: see :class:`SeatPlayers`. The other
    arguments go to :class:`~spades_env.vector.SpadesVectorEnv` (``rules``, ``reward``,
    ``reward_scale``, ``episode``, ``device``, ``backend``, ``threads``...)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, seat: int = 0, opponents: Seat = "random", partner: Optional[Seat] = None,
                 seed: Optional[int] = None, native: Optional[bool] = None, **engine_options: Any) -> None:
        engine_options.setdefault("check_actions", False)      # the learner's actions are checked here
        engine_options.setdefault("backend", default_backend(engine_options.get("device", "cpu")))
        seats = seats_for(seat, opponents, partner)
        self.engine = SpadesVectorEnv(num_envs, seed=seed, **engine_options)
        self.seat = int(seat)
        self.num_envs = num_envs
        self.players = SeatPlayers(self.engine, seats, seed=seed, native=native)
        low, high = observation_bounds(self.engine.layout, self.engine.rules)
        self.single_observation_space = spaces.Box(low=low, high=high, dtype=np.float32)
        self.single_action_space = spaces.Discrete(self.engine.num_actions)      # 68 (+ N messages)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._obs: Optional[torch.Tensor] = None
        self._mask: Optional[torch.Tensor] = None

    # ------------------------------------------------------------------ gymnasium
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        if options is not None and not isinstance(options, dict):
            raise VectorEnvError(f"options={options!r:.60}: expected a dict of reset options (deals, dealer, scores, "
                                 "bags) or None")
        self._obs, self._mask = self.players.reset(seed=seed, **(options or {}))
        return self._obs.cpu().numpy(), {"action_mask": self._mask.cpu().numpy().astype(np.int8)}

    def step(self, actions: Any):
        if self._obs is None:
            raise VectorEnvError("step() before reset(): call reset() first")
        actions = check_learner_actions(actions, self._mask)
        self._obs, self._mask, rewards, ended, _ = self.players.step(actions)
        zeros = np.zeros(self.num_envs, dtype=bool)
        return (self._obs.cpu().numpy(), rewards[:, self.seat].cpu().numpy(), ended.cpu().numpy(), zeros,
                {"action_mask": self._mask.cpu().numpy().astype(np.int8)})

    def action_masks(self) -> np.ndarray:
        """(B, num_actions) bool: the learner's legal actions at every table (sb3-contrib's name)."""
        return self._mask.cpu().numpy()


def default_backend(device: Any) -> str:
    """The C engine on a CPU where it builds (the fast path), torch elsewhere."""
    if torch.device(device).type != "cpu":
        return "torch"
    from .native import unavailable_reason
    return "native" if unavailable_reason() is None else "torch"


def check_learner_actions(actions: Any, mask: torch.Tensor) -> torch.Tensor:
    """``actions`` as an int64 tensor on the mask's device, refused with a :class:`VectorEnvError`
    naming the table unless each is a legal action there (:func:`~spades_env.vector_checks.checked_actions`)."""
    return checked_actions(actions, mask, "learner")


def decisions_per_second(step, batch: int, seconds: float) -> float:
    """``batch`` x the calls of ``step(mask, generator)`` per second over ``seconds`` (the first
    call, ``step(None, generator)``, resets and is not timed). Shared by the adapters' benchmarks."""
    import time
    generator = torch.Generator().manual_seed(batch)
    mask = step(None, generator)
    steps, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        mask = step(mask, generator)
        steps += 1
    return steps * batch / (time.perf_counter() - began)


def engine_decisions_per_second(batch: int, seconds: float, threads: int, backend: str = "native") -> float:
    """The raw engine's decisions per second: random legal actions at every table."""
    from .native import random_legal
    engine = SpadesVectorEnv(batch, seed=0, backend=backend, threads=threads, episode="hand", check_actions=False)

    def engine_step(mask, generator):
        if mask is None:
            return engine.reset(seed=0)[1]
        return engine.step(random_legal(mask, torch.rand(batch, generator=generator)))[1]
    return decisions_per_second(engine_step, batch, seconds)


def benchmark(batch_sizes=(256, 1024, 4096), seconds: float = 3.0, backend: str = "native",
              threads: int = 2) -> list[dict]:
    """Learner decisions per second through the view (a random learner, the other seats random,
    then heuristic; observation and mask produced), beside the raw engine's decisions per second
    (random actions at every table, every seat's decision) in the same run."""
    from .native import random_legal

    rows = []
    for batch in batch_sizes:
        row = {"batch": batch}
        for opponents in ("random", "heuristic"):
            view = SpadesGymVectorEnv(batch, seat=0, opponents=opponents, seed=0, backend=backend, threads=threads,
                                      episode="hand")

            def view_step(mask, generator, view=view):
                if mask is None:
                    return torch.from_numpy(view.reset(seed=0)[1]["action_mask"])
                actions = random_legal(mask, torch.rand(batch, generator=generator))
                return torch.from_numpy(view.step(actions.numpy())[4]["action_mask"])
            row[f"view_{opponents}"] = decisions_per_second(view_step, batch, seconds)
        row["engine"] = engine_decisions_per_second(batch, seconds, threads, backend)
        rows.append(row)
    return rows


if __name__ == "__main__":       # python -m spades_env.vector_gym: the benchmark
    import platform
    print(f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads; decisions per second")
    print(f"{'batch':>6}  {'view, random others':>20}  {'view, heuristic others':>23}  {'raw engine':>12}")
    for row in benchmark():
        print(f"{row['batch']:>6}  {row['view_random']:>20,.0f}  {row['view_heuristic']:>23,.0f}  {row['engine']:>12,.0f}")
