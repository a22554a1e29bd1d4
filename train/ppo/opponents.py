"""Who plays the other side of each table in ``spades-train``: the learning policy (self-play),
a past policy from the pool, or the heuristic, drawn per episode by the ``opponents`` shares.

Partners are always the same controller; the learner's side is drawn too. The pool keeps the
last ``pool_size`` snapshots of the policy (one every ``pool_every`` updates, oldest replaced).
"""

from __future__ import annotations

from typing import Callable

import torch

from agents.networks import PolicyNet

from train.ppo.rollout import HEURISTIC, KINDS, LEARNER, POOL, sample_actions


class OpponentPool:
    """The controller of every (table, seat) and the pool of past policies.

    ``controller`` (B, 4): LEARNER / POOL / HEURISTIC; ``table_kind`` (B,): index into
    :data:`KINDS`; ``learner_side`` (B,): 0 or 1; ``pool_slot`` (B,): which past policy."""

    def __init__(self, shares: dict, pool_size: int, tables: int, make_net: Callable[[], PolicyNet],
                 generator: torch.Generator, device: torch.device) -> None:
        self.shares, self.pool_size, self.make_net = shares, pool_size, make_net
        self.generator, self.device = generator, device
        self.weights: list[dict] = []
        self.nets: list[PolicyNet] = []
        self.added = 0
        self.controller = torch.zeros(tables, 4, dtype=torch.int64, device=device)
        self.table_kind = torch.zeros(tables, dtype=torch.int64, device=device)
        self.learner_side = torch.zeros(tables, dtype=torch.int64, device=device)
        self.pool_slot = torch.zeros(tables, dtype=torch.int64, device=device)

    def assign(self, tables: torch.Tensor) -> None:
        """Draw who plays the other side of the given tables ((B,) bool), at the start of their episode."""
        n = int(tables.sum())
        if n == 0:
            return
        dev = self.device
        shares = torch.tensor([float(self.shares.get(k, 0.0)) for k in KINDS], device=dev)
        if not self.weights:
            shares[POOL] = 0.0
        if float(shares.sum()) <= 0:
            shares[0] = 1.0
        kind = torch.multinomial(shares, n, replacement=True, generator=self.generator)
        side = torch.randint(0, 2, (n,), generator=self.generator, device=dev)
        slot = torch.randint(0, max(1, len(self.weights)), (n,), generator=self.generator, device=dev)
        seats = torch.arange(4, device=dev)[None, :]
        other_side = (seats % 2) != side[:, None]
        code = torch.where(kind == 1, POOL, torch.where(kind == 2, HEURISTIC, LEARNER))
        ctrl = torch.where(other_side, code[:, None], torch.zeros_like(code)[:, None])
        idx = torch.nonzero(tables)[:, 0]
        self.controller[idx] = ctrl
        self.table_kind[idx] = kind
        self.learner_side[idx] = side
        self.pool_slot[idx] = slot

    def add(self, policy: torch.nn.Module) -> None:
        """Snapshot ``policy`` into the pool (replacing the oldest once it is full)."""
        weights = {k: v.detach().to("cpu").clone() for k, v in policy.state_dict().items()}
        if len(self.weights) < self.pool_size:
            self.weights.append(weights)
        else:
            self.weights[self.added % self.pool_size] = weights
        self.added += 1
        self._load_nets()

    def _load_nets(self) -> None:
        while len(self.nets) < len(self.weights):
            self.nets.append(self.make_net().to(self.device))
        for net, weights in zip(self.nets, self.weights):
            net.load_state_dict(weights)
            net.eval()

    @torch.no_grad()
    def pool_actions(self, obs: torch.Tensor, mask: torch.Tensor, pool_rows: torch.Tensor,
                     actions: torch.Tensor) -> None:
        """Fill ``actions`` at the rows ((B,) bool) that a past policy plays, sampled from it."""
        for slot in torch.unique(self.pool_slot[pool_rows]).tolist():
            rows = torch.nonzero(pool_rows & (self.pool_slot == slot))[:, 0]
            probs = torch.softmax(self.nets[slot](obs[rows], mask[rows]), 1)
            actions[rows] = sample_actions(probs, self.generator)

    def state_dict(self) -> dict:
        """The checkpoint's entries for the pool and the tables' controllers."""
        return {"pool": self.weights, "pool_added": self.added, "controller": self.controller.cpu(),
                "table_kind": self.table_kind.cpu(), "learner_side": self.learner_side.cpu(),
                "pool_slot": self.pool_slot.cpu()}

    def load_state_dict(self, data: dict) -> None:
        self.weights = list(data["pool"])
        self.added = int(data["pool_added"])
        self._load_nets()
        for name in ("controller", "table_kind", "learner_side", "pool_slot"):
            setattr(self, name, data[name].to(self.device))
