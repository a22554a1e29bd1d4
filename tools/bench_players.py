"""``spades-bench --search``: the players' speed, native beside Python, in one run.

Three measurements on the same positions (decisions of heuristic self-play games, standard
rules, scores varied so that blind nil comes up):

* the heuristic: decisions/s of ``act`` per row, Python reference against the C backend, and
  the C backend's ``act_batch`` over all positions at once;
* the search player: ms per card decision with a choice, Python at its default budget, C at
  the same budget (the same work: the speed-up), and C at its own default and strong budgets;
* labels: valued labels/s of ``spades-label --teacher search:worlds=16,stage=0`` (one worker),
  Python against C, and of ``--teacher playout`` in C.
"""

from __future__ import annotations

import random
import tempfile
import time
from typing import Optional

import numpy as np


def collect_positions(games: int, seed: int = 0) -> list[tuple[dict, dict]]:
    """(obs, info) at every decision of ``games`` heuristic games with varied starting scores."""
    import agents
    from spades_env import spades_v0

    bot = agents.make("heuristic")
    positions = []
    for game in range(games):
        rng = random.Random(seed + game)
        env = spades_v0.raw_env(episode="hand")
        scores = [[0, 0], [-150, 0], [0, -190], [200, 350]][game % 4]
        env.reset(seed=seed + game, options={"scores": scores})
        for _ in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            positions.append((obs, info))
            legal = np.flatnonzero(obs["action_mask"])
            env.step(bot.act(obs, info) if rng.random() < 0.9 else int(rng.choice(legal)))
    return positions


def _per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def time_heuristic(positions: list[tuple[dict, dict]]) -> dict:
    import torch

    import agents

    out = {}
    for backend in ("python", "native"):
        bot = agents.make("heuristic", backend=backend)
        start = time.perf_counter()
        for obs, info in positions:
            bot.act(obs, info)
        out[f"{backend}_act"] = _per_second(len(positions), time.perf_counter() - start)
    bot = agents.make("heuristic", backend="native")
    obs = torch.from_numpy(np.stack([o["observation"] for o, _ in positions]))
    masks = torch.from_numpy(np.stack([o["action_mask"] for o, _ in positions]))
    start = time.perf_counter()
    bot.act_batch(obs, masks)
    out["native_batch"] = _per_second(len(positions), time.perf_counter() - start)
    out["positions"] = len(positions)
    return out


def time_search(positions: list[tuple[dict, dict]], decisions: int) -> dict:
    """ms per card decision with a choice, on the first ``decisions`` such positions."""
    import agents

    play = [(o, i) for o, i in positions if o["observation"][52 + 3] > 0.5 and np.count_nonzero(o["action_mask"]) > 1]
    play = play[:decisions]
    specs = {"python (default: 200 worlds, 20,000 steps)": dict(backend="python"),
             "native, the same budget": dict(backend="native", worlds=200, max_steps=20_000),
             "native default (1,000 worlds)": dict(backend="native"),
             "native strong (20,000 worlds)": dict(backend="native", budget="strong")}
    out = {}
    for name, options in specs.items():
        bot = agents.make("search", seed=0, **options)
        start = time.perf_counter()
        for obs, info in play:
            bot.act(obs, info)
        out[name] = 1000 * (time.perf_counter() - start) / max(1, len(play))
    out["decisions"] = len(play)
    return out


def time_labels(deals: int, python_deals: int) -> dict:
    """Valued labels per second of spades-label on one worker."""
    from train.labelling.labeller import label, load_labels
    from agents.neural import DEFAULT_MODEL

    out = {}
    runs = {"search:worlds=16,stage=0 (python)": ("search:worlds=16,stage=0,backend=python", python_deals),
            "search:worlds=16,stage=0 (native)": ("search:worlds=16,stage=0", deals),
            "playout (native)": ("playout", deals)}
    for name, (teacher, count) in runs.items():
        with tempfile.TemporaryDirectory() as folder:
            settings = {"student": str(DEFAULT_MODEL), "teacher": teacher, "opponents": "heuristic", "deals": count,
                        "shard_deals": min(20, count), "follow_teacher": 0.5, "continuation": "heuristic",
                        "varied_start": 0.0, "rules": "standard", "seed": 0, "workers": 1, "out": folder}
            start = time.perf_counter()
            label(settings, progress=False, log=lambda line: None)
            seconds = time.perf_counter() - start
            labels = int(load_labels(folder)["values"].float().isfinite().any(1).sum())
        out[name] = _per_second(labels, seconds)
    return out


def run_players(games: int = 20, search_decisions: int = 60, label_deals: int = 200, python_label_deals: int = 20,
                log=print) -> dict:
    log(f"players: heuristic on the decisions of {games} games, search on {search_decisions} card decisions, "
        f"labels over {label_deals} deals ({python_label_deals} for the Python search) ...")
    positions = collect_positions(games)
    results = {"heuristic": time_heuristic(positions), "search_ms": time_search(positions, search_decisions),
               "labels_per_s": time_labels(label_deals, python_label_deals)}
    log(format_players(results))
    return results


def format_players(results: dict) -> str:
    h, s, lab = results["heuristic"], results["search_ms"], results["labels_per_s"]
    lines = [f"heuristic ({h['positions']:,} decisions)        decisions/s",
             f"  python act                      {h['python_act']:>12,.0f}",
             f"  native act                      {h['native_act']:>12,.0f}   ({h['native_act'] / h['python_act']:.0f}x)",
             f"  native act_batch                {h['native_batch']:>12,.0f}   ({h['native_batch'] / h['python_act']:.0f}x)",
             f"search ({s['decisions']} card decisions with a choice)  ms per decision"]
    python_ms = next(v for k, v in s.items() if k.startswith("python"))
    for name, ms in s.items():
        if name == "decisions":
            continue
        lines.append(f"  {name:<44} {ms:>8.2f}   ({python_ms / ms:.0f}x faster than python)" if not
                     name.startswith("python") else f"  {name:<44} {ms:>8.2f}")
    lines.append("labels (spades-label, 1 worker)            labels/s")
    for name, rate in lab.items():
        lines.append(f"  {name:<40} {rate:>8.0f}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:     # pragma: no cover - spades-bench --search calls run_players
    run_players()
    return 0
