"""The PPO update of ``spades-train``: advantages from a rollout, then ``epochs`` passes of clipped
PPO over the learner's decisions in minibatches. The loss is :func:`ppo_loss`, in one place:

    ratio         = pi(a | s) / pi_old(a | s)
    policy loss   = mean(max(-A * ratio, -A * clip(ratio, 1 - clip, 1 + clip)))   (A normalised per minibatch,
                    bids and cards apart with bid_advantage_norm: separate; the bids' A with their own
                    lambda, bid_gae_lambda; with bid_learning: values the bids are not in the policy
                    loss: their logits x bid_temperature are fitted to their hands' Monte-Carlo returns)
    value loss    = 0.5 * mean((V(s) - return)^2)
    loss          = value_coef * value loss + policy loss - entropy_coef * mean(entropy)
                    (with bid_entropy_coef set, bidding decisions weigh their entropy by it instead;
                    with message_information_coef, minus that times the messages' information about
                    the observation: message_information)

(the critic warm-up, ``critic_warmup_updates``, keeps only the value term). The inputs are
explicit: the networks, their optimizer, the rollout and its bootstrap values, the config, the
update's index (for the learning-rate schedule) and the random stream of the minibatch order.
With ``bid_learning: counterfactual`` the bidding head is then fitted to the valued bids of the
latest rollouts (:func:`fit_bid_values`, train/bids/bid_counterfactual.py).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from agents.networks import NUM_CARDS, masked_entropy
from spades_env.game import BID_ACTION_BASE, NUM_ACTIONS

from train.bids.bid_counterfactual import NUM_BIDS
from train.ppo.rollout import Rollout, critic_input, seat_advantages
from train.ppo.schedules import learning_rate_at


@dataclass
class LossParts:
    """One minibatch's loss and what it is made of (for the metrics)."""

    loss: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor            # per decision
    ratio: torch.Tensor
    log_ratio: torch.Tensor


def learner_precision(cfg: Any, device: torch.device):
    """bfloat16 autocast with ``learn_precision: bfloat16``, else nothing."""
    if cfg.learn_precision == "bfloat16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def learner_logits(policy, obs: torch.Tensor, mask: torch.Tensor, cfg: Any, device: torch.device) -> torch.Tensor:
    """The policy's logits for learning: the trunk in the learner's precision, the heads in
    float32 (bfloat16 logits would blur the PPO ratios by a few percent)."""
    if cfg.learn_precision == "float32":
        return policy(obs, mask)
    with learner_precision(cfg, device):
        trunk, per_card = policy.embed(obs)
    return policy.logits_from(obs, trunk.float(), None if per_card is None else per_card.float(), mask)


def ppo_loss(policy, critic, mb: dict, cfg: Any, critic_only: bool, device: torch.device) -> LossParts:
    """The clipped PPO loss of one minibatch ``mb`` (flat tensors: obs, mask, action, logp,
    advantage, ret, and state for a central critic); see the module doc."""
    obs = mb["obs"]
    logits = learner_logits(policy, obs, mb["mask"], cfg, device)
    logp_all = F.log_softmax(logits, 1)
    logp = logp_all.gather(1, mb["action"][:, None])[:, 0]
    log_ratio = logp - mb["logp"]
    bid_learning = getattr(cfg, "bid_learning", "ppo")
    bids_apart = bid_learning in ("values", "counterfactual")
    if bids_apart:            # the bids are fitted as values: no ratio, no clipped gradient for them
        fitted = fitted_as_values(mb["action"], bid_learning)
        log_ratio = log_ratio.masked_fill(fitted, 0.0)
    ratio = log_ratio.exp()
    adv = normalised_advantages(mb["advantage"], mb["action"], getattr(cfg, "bid_advantage_norm", "joint"))
    surrogate = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip, 1 + cfg.clip))
    entropy = masked_entropy(logp_all, torch.softmax(logits, 1))
    if bids_apart:
        rest = ~fitted                        # the cards, and with counterfactual bids the blind-nil decision
        policy_loss = surrogate[rest].mean() if bool(rest.any()) else surrogate.sum() * 0.0
        if bid_learning == "values":          # counterfactual: fitted apart (fit_bid_values)
            policy_loss = policy_loss + cfg.bid_value_coef * bid_value_loss(logits, mb, cfg)
        entropy_term = entropy_bonus(entropy[rest], mb["action"][rest], cfg) if bool(rest.any()) else 0.0
    else:
        policy_loss = surrogate.mean()
        entropy_term = entropy_bonus(entropy, mb["action"], cfg)
    with learner_precision(cfg, device):
        value = critic(critic_input(obs, mb.get("state")))
    value = value.float()
    value_loss = 0.5 * (value - mb["ret"]).pow(2).mean()
    loss = cfg.value_coef * value_loss
    if not critic_only:
        loss = loss + policy_loss - entropy_term
        coef = getattr(cfg, "message_information_coef", 0.0)
        if coef > 0:
            loss = loss - coef * message_information(policy, obs, mb["mask"], logits, mb["action"], cfg, device)
    return LossParts(loss, policy_loss, value_loss, entropy, ratio, log_ratio)


