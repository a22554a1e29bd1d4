"""Why the bids collapse from scratch: the ablation of issue 47, one command.

    python -m coop.study.scratch_ablation --config experiments/2026-11-27-learning-from-scratch/scratch_ablation.yaml --jobs 2      # train, then measure
    python -m coop.study.scratch_ablation --config experiments/2026-11-27-learning-from-scratch/scratch_ablation.yaml --stage measure   # measure again
    python -m coop.study.scratch_ablation --config experiments/2026-11-27-learning-from-scratch/scratch_ablation.yaml --resume      # after a kill

The config is a study config (the format of ``spades-coop study``, :mod:`coop.study.study`): shared
``spades-train`` fields, one method per arm of the ablation (its changed fields), and seeds. The
training stage is the study's (resumable runs, ``--jobs`` at once). Each finished run is then
measured, and the measurements kept in ``results/<run>.json`` (a killed measuring stage resumes):

- **bits**: what the bids tell about the hand, ``bid_information_hand`` of ``spades-coop signals``
  (a decoder of the bid from hand features, minus a shuffled control; interval by bootstrap over
  deals), with the mean bid and the nil share, the policy playing both seats of its side against
  the heuristic;
- the **bid entropy** of the last tenth of the run's updates (``metrics.csv``), the decisions at
  which it first fell below 0.1 nats, and the share of updates that held no bidding decision;
- **strength** from the run's own final evaluation (``final_eval.json``): points a hand over
  single duplicate hands against the heuristic, and whole duplicate games won where the config asks
  for ``final_eval_games``.

``results/ablation.md`` holds the table (per arm: the seeds' values, their mean and a t-interval
over seeds) and ``results/ablation.json`` every number; ``results/bid_entropy.png`` the curves.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Callable, Optional

from coop.study.study import Run, Study, StudyError, check_runs_unchanged, load_study, train_runs
from coop.study.report import interval_dict   # means over seeds: the seeds are the units
from spades_env.files import save_figure, write_text

COLLAPSED_NATS = 0.1          # a bidding entropy under this: (nearly) one bid for every hand


def read_metrics(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _number(text: str) -> Optional[float]:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def bid_entropy_summary(rows: list[dict]) -> dict:
    """The bidding entropy at the end (mean over the last tenth of the updates), the decisions at
    which it first fell under :data:`COLLAPSED_NATS`, and the share of updates without a bid."""
    curve = [(_number(r["decisions"]), _number(r.get("loss__entropy_bid"))) for r in rows]
    with_bids = [(d, e) for d, e in curve if e is not None]
    tail = with_bids[-max(1, len(with_bids) // 10):] if with_bids else []
    collapsed = next((d for d, e in with_bids if e < COLLAPSED_NATS), None)
    return {"final": sum(e for _, e in tail) / len(tail) if tail else None,
            "collapsed_at_decisions": collapsed,
            "updates_without_bids": 1 - len(with_bids) / len(curve) if curve else None}


def measure_run(run: Run, deals: int, seed: int, workers: Optional[int]) -> dict:
    """One finished run's numbers (module docstring)."""
    from coop.measures.signals import measure_signals

    signals = measure_signals(run.spec, deals=deals, seed=seed, opponent="heuristic", workers=workers)
    final = json.loads((run.path / "final_eval.json").read_text())
    hands = final["evaluation"]["heuristic"]["score_diff_per_hand"]
    games = (final.get("evaluation_games") or {}).get("heuristic")
    out = {
        "run": run.name, "arm": run.method.name, "seed": run.seed, "decisions": final["decisions"],
        "bits": signals["bid_information_hand"],
        "mean_bid": signals["bid_calibration"].get("mean_bid"),
        "nil_share": signals["bid_calibration"].get("nil_share"),
        "bid_entropy": bid_entropy_summary(read_metrics(run.path / "metrics.csv")),
        "points_vs_heuristic": {k: hands[k] for k in ("mean", "low", "high", "n")},
        "games_vs_heuristic": None,
    }
    if games and games.get("win_rate_a"):
        win = games["win_rate_a"]
        out["games_vs_heuristic"] = {"win_rate_a": win["mean"], "low": win["low"], "high": win["high"],
                                     "games": win.get("n")}
    return out


def summarise(study: Study, results: dict[str, dict]) -> list[dict]:
    """Per arm: every seed's measurement and the means over seeds with their intervals."""
    arms = []
    for method in study.methods:
        runs = [results[f"{method.name}_s{s}"] for s in study.seeds if f"{method.name}_s{s}" in results]
        if not runs:
            continue
        row = {"arm": method.name, "fields": method.fields, "seeds": [r["seed"] for r in runs], "runs": runs,
               "bits": interval_dict([r["bits"]["value"] for r in runs]),
               "points_vs_heuristic": interval_dict([r["points_vs_heuristic"]["mean"] for r in runs]),
               "mean_bid": interval_dict([r["mean_bid"] for r in runs]),
               "bid_entropy": interval_dict([r["bid_entropy"]["final"] or 0.0 for r in runs])}
        won = [r["games_vs_heuristic"]["win_rate_a"] for r in runs if r.get("games_vs_heuristic")]
        row["games_won"] = interval_dict(won) if won else None
        arms.append(row)
    return arms


def _iv(d: Optional[dict], fmt: str) -> str:
    if not d:
        return "-"
    if d.get("low") is None:
        return fmt.format(d["mean"])
    return f"{fmt.format(d['mean'])} [{fmt.format(d['low'])}, {fmt.format(d['high'])}]"


def _fields(fields: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in fields.items()) or "(the base config)"


