"""The determinized search player (agents/search.py): registry, legality in the presets,
determinism, no peeking, world sampling (hand sizes, voids, known cards, uniformity), the
engine states it builds, its play-out views, and a tactical position."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest

import agents
from agents.heuristic import choose_action
from agents.search import (DealSampler, Knowledge, SearchAgent, hand_value, play_out, refresh_view, rollout_views,
                           rules_from_view, touching_groups)
from agents.search_worlds import pick_candidate
from spades_env import decode_observation, make_rules, spades_v0, view_from_game
from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_HAND_OVER, PHASE_PLAY, SpadesGame

from helpers import check_no_peeking, card, cards

SMALL = dict(worlds=4, bid_worlds=4)

PRESETS = {
    "standard": {"rules": "standard"},
    "basic": {"rules": "basic"},
    "tournament": {"rules": "tournament"},
    "openspiel": {"rules": "openspiel"},
    "cutthroat": {"rules": "cutthroat"},
    "three_players": {"rules": "cutthroat", "players": 3},
}


def deal_for(i: int, players: int = 4) -> list[list[int]]:
    rng = random.Random(7919 * i + 3)
    deck = [c for c in range(52) if not (players == 3 and c == 0)]
    rng.shuffle(deck)
    k = len(deck) // players
    return [sorted(deck[j * k:(j + 1) * k]) for j in range(players)]


def play_hand(env, seat_agents, *, deal=None, dealer=None, scores=None, seed=0):
    options = {}
    if deal is not None:
        options["deal"] = deal
    if dealer is not None:
        options["dealer"] = dealer
    if scores is not None:
        options["scores"] = scores
    env.reset(seed=seed, options=options)
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(seat_agents[env.possible_agents.index(name)].act(obs, info))
    return env.unwrapped.game


def random_states(count: int, rules="standard", seed=0, phases=(PHASE_PLAY,)):
    """Mid-hand engine states (heuristic play, some with blind nil and its passing), stopped at a
    random decision of one of ``phases``: yields (game, seat to act)."""
    rng = random.Random(seed)
    made = 0
    i = 0
    while made < count:
        i += 1
        scores = [0, 250] if i % 3 == 0 else ([250, 0] if i % 3 == 1 else [0, 0])
        r = make_rules(rules)
        game = SpadesGame(r, rng.randrange(1 << 30), scores=scores if r.blind_nil else None)
        stops = [k for k in range(60)]
        stop = rng.choice(stops)
        k = 0
        while game.phase < PHASE_HAND_OVER:
            if game.phase in phases and k >= stop and len(game.legal_actions()) > 1:
                break
            game.apply(choose_action(view_from_game(game, game.to_act), game.legal_mask()))
            k += 1
        if game.phase in phases:
            made += 1
            yield game, game.to_act


def relative_hands(game: SpadesGame, seat: int) -> list[int]:
    return [game.hands[(seat + k) % game.n] for k in range(game.n)]


# ---------------------------------------------------------------------- registry, options

def test_registered():
    assert "search" in agents.available() and "search_v1" in agents.available()
    bot = agents.make("search_v1", seed=0, worlds=7, max_time=0.5, rules="tournament")
    assert isinstance(bot, SearchAgent) and isinstance(bot, agents.Agent)
    assert bot.name == "search_v1" and bot.worlds == 7 and bot.max_time == 0.5
    with pytest.raises(TypeError):
        agents.make("search_v1", wrolds=3)


# ---------------------------------------------------------------------- legality

@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_legal_in_presets(preset):
    kwargs = PRESETS[preset]
    env = spades_v0.raw_env(episode="hand", **kwargs)    # an illegal action raises
    rules = kwargs["rules"]
    n = kwargs.get("players", 4)
    for i in range(3):
        # The rules are read from the observation (cutthroat, three players, openspiel) or given.
        search = agents.make("search_v1", seed=i, rules=None if i == 2 or n == 3 else rules, **SMALL)
        other = agents.make("heuristic" if i % 2 else "random", seed=i)
        seats = [search if (s + i) % 2 == 0 else other for s in range(n)]
        scores = None
        if rules in ("standard", "tournament"):
            scores = [[0, 250], [250, 0], [0, 0]][i]     # blind nil offered to one side
        dealer = None if rules == "openspiel" else i % 4      # OpenSpiel fixes the dealer
        game = play_hand(env, seats, deal=deal_for(i, n), dealer=dealer, scores=scores, seed=i)
        assert game.tricks_played == game.tricks_per_hand
        assert "fallback" not in search.last_info or "rules" not in search.last_info["fallback"]


def test_legal_with_blind_nil_and_passing():
    """Both sides' decisions around blind nil (far behind: the heuristic declares it) and the
    play after cards were passed, with every seat searching."""
    env = spades_v0.raw_env(rules="standard", episode="hand")
    bots = [agents.make("search_v1", seed=s, **SMALL) for s in range(4)]
    game = play_hand(env, bots, deal=deal_for(11), dealer=0, scores=[0, 300], seed=1)
    assert game.tricks_played == 13
    assert any(game.blind)


def test_rules_read_from_the_observation():
    for preset, expected in (("standard", "standard"), ("openspiel", "openspiel"), ("cutthroat", "cutthroat")):
        env = spades_v0.raw_env(rules=preset, episode="hand")
        env.reset(seed=0)
        view = decode_observation(env.observe(env.agent_selection)["observation"])
        assert rules_from_view(view).name == expected
    assert rules_from_view(view, "tournament").name == "tournament"


def test_unfit_rules_fall_back_to_the_heuristic():
    env = spades_v0.raw_env(rules="cutthroat", episode="hand")
    bot = agents.make("search_v1", seed=0, rules="standard", **SMALL)     # partnerships: does not fit
    heur = agents.make("heuristic", seed=0)
    env.reset(seed=2)
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = bot.act(obs, info)
        if len(np.flatnonzero(obs["action_mask"])) > 1:
            assert action == heur.act(obs, info)
            assert "fallback" in bot.last_info
        env.step(action)


# ---------------------------------------------------------------------- determinism

def _record(seed: int, worlds: int = 4):
    env = spades_v0.raw_env(rules="standard", episode="hand")
    bots = [agents.make("search_v1", seed=seed, worlds=worlds, bid_worlds=worlds) if s % 2 == 0
            else agents.make("heuristic", seed=0) for s in range(4)]
    play_hand(env, bots, deal=deal_for(5), dealer=1, seed=5)
    return env.unwrapped.game_record()


def test_deterministic_given_seed():
    first = _record(3)
    assert first == _record(3)
    bot = agents.make("search_v1", seed=3, **SMALL)
    env = spades_v0.raw_env(rules="standard", episode="hand")
    env.reset(seed=0, options={"deal": deal_for(1), "dealer": 0})
    obs, *_ = env.last()
    a = bot.act(obs)
    bot.reset(seed=3)
    assert bot.act(obs) == a


# ---------------------------------------------------------------------- no peeking


@pytest.mark.parametrize("scores", [[0, 0], [0, 300]])
def test_no_peeking_same_observation_same_decision(scores):
    """The same observation with the hidden cards dealt differently gives the same decision."""
    checked, changed = check_no_peeking(lambda: agents.make("search_v1", seed=9, worlds=6, bid_worlds=6),
                                        [deal_for(i) for i in range(3)], scores, random.Random(4),
                                        lambda step, obs: step % 4 == 1 and obs["action_mask"].sum() > 1)
    assert checked >= 25 and changed >= checked // 2


# ---------------------------------------------------------------------- world sampling

def _check_world(game: SpadesGame, seat: int, hands: list[int]) -> None:
    """A sampled world (hands in the seat's frame) against the true state's constraints."""
    n = game.n
    true = relative_hands(game, seat)
    assert hands[0] == true[0]
    union = 0
    for k in range(1, n):
        s = (seat + k) % n
        assert hands[k].bit_count() == true[k].bit_count(), "hand size"
        for suit in range(4):
            if game.voids[s] >> suit & 1:
                assert hands[k] >> (13 * suit) & 0x1FFF == 0, f"seat {s} is void in suit {suit}"
        assert union & hands[k] == 0, "a card dealt twice"
        union |= hands[k]
    hidden = 0
    for k in range(1, n):
        hidden |= true[k]
    assert union == hidden, "not exactly the unseen cards"
    if game.rules.partnerships:
        partner = (seat + 2) % 4
        still_there = game.passed[seat] & game.hands[partner]
        assert still_there & ~hands[2] == 0, "a card we passed to the partner is elsewhere"


@pytest.mark.parametrize("rules", ["standard", "cutthroat"])
def test_sampled_worlds_respect_sizes_voids_and_known_cards(rules):
    rng = random.Random(1)
    voids_seen = passes_seen = 0
    for game, seat in random_states(120, rules=rules, seed=7 if rules == "standard" else 8):
        view = view_from_game(game, seat)
        knowledge = Knowledge(view)
        sampler = knowledge.sampler()
        voids_seen += any(game.voids[s] for s in range(game.n) if s != seat)
        passes_seen += bool(game.passed[seat] & game.hands[(seat + 2) % 4]) if game.rules.partnerships else 0
        for _ in range(5):
            _check_world(game, seat, knowledge.hands_from(sampler.sample(rng)))
        # Bid inference reweights the same draws: still consistent.
        agent = SearchAgent(seed=0, worlds=5)
        r = make_rules(rules)
        for hands, weight in agent._draw_worlds(view, r, knowledge, sampler, 5):
            assert weight >= 1
            _check_world(game, seat, hands)
    assert voids_seen > 30
    if rules == "standard":
        assert passes_seen >= 3


def test_blind_decision_samples_every_hand():
    game = SpadesGame("standard", 3, scores=[0, 300], dealer=3)
    assert game.phase == PHASE_BLIND_DECISION
    view = view_from_game(game, game.to_act)
    knowledge = Knowledge(view)
    assert knowledge.hidden_seats == [0, 1, 2, 3]
    hands = knowledge.hands_from(knowledge.sampler().sample(random.Random(0)))
    assert [h.bit_count() for h in hands] == [13] * 4 and sum(hands) == (1 << 52) - 1


def test_sampler_is_uniform_over_consistent_deals():
    """Seven free cards, three seats, voids that bind: every consistent deal equally often."""
    free = cards("2C 3C 4C 2D 3D 2H 3S")
    caps = (2, 3, 2)
    voids = (0b0001, 0b0100, 0b1010)          # clubs / hearts / diamonds+spades
    mask = sum(1 << c for c in free)
    sampler = DealSampler(mask, caps, voids)
    consistent = []
    for assignment in itertools.product(range(3), repeat=len(free)):
        if tuple(assignment.count(i) for i in range(3)) != caps:
            continue
        if any(voids[i] >> (c // 13) & 1 for c, i in zip(free, assignment)):
            continue
        hands = [0, 0, 0]
        for c, i in zip(free, assignment):
            hands[i] |= 1 << c
        consistent.append(tuple(hands))
    assert sampler.total == len(consistent) > 5
    rng = random.Random(0)
    draws = 300 * len(consistent)
    counts = Counter(tuple(sampler.sample(rng)) for _ in range(draws))
    assert set(counts) == set(consistent)
    expected = draws / len(consistent)
    chi2 = sum((counts[h] - expected) ** 2 / expected for h in consistent)
    dof = len(consistent) - 1
    assert chi2 < dof + 5 * (2 * dof) ** 0.5, (chi2, dof)


def test_sampler_refuses_impossible_knowledge():
    with pytest.raises(ValueError):
        DealSampler(sum(1 << c for c in cards("2C 3C")), (1, 1), (0b0001, 0b0001))
    with pytest.raises(ValueError):
        DealSampler(sum(1 << c for c in cards("2C 3C")), (1, 2), (0, 0))


# ---------------------------------------------------------------------- engine states and play-outs

@pytest.mark.parametrize("rules", ["standard", "tournament", "openspiel", "cutthroat"])
def test_built_game_matches_the_real_one(rules):
    """With the true hands, the built game shows every seat the same view and plays out the
    same way as the real game (in the observer's frame)."""
    r = make_rules(rules)
    for game, seat in random_states(25, rules=rules, seed=3, phases=(PHASE_BIDDING, PHASE_PLAY)):
        n = game.n
        view = view_from_game(game, seat)
        built = SpadesGame.from_view(view, r, relative_hands(game, seat))
        assert built.legal_mask() == game.legal_mask()
        # Cards the opponents passed each other (blind nil) are theirs alone: a world cannot know them.
        secret = {(f - seat) % n for f, t, _ in game.passes if (f - seat) % n in (1, 3)}
        secret |= {(t - seat) % n for f, t, _ in game.passes if (t - seat) % n in (1, 3)}
        for k in range(n):
            mine, real = view_from_game(built, k), view_from_game(game, (seat + k) % n)
            if k in secret:
                mine, real = mine.__dict__ | {"passed": [], "received": []}, real.__dict__ | {"passed": [], "received": []}
            assert mine == real, (k, mine, real)
        if secret:
            continue
        real_copy = game.clone()
        play_out(real_copy)
        play_out(built)
        assert [built.tricks_taken[k] for k in range(n)] == [real_copy.tricks_taken[(seat + k) % n] for k in range(n)]
        mine_side = r.side_of(seat)
        assert hand_value(built, 0) == pytest.approx(hand_value(real_copy, seat))
        assert built.last_results[0] == real_copy.last_results[mine_side]


def test_game_copy_is_independent():
    game = SpadesGame("standard", 5)
    while game.phase != PHASE_PLAY or game.tricks_played < 3 or not game.trick_cards:
        game.apply(choose_action(view_from_game(game, game.to_act), game.legal_mask()))
    before = game.clone()
    copy = game.copy()
    play_out(copy)
    assert copy.phase >= PHASE_HAND_OVER
    for name in ("hands", "bids", "tricks_taken", "trick_cards", "voids", "scores", "bags", "tricks", "phase", "to_act"):
        assert getattr(game, name) == getattr(before, name), name


def test_rollout_views_equal_engine_views():
    """The incrementally kept views of a play-out equal view_from_game at every card."""
    fields = [f for f in view_from_game(SpadesGame("standard", 0), 0).__dataclass_fields__]
    for i in range(6):
        game = SpadesGame("cutthroat" if i == 5 else "standard", i, scores=[0, 300] if i == 4 else None)
        while game.phase < PHASE_PLAY:
            game.apply(choose_action(view_from_game(game, game.to_act), game.legal_mask()))
        played = [[] for _ in range(game.n)]
        voids = [set() for _ in range(game.n)]
        views = rollout_views(game, played, voids)
        while game.phase == PHASE_PLAY:
            seat = game.to_act
            v = views[seat]
            refresh_view(v, game, seat)
            ref = view_from_game(game, seat)
            for f in fields:
                got, want = getattr(v, f), getattr(ref, f)
                if f == "played":
                    got = [sorted(p) for p in got]
                assert got == want, f
            action = choose_action(v, game.legal_mask())
            assert action == choose_action(ref, game.legal_mask())
            if game.trick_cards and action // 13 != game.led_suit:
                voids[seat].add(game.led_suit)
            game.apply(action)
            played[seat].append(action)


def test_touching_groups():
    hand = sum(1 << c for c in cards("KH QH 9H 2H AS 3C"))
    gone = sum(1 << c for c in cards("JH TH 4H"))
    groups = touching_groups(cards("KH QH 9H 2H"), hand, gone)
    assert groups == [[card("2H")], [card("9H"), card("QH"), card("KH")]]
    assert touching_groups(cards("3C AS"), hand, 0) == [[card("3C")], [card("AS")]]
    # A card of the trick in progress still competes: in the end game below every heart between
    # 2H and AH is gone, but the KH leads the trick, so the two are not equivalent.
    bot = SearchAgent(seed=0)
    env = _endgame_env()
    obs, *_ = env.last()
    view = decode_observation(obs["observation"])
    assert bot._play_candidates(view, cards("2H AH"), card("AH")) == [[card("2H")], [card("AH")]]


# ---------------------------------------------------------------------- tactics

def _endgame_env():
    """An env where seat 0 is last to play to trick 12. Our side (0+2) bid 4 + 4 and has 7
    tricks, the opponents bid 2 + 2 and have 4. Seat 1 led KH, 3H and 4H followed; seat 0 holds
    AH and 2H, the unseen 2S, 2C and 2D are one in each other hand. AH wins this trick and makes
    the contract in every world; 2H gives the trick away and makes it only if the partner can
    ruff the last trick. Eleven filler tricks (everyone follows suit, the holder of the highest
    card wins) lead there; ``spades_lead: any`` lets the spade fillers be led."""
    fillers = ["3C 4C 5C 6C", "7C 8C 9C TC", "JC QC KC AC", "3D 4D 5D 6D", "7D 8D 9D TD",
               "JD QD KD AD", "5H 6H 7H 8H", "9H TH JH QH", "3S 4S 5S 6S", "7S 8S 9S TS",
               "JS QS KS AS"]
    winners = [0, 0, 2, 2, 0, 0, 2, 3, 3, 1, 1]
    leftovers = ["AH 2H", "KH 2S", "3H 2C", "4H 2D"]
    deal = [cards(t) for t in leftovers]
    script = []
    for text, winner in zip(fillers, winners):
        trick = cards(text)                     # ascending: the winner gets the highest
        plays = {winner: trick[-1]}
        for s, c in zip([s for s in range(4) if s != winner], trick[:-1]):
            plays[s] = c
        for s, c in plays.items():
            deal[s].append(c)
        script.append(plays)
    env = spades_v0.raw_env(rules="standard", spades_lead="any", episode="hand")
    env.reset(seed=0, options={"deal": deal, "dealer": 0})
    bids = {0: 4, 1: 2, 2: 4, 3: 2}
    for _ in range(4):
        env.step(52 + bids[env.agent_name_mapping[env.agent_selection]])
    for plays in script:
        for _ in range(4):
            env.step(plays[env.agent_name_mapping[env.agent_selection]])
    for c in ("KH", "3H", "4H"):
        env.step(card(c))
    assert env.agent_selection == "player_0"
    assert env.unwrapped.game.tricks_taken == [4, 2, 3, 2]
    return env


def test_takes_the_trick_that_makes_the_contract():
    env = _endgame_env()
    obs, *_ = env.last()
    assert list(np.flatnonzero(obs["action_mask"])) == [card("2H"), card("AH")]
    rules = make_rules("standard", spades_lead="any")
    right = 0
    for seed in range(5):
        bot = SearchAgent(seed=seed, worlds=8, min_gain=0.0, rules=rules)
        right += bot.act(obs) == card("AH")
        means = dict(zip(bot.last_info["candidates"], bot.last_info["means"]))
        assert means[card("AH")] > means[card("2H")] + 20, means
    assert right >= 3


# ---------------------------------------------------------------------- a policy as the guide
def _decisions(seed: int, phases: tuple, limit: int = 40):
    """(obs, info) at decisions of heuristic-played hands in the given phases with a real choice."""
    from agents.heuristic import HeuristicAgent
    env = spades_v0.env(episode="hand")
    env.reset(seed=seed)
    bot = HeuristicAgent()
    found = 0
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        if decode_observation(obs["observation"]).phase in phases and obs["action_mask"].sum() > 1:
            yield obs, info
            found += 1
            if found == limit:
                return
        env.step(bot.act(obs, info))


@pytest.mark.parametrize("backend", ["native", "python"])
def test_guide_bids_and_sets_the_base_card(backend):
    from agents.neural import NeuralAgent
    from agents.heuristic import HeuristicAgent
    policy, reference = NeuralAgent(), HeuristicAgent(backend="python")
    keep_base = dict(guide="neural", min_gain=1e9, worlds=8, backend=backend, seed=1)
    guided = agents.make("search_v1", **keep_base)
    heuristic_bids = agents.make("search_v1", guide_bids=False, **keep_base)
    heuristic_base = agents.make("search_v1", guide_base=False, **keep_base)
    for obs, info in _decisions(3, (PHASE_BIDDING,), limit=8):
        assert guided.act(obs, info) == policy.act(obs)
        assert heuristic_bids.act(obs, info) == reference.act(obs, info)
    for obs, info in _decisions(4, (PHASE_PLAY,), limit=12):
        assert guided.act(obs, info) == policy.act(obs)               # never beaten by 1e9 points
        assert heuristic_base.act(obs, info) == reference.act(obs, info)
        if guided.last_info.get("candidates"):
            assert guided.last_info["base_from"] == "guide" and heuristic_base.last_info["base_from"] == "heuristic"


def test_a_heavy_guide_weight_plays_the_guides_favourite_class():
    from agents.neural import NeuralAgent
    policy = NeuralAgent()
    heavy = agents.make("search_v1", guide="neural", guide_weight=1e6, guide_base=False, min_gain=0.0, worlds=16, seed=2)
    for obs, info in _decisions(5, (PHASE_PLAY,), limit=12):
        choice = heavy.act(obs, info)
        favourite = policy.act(obs)
        # the same class of touching cards as the guide's favourite (a class is one candidate)
        view = decode_observation(obs["observation"])
        legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
        groups = heavy._play_candidates(view, legal, favourite)
        assert any(choice in g and favourite in g for g in groups)


def test_pick_adds_the_bonus_before_comparing():
    values = [[10.0, 11.0], [10.0, 11.0]]          # candidate 1 is 1 point better in every world
    assert pick_candidate([5, 6], values, [1.0, 1.0], 5, 0.5, 0.0)[0] == 6
    assert pick_candidate([5, 6], values, [1.0, 1.0], 5, 0.5, 0.0, bonus=[2.0, 0.0])[0] == 5
    choice, means, _ = pick_candidate([5, 6], values, [1.0, 1.0], 6, 0.5, 0.0, bonus=[3.0, 0.0])
    assert choice == 5 and means == [10.0, 11.0]       # the means reported exclude the bonus


def test_a_guide_named_by_its_model_is_that_models_file():
    from agents.neural import shipped_model
    named = agents.make("search_v1", guide="neural_v7")
    assert named._guide_agent.checkpoint == shipped_model("neural_v7")
    assert agents.make("search_v1", guide="neural")._guide_agent.checkpoint == shipped_model("neural")


def test_a_guide_of_the_bids_is_not_asked_in_the_card_play():
    bids_only = agents.make("search_v1", guide="neural", guide_base=False, worlds=8, seed=1)
    asked = []
    real = bids_only._guide_agent.log_probabilities
    bids_only._guide_agent.log_probabilities = lambda obs: asked.append(1) or real(obs)
    plain = agents.make("search_v1", worlds=8, seed=1)
    for obs, info in _decisions(4, (PHASE_PLAY,), limit=8):
        assert bids_only.act(obs, info) == plain.act(obs, info)    # the heuristic's base, the same worlds
    assert not asked
    for obs, info in _decisions(3, (PHASE_BIDDING,), limit=2):
        bids_only.act(obs, info)
    assert len(asked) == 2


def test_a_guide_that_cannot_read_the_table_leaves_its_roles_to_the_heuristic():
    """A network of the standard deck cannot read a short deck with messages: the search then
    bids and plays as it does without a guide (it used to fail on the observation's size)."""
    env = spades_v0.raw_env(rules="short_signals", episode="hand")
    guided = agents.make("search_v1", guide="neural", worlds=4, bid_worlds=4, seed=5)
    plain = agents.make("search_v1", worlds=4, bid_worlds=4, seed=5)
    env.reset(seed=2)
    for name in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = guided.act(obs, info)
        assert action == plain.act(obs, info)
        env.step(action)


def test_guide_options_are_checked():
    with pytest.raises(ValueError, match="guide_weight=-1"):
        agents.make("search_v1", guide="neural", guide_weight=-1)
    with pytest.raises(FileNotFoundError, match="no_such_model.pt"):
        agents.make("search_v1", guide="no_such_model.pt")
    assert "guide='neural'" in repr(agents.make("search_v1", guide="neural"))
