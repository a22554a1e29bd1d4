"""``spades-label``: a teacher's choices on the positions a student reaches, for distillation.

    spades-label --teacher search --deals 3000 --out data/search_labels --workers 2

The student (a neural model, by default the shipped one) plays one side of single hands against
``--opponents`` (the heuristic by default); at every decision of the student's seats that has
more than one legal action the teacher (any registered agent spec, e.g. ``search`` or
``search:worlds=100``) is asked what it would do there. That choice is the label; the hand then
goes on with the teacher's action (probability ``--follow-teacher``) or the student's, so the
positions are those the student meets (DAgger) and those the teacher leads it to.

Card choices are labelled with the whole class of equivalent cards (touching cards of one suit,
:func:`agents.search.touching_groups`: they win exactly the same tricks), so the student is not
taught an arbitrary preference between, say, the king and queen of a suit it holds both of.

The labels go to ``--out`` in shards of ``--shard-deals`` deals (``shard_00000.pt``, ...), each
written atomically; running the same command again skips finished shards, so a killed labelling
run resumes where it stopped. ``--ray [ADDRESS]`` labels the shards as tasks on a Ray cluster (a
local one without an address; :mod:`evaluation.ray_cluster`): each comes back to this process, which
writes it, so the same resuming holds and the shards are those of ``--workers 1``. ``spades-train`` fits a policy to them with ``distill_data: DIR``
(or a list of folders, e.g. two labelling runs with different seeds or students, fitted together).
A shard holds, per labelled decision: ``obs`` (float16), ``mask`` and ``target`` (bool, 68
actions; ``target`` is the set of actions as good as the teacher's), ``teacher`` and ``student``
(the two choices), ``phase``, ``deal``, ``seat`` and ``values`` (float16, 68 actions; NaN where
the teacher gives no value).

``--teacher playout`` labels values instead of one choice: at every card decision of the student
with more than one class of equivalent cards, each class is played on a copy of the *true* table
and the rest of the hand played out by the heuristic on all four seats; the value of the class is
the hand's score difference for the student's side (:func:`playout_values`). The student never
sees the other hands: averaged over the deals that lead to the same observation, these values are
what each card is worth there when the hand goes on with heuristic play (what the ``search``
player estimates by sampling deals, here learnt from the real ones). The teacher's choice is the
best class (the student's card when it is among the best). Bidding decisions are kept with the
student's own choice and no values. ``spades-train`` fits them with ``distill_value_temperature``.

A ``search`` teacher also gives values: its mean play-out value of every candidate class over
the deals it sampled (those it dropped after its first stage stay NaN; ``stage=0`` keeps every
candidate), e.g. ``--teacher search:worlds=16,stage=0``. Unlike ``playout``'s values, measured on
the one true deal, these average over deals consistent with what the seat knows (sampled
uniformly, weighted by the bids), so each label is less noisy; ``distill_value_temperature``
fits them the same way.

``--continuation student`` plays the student's side of those play-outs with the student itself
(its favourite card; the play-outs of a shard's deals batched together), the other side still with the heuristic:
the values are then what each card is worth when the hand goes on with the student's own play
(a step of policy iteration against the heuristic), at about half the labelling speed.

``--worlds N`` (with ``--teacher playout``) values every class over N deals consistent with what
the seat knows instead of the true one (:func:`sampled_tables`: the hidden hands redealt as the
search draws its worlds, weighted by the bids), the class's value the weighted mean of its
play-outs there: N times the play-outs, each label far less noisy than one true deal's.

``--varied-start SHARE`` starts that share of the deals from random scores (-150..490) and bags
instead of 0-0 (as ``spades-train``'s ``varied_start``): blind nil is then offered to a side 100
points behind, and bags near the limit cost their penalty in the values.

``--only blind-nil`` keeps the teacher's label on the decisions about blind nil alone: every
blind-nil decision (bid it, or look), and every decision of the student's side from the moment
that side bids blind nil to the end of the hand (the partner's bid, the passing both ways, the
card play of both seats). The side's other decisions stay in the shards with an empty ``target``:
``distill`` fits them to the starting policy's own probabilities (a KL anchor), so a policy can
learn blind nil from a teacher that plays it without its other play being pulled towards that
teacher. Use it with ``--varied-start`` (blind nil is only offered to a side 100 behind) and a
high ``--follow-teacher`` (a student that never bids blind nil reaches no blind-nil hand).
``--only ducking`` keeps the label at the card decisions where the only thing left to play for is
avoiding bags (:func:`ducking_position`: the side's contract made, no set of the other side in
reach, no nil in play), the rest again kept as anchors.
``--only nil-defence`` keeps the label at the card decisions made while an opponent's nil or blind
nil is intact (:func:`nil_defence_position`: the opponent who bid it has taken no trick yet), where
the search breaks nils the policy lets through; the teacher is asked only there (the anchors cost
no search), so a slow teacher labels these positions at a fraction of the cost of ``all``. It is
the one ``--only`` that ``--teacher playout`` takes too: every card class valued by play-outs on
the true deal there, nowhere else.
"""

