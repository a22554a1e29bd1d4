"""The match machinery: who sits where, which cards are dealt, and the processes that play.

A match is team A (seats 0+2) against team B (seats 1+3) over seeded deals (hands mode) or game
seeds (games mode); with ``duplicate`` every deal is played again with the teams' seats swapped.
Deals and every agent's seed derive from (match seed, deal, seat), so the outcomes do not depend
on the number of workers, on Ray, or on a resume from the journal.

For a new kind of evaluation (a league, a cooperation test), build :class:`MatchConfig` objects
with :func:`match_config` and play them with :func:`play_matches`: one :class:`PlayOutcome`
per play of each deal, in deal order. :mod:`evaluation.results` turns them into intervals.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import agents as agent_registry
from agents.specs import AgentSpecError, check_agent_name, parse_agent_spec
from spades_env import spades_v0
from spades_env.game import SCORE_LIMIT, IllegalActionError, start_scores_problem
from spades_env.observation import layout_for
from spades_env.rules import Rules, RulesError, make_rules
from spades_env.starts import StartError, check_rules, check_start_name, load_table, sample_starts

from .journal import Journal
from .outcomes import (TEAMS, EvaluationError, PlayOutcome, TeamTally, decided_by, hand_kind, tally_hand,
                       team_points, won_from_behind)

MODES = ("hands", "games")


# ---------------------------------------------------------------------------------------------
# Players and teams
# ---------------------------------------------------------------------------------------------

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
            try:
                name, options = parse_agent_spec(spec)
                check_agent_name(name, spec)
            except AgentSpecError as exc:
                raise EvaluationError(str(exc)) from None
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


TeamSpec = Union[str, Callable[[], Any], Player, Team, Sequence[Any]]


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
    """Deal ``index`` of a match seeded ``seed``: four sorted hands of 13 card ids (of
    ``deck_ranks`` under a short deck: its cards only), and the dealer (``None`` when the rules
    fix the dealer). The full deck's deals are the same as before short decks existed."""
    rules = rules if isinstance(rules, Rules) else make_rules(rules)
    rng = random.Random(derive_seed("spades-eval", seed, "deal", index))
    dealer = rng.randrange(4)
    deck = [card for card in range(52) if card % 13 >= 13 - rules.deck_ranks]
    rng.shuffle(deck)
    size = rules.deck_ranks
    hands = [sorted(deck[size * k:size * (k + 1)]) for k in range(4)]
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
    start: str = "zero"       # hands mode: where every hand starts (spades_env.starts), "zero" or "real"

    def player(self, team: str, role: int) -> Player:
        t = self.team_a if team == "A" else self.team_b
        return t.first if role == 0 else t.second

    def team_seats(self, play: int) -> dict[str, tuple[int, int]]:
        return {"A": (0, 2), "B": (1, 3)} if play == 0 else {"A": (1, 3), "B": (0, 2)}


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
            if config.start != "zero":
                options.update(hand_start(config, unit))
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
            if winner is not None:
                decided = decided_by(hands, rules, seats_of, winner)
                tallies[winner].wins_by_bag_out = int(decided["bag_out"])
                tallies[winner].wins_by_blind_nil = int(decided["blind_nil"])
                tallies[winner].wins_from_behind = int(won_from_behind(hands, rules, seats_of, winner))
        return PlayOutcome(unit, play, len(hands), tallies, winner, record, kinds)


def hand_start(config: MatchConfig, unit: int) -> dict[str, Any]:
    """The reset options of deal ``unit``'s named start: scores, bags and dealer drawn once per
    deal and bound to the seats, like the cards: both plays of a duplicate deal meet the same
    table, each team sitting once on either side of it (a team facing itself scores exactly 0)."""
    scores, bags, dealers = sample_starts(config.start, 1, derive_seed("spades-eval", config.seed, "start", unit),
                                          rules=config.rules)
    out: dict[str, Any] = {"scores": scores[0].tolist(), "bags": bags[0].tolist()}
    if config.rules.fixed_dealer is None:
        out["dealer"] = int(dealers[0])
    return out


def _check_same_deals(outcomes: list[PlayOutcome], unit: int) -> None:
    """Duplicate games must see the same deal sequence (the env's stream is action-independent)."""
    first, second = (o.record["hands"] for o in outcomes)
    for k, (h1, h2) in enumerate(zip(first, second)):
        if h1["deal"] != h2["deal"] or h1["dealer"] != h2["dealer"]:
            raise RuntimeError(f"duplicate game {unit}: hand {k + 1} was dealt differently in the two "
                               "plays; the env's deal sequence depends on the play (a bug in spades_env)")


