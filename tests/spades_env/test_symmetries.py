"""Symmetries (spades_env.symmetries): in every preset and every variant that names a suit, a
relabelled game is a game of the same rules whose masks, next states, rewards, observations and
records are the relabelled ones; the group is what the rules allow; the batched maps equal the
per-state ones on the batched engine's tensors."""

from __future__ import annotations

import copy
import itertools
import math
import random

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spades_env
from spades_env import RulesError, spades_v0
from spades_env.game import PHASE_PASSING, PHASES_DONE, DealError
from spades_env.observation import layout_for
from spades_env.record import ReplayError, iter_replay, replay
from spades_env.rules import RULE_NAMES, make_rules
from spades_env.symmetries import (CARD_BLOCKS, MESSAGE_BLOCKS, SUIT_BLOCKS, SUIT_NAMING_RULES, SUIT_NEUTRAL_RULES, Relabelling,
                                   SymmetryError, named_suits, symmetries)
from spades_env.vector import SpadesVectorEnv

from helpers_vector import TEST_DEVICE

torch.set_num_threads(1)

# label: (env kwargs, reset options, size of the group). Every preset; blind nil offered and
# passed; every variant that names a suit (the two of clubs leading, three players).
SETUPS = {
    "standard": ({"rules": "standard"}, None, 6),
    "standard-trailing": ({"rules": "standard", "blind_nil_min_deficit": 0}, {"scores": [0, 300]}, 6),
    "basic": ({"rules": "basic"}, None, 6),
    "tournament": ({"rules": "tournament"}, {"scores": [-150, 100]}, 6),
    "cutthroat": ({"rules": "cutthroat"}, None, 6),
    "openspiel": ({"rules": "openspiel"}, {"scores": [120, 35]}, 6),
    "openspiel-game": ({"rules": "openspiel", "episode": "game"}, None, 6),
    "variants": ({"rules": "standard", "bids_may_total_13": False, "spades_lead": "any", "bags": False,
                  "nil_tricks_count_for_partner": True, "max_hands": 3}, {"scores": [300, 0]}, 6),
    "two-of-clubs": ({"rules": "standard", "two_of_clubs_leads": True}, {"scores": [0, 300]}, 2),
    "tournament-two-of-clubs": ({"rules": "tournament", "two_of_clubs_leads": True}, None, 2),
    "three-players": ({"rules": "cutthroat", "players": 3}, None, 2),
    "short": ({"rules": "short"}, None, 6),
    "short-signals": ({"rules": "short_signals"}, None, 6 * 24),
    "standard-signals": ({"rules": "standard", "signals": 3}, {"scores": [0, 300]}, 6 * 6),
    "two-of-clubs-signals": ({"rules": "standard", "two_of_clubs_leads": True, "signals": 2}, None, 2 * 2),
}


def positions_to_check(group, count: int = 12) -> list[int]:
    """Every position of a small group; of a large one (a signal's message relabellings), the
    identity, the last element and a seeded sample."""
    if len(group) <= count:
        return list(range(len(group)))
    return sorted({0, len(group) - 1, *random.Random(len(group)).sample(range(len(group)), count - 2)})


def rules_of(label):
    kwargs, _, _ = SETUPS[label]
    kwargs = dict(kwargs)
    return make_rules(kwargs.pop("rules"), **{k: v for k, v in kwargs.items() if k != "episode"})


def random_record(label: str, seed: int, max_steps: int) -> dict:
    """A record of random legal play (blind nil often when offered), at most ``max_steps`` actions."""
    kwargs, options, _ = SETUPS[label]
    env = spades_v0.raw_env(**kwargs)
    env.reset(seed=seed, options=options)
    pick = random.Random(seed)
    for _ in range(max_steps):
        if env.game.phase in PHASES_DONE and not env.legal_actions():
            break
        legal = env.legal_actions()
        if not legal:
            break
        action = 66 if 66 in legal and pick.random() < 0.4 else pick.choice(legal)
        env.step(action)
    return env.game_record()


