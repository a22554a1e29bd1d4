"""The rule-based agent (agents/heuristic.py, agents/heuristic_decisions.py): registry, determinism, legality in every preset,
no peeking at hidden cards, hand-made situations, and a quick strength check."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

import agents
from agents.heuristic import (HeuristicAgent, choose_action, choose_bid, choose_card, choose_pass,
                              estimate_tricks, nil_success_chance)
from agents.heuristic_conventions import Conventions, conventions_from
from spades_env import ObservationView, spades_v0, view_from_game
from spades_env.game import (BLIND_NIL_ACTION, LOOK_ACTION, PHASE_BIDDING, PHASE_BLIND_DECISION,
                             PHASE_PASSING, PHASE_PLAY, SpadesGame)

from helpers import check_no_peeking, redeal_hidden, bid, card, cards

# ---------------------------------------------------------------------- helpers

PRESET_KWARGS = {
    "standard": {"rules": "standard"},
    "basic": {"rules": "basic"},
    "tournament": {"rules": "tournament"},
    "cutthroat": {"rules": "cutthroat"},
    "openspiel": {"rules": "openspiel"},
    "three_players": {"rules": "cutthroat", "players": 3},
    "oh_hell_two_of_clubs": {"rules": "standard", "bids_may_total_13": False, "two_of_clubs_leads": True,
                             "blind_nil_pass": 3},
    "spades_lead_any": {"rules": "tournament", "spades_lead": "any"},
}


def deal_for(i: int, players: int = 4) -> list[list[int]]:
    rng = random.Random(7919 * i + 1)
    deck = [c for c in range(52) if not (players == 3 and c == 0)]
    rng.shuffle(deck)
    k = len(deck) // players
    return [sorted(deck[j * k:(j + 1) * k]) for j in range(players)]


def play_hand(env, seat_agents, deal=None, dealer=None, scores=None, seed=0):
    """One hand through the env: returns the per-agent summed rewards and the engine."""
    options = {}
    if deal is not None:
        options["deal"] = deal
    if dealer is not None:
        options["dealer"] = dealer
    if scores is not None:
        options["scores"] = scores
    env.reset(seed=seed, options=options)
    total = {a: 0.0 for a in env.possible_agents}
    for name in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        total[name] += reward
        if term or trunc:
            env.step(None)
            continue
        env.step(seat_agents[env.possible_agents.index(name)].act(obs, info))
    return total, env.unwrapped.game


def make_view(hand, *, trick=(), leader=None, bids=(3, 3, 3, 3), tricks_taken=(0, 0, 0, 0), earlier=(),
              voids=None, spades_broken=False, phase=PHASE_PLAY, scores=(0, 0), blind=(False,) * 4,
              passed=(), received=()):
    """A hand-made view of relative seat 0. ``trick`` lists (relative seat, card) in play order;
    ``earlier`` lists cards played to earlier tricks (who played them does not matter here)."""
    hand = cards(hand) if isinstance(hand, str) else list(hand)
    trick = [(s, card(c) if isinstance(c, str) else c) for s, c in trick]
    earlier = cards(earlier) if isinstance(earlier, str) else list(earlier)
    played = [[] for _ in range(4)]
    for i, c in enumerate(earlier):
        played[1 + i % 3].append(c)
    for s, c in trick:
        played[s].append(c)
    if leader is None:
        leader = trick[0][0] if trick else 0
    return ObservationView(
        players=4, partnerships=True, hand=sorted(hand), phase=phase, dealer=3, to_act=0,
        bids=list(bids), blind=list(blind), passed=list(passed), received=list(received),
        tricks_taken=list(tricks_taken), trick_leader=leader if phase == PHASE_PLAY else None,
        current_trick=trick, played=[sorted(p) for p in played],
        voids=[set(v) for v in (voids or [(), (), (), ()])], spades_broken=spades_broken,
        scores=list(scores), bags=[0, 0], may_bid_blind_nil=[False, False], target_score=500,
        mercy_score=-200)


def follow_legal(view: ObservationView) -> list[int]:
    """The legal cards of a hand-made view: follow suit if possible."""
    if not view.current_trick:
        return list(view.hand)
    led = view.current_trick[0][1] // 13
    same = [c for c in view.hand if c // 13 == led]
    return same or list(view.hand)


# ---------------------------------------------------------------------- registry, determinism

def test_make_registers_heuristic():
    assert "heuristic" in agents.available()
    bot = agents.make("heuristic", seed=0)
    assert isinstance(bot, HeuristicAgent) and isinstance(bot, agents.Agent)
    assert bot.name == "heuristic"


def test_deterministic_given_seed():
    records = []
    for _ in range(2):
        env = spades_v0.env(rules="standard", episode="game", max_hands=3)
        bots = [agents.make("heuristic", seed=5) for _ in range(4)]
        env.reset(seed=11, options={"scores": [0, 150]})
        for name in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            env.step(None if term or trunc else bots[int(name[-1])].act(obs, info))
        records.append(env.unwrapped.game_record())
    assert records[0] == records[1]


def test_choose_action_accepts_a_bitmask_or_a_list():
    game = SpadesGame("standard", 3)
    while game.phase < 4:
        seat = game.to_act
        mask = game.legal_mask()
        view = view_from_game(game, seat)
        action = choose_action(view, mask)
        assert action == choose_action(view, game.legal_actions())
        game.apply(action)


# ---------------------------------------------------------------------- legality in every preset

@pytest.mark.parametrize("preset", sorted(PRESET_KWARGS))
def test_legal_in_every_preset(preset):
    kwargs = PRESET_KWARGS[preset]
    env = spades_v0.raw_env(episode="hand", **kwargs)   # an illegal action raises
    n = len(env.possible_agents)
    heuristic = agents.make("heuristic", seed=0)
    for i in range(12):
        rnd = agents.make("random", seed=i)
        seats = [heuristic if (s + i) % 2 == 0 else rnd for s in range(n)]
        if i % 3 == 2:
            seats = [heuristic] * n
        scores = None
        if kwargs["rules"] in ("standard", "tournament") and i % 2:
            scores = [0, 250] if i % 4 == 1 else [250, 0]   # one side may bid blind nil
        play_hand(env, seats, scores=scores, seed=i)
        game = env.unwrapped.game
        assert game.tricks_played == game.tricks_per_hand


# ---------------------------------------------------------------------- no peeking


@pytest.mark.parametrize("scores", [[0, 0], [0, 250]])
def test_no_peeking_same_observation_same_decision(scores):
    """Redealing the hidden cards never changes the observation nor the decision."""
    checked, changed = check_no_peeking(lambda: agents.make("heuristic", seed=1), [deal_for(i) for i in range(6)],
                                        scores, random.Random(3), lambda step, obs: step % 5 == 0, redeals=2)
    assert checked >= 60 and changed >= checked // 2


def test_redeal_really_changes_hidden_hands():
    game = SpadesGame("standard", 0, deal=deal_for(0), dealer=0)
    for _ in range(9):      # a few bids and cards
        game.apply(choose_action(view_from_game(game, game.to_act), game.legal_mask()))
    deal = redeal_hidden(game, game.to_act, random.Random(1))
    original = [[c for c in range(52) if m >> c & 1] for m in game.deal]
    assert deal[game.to_act] == original[game.to_act]
    assert deal != original


# ---------------------------------------------------------------------- hand-made situations

def test_ducks_under_partners_winner_when_contract_is_safe():
    # Our side bid 3 + 3 and has 6 tricks; partner's queen wins, we hold the king.
    view = make_view("KH 4H 9C 8C 7C 5D 4D", trick=[(1, "7H"), (2, "QH"), (3, "9H")],
                     bids=(3, 4, 3, 4), tricks_taken=(3, 0, 3, 0),
                     earlier="AH 8H 3H 2C 3C 4C 5C 6C TC JC QC KC AC 2D 3D 6D 7D 8D 9D TD JD QD KD AD")
    assert choose_card(view, follow_legal(view)) == card("4H")


def test_does_not_overtake_partners_winning_card_as_last_player():
    view = make_view("KH 4H 9C 8C 7C 5D 4D 3D 2D", trick=[(1, "7H"), (2, "QH"), (3, "9H")],
                     bids=(4, 4, 4, 1), tricks_taken=(1, 1, 1, 0))
    assert choose_card(view, follow_legal(view)) == card("4H")


def test_takes_a_trick_as_cheaply_as_possible():
    view = make_view("AH TH 4H 9C 8C 7C 5D 4D 3D", trick=[(1, "7H"), (2, "2H"), (3, "9H")],
                     bids=(4, 3, 4, 3), tricks_taken=(1, 1, 1, 1))
    assert choose_card(view, follow_legal(view)) == card("TH")


def test_ruffs_with_the_lowest_sufficient_spade():
    view = make_view("KS 9S 3S 9C 8C 7C 5D 4D 3D", trick=[(1, "7H"), (2, "2H"), (3, "AH")],
                     bids=(4, 3, 4, 3), tricks_taken=(1, 1, 1, 1), spades_broken=True,
                     voids=[(2,), (), (), ()])
    assert choose_card(view, follow_legal(view)) == card("3S")


def test_second_hand_low_without_a_sure_winner():
    view = make_view("KC 3C 9H 8H 7H 5D 4D 3D 2D", trick=[(3, "5C")], bids=(4, 3, 4, 3),
                     tricks_taken=(1, 1, 1, 1))
    assert choose_card(view, follow_legal(view)) == card("3C")


def test_covers_partners_nil():
    # Partner (nil, no trick yet) is winning the trick: overtake as cheaply as possible.
    view = make_view("KD TD 2D 9C 8C 7C 5H 4H 3H", trick=[(1, "5D"), (2, "9D"), (3, "7D")],
                     bids=(5, 3, 0, 3), tricks_taken=(2, 2, 0, 0))
    assert choose_card(view, follow_legal(view)) == card("TD")


def test_plays_high_before_a_nil_partner():
    view = make_view("KD TD 2D 9C 8C 7C 5H 4H 3H", trick=[(3, "5D")], leader=3,
                     bids=(5, 3, 0, 3), tricks_taken=(2, 2, 0, 0))
    assert choose_card(view, follow_legal(view)) == card("KD")


def test_leads_high_for_a_nil_partner_and_low_against_a_nil_opponent():
    hand = "AH 7H 2H 9C 8C 3C 5D 4D 3D"
    partner_nil = make_view(hand, bids=(5, 3, 0, 3), tricks_taken=(2, 2, 0, 0))
    assert choose_card(partner_nil, follow_legal(partner_nil)) == card("AH")
    opponent_nil = make_view(hand, bids=(4, 0, 4, 3), tricks_taken=(2, 0, 0, 2))
    led = choose_card(opponent_nil, follow_legal(opponent_nil))
    assert led % 13 <= 1      # a deuce or a three


def test_lets_a_nil_opponent_win_its_trick():
    # The left opponent bid nil and its 9 wins so far: do not overtake it.
    view = make_view("KD 2D 9C 8C 7C 5H 4H 3H 2H", trick=[(3, "4D"), (1, "9D")], leader=3,
                     bids=(4, 0, 4, 3), tricks_taken=(1, 0, 1, 2))
    assert choose_card(view, follow_legal(view)) == card("2D")


def test_own_nil_ducks_with_the_highest_losing_card():
    view = make_view("QD 8D 3D 9C 8C 7C 5H 4H 3H", trick=[(1, "TD"), (2, "2D"), (3, "4D")],
                     bids=(0, 3, 4, 3), tricks_taken=(0, 2, 1, 1))
    assert choose_card(view, follow_legal(view)) == card("8D")


def test_never_leads_an_unbroken_spade_the_mask_forbids():
    view = make_view("AS KS QS JS TS 9S 2H 3H 4D", bids=(6, 3, 2, 2), tricks_taken=(1, 1, 1, 1))
    legal = [c for c in view.hand if c < 39]       # spades not broken: the mask offers no spade
    assert choose_card(view, legal) in legal


def test_bids_nil_with_only_low_cards_and_a_count_with_a_strong_hand():
    weak = make_view("2C 3C 4C 5C 2D 3D 4D 5D 2H 3H 4H 6H 2S", phase=PHASE_BIDDING,
                     bids=(None, None, None, None))
    legal = [bid(b) for b in range(14)]
    assert choose_bid(weak, legal) == bid(0)
    strong = make_view("AS KS QS 7S 4S AH KH 3H AD KD 5D AC 2C", phase=PHASE_BIDDING,
                       bids=(None, 3, None, None))
    action = choose_bid(strong, legal)
    assert bid(6) <= action <= bid(9)
    # A variant that forbids low bids (min_team_bid with a nil partner): the nearest legal bid.
    assert choose_bid(weak, [bid(b) for b in range(4, 14)]) == bid(4)


def test_trick_estimates_are_sensible():
    assert estimate_tricks(cards("2C 3C 4C 5C 2D 3D 4D 5D 2H 3H 4H 6H 2S")) < 1.0
    assert estimate_tricks(cards("AS KS QS JS TS 9S 8S AH KH AD KD AC KC")) > 11.0
    assert nil_success_chance(cards("2C 3C 4C 5C 2D 3D 4D 5D 2H 3H 4H 6H 2S")) > 0.8
    assert nil_success_chance(cards("AS 3C 4C 5C 2D 3D 4D 5D 2H 3H 4H 6H 2S")) == 0.0


def test_blind_nil_only_when_far_behind():
    def decision(scores, partner_bid=None):
        view = make_view([], phase=PHASE_BLIND_DECISION, scores=scores,
                         bids=(None, 3, partner_bid, None))
        return choose_action(view, [BLIND_NIL_ACTION, LOOK_ACTION])
    assert decision([0, 300]) == BLIND_NIL_ACTION
    assert decision([0, 120]) == LOOK_ACTION          # behind, not far behind, early in the game
    assert decision([300, 420]) == BLIND_NIL_ACTION   # the opponents are about to win
    assert decision([0, 300], partner_bid=0) == LOOK_ACTION


def test_blind_nil_passing():
    legal_hand = cards("AS 9S 2S KH 7H 3H 2D 5C 6C 9C TC JC QC")
    giver = make_view(legal_hand, phase=PHASE_PASSING, bids=(4, 3, 0, 3), blind=(False, False, True, False))
    assert choose_pass(giver, legal_hand) == card("2D")            # a low side card to the nil
    taker = make_view(legal_hand, phase=PHASE_PASSING, bids=(0, 3, 4, 3), blind=(True, False, False, False),
                      received=cards("2D 5C"))
    assert choose_pass(taker, legal_hand) == card("AS")            # the most dangerous card back


# ---------------------------------------------------------------------- strength

def test_beats_random_and_makes_its_contracts():
    """A quick version of the acceptance check (duplicate deals through the env; the full one
    uses 1,000 deals): far ahead of random play, and most contracts made against itself."""
    env = spades_v0.raw_env(rules="standard", episode="hand", reward_scale=1.0)
    heuristic = agents.make("heuristic", seed=0)
    per_deal = []
    for i in range(150):
        deal = deal_for(1000 + i)
        result = 0.0
        for side in (0, 1):
            rnd = agents.make("random", seed=i * 2 + side)
            seats = [heuristic if s % 2 == side else rnd for s in range(4)]
            total, _ = play_hand(env, seats, deal=deal, dealer=i % 4, scores=[0, 0])
            result += (total[f"player_{side}"] - total[f"player_{1 - side}"]) / 2
        per_deal.append(result)
    mean = float(np.mean(per_deal))
    half_width = 1.96 * float(np.std(per_deal, ddof=1)) / math.sqrt(len(per_deal))
    assert mean - half_width > 150, (mean, half_width)

    # Against itself (on the engine, the way a search agent calls it): contracts made.
    made = contracts = 0
    for i in range(150):
        game = SpadesGame("standard", 0, deal=deal_for(5000 + i), dealer=i % 4)
        while game.phase < 4:
            game.apply(choose_action(view_from_game(game, game.to_act), game.legal_mask()))
        for side in (0, 1):
            contract = game.contract(side)
            if contract:
                contracts += 1
                made += sum(game.tricks_taken[s] for s in (side, side + 2) if game.bids[s] != 0) >= contract
    assert made / contracts >= 0.8, (made, contracts)


# ---------------------------------------------------------------------- conventions

def test_standard_conventions_decide_as_the_heuristic_did_before_them():
    """Every decision of whole hands and games in every kind of table (with random moves for odd
    positions), against the decisions recorded from commit a469642 (tests/heuristic_golden.py)."""
    import json
    import heuristic_golden as golden
    recorded = json.loads(golden.GOLDEN_FILE.read_text())
    standard = Conventions()
    for preset, overrides in golden.SETUPS:
        key = golden.setup_id(preset, overrides)
        decisions = golden.replay(preset, overrides, lambda v, legal: choose_action(v, legal, None, standard),
                                  recorded[key])
        assert len(decisions) == len(recorded[key]) > 500, key


def test_convention_options_through_make_and_specs():
    from agents.specs import AgentSpecError, make_agent
    assert agents.make("heuristic", bidding="aggressive").conventions == Conventions(bidding="aggressive")
    agent = make_agent("heuristic:bidding=aggressive,nil=never,cover=none,discards=none,leads=trumps")
    assert agent.conventions == Conventions("aggressive", "never", "none", "none", "trumps")
    assert "bidding='aggressive'" in repr(agent) and "leads='trumps'" in repr(agent)
    assert agents.make("heuristic").conventions.is_standard and "bidding" not in repr(agents.make("heuristic"))
    assert Conventions(discards="high_asks", nil="eager").spec() == "nil=eager,discards=high_asks"
    assert Conventions(cover="strong").codes() == (0, 0, 2, 0, 0)
    with pytest.raises(ValueError, match="bidding='bold'.*conservative, aggressive"):
        make_agent("heuristic:bidding=bold")
    with pytest.raises(ValueError, match="discards=3.*high_asks, low_asks"):
        agents.make("heuristic", discards=3)
    with pytest.raises(AgentSpecError, match="unknown option 'bluff'.*bidding, nil, cover, discards, leads"):
        make_agent("heuristic:bluff=1")
    with pytest.raises(ValueError, match="unknown convention option 'bluff'"):
        conventions_from({"bluff": "yes"})
    with pytest.raises(ValueError, match="nil=None"):
        Conventions(nil=None)                        # 'none' is no value of nil


def _bids_over_deals(conventions, deals=300):
    """Every bid of ``deals`` deals, all four seats bidding under ``conventions`` (same deals)."""
    bids = []
    for i in range(deals):
        game = SpadesGame("standard", i)
        while game.phase == PHASE_BIDDING:
            action = choose_action(view_from_game(game, game.to_act), game.legal_mask(), None, conventions)
            bids.append(action - bid(0))
            game.apply(action)
    return np.array(bids)


def test_bidding_conventions_move_the_mean_bid():
    means = {b: _bids_over_deals(Conventions(bidding=b, nil="never")).mean()
             for b in ("conservative", "standard", "aggressive")}
    assert means["conservative"] + 0.5 < means["standard"] < means["aggressive"] - 0.5, means


def test_nil_conventions():
    never, standard, eager = (_bids_over_deals(Conventions(nil=n)) for n in ("never", "standard", "eager"))
    assert not (never == 0).any()
    assert (standard == 0).mean() + 0.02 < (eager == 0).mean(), ((standard == 0).mean(), (eager == 0).mean())
    weak = make_view("2C 3C 4C 5C 2D 3D 4D 5D 2H 3H 4H 6H 2S", phase=PHASE_BIDDING, bids=(None,) * 4)
    legal = [bid(b) for b in range(14)]
    assert choose_bid(weak, legal, Conventions(nil="never")) == bid(1)
    assert choose_bid(weak, [bid(0)], Conventions(nil="never")) == bid(0)       # nothing else is legal
    behind = make_view([], phase=PHASE_BLIND_DECISION, scores=(0, 300), bids=(None, 3, None, None))
    assert choose_action(behind, [BLIND_NIL_ACTION, LOOK_ACTION]) == BLIND_NIL_ACTION
    assert choose_action(behind, [BLIND_NIL_ACTION, LOOK_ACTION], None, Conventions(nil="never")) == LOOK_ACTION


def test_cover_conventions():
    none, strong = Conventions(cover="none"), Conventions(cover="strong")
    # The nil partner is winning the trick: standard overtakes it, cover=none throws low.
    view = make_view("KD TD 2D 9C 8C 7C 5H 4H 3H", trick=[(1, "5D"), (2, "9D"), (3, "7D")],
                     bids=(5, 3, 0, 3), tricks_taken=(2, 2, 0, 0))
    assert choose_card(view, follow_legal(view)) == card("TD")
    assert choose_card(view, follow_legal(view), conventions=none) == card("2D")
    # Leading beside a nil partner that has shown a void in clubs: standard leads its top heart,
    # strong a club (the partner sheds a dangerous card on it), none plays for its own tricks.
    lead = make_view("AH 7H 2H 9C 8C 3C 5D 4D 3D", bids=(5, 3, 0, 3), tricks_taken=(2, 2, 0, 0),
                     voids=[(), (), (0,), ()])
    assert choose_card(lead, lead.hand) == card("AH")
    assert choose_card(lead, lead.hand, conventions=strong) == card("9C")
    assert choose_card(make_view("AH 7H 2H 9C 8C 3C 5D 4D 3D", bids=(5, 3, 0, 3), tricks_taken=(2, 2, 0, 0)),
                       lead.hand, conventions=strong) == card("AH")   # no void shown: as standard


def test_cover_none_plays_differently_in_partner_nil_hands():
    """Over whole hands in which a partner bid nil, cover=none changes play decisions."""
    changed = compared = 0
    for i in range(400):
        game = SpadesGame("standard", i)
        while game.phase < 4:
            view = view_from_game(game, game.to_act)
            action = choose_action(view, game.legal_mask())
            if game.phase == PHASE_PLAY and view.bids[2] == 0 and view.tricks_taken[2] == 0:
                compared += 1
                changed += choose_action(view, game.legal_mask(), None, Conventions(cover="none")) != action
            game.apply(action)
    assert compared > 100 and changed > 0.1 * compared, (changed, compared)


def test_discard_conventions_send_the_signal_they_claim():
    # Spades are led and we hold none: a discard. We hold the master heart (the ace).
    view = make_view("AH 9H 3H KC 5C 4C 3C 6D 3D", trick=[(3, "QS")], leader=3, tricks_taken=(1, 1, 1, 1))
    legal = follow_legal(view)                       # no spade: any card
    assert choose_card(view, legal) == card("3D")    # standard: low, from a short suit
    assert choose_card(view, legal, conventions=Conventions(discards="none")) == card("3C")   # plainly lowest
    high = choose_card(view, legal, conventions=Conventions(discards="high_asks"))
    assert high == card("9H")                        # a high heart asks for hearts
    low = choose_card(view, legal, conventions=Conventions(discards="low_asks"))
    assert low == card("3H")                         # a low heart asks for hearts
    # Without a suit to ask for, the discard says nothing: low under high_asks, high under low_asks.
    quiet = make_view("QH 9H 3H QC 4C 2C 8D 3D", trick=[(3, "QS")], leader=3, tricks_taken=(1, 1, 1, 1))
    legal = follow_legal(quiet)
    assert choose_card(quiet, legal, conventions=Conventions(discards="high_asks")) % 13 < 6
    assert choose_card(quiet, legal, conventions=Conventions(discards="low_asks")) % 13 >= 6


def _with_partner_played(view, partner_cards, others=()):
    played = [list(p) for p in view.played]
    played[2] = sorted(partner_cards)
    for seat, cards_ in others:
        played[seat] = sorted(cards_)
    return dataclasses.replace(view, played=played)


def _after_four_tricks(partner_cards, diamonds_elsewhere=()):
    """We lead the fifth trick. Two heart tricks (the partner discarded on the second: it is void
    in hearts) and two club tricks were played; nobody but the partner has played a diamond,
    unless ``diamonds_elsewhere`` adds some to seats 0, 1 and 3."""
    import dataclasses
    view = make_view("KH 7H 4H QD 6D 8C 5C 3C 2C", bids=(3, 3, 4, 3), tricks_taken=(1, 1, 1, 1),
                     voids=[(), (), (2,), ()])
    played = [cards("2H 6H AC 4C"), cards("3H 8H 6C 7C"), cards(partner_cards), cards("5H TH KC QC")]
    for seat, c in zip((0, 1, 3), diamonds_elsewhere):
        played[seat].append(card(c))
    return dataclasses.replace(view, played=[sorted(p) for p in played])


def test_a_partner_with_the_same_convention_reads_the_discard_when_it_leads():
    high_asks, low_asks = Conventions(discards="high_asks"), Conventions(discards="low_asks")
    view = _after_four_tricks("9H 9D TC JC")         # the partner discarded the nine of diamonds
    assert choose_card(view, view.hand) == card("4H")          # standard: the partner's void (it ruffs)
    assert choose_card(view, view.hand, conventions=high_asks) == card("6D")    # a high discard: asked
    assert choose_card(view, view.hand, conventions=low_asks) == card("4H")     # not low: not asked
    low = _after_four_tricks("9H 3D TC JC")
    assert choose_card(low, low.hand, conventions=low_asks) == card("6D")
    assert choose_card(low, low.hand, conventions=high_asks) == card("4H")
    # Once a diamond trick may have been led (every other seat played one), the partner's
    # diamond may be a follow: nothing is read.
    led = _after_four_tricks("9H 9D TC JC", ("5D", "7D", "JD"))
    assert choose_card(led, led.hand, conventions=high_asks) == card("4H")
    one_short = _after_four_tricks("9H 9D TC JC", ("5D", "7D"))        # seat 3 has played none: unled
    assert choose_card(one_short, one_short.hand, conventions=high_asks) == card("6D")


def test_lead_conventions():
    # leads=trumps: long in spades, it draws trumps before anything else.
    trumps = make_view("AS QS 9S 5S 2S AH 4H 3D 2C", bids=(4, 3, 3, 3), tricks_taken=(1, 1, 1, 1),
                       spades_broken=True, earlier="KS")
    assert choose_card(trumps, trumps.hand) == card("AH")                # standard: a safe side master first
    assert choose_card(trumps, trumps.hand, conventions=Conventions(leads="trumps")) == card("AS")
    short = make_view("9S 5S 2S KH 4H 3D 2C 8C 9D", bids=(4, 3, 3, 3), tricks_taken=(1, 1, 1, 1),
                      spades_broken=True)
    assert choose_card(short, short.hand, conventions=Conventions(leads="trumps")) // 13 != 3   # three, no master
    # leads=partner_suit: low in the suit where the partner showed its highest card (the king of
    # clubs), where standard leads low from its longest suit.
    base = make_view("KH 7H 4H QC 6C 5D 3D 2D", bids=(3, 3, 4, 3), tricks_taken=(0, 1, 1, 1),
                     earlier="2C 3C 4C 5H 6H 8H 9D TD JD")
    view = _with_partner_played(base, cards("KC 4D 2H"))
    assert choose_card(view, view.hand) == card("2D")
    assert choose_card(view, view.hand, conventions=Conventions(leads="partner_suit")) == card("6C")
    ruffed = dataclasses.replace(view, voids=[set(), {0}, set(), set()])    # an opponent ruffs clubs
    assert choose_card(ruffed, ruffed.hand, conventions=Conventions(leads="partner_suit")) == card("2D")


# ---------------------------------------------------------------------- where only bags are left


def test_only_bags_left_means_contract_made_and_no_nil_at_stake():
    """``only_bags_left`` holds only in the play with the seat's side past its contract and no nil
    intact, it is false in the bidding, and it does hold in ordinary hands (so the check bites)."""
    from agents.heuristic import only_bags_left
    held = strict = 0
    for i in range(12):
        game = SpadesGame("standard", 0, deal=deal_for(i), dealer=i % 4)
        while game.phase in (PHASE_BLIND_DECISION, PHASE_BIDDING, PHASE_PASSING, PHASE_PLAY):
            seat = game.to_act
            view = view_from_game(game, seat)
            legal = game.legal_mask()
            if game.phase != PHASE_PLAY:
                assert not only_bags_left(view, legal)
            elif only_bags_left(view, legal):
                held += 1
                side = (seat, (seat + 2) % 4)
                contract = sum(game.bids[s] for s in side if game.bids[s] > 0)
                taken = sum(game.tricks_taken[s] for s in side if game.bids[s] > 0)
                assert taken >= contract
                assert not any(game.bids[s] == 0 and game.tricks_taken[s] == 0 for s in range(4))
            if only_bags_left(view, legal, no_set_possible=True):      # the strict test implies the other
                strict += 1
                assert only_bags_left(view, legal)
                for side in ((0, 2), (1, 3)):
                    assert sum(game.tricks_taken[s] for s in side if game.bids[s] > 0) >= \
                        sum(game.bids[s] for s in side if game.bids[s] > 0)
            game.apply(choose_action(view, legal))
    assert held >= 10 and 0 < strict < held
