"""The neural agent: a policy network trained by ``spades-train``, no search at play time.

    bot = agents.make("neural")                                  # the model shipped in the repo
    bot = agents.make("neural_v1")                               # the one shipped before it
    bot = agents.make("neural", checkpoint="runs/quickstart/checkpoints/last.pt")
    bot = agents.make("neural", checkpoint="model.pt", greedy=False, seed=0)   # sample

A checkpoint is either a training checkpoint (``spades-train`` writes them) or an exported
model (:func:`export_model`, a few hundred kB: the policy weights, its shape, the rules it
was trained under and where it came from).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from spades_env.files import MAX_MODEL_BYTES, FileRuleError, check_input, load_torch, save_torch

from . import model_manifest
from .base import Agent
from .networks import MASKED_LOGIT, NUM_ACTIONS, PolicyNet

MODEL_FORMAT = "spades-neural-policy"
CHECKPOINT_FORMAT = "spades-train-checkpoint"
# The shipped models are named in agents/models/manifest.json (agents/model_manifest.py): a name
# never changes its bytes, and `neural` is an alias that moves when a new policy ships. Since
# 2026-11-29 it names neural_v7: neural_v6's network with its bidding head fitted to Monte-Carlo
# values of every bid scored by the probability of winning the game (python -m
# train.bids.game_bid_values fit --objective win --from-policy), then tilted 0.5 a trick upwards
# (python -m train.bids.bid_tilt); configs/recipes/neural.yaml is its whole lineage. The policies
# shipped before it stay loadable under their own names (neural_v1 .. neural_v6), each its own file.
MODELS_DIR = Path(__file__).parent / "models"
NEURAL_ALIAS = "neural"
VERSIONED_MODELS = {f"neural_v{k}": MODELS_DIR / f"neural_v{k}.pt" for k in range(1, 8)}
DEFAULT_MODEL = model_manifest.model_path(NEURAL_ALIAS, MODELS_DIR, verify=False)
PREVIOUS_MODEL = VERSIONED_MODELS["neural_v1"]
PREVIOUS_MODELS = {name: path for name, path in VERSIONED_MODELS.items() if path != DEFAULT_MODEL}


def shipped_models() -> list[str]:
    """The names ``neural:model=NAME`` takes: every model of the manifest, its aliases, and the
    people's clones present in ``agents/models`` (``human_NAME``)."""
    try:
        return model_manifest.listed_names(MODELS_DIR)
    except model_manifest.ManifestError:               # a models folder without a manifest (tests)
        return sorted(path.stem for path in Path(MODELS_DIR).glob(f"{model_manifest.PEOPLE_PREFIX}*.pt"))


def shipped_model(name: str, must_exist: bool = True) -> Path:
    """The file of a shipped model by name: a spec that names it is the same on every machine
    (a ``checkpoint=`` path is not), which is what the partner zoo's specs need. The name is
    always checked (no paths) and resolved through the manifest (aliases, former names);
    ``must_exist=False`` skips the check that the file is there (and its hash)."""
    text = str(name)
    wrong = ValueError(f"neural: model={text!r}: expected the name of a shipped model "
                       f"({', '.join(shipped_models())}); a file of your own is checkpoint=FILE")
    if not model_manifest.NAME_PATTERN.fullmatch(text):
        raise wrong
    folder = Path(MODELS_DIR)
    if text.startswith(model_manifest.PEOPLE_PREFIX):
        path = folder / f"{text}.pt"
        if must_exist and not path.is_file():
            raise wrong
        return path
    if not must_exist:                                   # the file the name means, there or not
        try:
            return folder / model_manifest.entries(folder)[model_manifest.resolve_name(text, folder)]["file"]
        except model_manifest.ManifestError:
            return folder / f"{text}.pt"
    try:
        return model_manifest.model_path(text, folder, verify=False)
    except model_manifest.ManifestError as exc:
        if "missing" in str(exc):
            raise ValueError(f"neural: model={text!r}: {exc}") from None
        raise wrong from None


class ModelError(ValueError):
    """A file that is not a usable neural model."""


