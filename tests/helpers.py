"""Shared helpers for the rule tests: hand-made deals and scripted play.

Cards are written as in docs/rules.md and docs/api.md: rank then suit, ``"AS"``, ``"TD"``, ``"2C"``.
"""

from __future__ import annotations

import random
from typing import Iterable, Sequence

from spades_env.cards import card_str, parse_card
from spades_env.game import BID_ACTION_BASE, SpadesGame

RANKS = "23456789TJQKA"
SUITS = "CDHS"


def card(text: str) -> int:
    return parse_card(text)


def cards(text: str) -> list[int]:
    """``"AS KS 2C"`` -> ``[51, 50, 0]``."""
    return [parse_card(t) for t in text.split()]


def names(ids: Iterable[int]) -> list[str]:
    return sorted(card_str(c) for c in ids)


def bid(b: int) -> int:
    """The action id of bid ``b`` (0 is nil)."""
    return BID_ACTION_BASE + b


def whole_suit(suit: str) -> list[int]:
    s = SUITS.index(suit)
    return [s * 13 + r for r in range(13)]


def suit_deal(*suits: str) -> list[list[int]]:
    """Seat i holds the whole suit ``suits[i]``, e.g. ``suit_deal("S", "H", "D", "C")``."""
    return [whole_suit(s) for s in suits]


def fill_deal(hands: dict[int, str], players: int = 4) -> list[list[int]]:
    """The given seats hold exactly the given cards; the rest of the deck goes to the other seats
    in card-id order (without the two of clubs in the three-player game)."""
    per = 52 // players
    fixed = {seat: cards(text) for seat, text in hands.items()}
    for seat, hand in fixed.items():
        assert len(hand) == per, (seat, len(hand))
    used = {c for hand in fixed.values() for c in hand}
    assert len(used) == sum(len(h) for h in fixed.values()), "a card is given twice"
    rest = [c for c in range(52) if c not in used and not (players == 3 and c == 0)]
    deal = []
    for seat in range(players):
        if seat in fixed:
            deal.append(fixed[seat])
        else:
            deal.append(rest[:per])
            rest = rest[per:]
    assert not rest
    return deal


