"""Is the fit to search values data-limited? Fit the same starting policy to nested subsets of a
set of labels and measure each on one held-out set (the tenth of the deals the fits never see).

    python -m train.experimental.learning_curve --labels runs/expert_iteration/expert/round_01/labels_* \\
        --init agents/models/neural_v1.pt --fractions 0.125,0.25,0.5,1 \\
        --set expert_epochs=6 --out runs/diagnostics/learning_curve

The fit is expert iteration's (:func:`train.labelling.expert_iteration.fit_to_search_values`, the
``expert_*`` fields of a ``spades-train`` config, ``--config``/``--set`` to change them). For
each fraction it prints and records the held-out value of the fitted policy's favourite cards
(mean search value, points per decision), how often they are among the search's best, and the
held-out loss; ``<out>.json`` holds the rows and ``<out>.png`` draws them. A curve still rising
at the full set says more labels would help; a flat one says the labels are not what limits.
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.experimental.learning_curve", "train.experimental.learning_curve:main"))

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional

import torch

from agents.neural import ModelError, policy_from_checkpoint, read_checkpoint
from spades_env.files import save_figure, write_text


class HintedPolicy(torch.nn.Module):
    """A policy plus a residual network that also reads the heuristic's choice at the position
    (one-hot over the 68 actions, from the native heuristic): can knowing the heuristic's card
    help the network follow the search? The residual starts at zero, so the fit starts from the
    policy's own logits."""

    def __init__(self, policy: torch.nn.Module, obs_size: int, hidden: int = 256) -> None:
        super().__init__()
        self.policy = policy
        self.residual = torch.nn.Sequential(torch.nn.Linear(obs_size + 68, hidden), torch.nn.ReLU(),
                                            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                            torch.nn.Linear(hidden, 68))
        torch.nn.init.zeros_(self.residual[-1].weight)
        torch.nn.init.zeros_(self.residual[-1].bias)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        from agents.native_heuristic import choose_actions
        with torch.no_grad():
            choice = torch.as_tensor(choose_actions(obs.detach().cpu().numpy(), mask.cpu().numpy())).long()
            hint = torch.nn.functional.one_hot(choice, 68).to(obs.dtype).to(obs.device)
        logits = self.policy(obs, mask) + self.residual(torch.cat([obs, hint], 1))
        return logits.masked_fill(~mask, -1e9)


def learning_curve(labels: list[str], init: str, fractions: list[float], cfg, seed: int = 0,
                   log=print, hinted: bool = False, measure_labels: Optional[list[str]] = None) -> list[dict]:
    """One fit per fraction of the training rows (nested subsets), each from ``init`` (with
    ``hinted``, wrapped in a :class:`HintedPolicy`). ``measure_labels``: label folders of the
    same positions valued otherwise (e.g. with more worlds), whose values measure the fits."""
    from train.labelling.expert_iteration import fit_to_search_values
    from train.labelling.labeller import LabelError, load_labels

    data = load_labels(labels)
    measure = None
    if measure_labels:
        other = load_labels(measure_labels)
        if other["obs"].shape != data["obs"].shape or not torch.equal(other["obs"], data["obs"]):
            raise LabelError(f"--measure-labels {measure_labels}: not the same positions as --labels (label both "
                             "with the same student, opponents, seed and --follow-teacher 0)")
        measure = other["values"]
    training_rows = int(((data["deal"] % 10) != 9).sum())
    start = read_checkpoint(init)
    rows = []
    for fraction in fractions:
        policy, _ = policy_from_checkpoint(start, init)
        if hinted:
            torch.manual_seed(seed)
            policy = HintedPolicy(policy, policy.arch["obs_size"])
        policy.train()
        limit = max(1, round(fraction * training_rows))
        began = time.perf_counter()
        fit = fit_to_search_values(policy, data, cfg, torch.Generator().manual_seed(seed), log=lambda line: None,
                                   source=f"{fraction:g} of the labels", train_limit=limit, measure_values=measure)
        row = {"fraction": fraction, "rows": limit, "seconds": round(time.perf_counter() - began, 1), **fit}
        log(f"{fraction:>6.3f} of the labels ({limit:,} rows): favourite cards worth {fit['fit_value']:+.3f} "
            f"points (start {fit['fit_value_start']:+.3f}, search's best {fit['fit_value_best']:+.3f}), "
            f"{100 * fit['fit_agreement']:.1f}% among the best (start {100 * fit['fit_agreement_start']:.1f}%), "
            f"kept epoch {fit['fit_epoch']}, {row['seconds']:.0f} s")
        rows.append(row)
    return rows


def plot(rows: list[dict], out: Path, title: str) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    xs = [r["rows"] for r in rows]
    axes[0].plot(xs, [r["fit_value"] for r in rows], marker="o", label="fitted policy")
    axes[0].axhline(rows[0]["fit_value_start"], color="grey", ls="--", label="starting policy")
    axes[0].set(xscale="log", xlabel="training rows", ylabel="points per decision",
                title="Held-out value of the favourite card")
    axes[1].plot(xs, [100 * r["fit_agreement"] for r in rows], marker="o", label="fitted policy")
    axes[1].axhline(100 * rows[0]["fit_agreement_start"], color="grey", ls="--", label="starting policy")
    axes[1].set(xscale="log", xlabel="training rows", ylabel="%", title="Favourite card among the search's best")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, out, "plot", dpi=90)
    plt.close(fig)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    """The command line (Ctrl-C ends it with one line and status 130)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("learning_curve: interrupted", file=sys.stderr)
        return 130


def _main(argv: Optional[list[str]] = None) -> int:
    from train.ppo.config import ConfigError, load_config
    from train.labelling.labeller import LabelError

    parser = argparse.ArgumentParser(prog="python -m train.experimental.learning_curve", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", nargs="+", required=True, help="label folders (spades-label or expert rounds)")
    parser.add_argument("--init", required=True, help="the policy every fit starts from (model or checkpoint)")
    parser.add_argument("--fractions", default="0.125,0.25,0.5,1", help="nested shares of the training rows")
    parser.add_argument("--config", help="spades-train config whose expert_* fields set the fit")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override a field")
    parser.add_argument("--out", required=True, help="path prefix of the .json and .png written")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--measure-labels", nargs="+", metavar="DIR", help="label folders of the same positions "
                        "valued otherwise (e.g. more worlds): their values measure the fits")
    parser.add_argument("--hinted", action="store_true", help="fit a HintedPolicy: the policy plus a residual "
                                                               "network that also reads the heuristic's choice")
    args = parser.parse_args(argv)
    try:
        fractions = [float(x) for x in args.fractions.split(",")]
        if not fractions or any(not 0 < f <= 1 for f in fractions):
            raise ValueError
    except ValueError:
        print(f"learning_curve: error: --fractions {args.fractions!r}: expected shares in (0, 1], comma-separated",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        cfg = load_config(args.config, args.set)
        rows = learning_curve(args.labels, args.init, sorted(fractions), cfg, seed=cfg.seed, hinted=args.hinted,
                              measure_labels=args.measure_labels)
    except (ConfigError, LabelError, ModelError, FileNotFoundError) as exc:
        print(f"learning_curve: error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {"labels": args.labels, "init": args.init, "overrides": args.set, "config": args.config,
                "hinted": args.hinted, "measure_labels": args.measure_labels}
    write_text(out.with_suffix(".json"), json.dumps({"settings": settings, "rows": rows}, indent=2), "--out")
    plot(rows, out.with_suffix(".png"), "Fit to search values: nested subsets, one held-out set")
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 0

