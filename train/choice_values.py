"""What several agents' choices are worth on labelled decisions: ``python -m train.choice_values``.

    python -m train.choice_values runs/playout_labels --agents neural heuristic search --decisions 3000

Takes card decisions with values from ``spades-label`` folders (``--teacher playout``: each class
of equivalent cards valued by a play-out on the true deal; or a ``search`` teacher's means), asks
each agent what it would play there (from the stored observation and mask alone, as in a game),
and reports per agent the mean value of its choices, how often its choice is among the best
valued ones, and, paired with the first agent on the same decisions, the mean difference with
its 95% interval, overall, by trick position (leading, second, third, fourth) and by what nil is
at stake (the seat's own, its partner's, an opponent's, none). One value per
decision says little (the other hands are those of one deal); the paired differences over
thousands of decisions say which agent's card play those values prefer, without playing a
match. The decisions are a seeded random sample of the valued ones.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Optional, Sequence

import numpy as np
import torch

import agents as agent_registry
from train.evaluate import EvaluationError, mp_context, parse_agent_spec
from spades_env.observation import decode_observation, layout_for_size
from train.label import LabelError, load_labels


def sample_decisions(folders: str | Sequence[str], decisions: int, seed: int) -> dict[str, torch.Tensor]:
    """``decisions`` valued decisions drawn at random (seeded) from the label folders: their
    ``obs`` (float32), ``mask`` and ``values`` (float32, NaN where not valued)."""
    data = load_labels(folders)
    values = data["values"].float()
    valued = (~torch.isnan(values)).any(1).nonzero()[:, 0]
    if valued.numel() == 0:
        raise LabelError(f"{folders}: no valued decisions (label them with --teacher playout or a search teacher)")
    order = torch.randperm(valued.numel(), generator=torch.Generator().manual_seed(seed))
    rows = valued[order[:decisions]]
    return {"obs": data["obs"][rows].float(), "mask": data["mask"][rows], "values": values[rows]}


def agent_choices(spec: str, obs: torch.Tensor, mask: torch.Tensor) -> list[int]:
    """What the agent ``spec`` plays at each decision, from the observation and mask alone."""
    name, options = parse_agent_spec(spec)
    agent = agent_registry.make(name, **options)
    agent.reset(0)
    if hasattr(agent, "act_batch"):                 # the heuristic: all rows at once, the same choices
        return agent.act_batch(obs, mask.bool()).tolist()
    masks = mask.numpy().astype(np.int8)
    return [int(agent.act({"observation": obs[i].numpy(), "action_mask": masks[i]}, {})) for i in range(obs.shape[0])]


def _choices_of_chunk(task: tuple[str, torch.Tensor, torch.Tensor]) -> list[int]:
    torch.set_num_threads(1)
    return agent_choices(*task)


def choices(specs: Sequence[str], obs: torch.Tensor, mask: torch.Tensor, workers: int = 1) -> dict[str, torch.Tensor]:
    """Every agent's choices, the decisions split over ``workers`` processes."""
    out = {}
    for spec in specs:
        chunks = [(spec, o, m) for o, m in zip(obs.tensor_split(workers), mask.tensor_split(workers)) if o.shape[0]]
        if workers > 1:
            with mp_context().Pool(workers) as pool:
                parts = pool.map(_choices_of_chunk, chunks)
        else:
            parts = [agent_choices(*chunk) for chunk in chunks]
        out[spec] = torch.tensor([a for part in parts for a in part], dtype=torch.long)
    return out


def summarize(values: torch.Tensor, picks: dict[str, torch.Tensor]) -> list[dict]:
    """Per agent: mean value of its choices, share among the best, and the paired difference
    with the first agent (mean and 95% half-width)."""
    best = torch.nan_to_num(values, nan=-math.inf).max(1).values
    first = None
    rows = []
    for spec, pick in picks.items():
        chosen = values.gather(1, pick[:, None])[:, 0]
        if torch.isnan(chosen).any():
            raise ValueError(f"{spec}: chose an action without a value (illegal, or not valued by the labels)")
        row = {"agent": spec, "mean": float(chosen.mean()), "among_best": float((chosen == best).float().mean())}
        if first is None:
            first = chosen
        else:
            diff = (chosen - first).double()
            row["minus_first"] = float(diff.mean())
            row["half_width"] = float(1.96 * diff.std() / math.sqrt(diff.numel())) if diff.numel() > 1 else math.inf
            row["differs"] = float((diff != 0).float().mean())
        rows.append(row)
    return rows