def scripted_deal(winners: Sequence[int]) -> tuple[list[list[int]], list[dict[int, int]]]:
    """A deal and a script of 13 tricks in which trick ``t`` is won by seat ``winners[t]``.

    Tricks 0..8 are three tricks each of clubs, diamonds, hearts (every seat follows suit; the
    winner holds the highest of the four cards). Trick 9 is led by ``winners[8]`` with one of
    2C/2D/2H; every other seat is void in the suit led by then, and ``winners[9]`` trumps it with
    the 2S (spades are broken here). Tricks 10..12 are spade tricks (everyone holds only spades).
    Every scripted card is legal under the standard rules. Returns ``(deal, script)`` where
    ``script[t][seat]`` is the card ``seat`` plays to trick ``t``.
    """
    assert len(winners) == 13
    assert winners[8] != winners[9], "the 2S holder cannot lead trick 9"
    groups = ((12, 11, 10, 9), (8, 7, 6, 5), (4, 3, 2, 1))  # A K Q J / T 9 8 7 / 6 5 4 3
    deal: list[list[int]] = [[] for _ in range(4)]
    script: list[dict[int, int]] = []

    def same_suit_trick(suit: int, ranks: tuple[int, ...], winner: int) -> dict[int, int]:
        others = [s for s in range(4) if s != winner]
        plays = {winner: suit * 13 + ranks[0]}
        for s, r in zip(others, ranks[1:]):
            plays[s] = suit * 13 + r
        return plays

    for t in range(9):
        script.append(same_suit_trick(t // 3, groups[t % 3], winners[t]))
    # Trick 9: the leftovers 2C, 2D, 2H and the 2S.
    trumper = winners[9]
    leftovers = iter([0, 13, 26])  # 2C, 2D, 2H
    trick9 = {trumper: 39}
    for s in range(4):
        if s != trumper:
            trick9[s] = next(leftovers)
    script.append(trick9)
    for t in range(10, 13):
        script.append(same_suit_trick(3, groups[t - 10], winners[t]))
    for plays in script:
        for s, c in plays.items():
            deal[s].append(c)
    assert sorted(c for h in deal for c in h) == list(range(52))
    return deal, script


def winners_for(tricks: Sequence[int]) -> list[int]:
    """A list of 13 trick winners giving seat s ``tricks[s]`` tricks, usable by scripted_deal."""
    assert sum(tricks) == 13
    seq = [s for s in range(4) for _ in range(tricks[s])]
    # scripted_deal needs winners[8] != winners[9]: rotate until that holds.
    for shift in range(13):
        w = seq[shift:] + seq[:shift]
        if w[8] != w[9]:
            return w
    raise AssertionError("one seat takes all 13 tricks: use suit_deal instead")


def play_script(game, script: Sequence[dict[int, int]]) -> None:
    """Play the scripted tricks on a SpadesGame (whatever seat leads each trick)."""
    for t, plays in enumerate(script):
        for _ in range(game.n):
            seat = game.to_act
            game.apply(plays[seat])


def env_play_script(env, script: Sequence[dict[int, int]]) -> None:
    """The same through a raw env (agent_selection decides who plays)."""
    for plays in script:
        for _ in range(4):
            seat = env.agent_name_mapping[env.agent_selection]
            env.step(plays[seat])


def apply_bids(game, bids: dict[int, int] | Sequence[int], blind: Iterable[int] = ()) -> None:
    """Bid for every seat in turn order; ``bids[seat]`` is the number of tricks (0 = nil).
    Seats in ``blind`` bid blind nil when offered; the others decline it (67) and bid."""
    blind = set(blind)
    while game.phase in (0, 1):  # PHASE_BLIND_DECISION, PHASE_BIDDING
        seat = game.to_act
        if game.phase == 0:
            game.apply(66 if seat in blind else 67)
        else:
            assert seat not in blind, f"seat {seat} was not offered blind nil"
            game.apply(bid(bids[seat]))


def play_first_legal(game) -> list[tuple[int, int]]:
    """Play the rest of the hand with the lowest legal action of every seat; returns the
    (seat, action) pairs applied."""
    start = game.hand_number
    applied = []
    while game.phase not in (4, 5) and game.hand_number == start:      # (hand over, game over; 6 is the signal)
        seat, action = game.to_act, game.legal_actions()[0]
        game.apply(action)
        applied.append((seat, action))
    return applied


def redeal_hidden(game: SpadesGame, seat: int, rng: random.Random) -> list[list[int]]:
    """The hand's deal with the cards ``seat`` cannot see (other players' unplayed cards, except
    cards that changed hands in a pass) dealt again at random, each player keeping as many cards
    of each suit as it had: every action so far stays legal and ``seat``'s observation is the
    same."""
    deal = [[c for c in range(52) if m >> c & 1] for m in game.deal]
    moved = {c for _, _, c in game.passes}
    hidden = {s: [c for c in range(52) if game.hands[s] >> c & 1 and c not in moved]
              for s in range(game.n) if s != seat}
    mapping = {}
    for suit in range(4):
        slots = [c for s in hidden for c in hidden[s] if c // 13 == suit]
        shuffled = slots[:]
        rng.shuffle(shuffled)
        mapping.update(zip(slots, shuffled))
    return [sorted(mapping.get(c, c) for c in hand) for hand in deal]


def check_no_peeking(make_agent, deals: Sequence[list[list[int]]], scores: Sequence[int], rng: random.Random,
                     decide_at, redeals: int = 1) -> tuple[int, int]:
    """Play ``deals`` (heuristic players) and, at the steps where ``decide_at(step, obs)`` holds,
    redeal the cards the acting seat cannot see, replay the hand so far in a twin env and check
    that the seat's observation and mask are the same and a fresh ``make_agent()`` makes the
    same decision. Returns (decisions checked, redeals that moved a hidden card)."""
    import agents
    import numpy as np
    from spades_env import spades_v0

    env = spades_v0.raw_env(rules="standard", episode="hand")
    twin = spades_v0.raw_env(rules="standard", episode="hand")
    checked = changed = 0
    for hand_no, deal in enumerate(deals):
        options = {"dealer": hand_no % 4, "scores": list(scores)}
        drivers = [agents.make("heuristic", seed=1) for _ in range(4)]
        env.reset(seed=hand_no, options={"deal": deal, **options})
        actions = []
        for step, name in enumerate(env.agent_iter()):
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            seat = int(name[-1])
            if decide_at(step, obs):
                expected = make_agent().act(obs, info)
                game = env.unwrapped.game
                for _ in range(redeals):
                    twin.reset(seed=hand_no, options={"deal": redeal_hidden(game, seat, rng), **options})
                    for a in actions:
                        twin.step(a)
                    other = twin.unwrapped.game
                    assert other.hands[seat] == game.hands[seat]
                    changed += other.hands != game.hands
                    twin_obs = twin.observe(name)
                    np.testing.assert_array_equal(twin_obs["observation"], obs["observation"])
                    np.testing.assert_array_equal(twin_obs["action_mask"], obs["action_mask"])
                    assert make_agent().act(twin_obs, info) == expected
                    checked += 1
            action = drivers[seat].act(obs, info)
            actions.append(action)
            env.step(action)
    return checked, changed


def play_hand_asserting_legal(bot, seed: int = 1) -> None:
    """One standard hand with ``bot`` on every seat, asserting each of its actions is legal."""
    from spades_env import spades_v0
    env = spades_v0.raw_env(rules="standard", episode="hand")
    env.reset(seed=seed)
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        action = None if term or trunc else bot.act(obs, info)
        assert action is None or obs["action_mask"][action]
        env.step(action)


def heuristic_record(seed: int = 0, episode: str = "hand", rules="standard", **overrides) -> dict:
    """The game record of a hand (or a whole game) played by the heuristic on every seat (a record
    to open, replay and inspect in tests); ``overrides`` are single rules (``target_score=100``)."""
    import agents
    from spades_env import spades_v0
    env = spades_v0.raw_env(rules=rules, episode=episode, **overrides)
    env.reset(seed=seed)
    bot = agents.make("heuristic")
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        env.step(None if term or trunc else bot.act(obs, info))
    return env.game_record()


def heuristic_hand_record(seed: int = 0) -> dict:
    """One hand of standard rules played by the heuristic on every seat."""
    return heuristic_record(seed)


def bid_decisions(seed: int, limit: int):
    """(obs, info) at bidding turns with a choice in a whole game the heuristic plays on every
    seat (from ``seed``), at most ``limit``: real bidding positions, scores and bags included."""
    from agents.heuristic import HeuristicAgent
    from spades_env import decode_observation, spades_v0
    from spades_env.game import PHASE_BIDDING
    env = spades_v0.env(episode="game")
    env.reset(seed=seed)
    bot, found = HeuristicAgent(), 0
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        if decode_observation(obs["observation"]).phase == PHASE_BIDDING and obs["action_mask"].sum() > 1:
            yield obs, info
            found += 1
            if found == limit:
                return
        env.step(bot.act(obs, info))

