"""``spades-bench``: environment throughput, measured the way an RL loop uses an environment.

Every decision reads the observation and the action mask, then picks a uniformly random legal
action from the mask. Dealing (chance) steps are not counted as decisions. When ``open_spiel`` is
importable, its ``spades`` is measured the same way in the same run (observation tensor and
legal-action mask read every decision) and the ratio is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from typing import Callable, Optional

import numpy as np


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_description() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{_cpu_name()}, {cores} cores, Python {platform.python_version()}, numpy {np.__version__}"


def run_aec(make_env: Callable, decisions: int, seed: int = 0) -> dict:
    """Random legal play through the AEC loop of API.md for at least ``decisions`` decisions."""
    env = make_env()
    env.reset(seed=seed)
    pick = random.Random(seed).random
    done = hands = games = 0
    start = time.perf_counter()
    while done < decisions:
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            if termination or truncation:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[int(pick() * len(legal))]))
            done += 1
        games += 1
        hands += env.unwrapped.game.hand_number
        env.reset()
    elapsed = time.perf_counter() - start
    return {"decisions": done, "seconds": elapsed, "decisions_per_s": done / elapsed,
            "hands_per_s": hands / elapsed, "games": games}


def run_openspiel(decisions: int, seed: int = 0) -> Optional[dict]:
    """OpenSpiel's C++ ``spades`` from Python, observation tensor and mask read every decision."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("spades")
    pick = random.Random(seed).random
    done = hands = 0
    start = time.perf_counter()
    while done < decisions:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                legal = state.legal_actions()
                state.apply_action(legal[int(pick() * len(legal))])
                continue
            player = state.current_player()
            obs = {"observation": np.asarray(state.observation_tensor(player), dtype=np.float32),
                   "action_mask": np.asarray(state.legal_actions_mask(player), dtype=np.int8)}
            legal = obs["action_mask"].nonzero()[0]
            state.apply_action(int(legal[int(pick() * len(legal))]))
            done += 1
        hands += 1
    elapsed = time.perf_counter() - start
    return {"decisions": done, "seconds": elapsed, "decisions_per_s": done / elapsed,
            "hands_per_s": hands / elapsed, "games": hands}


def run_benchmarks(decisions: int = 300_000, rules: str = "standard", repeats: int = 3,
                   openspiel: bool = True, seed: int = 0, progress: Callable[[str], None] = print) -> dict:
    from . import spades_v0

    results: dict[str, dict] = {}
    candidates = [
        ("spades_v0.raw_env", lambda: spades_v0.raw_env(rules=rules)),
        ("spades_v0.env (wrapped)", lambda: spades_v0.env(rules=rules)),
    ]
    for name, make in candidates:
        run_aec(make, min(20_000, decisions), seed)  # warm-up (lookup tables, caches)
        runs = [run_aec(make, decisions, seed + i) for i in range(repeats)]
        best = max(runs, key=lambda r: r["decisions_per_s"])
        results[name] = best
        progress(f"  {name:<28} {best['decisions_per_s']:>12,.0f} decisions/s")
    if openspiel:
        run = run_openspiel(min(20_000, decisions), seed)
        if run is None:
            progress("  open_spiel is not installed: skipping the OpenSpiel comparison "
                     "(pip install open-spiel)")
        else:
            runs = [run_openspiel(decisions, seed + i) for i in range(repeats)]
            best = max(runs, key=lambda r: r["decisions_per_s"])
            results["OpenSpiel spades (C++ via pyspiel)"] = best
            progress(f"  {'OpenSpiel spades (pyspiel)':<28} {best['decisions_per_s']:>12,.0f} decisions/s")
    return results


def format_table(results: dict, rules: str) -> str:
    reference = results.get("OpenSpiel spades (C++ via pyspiel)")
    lines = [f"Random legal play, rules={rules}, observation + mask read every decision "
             f"(best of repeats)", f"Machine: {machine_description()}", ""]
    header = f"{'environment':<36} {'decisions/s':>12} {'us/decision':>12} {'hands/s':>9}"
    if reference:
        header += f" {'vs OpenSpiel':>13}"
    lines += [header, "-" * len(header)]
    for name, r in results.items():
        row = (f"{name:<36} {r['decisions_per_s']:>12,.0f} {1e6 / r['decisions_per_s']:>12.2f} "
               f"{r['hands_per_s']:>9,.0f}")
        if reference:
            row += f" {r['decisions_per_s'] / reference['decisions_per_s']:>12.2f}x"
        lines.append(row)
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="spades-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=300_000,
                        help="decisions per measured run (default 300000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per environment; the best is reported")
    parser.add_argument("--rules", default="standard", help="rules preset or YAML file (default standard)")
    parser.add_argument("--no-openspiel", action="store_true", help="skip the OpenSpiel comparison")
    parser.add_argument("--quick", action="store_true", help="a short run (50000 decisions, 1 repeat)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.decisions, args.repeats = 50_000, 1
    if args.decisions <= 0 or args.repeats <= 0:
        parser.error("--decisions and --repeats must be positive")
    print(f"spades-bench: {args.decisions:,} decisions x {args.repeats} repeats per environment ...", flush=True)
    results = run_benchmarks(args.decisions, args.rules, args.repeats, not args.no_openspiel, args.seed,
                             progress=lambda line: print(line, flush=True))
    print()
    print(format_table(results, args.rules))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_description(), "rules": args.rules, "results": results}, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
