"""train/experimental/probes.py: the policy probes of the model card do what they say."""

from __future__ import annotations

import random

import pytest

import agents
from spades_env import spades_v0
from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, PHASE_PLAY
from train.experimental.probes import BidPlus, BlindNilAt, main, no_set_possible


def _decisions(env_kwargs: dict, hands: int, seed: int):
    """(obs, game) at every decision of hands played by the heuristic."""
    env = spades_v0.env(**env_kwargs)
    bot = agents.make("heuristic")
    for h in range(hands):
        env.reset(seed=seed + h)
        for seat in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            yield obs, env.unwrapped.game
            env.step(bot.act(obs, info))


def test_bid_plus_raises_every_bid_it_may_and_nothing_else():
    probe, policy = BidPlus(1.0), agents.make("neural")
    raised = 0
    for obs, game in _decisions({}, 6, 0):
        mine, theirs = probe.act(obs), policy.act(obs)
        bid = theirs - BID_ACTION_BASE
        if 1 <= bid <= 12 and obs["action_mask"][theirs + 1]:
            assert mine == theirs + 1
            raised += 1
        else:
            assert mine == theirs
    assert raised >= 10


def test_blind_nil_at_zero_always_bids_it_and_at_one_never():
    eager, never = BlindNilAt(0.0), BlindNilAt(1.0)        # a probability never exceeds 1
    offered = 0
    for obs, game in _decisions({"rules": {"blind_nil_min_deficit": 0}}, 6, 0):
        if obs["action_mask"][BLIND_NIL_ACTION]:
            offered += 1
            assert eager.act(obs) == BLIND_NIL_ACTION
            assert never.act(obs) != BLIND_NIL_ACTION
    assert offered >= 4


def test_no_set_possible_only_past_both_contracts_without_an_intact_nil():
    held = 0
    for obs, game in _decisions({}, 12, 3):
        if not no_set_possible(obs):
            continue
        held += 1
        assert game.phase == PHASE_PLAY
        for side in ((0, 2), (1, 3)):
            bidders = [s for s in side if game.bids[s] > 0]
            assert sum(game.tricks_taken[s] for s in bidders) >= sum(game.bids[s] for s in bidders)
        assert not any(game.bids[s] == 0 and game.tricks_taken[s] == 0 for s in range(4))
    assert held >= 10


def test_the_cli_plays_paired_games_and_refuses_a_bad_share(capsys):
    assert main(["bid-plus", "--share", "0.5", "--games", "1", "--workers", "1"]) == 0
    assert "candidate minus baseline" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bid-plus", "--share", "1.5"])
    with pytest.raises(SystemExit):
        main(["blind-nil-at", "--threshold", "1.0"])
    for bad in (["bid-tilt", "--tilt", "nan"], ["bid-ratio", "--ratio", "-1"], ["bid-ratio", "--ratio", "nan"]):
        with pytest.raises(SystemExit):
            main(bad)
    assert "expected" in capsys.readouterr().err


def test_the_cli_plays_the_nil_probes_paired(capsys):
    for argv in (["nil-defence", "--leads-only"], ["heuristic-blind-nil"], ["heuristic-nil-play", "--player", "random"]):
        assert main(argv + ["--games", "1", "--workers", "1"]) == 0, argv
        assert "candidate minus baseline" in capsys.readouterr().out


def test_bid_ratio_at_zero_raises_as_bid_plus_does_and_never_when_out_of_reach():
    """Ratio 0 raises every bid 1..12 it may (as bid-plus at share 1); a ratio no probability reaches
    raises none; with a bag floor, only where the side carries that many bags."""
    from spades_env.observation import decode_observation
    from train.experimental.probes import BidRatio
    always, never, floor = BidRatio(0.0), BidRatio(1e9), BidRatio(0.0, min_bags=5)
    plus, policy = BidPlus(1.0), agents.make("neural")
    bids = 0
    for obs, game in _decisions({}, 3, 0):
        if not obs["action_mask"][BID_ACTION_BASE:BID_ACTION_BASE + 14].any():
            continue                                     # card play: every probe leaves it alone
        theirs = policy.act(obs)
        bids += 1
        assert always.act(obs) == plus.act(obs)
        assert never.act(obs) == theirs
        carried = decode_observation(obs["observation"]).bags[0]
        assert floor.act(obs) == (always.act(obs) if carried >= 5 else theirs)
    assert bids >= 20


