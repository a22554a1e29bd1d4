"""Diversity from earlier policies (``diversity_from``, ``diversity_coef``): a population that
spreads out, in the style of Maximum Entropy Population training (MEP; Zhao et al., AAAI 2023).

MEP pays each member of a population the entropy of the population's mean policy, so members
are pushed towards actions the others rarely take. Here the population is grown one member at a
time: the earlier members are frozen policies (checkpoints or the zoo's neural partners), and the
learner is paid, at each of its decisions, ``diversity_coef`` points times the surprise of its
action under their mean policy,

    bonus = diversity_coef * min(-log mean_k pi_k(a | s), MAX_SURPRISE)

(in nats; a forced move earns nothing, an action every earlier member takes earns little). Trained
this way from scratch, a second member is driven away from the first where the game leaves it a
choice, a third from both, while the game's own reward keeps each one playing to score. Only the
learner's decisions are paid; evaluation never sees the bonus. Under ``bid_learning:
counterfactual`` the bids are fitted to their counterfactual values, not to the rewards, so there
the bonus moves the card play only. Held-out partners cannot be used
(the same guard as ``partner_population``: by the model's bytes, whatever the file is called).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Sequence

import torch

MAX_SURPRISE = math.log(1000.0)     # nats: an action the others give 1 in 1000 or less is paid as 1 in 1000
MAX_COEF = 100.0                    # points per nat


class DiversityError(ValueError):
    """A ``diversity_from`` entry that is not a usable policy."""


def check_diversity(entries: object, coef: object) -> None:
    """Types and ranges (no files read): a :class:`DiversityError` naming what is wrong."""
    if not isinstance(entries, list) or not all(isinstance(e, str) and e.strip() for e in entries):
        raise DiversityError(f"diversity_from={entries!r}: expected a list of checkpoint paths or zoo partner names")
    if isinstance(coef, bool) or not isinstance(coef, (int, float)) or not 0 <= coef <= MAX_COEF:
        raise DiversityError(f"diversity_coef={coef!r}: expected points per nat between 0 and {MAX_COEF:g}")
    if bool(entries) != bool(coef):
        raise DiversityError("diversity_from and diversity_coef go together: name the earlier policies and a "
                             "positive diversity_coef, or neither")


def _policy_file(entry: str, index: int, allow_held_out: bool) -> Path:
    from coop.partners import zoo
    from coop.partners.held_out import INIT_SPLITS, is_path_entry

    what = f"diversity_from[{index}]={entry!r}"
    if is_path_entry(entry):
        path = Path(entry)
        if not path.is_file():
            raise DiversityError(f"{what}: no such file (a checkpoint or an exported model.pt)")
    else:
        try:
            partner = zoo.partner(entry, purpose="evaluation")
        except KeyError:
            raise DiversityError(f"{what}: neither a checkpoint path nor a zoo partner") from None
        path = zoo.model_file(partner.spec)
        if path is None:
            raise DiversityError(f"{what}: the zoo partner {entry!r} ({partner.spec}) is not a neural model")
    if not allow_held_out:
        try:
            zoo.refuse_for_training(what, path=path, splits=INIT_SPLITS)
        except zoo.HeldOutError as exc:
            raise DiversityError(str(exc)) from None
    return path


class Diversity:
    """The frozen earlier policies and the bonus they pay (:meth:`rewards`, reward units)."""

    def __init__(self, entries: Sequence[str], coef: float, reward_scale: float, obs_size: int,
                 device: torch.device, allow_held_out: bool = False) -> None:
        from agents.neural import ModelError, policy_from_checkpoint, read_checkpoint

        check_diversity(list(entries), coef)
        self.scale = float(coef) * reward_scale
        self.policies = []
        for i, entry in enumerate(entries):
            path = _policy_file(entry, i, allow_held_out)
            try:
                policy, _ = policy_from_checkpoint(read_checkpoint(path), str(path))
            except ModelError as exc:
                raise DiversityError(f"diversity_from[{i}]={entry!r}: {exc}") from None
            if policy.arch["obs_size"] != obs_size:
                raise DiversityError(f"diversity_from[{i}]={entry!r}: a policy for {policy.arch['obs_size']} observation "
                                     f"features; this run's observations have {obs_size}")
            self.policies.append(policy.to(device).eval())

    @torch.no_grad()
    def mean_probability(self, obs: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """(n,) the earlier policies' mean probability of ``actions``."""
        probs = [torch.softmax(p(obs, mask), 1).gather(1, actions[:, None])[:, 0] for p in self.policies]
        return torch.stack(probs).mean(0)

    @torch.no_grad()
    def rewards(self, obs: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """(B,) the bonus for the decisions in ``rows`` ((B,) bool), 0 elsewhere."""
        out = torch.zeros(actions.shape[0], dtype=torch.float32, device=actions.device)
        idx = torch.nonzero(rows)[:, 0]
        if idx.numel():
            p = self.mean_probability(obs[idx], mask[idx], actions[idx])
            out[idx] = self.scale * (-torch.log(p.clamp_min(1e-30))).clamp(max=MAX_SURPRISE)
        return out


__all__ = ["Diversity", "DiversityError", "MAX_SURPRISE", "check_diversity"]
