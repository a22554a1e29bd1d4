"""Hand scoring and the end of the game (docs/rules.md "Scoring a hand", "End of game").

Pure functions first (every worked example exactly), then whole hands through the engine and the
env with scripted deals, so that bids, tricks, blind flags, scores and bags are wired right.
"""

import pytest

from spades_env import make_rules, spades_v0
from spades_env.game import PHASE_GAME_OVER, PHASE_HAND_OVER, PHASE_PLAY, SpadesGame
from spades_env.scoring import bags_in_score, game_winner, score_hand, score_side

from helpers import (apply_bids, bid, env_play_script, play_script, scripted_deal, suit_deal,
                     winners_for)

STD = make_rules("standard")


def side(rules, bids, tricks, blind=(False, False), score=0, bags=0):
    return score_side(rules, list(bids), list(blind), list(tricks), score, bags)


# ====================================================================== worked examples (pure)

def test_example_bid5_took7():
    res = side(STD, [3, 2], [4, 3])
    assert res.points == 52
    assert res.bags_taken == 2 and res.bags_after == 2
    assert res.made and res.bag_penalties == 0


def test_example_bid6_took4():
    res = side(STD, [4, 2], [3, 1], bags=3)
    assert res.points == -60
    assert res.bags_taken == 0 and res.bags_after == 3  # a set takes no bags, keeps the old ones
    assert not res.made


def test_example_108_with_8_bags():
    res = side(STD, [3, 2], [5, 3], score=108, bags=8)
    assert res.bags_taken == 3
    assert res.bag_penalties == 1
    assert 108 + res.points == 61
    assert res.bags_after == 1


def test_example_nil_kept_partner_set():
    res = side(STD, [0, 5], [0, 4])
    assert res.points == 50  # -50 + 100
    assert res.bags_after == 0


def test_example_nil_broken_partner_made():
    res = side(STD, [0, 5], [1, 5])
    assert res.points == -50  # 50 - 100: the nil trick is a bag, not a point
    assert res.bags_taken == 1 and res.bags_after == 1


def test_example_blind_nil_kept():
    res = side(STD, [0, 4], [0, 5], blind=(True, False))
    assert res.points == 241  # 41 + 200
    assert res.bags_after == 1


def test_blind_nil_broken():
    res = side(STD, [0, 4], [2, 4], blind=(True, False))
    assert res.points == 40 - 200
    assert res.bags_after == 2


def test_example_order_of_members_does_not_matter():
    assert side(STD, [5, 0], [4, 0]).points == 50
    assert side(STD, [4, 0], [5, 0], blind=(False, True)).points == 241


# ====================================================================== contract details

@pytest.mark.parametrize("bids,tricks,points", [
    ([1, 1], [1, 1], 20),        # made exactly
    ([4, 3], [6, 1], 70),        # tricks pooled between partners
    ([4, 3], [3, 3], -70),       # set by one
    ([13, 0], [13, 0], 230),     # 13 bid and made, nil kept
    ([7, 6], [13, 0], 130),      # one seat takes all 13 tricks
])
def test_contract_points(bids, tricks, points):
    assert side(STD, bids, tricks).points == points


def test_ten_overtricks_in_one_hand():
    res = side(STD, [1, 2], [13, 0])  # 10 overtricks: +10 points, then -100 at the limit
    assert res.bags_taken == 10 and res.bag_penalties == 1 and res.bags_after == 0
    assert res.points == 30 + 10 - 100


def test_set_contract_has_no_bags_even_when_partner_overtricks():
    res = side(STD, [6, 2], [0, 7])
    assert res.points == -80 and res.bags_taken == 0


# ====================================================================== bags

def test_bag_rollover_keeps_remainder():
    res = side(STD, [2, 2], [4, 3], bags=9)  # 3 bags -> 12 -> one penalty, 2 carry over
    assert res.points == 43 - 100
    assert res.bag_penalties == 1 and res.bags_after == 2


def test_bags_reaching_exactly_the_limit():
    res = side(STD, [2, 2], [3, 2], bags=9)
    assert res.points == 41 - 100 and res.bags_after == 0


