"""Positions to label: the classes of equivalent actions at a decision (touching cards of one
suit win the same tricks, so a label names the whole class), the positions ``--only`` keeps
(ducking, nil defence) and the random starting scores of ``--varied-start``."""

from __future__ import annotations

import random

import numpy as np

from agents import heuristic
from agents.search import touching_groups
from spades_env.cards import cards_to_mask
from spades_env.game import PHASE_PLAY, SpadesGame
from spades_env.observation import decode_observation
from train.ppo.config import VARIED_START_TENS


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


LABEL_STARTS = ("varied", "real")
"""Where spades-label's ``varied_start`` share of the deals starts (``--start``)."""


def random_start(rules, share: float, rng: random.Random, kind: str = "varied") -> dict[str, list[int]]:
    """The ``reset`` options of a deal that starts away from 0-0, with probability ``share``
    (otherwise none: 0-0, no bags): ``kind`` "varied", random scores (-150..490 in steps of 10, as
    ``spades-train``'s ``varied_start``) and bags (0..bag_limit-1); "real", scores and bags drawn
    from the states whole games reach (:mod:`spades_env.starts`, as ``game.start: real``; the
    dealer stays the deal's)."""
    if share <= 0 or rng.random() >= share:
        return {}
    if kind == "real":
        from spades_env.starts import sample_starts
        scores, bags, _ = sample_starts("real", 1, rng, rules=rules)
        return {"scores": scores[0].tolist(), "bags": bags[0].tolist()}
    options = {"scores": [10 * rng.randint(*VARIED_START_TENS) for _ in range(2)]}
    if not rules.bags_from_score_digit:
        options["bags"] = [rng.randrange(rules.bag_limit) for _ in range(2)]
    return options