def assert_positions_map(g: Relabelling, original, relabelled) -> None:
    """Everything seen at the same moment of the two games: the relabelled game's is the map."""
    a, b = original.game, relabelled.game
    assert b.to_act == a.to_act and b.phase == a.phase
    assert b.hands == [g.map_cards(h) for h in a.hands]
    assert b.legal_mask() == g.map_mask(a.legal_mask())
    assert b.scores == a.scores and b.bags == a.bags and b.tricks_taken == a.tricks_taken
    assert relabelled.rewards == original.rewards
    assert relabelled._cumulative_rewards == original._cumulative_rewards
    for agent in original.agents:
        mine, theirs = original.observe(agent), relabelled.observe(agent)
        np.testing.assert_array_equal(theirs["observation"], g.map_observation(mine["observation"]))
        np.testing.assert_array_equal(theirs["action_mask"], g.map_mask(mine["action_mask"]))
    np.testing.assert_array_equal(relabelled.state(), g.map_state(original.state()))


def check_relabelled_game(label: str, seed: int, position: int, max_steps: int = 140) -> int:
    """Play a random game, relabel its record, replay both side by side and compare every step.
    Returns the number of card passes seen (to show blind-nil passing was covered)."""
    group = symmetries(rules_of(label))
    g = group[position % len(group)]
    record = random_record(label, seed, max_steps)
    mapped = g.map_record(record)
    passes = 0
    last = None
    for one, other in itertools.zip_longest(iter_replay(record), iter_replay(mapped)):
        (env_a, seat_a, action_a), (env_b, seat_b, action_b) = one, other
        assert seat_b == seat_a and action_b == g.map_action(action_a)
        assert_positions_map(g, env_a, env_b)      # before the action: masks, observations, state
        passes += env_a.game.phase == PHASE_PASSING
        last = env_a, env_b
    if last is not None:                            # after the last action: the next state maps
        assert_positions_map(g, *last)
    assert replay(mapped).game_record() == mapped  # the relabelled record replays to itself
    return passes


@pytest.mark.parametrize("label", list(SETUPS))
def test_relabelled_games_map_step_by_step(label):
    """Masks, next states, rewards, observations and records map under every relabelling of the
    group, over several hands (seeded random play)."""
    group = symmetries(rules_of(label))
    for position in positions_to_check(group):
        check_relabelled_game(label, seed=100 + position, position=position, max_steps=130)


def test_blind_nil_passing_is_relabelled():
    assert sum(check_relabelled_game("standard-trailing", seed, seed) for seed in range(6)) > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(label=st.sampled_from(list(SETUPS)), seed=st.integers(0, 2 ** 32 - 1), position=st.integers(0, 143),
       steps=st.integers(1, 250))
def test_random_states_map(label, seed, position, steps):
    check_relabelled_game(label, seed, position, max_steps=steps)


# --------------------------------------------------------------------------- the group
@pytest.mark.parametrize("label", list(SETUPS))
def test_the_group_is_closed_and_identity_comes_first(label):
    rules = rules_of(label)
    group = symmetries(rules)
    assert len(group) == SETUPS[label][2]
    assert group[0].is_identity and group[0].name == "identity" and group.identity == group[0]
    assert len(set(group)) == len(group) and len(set(group.names)) == len(group)
    pairs = list(itertools.product(group, group))
    if len(pairs) > 64:
        pairs = random.Random(0).sample(pairs, 64)
    for a, b in pairs:
        assert a.then(b) in group
        for card in range(52):
            assert a.then(b).map_card(card) == b.map_card(a.map_card(card))
        for action in range(rules.num_actions):
            assert a.then(b).map_action(action) == b.map_action(a.map_action(action))
    for g in group:
        assert g.then(g.inverse).is_identity and g.inverse.then(g).is_identity
        assert group[group.inverse_indices[group.index(g)]] == g.inverse
        assert group.by_name(g.name) == g
        assert g.map_card(39 + 5) == 39 + 5                # spades never move
        for suit in named_suits(rules):
            assert all(g.map_card(suit * 13 + r) == suit * 13 + r for r in range(13))


