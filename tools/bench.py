"""``spades-bench``: environment throughput, measured the way an RL loop uses an environment.

Every decision reads the observation and the action mask, then picks a uniformly random legal
action from the mask. Dealing (chance) steps are not counted as decisions. When ``open_spiel`` is
importable, its ``spades`` is measured the same way in the same run (observation tensor and
legal-action mask read every decision) and the ratio is printed. ``--heuristic`` also times the
heuristic agent on whole games: ``act_batch`` on a batch of tables against ``act`` row by row.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import sys
import time
from typing import Callable, Optional

import numpy as np

from spades_env.files import FileRuleError, check_output, write_json


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


def accelerator_description(device: str) -> str:
    """The batched engine's device in words, for the report: ``cpu``, or e.g. ``cuda (NVIDIA H100
    80GB HBM3, CUDA 13.0)``."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return f"{dev} ({torch.cuda.get_device_name(dev)}, CUDA {torch.version.cuda})"
    return str(dev)


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


VECTOR_BATCH_SIZES = (1, 16, 256, 1024, 2048, 4096, 8192, 16384)


def run_vector(batch_size: int, seconds: float = 2.0, rules: str = "standard", device: str = "cpu",
               compile: bool = False, seed: int = 0, gc_freeze: bool = True, obs_dtype: str = "float32",
               barrier=None, backend: str = "torch") -> dict:
    """The batched engine: random legal actions for every table, the observation (float32, or
    ``obs_dtype``) and the mask of every next decision produced at every step (the way a
    self-play loop uses it).

    ``gc_freeze``: after the warm-up, move every object alive to Python's permanent GC generation
    (``gc.freeze()``, undone at the end), so the cyclic collector stops rescanning torch's (and
    torch.compile's) large object graphs every few steps, as a long training loop would do.
    ``barrier``: a ``multiprocessing`` barrier waited on after the warm-up, so that several
    processes (``run_vector_processes``) measure at the same time.
    ``backend="native"``: the engine's C step (CPU); the random player then also picks in C
    (:func:`spades_env.native.random_legal`, the same rule as the torch picker below, on torch's
    thread count), so that the loop measures the engine rather than a dozen small torch ops."""
    import gc

    import torch

    from spades_env.vector import SpadesVectorEnv

    env = SpadesVectorEnv(batch_size, rules=rules, device=device, seed=seed, compile=compile,
                          check_actions=False, obs_dtype=obs_dtype, backend=backend)
    generator = torch.Generator(device=device).manual_seed(seed)
    obs, mask = env.reset()

    def torch_random_legal(mask):
        # Uniform over each table's legal actions: the k-th legal action, k = floor(u * count),
        # with one uniform u per table (a per-cell noise tensor costs 3-4x more at large batches);
        # u * count can round up to count (u = 1 - 2**-24), hence the minimum.
        seen = mask.view(torch.uint8).cumsum(1, dtype=torch.int32)       # legal actions so far
        count = seen[:, -1:]
        u = torch.rand(mask.shape[0], 1, generator=generator, device=device)
        k = torch.minimum((u * count).to(torch.int32), count - 1)
        return torch.searchsorted(seen, k, right=True)[:, 0]             # first column past k

    def native_random_legal(mask):   # the same rule, in C
        return native_pick(mask, torch.rand(mask.shape[0], generator=generator), threads)

    random_legal = torch_random_legal
    if backend == "native":
        from spades_env.native import random_legal as native_pick
        threads = torch.get_num_threads()
        random_legal = native_random_legal

    warm_start = time.perf_counter()
    for _ in range(3):  # warm-up (and the compilation, when compiling)
        obs, mask, *_ = env.step(random_legal(mask))
    warmup = time.perf_counter() - warm_start
    if gc_freeze:
        gc.collect()
        gc.freeze()
    if barrier is not None:
        barrier.wait()
    steps = 0
    sync = torch.cuda.synchronize if env.device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    while True:
        obs, mask, rewards, done, info = env.step(random_legal(mask))
        steps += 1
        if steps % 4 == 0:
            sync()
            if time.perf_counter() - start >= seconds:
                break
    elapsed = time.perf_counter() - start
    if gc_freeze:
        gc.unfreeze()
    return {"batch_size": batch_size, "steps": steps, "seconds": elapsed, "warmup_s": warmup,
            "decisions_per_s": batch_size * steps / elapsed, "compiled": compile, "backend": backend,
            "device": str(env.device),
            "gc_freeze": gc_freeze, "obs_dtype": str(env.obs_dtype).replace("torch.", "")}


