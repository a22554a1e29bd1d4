"""The engine's operations for search and labelling: SpadesGame.from_view (a world from a seat's
view plus hands) and SpadesGame.copy (the play-outs' cheap copy), against the real game, against
clone(), and against the implementation they replaced (agents/search.py's build_game and
copy_game before issue 29, frozen below), on random positions of every preset."""

from __future__ import annotations

import random

import pytest

from agents.heuristic import choose_action
from agents.search import play_out
from spades_env import make_rules, view_from_game
from spades_env.cards import cards_to_mask
from spades_env.game import (PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY, PHASE_SIGNAL,
                             PHASES_DONE, SpadesGame)

PRESETS = [("standard", 4), ("basic", 4), ("tournament", 4), ("openspiel", 4), ("cutthroat", 4), ("cutthroat", 3),
           ("short", 4), ("short_signals", 4)]
PHASES = (PHASE_BLIND_DECISION, PHASE_BIDDING, PHASE_PLAY, PHASE_SIGNAL)
POSITIONS = 60       # per preset


def rules_of(name: str, players: int):
    return make_rules(name, players=players) if players != 4 else make_rules(name)


def positions(rules, count: int, seed: int):
    """Heuristic play stopped at a random decision with a choice in one of PHASES (blind nil
    reachable: one game in three starts with a side far behind): yields (game, seat to act)."""
    rng = random.Random(seed)
    made = i = 0
    while made < count:
        i += 1
        scores = ([0, 250], [250, 0], [0, 0])[i % 3] if rules.blind_nil else None
        game = SpadesGame(rules, rng.randrange(1 << 30), scores=scores)
        stop, k = rng.randrange(60), 0
        while game.phase not in PHASES_DONE:
            if game.phase in PHASES and k >= stop and len(game.legal_actions()) > 1:
                break
            game.apply(choose_action(view_from_game(game, game.to_act), game.legal_mask()))
            k += 1
        if game.phase in PHASES:
            made += 1
            yield game, game.to_act


def relative_hands(game: SpadesGame, seat: int) -> list[int]:
    return [game.hands[(seat + k) % game.n] for k in range(game.n)]


def state(game: SpadesGame) -> tuple:
    """Everything a game holds, comparable: its attributes, its random stream's state, its deck."""
    d = dict(game.__dict__)
    return d.pop("rng").getstate(), d.pop("_deck_bits").tolist(), d.pop("rules"), d


