"""The warm starts of ``spades-train``, before PPO: imitation of the heuristic, distillation from
a teacher's labels (choices or values), and Monte-Carlo bid values.

Each is a function of what it uses (the policy, the critic, the config, the random stream, ...)
and changes the networks in place; the trainer (:mod:`train.ppo.trainer`) calls them in order and keeps
in its checkpoint which ones are done. Expert iteration, the rounds after them, is
:mod:`train.labelling.expert_iteration`.
"""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.nn.functional as F

from spades_env.vector import SpadesVectorEnv

from train.ppo.config import ConfigError
from train.imitation.fitting import fit_keep_best, held_out_favourites, progress_bar as _bar
from train.ppo.update import policy_parts_only
from train.ppo.rollout import StartingScores, agent_actions, critic_input, finished_rows, seat_advantages


def imitate(policy, critic, cfg, heuristic, starts: StartingScores, generator: torch.Generator,
            device: torch.device, log: Callable[[str], None] = print) -> dict:
    """Supervised warm start: the policy imitates the heuristic playing all four seats, the
    critic learns the Monte-Carlo returns of those games (a central critic's input includes the
    full state). Plays on its own tables (seed + 7919); returns the last epoch's fit."""
    dev = device
    env = SpadesVectorEnv(cfg.num_envs, rules=cfg.rules, reward=cfg.reward, episode=cfg.episode, device=dev,
                          seed=cfg.seed + 7919, reward_scale=cfg.reward_scale, shaping=cfg.shaping,
                          win_bonus=cfg.win_bonus, bag_cost=cfg.bag_cost, check_actions=False,
                          backend=cfg.env_backend)
    obs, mask = starts.reset(env)
    central = cfg.critic == "central"
    steps = max(1, -(-cfg.imitation_decisions // cfg.num_envs))
    kept = {k: [] for k in ("obs", "mask", "action", "seat", "reward", "done", "state")}
    bar = _bar(steps * cfg.num_envs, "imitating the heuristic", cfg.progress)
    with torch.no_grad():
        for _ in range(steps):
            seat = env.to_act
            state = env.state_tensor().to(torch.float16) if central else None
            actions = agent_actions(heuristic, obs, mask)
            kept["obs"].append(obs.to(torch.float16))
            kept["mask"].append(mask)
            kept["action"].append(actions)
            kept["seat"].append(seat)
            kept["state"].append(state)
            obs, mask, rewards, done, _ = env.step(actions)
            starts.renew(env, done)
            kept["reward"].append(rewards.to(torch.float32))
            kept["done"].append(done)
            bar.update(cfg.num_envs)
        bar.close()
    T = steps
    data = {k: torch.stack(v) for k, v in kept.items() if v and v[0] is not None}
    returns = seat_advantages(data["reward"], data["done"], data["seat"], torch.zeros(T, cfg.num_envs, device=dev),
                              torch.zeros(cfg.num_envs, 4, device=dev), 1.0, 1.0)
    complete = finished_rows(data["done"]).reshape(-1)
    obs_all = data["obs"].reshape(T * cfg.num_envs, -1)
    mask_all = data["mask"].reshape(T * cfg.num_envs, -1)
    action_all = data["action"].reshape(-1)
    returns = returns.reshape(-1)
    state_all = data["state"].reshape(T * cfg.num_envs, -1) if "state" in data else None
    n = action_all.shape[0]
    params = list(policy.parameters()) + list(critic.parameters())
    optimizer = torch.optim.Adam(params, lr=cfg.imitation_learning_rate, eps=1e-5)
    batches = cfg.imitation_epochs * -(-n // cfg.minibatch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: 1.0 - i / batches)
    result = {}
    fit_bar = _bar(batches, f"fitting the policy to {n:,} heuristic decisions ({cfg.imitation_epochs} epochs)",
                   cfg.progress, unit="batch")
    for epoch in range(cfg.imitation_epochs):
        order = torch.randperm(n, generator=generator, device=dev)
        correct = total = 0
        value_losses = []
        for start in range(0, n, cfg.minibatch_size):
            mb = order[start:start + cfg.minibatch_size]
            o, m = obs_all[mb].float(), mask_all[mb]
            logits = policy(o, m)
            policy_loss = F.cross_entropy(logits, action_all[mb])
            valid = complete[mb]
            critic_in = critic_input(o, None if state_all is None else state_all[mb].float())
            value_loss = (0.5 * (critic(critic_in) - returns[mb]).pow(2) * valid).sum() / valid.sum().clamp(min=1)
            loss = policy_loss + cfg.value_coef * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            schedule.step()
            correct += int((logits.argmax(1) == action_all[mb]).sum())
            total += mb.numel()
            value_losses.append(float(value_loss.detach()))
            fit_bar.update(1)
        result = {"imitation_accuracy": correct / total, "imitation_value_loss": sum(value_losses) / len(value_losses)}
        log(f"imitation epoch {epoch + 1}/{cfg.imitation_epochs}: matches the heuristic on "
            f"{100 * result['imitation_accuracy']:.1f}% of {n:,} decisions, value loss {result['imitation_value_loss']:.4f}")
    fit_bar.close()
    return result


def distill(policy, cfg, rules, generator: torch.Generator, device: torch.device,
            log: Callable[[str], None] = print) -> dict:
    """Fit the policy to the teacher's labels in ``distill_data`` (cross-entropy on the set of
    actions as good as the teacher's). Rows without a label (an empty target: ``spades-label
    --only blind-nil`` or ``ducking`` keeps the student's other decisions so) are anchors: their loss is the KL
    divergence from the starting policy's probabilities there, so what the labels do not cover
    stays as it was. A tenth of the deals is held out; the weights of the epoch whose favourite
    actions match most held-out labels are kept (the starting weights if no epoch matches more
    than they do: greedy play follows the favourite action)."""
    from evaluation import resolve_rules
    from train.labelling.labeller import LabelError, load_labels
    dev = device
    try:
        data = load_labels(cfg.distill_data)
    except LabelError as exc:
        raise ConfigError(str(exc)) from None
    if resolve_rules(data["settings"]["rules"]) != rules:
        raise ConfigError(f"distill_data={cfg.distill_data!r}: labelled under the rules "
                          f"{data['settings']['rules']!r}, this run plays {cfg.rules!r}")
    held_out = (data["deal"] % 10) == 9
    if held_out.all() or not held_out.any():
        held_out = torch.arange(held_out.numel()) % 10 == 9
    if cfg.distill_value_temperature is not None:
        return _distill_values(policy, data, held_out, cfg, generator, device, log)
    train_rows, test_rows = (~held_out).nonzero()[:, 0], held_out.nonzero()[:, 0]
    obs, mask, target = data["obs"].to(dev), data["mask"].to(dev), data["target"].to(dev)
    labelled = target.any(1)
    if not bool(labelled.any()):
        raise ConfigError(f"distill_data={cfg.distill_data!r}: no decision there has a teacher's label "
                          "(every target is empty)")
    anchors = int((~labelled).sum())
    start_log_probs = None
    if anchors:                         # the starting policy's probabilities on the unlabelled rows
        start_log_probs = torch.zeros(obs.shape[0], mask.shape[1], device=dev)
        rows_all = (~labelled).nonzero()[:, 0]
        with torch.no_grad():
            for part in rows_all.split(8192):
                start_log_probs[part] = torch.log_softmax(policy(obs[part].float(), mask[part]), 1).masked_fill(
                    ~mask[part], 0.0)

    def loss_and_hits(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        log_probs = torch.log_softmax(policy(obs[rows].float(), mask[rows]), 1)
        good = target[rows]
        has_label = labelled[rows]
        # a labelled row: -log of the probability of the teacher's class (an unlabelled one sums
        # over its legal actions here, a finite 0 that its anchor then replaces)
        counted = torch.where(has_label[:, None], good, mask[rows])
        loss = -torch.logsumexp(log_probs.masked_fill(~counted, float("-inf")), 1)
        if start_log_probs is not None:
            legal = mask[rows]
            start = start_log_probs[rows]
            kl = (start.exp() * (start - log_probs.masked_fill(~legal, 0.0))).masked_fill(~legal, 0.0).sum(1)
            loss = torch.where(has_label, loss, kl)
        hits = good.gather(1, log_probs.argmax(1, keepdim=True))[:, 0]
        return loss, hits

    anchor_drift = {"kl": 0.0}

    def held_out_fit() -> tuple[float, float]:
        with torch.no_grad():
            parts = [loss_and_hits(test_rows[i:i + 8192]) for i in range(0, test_rows.numel(), 8192)]
        loss = torch.cat([p[0] for p in parts])
        hits = torch.cat([p[1] for p in parts])
        has_label = labelled[test_rows]
        if anchors:
            anchor_drift["kl"] = float(loss[~has_label].mean()) if bool((~has_label).any()) else 0.0
        return float(loss.mean()), (float(hits[has_label].float().mean()) if bool(has_label.any()) else 0.0)

    def describe(loss: float, hits: float) -> str:
        drift = f", {anchor_drift['kl']:.4f} nats from the starting policy on the unlabelled ones" if anchors else ""
        return f"held-out loss {loss:.4f}, matches the teacher on {100 * hits:.1f}%{drift}"

    start = held_out_fit()
    log(f"distillation: {int(labelled[train_rows].sum()):,} labels to fit"
        + (f" and {int((~labelled[train_rows]).sum()):,} unlabelled decisions kept at the starting policy (KL)"
           if anchors else "")
        + f", {int(labelled[test_rows].sum()):,} labels held out; "
        f"the policy matches the teacher on {100 * start[1]:.1f}% of the held-out ones")
    best_loss, best_hits, best_epoch = _fit_keep_best(
        policy, cfg, generator, log, _rows_that_move(policy, cfg, obs, train_rows),
        lambda rows: loss_and_hits(rows)[0].mean(), held_out_fit, start, describe)
    log(f"distillation: kept epoch {best_epoch} ({100 * best_hits:.1f}% of the held-out labels matched, "
        f"loss {best_loss:.4f})")
    result = {"distill_accuracy": best_hits, "distill_loss": best_loss, "distill_epoch": best_epoch}
    if anchors:
        held_out_fit()                  # the drift of the weights kept, not of the last epoch's
        result["distill_anchor_kl"] = anchor_drift["kl"]
    return result


def _rows_that_move(policy, cfg, obs: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The training rows whose loss depends on the weights the fit moves: with ``policy_parts:
    nil_defence`` only the rows inside the head's gate (elsewhere the logits cannot change, so the
    other rows would cost time and add nothing), else all of them."""
    if cfg.policy_parts != "nil_defence":
        return rows
    with torch.no_grad():
        gated = torch.cat([policy.nil_defence_gate(obs[part].float()) for part in rows.split(65536)])
    return rows[gated]


def _fit_keep_best(policy, cfg, generator: torch.Generator, log: Callable[[str], None], train_rows: torch.Tensor,
                   train_loss: Callable[[torch.Tensor], torch.Tensor], held_out_fit: Callable[[], tuple[float, float]], start: tuple[float, float],
                   describe: Callable[[float, float], str]) -> tuple[float, float, int]:
    """:func:`train.imitation.fitting.fit_keep_best` with the distillation's settings (``distill_epochs``,
    ``distill_learning_rate``, ``distill_keep``); with ``policy_parts: nil_defence`` only the
    nil-defence head moves (so nothing outside its gate can drift)."""
    part = "nil_defence" if cfg.policy_parts == "nil_defence" else "all"
    with policy_parts_only(policy, part):
        return fit_keep_best(policy, train_rows, train_loss, held_out_fit, start, describe,
                             epochs=cfg.distill_epochs, learning_rate=cfg.distill_learning_rate,
                             keep=cfg.distill_keep, minibatch_size=cfg.minibatch_size,
                             max_grad_norm=cfg.max_grad_norm, generator=generator, log=log)


def _distill_values(policy, data: dict, held_out: torch.Tensor, cfg, generator: torch.Generator,
                    device: torch.device, log: Callable[[str], None]) -> dict:
    """``distill`` with play-out values (``distill_value_temperature`` T): on every decision with
    values the centred logits of the legal actions are fitted to the starting policy's centred
    logits plus the centred values / T (a softmax policy pi_start * exp(value / T)); on the
    others (bids) to the starting policy's logits
    (ten times their summed squared error, so that they stay as they were). The weights that
    ``distill_keep`` names are kept (by default the epoch, the starting weights included,
    whose favourite cards are worth most on the held-out deals: mean value, points per
    decision)."""
    dev = device
    obs, mask = data["obs"].to(dev), data["mask"].to(dev)
    values = data["values"].to(dev).float()
    valued = ~torch.isnan(values)
    has_values = valued.any(1)
    if not bool(has_values.any()):
        raise ConfigError(f"distill_value_temperature is set but distill_data={cfg.distill_data!r} holds no "
                          "values (label them with spades-label --teacher playout)")
    cells = torch.where(has_values[:, None], valued & mask, mask)         # what each row's loss compares
    count = cells.sum(1, keepdim=True).clamp(min=1)

    def centred(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        row_cells = cells[rows]
        x = torch.where(row_cells, x, torch.zeros_like(x))
        return torch.where(row_cells, x - x.sum(1, keepdim=True) / count[rows], torch.zeros_like(x))

    every = torch.arange(obs.shape[0], device=dev)
    with torch.no_grad():
        start_logits = torch.cat([policy(obs[rows].float(), mask[rows]) for rows in every.split(8192)])
        target = centred(start_logits, every) + centred(torch.nan_to_num(values) / cfg.distill_value_temperature, every)
    norm = torch.where(has_values, count[:, 0].float(), 0.1)    # valued rows: the mean; others: 10 x the sum
    train_rows = (~held_out).nonzero()[:, 0].to(dev)
    test_rows = (held_out & has_values.cpu()).nonzero()[:, 0].to(dev)

    def loss_of(rows: torch.Tensor) -> torch.Tensor:
        fitted = centred(policy(obs[rows].float(), mask[rows]), rows)
        return ((fitted - target[rows]) ** 2).sum(1) / norm[rows]

    # A search teacher values only the candidates it kept: a legal card it pruned counts as worth its
    # row's lowest value when the favourite cards are scored (a play-out teacher values every class).
    row_floor = torch.where(valued, values, torch.full_like(values, float("inf"))).min(1, keepdim=True).values
    scored_values = torch.where(has_values[:, None] & mask & ~valued, row_floor, values)

    def held_out_fit() -> tuple[float, float]:
        """(loss, mean play-out value of the favourite card) on the held-out valued decisions."""
        return held_out_favourites(policy, obs, mask, scored_values, test_rows, loss_of)

    start = held_out_fit()
    log(f"distillation by values (T = {cfg.distill_value_temperature:g} points, added to the starting "
        "policy's logits): "
        f"{int(has_values.sum()):,} valued decisions and {int((~has_values).sum()):,} others, "
        f"{test_rows.numel():,} valued ones held out; there the policy's favourite cards are worth "
        f"{start[1]:+.3f} points")
    best_loss, best_value, best_epoch = _fit_keep_best(
        policy, cfg, generator, log, _rows_that_move(policy, cfg, obs, train_rows),
        lambda rows: loss_of(rows).mean(), held_out_fit, start,
        lambda loss, value: f"held-out loss {loss:.4f}, favourite cards worth {value:+.3f} points")
    log(f"distillation: kept epoch {best_epoch} (favourite cards worth {best_value:+.3f} points on the "
        f"held-out decisions, loss {best_loss:.4f})")
    return {"distill_value": best_value, "distill_loss": best_loss, "distill_epoch": best_epoch}


def value_bids(policy, cfg, rules, heuristic, starts: StartingScores, round_: int, generator: torch.Generator,
               device: torch.device, log: Callable[[str], None] = print) -> dict:
    """Round ``round_`` of Monte-Carlo bid values (:mod:`train.bids.bid_values`): collect, fit the bidding head."""
    from train.bids.bid_values import collect_bid_values, fit_bid_head
    bar = _bar(cfg.bid_value_deals, f"bid values, round {round_}/{cfg.bid_value_rounds}", cfg.progress)
    bar.unit = "deal"
    start = starts.sample if starts.varied else None
    began, done, tenths_logged = time.perf_counter(), 0, 0

    def progress(deals: int) -> None:
        nonlocal done, tenths_logged
        bar.update(deals)
        done += deals
        tenths = 10 * done // cfg.bid_value_deals
        if not cfg.progress and tenths > tenths_logged:      # no bar: a log line every tenth of the deals
            tenths_logged = tenths
            rate = done / max(time.perf_counter() - began, 1e-9)
            log(f"bid values, round {round_}: {done:,}/{cfg.bid_value_deals:,} deals played out "
                f"({rate:.1f} deals/s)")

    data = collect_bid_values(policy, rules, cfg.bid_value_deals, generator, device,
                              start=start, progress=progress, opponent=heuristic,
                              opponent_share=cfg.bid_value_heuristic_share, bag_cost=cfg.bag_cost)
    bar.close()
    extra = {}
    if cfg.bid_value_objective == "win":        # the hands' results as the game sees them (module doc there)
        from train.bids.game_bid_values import valued_by_the_game
        data["values"], table = valued_by_the_game(data, policy, rules, cfg.bag_cost)
        extra = {"bid_value_win_table": table}
        log(f"bid values, round {round_}: valued by the game (win table {table})")
    result = fit_bid_head(policy, data, cfg.bid_value_temperature, cfg.bid_value_epochs,
                          cfg.bid_value_learning_rate, min(cfg.minibatch_size, 1024), generator, log)
    return {**result, **extra}

