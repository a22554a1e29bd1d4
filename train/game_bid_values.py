"""Bids valued by what they do to the game, not to the hand: Monte-Carlo bid values
(:mod:`train.bid_values`) scored by the probability of winning from the score each bid leaves.

    python -m train.game_bid_values collect --student agents/models/neural_standard.pt --deals 32768 \\
        --out runs/game_bids
    python -m train.game_bid_values fit --data runs/game_bids --student agents/models/neural_standard.pt \\
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
alone (:func:`train.bid_values.fit_bid_head`) to the values of ``--objective win`` (in points of
equal worth: the win probability divided by its mean slope per point over the collection's states,
so ``--temperature`` means what it means for points) or ``--objective points`` (the hand's points,
bags priced: the values stage 5 of the model card used), and writes a model file whose provenance
records the data, the objective and the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from spades_env.rules import Rules, make_rules

SHARD_PATTERN = "shard_{:05d}.pt"
NUM_CANDIDATES = 16


# ---------------------------------------------------------------------------------------------
# The game's value of a score
# ---------------------------------------------------------------------------------------------

class WinTable:
    """The probability that side A wins the game from the score pair (a, b), every later hand's
    score changes drawn from ``changes`` ((n, 2): A's and B's points in one hand, bags priced as
    points), by value iteration on a grid of ``step`` points between the mercy score and the
    target (:func:`spades_env.scoring.game_winner`'s rules: the game ends when a side reaches the
    target or falls to the mercy score, the higher score winning; a tie at the top counts 1/2)."""

    def __init__(self, changes: np.ndarray, rules: Rules, step: int = 10, tolerance: float = 1e-9,
                 max_iterations: int = 5000) -> None:
        changes = np.asarray(changes, dtype=np.float64)
        if changes.ndim != 2 or changes.shape[1] != 2 or len(changes) == 0 or not np.isfinite(changes).all():
            raise ValueError("changes: expected (n, 2) finite score changes, n >= 1")
        self.rules, self.step = rules, int(step)
        self.high = rules.target_score
        # Without a mercy rule the floor is far enough below 0 that a side there has lost already.
        self.low = rules.mercy_score if rules.mercy_score is not None else -4 * rules.target_score
        self.size = (self.high - self.low) // self.step - 1           # interior cells per axis
        if self.size < 1:
            raise ValueError(f"step {step}: no score between {self.low} and {self.high}")
        cells, counts = np.unique(np.rint(changes / self.step).astype(np.int64), axis=0, return_counts=True)
        self.moves, self.probabilities = cells, counts / counts.sum()
        margin = int(np.abs(cells).max()) + 1
        n, m = self.size, margin
        scores = self.low + self.step * (np.arange(-m, n + m) + 1)     # the extended grid's scores
        a, b = np.meshgrid(scores, scores, indexing="ij")
        over = (a >= self.high) | (b >= self.high) | (a <= self.low) | (b <= self.low)
        ended = np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))
        values = np.where(over, ended, 0.5)
        interior = (slice(m, m + n), slice(m, m + n))
        self.iterations = 0
        for self.iterations in range(1, max_iterations + 1):
            new = np.zeros((n, n))
            for (da, db), p in zip(cells, self.probabilities):
                new += p * values[m + da:m + da + n, m + db:m + db + n]
            change = float(np.abs(new - values[interior]).max())
            values[interior] = new
            if change < tolerance:
                break
        self.grid = values[interior].copy()                            # (size, size): A's, B's scores
        self.scores = scores[m:m + n].astype(np.float64)

    def win(self, a, b) -> np.ndarray:
        """Side A's win probability at scores (a, b) inside the game (bilinear between cells;
        scores outside the grid's interior are clamped to it)."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        first, last = self.scores[0], self.scores[-1]
        if self.size == 1:
            return np.full(np.broadcast(a, b).shape, self.grid[0, 0])
        x = (np.clip(a, first, last) - first) / self.step
        y = (np.clip(b, first, last) - first) / self.step
        i = np.minimum(np.floor(x).astype(np.int64), self.size - 2)      # the cell's lower corner
        j = np.minimum(np.floor(y).astype(np.int64), self.size - 2)
        fx, fy = x - i, y - j
        g = self.grid
        return ((1 - fx) * (1 - fy) * g[i, j] + fx * (1 - fy) * g[i + 1, j]
                + (1 - fx) * fy * g[i, j + 1] + fx * fy * g[i + 1, j + 1])

    def value_after_hand(self, final_scores: np.ndarray, effective: np.ndarray) -> np.ndarray:
        """Side A's value of hands that ended at ``final_scores`` (..., 2): 1, 0 or 1/2 where the
        hand ended the game (by the engine's rule, on the scores), else :meth:`win` at the
        ``effective`` scores (..., 2: the scores less the carried bags' price)."""
        final = np.asarray(final_scores, dtype=np.float64)
        a, b = final[..., 0], final[..., 1]
        over = (a >= self.high) | (b >= self.high)
        if self.rules.mercy_score is not None:
            over |= (a <= self.rules.mercy_score) | (b <= self.rules.mercy_score)
        ended = np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))
        going = self.win(effective[..., 0], effective[..., 1])
        # A tie at the top plays on: valued as the game going on.
        return np.where(over & (a != b), ended, going)

    def slope(self, a, b) -> np.ndarray:
        """How much A's win probability rises per point of A's score at (a, b) (the table's
        central difference, one cell each way)."""
        return (self.win(np.asarray(a) + self.step, b) - self.win(np.asarray(a) - self.step, b)) / (2 * self.step)

    def describe(self) -> dict:
        return {"step": self.step, "low": self.low, "high": self.high, "iterations": self.iterations,
                "moves": int(len(self.moves)), "win_at_0_0": float(self.win(0, 0)),
                "win_at_400_300": float(self.win(400, 300)), "win_at_300_400": float(self.win(300, 400))}