def report_markdown(study: Study, arms: list[dict], config_path: str) -> str:
    lines = [f"# {study.name}: why the bids collapse from scratch", "",
             f"Rerun: `python -m coop.study.scratch_ablation --config {config_path}` (train, then measure; "
             "`--resume` after a kill). Each arm trains one run per seed from random weights "
             f"({study.train.get('total_decisions', 'default'):,} decisions; seeds "
             f"{', '.join(map(str, study.seeds))}); intervals are 95% t-intervals over the seeds, each seed's "
             "own figure beside them. Bits: what the bids tell about the hand (spades-coop signals' "
             "bid_information_hand, self-play side against the heuristic); bid entropy: the last tenth of the "
             "updates; strength: the run's final evaluation against the heuristic.", "",
             "| arm | changed fields | bits about the hand | per seed | mean bid | bid entropy (nats) | "
             "collapsed (< 0.1 nats) at | points a hand vs heuristic (single hands) | games won vs heuristic |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in arms:
        per_seed = " / ".join(f"{r['bits']['value']:.2f}" for r in a["runs"])
        collapsed = [r["bid_entropy"]["collapsed_at_decisions"] for r in a["runs"]]
        shown = " / ".join("never" if c is None else f"{c / 1e6:.1f}M" for c in collapsed)
        lines.append(f"| {a['arm']} | {_fields(a['fields'])} | {_iv(a['bits'], '{:.2f}')} | {per_seed} | "
                     f"{_iv(a['mean_bid'], '{:.2f}')} | {_iv(a['bid_entropy'], '{:.2f}')} | {shown} | "
                     f"{_iv(a['points_vs_heuristic'], '{:+.1f}')} | "
                     f"{_iv(a['games_won'], '{:.0%}') if a['games_won'] else '-'} |")
    return "\n".join(lines) + "\n"


def plot_bid_entropy(study: Study, path: Path) -> None:
    """The bidding entropy against decisions, one colour per arm, one line per seed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, method in enumerate(study.methods):
        for j, seed in enumerate(study.seeds):
            metrics = study.runs_dir / f"{method.name}_s{seed}" / "metrics.csv"
            if not metrics.is_file():
                continue
            points = [(_number(r["decisions"]), _number(r.get("loss__entropy_bid"))) for r in read_metrics(metrics)]
            points = [(d / 1e6, e) for d, e in points if d is not None and e is not None]
            if points:
                ax.plot(*zip(*points), color=colours[i % len(colours)], lw=1, alpha=0.8,
                        label=method.name if j == 0 else None)
    ax.set_xlabel("decisions (millions)")
    ax.set_ylabel("bidding entropy (nats)")
    ax.set_title(f"{study.name}: bidding entropy from scratch")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, "plot", dpi=110)
    plt.close(fig)


def measure_stage(study: Study, config_path: str, deals: int, seed: int, workers: Optional[int],
                  log: Callable[[str], None] = print) -> list[dict]:
    """Measure every finished run not measured yet, then write the table, JSON and figure."""
    out_dir = study.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    for run in study.runs():
        cached = out_dir / f"{run.name}.json"
        if cached.is_file():
            results[run.name] = json.loads(cached.read_text())
            continue
        if not run.done:
            log(f"{run.name}: not finished, left out")
            continue
        log(f"measuring {run.name} ({deals} duplicate deals of signals)")
        results[run.name] = measure_run(run, deals, seed, workers)
        write_text(cached, json.dumps(results[run.name], indent=1), "measurement")
    arms = summarise(study, results)
    write_text(out_dir / "ablation.json", json.dumps({"study": study.name, "deals": deals, "seed": seed,
                                                       "arms": arms}, indent=1), "ablation.json")
    write_text(out_dir / "ablation.md", report_markdown(study, arms, config_path), "ablation.md")
    plot_bid_entropy(study, out_dir / "bid_entropy.png")
    return arms


def build_parser() -> argparse.ArgumentParser:
    from evaluation.cli_common import OneLineParser
    parser = OneLineParser(prog="python -m coop.study.scratch_ablation",
                           description="Issue 47's ablation: train every arm and seed from scratch, then measure "
                                       "bits, bid entropy and strength (module docstring).")
    parser.add_argument("--config", required=True, help="ablation config (e.g. experiments/2026-11-27-learning-from-scratch/scratch_ablation.yaml)")
    parser.add_argument("--stage", choices=("train", "measure", "all"), default="all")
    parser.add_argument("--jobs", type=int, default=1, help="training runs at once, one torch thread each")
    parser.add_argument("--folder", help="the ablation's folder (default: the config's)")
    parser.add_argument("--resume", action="store_true", help="continue a folder that already holds runs")
    parser.add_argument("--deals", type=int, default=200, help="duplicate deals of each run's signals (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the signals' deals")
    parser.add_argument("--workers", type=int, default=None, help="processes of the signals (default: the CPUs)")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        study = load_study(args.config, args.folder)
        check_runs_unchanged(study)
        if args.stage in ("train", "all"):
            failed, _ = train_runs(study, args.jobs, args.resume, log=lambda line: print(line, flush=True))
            if failed:
                print(f"scratch_ablation: error: runs not finished: {', '.join(failed)}", file=sys.stderr)
                return 1
        if args.stage in ("measure", "all"):
            measure_stage(study, args.config, args.deals, args.seed, args.workers,
                          log=lambda line: print(line, flush=True))
            print(f"wrote {study.results_dir / 'ablation.md'}")
    except (StudyError, OSError) as exc:
        print(f"scratch_ablation: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scratch_ablation: interrupted; continue with --resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