def reference_build_game(view, rules, hands) -> SpadesGame:
    """agents.search.build_game as it was before SpadesGame.from_view (frozen for this test)."""
    n = view.players
    bags = None if rules.bags_from_score_digit else [min(max(b, 0), rules.bag_limit - 1) for b in view.bags]
    g = SpadesGame(rules, 0, dealer=None if rules.fixed_dealer is not None else view.dealer,
                   scores=list(view.scores), bags=bags)
    g.dealer = view.dealer
    g.hands, g.deal = list(hands), list(hands)
    g.bids = [-1 if b is None else b for b in view.bids]
    g.blind = list(view.blind)
    g.voids = [sum(1 << x for x in v) for v in view.voids]
    g.tricks_taken = list(view.tricks_taken)
    g.tricks_played = sum(view.tricks_taken)
    g.passed, g.received = [0] * n, [0] * n
    g.passed[0], g.received[0] = cards_to_mask(view.passed), cards_to_mask(view.received)
    if view.partnerships and (view.passed or view.received):
        g.passed[2], g.received[2] = g.received[0], g.passed[0]
    g.pass_queue, g.passes, g.actions = [], [], []
    g.spades_broken = view.spades_broken
    g._legal = -1
    g.to_act = 0
    if view.phase == PHASE_PLAY:
        in_trick = {c for _, c in view.current_trick}
        g.tricks = [(s, [c], -1) for s in range(n) for c in view.played[s] if c not in in_trick]
        g.trick_cards = [c for _, c in view.current_trick]
        if view.current_trick:
            g.trick_leader = view.current_trick[0][0]
            g.led_suit = g.trick_cards[0] // 13
            win_seat, win_card = view.current_trick[0]
            for seat, c in view.current_trick[1:]:
                if (c // 13 == win_card // 13 and c > win_card) or (c >= 39 and win_card < 39):
                    win_seat, win_card = seat, c
            g.win_seat, g.win_card = win_seat, win_card
        else:
            g.trick_leader = 0
            g.led_suit = g.win_card = g.win_seat = -1
        g.looked = [True] * n
    else:
        g.tricks, g.trick_cards = [], []
        g.trick_leader = -1
        g.led_suit = g.win_card = g.win_seat = -1
        for s in range(n):
            if g.bids[s] >= 0:
                g.looked[s] = True
        g.looked[0] = view.phase == PHASE_BIDDING
    g.phase = view.phase
    return g


def reference_copy_game(g: SpadesGame) -> SpadesGame:
    """agents.search.copy_game as it was before SpadesGame.copy (frozen for this test)."""
    new = object.__new__(SpadesGame)
    d = new.__dict__
    d.update(g.__dict__)
    for name in ("hands", "bids", "blind", "passed", "received", "pass_queue", "voids", "tricks_taken",
                 "trick_cards", "looked", "scores", "bags", "tricks", "passes"):
        d[name] = list(d[name])
    d["actions"], d["_hand_logs"], d["last_results"] = [], [], []
    return new


@pytest.mark.parametrize("name,players", [p for p in PRESETS if not make_rules(p[0]).signals])
def test_from_view_and_copy_equal_the_implementation_they_replaced(name, players):
    """(The frozen implementations predate the free signal, whose messages they do not carry:
    tests/spades_env/test_rules_signal_and_short_deck.py checks that from_view and copy do.)"""
    rules = rules_of(name, players)
    for game, seat in positions(rules, POSITIONS, seed=11):
        view = view_from_game(game, seat)
        hands = relative_hands(game, seat)
        old, new = reference_build_game(view, rules, hands), SpadesGame.from_view(view, rules, hands)
        assert state(new) == state(old)
        assert state(new.copy()) == state(reference_copy_game(old))
        assert state(game.copy()) == state(reference_copy_game(game))
        old, new = reference_copy_game(old), new.copy()
        play_out(old)
        play_out(new)
        assert state(new) == state(old) and new.last_results == old.last_results


@pytest.mark.parametrize("name,players", PRESETS)
def test_from_view_with_the_true_hands_is_the_real_game_seen_from_the_seat(name, players):
    rules = rules_of(name, players)
    for game, seat in positions(rules, POSITIONS, seed=5):
        n = game.n
        world = SpadesGame.from_view(view_from_game(game, seat), rules, relative_hands(game, seat))
        real = lambda values: [values[(seat + k) % n] for k in range(n)]     # noqa: E731
        assert world.phase == game.phase and world.to_act == 0
        assert world.legal_mask() == game.legal_mask()
        assert world.hands == real(game.hands)
        assert world.bids == real(game.bids) and world.blind == real(game.blind)
        assert world.tricks_taken == real(game.tricks_taken) and world.tricks_played == game.tricks_played
        assert world.voids == real(game.voids) and world.played == real(game.played)
        assert world.dealer == (game.dealer - seat) % n
        assert world.trick_cards == game.trick_cards and world.spades_broken == game.spades_broken
        if game.trick_cards:
            assert world.trick_leader == (game.trick_leader - seat) % n
            assert (world.win_seat, world.win_card) == ((game.win_seat - seat) % n, game.win_card)


def test_copy_is_independent_and_plays_out_like_clone():
    rules = make_rules("standard")
    for game, _ in positions(rules, 20, seed=3):
        before = game.clone()
        fast, slow = game.copy(), game.clone()
        assert fast.actions == [] and fast.hand_records == []       # the history is not copied
        play_out(fast)
        play_out(slow)
        assert fast.phase in PHASES_DONE
        assert fast.scores == slow.scores and fast.tricks_taken == slow.tricks_taken
        assert fast.last_results == slow.last_results
        for name in ("hands", "bids", "tricks_taken", "trick_cards", "voids", "scores", "bags", "tricks",
                     "phase", "to_act", "looked", "passed", "received"):
            assert getattr(game, name) == getattr(before, name), name


def test_from_view_refuses_what_it_cannot_build():
    game = SpadesGame("standard", 1)
    view = view_from_game(game, game.to_act)
    with pytest.raises(ValueError, match="do not fit the observation"):
        SpadesGame.from_view(view, make_rules("cutthroat", players=3), relative_hands(game, game.to_act))
    passing = view.__class__(**{**view.__dict__, "phase": PHASE_PASSING})
    with pytest.raises(ValueError, match="phase 2 is not supported"):
        SpadesGame.from_view(passing, make_rules("standard"), relative_hands(game, game.to_act))
