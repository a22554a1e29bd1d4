"""Expert iteration in ``spades-train``: the policy plays, the native search values the positions
it reaches, the policy moves toward the search's preferences, and the round repeats.

    spades-train --config configs/recipes/neural/expert_iteration.yaml            # runs/expert_iteration/
    spades-train --config configs/recipes/neural/expert_iteration.yaml --resume   # continues a killed run

A round (``expert_rounds`` of them, after the warm starts and before any PPO):

1. **Label.** The round's starting policy (saved as ``expert/round_NN/student.pt``) plays one side
   of ``expert_deals`` single hands; the other side is drawn from ``expert_opponents`` (the
   heuristic, the policy itself, the previous round's policy, or any agent spec). At every card
   decision of the student with more than one class of equivalent cards, ``expert_teacher`` (the
   native search keeping every candidate, ``stage=0``) gives the mean play-out value of every
   class over its sampled worlds. This is ``spades-label``'s machinery: resumable shards under
   ``expert/round_NN/labels_<opponent>/``. With probability ``expert_follow_teacher`` the hand goes
   on with the search's card, so the positions are those the student and the search lead to.
2. **Fit.** At every valued decision the policy is fitted (cross-entropy) to an improved policy
   built from the values; ``expert_target``:

   - ``completed_q``: softmax(starting logits + ``expert_scale`` x normalised value), the
     completed-Q policy improvement of Gumbel MuZero (Danihelka et al., "Policy improvement by
     planning with Gumbel", ICLR 2022). The values are normalised per decision by their range,
     floored at ``expert_value_floor`` points, so a card worth the whole range more gains
     ``expert_scale`` nats whatever the size of the swing, and near-ties stay near-ties. The
     anchor is the round's policy, not a fixed one: each round moves it again.
   - ``best``: the classes of the best value (within ``expert_tie`` points) share the target.

   A teacher that searches its bids (``search``: each bid it tries valued by the game's win
   probability, in points of equal worth) labels the bids too, and they are fitted the same way;
   decisions without values (``search_v1``'s bids, which it takes from the heuristic) are held at
   the round's starting policy (cross-entropy to it), so the shared trunk does not drift them.
   The labels of the last ``expert_replay_rounds`` rounds are fitted together (the search's
   values do not depend on who reached the position); a tenth of the deals is held out and the
   epoch whose favourite cards are worth most there is kept (the starting weights included). With
   ``expert_bid_values`` the bidding head is then refitted to Monte-Carlo values of every bid,
   played out by the new card play (:mod:`train.bids.bid_values`, ``bid_value_deals`` deals).
3. **Evaluate.** Duplicate deals against each of ``expert_eval_opponents`` (the same deals every
   round), paired with the round's starting policy, and head to head against it.

Every step leaves a file (``student.pt``, the label shards and ``label_manifest.json``,
``fitted.pt`` and ``fit.json``, ``round.json``), so a killed round resumes where it stopped;
``expert/rounds.csv`` and ``expert/rounds.png`` track the rounds. The round's result goes into
the trainer's checkpoint (``expert_rounds_done``) with the hashes of its files, and a resume
checks what it builds on against them (:mod:`train.labelling.expert_manifest`).
"""

from __future__ import annotations

import copy
import csv
import io
import os
import time
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from agents.neural import ModelError, read_checkpoint, save_model
from spades_env.files import MAX_SHARD_BYTES, FileRuleError, load_torch, save_figure, write_text

from train.labelling.expert_manifest import (LABELS_MANIFEST, ExpertIterationError, adopt_older_rounds, file_digest, labels_record,
                              read_json, read_labels_manifest, recorded_label_folders, round_record, same_policy,
                              verify_finished_rounds, verify_labels, write_json, write_manifest_copy)
from train.imitation.fitting import fit_keep_best, held_out_favourites

# Every step takes the running trainer (:class:`train.ppo.trainer.Trainer`, which calls
# :func:`run_rounds`; not imported here, as it imports this module).
Trainer = Any

ROUND_COLUMNS = ("round", "labels", "label_s", "fit_s", "fit_epoch", "fit_value_start", "fit_value",
                 "fit_agreement_start", "fit_agreement")


def round_folder(trainer: "Trainer", round_: int) -> Path:
    return trainer.run_path / "expert" / f"round_{round_:02d}"


