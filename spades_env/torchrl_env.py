"""The batched engine as a TorchRL environment (``pip install "spades-rl[torchrl]"``).

    from spades_env.torchrl_env import SpadesTorchRLEnv
    env = SpadesTorchRLEnv(4096, learners="side", opponents="heuristic")
    td = env.reset()                    # "observation" (B, 742), "action_mask" (B, 68) bool, "seat" (B,)
    td = env.rand_step(td)              # random legal actions: the action spec carries the mask

``learners``:

* ``"side"`` (default): the learner plays both seats of one side (``seat`` and its partner); the
  other side is played by ``opponents`` (``"random"``, ``"heuristic"`` or a batched policy
  ``policy(obs, mask) -> actions``). Every decision of the side is a step; ``reward`` (B, 1) is
  the side's reward since its previous decision.
* ``"seat"``: one learning seat; ``partner`` plays the other seat of the side (default: as
  ``opponents``).
* ``"all"``: every seat is the learner's (self-play): every decision at every table is a step,
  ``seat`` says whose, and ``reward`` is (B, 4), every seat's reward from that move; a learner
  credits each seat with its own.

Episodes end at the tables marked ``done``/``terminated`` and begin again at once (the engine
deals the next hand in the same step): the observation under ``"next"`` is already the first
decision of the next episode, its value is not needed since the episode is done, and a reset
of those tables (``"_reset"``, as collectors send) keeps them as they are. Only a reset of every
table (or the first) deals afresh. The mask follows TorchRL's convention: ``"action_mask"`` in
the observation, and ``action_spec``'s mask is kept up to date, so ``rand_step`` and
``check_env_specs`` take legal actions. Illegal actions raise
:class:`~spades_env.vector.VectorEnvError` naming the table.

The other seats are played in one C call per step where the engine runs on the native backend
and they are ``"random"`` or ``"heuristic"`` (:mod:`spades_env.vector_seats`).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

try:
    from tensordict import TensorDict, TensorDictBase
    from torchrl.data import Binary, Bounded, Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase
except ImportError as exc:          # pragma: no cover - the extra is not installed
    raise ImportError("spades_env.torchrl_env needs TorchRL: pip install 'spades-rl[torchrl]' "
                      f"({exc})") from None

from .observation import observation_bounds
from .vector import SpadesVectorEnv, VectorEnvError
from .vector_gym import default_backend, check_learner_actions, seats_for
from .vector_seats import Seat, SeatPlayers

LEARNERS = ("side", "seat", "all")


class SpadesTorchRLEnv(EnvBase):
    """``num_envs`` tables of the batched engine as one batched TorchRL env (module doc). The other
    arguments go to :class:`~spades_env.vector.SpadesVectorEnv` (``rules``, ``reward``,
    ``reward_scale``, ``episode``, ``backend``, ``threads``...)."""

    def __init__(self, num_envs: int = 1024, learners: str = "side", seat: int = 0, opponents: Seat = "random",
                 partner: Optional[Seat] = None, seed: Optional[int] = None, native: Optional[bool] = None,
                 device: Any = "cpu", **engine_options: Any) -> None:
        if learners not in LEARNERS:
            raise VectorEnvError(f"learners={learners!r}: expected one of {', '.join(LEARNERS)}")
        if learners == "all":
            seats = ["learner"] * 4
        elif learners == "side":
            if partner is not None:
                raise VectorEnvError("partner: with learners='side' the learner plays its partner's seat too")
            seats = seats_for(seat, opponents, "learner")
        else:
            seats = seats_for(seat, opponents, partner)
        super().__init__(batch_size=torch.Size([num_envs]), device=device)
        engine_options.setdefault("backend", default_backend(device))
        engine_options["check_actions"] = False                # checked here, naming the table
        self.engine = SpadesVectorEnv(num_envs, seed=seed, device=device, **engine_options)
        self.learners = learners
        self.seat = int(seat)
        self.players = SeatPlayers(self.engine, seats, seed=seed, native=native)
        self._next_seed = seed
        self._obs: Optional[torch.Tensor] = None
        self._mask: Optional[torch.Tensor] = None
        B, dev, A = num_envs, self.engine.device, self.engine.num_actions      # A: 68 (+ N messages)
        low, high = observation_bounds(self.engine.layout, self.engine.rules)
        self.observation_spec = Composite(
            observation=Bounded(low=torch.as_tensor(np.broadcast_to(low, (B, low.shape[0])).copy()),
                                high=torch.as_tensor(np.broadcast_to(high, (B, high.shape[0])).copy()),
                                shape=(B, low.shape[0]), dtype=torch.float32, device=dev),
            action_mask=Binary(n=A, shape=(B, A), dtype=torch.bool, device=dev),
            seat=Bounded(low=0, high=3, shape=(B,), dtype=torch.int64, device=dev),
            shape=(B,), device=dev)
        self.action_spec = Categorical(A, shape=(B,), dtype=torch.int64, device=dev)
        self.reward_spec = Unbounded(shape=(B, 4 if learners == "all" else 1), dtype=torch.float32, device=dev)
        flag = Categorical(2, shape=(B, 1), dtype=torch.bool, device=dev)
        self.done_spec = Composite(done=flag.clone(), terminated=flag.clone(), truncated=flag.clone(), shape=(B,),
                                   device=dev)

    # ------------------------------------------------------------------ TorchRL
    def _set_seed(self, seed: Optional[int]) -> None:
        self._next_seed = seed                 # the next full reset deals and plays from it

    def _observation(self, done: torch.Tensor) -> TensorDictBase:
        self.action_spec.update_mask(self._mask)
        B = self.batch_size
        values = {"observation": self._obs, "action_mask": self._mask, "seat": self.engine.to_act,
                  "done": done, "terminated": done.clone(), "truncated": torch.zeros_like(done)}
        return TensorDict(values, batch_size=B, device=self.device)

    def _reset(self, tensordict: Optional[TensorDictBase] = None, **kwargs: Any) -> TensorDictBase:
        partial = tensordict is not None and "_reset" in tensordict.keys() and not bool(tensordict["_reset"].all())
        if self._obs is None or not partial:
            # (a partial reset keeps every table: the ones asked for began their next episode already)
            seed, self._next_seed = self._next_seed, None
            self._obs, self._mask = self.players.reset(seed=seed)
        done = torch.zeros(self.batch_size[0], 1, dtype=torch.bool, device=self.device)
        return self._observation(done)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._obs is None:
            raise VectorEnvError("step() before reset(): call reset() first")
        actions = tensordict["action"]
        if actions.dim() == 2 and actions.shape[1] == self.engine.num_actions:   # one-hot, as some policies give
            actions = actions.to(torch.int64).argmax(1)
        actions = check_learner_actions(actions, self._mask)
        self._obs, self._mask, rewards, ended, _ = self.players.step(actions)
        reward = rewards if self.learners == "all" else rewards[:, self.seat:self.seat + 1]
        out = self._observation(ended[:, None].clone())
        out.set("reward", reward.to(torch.float32))
        return out


def benchmark(batch_sizes=(1024, 4096), seconds: float = 3.0, threads: int = 2) -> list[dict]:
    """Decisions per second through the adapter (random legal actions from the C picker,
    observation and mask in the tensordict), per mode, beside the raw engine in the same run."""
    from .native import random_legal
    from .vector_gym import decisions_per_second, engine_decisions_per_second
    rows = []
    for batch in batch_sizes:
        row = {"batch": batch}
        for learners in ("side", "all"):
            env = SpadesTorchRLEnv(batch, learners=learners, seed=0, threads=threads, episode="hand")
            state = {}

            def env_step(mask, generator, env=env, state=state):
                if mask is None:
                    state["td"] = env.reset()
                else:
                    td = state["td"]
                    td["action"] = random_legal(mask, torch.rand(batch, generator=generator))
                    state["td"] = env.step(td)["next"]
                return state["td"]["action_mask"]
            row[learners] = decisions_per_second(env_step, batch, seconds)
        row["engine"] = engine_decisions_per_second(batch, seconds, threads)
        rows.append(row)
    return rows


if __name__ == "__main__":       # python -m spades_env.torchrl_env: the benchmark
    import platform
    print(f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads; decisions per second")
    print(f"{'batch':>6}  {'side vs random':>15}  {'all four seats':>15}  {'raw engine':>12}")
    for row in benchmark():
        print(f"{row['batch']:>6}  {row['side']:>15,.0f}  {row['all']:>15,.0f}  {row['engine']:>12,.0f}")
