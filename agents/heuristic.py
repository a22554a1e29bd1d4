"""A rule-based Spades player: ``agents.make("heuristic", seed=0)``.

The agent reads its observation back with :func:`spades_env.decode_observation` and hands the
resulting :class:`~spades_env.ObservationView` (exactly what its seat may know) and the legal
actions to pure functions. :func:`choose_action` is public so that the search player can call it
inside its play-outs on views it keeps itself; it works on card bitmasks and plain lists, which
keeps a decision to microseconds.

It bids its estimated tricks (:func:`estimate_tricks`, weights fitted to its own play) a little
low, nil when :func:`nil_success_chance` makes it pay and blind nil only when far behind; in
play it tracks the unseen cards and voids and, in order, keeps its own nil, covers a partner's,
attacks an opponent's, then makes its contract cheaply or, once safe, ducks bags.

Why rules: a strong, fast, deterministic baseline and teacher (ties broken by card id, so the
seed changes nothing). Variant rules are respected by choosing among the legal actions only;
under ``signals`` it sends message 0 and reads no message, and a short deck is bid and played
with the tricks and cards it has (:func:`estimate_tricks`).
The strategy in full, and how it scores: ``docs/agents.md``.

Conventions (:mod:`agents.heuristic_conventions`) make it a family of partners: every decision
function takes ``conventions`` (``None``: standard, which is the play described above); the rules
that change with them are marked "convention" below.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .base import Agent, observation_view, register, whole_option
from .heuristic_conventions import CONVENTION_OPTIONS, conventions_from
from .heuristic_decisions import (choose_action, choose_bid, choose_blind_nil, choose_card, choose_message,
                                  choose_pass, estimate_tricks, nil_success_chance, only_bags_left)
from .specs import MAX_THREADS

# The decisions stay names of this module (agents.heuristic.choose_action, ...).
__all__ = ["HeuristicAgent", "choose_action", "choose_bid", "choose_blind_nil", "choose_pass", "choose_message",
           "choose_card", "estimate_tricks", "nil_success_chance", "only_bags_left"]


class HeuristicAgent(Agent):
    """The rule-based player: :func:`choose_action` on its decoded observation.

    ``backend``: ``"native"`` (the default where the C library builds) decides in C with exactly
    the same decisions (:mod:`agents.native_heuristic`), ``"python"`` runs this module's
    functions (the readable reference). Asking for ``"native"`` where it cannot build is an
    error, never a quiet switch.

    The convention options ``bidding``, ``nil``, ``cover``, ``discards`` and ``leads``
    (:mod:`agents.heuristic_conventions`; all ``"standard"`` by default) choose how it
    cooperates: ``agents.make("heuristic", bidding="aggressive")`` or the spec
    ``heuristic:bidding=aggressive,nil=never``."""

    name = "heuristic"
    BACKENDS = ("native", "python")
    OPTIONS = ("seed", "backend", "threads") + tuple(CONVENTION_OPTIONS)

    def __init__(self, seed: Optional[int] = None, backend: Optional[str] = None, threads: int = 1,
                 **conventions: str) -> None:
        unknown = sorted(set(conventions) - set(CONVENTION_OPTIONS))
        if unknown:
            raise TypeError(f"heuristic: unknown option {unknown[0]!r}; options: {', '.join(self.OPTIONS)}")
        self.conventions = conventions_from(conventions)
        self._codes = None if self.conventions.is_standard else self.conventions.codes()
        super().__init__(seed)
        from spades_env.native import unavailable_reason
        if backend is None:
            backend = "native" if unavailable_reason() is None else "python"
        if backend not in self.BACKENDS:
            raise ValueError(f"heuristic: backend={backend!r}: expected one of {', '.join(self.BACKENDS)}")
        if backend == "native":
            reason = unavailable_reason()
            if reason is not None:
                raise ValueError(f"heuristic: backend='native' is not available here ({reason}); use "
                                 "backend='python'")
        self.backend = backend
        self.threads = max(1, whole_option("heuristic", "threads", threads, least=0, most=MAX_THREADS))

    def __repr__(self) -> str:
        extra = "".join(f", {option}={getattr(self.conventions, option)!r}" for option in CONVENTION_OPTIONS
                        if getattr(self.conventions, option) != "standard")
        return f"HeuristicAgent(seed={self.seed!r}, backend={self.backend!r}{extra})"

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        mask = obs["action_mask"]
        if self.backend == "native":                       # C takes a single legal action at once too
            from .native_heuristic import NativeHeuristicError, choose_action as native_action
            try:
                return native_action(obs["observation"], mask, self._codes)
            except NativeHeuristicError:
                if np.any(mask):
                    raise
        legal = np.flatnonzero(mask)
        if len(legal) == 0:
            raise ValueError("HeuristicAgent.act: the action mask is empty (is it this agent's turn?)")
        if len(legal) == 1:
            return int(legal[0])
        return choose_action(observation_view(obs), [int(a) for a in legal], self.rng, self.conventions)

    def act_batch(self, observations, masks):
        """The action at every row of batched observations and masks (torch tensors, as
        ``SpadesVectorEnv`` returns them): exactly :meth:`act` row by row. The native backend
        decides all rows in C; the Python one batches partnership rows on torch
        (:mod:`agents.batched_heuristic`), which is also the path for tensors on a GPU."""
        import torch
        if self.backend == "native" and not (isinstance(observations, torch.Tensor) and observations.is_cuda):
            from .native_heuristic import choose_actions as native_actions
            device = observations.device if isinstance(observations, torch.Tensor) else "cpu"
            return torch.from_numpy(native_actions(observations, masks, self.threads, self._codes)).to(device)
        from .batched_heuristic import choose_actions
        return choose_actions(observations, masks, self.conventions)


register("heuristic", HeuristicAgent)