from __future__ import annotations

import argparse
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
from agents.neural import DEFAULT_MODEL, ModelError, NeuralAgent
from agents import heuristic
from agents.native_heuristic import available as native_available
from agents.native_search import table_values
from agents.search import SearchAgent, hand_value, play_out, refresh_view, rollout_views, touching_groups
from agents.specs import AgentSpecError, parse_agent_spec
from evaluation import default_workers, derive_seed, die_with_parent, make_deal, mp_context, resolve_rules
from spades_env import spades_v0
from spades_env.cards import cards_to_mask, mask_to_cards
from spades_env.env import mask_array
from spades_env.game import BLIND_NIL_ACTION, NUM_ACTIONS, PHASE_BLIND_DECISION, PHASE_PLAY, SpadesGame
from spades_env.observation import ObservationEncoder, decode_observation
from train.config import VARIED_START_TENS

FORMAT = "spades-distill-labels"
FIELDS = ("obs", "mask", "target", "teacher", "student", "phase", "deal", "seat", "values")  # per labelled decision
PLAYOUT = "playout"          # the teacher that labels the play-out value of every card
CONTINUATIONS = ("heuristic", "student")   # who plays the student's side in those play-outs
ONLY = ("all", "blind-nil", "ducking", "nil-defence")   # which decisions keep the teacher's label (the rest: anchors)


class LabelError(ValueError):
    """Bad input to spades-label (an unknown agent, a bad count, an output folder of another run)."""


def equivalent_actions(obs: dict, action: int) -> list[int]:
    """The legal actions as good as ``action``: its touching-card class in play, itself otherwise."""
    return action_classes(obs).get(action, [action])


def action_classes(obs: dict) -> dict[int, list[int]]:
    """Every legal card's touching-card class (card -> class) at a play decision; empty in the
    other phases (an action is then only as good as itself)."""
    view = decode_observation(obs["observation"])
    if view.phase != PHASE_PLAY:
        return {}
    legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
    hand = cards_to_mask(view.hand)
    gone = cards_to_mask(c for p in view.played for c in p) & ~cards_to_mask(c for _, c in view.current_trick)
    return {card: group for group in touching_groups(legal, hand, gone) for card in group}


def ducking_position(obs: dict) -> bool:
    """A card decision where only bags are left to play for, as the heuristic reads the table
    (:func:`agents.heuristic.only_bags_left`)."""
    return heuristic.only_bags_left(decode_observation(obs["observation"]), obs["action_mask"])


def intact_opponent_nils(view) -> list[int]:
    """The opponents (relative seats 1 and 3 of an :class:`~spades_env.observation.ObservationView`)
    whose nil, blind or not, is intact: bid, and no trick taken yet, so the side can still break it."""
    return [s for s in (1, 3) if view.bids[s] == 0 and view.tricks_taken[s] == 0]


def nil_defence_position(obs: dict) -> bool:
    """A card decision while an opponent's nil (blind or not) is intact (:func:`intact_opponent_nils`)."""
    view = decode_observation(obs["observation"])
    return view.phase == PHASE_PLAY and bool(intact_opponent_nils(view))


def card_classes(game: SpadesGame, seat: int) -> list[list[int]]:
    """The classes of equivalent legal cards of ``seat`` (to play in ``game``): touching cards of
    one suit, :func:`agents.search.touching_groups`."""
    if game.phase != PHASE_PLAY or game.to_act != seat:
        raise ValueError("card_classes: expected the play phase with this seat to act")
    gone = 0
    for cards in game.played:
        gone |= cards
    gone &= ~cards_to_mask(game.trick_cards)          # cards of the trick in progress still compete
    mask = game.legal_mask()
    return touching_groups([c for c in range(52) if mask >> c & 1], game.hands[seat], gone)


