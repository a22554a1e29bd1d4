"""Who plays each seat of the batched engine's tables, and stepping them until a learner's seat
is to act: the core of the library adapters (:mod:`spades_env.vector_gym`,
:mod:`spades_env.torchrl`).

    seats = SeatPlayers(engine, ["learner", "heuristic", "random", "heuristic"], seed=0)
    obs, mask = seats.reset(seed=0)                   # a learner's seat is to act at every table
    obs, mask, rewards, ended, info = seats.step(actions)

Each seat is ``"learner"`` (the caller decides), ``"random"`` (uniformly random legal moves),
``"heuristic"`` (the rule-based player) or a batched policy ``policy(obs, mask) -> actions``
((B, obs_size) float32, (B, num_actions) bool -> (B,) int64; e.g. a network or an agent's
``act_batch``): its actions are checked like the learner's (one integer id per table, legal at
every table where its seat is to act), and anything else is a ``VectorEnvError`` naming the seat.

``step`` applies the learner's actions at every table, then plays the other seats until a
learner's seat is to act again everywhere; ``rewards`` (B, 4) are every seat's
rewards summed over those moves, ``ended`` marks tables whose episode ended (they have begun the
next one: same-step autoreset).

Two implementations make exactly the same moves, deals and rewards (tests/spades_env/test_vector_seats.py):

* the readable one, masked steps of the engine: each round steps every table, then puts back
  the state of the tables whose learner is to act (they were given a move that cannot end a
  hand, so they take no deal from the pool); it takes any policy;
* the fast one, ``engine.c`` spades_step_until: one C call plays every round and writes the
  observation only when a learner is to act. It is used where the engine runs on the native
  backend and every other seat is ``"random"`` or ``"heuristic"``.

The random seats draw from a splitmix64 stream per table (``seed``), the same in both.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import torch

from .vector import SpadesVectorEnv, VecState, VectorEnvError
from .vector_checks import check_seed, checked_actions

Policy = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Seat = Union[str, Policy]
SEAT_NAMES = ("learner", "random", "heuristic")
_NATIVE_KIND = {"learner": -1, "random": 0, "heuristic": 1}     # engine.c SEAT_*

# splitmix64's constants as signed int64 (torch has no uint64 arithmetic)
_GAMMA = 0x9E3779B97F4A7C15 - (1 << 64)
_MIX1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_MIX2 = 0x94D049BB133111EB - (1 << 64)


def _shift_right(z: torch.Tensor, k: int) -> torch.Tensor:
    """A logical right shift of int64 bit patterns."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def next_uniform(state: torch.Tensor, rows: Optional[torch.Tensor] = None) -> torch.Tensor:
    """engine.c next_uniform in torch: advance the splitmix64 states (in place; only ``rows`` if
    given) and return their uniforms in [0, 1) (float32: the top 24 bits times 2^-24)."""
    s = state if rows is None else state[rows]
    s = s + _GAMMA                                   # int64 arithmetic wraps, as uint64 does in C
    z = (s ^ _shift_right(s, 30)) * _MIX1
    z = (z ^ _shift_right(z, 27)) * _MIX2
    z = z ^ _shift_right(z, 31)
    if rows is None:
        state.copy_(s)
    else:
        state[rows] = s
    return _shift_right(z, 40).to(torch.float32) * (1.0 / 16777216.0)


def seed_states(seed: Optional[int], count: int) -> torch.Tensor:
    """(count,) int64 splitmix64 states, one per table, from ``seed`` (None: a random seed)."""
    check_seed(seed)
    base = torch.seed() if seed is None else int(seed)
    generator = torch.Generator().manual_seed(base % (1 << 63))
    return torch.randint(-(1 << 63), (1 << 63) - 1, (count,), generator=generator, dtype=torch.int64)


