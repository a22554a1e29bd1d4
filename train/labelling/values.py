"""Values of the card classes at a decision, for ``--teacher playout``: each class played out on
the true table or on ``--worlds`` deals consistent with what the seat knows, the rest of the hand
by the heuristic or, with ``--continuation student``, by the student itself."""

from __future__ import annotations

import random
from typing import Optional

import numpy as np
import torch

from agents import heuristic
from agents.native_heuristic import available as native_available
from agents.native_search import table_values
from agents.search import SearchAgent, hand_value, play_out, refresh_view, rollout_views
from spades_env.cards import mask_to_cards
from spades_env.env import mask_array
from spades_env.game import PHASE_PLAY, SpadesGame
from spades_env.observation import ObservationEncoder
from train.labelling.positions import card_classes


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


def solver_values(game: SpadesGame, seat: int, endgame_tricks: int) -> list[tuple[list[int], float]]:
    """:func:`playout_values` with exact endgames (``--teacher solver``): each class played, the
    heuristic on every seat until ``endgame_tricks`` tricks remain, the rest solved exactly
    (:mod:`spades_env.solver`, points as the game scores them): the new ``search``'s value of a
    card in one world (agents/endgame_search.py), in C where the library builds."""
    groups = card_classes(game, seat)
    if native_available():
        values = table_values(game, seat, [group[0] for group in groups], endgame=endgame_tricks)
        return list(zip(groups, values))
    from agents.endgame_search import play_until
    from spades_env.solver import position_value
    classes = []
    for group in groups:
        table = game.copy()
        played = [mask_to_cards(m) for m in table.played]
        voids = [{x for x in range(4) if table.voids[s] >> x & 1} for s in range(table.n)]
        table.apply(group[0])
        played[seat].append(group[0])
        play_until(table, endgame_tricks, played, voids)
        if table.phase != PHASE_PLAY:
            classes.append((group, hand_value(table, seat)))
        else:
            value = position_value(table, "points")
            classes.append((group, float(value if table.side_of[table.to_act] == table.side_of[seat] else -value)))
    return classes


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