def opponent_folder_name(spec: str) -> str:
    """A folder name for the labels of one opponent spec (``search:worlds=20`` -> ``search_worlds-20``)."""
    return "labels_" + "".join(ch if ch.isalnum() else ("-" if ch == "=" else "_") for ch in spec)


def run_rounds(trainer: "Trainer") -> None:
    """Run the rounds not done yet (``trainer.expert_rounds_done`` < ``expert_rounds``), saving a
    checkpoint after each. First the checkpoint's count of rounds must match its records, and
    where rounds remain, the finished ones must be there as recorded (:mod:`train.labelling.expert_manifest`)."""
    cfg = trainer.config
    expert_dir = trainer.run_path / "expert"
    if trainer.expert_rounds_done < cfg.expert_rounds:
        check_round_files(expert_dir)
    verify_finished_rounds(expert_dir, trainer.expert_rounds_done, trainer.expert_manifest,
                           str(trainer.checkpoint_dir / "last.pt"),
                           check_files=trainer.expert_rounds_done < cfg.expert_rounds,
                           labels_from=trainer.expert_rounds_done + 2 - cfg.expert_replay_rounds)
    if trainer.expert_manifest is None and trainer.expert_rounds_done < cfg.expert_rounds:
        # a run from before the records: its finished rounds are recorded as they are now
        trainer.expert_manifest = adopt_older_rounds(expert_dir, trainer.expert_rounds_done)
        trainer.log(f"expert iteration: the checkpoint has no records of its rounds (an older run); rounds 1.."
                    f"{trainer.expert_rounds_done} recorded from their files as they are")
    while trainer.expert_rounds_done < cfg.expert_rounds:
        round_ = trainer.expert_rounds_done + 1
        row, record = run_round(trainer, round_)
        trainer.expert_manifest[str(round_)] = record
        trainer.expert_rounds_done = round_
        _append_row(trainer, round_)
        trainer.save_checkpoint()
        write_manifest_copy(expert_dir, trainer.expert_manifest)


ROUND_FILES = ("rounds.csv", "rounds.csv.tmp", "rounds.png", "manifest.json")   # rewritten after each round


def check_round_files(expert_dir: Path) -> None:
    """An :class:`ExpertIterationError` when a file a round rewrites is there as a folder or
    something else that is not a regular file (a ``rounds.csv`` folder was a traceback after the
    round's work), checked before any round starts."""
    for name in ROUND_FILES:
        path = expert_dir / name
        if path.is_symlink() or not path.exists():
            continue
        if path.is_dir():
            raise ExpertIterationError(f"{path} is a folder: expected the file the run writes there (move the "
                                       "folder away, then resume)")
        if not path.is_file():
            raise ExpertIterationError(f"{path} is not a regular file (a device, FIFO or socket): expected the "
                                       "file the run writes there (move it away, then resume)")


def run_round(trainer: "Trainer", round_: int) -> tuple[dict, dict]:
    """One round: label, fit, evaluate (each step skipped where its file shows it done, after
    checking that file). Returns the round's row and its record for the checkpoint."""
    cfg = trainer.config
    folder = round_folder(trainer, round_)
    folder.mkdir(parents=True, exist_ok=True)
    done_path = folder / "round.json"
    student = folder / "student.pt"
    if not student.exists():
        save_model(copy.deepcopy(trainer.policy).cpu(), student, trainer.env.rules.name,
                   {"trained_by": "spades-train expert iteration", "round": round_, "config_name": cfg.name})
    elif not _same_student(student, trainer.policy):
        raise ExpertIterationError(f"{student}: not the policy round {round_} starts from (the checkpoint's); the "
                                   "round's files belong to another start: delete its folder to run it again")
    labels, label_folders = label_round(trainer, round_, student)
    fitted_path = folder / "fitted.pt"
    fit_info_path = folder / "fit.json"
    if fitted_path.exists() and fit_info_path.exists():
        fit = read_json(fit_info_path, ("fit_epoch",))
        if fit.get("fitted_sha256") not in (None, file_digest(fitted_path)):
            raise ExpertIterationError(f"{fitted_path}: changed since {fit_info_path} recorded it (its SHA-256 "
                                       "differs); delete both to fit the round again")
        trainer.policy.load_state_dict(read_checkpoint(fitted_path)["policy"])
        trainer.log(f"expert iteration, round {round_}: fitted policy found in {fitted_path}")
    else:
        began = time.perf_counter()
        replay = [f for r in range(max(1, round_ - cfg.expert_replay_rounds + 1), round_)
                  for f in recorded_label_folders(trainer.run_path / "expert", r, trainer.expert_manifest)]
        fit = fit_round(trainer, replay + label_folders)
        if cfg.expert_bid_values and cfg.bid_value_deals:
            fit["bid_values"] = trainer.value_bids()
        fit["fit_s"] = time.perf_counter() - began
        save_model(copy.deepcopy(trainer.policy).cpu(), fitted_path, trainer.env.rules.name,
                   {"trained_by": "spades-train expert iteration", "round": round_, "config_name": cfg.name})
        fit["fitted_sha256"] = file_digest(fitted_path)
        write_json(fit_info_path, fit)
    if done_path.exists():
        row = read_json(done_path, ("round", "labels"))
        if row["round"] != round_:
            raise ExpertIterationError(f"{done_path}: says round {row['round']!r}, its folder is round {round_}")
    else:
        row = {"round": round_, "labels": labels["labels"], "label_s": round(labels["label_s"], 1),
               **_fit_columns(fit), **evaluate_round(trainer, fitted_path, student, round_)}
        write_json(done_path, row)
    trainer.log(_round_line(row, cfg.expert_eval_opponents))
    record = round_record(folder, labels)
    return row, record


