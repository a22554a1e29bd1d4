"""``spades-eval``: matches between agents over fixed, seeded deals, with confidence intervals.

A match is team A (seats 0+2) against team B (seats 1+3)::

    spades-eval --team-a heuristic --team-b random --deals 500 --duplicate --seed 0 --json out.json
    spades-eval --team-a neural:checkpoint=new.pt --baseline neural --team-b heuristic --deals 2000 --duplicate

and from Python::

    from train.evaluate import evaluate, crossplay, compare
    result = evaluate("heuristic", "random", deals=500, duplicate=True, seed=0)
    print(result.format()); result.to_dict()

Deals and every agent's seed derive from (match seed, deal, seat), so results do not depend on
the number of workers. How matches are played, the statistics, cross-play and comparisons are
described in docs/evaluation.md; the intervals live in :mod:`train.evaluation_stats`, the
reports in :mod:`train.evaluation_report`, the command line in :mod:`train.evaluation_cli`.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import math
import multiprocessing
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import agents as agent_registry
from agents.specs import AgentSpecError, parse_value  # noqa: F401 (parse_value: re-exported)
from agents.specs import parse_agent_spec as _parse_agent_spec
from spades_env import spades_v0
from spades_env.game import IllegalActionError
from spades_env.rules import Rules, RulesError, make_rules

from .evaluation_report import format_comparison, format_crossplay, format_match, plot_crossplay
from .evaluation_stats import (Interval, contrast_interval, mean_interval, ratio_interval, t_p_value, t_quantile,
                               wilson_interval)

MODES = ("hands", "games")
TEAMS = ("A", "B")


class EvaluationError(ValueError):
    """Bad input to an evaluation: an unknown agent, a malformed spec, a bad count or bad rules."""


# ---------------------------------------------------------------------------------------------
# Agent specs and teams
# ---------------------------------------------------------------------------------------------

def parse_agent_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"search:worlds=20,seed=3"`` -> ``("search", {"worlds": 20, "seed": 3})``
    (:func:`agents.specs.parse_agent_spec`, its errors as :class:`EvaluationError`)."""
    try:
        return _parse_agent_spec(spec)
    except AgentSpecError as exc:
        raise EvaluationError(str(exc)) from None


def split_spec_list(items: Sequence[str]) -> list[str]:
    """Agent specs from ``--crossplay`` arguments, comma- and/or space-separated.

    A comma-separated piece that holds ``=`` but no ``:`` continues the previous spec's options:
    ``"search:worlds=20,seed=3,heuristic"`` -> ``["search:worlds=20,seed=3", "heuristic"]``.
    """
    specs: list[str] = []
    for item in items:
        for piece in item.split(","):
            piece = piece.strip()
            if not piece:
                continue
            if "=" in piece and ":" not in piece.split("=", 1)[0]:
                if not specs or ":" not in specs[-1]:
                    raise EvaluationError(f"--crossplay: option {piece!r} does not follow an agent spec "
                                          "(expected NAME or NAME:key=value,...)")
                specs[-1] += "," + piece
            else:
                specs.append(piece)
    return specs


def _check_registered(name: str, spec: str) -> None:
    known = agent_registry.available()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise EvaluationError(f"agent spec {spec!r}: unknown agent {name!r}{hint}; "
                              f"registered agents: {', '.join(known)}")


@dataclass(frozen=True)
class Player:
    """How to build the agent of one seat, and its name in reports.

    ``factory()`` returns a fresh agent (an object with ``act(obs, info)`` and ``reset(seed)``);
    it is called once per worker process. ``salt`` is folded into the derived seeds.
    """

    label: str
    factory: Callable[[], Any]
    salt: str = ""

    @classmethod
    def of(cls, spec: Any) -> "Player":
        """A player from a spec string (``"name:key=value,..."``), a factory, or a Player."""
        if isinstance(spec, Player):
            return spec
        if isinstance(spec, str):
            name, options = parse_agent_spec(spec)
            _check_registered(name, spec)
            salt = "" if options.get("seed") is None else str(options["seed"])
            return cls(spec.strip(), functools.partial(agent_registry.make, name, **options), salt)
        if hasattr(spec, "act") and not isinstance(spec, type):
            raise EvaluationError(f"{spec!r} is an agent instance; pass a spec string or a factory "
                                  "(e.g. a class or a function returning a new agent): every seat "
                                  "needs an agent of its own")
        if callable(spec):
            label = getattr(spec, "__name__", None) or type(spec).__name__
            return cls(label, spec)
        raise EvaluationError(f"agent {spec!r}: expected a spec string like 'heuristic' or "
                              "'search:worlds=20', or a factory returning an agent")


@dataclass(frozen=True)
class Team:
    """Two partners: ``first`` sits on the team's lower seat (0, or 1), ``second`` on seat 2 (or 3)."""

    first: Player
    second: Player

    @classmethod
    def of(cls, spec: Any) -> "Team":
        """A team from a spec or factory (both partners alike), a pair of them, or a Team."""
        if isinstance(spec, Team):
            return spec
        if isinstance(spec, (tuple, list)):
            if len(spec) != 2:
                raise EvaluationError(f"team {spec!r}: expected one agent or a pair (seat 0/1 agent, "
                                      f"seat 2/3 agent), got {len(spec)} entries")
            return cls(Player.of(spec[0]), Player.of(spec[1]))
        player = Player.of(spec)
        return cls(player, player)

    @property
    def label(self) -> str:
        if self.first == self.second or (self.first.label == self.second.label and self.first.salt == self.second.salt):
            return self.first.label
        return f"{self.first.label} + {self.second.label}"


def resolve_rules(rules: Any) -> Rules:
    """Rules for an evaluation: a preset name, a YAML path, a mapping or a Rules; four players."""
    try:
        resolved = rules if isinstance(rules, Rules) else make_rules(rules)
    except RulesError as exc:
        raise EvaluationError(str(exc)) from None
    if resolved.players != 4:
        raise EvaluationError(f"rules {resolved.name!r} have {resolved.players} players: a match needs "
                              "four seats (team A on 0+2, team B on 1+3)")
    return resolved