def test_multiple_penalties_in_one_hand():
    res = side(STD, [1, 0], [13, 0], bags=9)  # 12 overtricks + 9 = 21 -> two penalties, 1 left
    assert res.bag_penalties == 2
    assert res.points == 10 + 12 + 100 - 200
    assert res.bags_after == 1


def test_multiple_penalties_with_small_limit():
    rules = make_rules("standard", bag_limit=3)
    res = side(rules, [2, 2], [6, 5], bags=2)  # 7 bags + 2 = 9 -> three penalties
    assert res.bag_penalties == 3 and res.bags_after == 0
    assert res.points == 47 - 300


def test_bag_limit_and_penalty_variants():
    rules = make_rules("standard", bag_limit=5, bag_penalty=50)
    res = side(rules, [2, 2], [4, 3], bags=3)  # 3 + 3 = 6 -> one penalty of 50, 1 left
    assert res.points == 43 - 50
    assert res.bags_after == 1
    res = side(rules, [2, 2], [4, 3], bags=1)  # 4: below the limit
    assert res.points == 43 and res.bags_after == 4


def test_nil_bags_count_toward_the_penalty():
    res = side(STD, [0, 3], [2, 4], bags=8)  # 2 nil tricks + 1 overtrick = 3 bags -> 11
    assert res.bags_taken == 3 and res.bag_penalties == 1 and res.bags_after == 1
    assert res.points == 31 - 100 - 100


def test_nil_tricks_are_bags_even_when_partner_is_set():
    # docs/rules.md: a nil bidder's tricks do not count toward the partner's contract; they count
    # as bags for the partnership. (A set contract takes no overtrick bags of its own.)
    res = side(STD, [0, 5], [2, 3])
    assert res.points == -50 - 100
    assert res.bags_taken == 2 and res.bags_after == 2


def test_bags_false():
    rules = make_rules("standard", bags=False)
    res = side(rules, [3, 2], [4, 3])
    assert res.points == 50 and res.bags_after == 0 and res.bag_penalties == 0
    res = side(rules, [1, 0], [13, 0])  # 12 overtricks: no points, no bags, no penalty
    assert res.points == 10 + 100 and res.bags_after == 0 and res.bag_penalties == 0
    assert side(rules, [1, 1], [13, 0]).points == 20
    # nil tricks carry no penalty either
    res = side(rules, [0, 5], [1, 5])
    assert res.points == -50 and res.bags_after == 0


# ====================================================================== nil variants

def test_nil_tricks_count_for_partner():
    rules = make_rules("standard", nil_tricks_count_for_partner=True)
    res = side(rules, [0, 5], [2, 3])  # the nil's 2 tricks make the partner's 5
    assert res.points == 50 - 100
    assert res.bags_after == 0
    res = side(rules, [0, 5], [2, 4])  # 6 counted: one overtrick
    assert res.points == 51 - 100 and res.bags_after == 1
    # the default reading: same cards, partner set, nil tricks are bags
    assert side(STD, [0, 5], [2, 3]).points == -150


def test_both_partners_nil():
    assert side(STD, [0, 0], [0, 0]).points == 200
    res = side(STD, [0, 0], [0, 3])
    assert res.points == 100 - 100
    assert res.bags_after == 3
    assert side(STD, [0, 0], [2, 3]).points == -200


def test_both_partners_blind_nil():
    assert side(STD, [0, 0], [0, 0], blind=(True, True)).points == 400
    assert side(STD, [0, 0], [0, 1], blind=(True, True)).points == 0


def test_nil_and_blind_nil_bonus_variants():
    rules = make_rules("standard", nil_bonus=50, blind_nil_bonus=150)
    assert side(rules, [0, 5], [0, 5]).points == 100
    assert side(rules, [0, 5], [0, 5], blind=(True, False)).points == 200
    assert side(rules, [0, 5], [1, 5], blind=(True, False)).points == 50 - 150


# ====================================================================== cutthroat

