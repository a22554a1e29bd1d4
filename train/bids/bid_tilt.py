"""Tilt a policy's bids upwards by a fixed amount per trick, inside its network.

    python -m train.bids.bid_tilt agents/models/neural_v3.pt runs/tilted.pt --tilt 1.4

Why: the policy shipped on 2026-11-27 made 94% of its contracts and took 1.5 bags a hand against the
heuristic's 1.07 (docs/shipped_model.md): its bids sit below what its card play takes. Adding
``tilt * (b - 1)`` to the logit of every bid ``b`` from 1 to 13 (nil, blind nil, "look" and bid 1
keep theirs) makes the greedy policy bid ``b + 1`` instead of ``b`` wherever it already gives
``b + 1`` at least ``exp(-tilt)`` times the probability of ``b``: the raises go to the hands the
policy is unsure about. The change is made to the bias of the bidding head's output layer, so the
result is the same network, as fast, and it plays exactly as ``python -m train.experimental.probes bid-tilt``
measured it (a test checks that). The model's provenance records the tilt and the source file's hash.

``--lead-tilt S:T`` and ``--trail-tilt S:T`` add a tilt that depends on the score, which no bias can
hold: the network's ``score_tilts`` rule (:class:`agents.networks.PolicyNet`) adds ``T * (b - 1)``
where the side leads with at least ``S`` points (or the other side does), as ``python -m
train.experimental.probes bid-tilt --tilt 0 --lead-tilt S:T`` plays it.
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.bids.bid_tilt", "train.bids.bid_tilt:main"))

import argparse
import math
import sys
from pathlib import Path
from typing import Optional

import torch

from agents.networks import checked_score_tilts
from agents.neural import ModelError, read_checkpoint
from spades_env.files import MAX_MODEL_BYTES, check_output, file_sha256, save_torch
from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, NIL_ACTION

MAX_TILT = 10.0          # beyond this every hand bids 13: surely a typo


def threshold_and_tilt(text: str) -> tuple[int, float]:
    """A command line's ``S:T`` (an integer threshold, a tilt) as ``(S, T)``; ValueError otherwise."""
    at, value = text.split(":")
    return int(at), float(value)


def tilt_bids(source: str | Path, out: str | Path, tilt: float, blind_nil: float = 0.0, nil: float = 0.0,
              score_tilts: Optional[dict] = None) -> Path:
    """Write ``source``'s policy with ``tilt * (b - 1)`` added to the bias of each bid ``b`` of 1..13,
    and ``blind_nil`` to the blind-nil action's (the greedy policy then bids blind nil where its
    probability of it was above ``1 / (1 + exp(blind_nil))``), and ``nil`` to nil's; ``score_tilts``
    ({"lead": [S, T], "trail": [S, T]}) becomes the network's rule of that name (replacing the
    source's, which is kept when none is given)."""
    for name, value in (("tilt", tilt), ("blind_nil", blind_nil), ("nil", nil)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > MAX_TILT:
            raise ValueError(f"{name} {value!r}: expected a finite number from -{MAX_TILT:g} to {MAX_TILT:g} "
                             "(a log-probability)")
    out = check_output(out, "out", inputs=[source])       # before any work: never a device, a folder, the source
    source = Path(source)
    data = read_checkpoint(source)
    if data.get("format") != "spades-neural-policy":
        raise ModelError(f"{source}: expected an exported model (python -m train.labelling.export makes one from a checkpoint)")
    arch = dict(data["arch"])
    if score_tilts:
        arch["score_tilts"] = checked_score_tilts(score_tilts)
    policy = {name: tensor.clone() for name, tensor in data["policy"].items()}
    bias_names = sorted(name for name in policy if name.startswith("bid_head.") and name.endswith(".bias"))
    if not bias_names:
        raise ModelError(f"{source}: no bidding head in the policy")
    bias = policy[bias_names[-1]]                         # the output layer: index = action - BID_ACTION_BASE
    bids = torch.arange(1, 14)
    bias[bids] += torch.as_tensor(tilt, dtype=bias.dtype) * (bids - 1).to(bias.dtype)
    bias[BLIND_NIL_ACTION - BID_ACTION_BASE] += blind_nil
    bias[NIL_ACTION - BID_ACTION_BASE] += nil
    provenance = dict(data.get("provenance") or {})
    record = {"tilt": float(tilt), "blind_nil": float(blind_nil), "nil": float(nil),
              "score_tilts": arch.get("score_tilts"), "source": source.name,
              "source_sha256": file_sha256(source, "source", MAX_MODEL_BYTES),
              "first_bid_action": BID_ACTION_BASE, "tool": "python -m train.bids.bid_tilt"}
    if "bid_tilt" in provenance:                          # a model tilted again keeps the earlier record
        record["earlier"] = provenance["bid_tilt"]
    provenance["bid_tilt"] = record
    return save_torch({**data, "arch": arch, "policy": policy, "provenance": provenance}, out, "out")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.bids.bid_tilt", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="an exported model (agents/models/*.pt, or python -m train.labelling.export's output)")
    parser.add_argument("out", help="where to write the tilted model")
    parser.add_argument("--tilt", type=float, required=True,
                        help="log-probability added per trick of bid above 1 (1.4: the shipped tilt)")
    parser.add_argument("--blind-nil", type=float, default=0.0,
                        help="log-odds added to blind nil against looking (default 0)")
    parser.add_argument("--nil", type=float, default=0.0, help="log-odds added to nil (default 0)")
    parser.add_argument("--lead-tilt", metavar="S:T", help="a tilt T more per trick where the side leads with S points or more")
    parser.add_argument("--trail-tilt", metavar="S:T", help="a tilt T more per trick where the other side leads with S or more")
    args = parser.parse_args(argv)
    score_tilts = {}
    for kind, text in (("lead", args.lead_tilt), ("trail", args.trail_tilt)):
        if text is not None:
            try:
                score_tilts[kind] = list(threshold_and_tilt(text))
            except ValueError:
                parser.error(f"--{kind}-tilt {text!r}: expected S:T, a score and a tilt (e.g. 350:-0.7)")
    try:
        path = tilt_bids(args.source, args.out, args.tilt, args.blind_nil, args.nil, score_tilts or None)
    except (ModelError, ValueError, FileNotFoundError) as exc:
        print(f"bid_tilt: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} (bids tilted by {args.tilt:g} per trick)")
    return 0