def default_reference() -> str:
    """The crossplay reference team: ``heuristic`` once it is registered, else ``random``."""
    return "heuristic" if "heuristic" in agent_registry.available() else "random"


# ---------------------------------------------------------------------------------------------
# Seeds and deals
# ---------------------------------------------------------------------------------------------

def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from its parts, stable across processes, platforms and Python versions
    (unlike the salted built-in ``hash``)."""
    text = "/".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


def make_deal(seed: int, index: int, rules: Any = "standard") -> tuple[list[list[int]], Optional[int]]:
    """Deal ``index`` of a match seeded ``seed``: four sorted hands of 13 card ids, and the dealer
    (``None`` when the rules fix the dealer)."""
    rules = rules if isinstance(rules, Rules) else make_rules(rules)
    rng = random.Random(derive_seed("spades-eval", seed, "deal", index))
    dealer = rng.randrange(4)
    deck = list(range(52))
    rng.shuffle(deck)
    hands = [sorted(deck[13 * k:13 * (k + 1)]) for k in range(4)]
    return hands, (None if rules.fixed_dealer is not None else dealer)


def make_deals(n: int, seed: int = 0, rules: Any = "standard") -> list[tuple[list[list[int]], Optional[int]]]:
    """The first ``n`` deals of a match seeded ``seed`` (what ``evaluate`` plays in hands mode)."""
    return [make_deal(seed, i, rules) for i in range(n)]


def seat_seed(seed: int, mode: str, index: int, seat: int, salt: str = "") -> int:
    """The seed ``agent.reset`` gets on ``seat`` for deal (or game) ``index``."""
    return derive_seed("spades-eval", seed, mode, "agent", index, seat, salt)


def game_seed(seed: int, index: int) -> int:
    """The ``env.reset`` seed of game ``index`` (games mode)."""
    return derive_seed("spades-eval", seed, "game", index)


# ---------------------------------------------------------------------------------------------
# Playing (in the worker processes)
# ---------------------------------------------------------------------------------------------

@dataclass
class TeamTally:
    """Raw counts for one team; summed over plays in deal order."""

    hands: int = 0
    points: int = 0
    contracts: int = 0
    made: int = 0
    set: int = 0
    bid_error_sum: int = 0
    bid_error_abs_sum: int = 0
    nil_bids: int = 0
    nil_kept: int = 0
    blind_nil_bids: int = 0
    blind_nil_kept: int = 0
    bags: int = 0
    games: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    decisions: int = 0
    seconds: float = 0.0

    def add(self, other: "TeamTally") -> None:
        mine, theirs = self.__dict__, other.__dict__
        for name in self.__dataclass_fields__:
            mine[name] += theirs[name]


@dataclass
class PlayOutcome:
    """One play of a deal (a hand) or of a game seed (a game) as the worker reports it."""

    unit: int
    play: int                       # 0, or 1 for the swapped play of a duplicate
    hands: int
    tallies: dict[str, TeamTally]   # "A", "B"
    winner: Optional[str] = None    # games mode: "A", "B" or None (tie)
    record: Optional[dict] = None
    kinds: dict[str, list[int]] = field(default_factory=dict)   # hand kind -> [hands, A minus B points]

    @property
    def diff(self) -> int:
        return self.tallies["A"].points - self.tallies["B"].points


@dataclass
class MatchConfig:
    """Everything a worker needs to play one match (picklable when the factories are)."""

    team_a: Team
    team_b: Team
    rules: Rules
    mode: str
    units: int
    duplicate: bool
    seed: int
    start_scores: Optional[tuple[int, int]] = None
    keep_records: bool = False

    def player(self, team: str, role: int) -> Player:
        t = self.team_a if team == "A" else self.team_b
        return t.first if role == 0 else t.second

    def team_seats(self, play: int) -> dict[str, tuple[int, int]]:
        return {"A": (0, 2), "B": (1, 3)} if play == 0 else {"A": (1, 3), "B": (0, 2)}


def side_contract(hand: dict, rules: Rules, side: int) -> tuple[int, int]:
    """A side's contract in a scored hand (its members' bids other than nil) and the tricks that
    count toward it (a nil bidder's only where ``nil_tricks_count_for_partner``)."""
    bids, taken = hand["bids"], hand["tricks_taken"]
    members = rules.side_members(side)
    contract = sum(bids[m] for m in members if bids[m] > 0)
    counted = sum(taken[m] for m in members if bids[m] > 0 or rules.nil_tricks_count_for_partner)
    return contract, counted


def team_points(hand: dict, rules: Rules, seats: tuple[int, int]) -> int:
    """The points a team's seats scored in a hand (their sides' score changes)."""
    return sum(hand["score_change"][d] for d in sorted({rules.side_of(s) for s in seats}))


def tally_hand(hand: dict, rules: Rules, team_seats: dict[str, tuple[int, int]],
               tallies: dict[str, TeamTally]) -> None:
    """Add one scored hand of a game record to the teams' tallies."""
    bids, blind, taken = hand["bids"], hand["blind"], hand["tricks_taken"]
    for team, seats in team_seats.items():
        t = tallies[team]
        sides = sorted({rules.side_of(s) for s in seats})
        t.hands += 1
        t.points += team_points(hand, rules, seats)
        t.bags += sum(hand["bags_taken"][d] for d in sides)
        for d in sides:
            contract, counted = side_contract(hand, rules, d)
            if contract == 0:
                continue
            t.contracts += 1
            if counted >= contract:
                t.made += 1
            else:
                t.set += 1
            t.bid_error_sum += counted - contract
            t.bid_error_abs_sum += abs(counted - contract)
        for s in seats:
            if bids[s] == 0:
                kept = int(taken[s] == 0)
                if blind[s]:
                    t.blind_nil_bids += 1
                    t.blind_nil_kept += kept
                else:
                    t.nil_bids += 1
                    t.nil_kept += kept


HAND_KINDS = ("no nil: both made", "no nil: A set", "no nil: B set", "no nil: both set",
              "A nil kept", "A nil broken", "B nil kept", "B nil broken", "nil by both teams")


def hand_kind(hand: dict, rules: Rules, team_seats: dict[str, tuple[int, int]]) -> str:
    """Which of :data:`HAND_KINDS` a scored hand is, seen from team A: whether a team bid nil
    (or blind nil; "broken": any of its nil bidders took a trick), else which contracts were set."""
    bids, taken = hand["bids"], hand["tricks_taken"]
    nil_kept = {team: [taken[s] == 0 for s in seats if bids[s] == 0] for team, seats in team_seats.items()}
    if nil_kept["A"] and nil_kept["B"]:
        return "nil by both teams"
    for team in TEAMS:
        if nil_kept[team]:
            return f"{team} nil {'kept' if all(nil_kept[team]) else 'broken'}"
    set_ = {}
    for team, seats in team_seats.items():
        set_[team] = False
        for d in sorted({rules.side_of(s) for s in seats}):
            contract, counted = side_contract(hand, rules, d)
            set_[team] |= counted < contract
    if set_["A"] and set_["B"]:
        return "no nil: both set"
    return "no nil: A set" if set_["A"] else "no nil: B set" if set_["B"] else "no nil: both made"


class _Worker:
    """Per-process state: one env per rule set, the agents of every match (built lazily)."""

    def __init__(self, configs: Sequence[MatchConfig]) -> None:
        self.configs = list(configs)
        self.envs: dict[tuple, Any] = {}
        self.agents: dict[tuple, Any] = {}

    def env(self, config: MatchConfig):
        key = (config.rules, config.mode)
        env = self.envs.get(key)
        if env is None:
            episode = "hand" if config.mode == "hands" else "game"
            env = self.envs[key] = spades_v0.raw_env(rules=config.rules, episode=episode, reward_scale=1.0)
        return env

    def agent(self, m: int, team: str, role: int):
        key = (m, team, role)
        agent = self.agents.get(key)
        if agent is None:
            player = self.configs[m].player(team, role)
            agent = player.factory()
            if not callable(getattr(agent, "act", None)):
                raise EvaluationError(f"agent factory {player.label!r} returned {agent!r}, which has no act()")
            self.agents[key] = agent
        return agent

    def play_unit(self, m: int, unit: int) -> list[PlayOutcome]:
        config = self.configs[m]
        outcomes = [self.play(m, unit, 0)]
        if config.duplicate:
            outcomes.append(self.play(m, unit, 1))
            if config.mode == "games":
                _check_same_deals(outcomes, unit)
        if not config.keep_records:
            for o in outcomes:
                o.record = None
        return outcomes

    def play(self, m: int, unit: int, play: int) -> PlayOutcome:
        config = self.configs[m]
        rules = config.rules
        env = self.env(config)
        seats_of = config.team_seats(play)
        team_of_seat = {s: team for team, seats in seats_of.items() for s in seats}
        roles = [(team_of_seat[s], seats_of[team_of_seat[s]].index(s)) for s in range(4)]
        seated = [self.agent(m, team, role) for team, role in roles]
        salts = [config.player(team, role).salt for team, role in roles]
        options: dict[str, Any] = {}
        if config.start_scores is not None:
            by_team = dict(zip(TEAMS, config.start_scores))
            options["scores"] = [by_team[team_of_seat[rules.side_members(d)[0]]] for d in range(rules.num_sides)]
        if config.mode == "hands":
            deal, dealer = make_deal(config.seed, unit, rules)
            options["deal"] = deal
            if dealer is not None:
                options["dealer"] = dealer
            env_seed = derive_seed("spades-eval", config.seed, "env", unit)
        else:
            env_seed = game_seed(config.seed, unit)
        env.reset(seed=env_seed, options=options)
        for s, agent in enumerate(seated):
            agent.reset(seat_seed(config.seed, config.mode, unit, s, salts[s]))

        tallies = {team: TeamTally() for team in TEAMS}
        seconds = [0.0] * 4
        decisions = [0] * 4
        mapping = env.agent_name_mapping
        clock = time.perf_counter
        for name in env.agent_iter():
            obs, _, termination, truncation, info = env.last()
            if termination or truncation:
                env.step(None)
                continue
            seat = mapping[name]
            start = clock()
            action = seated[seat].act(obs, info)
            seconds[seat] += clock() - start
            decisions[seat] += 1
            try:
                env.step(action)
            except IllegalActionError as exc:
                team = team_of_seat[seat]
                label = (config.team_a if team == "A" else config.team_b).label
                raise RuntimeError(f"team {team} ({label}) on seat {seat} chose an illegal action in "
                                   f"{config.mode[:-1]} {unit} (play {play}): {exc}") from None

        game = env.game
        hands = game.hand_records   # what game_record() holds per hand, without the rules dict
        kinds: dict[str, list[int]] = {}
        for hand in hands:
            tally_hand(hand, rules, seats_of, tallies)
            count = kinds.setdefault(hand_kind(hand, rules, seats_of), [0, 0])
            count[0] += 1
            count[1] += team_points(hand, rules, seats_of["A"]) - team_points(hand, rules, seats_of["B"])
        keep = config.keep_records or (config.duplicate and config.mode == "games")
        record = env.game_record() if keep else None
        for team, seats in seats_of.items():
            tallies[team].decisions = sum(decisions[s] for s in seats)
            tallies[team].seconds = sum(seconds[s] for s in seats)
        winner = None
        if config.mode == "games":
            win_side = game.winner if game.game_over else None
            if win_side is not None:
                win_seats = rules.side_members(win_side)
                winner = team_of_seat[win_seats[0]]
            for team in TEAMS:
                t = tallies[team]
                t.games = 1
                t.wins, t.losses, t.ties = int(winner == team), int(winner not in (team, None)), int(winner is None)
        return PlayOutcome(unit, play, len(hands), tallies, winner, record, kinds)


def _check_same_deals(outcomes: list[PlayOutcome], unit: int) -> None:
    """Duplicate games must see the same deal sequence (the env's stream is action-independent)."""
    first, second = (o.record["hands"] for o in outcomes)
    for k, (h1, h2) in enumerate(zip(first, second)):
        if h1["deal"] != h2["deal"] or h1["dealer"] != h2["dealer"]:
            raise RuntimeError(f"duplicate game {unit}: hand {k + 1} was dealt differently in the two "
                               "plays; the env's deal sequence depends on the play (a bug in spades_env)")


_WORKER: Optional[_Worker] = None


def die_with_parent() -> None:
    """Ask Linux to end this (worker) process when its parent dies, however the parent dies
    (SIGKILL included), so that no orphaned worker plays on; elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:          # the parent died before the request: end now
        os._exit(1)


def _init_worker(configs: Sequence[MatchConfig]) -> None:
    global _WORKER
    die_with_parent()
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)    # not the parent's handler: SIGTERM ends a worker
    torch = sys.modules.get("torch")
    if torch is not None:
        # A forked child must not enter the parent's OpenMP thread pool (it hangs); one
        # intra-op thread per worker runs torch ops inline, and workers already share the cores.
        torch.set_num_threads(1)
    _WORKER = _Worker(configs)


def _run_tasks(tasks: list[tuple[int, int]]) -> list[tuple[int, int, list[PlayOutcome]]]:
    return [(m, unit, _WORKER.play_unit(m, unit)) for m, unit in tasks]


def mp_context():
    # fork: factories (lambdas, closures, agents registered at run time) need not be picklable.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def default_workers() -> int:
    """The CPUs this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


_RAY_WORKERS: dict[str, "_Worker"] = {}


def _ray_play_tasks(shared: tuple[str, list[MatchConfig]], tasks: list[tuple[int, int]]):
    """A Ray task: the units ``tasks`` of the matches (one ``_Worker`` per match set and process)."""
    token, configs = shared
    worker = _RAY_WORKERS.get(token)
    if worker is None:
        import torch
        torch.set_num_threads(1)                  # one task per CPU already
        _RAY_WORKERS.clear()
        worker = _RAY_WORKERS[token] = _Worker(configs)
    return [(m, unit, worker.play_unit(m, unit)) for m, unit in tasks]


def _execute_on_ray(configs: Sequence[MatchConfig], tasks: list[tuple[int, int]], finished: Callable, address: str,
                    workers: int) -> None:
    """``_execute`` over a Ray cluster (:mod:`train.ray_cluster`): the same units, the same outcomes."""
    import uuid

    from .ray_cluster import LOCAL, RayUnavailable, chunked, connect, map_unordered
    try:
        ray = connect(address, workers if address == LOCAL else None)
    except RayUnavailable as exc:
        raise EvaluationError(str(exc)) from None
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    size = max(1, min(16, len(tasks) // (cpus * 8)))
    try:
        for batch in map_unordered(ray, _ray_play_tasks, chunked(tasks, size), shared=(uuid.uuid4().hex, list(configs))):
            for m, u, outcomes in batch:
                finished(m, u, outcomes)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, (EvaluationError, IllegalActionError)):
            raise cause from None
        raise EvaluationError(f"a Ray task failed: {str(cause or exc).splitlines()[0]}") from None
    except ray.exceptions.RayError as exc:
        raise EvaluationError(f"the Ray cluster failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); the match "
                              "was not finished") from None


def _execute(configs: Sequence[MatchConfig], workers: int, progress: bool,
             desc: str = "spades-eval", ray: Optional[str] = None,
             journal: Optional[str] = None) -> list[list[list[PlayOutcome]]]:
    """Play every unit of every match; outcomes are returned by match and unit (deal order).
    ``ray``: a Ray cluster's address (``"local"``: start one here) to play them on instead.
    ``journal``: a file that keeps every finished unit, and from which a killed run resumes
    (:mod:`train.evaluation_journal`)."""
    from tqdm import tqdm

    from .evaluation_journal import Journal

    log = None if journal is None else Journal(journal, configs, EvaluationError)
    results: list[list[Any]] = [[None] * config.units for config in configs]
    for (m, u), outcomes in (log.done.items() if log is not None else ()):
        results[m][u] = outcomes
    tasks = [(m, u) for m, config in enumerate(configs) for u in range(config.units) if results[m][u] is None]
    workers = max(1, min(workers, len(tasks)))
    unit = "deal" if configs[0].mode == "hands" else "game"
    total = sum(config.units for config in configs)
    try:
        with tqdm(total=total, initial=total - len(tasks), disable=not progress, file=sys.stderr, unit=unit,
                  desc=desc, dynamic_ncols=True) as bar:

            def finished(m: int, u: int, outcomes: list[PlayOutcome]) -> None:
                results[m][u] = outcomes
                if log is not None:
                    log.add(m, u, outcomes)
                bar.update()

            if not tasks:                       # all in the journal already
                return results
            if ray is not None:
                _execute_on_ray(configs, tasks, finished, ray, workers)
            elif workers == 1:
                worker = _Worker(configs)
                for m, u in tasks:
                    finished(m, u, worker.play_unit(m, u))
            else:
                _execute_on_processes(configs, tasks, finished, workers)
    finally:
        if log is not None:
            log.close()
    return results


def _execute_on_processes(configs: Sequence[MatchConfig], tasks: list[tuple[int, int]], finished: Callable,
                          workers: int) -> None:
    """``_execute`` over a local process pool that fails loudly (BrokenProcessPool) if a worker
    dies, e.g. killed for memory, instead of waiting forever for its results."""
    size = max(1, min(16, len(tasks) // (workers * 8)))
    chunks = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    pool = ProcessPoolExecutor(workers, mp_context=mp_context(), initializer=_init_worker, initargs=(list(configs),))
    done = False
    try:
        for future in as_completed([pool.submit(_run_tasks, chunk) for chunk in chunks]):
            for m, u, outcomes in future.result():
                finished(m, u, outcomes)
        done = True
    except BrokenProcessPool:
        raise EvaluationError("a worker process died (killed from outside, or out of memory); the match was not "
                              "finished: run it again, with fewer --workers if memory is short") from None
    finally:
        if not done:   # an error or Ctrl-C: end the workers now, wait for none of their work
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                if process.is_alive():
                    process.terminate()
        pool.shutdown(wait=done, cancel_futures=True)


def _ratio(a: float, b: float) -> Optional[float]:
    return a / b if b else None


@dataclass
class TeamStats:
    """One team's play over the whole match (every hand it played, both plays of a duplicate)."""

    name: str
    hands: int
    points: int
    points_per_hand: float
    contracts: int
    contracts_made: int
    contracts_set: int
    make_rate: Optional[float]
    bid_error_mean: Optional[float]       # tricks toward the contract minus the contract
    bid_error_abs_mean: Optional[float]
    nil_bids: int
    nil_kept: int
    nil_rate: Optional[float]
    blind_nil_bids: int
    blind_nil_kept: int
    blind_nil_rate: Optional[float]
    bags: int
    bags_per_hand: float
    games: int
    wins: int
    losses: int
    ties: int
    decisions: int
    seconds_per_decision: Optional[float]

    @classmethod
    def from_tally(cls, name: str, t: TeamTally) -> "TeamStats":
        return cls(name=name, hands=t.hands, points=t.points, points_per_hand=t.points / t.hands,
                   contracts=t.contracts, contracts_made=t.made, contracts_set=t.set,
                   make_rate=_ratio(t.made, t.contracts), bid_error_mean=_ratio(t.bid_error_sum, t.contracts),
                   bid_error_abs_mean=_ratio(t.bid_error_abs_sum, t.contracts),
                   nil_bids=t.nil_bids, nil_kept=t.nil_kept, nil_rate=_ratio(t.nil_kept, t.nil_bids),
                   blind_nil_bids=t.blind_nil_bids, blind_nil_kept=t.blind_nil_kept,
                   blind_nil_rate=_ratio(t.blind_nil_kept, t.blind_nil_bids), bags=t.bags,
                   bags_per_hand=t.bags / t.hands, games=t.games, wins=t.wins, losses=t.losses, ties=t.ties,
                   decisions=t.decisions, seconds_per_decision=_ratio(t.seconds, t.decisions))


TIMING_FIELDS = ("elapsed_s", "hands_per_s", "seconds_per_decision", "workers")


def _strip_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_timing(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [_strip_timing(v) for v in value]
    return value


@dataclass
class MatchResult:
    """The outcome of :func:`evaluate`. ``to_dict()`` is what ``--json`` writes."""

    team_a: str
    team_b: str
    rules: str
    mode: str
    duplicate: bool
    seed: int
    units: int                       # deals (hands mode) or game seeds (games mode)
    hands: int                       # hands played in all
    confidence: float
    score_diff: Interval             # points per hand, A minus B
    teams: dict[str, TeamStats]
    unit_diffs: list[float]          # per unit: A minus B points per hand (plays pooled)
    unit_points: list[int] = field(default_factory=list)   # per unit: A minus B points (plays summed)
    unit_hands: list[int] = field(default_factory=list)    # per unit: hands played (plays summed)
    unit_wins: list[float] = field(default_factory=list)   # games mode, per unit: A's share of the games won
    game_diff: Optional[Interval] = None   # games mode: points won per game, A minus B
    win_rate: Optional[Interval] = None    # games mode: A's win rate (ties count 1/2)
    hands_per_game: Optional[float] = None
    start_scores: Optional[tuple[int, int]] = None
    rules_settings: dict = field(default_factory=dict)
    elapsed_s: Optional[float] = None
    workers: Optional[int] = None
    records: Optional[list[dict]] = None   # with keep_records: one record per play, in order
    hand_kinds: dict[str, dict] = field(default_factory=dict)   # where the points come from (HAND_KINDS)

    @property
    def hands_per_s(self) -> Optional[float]:
        return self.hands / self.elapsed_s if self.elapsed_s else None

    def to_dict(self, timing: bool = True, unit_diffs: bool = True) -> dict:
        """A JSON-ready dict; ``timing=False`` drops everything that depends on the machine."""
        out = {
            "team_a": self.team_a, "team_b": self.team_b, "seats": {"A": [0, 2], "B": [1, 3]},
            "rules": self.rules, "mode": self.mode, "duplicate": self.duplicate, "seed": self.seed,
            "units": self.units, "unit": "deal" if self.mode == "hands" else "game",
            "hands": self.hands, "confidence": self.confidence,
            "start_scores": list(self.start_scores) if self.start_scores else None,
            "score_diff_per_hand": self.score_diff.to_dict(),
            "game_diff": self.game_diff.to_dict() if self.game_diff else None,
            "win_rate_a": self.win_rate.to_dict() if self.win_rate else None,
            "hands_per_game": self.hands_per_game,
            "teams": {k: asdict(v) for k, v in self.teams.items()},
            "elapsed_s": self.elapsed_s, "hands_per_s": self.hands_per_s, "workers": self.workers,
            "rules_settings": self.rules_settings,
            "hand_kinds": self.hand_kinds,
        }
        if unit_diffs:
            out["unit_diffs"] = list(self.unit_diffs)
        return out if timing else _strip_timing(out)

    def format(self) -> str:
        return format_match(self)


def summarize(config: MatchConfig, outcomes: list[list[PlayOutcome]], confidence: float = 0.95,
              elapsed: Optional[float] = None, workers: Optional[int] = None) -> MatchResult:
    """Aggregate the plays of a match, in deal order."""
    tallies = {team: TeamTally() for team in TEAMS}
    diffs, hands = [], []
    game_values, win_values = [], []
    records = [] if config.keep_records else None
    kinds = {kind: [0, 0] for kind in HAND_KINDS}
    for unit_outcomes in outcomes:
        d = sum(o.diff for o in unit_outcomes)
        h = sum(o.hands for o in unit_outcomes)
        diffs.append(d)
        hands.append(h)
        k = len(unit_outcomes)
        game_values.append(d / k)
        w = sum(1.0 if o.winner == "A" else 0.5 if o.winner is None else 0.0 for o in unit_outcomes)
        win_values.append(w / k)
        for o in unit_outcomes:
            for team in TEAMS:
                tallies[team].add(o.tallies[team])
            if records is not None:
                records.append(o.record)
            for kind, (n, points) in o.kinds.items():
                kinds[kind][0] += n
                kinds[kind][1] += points
    if config.mode == "hands":
        score_diff = mean_interval([d / h for d, h in zip(diffs, hands)], confidence)
        game_diff = win_rate = hands_per_game = None
    else:
        score_diff = ratio_interval(diffs, hands, confidence)
        game_diff = mean_interval(game_values, confidence)
        # Wilson over the units (games, or duplicate pairs: their two games share the cards).
        win_rate = wilson_interval(math.fsum(win_values), config.units, confidence)
        if config.duplicate:
            win_rate.method = "Wilson over duplicate pairs"
        hands_per_game = sum(hands) / sum(len(u) for u in outcomes)
    names = {"A": config.team_a.label, "B": config.team_b.label}
    total_hands = sum(hands)
    hand_kinds = {kind: {"hands": n, "share": n / total_hands, "mean_diff": points / n if n else None,
                         "points_per_hand": points / total_hands}
                  for kind, (n, points) in kinds.items()}
    return MatchResult(
        team_a=names["A"], team_b=names["B"], rules=config.rules.name, mode=config.mode,
        duplicate=config.duplicate, seed=config.seed, units=config.units, hands=sum(hands),
        confidence=confidence, score_diff=score_diff,
        teams={team: TeamStats.from_tally(names[team], tallies[team]) for team in TEAMS},
        unit_diffs=[d / h for d, h in zip(diffs, hands)], unit_points=diffs, unit_hands=hands,
        unit_wins=win_values if config.mode == "games" else [], game_diff=game_diff, win_rate=win_rate,
        hands_per_game=hands_per_game, start_scores=config.start_scores,
        rules_settings=config.rules.to_dict(), elapsed_s=elapsed, workers=workers, records=records,
        hand_kinds=hand_kinds)


# ---------------------------------------------------------------------------------------------
# The Python API
# ---------------------------------------------------------------------------------------------

TeamSpec = Union[str, Callable[[], Any], Player, Team, Sequence[Any]]


def _check_count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise EvaluationError(f"{what}={value!r}: expected a positive whole number")
    return value


def _match_config(team_a: TeamSpec, team_b: TeamSpec, deals: Optional[int], games: Optional[int],
                  mode: Optional[str], duplicate: bool, rules: Any, seed: int,
                  start_scores: Optional[Sequence[int]], keep_records: bool) -> MatchConfig:
    if games is not None and deals is not None:
        raise EvaluationError("give deals= (single hands) or games= (whole games), not both")
    if mode is None:
        mode = "games" if games is not None else "hands"
    if mode not in MODES:
        raise EvaluationError(f"mode={mode!r}: expected 'hands' or 'games'")
    if games is not None and mode != "games":
        raise EvaluationError("games= needs mode='games'")
    count = games if games is not None else (deals if deals is not None else 100)
    count = _check_count(count, "games" if mode == "games" else "deals")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EvaluationError(f"seed={seed!r}: expected an integer")
    resolved = resolve_rules(rules)
    if start_scores is not None:
        try:
            start_scores = tuple(int(s) for s in start_scores)
        except (TypeError, ValueError):
            raise EvaluationError(f"start_scores={start_scores!r}: expected two integers (team A, team B)") from None
        if len(start_scores) != 2:
            raise EvaluationError(f"start_scores={start_scores!r}: expected two integers (team A, team B)")
    return MatchConfig(Team.of(team_a), Team.of(team_b), resolved, mode, count, bool(duplicate), seed,
                       start_scores, keep_records)


def _check_agents_build(configs: Sequence[MatchConfig]) -> None:
    """Build every distinct player once, here, so that bad options fail before any play."""
    seen = set()
    for config in configs:
        for team in (config.team_a, config.team_b):
            for player in (team.first, team.second):
                key = (player.label, id(player.factory))
                if key in seen:
                    continue
                seen.add(key)
                try:
                    agent = player.factory()
                except Exception as exc:  # a bad option, a missing checkpoint...
                    raise EvaluationError(f"agent {player.label!r} cannot be built: {exc}") from None
                if not callable(getattr(agent, "act", None)):
                    raise EvaluationError(f"agent {player.label!r}: its factory returned {agent!r}, "
                                          "which has no act(obs, info) method")


def _check_workers(workers: Optional[int]) -> int:
    if workers is None:
        return default_workers()
    return _check_count(workers, "workers")


def evaluate(team_a: TeamSpec, team_b: TeamSpec, deals: Optional[int] = None, *,
             games: Optional[int] = None, mode: Optional[str] = None, duplicate: bool = False,
             rules: Any = "standard", seed: int = 0, workers: Optional[int] = None,
             progress: bool = False, start_scores: Optional[Sequence[int]] = None,
             confidence: float = 0.95, keep_records: bool = False, ray: Optional[str] = None,
             journal: Optional[str] = None) -> MatchResult:
    """Play team A (seats 0+2) against team B (seats 1+3) and summarize.

    Args:
        team_a, team_b: an agent spec (``"heuristic"``, ``"search:worlds=20,seed=3"``), a factory
            returning a new agent, or a pair of them (seat 0/1 partner, seat 2/3 partner).
        deals: number of deals (hands mode; default 100). With ``duplicate`` each is played twice.
        games: number of games (or game seeds, with ``duplicate``); sets ``mode="games"``.
        mode: ``"hands"`` (single hands) or ``"games"`` (to the target score).
        duplicate: replay every deal / game seed with the teams' seats swapped.
        rules: a preset name, a YAML path, a mapping or a ``Rules``.
        seed: the match seed; deals and agent seeds derive from it.
        workers: processes (default: the CPUs available); the result does not depend on it.
        progress: a tqdm bar on stderr.
        start_scores: (team A, team B) scores at the start of every hand / game (e.g. to let
            blind nil be offered in hands mode).
        confidence: level of every interval.
        keep_records: keep every play's game record in ``result.records``.
        ray: play on a Ray cluster at this address (``"local"``: start one here, ``workers`` CPUs);
            the same result (:mod:`train.ray_cluster`).
        journal: keep every finished deal (game) in this file; called again with it, a killed
            match resumes where it stopped, to the same result (:mod:`train.evaluation_journal`).
    """
    config = _match_config(team_a, team_b, deals, games, mode, duplicate, rules, seed, start_scores, keep_records)
    if not 0 < confidence < 1:
        raise EvaluationError(f"confidence={confidence!r}: expected a number between 0 and 1")
    workers = _check_workers(workers)
    _check_agents_build([config])
    start = time.perf_counter()
    outcomes = _execute([config], workers, progress, desc=f"{config.team_a.label} vs {config.team_b.label}",
                        ray=ray, journal=journal)[0]
    elapsed = time.perf_counter() - start
    return summarize(config, outcomes, confidence, elapsed, min(workers, config.units))


@dataclass
class CrossplayResult:
    """Every pairing of partners (row: seat 0, column: seat 2) against one reference team."""

    agents: list[str]
    reference: str
    cells: list[list[MatchResult]]     # cells[i][j]: agents[i] on seat 0, agents[j] on seat 2
    self_play: Optional[float]         # mean of the diagonal (points per hand vs the reference)
    cross_play: Optional[float]        # mean off the diagonal
    gap: Optional[Interval]            # self-play minus cross-play, paired by deal (game)
    elapsed_s: Optional[float] = None
    workers: Optional[int] = None

    def matrix(self, metric: str = "score_diff") -> list[list[Optional[float]]]:
        """``score_diff`` (points per hand vs the reference) or ``win_rate`` (games mode)."""
        def value(r: MatchResult) -> Optional[float]:
            interval = r.score_diff if metric == "score_diff" else r.win_rate
            return None if interval is None else interval.mean
        if metric not in ("score_diff", "win_rate"):
            raise ValueError(f"metric={metric!r}: expected 'score_diff' or 'win_rate'")
        return [[value(r) for r in row] for row in self.cells]

    def to_dict(self, timing: bool = True) -> dict:
        first = self.cells[0][0]
        out = {
            "agents": self.agents, "reference": self.reference, "rows": "seat 0 partner",
            "columns": "seat 2 partner", "rules": first.rules, "mode": first.mode,
            "duplicate": first.duplicate, "seed": first.seed, "units": first.units,
            "confidence": first.confidence,
            "score_diff": self.matrix("score_diff"),
            "score_diff_low": [[r.score_diff.low for r in row] for row in self.cells],
            "score_diff_high": [[r.score_diff.high for r in row] for row in self.cells],
            "win_rate": self.matrix("win_rate") if first.mode == "games" else None,
            "self_play": self.self_play, "cross_play": self.cross_play,
            "gap": self.gap.to_dict() if self.gap else None,
            "cells": [[r.to_dict(timing=timing, unit_diffs=False) for r in row] for row in self.cells],
            "elapsed_s": self.elapsed_s, "workers": self.workers,
        }
        return out if timing else _strip_timing(out)

    def format(self) -> str:
        return format_crossplay(self)

    def plot(self, path: Union[str, os.PathLike]) -> Path:
        return plot_crossplay(self, path)


def crossplay(agents: Sequence[Any], reference: Any = None, deals: Optional[int] = None, *,
              games: Optional[int] = None, mode: Optional[str] = None, duplicate: bool = False,
              rules: Any = "standard", seed: int = 0, workers: Optional[int] = None,
              progress: bool = False, start_scores: Optional[Sequence[int]] = None,
              confidence: float = 0.95, ray: Optional[str] = None,
              journal: Optional[str] = None) -> CrossplayResult:
    """Pair every agent with every agent (seat 0 x seat 2) against a fixed reference team.

    Every cell plays the same deals (the same seed), so cells are compared on equal cards and
    the self-play minus cross-play gap is paired by deal. ``reference`` defaults to
    :func:`default_reference`. Other arguments as for :func:`evaluate`.
    """
    if isinstance(agents, str) or not agents:
        raise EvaluationError("crossplay needs a list of agent specs (at least one)")
    players = [Player.of(a) for a in agents]
    reference = default_reference() if reference is None else reference
    ref_team = Team.of(reference)
    if not 0 < confidence < 1:
        raise EvaluationError(f"confidence={confidence!r}: expected a number between 0 and 1")
    configs = [_match_config(Team(x, y), ref_team, deals, games, mode, duplicate, rules, seed, start_scores, False)
               for x in players for y in players]
    workers = _check_workers(workers)
    _check_agents_build(configs)
    start = time.perf_counter()
    outcomes = _execute(configs, workers, progress, desc="crossplay", ray=ray, journal=journal)
    elapsed = time.perf_counter() - start
    n = len(players)
    results = [summarize(c, o, confidence, None, None) for c, o in zip(configs, outcomes)]
    cells = [results[i * n:(i + 1) * n] for i in range(n)]
    diag = [cells[i][i] for i in range(n)]
    off = [cells[i][j] for i in range(n) for j in range(n) if i != j]
    self_play = sum(r.score_diff.mean for r in diag) / n
    cross_play = sum(r.score_diff.mean for r in off) / len(off) if off else None
    gap = None
    if off:
        terms = [(1 / len(diag), r.unit_points, r.unit_hands) for r in diag]
        terms += [(-1 / len(off), r.unit_points, r.unit_hands) for r in off]
        unit = "deal" if configs[0].mode == "hands" else "game"
        gap = contrast_interval(terms, confidence, method=f"paired by {unit}, delta method")
    return CrossplayResult([p.label for p in players], ref_team.label, cells, self_play, cross_play, gap,
                           elapsed, min(workers, sum(c.units for c in configs)))


@dataclass
class ComparisonResult:
    """Two teams, a candidate and a baseline, each against the same opponent on the same deals
    (:func:`compare`); ``difference`` is paired by deal (game)."""

    candidate: MatchResult             # team A = the candidate, team B = the opponent
    baseline: MatchResult              # team A = the baseline, team B = the opponent
    difference: Interval               # points per hand against the opponent, candidate minus baseline
    win_rate_difference: Optional[Interval] = None   # games mode: win rates, candidate minus baseline
    elapsed_s: Optional[float] = None
    workers: Optional[int] = None

    def hand_kinds_difference(self) -> dict[str, float]:
        """Per hand kind, the candidate's part of the points per hand minus the baseline's (the
        parts add up to ``difference.mean``)."""
        return {kind: self.candidate.hand_kinds[kind]["points_per_hand"] - self.baseline.hand_kinds[kind]["points_per_hand"]
                for kind in HAND_KINDS}

    def to_dict(self, timing: bool = True) -> dict:
        out = {
            "candidate": self.candidate.to_dict(timing=timing), "baseline": self.baseline.to_dict(timing=timing),
            "opponent": self.candidate.team_b, "unit": "deal" if self.candidate.mode == "hands" else "game",
            "difference": self.difference.to_dict(),
            "win_rate_difference": self.win_rate_difference.to_dict() if self.win_rate_difference else None,
            "hand_kinds_difference": self.hand_kinds_difference(),
            "elapsed_s": self.elapsed_s, "workers": self.workers,
        }
        return out if timing else _strip_timing(out)

    def format(self) -> str:
        return format_comparison(self)


def compare(candidate: TeamSpec, baseline: TeamSpec, opponent: TeamSpec, deals: Optional[int] = None, *,
            games: Optional[int] = None, mode: Optional[str] = None, duplicate: bool = False,
            rules: Any = "standard", seed: int = 0, workers: Optional[int] = None,
            progress: bool = False, start_scores: Optional[Sequence[int]] = None,
            confidence: float = 0.95, ray: Optional[str] = None,
            journal: Optional[str] = None) -> ComparisonResult:
    """Is ``candidate`` better than ``baseline`` against ``opponent``? Both play the opponent over
    the same deals (the same seed: the same cards, dealers and opponent seeds), and the difference
    of their points per hand gets an interval paired by deal (game): far narrower than comparing
    two independent matches. Arguments as for :func:`evaluate`.
    """
    if not 0 < confidence < 1:
        raise EvaluationError(f"confidence={confidence!r}: expected a number between 0 and 1")
    configs = [_match_config(team, opponent, deals, games, mode, duplicate, rules, seed, start_scores, False)
               for team in (candidate, baseline)]
    workers = _check_workers(workers)
    _check_agents_build(configs)
    start = time.perf_counter()
    outcomes = _execute(configs, workers, progress, desc="compare", ray=ray, journal=journal)
    elapsed = time.perf_counter() - start
    cand, base = (summarize(c, o, confidence, None, None) for c, o in zip(configs, outcomes))
    difference, win_difference = paired_difference(cand, base, confidence)
    return ComparisonResult(cand, base, difference, win_difference, elapsed,
                            min(workers, sum(c.units for c in configs)))


def paired_difference(candidate: MatchResult, baseline: MatchResult,
                      confidence: float = 0.95) -> tuple[Interval, Optional[Interval]]:
    """Two matches played over the same deals (the same seed and opponent): the candidate's points
    per hand minus the baseline's, paired by deal (game), and in games mode the paired difference
    of the win rates (else None)."""
    if candidate.mode == "hands":   # points per hand = the mean over the deals of each deal's points per hand
        difference = mean_interval([c - b for c, b in zip(candidate.unit_diffs, baseline.unit_diffs)], confidence)
        difference.method = "paired by deal"
        return difference, None
    # Games: total points / total hands; the two teams' games may differ in length.
    difference = contrast_interval([(1.0, candidate.unit_points, candidate.unit_hands),
                                    (-1.0, baseline.unit_points, baseline.unit_hands)], confidence)
    difference.method = "paired by game, delta method"
    wins = mean_interval([c - b for c, b in zip(candidate.unit_wins, baseline.unit_wins)], confidence)
    wins.method = "paired by game"
    return difference, wins


def main(argv: Optional[list[str]] = None) -> int:
    """``spades-eval`` (the command line lives in :mod:`train.evaluation_cli`)."""
    from .evaluation_cli import main as run
    return run(argv)


__all__ = ["EvaluationError", "evaluate", "compare", "crossplay", "paired_difference", "parse_agent_spec",
           "resolve_rules", "derive_seed", "make_deal", "make_deals", "default_workers", "mp_context", "die_with_parent", "main", "split_spec_list",
           "Interval", "mean_interval", "contrast_interval", "ratio_interval", "wilson_interval", "t_quantile",
           "t_p_value", "format_match", "format_crossplay", "format_comparison", "plot_crossplay"]
