"""What changes along a run: the learning rate and the nil exploration, each a function of the
updates made so far (stored in every checkpoint), so that a resumed run follows the very schedule
of a run never stopped.

``anneal_lr: true`` (the quickstart's) decays the step size linearly to 0 over ``total_decisions``:
a run that is extended on resume (``total_decisions`` raised, one of the settings a resume may
change) then jumps back up to a higher step size, and a long run split over sessions has no single
schedule. With ``anneal_lr: false`` the step size is a function of the decisions made alone,
whatever the run's planned length:

    rate(d) = max(lr_floor, learning_rate * 0.5 ** (d / lr_half_life_decisions))
              * min(1, (d + batch) / lr_warmup_decisions)            (d: decisions made before the update)

(no half-life: constant; no warm-up: 1). ``nil_explore`` falls linearly to ``nil_explore_final``
over ``nil_explore_decisions`` (null: constant), on the same count.
"""

from __future__ import annotations

from typing import Any


def learning_rate_at(cfg: Any, update: int) -> float:
    """The step size of update ``update`` (the number of updates made before it)."""
    if cfg.anneal_lr:
        return cfg.learning_rate * (1.0 - update / cfg.updates)
    decisions = update * cfg.batch_decisions
    rate = cfg.learning_rate
    if cfg.lr_half_life_decisions:
        rate = max(cfg.lr_floor, rate * 0.5 ** (decisions / cfg.lr_half_life_decisions))
    if cfg.lr_warmup_decisions:
        rate *= min(1.0, (decisions + cfg.batch_decisions) / cfg.lr_warmup_decisions)
    return rate


def nil_explore_at(cfg: Any, update: int) -> float:
    """The share of bidding turns bid nil by exploration during update ``update``'s rollout."""
    if not cfg.nil_explore_decisions:
        return cfg.nil_explore
    progress = min(1.0, update * cfg.batch_decisions / cfg.nil_explore_decisions)
    return cfg.nil_explore + (cfg.nil_explore_final - cfg.nil_explore) * progress


__all__ = ["learning_rate_at", "nil_explore_at"]