def test_the_group_shrinks_where_a_rule_names_a_suit():
    assert named_suits("standard") == {}
    assert named_suits(make_rules("standard", two_of_clubs_leads=True)) == {0: ["two_of_clubs_leads"]}
    assert named_suits(make_rules("cutthroat", players=3)) == {0: ["players"]}
    assert len(symmetries("standard")) == 6
    assert symmetries("standard", two_of_clubs_leads=True).names == ("identity", "(D H)")
    assert symmetries("cutthroat", players=3).names == ("identity", "(D H)")
    for preset in spades_env.PRESET_NAMES:       # (short_signals: 6 suit relabellings x 4! message ones)
        assert len(symmetries(preset)) == 6 * math.factorial(make_rules(preset).signals)


def test_every_rule_is_classified_as_naming_a_suit_or_not():
    """A new rule must be placed in one list or the other before the group can be trusted."""
    assert SUIT_NEUTRAL_RULES | set(SUIT_NAMING_RULES) == set(RULE_NAMES)
    assert not SUIT_NEUTRAL_RULES & set(SUIT_NAMING_RULES)


NEUTRAL_BLOCKS = {"phase", "dealer", "to_act", "bids", "tricks_taken", "trick_leader", "spades_broken", "sides", "game",
                  "signal_phase"}


@pytest.mark.parametrize("label", ["standard", "cutthroat", "three-players", "short-signals"])
def test_every_observation_block_is_classified(label):
    """Every block of the observation and of the state either holds cards or suits (relabelled) or
    is known to be the same in every relabelling; a new block fails here until it is placed."""
    layout = layout_for(rules_of(label))
    for blocks in (layout.obs_blocks, layout.global_blocks):
        for name, block in blocks.items():
            assert name in set(CARD_BLOCKS) | set(SUIT_BLOCKS) | set(MESSAGE_BLOCKS) | NEUTRAL_BLOCKS, name
            if name in CARD_BLOCKS:
                assert block.width == 52
            if name in SUIT_BLOCKS:
                assert block.width == 4


def test_observation_index_agrees_with_the_layouts_suit_permutation():
    layout = layout_for(make_rules("standard"))
    for g in symmetries("standard"):
        obs_index, card_index = layout.suit_permutation(g.suits)
        np.testing.assert_array_equal(g.observation_index, obs_index)
        np.testing.assert_array_equal(g.action_index[:52], card_index)