def playout_values(game: SpadesGame, seat: int, policy: Optional[torch.nn.Module] = None,
                   encoder: Optional[ObservationEncoder] = None) -> list[tuple[list[int], float]]:
    """Every class of equivalent legal cards of ``seat`` (to play in ``game``, the true table) with
    its value: the card played on a copy of the table and the hand played out by the heuristic on
    every seat (:func:`agents.search.play_out`); the value is the hand's score difference for the
    seat's side, bag penalties included (:func:`agents.search.hand_value`).

    With ``policy`` (a :class:`~agents.networks.PolicyNet`) and ``encoder`` (the observation
    encoder in step with ``game``), the seat's side is played out by the policy instead, the
    other side still by the heuristic (:func:`policy_play_out`): the values of the policy's play."""
    groups = card_classes(game, seat)
    if policy is None and native_available():
        values = table_values(game, seat, [group[0] for group in groups])    # the same values, in C
        return list(zip(groups, values))
    if policy is None:
        classes = []
        for group in groups:
            table = game.copy()
            table.apply(group[0])
            play_out(table)
            classes.append((group, hand_value(table, seat)))
        return classes
    if encoder is None:
        raise ValueError("playout_values: a policy play-out needs the observation encoder of the table")
    tables = [game.copy() for _ in groups]
    policy_play_out(tables, [encoder] * len(tables), [game.side_of[seat]] * len(tables), policy,
                    first=[group[0] for group in groups])
    return [(group, hand_value(table, seat)) for group, table in zip(groups, tables)]


def sampled_tables(game: SpadesGame, seat: int, encoder: ObservationEncoder, view, rules, n_worlds: int,
                   rng: random.Random, drawer: SearchAgent) -> list[tuple[SpadesGame, ObservationEncoder, float]]:
    """The true table ``game`` with the hands ``seat`` cannot see replaced, ``n_worlds`` times, by
    a deal consistent with what it knows (``view``: its observation decoded), drawn as ``drawer``
    (a :class:`~agents.search.SearchAgent`) draws its worlds, bids weighing them: (table, its
    observation encoder written afresh, weight) per distinct deal. The seat's own hand, the
    cards played and every public fact stay the table's."""
    n = game.n
    tables = []
    for hands, weight in drawer.draw_worlds(view, rules, n_worlds, rng):
        table = game.copy()
        table.hands = [hands[(s - seat) % n] for s in range(n)]     # the view's frame has the seat at 0
        code = encoder.copy()
        code.encode_all(table)
        tables.append((table, code, weight))
    return tables


def weighted_means(rows: list[list[float]], weights: list[float]) -> list[float]:
    """Per column, the mean of ``rows`` weighted by ``weights`` (one row per table)."""
    total = sum(weights)
    return [sum(w * row[j] for row, w in zip(rows, weights)) / total for j in range(len(rows[0]))]


def policy_play_out(tables: list[SpadesGame], encoders: list[ObservationEncoder], sides: list[int],
                    policy: torch.nn.Module, first: Optional[list[int]] = None) -> None:
    """Play every table (in the play phase) to the end of its hand: the seats of ``sides[k]`` by
    ``policy`` (its favourite legal card; one batched forward pass for all the tables waiting on
    it), the other seats by the heuristic, forced cards directly. ``encoders[k]`` is the
    observation encoder in step with ``tables[k]``; it is copied, not changed. ``first``: a card
    to play first on each table (the card being valued), whoever's side is to act."""
    codes = [enc.copy() for enc in encoders]
    played = [[mask_to_cards(m) for m in g.played] for g in tables]
    voids = [[{x for x in range(4) if g.voids[s] >> x & 1} for s in range(g.n)] for g in tables]
    views = [rollout_views(g, p, v) for g, p, v in zip(tables, played, voids)]
    choose = heuristic.choose_action

    def apply(k: int, card: int) -> None:
        g = tables[k]
        seat = g.to_act
        if g.trick_cards and card // 13 != g.led_suit:
            voids[k][seat].add(g.led_suit)
        g.apply(card)
        played[k][seat].append(card)
        codes[k].after_card(g, seat, card)

    if first is not None:
        for k, card in enumerate(first):
            apply(k, card)
    active = [k for k, g in enumerate(tables) if g.phase == PHASE_PLAY]
    while active:
        waiting = []
        for k in active:                         # heuristic and forced cards up to the policy's turn
            g = tables[k]
            while g.phase == PHASE_PLAY:
                seat = g.to_act
                legal = g.legal_mask()
                if legal & (legal - 1) == 0:
                    apply(k, legal.bit_length() - 1)
                elif g.side_of[seat] != sides[k]:
                    view = views[k][seat]
                    refresh_view(view, g, seat)
                    apply(k, choose(view, legal))
                else:
                    waiting.append(k)
                    break
        if waiting:
            obs = np.stack([codes[k].observe(tables[k].to_act) for k in waiting])
            masks = np.stack([mask_array(tables[k].legal_mask()) for k in waiting]).astype(bool)
            with torch.inference_mode():
                cards = policy(torch.from_numpy(obs), torch.from_numpy(masks)).argmax(1).tolist()
            for k, card in zip(waiting, cards):
                apply(k, card)
        active = [k for k in waiting if tables[k].phase == PHASE_PLAY]