def test_cutthroat_scores_each_player_alone():
    rules = make_rules("cutthroat")
    results = score_hand(rules, bids=[3, 0, 4, 5], blind=[False] * 4, tricks=[4, 0, 3, 6],
                         scores=[0, 0, 0, 0], bags=[0, 0, 0, 0])
    assert [r.points for r in results] == [31, 100, -40, 51]
    assert [r.bags_after for r in results] == [1, 0, 0, 1]


def test_cutthroat_nil_broken_and_bags_per_player():
    rules = make_rules("cutthroat")
    results = score_hand(rules, bids=[0, 2, 2, 2], blind=[False] * 4, tricks=[2, 2, 3, 6],
                         scores=[0, 0, 0, 0], bags=[0, 0, 9, 5])
    assert [r.points for r in results] == [-100, 20, 21 - 100, 24]
    assert [r.bags_after for r in results] == [2, 0, 0, 9]


def test_partnership_score_hand_groups_partners():
    results = score_hand(STD, bids=[3, 4, 2, 2], blind=[False] * 4, tricks=[4, 3, 3, 3],
                         scores=[0, 0], bags=[0, 0])
    assert [r.points for r in results] == [52, 60]


# ====================================================================== OpenSpiel bags from digit

OS = make_rules("openspiel")


@pytest.mark.parametrize("score,digit", [(0, 0), (108, 8), (61, 1), (-15, -5), (-7, -7), (-10, 0),
                                         (-350, 0), (499, 9)])
def test_bags_in_score_uses_cpp_remainder(score, digit):
    assert bags_in_score(score) == digit


def test_openspiel_bags_from_last_digit():
    res = side(OS, [3, 2], [5, 3], score=108, bags=8)
    assert res.points == 53 - 100 and 108 + res.points == 61
    assert res.bags_after == 1


def test_openspiel_negative_score_digit_delays_penalty():
    # score -15: OpenSpiel reads -5 bags; 3 overtricks -> -2 -> no penalty
    res = side(OS, [2, 2], [4, 3], score=-15, bags=-5)
    assert res.bag_penalties == 0 and res.points == 43
    # score -1 and 12 overtricks: -1 + 12 = 11 -> one penalty
    res = side(OS, [1, 0], [13, 0], score=-1, bags=-1)
    assert res.bag_penalties == 1 and res.points == 10 + 12 + 100 - 100
    # score -5 and 12 overtricks: 7 -> none (a plain counter would reach the limit)
    res = side(OS, [1, 0], [13, 0], score=-5, bags=0)
    assert res.bag_penalties == 0


def test_openspiel_nil_tricks_make_partner_contract():
    res = side(OS, [0, 5], [2, 3])
    assert res.points == 50 - 100


# ====================================================================== end of game (pure)

@pytest.mark.parametrize("scores,winner", [
    ([500, 400], 0),        # reached the target with more points
    ([400, 500], 1),
    ([499, 480], None),     # nobody at the target
    ([520, 510], 0),        # both over: the higher wins
    ([510, 620], 1),
    ([510, 510], None),     # tied over the target: play on
    ([500, 500], None),
    ([600, -300], 0),
    ([-200, 100], 1),       # at the mercy score: loses at once
    ([100, -200], 0),
    ([-201, -100], 1),
    ([-199, 0], None),      # above the mercy score
    ([-250, -210], 1),      # both at/below mercy: the higher wins
    ([-200, -300], 0),
    ([-250, -250], None),   # tied: play on
    ([-200, -200], None),
])
def test_game_winner_standard(scores, winner):
    assert game_winner(STD, scores) == winner


def test_mercy_null_never_ends_the_game_low():
    rules = make_rules("standard", mercy_score=None, max_hands=100)     # a cap is what ends such a game
    assert game_winner(rules, [-1000, 0]) is None
    assert game_winner(rules, [-1000, 500]) == 1


def test_target_and_mercy_variants():
    rules = make_rules("standard", target_score=300, mercy_score=-100)
    assert game_winner(rules, [300, 0]) == 0
    assert game_winner(rules, [299, 0]) is None
    assert game_winner(rules, [0, -100]) == 0
    assert game_winner(rules, [0, -99]) is None


