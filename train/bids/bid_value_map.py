"""``spades-coop bid-values SPEC``: which bid would pay, given the agent's own card play?

A policy's bids say something about its hand only if a hand-dependent bid pays under the way the
policy plays its cards. This measures that directly: on each of ``deals`` deals one bidding turn is
tried with every bid (:func:`train.bids.bid_values.collect_bid_values`: the deal copied once per bid,
everything else the policy playing greedily on all four seats), and the bidder's side's points
minus the other side's are grouped by the hand's trick potential (the same buckets as
``spades-coop signals``: the heuristic's trick estimate, rounded, 7 meaning 7 or more).

Per bucket it reports the policy's usual bid, the bid worth most on average, and what playing that
bid instead would gain. The gain overall is cross-fitted (the best bid of each bucket chosen on
one half of the deals, scored on the other, and the other way round), so a table read from noise
does not look like a gain. Bids carry information only if the best bid changes with the hand and
the gain is big enough for training to find: for the cooperation study's from-scratch agents the
best bid does change for strong hands, but over all bidding turns it is worth 1 to 2 points
(docs/cooperation.md, "Why no conventions formed").
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, Optional

import numpy as np
import torch

from coop.measures.signals import POTENTIAL_BUCKETS, potential_bucket
from evaluation.statistics import t_quantile

from train.bids.bid_values import collect_bid_values

MAX_DEALS = 100_000    # every deal is copied once per bid: the tensors grow with it (checked before allocating)
BIDS = 14        # nil (0) and 1..13: the columns of collect_bid_values' values before blind nil and look


def _policy_of(spec: str):
    """The PolicyNet behind a neural spec (``neural``, ``neural_v1``, ``neural_v2``, ``neural:checkpoint=F``,
    ``neural:model=N``)."""
    from agents.specs import AgentSpecError, make_agent
    try:
        agent = make_agent(spec)
    except AgentSpecError:         # already says which spec and why (it is a ValueError too)
        raise
    except (ValueError, FileNotFoundError, KeyError) as exc:
        raise ValueError(f"{spec!r}: {str(exc).splitlines()[0]}") from None
    policy = getattr(agent, "policy", None)
    if not isinstance(policy, torch.nn.Module):
        raise ValueError(f"{spec!r} is not a neural policy: the bid values are played out by the policy's own "
                         "batched play (a neural spec: neural, neural_v1, neural_v2, neural:checkpoint=FILE, "
                         "neural:model=NAME)")
    return policy, agent


def _bidder_hands(deal: torch.Tensor, turn: torch.Tensor) -> list[list[int]]:
    """The bidder's cards on each deal: seat = dealer + 1 + turn (the bidding starts left of the dealer)."""
    hands = []
    for row, t in zip(deal.tolist(), turn.tolist()):
        seat = (row[4] + 1 + t) % 4
        bits = row[seat]
        hands.append([card for card in range(52) if bits >> card & 1])
    return hands


def _mean_interval(diff: np.ndarray) -> dict:
    n = len(diff)
    if n == 0:
        return {"value": None, "low": None, "high": None, "n": 0}
    mean = float(diff.mean())
    if n < 2:
        return {"value": mean, "low": None, "high": None, "n": n}
    half = t_quantile(0.95, n - 1) * float(diff.std(ddof=1)) / math.sqrt(n)
    return {"value": mean, "low": mean - half, "high": mean + half, "n": n}


def _best_bids(values: np.ndarray, bucket: np.ndarray, rows: np.ndarray) -> dict[int, int]:
    """The bid of highest mean value per bucket over ``rows`` (buckets with no row: none)."""
    best = {}
    for b in range(POTENTIAL_BUCKETS):
        here = rows[bucket[rows] == b]
        if len(here):
            means = np.nanmean(values[here], axis=0)
            best[b] = int(np.nanargmax(np.where(np.isnan(means), -np.inf, means)))
    return best