def random_start(rules, share: float, rng: random.Random) -> dict[str, list[int]]:
    """The ``reset`` options of a deal that starts from random scores (-150..490 in steps of 10,
    as ``spades-train``'s ``varied_start``) and bags (0..bag_limit-1), with probability ``share``;
    otherwise none (0-0, no bags)."""
    if share <= 0 or rng.random() >= share:
        return {}
    options = {"scores": [10 * rng.randint(*VARIED_START_TENS) for _ in range(2)]}
    if not rules.bags_from_score_digit:
        options["bags"] = [rng.randrange(rules.bag_limit) for _ in range(2)]
    return options


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
        self.playout = settings["teacher"] == PLAYOUT
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
                                    random.Random(derive_seed("spades-label", seed, "start", index))))
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
    path = shard_path(out, shard)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(data, tmp)
    tmp.replace(path)
    return path


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
            tmp = local.with_name(local.name + f".{os.getpid()}.tmp")
            tmp.write_bytes(student)
            tmp.replace(local)
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
    student = Path(settings["student"]).read_bytes()
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
    for key in ("deals", "shard_deals", "workers"):
        if not isinstance(settings[key], int) or settings[key] < 1:
            raise LabelError(f"{key}={settings[key]!r}: expected a positive integer")
    settings.setdefault("continuation", "heuristic")
    settings.setdefault("varied_start", 0.0)
    settings.setdefault("only", "all")
    settings.setdefault("worlds", 0)
    if not isinstance(settings["worlds"], int) or isinstance(settings["worlds"], bool) or settings["worlds"] < 0:
        raise LabelError(f"worlds={settings['worlds']!r}: expected a number of deals to value each card on "
                         "(0: the true deal)")
    if settings["worlds"] and settings["teacher"] != PLAYOUT:
        raise LabelError(f"worlds={settings['worlds']} applies to --teacher {PLAYOUT} only (a search teacher draws "
                         f"its own worlds: --teacher search:worlds=N); the teacher here is {settings['teacher']!r}")
    if settings["only"] not in ONLY:
        raise LabelError(f"only={settings['only']!r}: expected one of {', '.join(ONLY)}")
    if settings["only"] in ("blind-nil", "ducking") and settings["teacher"] == PLAYOUT:
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
        if key == "teacher" and settings[key] == PLAYOUT:
            continue
        try:
            name, _ = parse_agent_spec(settings[key])
        except AgentSpecError as exc:
            raise LabelError(str(exc)) from None
        if name not in agent_registry.available():
            raise LabelError(f"{key}={settings[key]!r}: unknown agent {name!r}; registered agents: "
                             f"{', '.join(agent_registry.available())}")
    try:
        rules = resolve_rules(settings["rules"])
    except Exception as exc:
        raise LabelError(f"rules={settings['rules']!r}: {exc}") from None
    if not rules.partnerships or rules.players != 4:
        raise LabelError(f"rules={settings['rules']!r}: labelling needs four players in partnerships")
    if not Path(settings["student"]).is_file():
        raise LabelError(f"student={settings['student']!r}: no such model file (a spades-train checkpoint or model)")
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
        differ = sorted(k for k in set(previous) | set(fixed) if previous.get(k) != fixed.get(k))
        if differ:
            raise LabelError(f"{out} holds labels made with other settings "
                             f"({'; '.join(f'{k}: {previous.get(k)!r} there, {fixed.get(k)!r} now' for k in differ)}); "
                             "pick another --out")
    else:
        meta_path.write_text(json.dumps(fixed, indent=2))
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
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
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
    return sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))


