"""The labeller of ``spades-label`` (:mod:`train.labelling.cli`): deals played by the student
with a teacher asked at its decisions (:class:`Labeller`, one per worker process or Ray task),
the shards it writes and resumes, and :func:`load_labels`, which reads them back for
``spades-train``'s ``distill_data`` and expert iteration. What a position and a label are:
:mod:`train.labelling.positions`, :mod:`train.labelling.values`."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

import agents as agent_registry
from agents.neural import ModelError, NeuralAgent
from agents.search import SearchAgent, hand_value
from agents.specs import AgentSpecError, parse_agent_spec
from evaluation import derive_seed, die_with_parent, make_deal, mp_context, resolve_rules
from spades_env import spades_v0
from spades_env.files import (MAX_MODEL_BYTES, MAX_SHARD_BYTES, FileRuleError, check_input, check_output,
                              check_output_folder, load_torch, read_bytes, read_text, save_torch, write_bytes,
                              write_json)
from spades_env.game import BLIND_NIL_ACTION, NUM_ACTIONS, PHASE_BLIND_DECISION, PHASE_PLAY, SpadesGame
from spades_env.observation import ObservationEncoder, decode_observation
from train.ppo.config import varied_start_problem
from train.labelling.positions import (LABEL_STARTS, action_classes, card_classes, ducking_position,
                                      nil_defence_position, random_start)
from train.labelling.values import playout_values, policy_play_out, sampled_tables, solver_values, weighted_means


MAX_LABEL_DEALS = 10_000_000          # deals of one labelling run (the largest so far: 40,000)
FORMAT = "spades-distill-labels"
FIELDS = ("obs", "mask", "target", "teacher", "student", "phase", "deal", "seat", "values")  # per labelled decision
PLAYOUT = "playout"          # the teacher that labels the play-out value of every card
SOLVER = "solver"            # the same with the last tricks solved exactly (the new search's values)
VALUE_TEACHERS = (PLAYOUT, SOLVER)
CONTINUATIONS = ("heuristic", "student")   # who plays the student's side in those play-outs
ONLY = ("all", "blind-nil", "ducking", "nil-defence")   # which decisions keep the teacher's label (the rest: anchors)


class LabelError(ValueError):
    """Bad input to spades-label (an unknown agent, a bad count, an output folder of another run)."""


class _StudentTurn:
    """A request from a deal being labelled: the student's action at ``obs``."""

    __slots__ = ("obs",)

    def __init__(self, obs: dict) -> None:
        self.obs = obs


class _PlayOut:
    """A request from a deal being labelled: value these card classes of ``seat`` on each table of
    ``tables`` ((game, its observation encoder, weight): the true table, or the worlds drawn for
    ``--worlds``), a class's value the weighted mean over the tables."""

    __slots__ = ("tables", "seat", "groups")

    def __init__(self, tables: list[tuple[SpadesGame, ObservationEncoder, float]], seat: int,
                 groups: list[list[int]]) -> None:
        self.tables, self.seat, self.groups = tables, seat, groups