@pytest.mark.parametrize("scores,winner", [
    ([500, 100, 600, 0], 2),     # highest wins once anyone reached the target
    ([510, 100, 20, 0], 0),
    ([600, 600, 0, 0], None),    # tied at the top: play on
    ([-200, 10, 50, 40], 2),     # someone fell to the mercy score: the highest wins
    ([-200, 50, 50, 0], None),   # tied at the top: play on
    ([499, 498, 0, -199], None),
])
def test_game_winner_cutthroat(scores, winner):
    assert game_winner(make_rules("cutthroat"), scores) == winner


# ====================================================================== whole hands through the engine

def scripted_hand(rules="standard", tricks=(4, 3, 3, 3), bids=(3, 4, 2, 2), scores=None, bags=None,
                  dealer=3, **over):
    deal, script = scripted_deal(winners_for(list(tricks)))
    game = SpadesGame(make_rules(rules, **over), 0, dealer=dealer, scores=scores, bags=bags, deal=deal)
    apply_bids(game, bids)
    assert game.phase == PHASE_PLAY
    play_script(game, script)
    assert game.tricks_taken == list(tricks)
    return game


def test_engine_example_bid5_took7_and_bid6_took4():
    # side 0 (seats 0+2) bids 3+2, takes 4+3; side 1 bids 4+2, takes 3+1... (sums to 13 tricks)
    game = scripted_hand(tricks=(4, 5, 3, 1), bids=(3, 4, 2, 2))
    assert game.scores == [52, 60]  # side 1: bid 6, took 6
    assert game.bags == [2, 0]
    game = scripted_hand(tricks=(5, 2, 4, 2), bids=(3, 4, 2, 2))
    assert game.scores == [50 + 4, -60]
    assert game.bags == [4, 0]


def test_engine_example_108_with_8_bags():
    game = scripted_hand(tricks=(4, 3, 4, 2), bids=(3, 3, 2, 3), scores=[108, 0], bags=[8, 0])
    assert game.scores == [61, -60]
    assert game.bags == [1, 0]
    assert game.last_results[0].bag_penalties == 1


def test_engine_example_nil_kept_partner_set():
    game = scripted_hand(tricks=(0, 5, 4, 4), bids=(0, 4, 5, 4))
    assert game.scores[0] == 50
    assert game.scores[1] == 81 and game.bags == [0, 1]


def test_engine_example_nil_broken():
    game = scripted_hand(tricks=(1, 4, 5, 3), bids=(0, 4, 5, 3))
    assert game.scores == [-50, 70]
    assert game.bags == [1, 0]


def test_engine_example_blind_nil_kept():
    # side 0 trails by 100: seat 0 (first to bid, dealer 3) bids blind nil; the partner bids 4.
    deal, script = scripted_deal(winners_for([0, 4, 5, 4]))
    game = SpadesGame(STD, 0, dealer=3, scores=[0, 100], deal=deal)
    assert game.legal_actions() == [66, 67]
    game.apply(66)
    game.apply(bid(4))   # seat 1
    game.apply(67)       # seat 2 looks at its cards
    game.apply(bid(4))   # seat 2
    game.apply(bid(4))   # seat 3
    # passing: seat 2 gives two cards, seat 0 gives the same two back (hands unchanged)
    given = []
    for _ in range(2):
        assert game.to_act == 2
        card = script[0][2] if not given else script[1][2]
        given.append(card)
        game.apply(card)
    for card in given:
        assert game.to_act == 0
        game.apply(card)
    assert game.phase == PHASE_PLAY
    play_script(game, script)
    assert game.tricks_taken == [0, 4, 5, 4]
    assert game.blind[0] is True
    assert game.scores == [241, 100 + 80]
    assert game.bags == [1, 0]


def test_engine_nil_tricks_count_for_partner():
    game = scripted_hand(tricks=(2, 4, 3, 4), bids=(0, 4, 5, 4), nil_tricks_count_for_partner=True)
    assert game.scores[0] == 50 - 100 and game.bags[0] == 0
    game = scripted_hand(tricks=(2, 4, 3, 4), bids=(0, 4, 5, 4))
    assert game.scores[0] == -50 - 100 and game.bags[0] == 2