def test_bid_tilt_by_context_uses_each_tilt_exactly_where_its_condition_holds():
    """the partner's blind nil first, then an opponent's blind nil, bags, the lead, the other side's lead, the other side's bags, an
    opponent's nil, the partner's bid, else the plain tilt: at every bidding turn the context probe chooses as the
    plain probe with the tilt its condition picks."""
    from spades_env.observation import decode_observation
    from train.experimental.probes import BidTilt
    context = BidTilt(0.0, partner_bid_tilt=1.4, bags_tilt=(4, -1.0), lead_tilt=(150, 2.5), trail_tilt=(250, -0.5),
                      their_bags_tilt=(5, 0.7), their_nil_tilt=-0.3, partner_blind_nil_tilt=1.1,
                      their_blind_nil_tilt=-1.2)
    plain = {t: BidTilt(t) for t in (0.0, 1.4, -1.0, 2.5, -0.5, 0.7, -0.3, 1.1, -1.2)}
    env = spades_v0.env()
    bot = agents.make("heuristic")
    seen = set()
    for h in range(20):
        scores = [(0, 0), (200, 40), (-50, 300), (320, 310), (0, 250)][h % 5]
        env.reset(seed=h, options={"scores": list(scores), "bags": [h % 6, (h + 3) % 6]})
        for seat in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            if obs["action_mask"][BID_ACTION_BASE:BID_ACTION_BASE + 14].any():
                view = decode_observation(obs["observation"])
                if view.blind[2]:
                    expected = 1.1
                elif view.blind[1] or view.blind[3]:
                    expected = -1.2
                elif view.bags[0] >= 4:
                    expected = -1.0
                elif view.scores[0] >= 150 and view.scores[0] > view.scores[1]:
                    expected = 2.5
                elif view.scores[1] >= 250 and view.scores[1] > view.scores[0]:
                    expected = -0.5
                elif view.bags[1] >= 5:
                    expected = 0.7
                elif 0 in (view.bids[1], view.bids[3]):
                    expected = -0.3
                elif view.partner_bid() is not None:
                    expected = 1.4
                else:
                    expected = 0.0
                assert context.tilt_at(obs) == expected
                assert context.act(obs) == plain[expected].act(obs)
                seen.add(expected)
            env.step(bot.act(obs, info))
    assert seen == {0.0, 1.4, -1.0, 2.5, -0.5, 0.7, -0.3, 1.1, -1.2}