def _same_student(student: Path, policy: torch.nn.Module) -> bool:
    try:
        return same_policy(student, policy)
    except (ModelError, RuntimeError, KeyError) as exc:
        raise ExpertIterationError(f"{student}: unreadable ({type(exc).__name__}); delete the round's folder to run "
                                   "it again") from None


def label_round(trainer: "Trainer", round_: int, student: Path) -> tuple[dict, list[Path]]:
    """Label the round's deals, split between ``expert_opponents`` by their shares (resumable).
    Once every shard is written their hashes go into ``label_manifest.json``; a resumed round
    whose labelling had finished checks its shards against it instead of labelling. Returns
    that record and the label folders."""
    from evaluation import derive_seed
    from train.labelling.labeller import LabelError, label

    cfg = trainer.config
    folder = round_folder(trainer, round_)
    recorded = read_labels_manifest(folder)
    if recorded is not None:
        return recorded, verify_labels(folder, recorded, str(folder / LABELS_MANIFEST))
    began = time.perf_counter()
    previous = round_folder(trainer, round_ - 1) / "student.pt" if round_ > 1 else student
    total = sum(cfg.expert_opponents.values())
    folders, labels = [], 0
    for k, (spec, share) in enumerate(sorted(cfg.expert_opponents.items())):
        deals = round(cfg.expert_deals * share / total)
        if deals < 1:
            continue
        opponents = {"self": f"neural:checkpoint={student}", "previous": f"neural:checkpoint={previous}"}.get(spec, spec)
        out = folder / opponent_folder_name(spec)
        settings = {"out": str(out), "teacher": cfg.expert_teacher, "student": str(student),
                    "opponents": opponents, "deals": deals, "shard_deals": cfg.expert_shard_deals,
                    "follow_teacher": cfg.expert_follow_teacher, "continuation": "heuristic",
                    "varied_start": cfg.varied_start_share if cfg.start_kind != "zero" else 0.0,
                    "start": cfg.start_kind if cfg.start_kind != "zero" else "varied",
                    "rules": cfg.rules, "seed": derive_seed("expert-iteration", cfg.seed, round_, k) % 2**31,
                    "workers": cfg.expert_workers or max(1, len(os.sched_getaffinity(0))), "ray": cfg.expert_ray}
        try:
            label(settings, progress=cfg.progress, log=trainer.log)
        except LabelError as exc:
            raise ExpertIterationError(f"expert iteration, round {round_}: {exc}") from None
        folders.append(out)
        shards = sorted(out.glob("shard_*.pt"))
        expected = -(-deals // cfg.expert_shard_deals)
        if len(shards) != expected:
            raise ExpertIterationError(f"{out}: {len(shards)} shards, the round labels {expected}: remove the others")
        try:
            labels += sum(int(load_torch(shard, "labels shard", MAX_SHARD_BYTES)["teacher"].numel())   # one by one
                          for shard in shards)
        except (FileRuleError, KeyError, TypeError, AttributeError) as exc:
            raise ExpertIterationError(f"{out}: a shard is not a labels shard ({str(exc)[:160]})") from None
    record = labels_record(folders, labels, time.perf_counter() - began)
    write_json(folder / LABELS_MANIFEST, record)
    return record, folders


def improved_policy(start_logits: torch.Tensor, values: torch.Tensor, legal: torch.Tensor, target: str,
                    scale: float, floor: float, tie: float) -> torch.Tensor:
    """The target probabilities of valued decisions (rows): ``start_logits`` (B, A), ``values``
    (B, A; NaN where not valued), ``legal`` (B, A). ``completed_q``: softmax(logits + scale *
    (value - min) / max(range, floor)) over the legal actions (a legal action without a value
    counts as the worst); ``best``: uniform over the actions within ``tie`` points of the best."""
    valued = legal & ~torch.isnan(values)
    low = torch.where(valued, values, torch.inf).amin(1, keepdim=True)
    high = torch.where(valued, values, -torch.inf).amax(1, keepdim=True)
    filled = torch.where(valued, values, low)
    if target == "best":
        good = legal & (filled >= high - tie)
        return good.float() / good.sum(1, keepdim=True).clamp(min=1)
    spread = (high - low).clamp(min=floor)
    logits = start_logits + scale * (filled - low) / spread
    return torch.softmax(logits.masked_fill(~legal, -torch.inf), 1)


def fit_round(trainer: "Trainer", folders: list[Path]) -> dict:
    """Fit the trainer's policy to the labels in ``folders`` (module doc, step 2)."""
    from train.ppo.config import ConfigError
    from evaluation import resolve_rules
    from train.labelling.labeller import load_labels

    data = load_labels(folders)
    if resolve_rules(data["settings"]["rules"]) != trainer.env.rules:
        raise ConfigError(f"expert iteration: labels in {folders[0]} were made under other rules")
    return fit_to_search_values(trainer.policy, data, trainer.config, trainer.generator, trainer.log,
                                source=f"{len(folders)} folder(s)")


def fit_to_search_values(policy: torch.nn.Module, data: dict, cfg: Any, generator: torch.Generator,
                         log: Callable[[str], None] = print, source: str = "the labels",
                         train_limit: Optional[int] = None, measure_values: Optional[torch.Tensor] = None) -> dict:
    """Fit ``policy`` (in place) to the improved policies of the labelled decisions in ``data``
    (:func:`train.labelling.labeller.load_labels`) with the ``expert_*`` settings of ``cfg``; the held-out
    tenth of the deals measures it. ``train_limit``: fit only that many training rows (the first
    of a fixed random order, so smaller sets are nested in larger ones: a learning curve).
    ``measure_values``: other values of the same rows (e.g. labelled with more worlds) that
    the held-out measures use instead of the fitted ones. Returns what the fit measured."""
    dev = next(policy.parameters()).device
    obs, legal = data["obs"].to(dev), data["mask"].to(dev)
    fitted_values = data["values"].to(dev).float()
    values = fitted_values if measure_values is None else measure_values.to(dev).float()
    has_values = (~torch.isnan(fitted_values) & legal).any(1) & (~torch.isnan(values) & legal).any(1)
    held_out = (data["deal"].to(dev) % 10) == 9
    if not bool((held_out & has_values).any()) or bool(held_out.all()):    # too few deals: every tenth row
        held_out = torch.arange(obs.shape[0], device=dev) % 10 == 9
    every = torch.arange(obs.shape[0], device=dev)
    with torch.no_grad():
        start_logits = torch.cat([policy(obs[rows].float(), legal[rows]) for rows in every.split(8192)])
        target = torch.softmax(start_logits, 1)
        rows = has_values.nonzero()[:, 0]
        target[rows] = improved_policy(start_logits[rows], fitted_values[rows], legal[rows], cfg.expert_target,
                                       cfg.expert_scale, cfg.expert_value_floor, cfg.expert_tie)
    train_rows = (~held_out).nonzero()[:, 0]
    if train_limit is not None:
        order = torch.randperm(train_rows.numel(), generator=torch.Generator().manual_seed(0))
        train_rows = train_rows[order[:train_limit].to(dev)]
    test_rows = (held_out & has_values).nonzero()[:, 0]
    best_value = torch.where(legal & ~torch.isnan(values), values, -torch.inf).amax(1)

    def loss_of(rows: torch.Tensor) -> torch.Tensor:
        log_probs = torch.log_softmax(policy(obs[rows].float(), legal[rows]), 1)
        return -(target[rows] * log_probs.masked_fill(~legal[rows], 0.0)).sum(1)

    def held_out_fit() -> tuple[float, float]:
        """(loss, mean search value of the favourite card) on the held-out valued decisions."""
        return held_out_favourites(policy, obs, legal, values, test_rows, loss_of, missing=-1e3)

    def agreement() -> float:
        """Share of held-out valued decisions where the favourite card is among the best-valued."""
        with torch.no_grad():
            hits = []
            for rows in test_rows.split(8192):
                pick = policy(obs[rows].float(), legal[rows]).argmax(1, keepdim=True)
                hits.append(values[rows].gather(1, pick)[:, 0] >= best_value[rows] - cfg.expert_tie)
        return float(torch.cat(hits).float().mean()) if hits else 0.0

    start = held_out_fit()
    start_agreement = agreement()
    oracle = float(best_value[test_rows].mean()) if test_rows.numel() else 0.0
    log(f"expert fit ({cfg.expert_target}): {int((has_values[train_rows]).sum()):,} valued decisions to fit from "
        f"{source} ({int(has_values.sum()):,} valued, {int((~has_values).sum()):,} without values, held at the "
        f"start); on the "
        f"{test_rows.numel():,} held-out valued ones the favourite cards are worth {start[1]:+.3f} points (the "
        f"search's best {oracle:+.3f}), {100 * start_agreement:.1f}% of them among the best")
    loss, value, epoch = fit_keep_best(
        policy, train_rows, lambda rows: loss_of(rows).mean(), held_out_fit, start,
        lambda loss, value: f"held-out loss {loss:.4f}, favourite cards worth {value:+.3f} points",
        epochs=cfg.expert_epochs, learning_rate=cfg.expert_learning_rate, keep="score",
        minibatch_size=cfg.minibatch_size, max_grad_norm=cfg.max_grad_norm, generator=generator, log=log)
    end_agreement = agreement()
    # the same measure on as many of the fitted rows: far above the held-out value means the fit
    # memorises (more labels would help), level with it means the network cannot follow further
    seen = train_rows[has_values[train_rows]][:max(1, test_rows.numel())]
    with torch.no_grad():
        picked = [torch.nan_to_num(values[rows], nan=-1e3).gather(
            1, policy(obs[rows].float(), legal[rows]).argmax(1, keepdim=True))[:, 0] for rows in seen.split(8192)]
    value_fitted = float(torch.cat(picked).mean()) if picked else float("nan")
    log(f"expert fit: kept epoch {epoch} (favourite cards worth {value:+.3f} points on the held-out decisions, "
        f"{value_fitted:+.3f} on as many fitted ones; {100 * end_agreement:.1f}% among the best)")
    return {"fit_epoch": epoch, "fit_value_start": start[1], "fit_value": value, "fit_value_best": oracle,
            "fit_agreement_start": start_agreement, "fit_agreement": end_agreement, "fit_loss": loss,
            "fit_value_on_fitted_rows": value_fitted,
            "valued": int(has_values.sum()), "held_out": int(test_rows.numel()),
            "fitted_rows": int(train_rows.numel())}


def evaluate_round(trainer: "Trainer", fitted: Path, student: Path, round_: int) -> dict:
    """Duplicate matches of the fitted policy against ``expert_eval_opponents``, paired with the
    round's starting policy on the same deals, and head to head with it (hands from
    ``expert_eval_start``: 0-0, or real game states, where blind nil is offered)."""
    from evaluation import evaluate, paired_difference

    cfg = trainer.config
    seed = cfg.seed + 3_000_017                      # the same deals every round
    workers = cfg.expert_workers or max(1, len(os.sched_getaffinity(0)))
    new, old = f"neural:checkpoint={fitted}", f"neural:checkpoint={student}"
    match = dict(deals=cfg.expert_eval_deals, duplicate=True, rules=cfg.rules, seed=seed, workers=workers,
                 progress=cfg.progress, start=cfg.expert_eval_start)
    row: dict[str, Any] = {}
    for name in cfg.expert_eval_opponents:
        now = evaluate(new, name, **match)
        before = evaluate(old, name, **match)
        gain, _ = paired_difference(now, before)
        row.update({f"vs_{name}": now.score_diff.mean, f"vs_{name}_low": now.score_diff.low,
                    f"vs_{name}_high": now.score_diff.high, f"gain_vs_{name}": gain.mean,
                    f"gain_vs_{name}_low": gain.low, f"gain_vs_{name}_high": gain.high})
    duel = evaluate(new, old, **match)
    row.update({"vs_previous": duel.score_diff.mean, "vs_previous_low": duel.score_diff.low,
                "vs_previous_high": duel.score_diff.high})
    return row


def _fit_columns(fit: dict) -> dict:
    return {k: fit[k] for k in ROUND_COLUMNS if k in fit}


def _round_line(row: dict, opponents: list[str]) -> str:
    parts = [f"expert iteration, round {row['round']}: {row['labels']:,} labels"]
    for name in opponents:
        if f"vs_{name}" in row:
            parts.append(f"vs {name} {row[f'vs_{name}']:+.1f} [{row[f'vs_{name}_low']:+.1f}, "
                         f"{row[f'vs_{name}_high']:+.1f}] (over the round's start {row[f'gain_vs_{name}']:+.1f} "
                         f"[{row[f'gain_vs_{name}_low']:+.1f}, {row[f'gain_vs_{name}_high']:+.1f}])")
    if "vs_previous" in row:
        parts.append(f"head to head with the round's start {row['vs_previous']:+.1f} "
                     f"[{row['vs_previous_low']:+.1f}, {row['vs_previous_high']:+.1f}]")
    return "; ".join(parts) + " points/hand (duplicate, 95% CI)"


def _append_row(trainer: "Trainer", round_: int) -> None:
    """Write ``expert/rounds.csv`` with rounds 1..``round_`` (rewritten whole from their
    ``round.json``: a resumed round is not repeated) and redraw ``expert/rounds.png``."""
    folder = trainer.run_path / "expert"
    rows = [read_json(folder / f"round_{r:02d}" / "round.json", ("round",)) for r in range(1, round_ + 1)]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, columns)
    writer.writeheader()
    writer.writerows(rows)
    try:
        write_text(folder / "rounds.csv", table.getvalue(), "expert rounds")     # the output rule
    except FileRuleError as exc:
        raise ExpertIterationError(str(exc)) from None
    plot_rounds(rows, folder / "rounds.png", trainer.config.expert_eval_opponents, trainer.config.name)


