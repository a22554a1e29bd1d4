"""Time a card decision of each agent spec on the same positions, one process (one core).

The positions are every card decision with a choice of heuristic self-play hands (standard
rules, scores varied as in tools/bench_players.py); the specs take turns position by position,
so a change in the machine's load falls on all of them alike. Prints mean, median and p99 ms of
wall time, and the mean of CPU time (the process's own, which a loaded machine inflates less).

    python experiments/2026-12-01-endgame-solver/time_per_decision.py --hands 12 search search_v1
"""

from __future__ import annotations

import argparse
import statistics
import time

from evaluation.matches import Player
from tools.bench_players import collect_positions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--hands", type=int, default=12, help="heuristic self-play hands to take positions from")
    args = parser.parse_args()
    positions = [(obs, info) for obs, info in collect_positions(args.hands)
                 if obs["action_mask"][:52].sum() > 1]
    bots = {spec: Player.of(spec).factory() for spec in args.specs}
    times: dict[str, list[float]] = {spec: [] for spec in args.specs}        # wall-clock ms
    cpu: dict[str, list[float]] = {spec: [] for spec in args.specs}
    for obs, info in positions:
        for spec, bot in bots.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            bot.act(obs, info)
            times[spec].append(1e3 * (time.perf_counter() - start))
            cpu[spec].append(1e3 * (time.process_time() - start_cpu))
    for spec in args.specs:
        row = []
        for what, values in (("wall", sorted(times[spec])), ("CPU", sorted(cpu[spec]))):
            p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
            row.append(f"{what}: mean {statistics.fmean(values):.2f} median {statistics.median(values):.2f} "
                       f"p99 {p99:.2f} ms")
        print(f"{spec:<12} {len(times[spec])} card decisions  " + ";  ".join(row))


if __name__ == "__main__":
    main()
