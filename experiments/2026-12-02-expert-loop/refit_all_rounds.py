"""Refit a round's start policy to the labels of every round so far (more data than one round's
fit), then save it: is the loop's plateau the fit's (180k decisions a round overfit after 2-3
epochs) rather than the teacher's?

    python experiments/2026-12-02-expert-loop/refit_all_rounds.py runs/recipes/expert_loop/loop \
        --start-round 9 --rounds 1-9 --epochs 3 --out runs/refit_r1-9.pt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents.neural import policy_from_checkpoint, read_checkpoint, save_model  # noqa: E402
from train.labelling.expert_iteration import fit_to_search_values  # noqa: E402
from train.labelling.labeller import load_labels  # noqa: E402
from train.ppo.config import load_config  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="the loop's run folder (holds config.yaml and expert/round_NN/)")
    parser.add_argument("--start-round", type=int, required=True, help="fit from this round's student.pt")
    parser.add_argument("--rounds", required=True, help="the rounds whose labels to fit, e.g. 1-9")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    run = Path(args.run)
    cfg = load_config(run / "config.yaml", [f"expert_epochs={args.epochs}"])
    first, _, last = args.rounds.partition("-")
    folders = [f for r in range(int(first), int(last or first) + 1)
               for f in sorted((run / "expert" / f"round_{r:02d}").glob("labels_*"))]
    torch.set_num_threads(1)
    student = run / "expert" / f"round_{args.start_round:02d}" / "student.pt"
    policy, _ = policy_from_checkpoint(read_checkpoint(student), str(student))
    began = time.perf_counter()
    data = load_labels(folders)
    print(f"{len(folders)} label folders, {data['obs'].shape[0]:,} decisions loaded in "
          f"{time.perf_counter() - began:.0f} s", flush=True)
    fit = fit_to_search_values(policy, data, cfg, torch.Generator().manual_seed(cfg.seed), print,
                               source=f"rounds {args.rounds}")
    print(f"fit: {fit} ({time.perf_counter() - began:.0f} s in all)", flush=True)
    save_model(policy, args.out, cfg.rules, {"trained_by": "experiments/2026-12-02-expert-loop/refit_all_rounds.py",
                                             "rounds": args.rounds, "start_round": args.start_round})
    return 0


if __name__ == "__main__":
    sys.exit(main())