def test_bid_tilt_cli_refuses_a_malformed_context_tilt(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bid-tilt", "--tilt", "0", "--bags-tilt", "seven", "--games", "1"])
    assert stop.value.code == 2
    assert "--bags-tilt 'seven': expected a bag count and a tilt" in capsys.readouterr().err


def test_heuristic_bids_bids_as_the_heuristic_and_plays_as_the_policy():
    """Every bid (and, unless kept, the blind-nil decision) is the heuristic's; every other decision
    the policy's own (and the other way round for heuristic-cards)."""
    from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION
    from spades_env.observation import decode_observation
    from train.experimental.probes import HeuristicBids, HeuristicCards
    both, own_blind, cards = HeuristicBids(), HeuristicBids(blind_nil=False), HeuristicCards()
    bot, policy = agents.make("heuristic"), agents.make("neural")
    phases = set()
    for obs, game in _decisions({}, 2, 0):
        phase = decode_observation(obs["observation"]).phase
        phases.add(phase)
        if phase == PHASE_BIDDING:
            assert both.act(obs) == own_blind.act(obs) == bot.act(obs)
            assert cards.act(obs) == policy.act(obs)
        elif phase == PHASE_BLIND_DECISION:
            assert (both.act(obs), own_blind.act(obs)) == (bot.act(obs), policy.act(obs))
        else:
            assert both.act(obs) == own_blind.act(obs) == policy.act(obs)
            assert cards.act(obs) == bot.act(obs)
    env = spades_v0.env()
    env.reset(seed=3, options={"scores": [0, 200]})      # side 0 trails by 200: blind nil is offered
    obs, *_ = env.last()
    assert decode_observation(obs["observation"]).phase == PHASE_BLIND_DECISION
    assert (both.act(obs), own_blind.act(obs)) == (bot.act(obs), policy.act(obs))
    assert PHASE_BIDDING in phases and PHASE_PLAY in phases


def test_heuristic_nil_play_hands_the_cards_to_the_heuristic_only_where_the_side_bid_nil():
    from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION
    from spades_env.observation import decode_observation
    from train.experimental.probes import HeuristicNilPlay
    probe, bot, policy = HeuristicNilPlay(), agents.make("heuristic"), agents.make("neural")
    seen = {True: 0, False: 0}
    for obs, game in _decisions({}, 8, 0):
        view = decode_observation(obs["observation"])
        nil_side = view.phase not in (PHASE_BIDDING, PHASE_BLIND_DECISION) and (
            0 in (view.bids[0], view.bids[2]) or view.blind[0] or view.blind[2])
        assert probe.act(obs) == (bot.act(obs) if nil_side else policy.act(obs))
        seen[nil_side] += 1
    assert seen[True] >= 5 and seen[False] >= 50


def test_nil_defence_hands_the_cards_to_the_player_only_while_an_opponents_nil_is_intact():
    from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION
    from spades_env.observation import decode_observation
    from train.experimental.probes import NilDefence
    probe, blind_only, leads_only = NilDefence(), NilDefence(blind_only=True), NilDefence(leads_only=True)
    bot, policy = agents.make("heuristic"), agents.make("neural")
    seen = {True: 0, False: 0}
    for obs, game in _decisions({}, 10, 0):
        view = decode_observation(obs["observation"])
        intact = view.phase not in (PHASE_BIDDING, PHASE_BLIND_DECISION) and any(
            view.bids[s] == 0 and view.tricks_taken[s] == 0 for s in (1, 3))
        assert probe.act(obs) == (bot.act(obs) if intact else policy.act(obs))
        leading = view.phase == PHASE_PLAY and not view.current_trick
        assert leads_only.act(obs) == (bot.act(obs) if intact and leading else policy.act(obs))
        if not any(view.blind):
            assert blind_only.act(obs) == policy.act(obs)
        seen[intact] += 1
    assert seen[True] >= 5 and seen[False] >= 50


def test_heuristic_blind_nil_takes_only_the_blind_nil_decision_from_the_heuristic():
    from spades_env.game import PHASE_BLIND_DECISION
    from spades_env.observation import decode_observation
    from train.experimental.probes import HeuristicBlindNil
    probe, bot, policy = HeuristicBlindNil(), agents.make("heuristic"), agents.make("neural")
    decisions = 0
    env = spades_v0.env()
    for h, scores in enumerate([(0, 250), (0, 450), (100, 220)]):   # blind nil offered to side 0
        env.reset(seed=h, options={"scores": list(scores)})
        for seat in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            blind_turn = decode_observation(obs["observation"]).phase == PHASE_BLIND_DECISION
            assert probe.act(obs) == (bot.act(obs) if blind_turn else policy.act(obs))
            decisions += blind_turn
            env.step(bot.act(obs, info))
    assert decisions >= 3