def read_checkpoint(path: str | Path) -> dict:
    """``torch.load`` a training checkpoint or exported model, with clear errors."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"neural model {str(path)!r} not found (expected a file written by "
                                "spades-train or train.ppo.trainer.export_model)")
    try:                         # a regular file within bounds (never /dev/zero, a FIFO, a folder)
        check_input(path, "neural model", MAX_MODEL_BYTES)
    except FileRuleError as exc:
        raise ModelError(str(exc)) from None
    check_shipped_file(path)
    try:
        data = load_torch(path, "neural model", MAX_MODEL_BYTES)
    except FileRuleError as exc:  # truncated, not a torch file, an archive too large, unpickling refused...
        raise ModelError(f"{path}: corrupt or not a spades model/checkpoint "
                         f"({str(exc).split(f'{path}: ', 1)[-1]})") from None
    if not isinstance(data, dict) or data.get("format") not in (MODEL_FORMAT, CHECKPOINT_FORMAT):
        raise ModelError(f"{path}: not a spades model (expected a dict with format {MODEL_FORMAT!r} "
                         f"or {CHECKPOINT_FORMAT!r})")
    check_declared_sizes(data, path)
    for part in ("policy", "critic"):
        weights = data.get(part)
        bad = [name for name, tensor in weights.items() if isinstance(tensor, torch.Tensor)
               and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())] \
            if isinstance(weights, dict) else []
        if bad:
            raise ModelError(f"{path}: the {part} weights are not finite (NaN or infinite values in "
                             f"{', '.join(bad[:3])}{'...' if len(bad) > 3 else ''}); nothing was loaded")
    return data


def check_shipped_file(path: Path) -> None:
    """A file inside ``agents/models`` loads only as the manifest pins it: a :class:`ModelError`
    when its bytes are not the SHA-256 listed for its name, or when it is not listed at all
    (a person's clone, ``human_NAME.pt``, is the exception: local, never shipped, unchecked)."""
    folder = Path(MODELS_DIR).resolve()
    resolved = path.resolve()
    if resolved.parent != folder or resolved.name.startswith(model_manifest.PEOPLE_PREFIX):
        return
    if not (folder / model_manifest.MANIFEST_NAME).is_file():
        return                                            # a models folder of a test, without a manifest
    try:
        entry = model_manifest.manifest_entry_for_file(resolved, folder)
        if entry is None:
            raise ModelError(f"{path}: not in {model_manifest.MANIFEST_NAME}; a file in agents/models loads "
                             "only under a name the manifest pins (or as a person's clone, human_NAME.pt)")
        model_manifest.verify_file(entry, resolved)
    except model_manifest.ManifestError as exc:
        raise ModelError(str(exc)) from None


# A policy's declared shape, bounded before anything is allocated: a 1.5 KB file declaring
# hidden=24000, layers=6 reached 4.8 GB and 12 s before its weights were found not to fit.
MAX_HIDDEN = 8_192                  # shipped models use 256-512
MAX_LAYERS = 32
# ... and its size as a whole: hidden=8192 with 32 layers is within both bounds above yet 2.1G
# weights (8.6 GB), which a 2 MB file of stride-0 views once declared for its critic.
MAX_PARAMETERS = 64_000_000         # shipped models hold about 1M


def check_declared_sizes(data: dict, path: Any) -> None:
    """A :class:`ModelError` when a checkpoint's declared architecture (``arch``, ``critic_arch``)
    is out of bounds or does not match the shapes of the weights it holds. The networks are
    built on PyTorch's ``meta`` device (shapes only, no memory), so a tiny file declaring a huge
    network is refused in milliseconds."""
    from .networks import ValueNet
    for arch_key, weights_key, net in (("arch", "policy", PolicyNet), ("critic_arch", "critic", ValueNet)):
        arch, weights = data.get(arch_key), data.get(weights_key)
        if arch is None and arch_key == "critic_arch":
            continue
        if not isinstance(arch, dict):
            raise ModelError(f"{path}: {arch_key} is {type(arch).__name__}: expected the network's shape (a mapping)")
        for key, value in arch.items():
            if key in ("obs_size", "input_size", "hidden", "layers", "head_hidden"):
                top = MAX_LAYERS if key == "layers" else MAX_HIDDEN
                if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
                    raise ModelError(f"{path}: {arch_key} {key}={str(value)[:40]}: expected an integer 1..{top:,}; "
                                     "nothing was loaded")
        if not isinstance(weights, dict):
            raise ModelError(f"{path}: no {weights_key} weights (expected a mapping of tensors)")
        try:
            with torch.device("meta"):
                built = net(**arch).state_dict()
                shapes = {name: tuple(t.shape) for name, t in built.items()}
        except (TypeError, ValueError, KeyError) as exc:
            raise ModelError(f"{path}: {arch_key} {str(arch)[:120]} is not a network's shape ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        total = sum(math.prod(shape) for shape in shapes.values())
        if total > MAX_PARAMETERS:
            raise ModelError(f"{path}: {arch_key} {str(arch)[:120]} declares {total:,} weights; expected at most "
                             f"{MAX_PARAMETERS:,}; nothing was loaded")
        stored = {name: tuple(t.shape) for name, t in weights.items() if isinstance(t, torch.Tensor)}
        if stored != shapes:
            wrong = sorted(set(shapes) ^ set(stored)) or [n for n in shapes if shapes[n] != stored[n]]
            raise ModelError(f"{path}: the {weights_key} weights do not match the declared {arch_key} "
                             f"{str(arch)[:120]} (first difference: {wrong[0]}); nothing was loaded")
        for name in shapes:
            check_stored_tensor(weights[name], f"{path}: {weights_key} weight {name}", built[name].dtype)


def check_stored_tensor(tensor: torch.Tensor, where: str, dtype: torch.dtype = torch.float32) -> None:
    """A :class:`ModelError` unless ``tensor`` is a plain ``dtype`` tensor holding its own values:
    contiguous, inside its storage (a stride-0 or overlapping view claims values the file never
    held: a 20 KB file of them read as gigabytes), of the type the network computes in."""
    if tensor.dtype != dtype:
        raise ModelError(f"{where} is {str(tensor.dtype).replace('torch.', '')}: expected "
                         f"{str(dtype).replace('torch.', '')}; nothing was loaded")
    end = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
    if not tensor.is_contiguous() or end > tensor.untyped_storage().nbytes():
        raise ModelError(f"{where}: a view (strides {tuple(tensor.stride())}) over values the file does not hold: "
                         "expected a contiguous tensor; nothing was loaded")


def policy_from_checkpoint(data: dict, source: str = "checkpoint") -> tuple[PolicyNet, dict]:
    """Rebuild the policy of a training checkpoint or exported model; returns (policy, info)."""
    try:
        arch = data["arch"]
        policy = PolicyNet(**arch)
        policy.load_state_dict(data["policy"])
    except (KeyError, TypeError, RuntimeError) as exc:
        raise ModelError(f"{source}: the policy weights do not load ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0]})") from None
    policy.eval()
    info = {"rules": data.get("rules"), "arch": arch, "provenance": data.get("provenance", {})}
    return policy, info


class NeuralAgent(Agent):
    """Plays the policy network's most likely legal action (``greedy``) or samples it.

    Under rules with ``signals: N`` a network with 68 + N outputs (trained with them) reads the
    whole observation and chooses its messages. A network with 68 outputs (trained without a
    signal: every shipped model) still plays such a table: it reads ``observation[:its input
    size]`` (the signal's blocks are appended after every other, so that prefix is exactly the
    observation it was trained on) and sends message 0 at every signal turn, as the heuristic does.

    Options: ``checkpoint`` (path; default: the shipped model), ``model`` (the name of a model
    shipped in ``agents/models``, e.g. ``zoo_imitation_s1``), ``greedy`` (default True),
    ``seed`` (sampling), ``policy`` (a ``PolicyNet`` object, used as is: training evaluates
    itself this way)."""

    name = "neural"

    def __init__(self, checkpoint: Optional[str | Path] = None, greedy: bool = True,
                 seed: Optional[int] = None, policy: Optional[PolicyNet] = None,
                 model: Optional[str] = None) -> None:
        super().__init__(seed)
        if not isinstance(greedy, (bool, np.bool_)):        # greedy=maybe was read as True
            raise ValueError(f"neural: greedy={greedy!r}: expected true or false")
        self.greedy = bool(greedy)
        if model is not None:
            if checkpoint is not None or policy is not None:
                raise ValueError("neural: give model=NAME or checkpoint=FILE, not both")
            checkpoint = shipped_model(model)
        if policy is not None:
            self.policy, self.info = policy.eval(), {"rules": None, "arch": policy.arch, "provenance": {}}
            self.checkpoint = None
        else:
            self.checkpoint = Path(checkpoint) if checkpoint is not None else DEFAULT_MODEL
            self.policy, self.info = policy_from_checkpoint(read_checkpoint(self.checkpoint), str(self.checkpoint))
        self.obs_size = self.policy.arch["obs_size"]
        self.signals = int(getattr(self.policy, "signals", 0))
        """The messages the network scores itself (its outputs are 68 + signals)."""

    def action_probabilities(self, obs: dict) -> np.ndarray:
        """The policy's probabilities over the table's actions (68 + signals; 0 for illegal ones)."""
        logits = self._logits(obs)
        return torch.softmax(logits, 0).numpy()

    def log_probabilities(self, obs: dict) -> np.ndarray:
        """The policy's log-probabilities over the table's actions (-inf for illegal ones), float64."""
        return torch.log_softmax(self._logits(obs).double(), 0).numpy()

    def _inputs(self, observation: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, Optional[int]]:
        """What the network reads at one position: (observation, mask, fixed message). A table with
        the network's own action count is read as is; a signals table (68 + N actions, observation
        longer by the signal's blocks) played by a network without messages is read as its prefix
        and mask[:68], and at a signal turn the message is fixed (message 0: the lowest legal)."""
        if observation.shape == (self.obs_size,) and mask.shape == (NUM_ACTIONS + self.signals,):
            return observation, mask, None
        table_signals = mask.shape[0] - NUM_ACTIONS if mask.ndim == 1 else -1
        if self.signals == 0 and table_signals > 0 and observation.ndim == 1:
            from spades_env.observation import layout_for_size
            try:
                seats = layout_for_size(self.obs_size).n
            except ValueError:
                seats = None
            if seats is not None and observation.shape[0] == self.obs_size + 1 + seats * table_signals:
                messages = np.flatnonzero(mask[NUM_ACTIONS:])
                fixed = NUM_ACTIONS + int(messages[0]) if len(messages) and not mask[:NUM_ACTIONS].any() else None
                return observation[:self.obs_size], mask[:NUM_ACTIONS], fixed
        raise ModelError(f"NeuralAgent: observation of shape {observation.shape} and mask {mask.shape}; this "
                         f"model expects ({self.obs_size},) and ({NUM_ACTIONS + self.signals},), or (without "
                         f"messages of its own) a signals table's observation extending that one (was it trained "
                         f"under other rules? model rules: {self.info.get('rules')})")

    def _logits(self, obs: dict) -> torch.Tensor:
        observation = np.asarray(obs["observation"], dtype=np.float32)
        mask = np.asarray(obs["action_mask"]).astype(bool)
        if not mask.any():
            raise ValueError("NeuralAgent.act: the action mask is empty (is it this agent's turn?)")
        net_obs, net_mask, fixed = self._inputs(observation, mask)
        with torch.inference_mode():
            if fixed is not None:                           # a signal turn of a network without messages
                logits = torch.full((mask.shape[0],), MASKED_LOGIT)
                logits[fixed] = 0.0
                return logits
            net_logits = self.policy(torch.from_numpy(net_obs)[None], torch.from_numpy(net_mask)[None])[0]
            if net_mask.shape == mask.shape:
                return net_logits
            logits = torch.full((mask.shape[0],), MASKED_LOGIT)   # the table's messages: never chosen here
            logits[:net_logits.shape[0]] = net_logits
            return logits

    def act_batch(self, observations: list[dict]) -> list[int]:
        """The greedy actions at several positions (``obs`` dicts as ``env.last()`` gives them),
        in one forward pass: what :meth:`act` would choose at each, up to float rounding of
        the batched matrix products."""
        if not self.greedy:
            return [self.act(obs) for obs in observations]
        rows = [(np.asarray(obs["observation"], dtype=np.float32), np.asarray(obs["action_mask"]).astype(bool))
                for obs in observations]
        if not all(mask.any() for _, mask in rows):
            raise ValueError("NeuralAgent.act_batch: an action mask is empty (is it this agent's turn?)")
        inputs = [self._inputs(observation, mask) for observation, mask in rows]
        chosen: list[Optional[int]] = [fixed for _, _, fixed in inputs]
        asked = [i for i, fixed in enumerate(chosen) if fixed is None]
        if asked:
            batch = np.stack([inputs[i][0] for i in asked])
            masks = np.stack([inputs[i][1] for i in asked])
            with torch.inference_mode():
                logits = self.policy(torch.from_numpy(batch), torch.from_numpy(masks))
            for i, action in zip(asked, torch.argmax(logits, 1).tolist()):
                chosen[i] = action
        return [int(a) for a in chosen]

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        logits = self._logits(obs)
        if self.greedy:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits.double(), 0).numpy()
        legal = np.flatnonzero(np.asarray(obs["action_mask"]))
        cumulative = np.cumsum(probs[legal])
        pick = int(np.searchsorted(cumulative, self.rng.random() * cumulative[-1], side="right"))
        return int(legal[min(pick, len(legal) - 1)])

    def __repr__(self) -> str:
        source = "policy object" if self.checkpoint is None else str(self.checkpoint)
        return f"NeuralAgent({source}, greedy={self.greedy}, seed={self.seed!r})"


def export_model(checkpoint: str | Path, out: str | Path, **provenance: Any) -> Path:
    """Write the policy of a training checkpoint as a small standalone model file."""
    data = read_checkpoint(checkpoint)
    policy, info = policy_from_checkpoint(data, str(checkpoint))
    meta = dict(data.get("provenance", {}))
    if data["format"] == CHECKPOINT_FORMAT:
        meta.update({"config": data["config"], "update": data["update"], "decisions": data["decisions"]})
    meta.update(provenance)
    return save_model(policy, out, info["rules"], meta)


def save_model(policy: PolicyNet, out: str | Path, rules: Any, provenance: dict) -> Path:
    """Write ``policy`` as a standalone model file for ``agents.make("neural")`` (atomically)."""
    return save_torch({"format": MODEL_FORMAT, "version": 1, "arch": policy.arch, "rules": rules,
                       "policy": policy.state_dict(), "provenance": provenance}, out, "model")