def run_heuristic(batch_size: int, seconds: float = 2.0, rules: str = "standard", seed: int = 0,
                  row_by_row: int = 1000) -> dict:
    """The heuristic on a batch of tables playing whole games (the heuristic on every seat, scores
    varying from hand to hand): decisions per second of ``HeuristicAgent.act_batch`` (the batched
    heuristic, timed alone, not the engine's steps) and of ``act`` row by row (on up to
    ``row_by_row`` of the same positions drawn from every step, each row handed over in the AEC
    env's numpy form)."""
    import torch

    import agents

    from spades_env.vector import SpadesVectorEnv

    env = SpadesVectorEnv(batch_size, rules=rules, episode="game", seed=seed, check_actions=False)
    bot = agents.make("heuristic", seed=seed)
    obs, mask = env.reset()
    for _ in range(20):                       # into the game: bids, passes and cards all come up
        obs, mask, *_ = env.step(bot.act_batch(obs, mask))
    batched_s, decisions, steps = 0.0, 0, 0
    picker = random.Random(seed)
    saved = []                                 # a few rows of every step, for the row-by-row timing
    while batched_s < seconds or steps < 3:
        start = time.perf_counter()
        actions = bot.act_batch(obs, mask)
        batched_s += time.perf_counter() - start
        decisions += batch_size
        steps += 1
        for i in picker.sample(range(batch_size), min(batch_size, 64)):
            saved.append((obs[i].numpy().copy(), mask[i].numpy().astype(np.int8)))
        obs, mask, *_ = env.step(actions)
    rows = picker.sample(saved, min(len(saved), row_by_row))
    start = time.perf_counter()
    for o, m in rows:
        bot.act({"observation": o, "action_mask": m})
    per_row_s = time.perf_counter() - start
    return {"batch_size": batch_size, "steps": steps, "decisions_per_s": decisions / batched_s,
            "row_by_row_decisions_per_s": len(rows) / per_row_s, "threads": torch.get_num_threads()}


def _vector_worker(index: int, threads: int, barrier, results, kwargs: dict) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        results.put((index, run_vector(barrier=barrier, **kwargs)))
    except BaseException as error:  # reported by the parent, which would otherwise wait forever
        barrier.abort()
        results.put((index, f"{type(error).__name__}: {error}"))


def run_vector_processes(processes: int, batch_size: int, threads: int = 1, seed: int = 0, **kwargs) -> dict:
    """``processes`` independent batched engines of ``batch_size`` tables each, one per process
    with ``threads`` torch threads and its own seed (``seed + i``), measured over the same
    seconds (they start together after every warm-up): how self-play uses several cores when one
    process's torch threads scale poorly. ``decisions_per_s`` is the sum of the processes'
    decisions divided by the longest process's measured time."""
    import multiprocessing
    from queue import Empty

    if processes < 1 or threads < 1:
        raise ValueError(f"run_vector_processes: processes and threads must be at least 1, "
                         f"got {processes} and {threads}")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    queue = context.Queue()
    workers = [context.Process(target=_vector_worker,
                               args=(i, threads, barrier, queue, dict(kwargs, batch_size=batch_size, seed=seed + i)))
               for i in range(processes)]
    for worker in workers:
        worker.start()
    rows: dict[int, dict] = {}
    errors: dict[int, str] = {}
    try:
        while len(rows) + len(errors) < processes:
            try:
                index, row = queue.get(timeout=1.0)
            except Empty:
                # a process that died without reporting (killed, out of memory) would leave the
                # others waiting at the barrier for ever
                silent = [i for i, worker in enumerate(workers)
                          if not worker.is_alive() and i not in rows and i not in errors]
                if silent and queue.empty():
                    raise RuntimeError(f"spades-bench: batched engine process(es) {silent} ended without a "
                                       f"result (exit codes {[workers[i].exitcode for i in silent]})")
                continue
            (errors if isinstance(row, str) else rows)[index] = row
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
                worker.join()
    if errors:
        # the process that failed first aborted the barrier, which the others then report
        first = sorted(errors.items(), key=lambda item: item[1].startswith("BrokenBarrierError"))[0]
        raise RuntimeError(f"spades-bench: batched engine process {first[0]} failed: {first[1]}")
    per_process = [rows[i] for i in range(processes)]
    seconds = max(r["seconds"] for r in per_process)
    decisions = sum(r["batch_size"] * r["steps"] for r in per_process)
    return dict(per_process[0], seconds=seconds, steps=sum(r["steps"] for r in per_process) / processes,
                warmup_s=max(r["warmup_s"] for r in per_process), decisions_per_s=decisions / seconds,
                processes=processes, threads_per_process=threads,
                per_process_decisions_per_s=[r["decisions_per_s"] for r in per_process])