def pick_kth_legal(mask: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """The k-th legal action of each row, k = floor(u * count) (as ``native.random_legal``)."""
    counts = mask.sum(1)
    k = (uniform * counts.to(torch.float32)).long().clamp(max=counts - 1)
    return (mask.long().cumsum(1) > k[:, None]).long().argmax(1)


class SeatPlayers:
    """The tables of ``engine`` with each of the four seats played as ``seats`` says (module doc);
    ``seed`` seeds the random seats' streams. ``native``: None uses the C loop where it applies,
    False always the masked steps (the reference), True requires the C loop."""

    def __init__(self, engine: SpadesVectorEnv, seats: Sequence[Seat], seed: Optional[int] = None,
                 native: Optional[bool] = None) -> None:
        if not isinstance(engine, SpadesVectorEnv):
            raise VectorEnvError(f"engine={engine!r}: expected a SpadesVectorEnv")
        seats = list(seats)
        if len(seats) != 4:
            raise VectorEnvError(f"seats: expected what plays each of the 4 seats, got {len(seats)} entries")
        for i, seat in enumerate(seats):
            if isinstance(seat, str):
                if seat not in SEAT_NAMES:
                    raise VectorEnvError(f"seats[{i}]={seat!r}: expected one of {', '.join(SEAT_NAMES)} or a batched "
                                         "policy, policy(obs, mask) -> actions")
            elif not callable(seat):
                raise VectorEnvError(f"seats[{i}]={seat!r}: expected one of {', '.join(SEAT_NAMES)} or a batched "
                                     "policy, policy(obs, mask) -> actions")
        if "learner" not in seats:
            raise VectorEnvError("seats: at least one seat must be 'learner' (the caller's)")
        self.engine = engine
        self.seats = seats
        self.learner_seats = torch.tensor([s == "learner" for s in seats], device=engine.device)
        self.rng = seed_states(seed, engine.num_envs).to(engine.device)
        self._heuristic: Optional[Policy] = None
        usable = engine.backend == "native" and all(isinstance(s, str) for s in seats)
        if native and not usable:
            raise VectorEnvError("native=True: the C loop needs backend='native' and every other seat 'random' or "
                                 "'heuristic'")
        self.native = usable if native is None else bool(native)
        if self.native:
            self._seat_kind = torch.tensor([_NATIVE_KIND[s] for s in seats], dtype=torch.int64)
            self._layout = None
            if "heuristic" in seats:
                from .native import heuristic_layout
                self._layout = heuristic_layout(engine.layout)

    # ------------------------------------------------------------------ stepping
    def reset(self, seed: Optional[int] = None, **options: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``engine.reset(seed, **options)`` (``seed`` also reseeds the random seats), then the other
        seats' moves until a learner's seat is to act at every table. Returns (observation, mask)."""
        if seed is not None:
            rng = seed_states(seed, self.engine.num_envs).to(self.engine.device)
        obs, mask = self.engine.reset(seed=seed, **options)       # (checks the options before it changes anything)
        if seed is not None:
            self.rng = rng
        B = self.engine.num_envs
        rewards = torch.zeros(B, 4, dtype=torch.float64, device=self.engine.device)
        ended = torch.zeros(B, dtype=torch.bool, device=self.engine.device)
        obs, mask, _ = self._play_others(obs, mask, rewards, ended, None, None)
        return obs, mask

    def step(self, actions: torch.Tensor):
        """The learner's actions at every table (not checked: the adapters check them), then the
        other seats' moves. Returns ``(observation, mask, rewards (B, 4) float64, ended (B,), info)``
        with ``info``: ``final_scores`` (B, 2) and ``winner`` (B,) at the end of an episode that
        ended (else the latest), ``moves`` (B,) how many moves the other seats made."""
        engine = self.engine
        if engine.state is None:
            raise VectorEnvError("step() before reset(): call reset() first")
        if self.native:
            engine._refill_pool()                       # one call deals at most one hand per table
            native = engine._native
            (engine._pool_ptr, obs, mask, rewards, ended, final_scores, winner,
             moves) = native.step_until(actions, self._seat_kind, self._layout, self.rng)
            mask = mask.view(torch.bool)
            engine._mask = mask
            obs = engine._cast(obs)
            return obs, mask, rewards, ended, {"final_scores": final_scores, "winner": winner, "moves": moves}
        obs, mask, rewards, done, info = self._engine_step(actions)
        ended = done.clone()
        rewards = rewards.to(torch.float64)
        final_scores, winner = info["final_scores"].clone(), info["winner"].clone()
        obs, mask, moves = self._play_others(obs, mask, rewards, ended, final_scores, winner)
        return obs, mask, rewards, ended, {"final_scores": final_scores, "winner": winner, "moves": moves}

    def _engine_step(self, actions: torch.Tensor):
        engine = self.engine
        checking, engine.check_actions = engine.check_actions, False
        try:
            return engine.step(actions)
        finally:
            engine.check_actions = checking

    # ------------------------------------------------------------------ the reference loop
    def _choose(self, obs: torch.Tensor, mask: torch.Tensor, to_act: torch.Tensor, moving: torch.Tensor) -> torch.Tensor:
        """The other seats' moves at the ``moving`` tables (any action elsewhere)."""
        chosen = torch.zeros(mask.shape[0], dtype=torch.int64, device=mask.device)
        for seat, player in enumerate(self.seats):
            rows = moving & (to_act == seat)
            if player == "learner" or not bool(rows.any()):
                continue
            if player == "random":
                where = torch.nonzero(rows)[:, 0]
                uniform = next_uniform(self.rng, where)
                chosen[where] = pick_kth_legal(mask[where], uniform)
                continue
            who = "heuristic" if player == "heuristic" else "policy"
            if player == "heuristic":
                player = self._heuristic_policy()
            # checked as the learner's are: a float, a 0-d tensor or an out-of-range id would be
            # cast into a wrong move, and an illegal one stalls its table (the loop would never end)
            chosen = torch.where(rows, checked_actions(player(obs, mask), mask, who, rows, seat), chosen)
        return chosen

    def _heuristic_policy(self) -> Policy:
        """The rule-based player on a batch (heuristic.c, which makes agents.heuristic's decisions
        exactly: tests/agents/test_native_heuristic.py; in the signal phase it sends message 0, as
        engine.c's play-until loop does)."""
        if self._heuristic is None:
            from .native import heuristic_codes, heuristic_layout
            layout = heuristic_layout(self.engine.layout).numpy()

            def act(obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
                rows = np.ascontiguousarray(obs.detach().to("cpu", torch.float32).numpy())
                legal = np.ascontiguousarray(mask.detach().cpu().numpy(), dtype=np.uint8)
                status, out = heuristic_codes(rows, legal, layout)
                if status or (out.size and out.min() < 0):
                    raise VectorEnvError(f"the heuristic could not decide a position (code {status or int(out.min())})")
                return torch.from_numpy(out).to(mask.device)
            self._heuristic = act
        return self._heuristic

    def _play_others(self, obs, mask, rewards, ended, final_scores, winner):
        """Masked steps until a learner's seat is to act at every table (in place on the
        accumulators). Returns (observation, mask, moves). After a reset it is the only path (the C
        loop begins with a learner's move)."""
        engine = self.engine
        moves = torch.zeros(engine.num_envs, dtype=torch.int64, device=engine.device)
        while True:
            to_act = engine.to_act
            moving = ~self.learner_seats[to_act]
            if not bool(moving.any()):
                return obs, mask, moves
            chosen = self._choose(obs, mask, to_act, moving)
            held = ~moving
            if bool(held.any()):
                # held tables: a legal move that cannot end their hand (tricks_played set to 0 in the
                # state they step from), then their state is put back: they take no deal
                before = engine.state.clone()      # (the native step works in place on the state's tensors)
                chosen = torch.where(moving, chosen, mask.view(torch.uint8).argmax(1))
                engine.state = before.clone().replace(tricks_played=torch.where(held, 0, before.tricks_played))
            new_obs, new_mask, step_rewards, done, info = self._engine_step(chosen)
            if bool(held.any()):
                engine.state = _merge(engine.state, before, held)
                engine._mask = torch.where(held[:, None], mask, new_mask)
            rows = torch.nonzero(moving)[:, 0]
            rewards[rows] += step_rewards[rows].to(torch.float64)
            if final_scores is not None:
                open_rows = moving & ~ended
                final_scores[open_rows] = info["final_scores"][open_rows]
                winner[open_rows] = info["winner"][open_rows]
            ended[rows] |= done[rows]
            moves[rows] += 1
            obs = torch.where(moving[:, None], new_obs, obs)
            mask = torch.where(moving[:, None], new_mask, mask)


def _merge(new: VecState, old: VecState, keep_old: torch.Tensor) -> VecState:
    """``new`` with the tables in ``keep_old`` taken from ``old`` (every field is (B, ...))."""
    merged = {}
    for f in fields(new):
        a, b = getattr(new, f.name), getattr(old, f.name)
        where = keep_old.view(-1, *([1] * (a.dim() - 1)))
        merged[f.name] = torch.where(where, b, a)
    return VecState(**merged)
