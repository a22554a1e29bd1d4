"""A training run's checkpoints: what they hold, writing them atomically, reading one back for
``--resume`` (refusing a checkpoint of other settings), and whether a run is complete.

A checkpoint holds everything a run needs to continue exactly: weights, optimizer, opponent
pool, the tables mid-hand and every random stream (``checkpoints/update_NNNNNN.pt`` and
``last.pt``; the last ``keep_checkpoints`` numbered ones are kept).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from agents.neural import CHECKPOINT_FORMAT, ModelError, read_checkpoint
from spades_env.files import MAX_JSON_BYTES, read_text, save_torch

from train.ppo.config import RESUMABLE_CHANGES, ConfigError, TrainConfig


def save_checkpoint(data: dict, checkpoint_dir: Path, update: int, keep: int) -> Path:
    """Write ``last.pt`` and ``update_NNNNNN.pt`` atomically (a kill leaves the old file or the
    new one, never a torn one); keep the last ``keep`` numbered ones. Returns the numbered path.
    ``last.pt`` is written first, so that it is never older than a numbered checkpoint: a kill
    between the two loses nothing to ``--resume``."""
    numbered = checkpoint_dir / f"update_{update:06d}.pt"
    for path in (checkpoint_dir / "last.pt", numbered):
        save_torch(data, path, "checkpoint")          # the output rule: never renamed onto a device
    for path in sorted(checkpoint_dir.glob("update_*.pt"))[:-keep]:
        path.unlink(missing_ok=True)
    return numbered


def read_training_checkpoint(path: Path, config: TrainConfig) -> dict:
    """A training checkpoint to resume ``config`` from; refuses an exported model, and a
    checkpoint whose run used other settings than those :data:`RESUMABLE_CHANGES` allows."""
    data = read_checkpoint(path)
    if data["format"] != CHECKPOINT_FORMAT:
        raise ModelError(f"{path}: an exported model, not a training checkpoint (resume needs "
                         "checkpoints/last.pt or update_*.pt of a run)")
    saved = data["config"]
    now = config.to_dict()
    defaults = TrainConfig().to_dict()        # fields added since the checkpoint: their defaults
    differ = sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k, defaults[k]) != now[k])
    if differ:
        raise ConfigError(f"{path}: the checkpoint's run used other settings: "
                          + ", ".join(f"{k}={saved.get(k, defaults[k])!r} (config now {now[k]!r})" for k in differ)
                          + f"; only {', '.join(sorted(RESUMABLE_CHANGES))} may change on resume")
    return data


def completed_run(run_path: Path, data: dict, config: TrainConfig) -> Optional[dict]:
    """The run's ``final_eval.json`` summary if the checkpoint ``data`` is that of a complete run
    of ``config`` (every warm start and expert round done, the last update made, the final
    evaluation and the model written after it), else None: resuming it has nothing to do."""
    if int(data.get("update", -1)) < config.last_update:
        return None
    if int(data.get("expert_rounds_done", 0)) < config.expert_rounds:
        return None
    if not bool(data.get("imitated")) or (config.distill_data is not None and not data.get("distilled")):
        return None
    if config.bid_value_deals and int(data.get("bid_value_rounds_done", 0)) < config.bid_value_rounds:
        return None
    summary_path, model_path = run_path / "final_eval.json", run_path / "model.pt"
    if not model_path.is_file():
        return None
    try:
        summary = json.loads(read_text(summary_path, "final_eval.json", MAX_JSON_BYTES))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(summary, dict) or summary.get("update") != int(data["update"]):
        return None
    return summary


def listify(value):
    """Tuples (a ``random.Random`` state) as lists, which ``weights_only`` checkpoints can hold."""
    return [listify(v) for v in value] if isinstance(value, (tuple, list)) else value


def tuplify(value):
    return tuple(tuplify(v) for v in value) if isinstance(value, list) else value