def run_benchmarks(decisions: int = 300_000, rules: str = "standard", repeats: int = 3,
                   openspiel: bool = True, seed: int = 0, progress: Callable[[str], None] = print) -> dict:
    from spades_env import spades_v0

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


def _mode(row: dict) -> str:
    """How a batched-engine row was stepped: eager, compiled (torch) or native (C)."""
    if row.get("backend") == "native":
        return "native"
    return "compiled" if row["compiled"] else "eager"


def format_vector_table(rows: list[dict]) -> str:
    dtype = rows[0].get("obs_dtype", "float32") if rows else "float32"
    lines = [f"Batched engine (SpadesVectorEnv): random legal play, {dtype} observation + mask every decision",
             f"{'batch':>7} {'mode':>9} {'decisions/s':>13} {'ms/step':>9} {'warm-up s':>10}"]
    for r in rows:
        mode = _mode(r)
        if r.get("processes", 1) > 1:
            mode += f" x{r['processes']}"
        lines.append(f"{r['batch_size']:>7} {mode:>9} {r['decisions_per_s']:>13,.0f} "
                     f"{1e3 * r['seconds'] / r['steps']:>9.2f} {r['warmup_s']:>10.1f}")
    best = max(rows, key=lambda r: r["decisions_per_s"])
    where = f"{_mode(best)}, {best['device']}"
    per = ""
    if best.get("processes", 1) > 1:
        where += f", {best['processes']} processes of {best['threads_per_process']} thread(s)"
        per = " per process"
    lines.append(f"best: {best['decisions_per_s']:,.0f} decisions/s at batch {best['batch_size']}{per} ({where})")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    """The command line (Ctrl-C ends it with one line and status 130)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("spades-bench: interrupted", file=sys.stderr)
        return 130


# The bounds of the command line, checked before anything runs: a run of 10**15 decisions, NaN
# seconds or a million processes used to start and run on, a batch of 10**9 tables to fail after
# 44 s of other measurements.
MAX_DECISIONS = 100_000_000        # per measured run: ~10 minutes of the AEC env
MAX_REPEATS = 100
MAX_VECTOR_SECONDS = 600.0         # per batch size
MAX_BATCH_SIZE = 65_536            # tables of one batched engine (the default sizes stop at 16,384)
MAX_THREADS = 256
MAX_PROCESSES = max(8, 2 * (os.cpu_count() or 1))     # each one a whole engine with torch loaded


def _sizes(parser: argparse.ArgumentParser, text: str, flag: str) -> list[int]:
    try:
        sizes = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        parser.error(f"{flag}: expected integers separated by commas, got {text!r}")
    if not sizes or any(not 1 <= b <= MAX_BATCH_SIZE for b in sizes):
        parser.error(f"{flag} {text}: expected batch sizes 1..{MAX_BATCH_SIZE:,} separated by commas")
    return sizes


def _check_bounds(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[int], list[int]]:
    """Every number of the command line within its bound (one line and exit 2 otherwise); the
    batch sizes and the heuristic's batch sizes."""
    if not 1 <= args.decisions <= MAX_DECISIONS:
        parser.error(f"--decisions {args.decisions}: expected 1..{MAX_DECISIONS:,} decisions per run")
    if not 1 <= args.repeats <= MAX_REPEATS:
        parser.error(f"--repeats {args.repeats}: expected 1..{MAX_REPEATS} runs")
    if not (math.isfinite(args.vector_seconds) and 0 < args.vector_seconds <= MAX_VECTOR_SECONDS):
        parser.error(f"--vector-seconds {args.vector_seconds}: expected a number of seconds above 0 and at most "
                     f"{MAX_VECTOR_SECONDS:g}")
    if not 1 <= args.processes <= MAX_PROCESSES:
        parser.error(f"--processes {args.processes}: expected 1..{MAX_PROCESSES} (at least 8, or twice this "
                     "machine's cores: each process runs a whole engine)")
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:
        parser.error(f"--threads {args.threads}: expected 1..{MAX_THREADS}")
    return (_sizes(parser, args.batch_sizes, "--batch-sizes"),
            _sizes(parser, args.heuristic_batch_sizes, "--heuristic-batch-sizes"))