# ---------------------------------------------------------------------------------------------
# Worker processes, the local pool and Ray
# ---------------------------------------------------------------------------------------------

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


def use_one_torch_thread() -> None:
    """One torch intra-op thread in this worker process, whether torch is loaded yet or not.

    A policy's small matrix products gain nothing from more threads, and torch's thread pool
    collapses when the cores are shared: with the other core busy a neural decision took 27-48 ms
    on default threads against about 0.2 ms on one. A forked child must also not enter the
    parent's OpenMP pool (it hangs)."""
    os.environ["OMP_NUM_THREADS"] = "1"          # read when torch is first imported here
    os.environ["MKL_NUM_THREADS"] = "1"
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """:func:`use_one_torch_thread` for agents played in this process (``workers=1``), the
    caller's thread count restored afterwards."""
    torch = sys.modules.get("torch")
    if torch is None:                   # no agent here uses torch (every agent is built by now)
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _init_worker(configs: Sequence[MatchConfig]) -> None:
    global _WORKER
    die_with_parent()
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)    # not the parent's handler: SIGTERM ends a worker
    use_one_torch_thread()                           # the workers already share the cores
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
        use_one_torch_thread()                    # one task per CPU already
        _RAY_WORKERS.clear()
        worker = _RAY_WORKERS[token] = _Worker(configs)
    return [(m, unit, worker.play_unit(m, unit)) for m, unit in tasks]


def _play_on_ray(configs: Sequence[MatchConfig], tasks: list[tuple[int, int]], finished: Callable, address: str,
                 workers: int) -> None:
    """``play_matches`` over a Ray cluster (:mod:`evaluation.ray_cluster`): the same units, the same outcomes."""
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


def _play_on_processes(configs: Sequence[MatchConfig], tasks: list[tuple[int, int]], finished: Callable,
                       workers: int) -> None:
    """``play_matches`` over a local process pool that fails loudly (BrokenProcessPool) if a worker
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



# ---------------------------------------------------------------------------------------------
# Matches: their settings, checked, and their play
# ---------------------------------------------------------------------------------------------

MAX_COUNT = 10_000_000       # deals or games of one match: beyond, an OverflowError or years of play
MAX_WORKERS = 512            # processes: beyond, the machine is asked for a million of them


def check_count(value: Any, what: str, most: int = MAX_COUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise EvaluationError(f"{what}={value!r}: expected a positive whole number")
    if value > most:
        raise EvaluationError(f"{what}={value!r}: expected at most {most:,}")
    return value


def match_config(team_a: TeamSpec, team_b: TeamSpec, deals: Optional[int] = None, games: Optional[int] = None,
                 mode: Optional[str] = None, duplicate: bool = False, rules: Any = "standard", seed: int = 0,
                 start_scores: Optional[Sequence[int]] = None, keep_records: bool = False,
                 start: str = "zero") -> MatchConfig:
    """A match's settings, checked (an :class:`EvaluationError` says what is wrong); the arguments
    are :func:`evaluation.evaluate`'s."""
    if games is not None and deals is not None:
        raise EvaluationError("give deals= (single hands) or games= (whole games), not both")
    if mode is None:
        mode = "games" if games is not None else "hands"
    if mode not in MODES:
        raise EvaluationError(f"mode={mode!r}: expected 'hands' or 'games'")
    if games is not None and mode != "games":
        raise EvaluationError("games= needs mode='games'")
    count = games if games is not None else (deals if deals is not None else 100)
    count = check_count(count, "games" if mode == "games" else "deals")
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
        problem = start_scores_problem(resolved, start_scores)
        if problem is None and any(abs(s) > SCORE_LIMIT for s in start_scores):
            problem = f"expected scores within -{SCORE_LIMIT:,}..{SCORE_LIMIT:,}"
        if problem:
            raise EvaluationError(f"start_scores={list(start_scores)}: {problem}")
    check_match_start(start, mode, start_scores, resolved)
    return MatchConfig(Team.of(team_a), Team.of(team_b), resolved, mode, count, bool(duplicate), seed,
                       start_scores, keep_records, start)