def trick_positions(obs: torch.Tensor) -> torch.Tensor:
    """How many cards the current trick holds at each decision (0: the seat leads)."""
    block = layout_for_size(obs.shape[1]).obs_blocks["current_trick"].slice
    return obs[:, block].sum(1).round().long()


NIL_SITUATIONS = ("no nil at stake", "own nil", "partner's nil", "opponent's nil")


def nil_situations(obs: torch.Tensor) -> torch.Tensor:
    """Which nil is at stake at each decision (an index into :data:`NIL_SITUATIONS`): the seat's
    own intact nil (bid nil, no trick taken yet) first, then its partner's, then an opponent's,
    else none. The order is the priority a player gives them."""
    out = torch.zeros(obs.shape[0], dtype=torch.long)
    for i, row in enumerate(obs.numpy()):
        view = decode_observation(row)
        intact = [view.bids[s] == 0 and view.tricks_taken[s] == 0 for s in range(view.players)]
        partner = 2 if view.partnerships and view.players == 4 else None
        if intact[0]:
            out[i] = 1
        elif partner is not None and intact[partner]:
            out[i] = 2
        elif any(intact[s] for s in range(1, view.players) if s != partner):
            out[i] = 3
    return out


def by_group(values: torch.Tensor, picks: dict[str, torch.Tensor], groups: torch.Tensor) -> list[dict]:
    """:func:`summarize` for the decisions of each group (``groups``: one integer per decision)."""
    out = []
    for group in sorted(set(groups.tolist())):
        rows = groups == group
        summary = summarize(values[rows], {spec: pick[rows] for spec, pick in picks.items()})
        out.append({"group": group, "decisions": int(rows.sum()), "agents": summary})
    return out


def by_trick_position(values: torch.Tensor, picks: dict[str, torch.Tensor], positions: torch.Tensor) -> list[dict]:
    """:func:`summarize` for the decisions of each trick position (leading, second, ...)."""
    return [{"position": part["group"], **part} for part in by_group(values, picks, positions)]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.choice_values", description=__doc__.split("\n")[0])
    parser.add_argument("labels", nargs="+", help="folders written by spades-label with values")
    parser.add_argument("--agents", nargs="+", default=["neural", "heuristic"],
                        help="agent specs (NAME or NAME:key=value,...); the first is the reference")
    parser.add_argument("--decisions", type=int, default=10_000, help="valued decisions to sample")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--workers", type=int, default=1, help="processes")
    args = parser.parse_args(argv)
    if args.decisions < 1 or args.workers < 1:
        parser.error("--decisions and --workers must be at least 1")
    try:
        for spec in args.agents:
            parse_agent_spec(spec)
        sample = sample_decisions(args.labels, args.decisions, args.seed)
        picks = choices(args.agents, sample["obs"], sample["mask"], args.workers)
        rows = summarize(sample["values"], picks)
    except (EvaluationError, LabelError, FileNotFoundError, ValueError) as exc:
        print(f"choice_values: {exc}", file=sys.stderr)
        return 2
    n = sample["values"].shape[0]
    print(f"{n:,} valued decisions from {', '.join(args.labels)} (seed {args.seed})")
    print(f"{'agent':32} {'mean value':>10} {'among best':>10}   minus {args.agents[0]} (95% CI), share differing")
    for row in rows:
        paired = "" if "minus_first" not in row else (
            f"   {row['minus_first']:+.3f} +/- {row['half_width']:.3f}, {100 * row['differs']:.1f}%")
        print(f"{row['agent']:32} {row['mean']:>+10.3f} {100 * row['among_best']:>9.1f}%{paired}")
    if len(args.agents) > 1:
        names = ["leading", "second", "third", "fourth"]
        breakdowns = (("trick position", trick_positions(sample["obs"]),
                       lambda g: names[g] if g < len(names) else f"card {g + 1}"),
                      ("nil at stake", nil_situations(sample["obs"]), lambda g: NIL_SITUATIONS[g]))
        for title, groups, label_of in breakdowns:
            print(f"by {title}, minus {args.agents[0]} (95% CI):")
            for part in by_group(sample["values"], picks, groups):
                cells = [f"{row['agent']} {row['minus_first']:+.3f} +/- {row['half_width']:.3f}"
                         for row in part["agents"][1:]]
                print(f"  {label_of(part['group']):15} ({part['decisions']:,} decisions): " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