def test_engine_one_seat_takes_all_13_tricks():
    # OpenSpiel crashes here; we must not. Seat 0 holds every spade and wins every trick.
    for rules in ("standard", "openspiel"):
        game = SpadesGame(make_rules(rules), 0, dealer=3, deal=suit_deal("S", "H", "D", "C"))
        apply_bids(game, (13, 1, 0, 1))
        while game.phase == PHASE_PLAY:
            game.apply(game.legal_actions()[0])
        assert game.tricks_taken == [13, 0, 0, 0]
        assert game.scores[0] == 130 + 100
        assert game.scores[1] == -20


def test_engine_cutthroat_per_player():
    deal, script = scripted_deal(winners_for([4, 0, 3, 6]))
    game = SpadesGame(make_rules("cutthroat"), 0, dealer=3, deal=deal)
    apply_bids(game, (3, 0, 4, 5))
    assert game.phase == PHASE_PLAY  # no blind nil, no passing in cutthroat
    play_script(game, script)
    assert game.scores == [31, 100, -40, 51]
    assert game.bags == [1, 0, 0, 1]


def test_engine_bags_carry_over_hands():
    deal, script = scripted_deal(winners_for([5, 2, 4, 2]))
    game = SpadesGame(STD, 0, dealer=3, bags=[7, 0], deal=deal)
    apply_bids(game, (3, 4, 2, 2))
    play_script(game, script)
    assert game.bags == [1, 0]  # 7 + 4 = 11 -> penalty, 1 carries
    assert game.scores == [54 - 100, -60]
    assert game.phase == PHASE_HAND_OVER
    game.next_hand()
    assert game.bags == [1, 0] and game.scores == [-46, -60]


def test_engine_openspiel_bags_from_score_digit():
    deal, script = scripted_deal(winners_for([4, 3, 4, 2]))
    game = SpadesGame(OS, 0, scores=[108, -15], deal=deal)
    assert game.bags == [8, -5]
    apply_bids(game, (3, 2, 2, 2))
    play_script(game, script)
    assert game.scores == [61, -15 + 41]
    assert game.bags == [1, 6]


# ====================================================================== end of game through the engine

def test_engine_win_uses_running_score_not_hand_score():
    game = scripted_hand(tricks=(4, 3, 3, 3), bids=(3, 3, 3, 3), scores=[450, 0])
    assert game.scores == [450 + 61, 60]
    assert game.phase == PHASE_GAME_OVER and game.winner == 0


def test_engine_both_over_target_higher_wins():
    game = scripted_hand(tricks=(4, 3, 3, 3), bids=(3, 3, 3, 3), scores=[440, 460])
    assert game.scores == [501, 520]
    assert game.phase == PHASE_GAME_OVER and game.winner == 1


def test_engine_tie_over_target_plays_on():
    game = scripted_hand(tricks=(4, 3, 3, 3), bids=(3, 3, 3, 3), scores=[440, 441])
    assert game.scores == [501, 501]
    assert game.phase == PHASE_HAND_OVER and game.winner is None
    game.next_hand()
    assert game.phase != PHASE_GAME_OVER


def test_engine_mercy_loses_at_once():
    game = scripted_hand(tricks=(1, 6, 0, 6), bids=(3, 3, 3, 3), scores=[-150, 0])
    assert game.scores == [-210, 66]
    assert game.phase == PHASE_GAME_OVER and game.winner == 1


def test_engine_mercy_exactly_at_the_mercy_score():
    game = scripted_hand(tricks=(1, 6, 0, 6), bids=(3, 2, 2, 3), scores=[-150, 0])
    assert game.scores[0] == -200
    assert game.phase == PHASE_GAME_OVER and game.winner == 1


def test_engine_mercy_null_plays_on():
    game = scripted_hand(tricks=(1, 6, 0, 6), bids=(3, 3, 3, 3), scores=[-150, 0], mercy_score=None,
                         max_hands=50)
    assert game.scores == [-210, 66]
    assert game.phase == PHASE_HAND_OVER


