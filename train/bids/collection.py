"""A bid-value collection on disk (``python -m train.bids.game_bid_values collect``), checked.

A collection is a folder: ``settings.json`` (what was asked) and ``shard_NNNNN.pt`` files (each
the values of ``shard_deals`` deals and the ``job`` that played them). Nothing in it is trusted:
the settings are checked before anything is written (a bad seed, bag cost, rules or student used
to be refused late, from a worker, after a ``settings.json`` that then blocked the corrected
rerun), and each shard's keys, dtypes, shapes, row count, layout (contiguous tensors, no stride-0
views claiming millions of deals) and ``job`` are compared with the settings before it is used:
on resume (a shard that fails is played again, not counted as done) and before a fit (a shard
copied in from another collection, a truncated one or a foreign file is refused by name).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Optional

import torch

from spades_env.files import MAX_SHARD_BYTES, FileRuleError, check_input, file_sha256, load_torch, read_json
from spades_env.game import BID_ACTION_BASE, NUM_ACTIONS
from spades_env.rules import make_rules

SHARD_PATTERN = "shard_{:05d}.pt"
NUM_CANDIDATES = NUM_ACTIONS - BID_ACTION_BASE    # the bidding head's 16 actions, as bid_values tries them
SEED_MULTIPLIER = 1_000_003            # shard k plays seed * SEED_MULTIPLIER + k
MAX_SEED = 2 ** 32 - 1
MAX_DEALS = 10_000_000                 # a collection of the model card: 32,768 deals
MAX_SHARD_DEALS = 65_536
MAX_BAG_COST = 100.0
# (trailing shape, dtype) of each tensor of a shard's data; "obs" is as wide as the student's input.
SHARD_FIELDS: dict[str, tuple[tuple[Any, ...], torch.dtype]] = {
    "obs": (("obs",), torch.float16), "mask": ((NUM_ACTIONS,), torch.bool),
    "values": ((NUM_CANDIDATES,), torch.float32), "deal": ((5,), torch.int64), "turn": ((), torch.int64),
    "against_opponent": ((), torch.bool), "side_values": ((NUM_CANDIDATES, 2), torch.float32),
    "start_scores": ((2,), torch.int64), "start_bags": ((2,), torch.int64),
    "final_scores": ((NUM_CANDIDATES, 2), torch.int64)}
SETTING_KEYS = ("student", "student_sha256", "rules", "start", "heuristic_share", "bag_cost", "seed", "shard_deals")
JOB_KEYS = ("student", "rules", "start", "heuristic_share", "bag_cost", "deals", "seed", "out")


class CollectionError(ValueError):
    """A collection's settings or one of its shards is not what it should be (one line, named)."""


def check_collect_settings(args) -> tuple[dict, Any]:
    """The settings ``collect`` will write, every one checked here, in the parent, before anything
    is written: seed, bag cost, deals, the rules (known, four players in partnerships: the values
    are the bidder's side's) and the student (a loadable model for those rules). Returns
    (settings, the student's policy)."""
    from agents.neural import ModelError, policy_from_checkpoint, read_checkpoint

    check_int(args.seed, "--seed", 0, MAX_SEED)
    check_int(args.deals, "--deals", 1, MAX_DEALS)
    check_int(args.shard_deals, "--shard-deals", 1, MAX_SHARD_DEALS)
    check_int(args.workers, "--workers", 1, max(64, os.cpu_count() or 1))
    if not isinstance(args.bag_cost, (int, float)) or not math.isfinite(args.bag_cost) \
            or not 0 <= args.bag_cost <= MAX_BAG_COST:
        raise CollectionError(f"--bag-cost {args.bag_cost}: expected a finite number from 0 to {MAX_BAG_COST:g} "
                              "(points a bag costs)")
    if not 0 <= args.heuristic_share <= 1:
        raise CollectionError(f"--heuristic-share {args.heuristic_share}: expected 0 to 1")
    rules = checked_rules(args.rules)
    try:
        policy, _ = policy_from_checkpoint(read_checkpoint(args.student), str(args.student))
    except FileNotFoundError as exc:
        raise CollectionError(str(exc)) from None
    except ModelError as exc:
        raise CollectionError(f"--student: {exc}") from None
    check_student_width(policy, rules, args.student)
    settings = {"student": args.student, "student_sha256": file_sha256(args.student, "--student"),
                "rules": args.rules, "start": args.start, "heuristic_share": args.heuristic_share,
                "bag_cost": args.bag_cost, "seed": args.seed, "shard_deals": args.shard_deals}
    return settings, policy


