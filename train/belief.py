"""Train a policy's belief: which other seat holds each unseen card, learnt from labelled deals.

    python -m train.belief agents/models/neural_standard.pt runs/playout_labels_onpolicy \\
        --hidden 256 --out runs/belief/model.pt

The folders are ``spades-label`` output: every labelled decision keeps the deal's index and the
seat, so the true hands are known (``make_deal`` with the labelling seed; hands from 0-0 only,
since blind nil's card passing would move cards). The model's policy is grown into one with a
:class:`agents.networks.BeliefNet` of width ``--hidden`` (its logits unchanged: nothing reads the
belief's outputs yet) and the belief alone is fitted by cross-entropy on the unseen cards'
owners, a tenth of the deals held out; the written model then starts a fit that reads the belief
(``spades-train`` with ``belief_hidden`` and ``init_from`` this model).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import torch

from agents.neural import ModelError, policy_from_checkpoint, read_checkpoint, save_model
from agents.networks import NUM_CARDS, PolicyNet
from spades_env.observation import layout_for_size
from train.evaluate import derive_seed, make_deal


class BeliefError(ValueError):
    """Bad input to the belief trainer (a folder that cannot be used, a bad size)."""


def owners_of_unseen(folder: str | Path) -> dict[str, torch.Tensor]:
    """A labels folder's observations (float16), deal indices and, per decision and card, the
    relative seat (1..3) holding each card the deciding seat has not seen, as a class 0..2
    (-1 for seen cards). Checks that every labelled hand agrees with the regenerated deal."""
    from train.label import load_labels
    folder = Path(folder)
    meta = folder / "labels.json"
    if not meta.is_file():
        raise BeliefError(f"{folder}: no labels.json (expected a folder written by spades-label)")
    settings = json.loads(meta.read_text())
    if settings.get("varied_start", 0):
        raise BeliefError(f"{folder}: labelled with --varied-start, where blind nil's card passing moves cards "
                          "between hands; the owners are known only for hands from 0-0")
    data = load_labels(folder)
    obs = data["obs"]
    blocks = layout_for_size(obs.shape[1]).obs_blocks
    if layout_for_size(obs.shape[1]).n != 4:
        raise BeliefError(f"{folder}: the belief needs four-player partnership labels")
    deals = data["deal"].long()
    owner_of = torch.full((int(deals.max()) + 1, NUM_CARDS), -1, dtype=torch.long)
    for index in deals.unique().tolist():
        hands, _ = make_deal(derive_seed("spades-label", settings["seed"]), index, settings["rules"])
        for seat, hand in enumerate(hands):
            owner_of[index, hand] = seat
    relative = (owner_of[deals] - data["seat"].long()[:, None]) % 4             # 0: the deciding seat
    held = obs[:, blocks["hand"].slice] > 0.5
    gone = (obs[:, blocks["played"].slice].reshape(-1, 4, NUM_CARDS) > 0.5).any(1)
    in_trick = (obs[:, blocks["current_trick"].slice].reshape(-1, 4, NUM_CARDS) > 0.5).any(1)
    unseen = ~(held | gone | in_trick)
    if bool((held & (relative != 0)).any()) or bool((unseen & (relative == 0)).any()):
        raise BeliefError(f"{folder}: the observations do not match the deals regenerated from its seed "
                          f"{settings['seed']} (labels from passed cards, or another labelling seed?)")
    owner = torch.where(unseen, relative - 1, -1).to(torch.int8)
    return {"obs": obs, "deal": deals, "owner": owner}


def belief_loss(policy: PolicyNet, obs: torch.Tensor, owner: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed cross-entropy (nats) and correct top guesses over the unseen cards of a batch."""
    logits = policy.belief_logits(obs.float())
    owner = owner.long()
    unseen = owner >= 0
    nll = -torch.log_softmax(logits, 2).gather(2, owner.clamp(min=0)[:, :, None])[:, :, 0]
    hits = logits.argmax(2) == owner
    return (nll * unseen).sum(), (hits & unseen).sum()