def check_match_start(start: Any, mode: str, start_scores: Any, rules: Rules) -> None:
    """``start`` is a name of :mod:`spades_env.starts` that fits the match (an EvaluationError if not)."""
    try:
        check_start_name(start)
        if start == "zero":
            return
        if mode != "hands":
            raise EvaluationError(f"start={start!r} draws the start of single hands (--deals, deals=); whole games "
                                  "start at 0-0 (--start-scores, start_scores= start them elsewhere)")
        if start_scores is not None:
            raise EvaluationError(f"start={start!r} draws the scores; give it or start_scores, not both")
        check_rules(load_table(), rules)
    except StartError as exc:
        raise EvaluationError(str(exc)) from None


def check_agents_build(configs: Sequence[MatchConfig]) -> None:
    """Build every distinct player once, here, so that bad options fail before any play: a
    player that asks a person, or whose model reads observations of another width than the
    match's rules give (a model of other rules: it used to fail in a worker, as a traceback)."""
    seen = set()
    for config in configs:
        width = layout_for(config.rules).obs_size
        for team in (config.team_a, config.team_b):
            for player in (team.first, team.second):
                key = (player.label, id(player.factory), width)
                if key in seen:
                    continue
                seen.add(key)
                try:
                    agent = player.factory()
                except Exception as exc:  # a bad option, a missing checkpoint...
                    raise EvaluationError(f"agent {player.label!r} cannot be built: {exc}") from None
                if getattr(agent, "asks_a_person", False):
                    raise EvaluationError(f"agent {player.label!r} asks a person for every move, and a match plays "
                                          "by itself; to play at the table yourself: spades-play or spades-web")
                if not callable(getattr(agent, "act", None)):
                    raise EvaluationError(f"agent {player.label!r}: its factory returned {agent!r}, "
                                          "which has no act(obs, info) method")
                reads = getattr(agent, "obs_size", None)
                if isinstance(reads, int) and reads != width:
                    raise EvaluationError(f"agent {player.label!r}: its model reads observations {reads} wide, and "
                                          f"the {config.rules.name} rules give observations {width} wide (a model "
                                          "of other rules?)")


def check_workers(workers: Optional[int]) -> int:
    """A worker count (None: :func:`default_workers`)."""
    if workers is None:
        return default_workers()
    return check_count(workers, "workers", MAX_WORKERS)


def play_matches(configs: Sequence[MatchConfig], workers: Optional[int] = None, progress: bool = False,
                 desc: str = "spades-eval", ray: Optional[str] = None, journal: Optional[str] = None,
                 check_agents: bool = True) -> list[list[list[PlayOutcome]]]:
    """Play every unit (deal, or game seed) of every match: ``outcomes[m][unit]`` holds the plays
    of unit ``unit`` of ``configs[m]`` (one, or two with ``duplicate``: play 1 has the teams' seats
    swapped), in deal order, whatever the workers.

    Every player is built once here first (``check_agents``; off where the caller did it), so
    that a bad option fails before any play.
    ``workers``: processes (None: the CPUs available; 1 plays here, torch on one thread).
    ``ray``: a Ray cluster's address (``"local"``: start one here) to play them on instead.
    ``journal``: a file that keeps every finished unit, and from which a killed run resumes
    (:mod:`evaluation.journal`); it is checked before anything is played.
    """
    from tqdm import tqdm

    from .cli_common import progress_disabled
    workers = check_workers(workers)
    if check_agents:
        check_agents_build(configs)
    log = None if journal is None else Journal(journal, configs)     # a bad file fails before any play
    results: list[list[Any]] = [[None] * config.units for config in configs]
    for (m, u), outcomes in (log.done.items() if log is not None else ()):
        results[m][u] = outcomes
    tasks = [(m, u) for m, config in enumerate(configs) for u in range(config.units) if results[m][u] is None]
    workers = max(1, min(workers, len(tasks)))
    unit = "deal" if configs[0].mode == "hands" else "game"
    total = sum(config.units for config in configs)
    try:
        with tqdm(total=total, initial=total - len(tasks), disable=progress_disabled(progress), file=sys.stderr,
                  unit=unit, desc=desc, dynamic_ncols=True) as bar:

            def finished(m: int, u: int, outcomes: list[PlayOutcome]) -> None:
                results[m][u] = outcomes
                if log is not None:
                    log.add(m, u, outcomes)
                bar.update()

            if not tasks:                       # all in the journal already
                return results
            if ray is not None:
                _play_on_ray(configs, tasks, finished, ray, workers)
            elif workers == 1:
                worker = _Worker(configs)
                with one_torch_thread():
                    for m, u in tasks:
                        finished(m, u, worker.play_unit(m, u))
            else:
                _play_on_processes(configs, tasks, finished, workers)
    finally:
        if log is not None:
            log.close()
    return results
