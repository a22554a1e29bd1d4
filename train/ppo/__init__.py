"""The PPO loop of ``spades-train``: its config (:mod:`train.ppo.config`), rollouts
(:mod:`train.ppo.rollout`), the update (:mod:`train.ppo.update`), checkpoints, metrics, the
run lock, opponents, the run's evaluations and the trainer (:mod:`train.ppo.trainer`).
``python -m train.ppo`` is ``spades-train``."""


def __getattr__(name):
    """``from train.ppo import Trainer, main``, without importing torch for the config alone."""
    if name in ("Trainer", "main"):
        from train.ppo import trainer
        return getattr(trainer, name)
    raise AttributeError(f"module 'train.ppo' has no attribute {name!r}")