def test_engine_both_at_mercy_higher_wins_and_tie_plays_on():
    game = scripted_hand(tricks=(1, 6, 0, 6), bids=(3, 7, 3, 7), scores=[-150, -100])
    assert game.scores == [-210, -240]
    assert game.phase == PHASE_GAME_OVER and game.winner == 0
    game = scripted_hand(tricks=(1, 6, 0, 6), bids=(3, 7, 3, 7), scores=[-180, -100])
    assert game.scores == [-240, -240]
    assert game.phase == PHASE_HAND_OVER and game.winner is None


def test_engine_cutthroat_end():
    deal, script = scripted_deal(winners_for([4, 0, 3, 6]))
    game = SpadesGame(make_rules("cutthroat"), 0, dealer=3, deal=deal, scores=[480, 0, 0, 470])
    apply_bids(game, (3, 1, 4, 5))
    play_script(game, script)
    assert game.scores == [511, -10, -40, 521]
    assert game.phase == PHASE_GAME_OVER and game.winner == 3


def test_engine_max_hands_truncates_and_ranks_by_score():
    game = scripted_hand(tricks=(4, 3, 3, 3), bids=(3, 3, 3, 3), max_hands=1)
    assert game.phase == PHASE_GAME_OVER
    assert game.truncated is True
    assert game.winner == 0  # 61 vs 60


def test_engine_max_hands_tie_has_no_winner():
    game = scripted_hand(tricks=(3, 3, 4, 3), bids=(3, 3, 3, 3), max_hands=1, scores=[0, 1])
    assert game.scores == [61, 61]
    assert game.truncated is True and game.winner is None and game.phase == PHASE_GAME_OVER


def test_engine_max_hands_not_reached_plays_on():
    game = scripted_hand(tricks=(4, 3, 3, 3), bids=(3, 3, 3, 3), max_hands=2)
    assert game.phase == PHASE_HAND_OVER and not game.truncated


def test_engine_real_win_before_max_hands_is_not_truncation():
    game = scripted_hand(tricks=(4, 3, 3, 3), bids=(3, 3, 3, 3), max_hands=1, scores=[450, 0])
    assert game.winner == 0 and game.truncated is False


# ====================================================================== through the env

def env_hand(tricks, bids, **kw):
    options = kw.pop("options", {})
    env = spades_v0.raw_env(**kw)
    deal, script = scripted_deal(winners_for(list(tricks)))
    env.reset(seed=0, options={"deal": deal, "dealer": 3, **options})
    while env.phase in ("blind_nil_decision", "bidding"):
        seat = env.agent_name_mapping[env.agent_selection]
        env.step(67 if env.phase == "blind_nil_decision" else bid(bids[seat]))
    env_play_script(env, script)
    return env


def test_env_rewards_are_scaled_score_changes():
    env = env_hand((4, 3, 3, 3), (3, 3, 2, 3), episode="hand")
    assert env.scores == [52, 60]
    assert all(env.terminations.values())
    rewards = env._cumulative_rewards
    assert rewards["player_0"] == pytest.approx(0.52) and rewards["player_2"] == pytest.approx(0.52)
    assert rewards["player_1"] == pytest.approx(0.60) and rewards["player_3"] == pytest.approx(0.60)


def test_env_max_hands_is_truncation():
    env = env_hand((4, 3, 3, 3), (3, 3, 3, 3), max_hands=1)
    assert all(env.truncations.values())
    assert not any(env.terminations.values())
    assert env.infos["player_0"]["winner"] == 0


def test_env_game_win_is_termination():
    env = env_hand((4, 3, 3, 3), (3, 3, 3, 3), options={"scores": [450, 0]})
    assert all(env.terminations.values())
    assert env.infos["player_1"]["winner"] == 0
    assert env.infos["player_1"]["scores"] == [511, 60]


def test_env_game_goes_on_to_next_hand():
    env = env_hand((4, 3, 3, 3), (3, 3, 3, 3))
    assert not any(env.terminations.values()) and not any(env.truncations.values())
    assert env.scores == [61, 60]
    assert env.game.hand_number == 2 and env.game.dealer == 0
