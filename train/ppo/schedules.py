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

``nil_explore_target`` instead adapts ``nil_explore`` to what it is for, the share of the card
play's table steps with an intact nil (``train__intact_nil_share``): after every update

    nil_explore <- clip(nil_explore * exp(gain * (target - measured) / target), 0.01, nil_explore_max)

Why multiplicative: the intact share is about ``own + k * nil_explore``, where ``k`` (how many
bidding turns qualify, how long the nils last) is unknown and moves as the policy learns. A step
in log(nil_explore) proportional to the relative error makes the loop gain ``gain * k *
nil_explore / target``, that is ``gain`` at the target whatever ``k`` (less when the policy's own
nils carry part of the share): stable for any ``k`` for gain below 2, settling in about 1/gain
updates, and with gain 0.2 a rollout's noise (a few points of share) moves it by a few percent.
An additive step's loop gain would be ``gain * k``, too slow or unstable depending on ``k``. The
floor keeps it able to rise again; when the policy keeps the share by its own nils it sinks to
the floor, which is the point. The value is the run's state (in the checkpoint), not a function
of the update: a resumed run continues from it.
"""

from __future__ import annotations

import math
from typing import Any

from train.ppo.config import NIL_EXPLORE_FLOOR


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


def nil_explore_step(cfg: Any, current: float, measured: float) -> float:
    """``nil_explore_target``'s next ``nil_explore``, from ``current`` (the rollout's) and the
    intact-nil share ``measured`` in that rollout (the rule above)."""
    target = cfg.nil_explore_target
    step = current * math.exp(cfg.nil_explore_gain * (target - measured) / target)
    return min(cfg.nil_explore_max, max(NIL_EXPLORE_FLOOR, step))


__all__ = ["learning_rate_at", "nil_explore_at", "nil_explore_step"]