def bid_value_map(spec: str, *, deals: int = 2048, seed: int = 0, rules: Any = "standard",
                  progress: Optional[Any] = None) -> dict:
    """The table described in the module doc, as a dict (``format_bid_value_map`` prints it)."""
    if isinstance(deals, bool) or not isinstance(deals, int) or not 2 <= deals <= MAX_DEALS:
        raise ValueError(f"--deals {deals!r}: expected a whole number from 2 to {MAX_DEALS:,}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
        raise ValueError(f"--seed {seed!r}: expected a whole number from 0 to 2**63 - 1")
    policy, agent = _policy_of(spec)
    generator = torch.Generator().manual_seed(int(seed))
    with torch.inference_mode():
        data = collect_bid_values(policy, rules, deals, generator, torch.device("cpu"), progress=progress)
    values = data["values"][:, :BIDS].double().numpy()
    is_bid = ~np.isnan(values).all(1)                      # bidding turns (not blind-nil decisions)
    values, obs, mask = values[is_bid], data["obs"][is_bid].float(), data["mask"][is_bid]
    hands = _bidder_hands(data["deal"][is_bid], data["turn"][is_bid])
    bucket = np.array([potential_bucket(h) for h in hands], dtype=np.int64)
    with torch.inference_mode():
        logits = policy(obs, mask)[:, 52:52 + BIDS]
    own = torch.argmax(logits, 1).numpy()
    rows = np.arange(len(values))
    own_value = values[rows, own]
    by_bucket = []
    best_all = _best_bids(values, bucket, rows)
    for b in range(POTENTIAL_BUCKETS):
        here = rows[bucket == b]
        if not len(here):
            continue
        means = np.nanmean(values[here], axis=0)
        best = best_all[b]
        usual = int(np.bincount(own[here], minlength=BIDS).argmax())
        by_bucket.append({"potential": b, "hands": int(len(here)), "usual_bid": usual,
                          "usual_share": float((own[here] == usual).mean()), "best_bid": best,
                          "values": [None if np.isnan(v) else round(float(v), 2) for v in means],
                          "gain": _mean_interval(values[here, best] - own_value[here])})
    # Cross-fitted gain of bidding each bucket's best bid: chosen on one half, scored on the other.
    halves = (rows % 2 == 0, rows % 2 == 1)
    gain = np.empty(len(rows))
    for choose, score in (halves, halves[::-1]):
        best = _best_bids(values, bucket, rows[choose])
        pick = np.array([best.get(b, o) for b, o in zip(bucket[score], own[score])])
        gain[score] = values[rows[score], pick] - own_value[score]
    return {"agent": spec, "model": str(getattr(agent, "checkpoint", "")), "rules": str(rules), "deals": deals,
            "seed": seed, "bidding_turns": int(len(rows)), "distinct_own_bids": int(len(np.unique(own))),
            "distinct_best_bids": int(len(set(best_all.values()))), "buckets": by_bucket,
            "gain_of_best_bids": _mean_interval(gain),
            "note": "points per hand of the bidder's side minus the other side, the policy playing all four seats"}


def format_bid_value_map(result: dict) -> str:
    g = result["gain_of_best_bids"]
    lines = [f"bid values of {result['agent']} under its own play ({result['deals']} deals, {result['bidding_turns']} "
             f"bidding turns, {result['rules']} rules; points per hand, side minus side)",
             "potential  hands  its bid (share)  best bid  value by bid 1..6                              "
             "gain [95%]"]
    for row in result["buckets"]:
        vals = " ".join("   .  " if v is None else f"{v:+6.1f}" for v in row["values"][1:7])
        r = row["gain"]
        ci = "" if r["low"] is None else f"[{r['low']:+.1f}, {r['high']:+.1f}]"
        lines.append(f"{row['potential']:>9}  {row['hands']:>5}  {row['usual_bid']:>7} ({row['usual_share']:.2f})  "
                     f"{row['best_bid']:>8}  {vals}  {r['value']:+.1f} {ci}")
    lines.append(f"bidding each potential's best bid instead (cross-fitted): {g['value']:+.2f} "
                 f"[{g['low']:+.2f}, {g['high']:+.2f}] points per bidding turn; its bids: "
                 f"{result['distinct_own_bids']} distinct, the best bids: {result['distinct_best_bids']} distinct")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    from evaluation.cli_common import OneLineParser, add_progress_flags
    parser = OneLineParser(prog="spades-coop bid-values",
                                     description="Which bid pays, given the policy's own card play: every bid "
                                                 "played out on copies of each deal, grouped by the hand's trick "
                                                 "potential (train/bids/bid_value_map.py).")
    parser.add_argument("spec", metavar="SPEC", help="a neural spec: neural, neural_v1, neural_v2, neural:checkpoint=FILE, "
                                                     "neural:model=NAME")
    parser.add_argument("--deals", type=int, default=2048, help="deals (one bidding turn valued on each; default 2048)")
    parser.add_argument("--seed", type=int, default=0, help="the deals' seed")
    parser.add_argument("--json", metavar="FILE", help="write the result as JSON")
    add_progress_flags(parser)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    from evaluation.cli_common import check_output_file, progress_disabled
    from coop.common import write_json
    from agents.specs import AgentSpecError
    bars: list = []

    def progress(deals: int) -> None:          # the bar starts with the first deals, after the spec is checked
        if not bars:
            from tqdm import tqdm
            bars.append(tqdm(total=args.deals, desc="bid values", unit="deal", file=sys.stderr,
                             disable=progress_disabled(True)))
        bars[0].update(deals)

    try:
        if args.json:
            check_output_file(args.json, "--json")        # before the deals are played, not after
        result = bid_value_map(args.spec, deals=args.deals, seed=args.seed,
                               progress=None if args.no_progress else progress)
        for bar in bars:                # the bar ends before the table is printed
            bar.close()
        print(format_bid_value_map(result))
        if args.json:
            write_json(args.json, result, "--json")
    except (ValueError, AgentSpecError, OSError) as exc:
        print(f"spades-coop bid-values: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        for bar in bars:
            bar.close()
    return 0


__all__ = ["bid_value_map", "format_bid_value_map", "main"]