class Labeller:
    """Plays and labels deals; one per worker process."""

    def __init__(self, settings: dict) -> None:
        self.settings = settings
        self.rules = resolve_rules(settings["rules"])
        self.env = spades_v0.raw_env(rules=self.rules, episode="hand", reward_scale=1.0)
        self.student = NeuralAgent(checkpoint=settings["student"])
        # Teachers and opponents are made per deal (one per seat: an agent may keep state between
        # its own decisions); a play-out teacher needs none.
        self.playout = settings["teacher"] in VALUE_TEACHERS
        self.endgame_tricks = settings.get("endgame_tricks", 0) if settings["teacher"] == SOLVER else 0
        self.by_student = settings.get("continuation", "heuristic") == "student"
        # --worlds: the deals a valued card is played out on are drawn as the search draws its worlds
        self.world_drawer = SearchAgent(backend="python") if settings.get("worlds", 0) else None

    def _make_opponents(self) -> list:
        name, options = parse_agent_spec(self.settings["opponents"])
        return [agent_registry.make(name, **options) for _ in range(2)]

    def label_deal(self, index: int) -> dict[str, list]:
        """Play and label one deal; its rows (lists per field)."""
        return self.label_deals([index])

    def label_deals(self, indices: Sequence[int]) -> dict[str, list]:
        """Play and label several deals in lockstep, their rows in the order of ``indices``: every
        deal runs to its next request, then the student's decisions of all deals are taken in
        one forward pass of the policy and their play-outs valued together. Each deal has its
        own env, opponents and teachers (seeded by the deal), so its labels do not depend on the
        other deals of the batch."""
        deals, results, answers = {}, {}, {}
        for index in indices:
            env = spades_v0.raw_env(rules=self.rules, episode="hand", reward_scale=1.0)
            deals[index] = self._play_deal(index, env, self._make_opponents(), self._make_teachers())
            answers[index] = None
        while answers:
            pending = {}
            for index, answer in answers.items():     # each deal runs up to its next request
                try:
                    pending[index] = deals[index].send(answer)
                except StopIteration as done:
                    results[index] = done.value
            turns = [i for i in pending if isinstance(pending[i], _StudentTurn)]
            outs = [i for i in pending if isinstance(pending[i], _PlayOut)]
            answers = dict(zip(turns, self._student_actions([pending[i] for i in turns])))
            answers.update(zip(outs, self._play_outs([pending[i] for i in outs])))
        rows: dict[str, list] = {k: [] for k in FIELDS}
        for index in indices:
            for key, values in results[index].items():
                rows[key].extend(values)
        return rows

    def _make_teachers(self) -> list:
        if self.playout:
            return []
        name, options = parse_agent_spec(self.settings["teacher"])
        return [agent_registry.make(name, **options) for _ in range(2)]

    def _student_actions(self, turns: list["_StudentTurn"]) -> list[int]:
        """The student's actions at several positions, in one forward pass."""
        if not turns:
            return []
        return self.student.act_batch([t.obs for t in turns])

    def _play_outs(self, requests: list[_PlayOut]) -> list[list[float]]:
        """The value of every class of every request (the hand's score difference for the seat's
        side), the classes' play-outs batched together."""
        if self.endgame_tricks:
            return [weighted_means([[value for _, value in solver_values(game, r.seat, self.endgame_tricks)]
                                    for game, _, _ in r.tables], [weight for _, _, weight in r.tables])
                    for r in requests]
        if not self.by_student:
            return [weighted_means([[value for _, value in playout_values(game, r.seat)] for game, _, _ in r.tables],
                                   [weight for _, _, weight in r.tables]) for r in requests]
        tables, encoders, sides, first = [], [], [], []
        for r in requests:
            for game, encoder, _ in r.tables:
                for group in r.groups:
                    tables.append(game.copy())
                    encoders.append(encoder)
                    sides.append(game.side_of[r.seat])
                    first.append(group[0])
        policy_play_out(tables, encoders, sides, self.student.policy, first)
        values, k = [], 0
        for r in requests:
            rows = []
            for _ in r.tables:
                rows.append([hand_value(table, r.seat) for table in tables[k:k + len(r.groups)]])
                k += len(r.groups)
            values.append(weighted_means(rows, [weight for _, _, weight in r.tables]))
        return values

    def _play_deal(self, index: int, env, opponents: list, teachers: list):
        """A generator: plays deal ``index`` on ``env`` and returns its rows; it yields a
        :class:`_StudentTurn` for every decision of the student (and expects its action back) and
        a :class:`_PlayOut` for every card decision to value (and expects the classes' values)."""
        seed = self.settings["seed"]
        deal, dealer = make_deal(derive_seed("spades-label", seed), index, self.rules)
        options: dict[str, Any] = {"deal": deal}
        if dealer is not None:
            options["dealer"] = dealer
        options.update(random_start(self.rules, self.settings.get("varied_start", 0.0),
                                    random.Random(derive_seed("spades-label", seed, "start", index)),
                                    self.settings.get("start", "varied")))
        env.reset(seed=derive_seed("spades-label", seed, "env", index), options=options)
        student_seats = (0, 2) if index % 2 == 0 else (1, 3)
        for k, agent in enumerate([self.student] + teachers + opponents):
            agent.reset(derive_seed("spades-label", seed, "agent", index, k))
        follow = random.Random(derive_seed("spades-label", seed, "follow", index))
        worlds_rng = random.Random(derive_seed("spades-label", seed, "worlds", index))
        rows: dict[str, list] = {k: [] for k in FIELDS}
        only = self.settings.get("only", "all")
        side_blind_from = None                  # the row at which the student's side bid blind nil
        ducking: list[bool] = []                # per row, with --only ducking: a ducking position
        mapping = env.agent_name_mapping
        for name in env.agent_iter():
            obs, _, termination, truncation, info = env.last()
            if termination or truncation:
                env.step(None)
                continue
            seat = mapping[name]
            if seat not in student_seats:
                env.step(opponents[seat // 2].act(obs, info))
                continue
            student_action = yield _StudentTurn(obs)
            if int(np.count_nonzero(obs["action_mask"])) == 1:
                env.step(student_action)
                continue
            if only == "nil-defence" and not nil_defence_position(obs):
                # an anchor row, recorded without asking the teacher (the search is the cost)
                labelled = (student_action, np.zeros(NUM_ACTIONS, dtype=bool),
                            np.full(NUM_ACTIONS, np.nan, dtype=np.float32))
            else:
                labelled = yield from self._label(env, obs, info, seat, student_action, teachers, worlds_rng)
            if labelled is None:                    # its legal cards form a single class: no label
                env.step(student_action)
                continue
            teacher_action, target, values = labelled
            rows["values"].append(values.astype(np.float16))
            rows["obs"].append(np.asarray(obs["observation"], dtype=np.float16))
            rows["mask"].append(np.asarray(obs["action_mask"]).astype(bool))
            rows["target"].append(target)
            rows["teacher"].append(teacher_action)
            rows["student"].append(student_action)
            rows["phase"].append(decode_observation(obs["observation"]).phase)
            rows["deal"].append(index)
            rows["seat"].append(seat)
            if only == "ducking":
                ducking.append(ducking_position(obs))
            play_teacher = follow.random() < self.settings["follow_teacher"]
            taken = teacher_action if play_teacher else student_action
            if taken == BLIND_NIL_ACTION and side_blind_from is None:
                side_blind_from = len(rows["phase"]) - 1
            env.step(taken)
        if only == "blind-nil":
            keep_from = len(rows["phase"]) if side_blind_from is None else side_blind_from
            keep = [k >= keep_from or phase == PHASE_BLIND_DECISION for k, phase in enumerate(rows["phase"])]
        elif only == "ducking":
            keep = ducking
        else:
            keep = [True] * len(rows["phase"])
        for k, kept in enumerate(keep):
            if not kept:
                rows["target"][k] = np.zeros(NUM_ACTIONS, dtype=bool)        # no label: an anchor row
        return rows

    def _label(self, env, obs: dict, info: dict, seat: int, student_action: int, teachers: list,
               worlds_rng: Optional[random.Random] = None):
        """A generator returning (the teacher's action, the target set, the values) of one decision
        of the student, or None for a play-out label whose legal cards form a single class; it
        yields a :class:`_PlayOut` request when the card classes need values."""
        values = np.full(NUM_ACTIONS, np.nan, dtype=np.float32)
        target = np.zeros(NUM_ACTIONS, dtype=bool)
        if not self.playout:
            teacher = teachers[seat // 2]
            teacher_action = int(teacher.act(obs, info))
            classes = action_classes(obs)
            target[classes.get(teacher_action, [teacher_action])] = True
            found = getattr(teacher, "last_info", None) or {}
            if "means" in found:            # a search teacher: the mean value of every candidate it kept
                for candidate, mean in zip(found["candidates"], found["means"]):
                    values[classes.get(candidate, [candidate])] = mean
            return teacher_action, target, values
        game = env.unwrapped.game
        if game.phase != PHASE_PLAY:                # bids: kept with the student's own choice, no values
            target[student_action] = True
            return student_action, target, values
        groups = card_classes(game, seat)
        if len(groups) == 1:
            return None
        encoder = env.unwrapped.encoder
        if self.settings.get("worlds", 0):
            tables = sampled_tables(game, seat, encoder, decode_observation(obs["observation"]), self.rules,
                                    self.settings["worlds"], worlds_rng, self.world_drawer)
        else:
            tables = [(game, encoder, 1.0)]
        classes = list(zip(groups, (yield _PlayOut(tables, seat, groups))))
        best = max(value for _, value in classes)
        for group, value in classes:
            values[group] = value
            target[group] = value == best
        if target[student_action]:
            return student_action, target, values
        return next(group[0] for group, value in classes if value == best), target, values

    def label_shard(self, shard: int) -> tuple[Path, int, float]:
        """Label one shard's deals and write it; returns (path, labels, seconds)."""
        data = self.shard_data(shard)
        path = write_shard(Path(self.settings["out"]), shard, data)
        return path, len(data["teacher"]), data["seconds"]

    def shard_data(self, shard: int) -> dict[str, Any]:
        """Label one shard's deals: the shard file's contents."""
        s = self.settings
        first = shard * s["shard_deals"]
        last = min(first + s["shard_deals"], s["deals"])
        start = time.perf_counter()
        rows = self.label_deals(range(first, last))
        data = {
            "format": FORMAT, "version": 1, "settings": s, "deals": [first, last],
            "seconds": time.perf_counter() - start,
            "obs": torch.from_numpy(np.stack(rows["obs"])) if rows["obs"] else torch.zeros(0, 0, dtype=torch.float16),
            "mask": torch.from_numpy(np.stack(rows["mask"])) if rows["mask"] else torch.zeros(0, NUM_ACTIONS, dtype=torch.bool),
            "target": torch.from_numpy(np.stack(rows["target"])) if rows["target"] else torch.zeros(0, NUM_ACTIONS, dtype=torch.bool),
            "values": (torch.from_numpy(np.stack(rows["values"])) if rows["values"]
                       else torch.zeros(0, NUM_ACTIONS, dtype=torch.float16)),
        }
        for key in ("teacher", "student", "phase", "deal", "seat"):
            data[key] = torch.tensor(rows[key], dtype=torch.int64)
        return data


def shard_path(out: Path, shard: int) -> Path:
    return out / f"shard_{shard:05d}.pt"


def write_shard(out: Path, shard: int, data: dict[str, Any]) -> Path:
    """Write a shard atomically (a kill leaves the old file or none, never a torn one)."""
    try:
        return save_torch(data, shard_path(out, shard), "labels shard")
    except FileRuleError as exc:
        raise LabelError(str(exc)) from None


_LABELLER: Optional[Labeller] = None


def _init_worker(settings: dict) -> None:
    """A pool worker: it dies with its parent and leaves Ctrl-C to it."""
    import signal
    die_with_parent()                                # no orphaned labeller after a kill of the parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
    _init_labeller(settings)


def _init_labeller(settings: dict) -> None:
    global _LABELLER
    torch.set_num_threads(1)
    _LABELLER = Labeller(settings)


def _label_shard(shard: int) -> tuple[int, int, float]:
    _, labels, seconds = _LABELLER.label_shard(shard)
    return shard, labels, seconds


_RAY_LABELLERS: dict[str, Labeller] = {}


def _ray_label_shard(shared: tuple[str, dict, bytes], shard: int) -> tuple[int, dict[str, Any]]:
    """A Ray task: one shard's labels, returned to the driver (which writes them). The student
    comes as bytes (written once per process to a local file), so nodes need not share a disk."""
    token, settings, student = shared
    labeller = _RAY_LABELLERS.get(token)
    if labeller is None:
        import tempfile
        local = Path(tempfile.gettempdir()) / f"spades_label_student_{token}.pt"
        if not local.exists():
            write_bytes(local, student, "student copy")
        torch.set_num_threads(1)
        _RAY_LABELLERS.clear()
        labeller = _RAY_LABELLERS[token] = Labeller({**settings, "student": str(local)})
    data = labeller.shard_data(shard)
    data["settings"] = settings                     # the driver's (the student's own path)
    return shard, data


def _label_on_ray(settings: dict, todo: list[int], out: Path):
    """Yield (shard, labels, seconds) as Ray tasks finish, each shard written here on arrival."""
    import hashlib

    from evaluation.ray_cluster import LOCAL, RayUnavailable, connect, map_unordered
    try:
        ray = connect(settings["ray"], settings["workers"] if settings["ray"] == LOCAL else None)
    except RayUnavailable as exc:
        raise LabelError(str(exc)) from None
    student = read_bytes(settings["student"], "student", MAX_MODEL_BYTES)
    token = hashlib.sha256(student + json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
    try:
        for shard, data in map_unordered(ray, _ray_label_shard, todo, shared=(token, settings, student)):
            write_shard(out, shard, data)
            yield shard, len(data["teacher"]), data["seconds"]
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise LabelError(f"a Ray task failed: {str(cause or exc).splitlines()[0]}") from None
    except ray.exceptions.RayError as exc:
        raise LabelError(f"the Ray cluster failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); the shards "
                         "written are kept: run the same command again to continue") from None


def check_settings(settings: dict) -> dict:
    """Validate the labelling settings; raises :class:`LabelError` naming the bad one."""
    try:                                      # a file, a path under a file, a device: refused before any work
        check_output_folder(settings["out"], "--out")
    except FileRuleError as exc:
        raise LabelError(str(exc)) from None
    for key, top in (("deals", MAX_LABEL_DEALS), ("shard_deals", MAX_LABEL_DEALS), ("workers", 4096)):
        if not isinstance(settings[key], int) or isinstance(settings[key], bool) or not 1 <= settings[key] <= top:
            raise LabelError(f"{key}={settings[key]!r}: expected a positive integer of at most {top:,}")
    settings.setdefault("continuation", "heuristic")
    settings.setdefault("varied_start", 0.0)
    settings.setdefault("only", "all")
    settings.setdefault("worlds", 0)
    start = settings.setdefault("start", "varied")
    if start not in LABEL_STARTS:
        raise LabelError(f"start={start!r}: expected one of {', '.join(LABEL_STARTS)} (where the varied_start "
                         "share of the deals starts: random scores and bags, or states whole games reach)")
    if not isinstance(settings["worlds"], int) or isinstance(settings["worlds"], bool) or settings["worlds"] < 0:
        raise LabelError(f"worlds={settings['worlds']!r}: expected a number of deals to value each card on "
                         "(0: the true deal)")
    if settings["worlds"] and settings["teacher"] not in VALUE_TEACHERS:
        raise LabelError(f"worlds={settings['worlds']} applies to --teacher {PLAYOUT} only or {SOLVER} (a search teacher draws "
                         f"its own worlds: --teacher search:worlds=N); the teacher here is {settings['teacher']!r}")
    endgame = settings.pop("endgame_tricks", None)
    if settings["teacher"] == SOLVER:           # recorded only for this teacher: older folders stay comparable
        from agents.endgame_search import DEFAULT_ENDGAME_TRICKS
        endgame = DEFAULT_ENDGAME_TRICKS if endgame is None else endgame
        if isinstance(endgame, bool) or not isinstance(endgame, int) or not 1 <= endgame <= 13:
            raise LabelError(f"endgame_tricks={endgame!r}: expected the tricks left to solve exactly, 1..13")
        settings["endgame_tricks"] = endgame
    elif endgame is not None:
        raise LabelError(f"endgame_tricks={endgame!r} applies to --teacher {SOLVER} only (the teacher here is "
                         f"{settings['teacher']!r}; a search teacher takes search:endgame_tricks=K)")
    if settings["only"] not in ONLY:
        raise LabelError(f"only={settings['only']!r}: expected one of {', '.join(ONLY)}")
    if settings["only"] in ("blind-nil", "ducking") and settings["teacher"] in VALUE_TEACHERS:
        raise LabelError(f"only={settings['only']!r} needs a teacher that chooses (an agent spec); "
                         f"--teacher {PLAYOUT} values cards and keeps the student's bids")
    if not isinstance(settings["varied_start"], (int, float)) or not 0.0 <= settings["varied_start"] <= 1.0:
        raise LabelError(f"varied_start={settings['varied_start']!r}: expected the share of deals (0 to 1) that "
                         "start from random scores and bags")
    if settings["continuation"] not in CONTINUATIONS:
        raise LabelError(f"continuation={settings['continuation']!r}: expected one of {', '.join(CONTINUATIONS)}")
    if settings["continuation"] != "heuristic" and settings["teacher"] != PLAYOUT:
        raise LabelError(f"continuation={settings['continuation']!r} applies to --teacher {PLAYOUT} only "
                         f"(the teacher here is {settings['teacher']!r})")
    if not 0.0 <= settings["follow_teacher"] <= 1.0:
        raise LabelError(f"follow_teacher={settings['follow_teacher']!r}: expected a probability in [0, 1]")
    for key in ("teacher", "opponents"):
        if key == "teacher" and settings[key] in VALUE_TEACHERS:
            continue
        try:
            name, _ = parse_agent_spec(settings[key])
        except AgentSpecError as exc:
            raise LabelError(str(exc)) from None
        if name not in agent_registry.available():
            raise LabelError(f"{key}={settings[key]!r}: unknown agent {name!r}; registered agents: "
                             f"{', '.join(agent_registry.available())}")
        if agent_registry.asks_a_person(name):
            raise LabelError(f"{key}={settings[key]!r}: the {name} agent asks a person for every move, and labelling "
                             "plays thousands of positions by itself; expected an agent that decides alone")
    try:
        rules = resolve_rules(settings["rules"])
    except Exception as exc:
        raise LabelError(f"rules={settings['rules']!r}: {exc}") from None
    if not rules.partnerships or rules.players != 4:
        raise LabelError(f"rules={settings['rules']!r}: labelling needs four players in partnerships")
    if rules.signals:
        raise LabelError(f"rules={settings['rules']!r}: signals={rules.signals}: labelling values bids and cards, not "
                         "messages; expected rules without the free signal (signals: 0)")
    if settings["varied_start"] and varied_start_problem(rules):
        raise LabelError(f"--varied-start: {varied_start_problem(rules)}")
    if settings["varied_start"] and settings["start"] == "real":
        from spades_env.starts import StartError, check_rules, load_table
        try:
            check_rules(load_table(), rules)
        except StartError as exc:
            raise LabelError(f"--start real: {exc}") from None
    if not os.path.lexists(settings["student"]):
        raise LabelError(f"student={settings['student']!r}: no such model file (a spades-train checkpoint or model)")
    try:
        check_input(settings["student"], "student", MAX_MODEL_BYTES)       # never /dev/zero or a FIFO
    except FileRuleError as exc:
        raise LabelError(str(exc)) from None
    try:
        NeuralAgent(checkpoint=settings["student"])
    except (ModelError, ValueError) as exc:
        raise LabelError(f"student={settings['student']!r}: {exc}") from None
    return settings


def label(settings: dict, progress: bool = True, log=print) -> Path:
    """Label ``settings['deals']`` deals into ``settings['out']`` (finished shards are kept)."""
    settings = check_settings(dict(settings))
    out = Path(settings["out"])
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "labels.json"
    fixed = fixed_settings(settings)
    if meta_path.exists():
        previous = read_labels_json(meta_path)
        previous.setdefault("continuation", "heuristic")        # folders labelled before the options existed
        previous.setdefault("varied_start", 0.0)
        previous.setdefault("only", "all")
        previous.setdefault("worlds", 0)
        previous.setdefault("start", "varied")
        differ = sorted(k for k in set(previous) | set(fixed) if previous.get(k) != fixed.get(k))
        if differ:
            raise LabelError(f"{out} holds labels made with other settings "
                             f"({'; '.join(f'{k}: {previous.get(k)!r} there, {fixed.get(k)!r} now' for k in differ)}); "
                             "pick another --out")
    else:
        try:
            write_json(meta_path, fixed, "labels settings", indent=2, stream_ok=False)
        except FileRuleError as exc:
            raise LabelError(str(exc)) from None
    shards = -(-settings["deals"] // settings["shard_deals"])
    todo = [k for k in range(shards) if not _shard_complete(out, k, settings)]
    if len(todo) < shards:
        log(f"spades-label: {shards - len(todo)} of {shards} shards already in {out}; labelling the other {len(todo)}")
    from tqdm import tqdm
    from evaluation.cli_common import progress_disabled
    bar = tqdm(total=len(todo), desc="labelling shards", unit="shard", disable=progress_disabled(progress),
               file=sys.stderr)
    labelled = 0
    threads = torch.get_num_threads()                # labelling here sets 1; the caller's is restored
    if settings.get("ray") is not None:
        results = _label_on_ray(settings, todo, out)
        pool = None
    elif settings["workers"] == 1 or len(todo) <= 1:
        _init_labeller(settings)                     # in this process: Ctrl-C stays with it
        results = map(_label_shard, todo)
        pool = None
    else:
        pool = mp_context().Pool(min(settings["workers"], len(todo)), initializer=_init_worker, initargs=(settings,))
        results = pool.imap_unordered(_label_shard, todo)
    try:
        for shard, n, seconds in results:
            labelled += n
            bar.update(1)
            bar.set_postfix_str(f"{labelled:,} labels")
            if not progress:
                log(f"shard {shard}: {n} labels in {seconds:.0f} s")
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
        torch.set_num_threads(threads)
    log(f"spades-label: {labelled:,} new labels; {out} holds {shards} shards")
    return out


def fixed_settings(settings: dict) -> dict:
    """The settings that decide a folder's labels (not how many deals, where or by how many workers)."""
    return {k: v for k, v in settings.items() if k not in ("workers", "out", "deals", "ray")}


def read_labels_json(path: Path) -> dict:
    """A folder's ``labels.json``; a torn or foreign file is refused naming it."""
    try:
        data = json.loads(read_text(path, "labels settings", max_bytes=1_000_000))   # a regular file, bounded
    except FileRuleError as exc:
        raise LabelError(f"{exc}; it records how the folder's shards were labelled: restore it or label into a "
                         "new folder") from None
    except (ValueError, RecursionError) as exc:
        raise LabelError(f"{path}: unreadable or not JSON ({type(exc).__name__}); it records how the folder's "
                         "shards were labelled: restore it or label into a new folder") from None
    if not isinstance(data, dict) or not all(k in data for k in ("teacher", "opponents", "rules", "seed")):
        raise LabelError(f"{path}: not a spades-label settings file (expected a mapping with teacher, opponents, "
                         "rules and seed)")
    return data


def shard_settings_differ(data: dict, settings: dict) -> list[str]:
    """The fixed settings in which a shard's contents (``data``) differ from ``settings``."""
    theirs = data.get("settings")
    if not isinstance(theirs, dict):
        return ["settings"]
    theirs, ours = fixed_settings(theirs), fixed_settings(settings)
    for side in (theirs, ours):                 # folders labelled before these options existed
        side.setdefault("continuation", "heuristic")
        side.setdefault("varied_start", 0.0)
        side.setdefault("only", "all")
        side.setdefault("worlds", 0)
        side.setdefault("start", "varied")
    return sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))


def _shard_complete(out: Path, shard: int, settings: dict) -> bool:
    """Whether the shard file is there, whole and of these settings' deals (a torn file from a
    kill is labelled again; a shard of other settings, e.g. copied from another folder, is refused)."""
    path = shard_path(out, shard)
    if not os.path.lexists(path):
        return False
    try:
        check_output(path, "labels shard")     # a device, FIFO or folder in its place is never overwritten
    except FileRuleError as exc:
        raise LabelError(str(exc)) from None
    try:
        data = load_torch(path, "labels shard", MAX_SHARD_BYTES)
    except FileRuleError:
        return False                       # a torn file from a kill: label it again
    if not isinstance(data, dict) or data.get("format") != FORMAT or label_shard_problem(data):
        return False                       # truncated or foreign: labelled again
    differ = shard_settings_differ(data, settings)
    if differ:
        raise LabelError(f"{path}: labelled with other settings than {out / 'labels.json'} "
                         f"({', '.join(differ)} differ): delete it to label it again")
    first = shard * settings["shard_deals"]
    return data.get("deals") == [first, min(first + settings["shard_deals"], settings["deals"])]


def label_shard_problem(data: dict) -> Optional[str]:
    """What is wrong with a labels shard's tensors (None when nothing is): each field a tensor with
    one row a labelled decision, the same number of rows in all, contiguous over values the file
    holds (stride-0 views claim rows it does not)."""
    rows = None
    for key in FIELDS:
        if key == "values" and key not in data:          # shards written before the values were kept
            continue
        tensor = data.get(key)
        if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            return f"{key} is {type(tensor).__name__}: expected a tensor of one row a decision"
        end = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
        if not tensor.is_contiguous() or end > tensor.untyped_storage().nbytes():
            return f"{key} is a view (strides {tuple(tensor.stride())}) over values the file does not hold"
        if rows is None:
            rows = tensor.shape[0]
        elif tensor.shape[0] != rows:
            return f"{key} has {tensor.shape[0]:,} rows, obs {rows:,}: a truncated shard"
    return None


def load_labels(folders: str | Path | Sequence[str | Path]) -> dict[str, Any]:
    """Every shard of one labels folder or of several, concatenated (``obs`` as float16);
    ``settings``: how they were labelled (the first shard's; a folder holds one labelling run's
    shards, and several folders must have been labelled under the same rules)."""
    if isinstance(folders, (str, Path)):
        folders = [folders]
    if not folders:
        raise LabelError("distill_data=[]: expected a folder written by spades-label, or a list of them")
    parts: dict[str, list] = {}
    settings = None
    for folder in map(Path, folders):
        paths = sorted(folder.glob("shard_*.pt"))
        if not paths:
            raise FileNotFoundError(f"distill_data={str(folder)!r}: no shard_*.pt files there (expected a folder "
                                    "written by spades-label)")
        meta_path = folder / "labels.json"
        folder_settings = read_labels_json(meta_path) if meta_path.exists() else None
        for path in paths:
            try:
                data = load_torch(path, "labels shard", MAX_SHARD_BYTES)
            except FileRuleError as exc:
                reason = str(exc).split(f"{path}", 1)[-1].lstrip(": ")
                raise LabelError(f"{path}: corrupt or not a labels shard ({reason[:160]}); delete it and "
                                 "run spades-label again to relabel it") from None
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise LabelError(f"{path}: not a spades-label shard (expected format {FORMAT!r})")
            problem = label_shard_problem(data)
            if problem:
                raise LabelError(f"{path}: {problem}; delete it and run spades-label again to relabel it")
            differ = [] if folder_settings is None else shard_settings_differ(data, folder_settings)
            if differ:
                raise LabelError(f"{path}: labelled with other settings than its folder's labels.json "
                                 f"({', '.join(differ)} differ), e.g. copied from another folder")
            settings = settings or data["settings"]
            if data["settings"]["rules"] != settings["rules"]:
                raise LabelError(f"{path}: labelled under the rules {data['settings']['rules']!r}, the shards "
                                 f"before it under {settings['rules']!r}: folders fitted together need one rule set")
            if data["obs"].numel() == 0:
                continue
            if "values" not in data:             # shards written before the values were kept
                data["values"] = torch.full(data["mask"].shape, float("nan"), dtype=torch.float16)
            for key in FIELDS:
                parts.setdefault(key, []).append(data[key])
    if not parts:
        raise LabelError(f"{', '.join(map(str, folders))}: the shards hold no labelled decisions")
    return {**{k: torch.cat(v) for k, v in parts.items()}, "settings": settings}
