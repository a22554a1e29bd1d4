"""Bids valued by what they do to the game, not to the hand: Monte-Carlo bid values
(:mod:`train.bids.bid_values`) scored by the probability of winning from the score each bid leaves.

    python -m train.bids.game_bid_values collect --student agents/models/neural_v6.pt --deals 32768 \\
        --out runs/game_bids
    python -m train.bids.game_bid_values fit --data runs/game_bids --student agents/models/neural_v6.pt \\
        --objective win --out runs/game_bids_win.pt

Why: a bid valued by the hand's points (with every carried bag priced at 10) is worth the same at
0-0 as at 460-380, but in a game it is not: near 500 a safe contract that ends the game, or a set of
the other side that keeps it from ending, is worth more than its points, and far behind only the
bids that can catch up count. So each hand played out with each bid is scored by :class:`WinTable`,
the probability that the bidder's side wins the game from the scores after the hand (carried bags
priced as 10 points each), the game over where the hand ended it. The table comes from the hands of
the collection itself: with every later hand drawn from the score changes the policy's side and the
other side made there (the hands played with the policy's own bids), value iteration over the
scores from the mercy score to the target gives the win probability of every score pair (a Markov
chain on the two scores; ``step`` points a cell).

``collect`` writes shards of ``--shard-deals`` deals as it goes, so a killed run resumes where it
stopped (the same command again; a shard counts only written whole). ``fit`` fits the bidding head
alone (:func:`train.bids.bid_values.fit_bid_head`) to the values of ``--objective win`` (in points of
equal worth: the win probability divided by its mean slope per point over the collection's states,
so ``--temperature`` means what it means for points) or ``--objective points`` (the hand's points,
bags priced: the values stage 5 of the model card used), and writes a model file whose provenance
records the data, the objective and the table.
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.bids.game_bid_values", "train.bids.game_bid_values:main"))

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from spades_env.rules import make_rules

from agents.game_value import WinTable  # noqa: F401  (the table moved there: no torch, for the search too)
from spades_env.files import check_output, check_output_folder, file_sha256, save_torch, write_json
from train.bids.collection import (MAX_DEALS, NUM_CANDIDATES, SHARD_PATTERN, CollectionError,
                                   check_collect_settings, check_data_folders, check_int, check_shard,
                                   check_student_file, check_student_width, checked_rules, expected_job,
                                   read_settings, shard_index, shard_jobs)


# ---------------------------------------------------------------------------------------------
# Values of the collected bids
# ---------------------------------------------------------------------------------------------

def played_changes(data: dict[str, torch.Tensor], policy) -> np.ndarray:
    """The (bidder's side, other side) bag-priced score changes of the hands played with the
    policy's own choice at the tried turn: the hands the game goes on with."""
    from spades_env.game import BID_ACTION_BASE
    device = next(policy.parameters()).device
    with torch.no_grad():
        chosen = torch.cat([policy(o.to(device).float(), m.to(device)).argmax(1).cpu() for o, m in
                            zip(data["obs"].split(8192), data["mask"].split(8192))])
    own = (chosen - BID_ACTION_BASE).clamp(0, NUM_CANDIDATES - 1)
    rows = torch.arange(len(own))
    changes = data["side_values"][rows, own].numpy()
    return changes[np.isfinite(changes).all(1)]


def win_values(data: dict[str, torch.Tensor], table: WinTable, bag_cost: float) -> tuple[torch.Tensor, float]:
    """Every tried action's value to the bidder's side as the game sees it, in points of equal
    worth (the win probability divided by its mean slope per point at the collection's starting
    scores), NaN where the action was not legal; and that mean slope."""
    start = data["start_scores"].numpy().astype(np.float64) - bag_cost * data["start_bags"].numpy()
    effective = start[:, None, :] + data["side_values"].numpy().astype(np.float64)
    win = table.value_after_hand(data["final_scores"].numpy(), np.nan_to_num(effective))
    slope = float(np.mean(table.slope(start[:, 0], start[:, 1])))
    if not slope > 0:
        raise ValueError("the win table does not rise with the score: too few hands to build it")
    values = torch.as_tensor(win / slope, dtype=torch.float32)
    return torch.where(torch.isnan(data["values"]), data["values"], values), slope


def valued_by_the_game(data: dict[str, torch.Tensor], policy, rules, bag_cost: float,
                       step: int = 10) -> tuple[torch.Tensor, dict]:
    """A collection's values by the game (:func:`win_values`), the win table built from the hands
    the policy's own bids played (:func:`played_changes`); and what describes that table. What
    ``fit --objective win`` and spades-train's ``bid_value_objective: win`` both fit to."""
    table = WinTable(played_changes(data, policy), rules, step=step)
    values, slope = win_values(data, table, bag_cost)
    return values, {**table.describe(), "mean_slope_per_point": slope}


# ---------------------------------------------------------------------------------------------
# collect
# ---------------------------------------------------------------------------------------------

def _load_policy(path: str):
    from agents.neural import policy_from_checkpoint, read_checkpoint
    data = read_checkpoint(path)
    return policy_from_checkpoint(data, path)


def _collect_shard(job: dict) -> str:
    """One shard, in a worker process (one torch thread)."""
    torch.set_num_threads(1)
    from agents.heuristic import HeuristicAgent
    from train.bids.bid_values import collect_bid_values
    from train.ppo.rollout import StartingScores
    policy, info = _load_policy(job["student"])
    rules = make_rules(job["rules"])
    generator = torch.Generator().manual_seed(job["seed"])
    starts = StartingScores(job["start"], 1.0, rules, 1, generator, torch.device("cpu"))
    data = collect_bid_values(policy, rules, job["deals"], generator, torch.device("cpu"),
                              deals_per_batch=min(256, job["deals"]), start=lambda n: starts.sample(n),
                              opponent=HeuristicAgent(seed=job["seed"]), opponent_share=job["heuristic_share"],
                              bag_cost=job["bag_cost"])
    save_torch({"data": data, "job": job}, job["out"], "shard")     # a shard counts only written whole
    return Path(job["out"]).name


def collect(args) -> int:
    """Play the collection's missing shards; every setting and ``--out`` checked first, and each
    shard already there checked against its job (a bad one is played again)."""
    out = check_output_folder(args.out, "--out")
    settings, policy = check_collect_settings(args)
    manifest = out / "settings.json"
    if os.path.lexists(manifest):
        written = read_settings(out)
        if written != settings:
            changed = sorted(k for k in settings if written.get(k) != settings[k])
            raise CollectionError(f"{out} holds a collection with other settings ({', '.join(changed)}); "
                                  "use another --out")
    jobs = shard_jobs(settings, args.deals, out)
    width = policy.arch["obs_size"]
    todo, redo = [], []
    for job in jobs:
        path = Path(job["out"])
        if os.path.lexists(path):
            try:
                check_shard(path, job, width)
                continue
            except CollectionError as exc:
                check_output(path, "shard")                 # a device or folder in its place: refused
                redo.append(f"{path.name} ({str(exc).split(': ', 1)[-1][:80]})")
        todo.append(job)
    out.mkdir(parents=True, exist_ok=True)
    if not manifest.exists():
        write_json(manifest, settings, "collection settings", stream_ok=False)
    shards = len(jobs)
    print(f"game bid values: {shards - len(todo)} of {shards} shards of {args.shard_deals} deals already in {out}; "
          f"{len(todo)} to play on {args.workers} worker(s)", flush=True)
    for line in redo:
        print(f"  played again: {line}", flush=True)
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for done, name in enumerate(pool.map(_collect_shard, todo), 1):
            rate = done * args.shard_deals / (time.perf_counter() - began)
            print(f"  {name} written ({done}/{len(todo)}, {rate:.1f} deals/s)", flush=True)
    return 0


def load_collection(folder: str | Path, obs_width: Optional[int] = None) -> dict[str, torch.Tensor]:
    """Every shard of a collection, each checked against the collection's settings
    (:func:`train.bids.collection.check_shard`), concatenated."""
    folder = Path(folder)
    paths = sorted(folder.glob("shard_*.pt"))
    if not paths:
        raise FileNotFoundError(f"{folder}: no shard_*.pt (run collect first)")
    settings = read_settings(folder)
    parts = []
    for path in paths:
        try:
            k = shard_index(path)
        except (IndexError, ValueError):
            raise CollectionError(f"shard {path}: not a shard name (expected {SHARD_PATTERN.format(0)})") from None
        parts.append(check_shard(path, expected_job(settings, k, folder), obs_width))
    width = {int(part["obs"].shape[1]) for part in parts}
    if len(width) > 1:
        raise CollectionError(f"{folder}: shards of observations {sorted(width)} wide: one collection, one width")
    return {k: torch.cat([part[k] for part in parts]) for k in parts[0]}


# ---------------------------------------------------------------------------------------------
# fit
# ---------------------------------------------------------------------------------------------

MIN_HELD_OUT = 50                   # held-out deals a fit needs by default (a tenth of the deals)


def check_fit_settings(args) -> None:
    """``fit``'s numbers and its ``--out``, checked before anything is loaded."""
    check_output(args.out, "--out", inputs=[args.student])
    check_student_file(args.student)
    for flag, value, low, high in (("--temperature", args.temperature, 0.0, 1e6),
                                   ("--learning-rate", args.learning_rate, 0.0, 1.0)):
        if not math.isfinite(value) or not low < value <= high:
            raise CollectionError(f"{flag} {value}: expected a finite number above {low:g}, at most {high:g}")
    check_int(args.step, "--step", 1, 500)
    check_int(args.epochs, "--epochs", 1, 10_000)
    check_int(args.seed, "--seed", 0, 2 ** 63 - 1)
    check_int(args.min_held_out, "--min-held-out", 1, MAX_DEALS)
    check_data_folders(args.data)


def fit(args) -> int:
    from agents.neural import save_model
    from train.bids.bid_values import fit_bid_head
    check_fit_settings(args)
    rules = checked_rules(args.rules)
    policy, info = _load_policy(args.student)
    check_student_width(policy, rules, args.student)
    parts = [load_collection(folder, policy.arch["obs_size"]) for folder in args.data]
    data = {k: torch.cat([part[k] for part in parts]) for k in parts[0]}
    settings = [read_settings(Path(folder)) for folder in args.data]
    bag_cost = settings[0]["bag_cost"]
    if any(s["bag_cost"] != bag_cost or s["rules"] != args.rules for s in settings):
        print(f"game_bid_values: error: --data folders collected with other bag costs or other rules than "
              f"--rules {args.rules}", file=sys.stderr)
        return 2
    held_out = len(data["values"]) // 10                  # fit_bid_head holds out every tenth deal
    if held_out < args.min_held_out:
        raise CollectionError(f"--data: {len(data['values']):,} deals leave {held_out:,} held out; expected at least "
                              f"{args.min_held_out:,} (collect more deals, or lower --min-held-out)")
    student_hash = file_sha256(args.student, "--student")
    if any(s["student_sha256"] != student_hash for s in settings):
        print(f"game_bid_values: note: {args.student} is not the policy the collection played (its bids and "
              "card play made the values); fitting from it all the same", flush=True)
    record = {"tool": "python -m train.bids.game_bid_values fit", "data": list(args.data), "deals": int(len(data["values"])),
              "objective": args.objective, "temperature": args.temperature, "from_policy": args.from_policy,
              "epochs": args.epochs,
              "learning_rate": args.learning_rate, "collection": settings,
              "student_sha256": student_hash}
    if args.objective == "win":
        values, record["win_table"] = valued_by_the_game(data, policy, rules, bag_cost, step=args.step)
        print(f"win table (its mean slope at the collection's scores): {record['win_table']}", flush=True)
        data = {**data, "values": values}
    prior = None
    if args.from_policy:                                  # the bids as the policy makes them, score rule included
        from spades_env.game import BID_ACTION_BASE
        with torch.no_grad():
            prior = torch.cat([policy(o.float(), m)[:, BID_ACTION_BASE:] for o, m in
                               zip(data["obs"].split(8192), data["mask"].split(8192))])
    if not args.keep_score_tilts and policy.score_tilts is not None:
        record["score_tilts_dropped"] = policy.score_tilts
        arch = dict(policy.arch)
        arch.pop("score_tilts")
        from agents.networks import PolicyNet
        plain = PolicyNet(**arch)
        plain.load_state_dict(policy.state_dict())
        policy = plain
    generator = torch.Generator().manual_seed(args.seed)
    result = fit_bid_head(policy, data, args.temperature, args.epochs, args.learning_rate, 1024, generator,
                          prior_logits=prior)
    record.update(result)
    provenance = dict(info["provenance"] or {})
    if "game_bid_values" in provenance:
        record["earlier"] = provenance["game_bid_values"]
    provenance["game_bid_values"] = record
    path = save_model(policy, args.out, info["rules"], provenance)
    print(f"wrote {path}", flush=True)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.bids.game_bid_values", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="play every bid out on copies of each deal, in shards (resumable)")
    c.add_argument("--student", required=True, help="the model whose bids and card play are valued")
    c.add_argument("--deals", type=int, required=True)
    c.add_argument("--shard-deals", type=int, default=1024)
    c.add_argument("--heuristic-share", type=float, default=1.0,
                   help="share of the deals where the heuristic plays the other side (default 1)")
    c.add_argument("--start", default="real", choices=("real", "varied"), help="where the hands start (default real)")
    c.add_argument("--bag-cost", type=float, default=10.0)
    c.add_argument("--rules", default="standard")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    c.add_argument("--out", required=True, help="a folder for the shards")
    f = sub.add_parser("fit", help="fit the bidding head to the collected values")
    f.add_argument("--data", required=True, nargs="+", help="one or more collect folders")
    f.add_argument("--student", required=True, help="the model to start from (the collection's)")
    f.add_argument("--objective", choices=("win", "points"), default="win")
    f.add_argument("--temperature", type=float, default=10.0, help="points (or points of equal worth) per logit")
    f.add_argument("--from-policy", action="store_true",
                   help="target the policy's own logits plus value / T (a step from its bids), not the values alone")
    f.add_argument("--epochs", type=int, default=30)
    f.add_argument("--learning-rate", type=float, default=1e-3)
    f.add_argument("--step", type=int, default=10, help="the win table's cell, in points")
    f.add_argument("--keep-score-tilts", action="store_true",
                   help="keep the model's score rule (default: dropped, the values carry the score)")
    f.add_argument("--rules", default="standard")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--min-held-out", type=int, default=MIN_HELD_OUT,
                   help=f"refuse a fit that holds out fewer deals (a tenth of them; default {MIN_HELD_OUT})")
    f.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    for name in ("deals", "shard_deals", "workers", "epochs"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} {value}: expected 1 or more")
    if args.command == "collect" and not 0 <= args.heuristic_share <= 1:
        parser.error(f"--heuristic-share {args.heuristic_share}: expected 0 to 1")
    from agents.neural import ModelError
    try:
        return collect(args) if args.command == "collect" else fit(args)
    except (FileNotFoundError, IsADirectoryError, ModelError, ValueError) as exc:
        print(f"game_bid_values: error: {exc}", file=sys.stderr)
        return 2