def fit_belief(policy: PolicyNet, data: dict[str, torch.Tensor], epochs: int = 2, batch: int = 2048,
               learning_rate: float = 1e-3, seed: int = 0, log=print) -> dict[str, float]:
    """Fit ``policy.belief`` (only) to ``data`` (:func:`owners_of_unseen`); a tenth of the deals
    (index ending in 9) is held out. Returns the held-out cross-entropy per unseen card (nats),
    the share of unseen cards whose owner is the top guess, and the cross-entropy of a uniform
    guess among the three other seats (log 3) for comparison."""
    if policy.belief is None:
        raise BeliefError("the policy has no belief to fit (belief_hidden = 0)")
    held_out = data["deal"] % 10 == 9
    train_rows, test_rows = (~held_out).nonzero()[:, 0], held_out.nonzero()[:, 0]
    if not train_rows.numel() or not test_rows.numel():
        raise BeliefError("too few deals to hold a tenth out (need deal indices ending in 9 and others)")
    params = list(policy.belief.parameters())
    optimizer = torch.optim.Adam(params, lr=learning_rate)
    steps = epochs * -(-train_rows.numel() // batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: 1.0 - i / steps)
    generator = torch.Generator().manual_seed(seed)

    def held_out_fit() -> tuple[float, float]:
        with torch.no_grad():
            total, hits, cards = 0.0, 0, 0
            for rows in test_rows.split(8192):
                loss, hit = belief_loss(policy, data["obs"][rows], data["owner"][rows])
                total, hits, cards = total + float(loss), hits + int(hit), cards + int((data["owner"][rows] >= 0).sum())
        return total / cards, hits / cards

    before = held_out_fit()
    log(f"belief: {train_rows.numel():,} positions to fit, {test_rows.numel():,} held out; held-out cross-entropy "
        f"{before[0]:.4f} nats per unseen card before (uniform over three seats: {math.log(3):.4f})")
    started = time.time()
    for epoch in range(epochs):
        order = train_rows[torch.randperm(train_rows.numel(), generator=generator)]
        for first in range(0, order.numel(), batch):
            rows = order[first:first + batch]
            loss, _ = belief_loss(policy, data["obs"][rows], data["owner"][rows])
            loss = loss / (data["owner"][rows] >= 0).sum().clamp(min=1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
        entropy, accuracy = held_out_fit()
        log(f"belief epoch {epoch + 1}/{epochs}: held-out cross-entropy {entropy:.4f} nats per unseen card, "
            f"owner guessed for {100 * accuracy:.1f}% ({time.time() - started:.0f} s)")
    return {"cross_entropy": entropy, "accuracy": accuracy, "uniform": math.log(3)}


def train_belief(model: str | Path, folders: Sequence[str | Path], out: str | Path, hidden: int = 256,
                 epochs: int = 2, seed: int = 0, batch: int = 2048, learning_rate: float = 1e-3, log=print) -> Path:
    """Grow ``model``'s policy a belief of width ``hidden``, fit it on ``folders`` and write the
    model (a model file, as ``train.export`` writes; its policy's logits unchanged until a fit
    reads the belief) to ``out``."""
    for name, value in (("hidden", hidden), ("epochs", epochs), ("batch", batch)):
        if not isinstance(value, int) or value < 1:
            raise BeliefError(f"{name}={value!r}: expected a positive integer")
    if not learning_rate > 0:
        raise BeliefError(f"learning_rate={learning_rate!r}: expected a positive number")
    data = read_checkpoint(model)
    start, _ = policy_from_checkpoint(data, str(model))
    if not start.arch.get("card_features"):
        raise BeliefError(f"{model}: the belief needs a policy with card_features")
    if start.arch.get("belief_hidden", hidden) != hidden:
        raise BeliefError(f"{model}: its belief is {start.arch['belief_hidden']} wide, not --hidden {hidden} "
                          "(refit it at its own width, or start from a model without a belief)")
    torch.manual_seed(seed)
    arch = {**start.arch, "belief_hidden": hidden}
    policy = PolicyNet(**arch)
    if start.arch.get("belief_hidden"):
        policy.load_state_dict(start.state_dict())
    else:
        policy.load_grown(start.state_dict(), start.arch)
    parts = [owners_of_unseen(folder) for folder in folders]
    offset, deals = 0, []
    for part in parts:                       # deal indices made distinct across folders
        deals.append(part["deal"] + offset)
        offset += 10 * (int(part["deal"].max()) // 10 + 1)              # keeps each deal's last digit
    merged = {"obs": torch.cat([p["obs"] for p in parts]), "owner": torch.cat([p["owner"] for p in parts]),
              "deal": torch.cat(deals)}
    report = fit_belief(policy, merged, epochs=epochs, batch=batch, learning_rate=learning_rate, seed=seed, log=log)
    policy.eval()
    provenance = {**data.get("provenance", {}),
                  "belief": {"from": str(model), "folders": [str(f) for f in folders], **report}}
    out = save_model(policy, out, data.get("rules"), provenance)
    log(f"wrote {out}")
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.belief", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a neural model or spades-train checkpoint with card_features")
    parser.add_argument("folders", nargs="+", help="spades-label folders (hands from 0-0)")
    parser.add_argument("--out", required=True, help="where to write the model with its belief")
    parser.add_argument("--hidden", type=int, default=256, help="width of the belief network (default 256)")
    parser.add_argument("--epochs", type=int, default=2, help="passes over the positions (default 2)")
    parser.add_argument("--batch", type=int, default=2048, help="positions per step (default 2048)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's step size, decayed linearly "
                        "to 0 (default 0.001)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        train_belief(args.model, args.folders, args.out, args.hidden, args.epochs, args.seed, args.batch,
                     args.learning_rate, log=lambda line: print(line, flush=True))
    except (BeliefError, ModelError, FileNotFoundError) as exc:
        print(f"train.belief: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
