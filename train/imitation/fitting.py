"""The supervised fits of training (distillation, expert iteration): minibatch Adam over rows of
a labelled set, keeping the weights that do best on a held-out part."""

from __future__ import annotations

import copy
import sys
from typing import Callable, Optional

import torch


def fit_keep_best(policy: torch.nn.Module, train_rows: torch.Tensor,
                  train_loss: Callable[[torch.Tensor], torch.Tensor],
                  held_out_fit: Callable[[], tuple[float, float]], start: tuple[float, float],
                  describe: Callable[[float, float], str], *, epochs: int, learning_rate: float, keep: str,
                  minibatch_size: int, max_grad_norm: float, generator: torch.Generator,
                  log: Callable[[str], None] = print) -> tuple[float, float, int]:
    """``epochs`` passes of Adam (``learning_rate`` decayed linearly to 0, gradients clipped to
    ``max_grad_norm``) over ``train_rows`` in shuffled minibatches of ``train_loss(rows)``.
    After each pass ``held_out_fit()`` gives (loss, score) and the weights ``keep`` names are
    kept: ``"score"`` (the highest score), ``"loss"`` (the lowest loss), the starting ones
    (``start``, their (loss, score)) included, or ``"last"``. Returns the kept (loss, score,
    epoch), epoch 0 being the start."""
    if keep not in ("score", "loss", "last"):
        raise ValueError(f"keep={keep!r}: expected 'score', 'loss' or 'last'")
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate, eps=1e-5)
    batches = max(1, epochs * -(-train_rows.numel() // minibatch_size))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: max(0.0, 1.0 - i / batches))
    (best_loss, best_score), best_epoch = start, 0
    best_state = copy.deepcopy(policy.state_dict())
    for epoch in range(epochs):
        order = train_rows[torch.randperm(train_rows.numel(), generator=generator, device=generator.device)
                           .to(train_rows.device)]
        for first in range(0, order.numel(), minibatch_size):
            loss = train_loss(order[first:first + minibatch_size])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
            optimizer.step()
            schedule.step()
        test_loss, test_score = held_out_fit()
        log(f"fit epoch {epoch + 1}/{epochs}: {describe(test_loss, test_score)}")
        better = {"score": test_score > best_score, "loss": test_loss < best_loss, "last": True}[keep]
        if better:
            best_loss, best_score, best_epoch = test_loss, test_score, epoch + 1
            best_state = copy.deepcopy(policy.state_dict())
    policy.load_state_dict(best_state)
    return best_loss, best_score, best_epoch


def held_out_favourites(policy: torch.nn.Module, obs: torch.Tensor, mask: torch.Tensor, values: torch.Tensor,
                        rows: torch.Tensor, loss_of: Callable[[torch.Tensor], torch.Tensor],
                        missing: Optional[float] = None) -> tuple[float, float]:
    """(mean loss, mean value of the policy's favourite action) over the held-out ``rows``, 8,192
    at a time: what the value fits score their epochs by. ``missing``: the value a NaN counts
    (None: NaN stays NaN)."""
    with torch.no_grad():
        losses, picked = [], []
        for part in rows.split(8192):
            logits = policy(obs[part].float(), mask[part])
            losses.append(loss_of(part))
            part_values = values[part] if missing is None else torch.nan_to_num(values[part], nan=missing)
            picked.append(part_values.gather(1, logits.argmax(1, keepdim=True))[:, 0])
    return float(torch.cat(losses).mean()), float(torch.cat(picked).mean())


def progress_bar(total: int, desc: str, enabled: bool, initial: int = 0, unit: str = "dec"):
    """The tqdm bar every training phase shows (on stderr; ``enabled`` False: none)."""
    from tqdm import tqdm

    from evaluation.cli_common import progress_disabled       # no bar frames in a redirected log
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, unit_scale=True,
                disable=progress_disabled(enabled), dynamic_ncols=True, file=sys.stderr)
