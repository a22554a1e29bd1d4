"""Where a training run's numbers go: a CSV file, TensorBoard, and PNG learning curves."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Iterable, Optional

from spades_env.files import save_figure, write_text


class MetricsLog:
    """One CSV row per update (fixed columns; empty cells where a value was not measured),
    mirrored to TensorBoard. Reopening a run keeps the rows up to the checkpoint's update and
    drops the later ones (they are measured again), so a resumed run has one row per update."""

    def __init__(self, run_path: Path, columns: list[str], tensorboard: bool, resume_update: Optional[int]) -> None:
        self.path = Path(run_path) / "metrics.csv"
        self.columns = ["update", "decisions"] + [c for c in columns if c not in ("update", "decisions")]
        self.rows: list[dict] = []
        if resume_update is not None and self.path.exists():
            with self.path.open(newline="") as f:
                self.rows = [self._parse(r) for r in csv.DictReader(f) if int(r["update"]) <= resume_update]
        table = io.StringIO(newline="")
        writer = csv.DictWriter(table, self.columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(self.rows)
        write_text(self.path, table.getvalue(), "metrics")
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter
            self.writer = SummaryWriter(str(Path(run_path) / "tensorboard"),
                                        purge_step=None if resume_update is None else resume_update + 1)

    @staticmethod
    def _parse(row: dict) -> dict:
        out = {}
        for k, v in row.items():
            if v in ("", None):
                continue
            for kind in (int, float, str):
                try:
                    out[k] = kind(v)
                    break
                except ValueError:
                    continue
        return out

    def add(self, row: dict) -> None:
        self.rows.append(row)
        with self.path.open("a", newline="") as f:
            csv.DictWriter(f, self.columns, extrasaction="ignore").writerow(row)
        if self.writer is not None:
            step = int(row["update"])
            for key, value in row.items():
                if key not in ("update",) and isinstance(value, (int, float)) and math.isfinite(value):
                    self.writer.add_scalar(key.replace("__", "/"), value, step)
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def series(self, key: str) -> tuple[list[float], list[float]]:
        xs, ys = [], []
        for row in self.rows:
            if isinstance(row.get(key), (int, float)):
                xs.append(row["decisions"] / 1e6)
                ys.append(row[key])
        return xs, ys


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")


def plot_learning_curves(log: MetricsLog, out: Path, eval_opponents: Iterable[str], title: str) -> Path:
    """A PNG with three panels: duplicate evaluation with its 95% intervals (dashed: the gain over
    the policy PPO started from, paired on the same deals), the points per hand
    the learning side scores in training by opponent kind, and the policy's entropies; a fourth,
    the whole games won with their intervals, where the run measured them (``eval_games``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eval_opponents = list(eval_opponents)
    games = [name for name in eval_opponents if log.series(f"eval__{name}__games_won")[0]]
    fig, axes = plt.subplots(1, 4 if games else 3, figsize=(21 if games else 16, 4.5))
    ax = axes[0]
    for name in eval_opponents:
        xs, ys = log.series(f"eval__{name}__diff")
        if xs:
            _, lows = log.series(f"eval__{name}__low")
            _, highs = log.series(f"eval__{name}__high")
            line, = ax.plot(xs, ys, marker="o", label=f"vs {name}")
            if len(lows) == len(xs) == len(highs):
                ax.fill_between(xs, lows, highs, alpha=0.2, color=line.get_color())
            gx, gy = log.series(f"eval__{name}__gain")
            if gx:
                ax.plot(gx, gy, ls="--", marker=".", color=line.get_color(), label=f"vs {name}: gain over the start")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(title="Duplicate evaluation, single hands from 0-0 (95% CI)", xlabel="decisions (millions)",
           ylabel="points per hand")
    _legend(ax)
    if games:         # whole games to the target score: what the single hands stand in for
        ax = axes[3]
        for name in games:
            xs, ys = log.series(f"eval__{name}__games_won")
            _, lows = log.series(f"eval__{name}__games_won_low")
            _, highs = log.series(f"eval__{name}__games_won_high")
            line, = ax.plot(xs, [100 * y for y in ys], marker="o", label=f"vs {name}")
            if len(lows) == len(xs) == len(highs):
                ax.fill_between(xs, [100 * v for v in lows], [100 * v for v in highs], alpha=0.2,
                                color=line.get_color())
        ax.axhline(50, color="grey", lw=0.8)
        ax.set(title="Whole games won, duplicate (95% CI)", xlabel="decisions (millions)", ylabel="% of games",
               ylim=(0, 100))
        _legend(ax)
    ax = axes[1]
    for kind in ("self", "pool", "heuristic"):
        xs, ys = log.series(f"train__points_vs_{kind}")
        if xs:
            ax.plot(xs, ys, label=f"vs {kind}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(title="Training: learning side's points per hand", xlabel="decisions (millions)",
           ylabel="points per hand (own - opponents)")
    _legend(ax)
    ax = axes[2]
    for key, label in (("loss__entropy_bid", "bidding entropy"), ("loss__entropy_card", "card entropy"),
                       ("loss__value", "value loss")):
        xs, ys = log.series(key)
        if xs:
            ax.plot(xs, ys, label=label)
    ax.set(title="Policy entropy and value loss", xlabel="decisions (millions)")
    _legend(ax)
    fig.suptitle(title)
    fig.tight_layout()
    try:
        return save_figure(fig, Path(out), "learning curves", dpi=90)
    finally:
        plt.close(fig)