def plot_rounds(rows: list[dict], out: Path, opponents: list[str], title: str) -> Optional[Path]:
    """Points per hand by round against each opponent (95% intervals), the gain over each round's
    start and the head-to-head result against it."""
    if not rows:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["round"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in opponents:
        if all(f"vs_{name}" in r for r in rows):
            line, = axes[0].plot(xs, [r[f"vs_{name}"] for r in rows], marker="o", label=f"vs {name}")
            axes[0].fill_between(xs, [r[f"vs_{name}_low"] for r in rows], [r[f"vs_{name}_high"] for r in rows],
                                 alpha=0.2, color=line.get_color())
            axes[1].errorbar(xs, [r[f"gain_vs_{name}"] for r in rows],
                             yerr=[[r[f"gain_vs_{name}"] - r[f"gain_vs_{name}_low"] for r in rows],
                                   [r[f"gain_vs_{name}_high"] - r[f"gain_vs_{name}"] for r in rows]],
                             marker="o", capsize=3, label=f"gain over the round's start, vs {name}")
    if all("vs_previous" in r for r in rows):
        axes[1].errorbar(xs, [r["vs_previous"] for r in rows],
                         yerr=[[r["vs_previous"] - r["vs_previous_low"] for r in rows],
                               [r["vs_previous_high"] - r["vs_previous"] for r in rows]],
                         marker="s", capsize=3, label="head to head with the round's start")
    for ax, heading in zip(axes, ("Duplicate evaluation (95% CI)", "Each round against its start")):
        ax.axhline(0, color="grey", lw=0.8)
        ax.set(title=heading, xlabel="round", ylabel="points per hand")
        ax.legend(fontsize=8)
    fig.suptitle(f"{title}: expert iteration")
    fig.tight_layout()
    try:
        return save_figure(fig, out, "expert rounds plot", dpi=90)
    finally:
        plt.close(fig)