def check_int(value: Any, flag: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise CollectionError(f"{flag} {value}: expected a whole number from {low:,} to {high:,}")
    return value


def checked_rules(name: Any):
    """The rules a collection can be made under: known, and four players in two partnerships."""
    try:
        rules = make_rules(name)
    except (ValueError, TypeError, OSError) as exc:
        raise CollectionError(f"--rules {name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") \
            from None
    if rules.players != 4 or not rules.partnerships:
        raise CollectionError(f"--rules {name}: {rules.players} players{'' if rules.partnerships else ', no partnerships'}; "
                              "bid values are a partnership's: expected four players in two partnerships")
    return rules


def check_student_width(policy, rules, student: Any) -> None:
    from spades_env.observation import layout_for

    width = layout_for(rules).obs_size
    if policy.arch["obs_size"] != width:
        raise CollectionError(f"--student {student}: reads observations of {policy.arch['obs_size']} numbers; "
                              f"these rules make {width}")


def shard_jobs(settings: dict, deals: int, out: Path) -> list[dict]:
    """The jobs of a collection of ``deals`` deals (one a shard)."""
    shards = math.ceil(deals / settings["shard_deals"])
    return [expected_job(settings, k, out) for k in range(shards)]


def expected_job(settings: dict, k: int, out: Path) -> dict:
    """What shard ``k`` of a collection with ``settings`` in folder ``out`` was played with."""
    return {"student": settings["student"], "rules": settings["rules"], "start": settings["start"],
            "heuristic_share": settings["heuristic_share"], "bag_cost": settings["bag_cost"],
            "deals": settings["shard_deals"], "seed": settings["seed"] * SEED_MULTIPLIER + k,
            "out": str(Path(out) / SHARD_PATTERN.format(k))}


def read_settings(folder: Path) -> dict:
    """A collection's ``settings.json``, checked to hold the settings of a collection."""
    path = Path(folder) / "settings.json"
    try:
        data = read_json(path, "collection settings", max_bytes=1_000_000)
    except FileRuleError as exc:
        raise CollectionError(str(exc)) from None
    if not isinstance(data, dict) or sorted(data) != sorted(SETTING_KEYS):
        raise CollectionError(f"{path}: expected the settings of a collection (keys {', '.join(SETTING_KEYS)})")
    if not isinstance(data["seed"], int) or not isinstance(data["shard_deals"], int) \
            or not isinstance(data["bag_cost"], (int, float)) or not isinstance(data["rules"], str):
        raise CollectionError(f"{path}: seed, shard_deals, bag_cost or rules of the wrong type")
    return data


def check_shard(path: Path, job: dict, obs_width: Optional[int]) -> dict[str, torch.Tensor]:
    """The data of the shard at ``path`` once it is what ``job`` should have written: a dict of
    ``data`` and ``job``, the job equal to ``job`` (its folder aside), the data's keys, dtypes and
    shapes those of :data:`SHARD_FIELDS`, one row count of at most the job's deals, every tensor
    contiguous over its own values. A :class:`CollectionError` naming the shard otherwise."""
    try:
        stored = load_torch(path, "shard", MAX_SHARD_BYTES)
    except FileRuleError as exc:
        raise CollectionError(str(exc)) from None
    if not isinstance(stored, dict) or set(stored) != {"data", "job"} or not isinstance(stored["data"], dict):
        raise CollectionError(f"shard {path}: expected a dict of 'data' and 'job' written by collect")
    written = stored["job"]
    if not isinstance(written, dict) or sorted(written) != sorted(JOB_KEYS):
        raise CollectionError(f"shard {path}: its job is not a collect job (keys {', '.join(JOB_KEYS)})")
    differ = sorted(key for key in JOB_KEYS if key != "out" and written[key] != job[key])
    if differ:
        raise CollectionError(f"shard {path}: played with other settings than this collection's "
                              f"({', '.join(f'{k}={written[k]!r}, expected {job[k]!r}' for k in differ[:2])})")
    data = stored["data"]
    if set(data) != set(SHARD_FIELDS):
        missing, extra = sorted(set(SHARD_FIELDS) - set(data)), sorted(set(data) - set(SHARD_FIELDS))
        raise CollectionError(f"shard {path}: keys missing {missing} / unexpected {extra}")
    rows = None
    for name, (trailing, dtype) in SHARD_FIELDS.items():
        tensor = data[name]
        if not isinstance(tensor, torch.Tensor):
            raise CollectionError(f"shard {path}: {name} is {type(tensor).__name__}: expected a tensor")
        shape = tuple(obs_width if size == "obs" else size for size in trailing)
        if tensor.dtype != dtype or tensor.dim() != 1 + len(shape) or \
                any(want is not None and got != want for got, want in zip(tensor.shape[1:], shape)):
            raise CollectionError(f"shard {path}: {name} is {str(tensor.dtype).replace('torch.', '')} of shape "
                                  f"{tuple(tensor.shape)}; expected {str(dtype).replace('torch.', '')} of shape "
                                  f"(rows, {', '.join(str(s) for s in shape)})".replace(", )", ")"))
        end = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
        if not tensor.is_contiguous() or end > tensor.untyped_storage().nbytes():
            raise CollectionError(f"shard {path}: {name} is a view (strides {tuple(tensor.stride())}) over values "
                                  "the file does not hold: expected contiguous tensors")
        if rows is None:
            rows = tensor.shape[0]
        elif tensor.shape[0] != rows:
            raise CollectionError(f"shard {path}: {name} has {tensor.shape[0]} rows, obs {rows}: a truncated shard")
    if rows > job["deals"]:
        raise CollectionError(f"shard {path}: {rows:,} deals; its job played {job['deals']:,}")
    return data


def shard_index(path: Path) -> int:
    return int(path.stem.split("_")[1])


def check_data_folders(folders: list[str]) -> list[Path]:
    """``--data`` folders, each a folder given once (the same folder twice, by another name or a
    link, counted every deal twice and put held-out rows in training)."""
    seen: list[Path] = []
    for text in folders:
        folder = Path(text)
        if not folder.is_dir():
            if folder.exists():
                raise CollectionError(f"--data {folder}: not a folder (expected a folder collect wrote)")
            raise CollectionError(f"--data {folder}: no shard_*.pt (run collect first)")
        for earlier in seen:
            if os.path.samefile(folder, earlier):
                raise CollectionError(f"--data {folder} is {earlier} again: give each collection once")
        seen.append(folder)
    return seen


def check_student_file(path: Any) -> None:
    try:
        check_input(path, "--student")
    except FileRuleError as exc:
        raise CollectionError(str(exc)) from None


__all__ = ["CollectionError", "SHARD_PATTERN", "SHARD_FIELDS", "check_collect_settings", "checked_rules",
           "check_student_width", "shard_jobs", "expected_job", "read_settings", "check_shard", "shard_index",
           "check_data_folders", "check_int", "check_student_file"]
