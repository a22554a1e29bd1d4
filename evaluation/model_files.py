"""Which model file an agent spec loads, and digests of model files: what a match's journal
checks has not changed on resume (:mod:`evaluation.journal`) and what the partner zoo
(:mod:`coop.partners.zoo`) hashes its partners by."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Optional

from spades_env.files import MAX_MODEL_BYTES, FileRuleError, check_input, file_sha256


def model_file(spec: str) -> Optional[Path]:
    """The checkpoint a spec loads (``checkpoint=`` or a registered neural agent's), else None."""
    from agents.specs import parse_agent_spec
    name, options = parse_agent_spec(spec)
    if options.get("checkpoint") is not None:
        return Path(str(options["checkpoint"]))
    if name == "neural" and options.get("model") is not None:   # a shipped model by name
        from agents.neural import shipped_model
        return shipped_model(str(options["model"]), must_exist=False)   # hashed as "missing" if absent
    from agents.neural import DEFAULT_MODEL, VERSIONED_MODELS
    if name == "neural":                          # registered models: the files agents.neural loads
        return DEFAULT_MODEL
    if name in VERSIONED_MODELS:
        return VERSIONED_MODELS[name]
    return None


def file_digest(path: str | Path) -> Optional[str]:
    """SHA-256 of a file's bytes (None when it cannot be read); remembered per path, size and
    time of change, so that checking many files against the zoo reads each zoo model once."""
    try:                                   # a regular file within bounds: /dev/zero or a FIFO is never read
        stat = check_input(path, "model", MAX_MODEL_BYTES).stat()
        return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    except (OSError, FileRuleError):
        return None


@functools.lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path, "model", MAX_MODEL_BYTES)


def weights_digest(path: str | Path) -> Optional[str]:
    """SHA-256 of a model file's policy weights (names, shapes and values), None for a file that
    is no spades model: the same policy saved again (another name, other bytes) has the same."""
    try:
        stat = check_input(path, "model", MAX_MODEL_BYTES).stat()
        return _weights_digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    except (OSError, FileRuleError):
        return None


@functools.lru_cache(maxsize=256)
def _weights_digest(path: str, size: int, mtime_ns: int) -> Optional[str]:
    from agents.neural import read_checkpoint
    try:
        policy = read_checkpoint(path).get("policy")
    except Exception:                      # not a model file: nothing to compare
        return None
    if not isinstance(policy, dict):
        return None
    return policy_weights_digest(policy)


def policy_weights_digest(weights: dict) -> str:
    """:func:`weights_digest` of a policy's weights in memory (a ``state_dict``): a fitted policy
    can be compared with the model files before it is written."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        tensor = weights[name]
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
