"""The tiny training config the trainer's tests share (tests of the lab and the bid values
train with it too): a few thousand decisions, one thread, no logs."""

from pathlib import Path

from train.ppo.config import TrainConfig, load_config

TINY = ["num_envs=32", "rollout_steps=16", "total_decisions=3072", "minibatch_size=256", "epochs=2",
        "hidden=32", "head_hidden=16", "pool_every=2", "eval_every=3", "eval_deals=2", "final_eval_deals=2",
        "checkpoint_every=1", "imitation_decisions=512", "imitation_epochs=1", "threads=1",
        "progress=false", "tensorboard=false", "opponents={self: 0.4, pool: 0.3, heuristic: 0.3}"]


def tiny(tmp_path: Path, name: str = "tiny", *extra: str) -> TrainConfig:
    return load_config(None, TINY + [f"run_dir={tmp_path}", f"name={name}", *extra])