def _main(argv: Optional[list[str]] = None) -> int:
    from evaluation.cli_common import OneLineParser      # errors in one line, not the usage block
    parser = OneLineParser(prog="spades-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=300_000,
                        help="decisions per measured run (default 300000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per environment; the best is reported")
    parser.add_argument("--rules", default="standard", help="rules preset or YAML file (default standard)")
    parser.add_argument("--no-openspiel", action="store_true", help="skip the OpenSpiel comparison")
    parser.add_argument("--no-aec", action="store_true", help="skip the AEC env (batched engine only)")
    parser.add_argument("--no-vector", action="store_true", help="skip the batched engine")
    parser.add_argument("--batch-sizes", default=",".join(map(str, VECTOR_BATCH_SIZES)),
                        help="batched engine sizes (default 1,16,256,1024,2048,4096,8192,16384)")
    parser.add_argument("--compile", action="store_true",
                        help="also run the batched engine under torch.compile (slow first step per size)")
    parser.add_argument("--native", action="store_true",
                        help="also run the batched engine's C step (backend='native', CPU only; its random player "
                             "picks in C too; built with the system C compiler on first use). The default on the "
                             "CPU when a C compiler is found; with --native a missing compiler is an error")
    parser.add_argument("--no-native", action="store_true", help="skip the batched engine's C step")
    parser.add_argument("--device", default="cpu", help="batched engine device (cpu, cuda)")
    parser.add_argument("--vector-seconds", type=float, default=2.0,
                        help="measured seconds per batch size (batched engine and --heuristic)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for the batched engine, torch's and the C step's (default: the cores "
                             "that are free now: usable cores minus the load average, at least 1)")
    parser.add_argument("--processes", type=int, default=1,
                        help="batched engine: run this many engines at once, one per process (each with --threads "
                             "torch threads, default 1, and its own seed), and report their summed decisions/s "
                             "(default 1: one engine in this process)")
    parser.add_argument("--obs-dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                        help="batched engine: dtype of the observations (default float32, the AEC env's values; "
                             "bfloat16/float16 are the float32 values converted: 0/1 cells exact, score fractions "
                             "rounded)")
    parser.add_argument("--no-gc-freeze", action="store_true",
                        help="batched engine: leave Python's cyclic GC as is during the measurement (by default "
                             "gc.freeze() after the warm-up keeps it from rescanning torch's objects every few steps)")
    parser.add_argument("--heuristic", action="store_true",
                        help="also measure the heuristic: HeuristicAgent.act_batch on --heuristic-batch-sizes tables "
                             "of whole games against act row by row")
    parser.add_argument("--heuristic-batch-sizes", default="64,512,4096",
                        help="batch sizes for --heuristic (default 64,512,4096)")
    parser.add_argument("--search", action="store_true",
                        help="measure the players instead: the heuristic's and the search's decisions and "
                             "spades-label's labels per second, native (C) beside Python, in one run")
    parser.add_argument("--quick", action="store_true", help="a short run (50000 decisions, 1 repeat, small batches)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.json:                                 # the output rule, before anything is measured
        try:
            check_output(args.json, "--json", stream_ok=True, make_folders=False)
        except FileRuleError as exc:
            parser.error(str(exc))
    from spades_env.rules import RulesError, make_rules
    try:
        make_rules(args.rules)
    except (RulesError, OSError, ValueError) as error:
        print(f"spades-bench: error: --rules: {error}", file=sys.stderr)
        return 2
    if args.search:
        from tools.bench_players import run_players
        print(f"spades-bench --search on {machine_description()}", flush=True)
        results = run_players(games=5 if args.quick else 20, search_decisions=15 if args.quick else 60,
                              label_deals=40 if args.quick else 200, python_label_deals=4 if args.quick else 20,
                              log=lambda line: print(line, flush=True))
        if args.json:
            write_json(args.json, {"machine": machine_description(), "players": results}, "--json")
        return 0
    if args.quick:
        args.decisions, args.repeats, args.vector_seconds = 50_000, 1, 0.5
        args.batch_sizes = "1,256,4096"
    batch_sizes, heuristic_sizes = _check_bounds(parser, args)
    if args.native and args.device != "cpu":
        parser.error("--native runs on the CPU: leave --device at cpu")
    if args.native and args.no_native:
        parser.error("--native and --no-native contradict each other")
    native, native_note = args.native, None
    if not args.native and not args.no_native and not args.no_vector and args.device == "cpu":
        from spades_env.native import unavailable_reason

        why_not = unavailable_reason()
        native = why_not is None
        if why_not:
            native_note = f"(the C step is skipped: {why_not})"
    if not args.no_vector:
        from spades_env.vector import VectorEnvError, usable_device

        try:
            usable_device(args.device)
        except VectorEnvError as error:
            parser.error(f"--device: {error}")
    output: dict = {"machine": machine_description(), "rules": args.rules}
    if not args.no_aec:
        print(f"spades-bench: {args.decisions:,} decisions x {args.repeats} repeats per environment ...", flush=True)
        results = run_benchmarks(args.decisions, args.rules, args.repeats, not args.no_openspiel, args.seed,
                                 progress=lambda line: print(line, flush=True))
        print()
        print(format_table(results, args.rules))
        output["results"] = results
    if not args.no_vector:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        else:
            # Threads on a core another job is using wait for each other at every step: on 2 cores
            # with one busy, 2 threads gave the C step 85-92k decisions/s against ~2M with one.
            from train.ppo.threads import set_training_threads
            set_training_threads(0, log=lambda line: print(line.replace("torch threads", "threads"), flush=True))
        rows = []
        output["torch"] = torch.__version__
        output["vector_device"] = accelerator_description(args.device)
        settings = dict(seconds=args.vector_seconds, rules=args.rules, device=args.device,
                        gc_freeze=not args.no_gc_freeze, obs_dtype=args.obs_dtype)
        if args.processes > 1:
            threads = args.threads or 1
            output["torch_threads"] = threads
            output["processes"] = args.processes
            print(f"\nbatched engine on {output['vector_device']} ({args.processes} processes of {threads} torch "
                  f"thread(s), one engine each): batch sizes {batch_sizes} per process ...", flush=True)
        else:
            output["torch_threads"] = torch.get_num_threads()
            print(f"\nbatched engine on {output['vector_device']} ({torch.get_num_threads()} torch threads): "
                  f"batch sizes {batch_sizes} ...", flush=True)
        modes = [(False, "torch")] + ([(True, "torch")] if args.compile else []) + (
            [(False, "native")] if native else [])
        if native_note:
            print(native_note, flush=True)
        for compiled, backend in modes:
            for b in batch_sizes:
                if args.processes > 1:
                    row = run_vector_processes(args.processes, b, threads, seed=args.seed, compile=compiled,
                                               backend=backend, **settings)
                else:
                    row = run_vector(b, compile=compiled, seed=args.seed, backend=backend, **settings)
                rows.append(row)
                print(f"  batch {b:>6} {_mode(row):>9}: "
                      f"{row['decisions_per_s']:>13,.0f} decisions/s", flush=True)
        print()
        print(format_vector_table(rows))
        output["vector"] = rows
        if args.quick:
            print("(--quick: batches of at most 4,096 tables for half a second each, so below the batched "
                  "engine's best; `spades-bench` measures up to 16,384 tables, the figures the README quotes)")
    if args.heuristic:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        print(f"\nheuristic ({torch.get_num_threads()} torch threads), whole games of {args.rules}:", flush=True)
        print(f"{'tables':>8} {'act_batch decisions/s':>22} {'act row by row':>15} {'ratio':>6}")
        heuristic_rows = []
        for b in heuristic_sizes:
            row = run_heuristic(b, args.vector_seconds, args.rules, args.seed)
            heuristic_rows.append(row)
            print(f"{b:>8} {row['decisions_per_s']:>22,.0f} {row['row_by_row_decisions_per_s']:>15,.0f} "
                  f"{row['decisions_per_s'] / row['row_by_row_decisions_per_s']:>5.1f}x", flush=True)
        output["heuristic"] = heuristic_rows
    if args.json:
        write_json(args.json, output, "--json")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