# ---------------------------------------------------------------------------------------------
# Values of the collected bids
# ---------------------------------------------------------------------------------------------

def played_changes(data: dict[str, torch.Tensor], policy) -> np.ndarray:
    """The (bidder's side, other side) bag-priced score changes of the hands played with the
    policy's own choice at the tried turn: the hands the game goes on with."""
    from spades_env.game import BID_ACTION_BASE
    with torch.no_grad():
        chosen = torch.cat([policy(o.float(), m).argmax(1) for o, m in
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
    from train.bid_values import collect_bid_values
    from train.rollout import StartingScores
    policy, info = _load_policy(job["student"])
    rules = make_rules(job["rules"])
    generator = torch.Generator().manual_seed(job["seed"])
    starts = StartingScores(job["start"], 1.0, rules, 1, generator, torch.device("cpu"))
    data = collect_bid_values(policy, rules, job["deals"], generator, torch.device("cpu"),
                              deals_per_batch=min(256, job["deals"]), start=lambda n: starts.sample(n),
                              opponent=HeuristicAgent(seed=job["seed"]), opponent_share=job["heuristic_share"],
                              bag_cost=job["bag_cost"])
    out = Path(job["out"])
    tmp = out.with_name(out.name + ".tmp")
    torch.save({"data": data, "job": job}, tmp)
    tmp.replace(out)                                      # a shard counts only written whole
    return out.name


def collect(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    student_hash = hashlib.sha256(Path(args.student).read_bytes()).hexdigest()
    settings = {"student": args.student, "student_sha256": student_hash, "rules": args.rules, "start": args.start,
                "heuristic_share": args.heuristic_share, "bag_cost": args.bag_cost, "seed": args.seed,
                "shard_deals": args.shard_deals}
    manifest = out / "settings.json"
    if manifest.exists():
        written = json.loads(manifest.read_text())
        if written != settings:
            changed = sorted(k for k in settings if written.get(k) != settings[k])
            print(f"game_bid_values: error: {out} holds a collection with other settings ({', '.join(changed)}); "
                  "use another --out", file=sys.stderr)
            return 2
    else:
        manifest.write_text(json.dumps(settings, indent=1) + "\n")
    shards = math.ceil(args.deals / args.shard_deals)
    jobs = [{"student": args.student, "rules": args.rules, "start": args.start, "heuristic_share": args.heuristic_share,
             "bag_cost": args.bag_cost, "deals": args.shard_deals, "seed": args.seed * 1_000_003 + k,
             "out": str(out / SHARD_PATTERN.format(k))} for k in range(shards)]
    todo = [job for job in jobs if not Path(job["out"]).exists()]
    print(f"game bid values: {shards - len(todo)} of {shards} shards of {args.shard_deals} deals already in {out}; "
          f"{len(todo)} to play on {args.workers} worker(s)", flush=True)
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for done, name in enumerate(pool.map(_collect_shard, todo), 1):
            rate = done * args.shard_deals / (time.perf_counter() - began)
            print(f"  {name} written ({done}/{len(todo)}, {rate:.1f} deals/s)", flush=True)
    return 0


def load_collection(folder: str | Path) -> dict[str, torch.Tensor]:
    """Every whole shard of a collection, concatenated."""
    paths = sorted(Path(folder).glob("shard_*.pt"))
    if not paths:
        raise FileNotFoundError(f"{folder}: no shard_*.pt (run collect first)")
    parts = [torch.load(p, weights_only=True)["data"] for p in paths]       # tensors only: no code runs
    return {k: torch.cat([part[k] for part in parts]) for k in parts[0]}


# ---------------------------------------------------------------------------------------------
# fit
# ---------------------------------------------------------------------------------------------

def fit(args) -> int:
    from agents.neural import save_model
    from train.bid_values import fit_bid_head
    policy, info = _load_policy(args.student)
    rules = make_rules(args.rules)
    parts = [load_collection(folder) for folder in args.data]
    data = {k: torch.cat([part[k] for part in parts]) for k in parts[0]}
    settings = [json.loads((Path(folder) / "settings.json").read_text()) for folder in args.data]
    bag_cost = settings[0]["bag_cost"]
    if any(s["bag_cost"] != bag_cost or s["rules"] != args.rules for s in settings):
        print(f"game_bid_values: error: --data folders collected with other bag costs or other rules than "
              f"--rules {args.rules}", file=sys.stderr)
        return 2
    student_hash = hashlib.sha256(Path(args.student).read_bytes()).hexdigest()
    if any(s["student_sha256"] != student_hash for s in settings):
        print(f"game_bid_values: note: {args.student} is not the policy the collection played (its bids and "
              "card play made the values); fitting from it all the same", flush=True)
    record = {"tool": "python -m train.game_bid_values fit", "data": list(args.data), "deals": int(len(data["values"])),
              "objective": args.objective, "temperature": args.temperature, "from_policy": args.from_policy,
              "epochs": args.epochs,
              "learning_rate": args.learning_rate, "collection": settings,
              "student_sha256": student_hash}
    if args.objective == "win":
        table = WinTable(played_changes(data, policy), rules, step=args.step)
        values, slope = win_values(data, table, bag_cost)
        record["win_table"] = {**table.describe(), "mean_slope_per_point": slope}
        print(f"win table: {table.describe()}; mean slope {slope:.5f} a point at the collection's scores", flush=True)
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
    parser = argparse.ArgumentParser(prog="python -m train.game_bid_values", description=__doc__.split("\n\n")[0])
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


if __name__ == "__main__":
    sys.exit(main())
