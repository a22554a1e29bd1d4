"""Differential test: ``rules="openspiel"`` agrees with OpenSpiel's own ``spades`` move for move.

Both engines are driven through the same hands: the same deal, the same running scores, and at
every decision the same (seeded, random) action. At every decision we compare the player to act
and the exact set of legal moves (our ``action_mask`` against ``state.legal_actions()``); at the
end we compare that both are terminal at the same moment and that each partnership's hand score
is the same (our score change against ``state.returns()``).

OpenSpiel notes (open_spiel's ``games/spades/spades.cc`` and ``spades_scoring.cc``):

* The i-th chance action deals that card id to player ``i % 4``; then players 0..3 bid (action
  ``52 + b``, 52 = nil; ``0..13 - partner_bid`` once the partner has bid); player 0 leads.
* Running scores come in two ways depending on the open_spiel release: older releases take the
  game parameters ``score_partnership_0/1``; newer ones (2.0.x) drop them and offer
  ``state.set_current_scores([s0, s1])`` instead. Both are handled here. Bags are read from the
  score's last digit with C++ ``%`` (negative for negative scores).
* Newer releases also add ``win_or_loss_bonus`` (default 200) to ``returns()`` when the *hand*
  score reaches ``win_threshold`` or falls to ``mercy_threshold``. That is a game-over bonus,
  not hand scoring, so we load the game with ``win_or_loss_bonus=0``: returns are then exactly
  the hand scores.
* We never call OpenSpiel's observation functions (its ObservationTensor misbehaves when one
  seat takes all 13 tricks).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

pyspiel = pytest.importorskip("pyspiel")

from spades_env import spades_v0  # noqa: E402

NUM_CARDS = 52
BID_BASE = 52
NUM_RANDOM_HANDS = 4000
SEED = 20240611

_SPEC = pyspiel.load_game("spades").get_type().parameter_specification
_SCORES_AS_PARAMS = "score_partnership_0" in _SPEC
_BASE_PARAMS = {"win_or_loss_bonus": 0} if "win_or_loss_bonus" in _SPEC else {}
_GAME_CACHE: dict = {}


def _ospiel_game(scores):
    """The OpenSpiel game to use for a hand starting at ``scores``."""
    key = tuple(scores) if _SCORES_AS_PARAMS else None
    game = _GAME_CACHE.get(key)
    if game is None:
        params = dict(_BASE_PARAMS)
        if _SCORES_AS_PARAMS:
            params["score_partnership_0"] = int(scores[0])
            params["score_partnership_1"] = int(scores[1])
        game = pyspiel.load_game("spades", params)
        if len(_GAME_CACHE) > 64:
            _GAME_CACHE.clear()
        _GAME_CACHE[key] = game
    return game


def _ospiel_state(deal, scores):
    """A pyspiel state with ``deal`` (four lists of 13 card ids) dealt and ``scores`` set."""
    state = _ospiel_game(scores).new_initial_state()
    if not _SCORES_AS_PARAMS:
        state.set_current_scores([int(scores[0]), int(scores[1])])
    # The i-th chance action gives its card to player i % 4.
    for j in range(13):
        for p in range(4):
            assert state.is_chance_node()
            state.apply_action(deal[p][j])
    assert not state.is_chance_node()
    return state


def _our_env():
    return spades_v0.raw_env(rules="openspiel", reward_scale=1.0)


def _describe(deal, scores, actions):
    return f"deal={deal!r} scores={list(scores)!r} actions={actions!r}"


def play_both(env, deal, scores, choose):
    """Drive both engines through one hand, comparing at every decision.

    ``choose(seat, legal, bids)`` picks the next action among ``legal`` (sorted ids);
    ``bids`` is the per-seat bid list so far (-1 = not yet bid). Returns
    ``(hand_scores, game, actions, decisions)``.
    """
    env.reset(seed=0, options={"deal": [list(h) for h in deal], "scores": list(scores)})
    game = env.unwrapped.game
    state = _ospiel_state(deal, scores)
    actions: list[int] = []
    bids = [-1] * 4
    decisions = 0
    while True:
        ours_done = all(env.terminations.values()) or all(env.truncations.values())
        theirs_done = state.is_terminal()
        assert ours_done == theirs_done, (
            f"terminal mismatch: ours={ours_done} openspiel={theirs_done} after "
            f"{_describe(deal, scores, actions)}")
        if ours_done:
            break
        agent = env.agent_selection
        seat = int(agent.rsplit("_", 1)[1])
        their_player = state.current_player()
        assert seat == their_player == game.to_act, (
            f"player to act: ours {agent} (engine {game.to_act}) vs openspiel {their_player} "
            f"after {_describe(deal, scores, actions)}")
        obs, _, termination, truncation, _ = env.last()
        assert not termination and not truncation
        mask = obs["action_mask"]
        ours = [int(a) for a in mask.nonzero()[0]]
        theirs = sorted(int(a) for a in state.legal_actions())
        assert ours == theirs, (
            f"legal moves differ for seat {seat}: ours-only {sorted(set(ours) - set(theirs))}, "
            f"openspiel-only {sorted(set(theirs) - set(ours))} (ours {ours}, openspiel {theirs}) "
            f"after {_describe(deal, scores, actions)}")
        action = choose(seat, theirs, bids)
        if action >= BID_BASE:
            bids[seat] = action - BID_BASE
        actions.append(action)
        env.step(action)
        state.apply_action(action)
        decisions += 1

    assert len(actions) == 4 + NUM_CARDS, f"hand length {len(actions)}: {_describe(deal, scores, actions)}"
    returns = state.returns()
    their_scores = [int(returns[0]), int(returns[1])]
    assert returns[2] == returns[0] and returns[3] == returns[1]
    change = game.hand_records[-1]["score_change"]
    points = [r.points for r in game.last_results]
    rewards = [env.rewards[f"player_{s}"] for s in range(4)]
    msg = (f"hand score: ours {change} (rewards {rewards}) vs openspiel returns {list(returns)}; "
           f"bids={bids} tricks={game.tricks_taken} {_describe(deal, scores, actions)}")
    assert change == points, msg
    assert their_scores == change, msg
    assert rewards == [float(change[s % 2]) for s in range(4)], msg
    assert game.scores == [scores[0] + change[0], scores[1] + change[1]], msg
    if hasattr(state, "get_current_scores") and not _SCORES_AS_PARAMS:
        assert list(state.get_current_scores()) == game.scores, msg
    return change, game, actions, decisions


# ---------------------------------------------------------------------- random hands
def _random_scores(rng):
    r = rng.random()
    if r < 0.7:
        return [rng.randint(-349, 499), rng.randint(-349, 499)]
    # Last digits that sit at the bag-penalty edge, both signs.
    pick = lambda: rng.choice((1, -1)) * (10 * rng.randint(0, 34) + rng.choice((9, 8, 7, 1, 0)))  # noqa: E731
    return [pick(), pick()]


def _make_chooser(rng, style):
    """A policy: uniform random legal moves, steered per ``style`` during bidding."""
    nil_prob = {"uniform": 0.0, "nil": 0.45, "high": 0.0, "low": 0.1}[style]

    def choose(seat, legal, bids):
        if legal[0] < BID_BASE:  # card play
            if style == "nil" and bids[seat] == 0 and rng.random() < 0.9:
                # A nil bidder ducks: its lowest-ranked legal card (keeps some nils).
                return min(legal, key=lambda c: (c % 13, c))
            return rng.choice(legal)
        if nil_prob and BID_BASE in legal and rng.random() < nil_prob:
            return BID_BASE
        if style == "high":
            return rng.choice(legal[-3:])  # toward 13 per side: many sets
        if style == "low":
            small = [a for a in legal if BID_BASE < a <= BID_BASE + 3]
            return rng.choice(small or legal)  # made contracts, many bags
        if style == "nil":
            small = [a for a in legal if BID_BASE < a <= BID_BASE + 6]
            return rng.choice(small or legal)
        return rng.choice(legal)

    return choose


def test_random_hands_agree_with_openspiel():
    rng = random.Random(SEED)
    env = _our_env()
    styles = ("uniform", "nil", "high", "low")
    stats: Counter = Counter()
    for _ in range(NUM_RANDOM_HANDS):
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        deal = [sorted(deck[p::4]) for p in range(4)]
        scores = _random_scores(rng)
        style = rng.choice(styles)
        change, game, actions, decisions = play_both(env, deal, scores, _make_chooser(rng, style))
        stats["hands"] += 1
        stats["decisions"] += decisions
        stats[f"style_{style}"] += 1
        tricks = game.tricks_taken
        for side in range(2):
            members = (side, side + 2)
            side_bids = [game.bids[s] for s in members]
            res = game.last_results[side]
            stats["negative_start"] += scores[side] < 0
            stats["start_digit_9"] += abs(scores[side]) % 10 == 9
            for s in members:
                if game.bids[s] == 0:
                    stats["nil_kept" if tricks[s] == 0 else "nil_broken"] += 1
            stats["both_nil"] += side_bids == [0, 0]
            stats["side_bid_13"] += sum(side_bids) == 13
            stats["set"] += not res.made
            stats["made_with_bags"] += res.made and sum(tricks[s] for s in members) > res.contract
            stats["bag_penalty"] += res.bag_penalties > 0
            stats["bags_negative_no_penalty"] += (scores[side] < 0 and res.bags_taken > 0
                                                  and res.bag_penalties == 0
                                                  and abs(scores[side]) % 10 + res.bags_taken >= 10)
    print(f"\nOpenSpiel agreement: {dict(sorted(stats.items()))}")
    # The harness must actually reach the interesting scoring paths.
    assert stats["hands"] == NUM_RANDOM_HANDS
    for key, minimum in (("nil_kept", 60), ("nil_broken", 1000), ("both_nil", 100),
                         ("side_bid_13", 500), ("set", 1000), ("made_with_bags", 1000),
                         ("bag_penalty", 60), ("bags_negative_no_penalty", 100), ("negative_start", 1000),
                         ("start_digit_9", 300)):
        assert stats[key] >= minimum, f"coverage: only {stats[key]} x {key} ({dict(stats)})"


# ---------------------------------------------------------------------- hand-crafted corners
def _cards(suit, ranks):
    return [suit * 13 + r for r in ranks]


C, D, H, S = 0, 1, 2, 3
ALL = range(13)

# Seat 1 holds every spade: void in everything else, it trumps every trick, then leads spades.
ONE_SEAT_ALL_TRICKS = [_cards(C, ALL), _cards(S, ALL), _cards(D, ALL), _cards(H, ALL)]
# Seat 0 holds every spade and leads: it must lead a spade (nothing else) and wins all 13.
LEADER_ALL_TRICKS = [_cards(S, ALL), _cards(C, ALL), _cards(D, ALL), _cards(H, ALL)]
# Side 0 holds all spades and hearts, split so that seat 2 wins the six heart tricks and seat 0
# then ruffs and runs: side 0 takes all 13 and both partners take at least one trick.
SIDE_ALL_TRICKS_SPLIT = [
    _cards(H, range(0, 6)) + _cards(S, range(6, 13)),
    _cards(C, ALL),
    _cards(H, range(6, 13)) + _cards(S, range(0, 6)),
    _cards(D, ALL),
]

CORNER_SCORES = [[0, 0], [-57, 9], [489, -349], [-1, 499], [-9, -10], [19, -51], [499, 499]]


def _scripted(bids, rng):
    """Bids from ``bids`` (None: random legal), then uniformly random legal cards."""
    def choose(seat, legal, _bids):
        if legal[0] >= BID_BASE:
            want = bids[seat]
            if want is None:
                return rng.choice(legal)
            assert BID_BASE + want in legal, f"scripted bid {want} not legal for seat {seat}: {legal}"
            return BID_BASE + want
        return rng.choice(legal)
    return choose


@pytest.mark.parametrize("scores", CORNER_SCORES)
@pytest.mark.parametrize("deal,bids,expect_tricks", [
    # Seat 1 takes all 13: it bid 13 and its partner nil (kept); side 0 nil kept + set.
    (ONE_SEAT_ALL_TRICKS, [0, 13, 4, 0], [0, 13, 0, 0]),
    # Seat 1 bid nil and takes all 13; its partner bid 13 (allowed next to a nil). Nil tricks
    # count for the partner: 130 - 100 = +30. Side 0 bid 5 + 8 = 13 and took nothing: -130.
    (ONE_SEAT_ALL_TRICKS, [5, 0, 8, 13], [0, 13, 0, 0]),
    # The leader takes all 13 with only spades in hand (forced spade leads).
    (LEADER_ALL_TRICKS, [13, 1, 0, 1], [13, 0, 0, 0]),
    (LEADER_ALL_TRICKS, [0, 0, 0, 0], [13, 0, 0, 0]),
    # Both partners nil and both broken; with a score ending in 9, 13 bags are two penalties
    # (a hand score of -387, past OpenSpiel's mercy threshold).
    (SIDE_ALL_TRICKS_SPLIT, [0, 3, 0, 2], None),
    # A side bidding 13 in total on each side.
    (SIDE_ALL_TRICKS_SPLIT, [6, 13, 7, 0], None),
], ids=["seat1-all13-bid13", "seat1-all13-nil", "leader-all13", "all-nil", "both-nil-broken",
        "sides-bid-13"])
def test_corner_cases_agree_with_openspiel(deal, bids, expect_tricks, scores):
    env = _our_env()
    for seed in range(3):
        change, game, _, _ = play_both(env, deal, scores, _scripted(bids, random.Random(seed)))
        if expect_tricks is not None:
            assert game.tricks_taken == expect_tricks
        else:
            assert game.tricks_taken[0] + game.tricks_taken[2] == 13
            assert game.tricks_taken[0] > 0 and game.tricks_taken[2] > 0


def test_bid_limits_next_to_partner():
    """After a 13 the partner may only bid nil; after a nil, anything; after 6, nil..7."""
    env = _our_env()
    deal = SIDE_ALL_TRICKS_SPLIT
    seen = {}

    def choose(seat, legal, bids):
        if legal[0] >= BID_BASE:
            seen[seat] = legal
            return {0: BID_BASE + 13, 1: BID_BASE + 0, 2: BID_BASE, 3: BID_BASE + 13}[seat]
        return legal[0]

    change, _, _, _ = play_both(env, deal, [-57, 9], choose)
    assert seen[2] == [BID_BASE]
    assert seen[3] == list(range(BID_BASE, BID_BASE + 14))

    def choose6(seat, legal, bids):
        if legal[0] >= BID_BASE:
            seen[seat] = legal
            return {0: BID_BASE + 6, 1: BID_BASE + 1, 2: BID_BASE + 7, 3: BID_BASE + 12}[seat]
        return legal[-1]

    play_both(env, deal, [489, -1], choose6)
    assert seen[2] == list(range(BID_BASE, BID_BASE + 8))
    assert seen[3] == list(range(BID_BASE, BID_BASE + 13))


def test_hand_scores_known_values():
    """Spot values (checked by hand against OpenSpiel's Score()) for the crafted deals."""
    env = _our_env()
    rng = random.Random(0)
    # Side 0 both nil, both broken, all 13 tricks, score 499 (9 bags): -200 + 13 - 200 = -387.
    # Side 1 bid 3 + 2, took 0: -50.
    change, *_ = play_both(env, SIDE_ALL_TRICKS_SPLIT, [499, -57], _scripted([0, 3, 0, 2], rng))
    assert change == [-387, -50]
    # Same with score -57 (bags read as -7): -200 + 13 + 0 = -187; with -51 (-1): one penalty.
    change, *_ = play_both(env, SIDE_ALL_TRICKS_SPLIT, [-57, 0], _scripted([0, 3, 0, 2], rng))
    assert change == [-187, -50]
    change, *_ = play_both(env, SIDE_ALL_TRICKS_SPLIT, [-51, 0], _scripted([0, 3, 0, 2], rng))
    assert change == [-287, -50]
    # Seat 1 bid 13 and took 13, partner nil kept: 130 + 100 = 230; side 0 nil kept, bid 4: 60.
    change, *_ = play_both(env, ONE_SEAT_ALL_TRICKS, [0, 0], _scripted([0, 13, 4, 0], rng))
    assert change == [60, 230]