def test_a_relabelling_that_moves_a_named_suit_changes_the_game():
    """Why the group shrinks: with the two of clubs leading, swapping clubs and diamonds hands the
    lead to whoever holds the two of diamonds; the three-player deck lacks the two of clubs, so
    the swap deals a card that does not exist. Such relabellings are refused."""
    swap = [(1 - c // 13 if c < 26 else c // 13) * 13 + c % 13 for c in range(52)]
    rules = make_rules("standard", two_of_clubs_leads=True)
    leaders = set()
    for seed in range(4):
        deal = [[c for c in range(52) if h >> c & 1] for h in spades_env.SpadesGame(rules, seed).deal]
        for cards in (deal, [[swap[c] for c in hand] for hand in deal]):
            game = spades_env.SpadesGame(rules, 0, dealer=0, deal=cards)
            holder = next(s for s, hand in enumerate(cards) if 0 in hand)
            for _ in range(4):
                game.apply(game.legal_actions()[0])
            assert game.to_act == holder and game.legal_actions() == [0]
        leaders.add((next(s for s, h in enumerate(deal) if 0 in h), next(s for s, h in enumerate(deal) if 13 in h)))
    assert any(a != b for a, b in leaders)          # the swapped deal gave the lead to another seat
    three = make_rules("cutthroat", players=3)
    deal = [[c for c in range(52) if h >> c & 1] for h in spades_env.SpadesGame(three, 1).deal]
    with pytest.raises(DealError, match="two of clubs"):
        spades_env.SpadesGame(three, 0, deal=[[swap[c] for c in hand] for hand in deal])
    for rules_naming_clubs in (rules, three):
        with pytest.raises(SymmetryError, match="moves clubs"):
            Relabelling((1, 0, 2, 3), rules_naming_clubs)
    record = random_record("two-of-clubs", seed=3, max_steps=80)
    with pytest.raises(SymmetryError, match="two_of_clubs_leads"):
        symmetries("standard").by_name("(C D)").map_record(record)


# --------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_clearly():
    g = symmetries("standard")[3]
    for action in (68, -1, True, 2.0, "AS"):
        with pytest.raises(SymmetryError, match="action id 0..67"):
            g.map_action(action)
    with pytest.raises(SymmetryError, match="742 values"):
        g.map_observation(np.zeros(741, dtype=np.float32))
    with pytest.raises(SymmetryError, match="expected"):
        g.map_observation(np.float32(1.0))
    with pytest.raises(SymmetryError, match="68 cells"):
        g.map_mask(np.zeros(52))
    with pytest.raises(SymmetryError, match="68-bit"):
        g.map_mask(1 << 68)
    with pytest.raises(SymmetryError, match="state"):
        g.map_state(np.zeros(742))
    with pytest.raises(SymmetryError, match="52-bit"):
        g.map_cards(-1)
    with pytest.raises(SymmetryError, match="unknown card"):
        g.map_card("ZZ")
    with pytest.raises(RulesError, match="unknown rules preset 'nope'.*presets: standard"):
        symmetries("nope")
    with pytest.raises(SymmetryError, match="keeps spades"):
        Relabelling((3, 1, 2, 0), make_rules("standard"))
    with pytest.raises(SymmetryError, match="no relabelling named"):
        symmetries("standard").by_name("(C S)")
    with pytest.raises(SymmetryError, match="not a symmetry"):
        symmetries("standard", two_of_clubs_leads=True).index(symmetries("standard")[2])
    with pytest.raises(ReplayError, match="not a Spades game record"):
        g.map_record({"hands": []})
    with pytest.raises(SymmetryError, match="deal"):
        g.map_deal([[0, 1]])
    assert isinstance(SymmetryError("x"), ValueError) and DealError


def test_malformed_records_are_refused_naming_the_entry():
    g = symmetries("standard")[2]
    record = random_record("standard-trailing", seed=1, max_steps=70)
    assert g.map_record(record) != record and record == random_record("standard-trailing", seed=1, max_steps=70)
    for mutate, message in [
        (lambda r: r["hands"][0]["tricks"][0].update(cards="AS"), "cards should be a list"),
        (lambda r: r["hands"][0]["tricks"][0]["cards"].__setitem__(0, "ZZ"), r"hand 1 'tricks': unknown card 'ZZ'"),
        (lambda r: r["hands"][0].update(passes="none"), "'passes': expected a list of mappings"),
        (lambda r: r["hands"][0]["deal"].pop(), "hand 1: bad deal"),
        (lambda r: r["hands"][0]["actions"].__setitem__(0, [0, 99]), "action 99 is not an action id"),
    ]:
        broken = copy.deepcopy(record)
        mutate(broken)
        with pytest.raises(SymmetryError, match=message):
            g.map_record(broken)
    with pytest.raises(SymmetryError, match="four suit numbers"):
        Relabelling("xyz")
    assert Relabelling((1, 0, 2, 3), "standard") == symmetries("standard").by_name("(C D)")


def test_maps_accept_rows_and_integer_masks():
    g = symmetries("standard").by_name("(C D H)")
    assert g.map_action(0) == 13 and g.map_action(38) == 12 and g.map_action(51) == 51 and g.map_action(60) == 60
    assert g.map_cards(1 | 1 << 13 | 1 << 39) == 1 << 13 | 1 << 26 | 1 << 39
    assert g.map_mask(1 | 1 << 66) == 1 << 13 | 1 << 66
    rows = np.random.default_rng(0).random((5, 742)).astype(np.float32)
    np.testing.assert_array_equal(g.map_observation(rows)[2], g.map_observation(rows[2]))
    deal = [[s * 13 + r for r in range(13)] for s in range(4)]
    assert g.map_deal(deal) == [list(range(13, 26)), list(range(26, 39)), list(range(13)), list(range(39, 52))]


# --------------------------------------------------------------------------- the batched form
def _random_legal(mask: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    noise = torch.rand(mask.shape, generator=gen).to(mask.device)
    return torch.where(mask, noise, -1.0).argmax(1)


def test_batched_maps_equal_the_per_state_maps():
    """On the batched engine's tensors, one relabelling per row: observations, states, masks,
    actions and card sets equal the per-state maps exactly (float32 and bfloat16 rows)."""
    group = symmetries("standard")
    batched = group.batched(TEST_DEVICE)
    env = SpadesVectorEnv(48, rules="standard", seed=5, device=TEST_DEVICE)
    obs, mask = env.reset(scores=[0, 300])
    gen = torch.Generator().manual_seed(1)
    for step in range(120):
        which = batched.sample(48, generator=gen)
        mapped_obs = batched.map_observations(obs, which)
        mapped_mask = batched.map_masks(mask, which)
        actions = _random_legal(mask, gen)
        mapped_actions = batched.map_actions(actions, which)
        states = env.state_tensor()
        mapped_states = batched.map_states(states, which)
        hands = env.state.hands
        mapped_hands = batched.map_card_sets(hands, which)
        if step % 10 == 0:
            obs_, mask_, states_ = obs.cpu(), mask.cpu(), states.cpu()
            mapped_obs_, mapped_mask_, mapped_states_ = mapped_obs.cpu(), mapped_mask.cpu(), mapped_states.cpu()
            for row in range(48):
                g = group[int(which[row])]
                np.testing.assert_array_equal(mapped_obs_[row].numpy(), g.map_observation(obs_[row].numpy()))
                np.testing.assert_array_equal(mapped_mask_[row].numpy(), g.map_mask(mask_[row].numpy()))
                assert int(mapped_actions[row]) == g.map_action(int(actions[row]))
                np.testing.assert_array_equal(mapped_states_[row].numpy(), g.map_state(states_[row].numpy()))
                assert mapped_hands[row].tolist() == [g.map_cards(int(h)) for h in hands[row]]
            for position in range(len(group)):       # one relabelling for every row
                same = torch.full((48,), position, device=TEST_DEVICE)
                assert torch.equal(batched.map_observations(obs, position), batched.map_observations(obs, same))
                assert torch.equal(batched.map_masks(mask, group[position]), batched.map_masks(mask, same))
                assert torch.equal(batched.map_actions(actions, position), batched.map_actions(actions, same))
            half = obs.to(torch.bfloat16)
            assert torch.equal(batched.map_observations(half, which), mapped_obs.to(torch.bfloat16))
        obs, mask, _, _, _ = env.step(actions)


@pytest.mark.parametrize("rules", ["standard", "tournament", "openspiel", "basic"])
def test_batched_engine_on_relabelled_deals_sees_the_mapped_tensors(rules):
    """Two batched engines, the second dealt each table's relabelled deals (its own relabelling
    per table) and played the mapped actions: its observations, masks and rewards are the maps."""
    B = 24
    batched = symmetries(rules).batched(TEST_DEVICE)
    original = SpadesVectorEnv(B, rules=rules, seed=2, device=TEST_DEVICE)
    relabelled = SpadesVectorEnv(B, rules=rules, seed=9, device=TEST_DEVICE)
    deals = original.draw_deals(3 * B)[:, :4].view(B, 3, 4)
    gen = torch.Generator().manual_seed(4)
    which = batched.sample(B, generator=gen)
    scores = [0, 300] if rules != "openspiel" else [120, 35]
    dealer = 3 if rules == "openspiel" else 1
    obs, mask = original.reset(deals=deals, dealer=dealer, scores=scores)
    obs2, mask2 = relabelled.reset(deals=batched.map_card_sets(deals, which), dealer=dealer, scores=scores)
    for _ in range(150):                             # under three hands: every deal came from the queue
        assert torch.equal(obs2, batched.map_observations(obs, which))
        assert torch.equal(mask2, batched.map_masks(mask, which))
        actions = _random_legal(mask, gen)
        obs, mask, rewards, done, info = original.step(actions)
        obs2, mask2, rewards2, done2, info2 = relabelled.step(batched.map_actions(actions, which))
        assert torch.equal(rewards2, rewards) and torch.equal(done2, done)
        assert torch.equal(info2["final_scores"], info["final_scores"])
        if bool(done.any()):                          # a new episode deals from the seeded pool
            break


def test_wrapped_policy_sees_the_relabelled_game_and_answers_in_the_real_one():
    batched = symmetries("standard").batched(TEST_DEVICE)
    env = SpadesVectorEnv(16, rules="standard", seed=3, device=TEST_DEVICE)
    obs, mask = env.reset()
    which = torch.arange(16, device=TEST_DEVICE) % 6
    lowest = lambda o, m: m.to(torch.int8).argmax(1)          # noqa: E731  the lowest legal action
    wrapped = batched.wrap_policy(lowest, lambda: which)
    gen = torch.Generator().manual_seed(0)
    for _ in range(80):
        chosen = wrapped(obs, mask)
        assert bool(mask.gather(1, chosen[:, None]).all())                     # legal in the real game
        expected = batched.map_actions(lowest(None, batched.map_masks(mask, which)), batched.inverse(which))
        assert torch.equal(chosen, expected)
        assert torch.equal(batched.map_actions(chosen, which), lowest(None, batched.map_masks(mask, which)))
        obs, mask, _, _, _ = env.step(_random_legal(mask, gen))


def test_batched_bad_input_is_refused_clearly():
    batched = symmetries("standard").batched()
    obs = torch.zeros(4, 742)
    with pytest.raises(SymmetryError, match="0..5"):
        batched.map_observations(obs, torch.tensor([0, 1, 2, 6]))
    with pytest.raises(SymmetryError, match="0..5"):
        batched.map_observations(obs, 7)
    with pytest.raises(SymmetryError, match=r"one integer position per row \(4,\)"):
        batched.map_observations(obs, torch.tensor([0, 1]))
    with pytest.raises(SymmetryError, match="742 cells"):
        batched.map_observations(torch.zeros(4, 741), 0)
    with pytest.raises(SymmetryError, match="torch tensor"):
        batched.map_observations(np.zeros((4, 742)), 0)
    with pytest.raises(SymmetryError, match="0..67"):
        batched.map_actions(torch.tensor([0, 68, 3, 4]), 1)
    with pytest.raises(SymmetryError, match="integer tensor"):
        batched.map_actions(torch.tensor([0.0, 1.0]), 1)
    with pytest.raises(SymmetryError, match="int64"):
        batched.map_card_sets(torch.zeros(4, 4, dtype=torch.int32), 1)
    with pytest.raises(SymmetryError, match="position"):
        batched.map_masks(torch.zeros(4, 68, dtype=torch.bool), torch.tensor([0.5, 1, 2, 3]))
    with pytest.raises(SymmetryError, match="not a symmetry"):
        symmetries("standard", two_of_clubs_leads=True).batched().map_masks(
            torch.zeros(4, 68), symmetries("standard")[2])


def test_the_docs_examples_run():
    """Every Python block of docs/symmetries.md runs as written."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "symmetries.md").read_text()
    blocks = [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]
    assert len(blocks) >= 3
    for block in blocks:
        exec(compile(block, "docs/symmetries.md", "exec"), {})


def test_the_benchmark_of_the_docs_runs():
    from spades_env.symmetries import benchmark

    lines = benchmark(["cpu:1:torch"], batch=8, reps=1)
    assert lines[0] == "cpu backend=torch threads=1 tables=8" and len(lines) == 10
    assert all(line.endswith(" ms") for line in lines[1:])


def test_the_per_state_maps_need_no_torch():
    """torch is imported inside the batched form only, so the rules core stays importable without it."""
    import ast
    from pathlib import Path

    import sys

    module = sys.modules["spades_env.symmetries"]   # (spades_env.symmetries, the attribute, is the function)
    tree = ast.parse(Path(module.__file__).read_text())
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = {alias.name.split(".")[0] for node in top if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in top if isinstance(node, ast.ImportFrom) and node.module}
    assert "torch" not in names