def _shard_complete(out: Path, shard: int, settings: dict) -> bool:
    """Whether the shard file is there, whole and of these settings' deals (a torn file from a
    kill is labelled again; a shard of other settings, e.g. copied from another folder, is refused)."""
    path = shard_path(out, shard)
    if not path.exists():
        return False
    try:
        data = torch.load(path, weights_only=True)
    except Exception:
        return False                       # a torn file from a kill: label it again
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return False
    differ = shard_settings_differ(data, settings)
    if differ:
        raise LabelError(f"{path}: labelled with other settings than {out / 'labels.json'} "
                         f"({', '.join(differ)} differ): delete it to label it again")
    first = shard * settings["shard_deals"]
    return data.get("deals") == [first, min(first + settings["shard_deals"], settings["deals"])]


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
                data = torch.load(path, weights_only=True)
            except Exception as exc:
                raise LabelError(f"{path}: corrupt or not a labels shard ({type(exc).__name__}); delete it and "
                                 "run spades-label again to relabel it") from None
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise LabelError(f"{path}: not a spades-label shard (expected format {FORMAT!r})")
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


def main(argv: Optional[list[str]] = None) -> int:
    from evaluation.cli_common import OneLineParser      # errors in one line, not the usage block
    parser = OneLineParser(prog="spades-label", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder of the label shards (resumes what is there)")
    parser.add_argument("--teacher", default="search", help="agent spec of the teacher (default: search), or "
                        "'playout': the heuristic play-out value of every card on the true table (see above)")
    parser.add_argument("--student", default=str(DEFAULT_MODEL), help="neural model or checkpoint that plays "
                        "(default: the shipped model)")
    parser.add_argument("--opponents", default="heuristic", help="agent spec of the other side (default: heuristic)")
    parser.add_argument("--deals", type=int, default=1000, help="deals to play (default 1000)")
    parser.add_argument("--shard-deals", type=int, default=20, help="deals per shard file (default 20)")
    parser.add_argument("--follow-teacher", type=float, default=0.5,
                        help="probability of playing the teacher's action instead of the student's (default 0.5)")
    parser.add_argument("--continuation", choices=CONTINUATIONS, default="heuristic",
                        help="with --teacher playout: who plays the student's side after the valued card "
                        "(default heuristic: all four seats; student: the student's greedy policy, the other "
                        "side still the heuristic)")
    parser.add_argument("--worlds", type=int, default=0, metavar="N",
                        help="with --teacher playout: value each card over N deals consistent with what the seat "
                        "knows (drawn as the search draws its worlds, weighted by the bids) instead of the one "
                        "true deal: N times the play-outs, labels far less noisy (default 0: the true deal)")
    parser.add_argument("--varied-start", type=float, default=0.0, metavar="SHARE",
                        help="share of the deals (drawn per deal) that start from random scores (-150..490) and "
                        "bags instead of 0-0, where blind nil is offered and bags near the limit cost (default 0)")
    parser.add_argument("--only", choices=ONLY, default="all",
                        help="which decisions keep the teacher's label: all (default), blind-nil (the "
                        "blind-nil decisions and the student's side's play once it bid blind nil), ducking "
                        "(card decisions where only bags are left to play for) or nil-defence (card decisions "
                        "while an opponent's nil is intact); the rest are kept as anchors "
                        "that distill fits to the starting policy")
    parser.add_argument("--rules", default="standard", help="rule preset (partnership rules; default standard)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: the CPUs)")
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help="label on a Ray cluster: ADDRESS (host:port, or auto), or without one a Ray instance "
                        "started here with --workers CPUs; shards are written here as they arrive, so a killed "
                        "run resumes (needs spades-rl[ray])")
    parser.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                        help="log a line per shard instead of a bar")
    args = parser.parse_args(argv)
    settings = {"student": args.student, "teacher": args.teacher, "opponents": args.opponents, "deals": args.deals,
                "shard_deals": args.shard_deals, "follow_teacher": args.follow_teacher,
                "continuation": args.continuation, "varied_start": args.varied_start, "only": args.only,
                "worlds": args.worlds,
                "rules": args.rules,
                "seed": args.seed, "workers": args.workers or default_workers(), "out": args.out, "ray": args.ray}
    try:
        label(settings, progress=not args.no_progress, log=lambda line: print(line, flush=True))
    except (LabelError, FileNotFoundError) as exc:
        print(f"spades-label: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spades-label: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