def message_information(policy, obs: torch.Tensor, mask: torch.Tensor, logits: torch.Tensor, action: torch.Tensor,
                        cfg: Any, device: torch.device, views: int = 4) -> torch.Tensor:
    """``message_information_coef``'s term (positive signalling, Eccles et al. 2019, about the
    hand): over the minibatch's message decisions (action ids from 68), the mutual information in
    nats between the sender's hand and its message, ``mean_i KL(p(. | hand_i) || p(.))``, what
    ``message_information_hand`` measures. ``p(. | hand_i)`` is the policy's message distribution
    for hand i averaged over its own view and ``views`` other decisions' views (everything but the
    hand block: seat, dealer, the messages sent before) with hand i in place of theirs; ``p(.)`` is
    the minibatch's mean. A message that depends on the seat or the messages before it but not on
    the hand earns 0, as does one that depends on nothing. The minibatch is in random order (PPO's
    draw), so the views shifted in are other decisions' at random. Zero (with a gradient) in a
    minibatch without two message decisions."""
    from spades_env.observation import layout_for_size

    rows = torch.nonzero(action >= NUM_ACTIONS)[:, 0]
    n = rows.numel()
    if n < 2:
        return logits.sum() * 0.0
    hand = layout_for_size(obs.shape[1], signals=mask.shape[1] - NUM_ACTIONS).obs_blocks["hand"].slice
    seen, legal = obs[rows], mask[rows]
    probs = [torch.softmax(logits[rows, NUM_ACTIONS:].float(), 1)]      # every message is legal when one is
    marginal = probs[0].mean(0)
    stride = max(1, n // (views + 1))
    for k in range(1, min(views, n - 1) + 1):
        other = torch.roll(seen, k * stride, 0)
        other[:, hand] = seen[:, hand]                                # another decision's view, this hand
        probs.append(torch.softmax(learner_logits(policy, other, torch.roll(legal, k * stride, 0), cfg,
                                                  device)[:, NUM_ACTIONS:].float(), 1))
    given_hand = torch.stack(probs).mean(0)
    log_ratio = torch.log(given_hand.clamp(min=1e-12)) - torch.log(marginal.clamp(min=1e-12))
    return (given_hand * log_ratio).sum(1).mean()


def fitted_as_values(action: torch.Tensor, bid_learning: str) -> torch.Tensor:
    """The decisions PPO's clipped loss leaves to a value fit: with ``values`` every decision from
    the bidding head (the bids and the blind-nil choice, each fitted to its Monte-Carlo return);
    with ``counterfactual`` only the bids nil..13, the ones the counterfactual values cover. The
    blind-nil choice (blind nil or look) then stays with PPO: left out of both, its logits were
    trained by nothing and drifted with the bids' fit (one from-scratch run bid blind nil on most
    of its offers and kept none). Messages (``signals``, ids from 68) always stay with PPO: they
    earn nothing themselves, their worth is what the partner makes of them."""
    if bid_learning == "counterfactual":
        return (action >= BID_ACTION_BASE) & (action < BID_ACTION_BASE + NUM_BIDS)
    return (action >= NUM_CARDS) & (action < NUM_ACTIONS)


def bid_value_loss(logits: torch.Tensor, mb: dict, cfg: Any) -> torch.Tensor:
    """``bid_learning: values``: half the mean squared error between the chosen bids' values
    (logit x temperature, in reward units) and their hands' returns ``ret`` (Monte-Carlo: the
    bids' lambda is 1). Zero (with a gradient) in a minibatch without bids. Messages are not bids."""
    is_bid = (mb["action"] >= NUM_CARDS) & (mb["action"] < NUM_ACTIONS)
    if not bool(is_bid.any()):
        return logits.sum() * 0.0
    temperature = cfg.bid_temperature * cfg.reward_scale
    value = logits[is_bid].gather(1, mb["action"][is_bid][:, None])[:, 0] * temperature
    return 0.5 * (value - mb["ret"][is_bid]).pow(2).mean()


def fit_bid_values(policy, optimizer: torch.optim.Optimizer, records, cfg: Any, generator: torch.Generator,
                   device: torch.device) -> dict:
    """``bid_learning: counterfactual``: ``bid_fit_passes`` passes over the valued bids ``records``
    (observation, mask, (n, 14) values with nan where illegal; train.bids.bid_counterfactual) fitting
    the bidding logits x temperature to every legal bid's value by squared error, with its own
    ``optimizer`` (bid_value_learning_rate: the values must reach tens of logits)."""
    obs, mask, target = records
    n = obs.shape[0]
    temperature = cfg.bid_temperature * cfg.reward_scale
    losses = []
    params = list(policy.parameters())
    size = cfg.bid_fit_minibatch
    for _ in range(cfg.bid_fit_passes):
        order = torch.randperm(n, generator=generator, device=device)
        for start in range(0, n, size):
            rows = order[start:start + size]
            logits = learner_logits(policy, obs[rows], mask[rows], cfg, device)
            value = logits[:, BID_ACTION_BASE:BID_ACTION_BASE + target.shape[1]] * temperature
            legal = ~torch.isnan(target[rows])
            loss = cfg.bid_value_coef * 0.5 * (value[legal] - target[rows][legal]).pow(2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            losses.append(loss.detach())          # read once at the end: no host sync a step on a GPU
    return {"loss__bid_values": float(torch.stack(losses).mean())} if losses else {}


def normalised_advantages(adv: torch.Tensor, action: torch.Tensor, how: str = "joint") -> torch.Tensor:
    """A minibatch's advantages over their spread: all together ('joint'), or the bidding
    decisions and the card decisions each by their own mean and spread ('separate': a hand has
    one bid and 13 cards, whose advantages need not share a scale)."""
    if how == "joint":
        return (adv - adv.mean()) / (adv.std() + 1e-8)
    out = torch.empty_like(adv)
    is_bid = action >= NUM_CARDS
    for rows in (is_bid, ~is_bid):
        part = adv[rows]
        if part.numel() == 1:
            out[rows] = 0.0
        elif part.numel():
            out[rows] = (part - part.mean()) / (part.std() + 1e-8)
    return out


def entropy_bonus(entropy: torch.Tensor, action: torch.Tensor, cfg: Any) -> torch.Tensor:
    """``entropy_coef`` times the mean entropy; with ``bid_entropy_coef`` set, bidding decisions
    (action ids from 52) take that weight instead. From scratch the bidding head settles on one bid
    for every hand within about a million decisions (the cards are played badly, so the lowest safe
    bid pays); a larger bonus on the bids alone keeps them exploring while the play improves."""
    bid_coef = getattr(cfg, "bid_entropy_coef", None)
    if bid_coef is None:
        return cfg.entropy_coef * entropy.mean()
    weight = torch.where(action >= NUM_CARDS, float(bid_coef), float(cfg.entropy_coef))
    return (weight * entropy).mean()


@contextlib.contextmanager
def policy_parts_only(policy, part: str):
    """Within it, the policy's weights outside ``part`` ('all', 'cards', 'bids', 'nil_defence') take no
    gradient, so PPO's steps leave them as they are (Adam skips weights without a gradient)."""
    keep = {id(p) for p in policy.part_parameters(part)}
    frozen = [p for p in policy.parameters() if id(p) not in keep]
    for p in frozen:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in frozen:
            p.requires_grad_(True)


def ppo_update(policy, critic, optimizer: torch.optim.Optimizer, buf: Rollout, bootstrap: torch.Tensor, cfg: Any,
               update: int, generator: torch.Generator, device: torch.device, augment=None,
               bid_records=None, bid_optimizer=None) -> dict:
    """One update from the rollout ``buf`` (``bootstrap``: (B, 4) values where it stops);
    ``update`` is the number of updates made before this one; ``augment`` (symmetry_augment)
    maps the learner's flat batch before the first gradient step. Returns the metrics' loss columns."""
    advantages = seat_advantages(buf.reward, buf.done, buf.seat, buf.value, bootstrap, cfg.gamma, cfg.gae_lambda)
    bid_lambda = 1.0 if getattr(cfg, "bid_learning", "ppo") == "values" else getattr(cfg, "bid_gae_lambda", None)
    if bid_lambda is not None and bid_lambda != cfg.gae_lambda:
        # the bidding decisions' advantages along the same chains with their own lambda
        bid_advantages = seat_advantages(buf.reward, buf.done, buf.seat, buf.value, bootstrap, cfg.gamma, bid_lambda)
        advantages = torch.where(buf.action >= NUM_CARDS, bid_advantages, advantages)
    returns = advantages + buf.value
    data = buf.flat(buf.learner, advantage=advantages, ret=returns)
    if augment is not None:
        data = augment(data)
    n = data["action"].shape[0]
    if n == 0:
        return {}
    for group in optimizer.param_groups:        # the schedule (train/ppo/schedules.py): a function of update
        group["lr"] = learning_rate_at(cfg, update)
    stats: dict[str, list[float]] = {k: [] for k in ("policy", "value", "entropy_bid", "entropy_card",
                                                      "approx_kl", "clip_fraction")}
    params = list(policy.parameters()) + list(critic.parameters())
    critic_only = update < cfg.critic_warmup_updates
    with policy_parts_only(policy, cfg.policy_parts):
        _epochs(policy, critic, optimizer, data, n, params, critic_only, cfg, generator, device, stats)
    out = {f"loss__{k}": sum(v) / len(v) for k, v in stats.items() if v}
    if bid_records is not None and not critic_only and cfg.policy_parts in ("all", "bids"):
        with policy_parts_only(policy, cfg.policy_parts):
            out.update(fit_bid_values(policy, bid_optimizer, bid_records, cfg, generator, device))
    with torch.no_grad():
        var = data["ret"].var()
        out["loss__explained_variance"] = float(1 - (data["ret"] - data["value"]).var() / var) if var > 0 else 0.0
    out["learning_rate"] = optimizer.param_groups[0]["lr"]
    return out


def _epochs(policy, critic, optimizer, data: dict, n: int, params: list, critic_only: bool, cfg: Any,
            generator: torch.Generator, device: torch.device, stats: dict) -> None:
    """PPO's passes over one batch of experience (``stats`` collects the losses); with
    ``target_kl`` the passes stop once a minibatch's approximate KL exceeds it."""
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=generator, device=device)
        for start in range(0, n, cfg.minibatch_size):
            rows = order[start:start + cfg.minibatch_size]
            if rows.numel() < 2:
                continue
            mb = {key: value[rows] for key, value in data.items() if key in _MINIBATCH_KEYS}
            parts = ppo_loss(policy, critic, mb, cfg, critic_only, device)
            optimizer.zero_grad(set_to_none=True)
            parts.loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            approx_kl = _record(stats, parts, mb["action"], cfg.clip)
            if cfg.target_kl is not None and approx_kl > cfg.target_kl and not critic_only:
                return


_MINIBATCH_KEYS = ("obs", "mask", "action", "logp", "advantage", "ret", "state")


@torch.no_grad()
def _record(stats: dict, parts: LossParts, action: torch.Tensor, clip: float) -> float:
    """Add a minibatch's losses to ``stats``; returns its approximate KL."""
    is_bid = action >= NUM_CARDS
    approx_kl = float(((parts.ratio - 1) - parts.log_ratio).mean())
    stats["policy"].append(float(parts.policy))
    stats["value"].append(float(parts.value))
    if bool(is_bid.any()):
        stats["entropy_bid"].append(float(parts.entropy[is_bid].mean()))
    if bool((~is_bid).any()):
        stats["entropy_card"].append(float(parts.entropy[~is_bid].mean()))
    stats["approx_kl"].append(approx_kl)
    stats["clip_fraction"].append(float(((parts.ratio - 1).abs() > clip).float().mean()))
    return approx_kl
