"""The native heuristic (spades_env/native/heuristic.c) makes exactly the Python heuristic's
decision at every position: whole hands and whole games in every preset (partnerships,
cutthroat, three players), from varied starting scores so that blind nil, passing and bag
trouble come up, with some random moves so that odd positions come up too; duplicate matches
of the two backends net exactly zero on every deal; hostile inputs are named errors.

SPADES_NATIVE_HEURISTIC_GAMES sets the number of episodes per setup (default 200) for a long run;
run with ``-s`` to see how many decisions of each phase were compared."""

import collections
import functools
import os
import random

import numpy as np
import pytest
import torch

import agents
from agents.heuristic import HeuristicAgent, choose_action
from spades_env import spades_v0
from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY, PHASE_SIGNAL
from spades_env.native import unavailable_reason
from spades_env.observation import decode_observation, layout_for_size
from spades_env.rules import PRESET_NAMES, make_rules
from spades_env.vector import SpadesVectorEnv

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no native library: {unavailable_reason()}")

GAMES = int(os.environ.get("SPADES_NATIVE_HEURISTIC_GAMES", "200"))
WHOLE_GAME_EVERY = 10          # every 10th episode is a whole game to the target, the others one hand
RANDOM_MOVE_CHANCE = 0.15      # the share of moves played at random (odd positions)
# Starting scores per side: level, far behind (blind nil offered), near the target, bags at 8-9.
PARTNER_SCORES = [None, [0, 0], [-150, 0], [-190, 120], [300, 450], [420, 80], [0, 480], [95, -105], [-199, 349],
                  [489, 18], [-38, 460]]
CUTTHROAT_SCORES = [None, [0, 0, 0, 0], [-150, 300, 0, 210], [480, 79, -190, 5], [129, 438, 9, 499]]
# The short deck's game (short, short_signals: to 250, -150 loses): level, behind, near the target, bags.
SHORT_SCORES = [None, [0, 0], [-120, 90], [230, 40], [104, 238], [-145, 249], [59, -61]]
PRESET_SETUPS = [(p, {}) for p in PRESET_NAMES if make_rules(p).partnerships] + [("cutthroat", {}),
                                                                                 ("cutthroat", {"players": 3})]
VARIANT_SETUPS = [("standard", {"blind_nil_pass": 0}), ("standard", {"blind_nil_pass": 3, "bags": False}),
                  ("standard", {"nil_tricks_count_for_partner": True, "spades_lead": "any", "mercy_score": None,
                               "max_hands": 60}),
                  ("cutthroat", {"players": 3, "nil": False})]
SETUPS = PRESET_SETUPS + VARIANT_SETUPS
PHASE_NAMES = {PHASE_BLIND_DECISION: "blind", PHASE_BIDDING: "bids", PHASE_PASSING: "passes", PHASE_PLAY: "cards",
               PHASE_SIGNAL: "messages"}


def _id(setup):
    preset, overrides = setup
    return preset + "".join(f"-{k}={v}" for k, v in overrides.items())


@functools.cache
def _native_agent():
    return HeuristicAgent(backend="native")


def _native(obs, mask):
    """The native action through act's single-row fast path, checked against the general path."""
    from agents.native_heuristic import choose_actions
    action = _native_agent().act({"observation": obs, "action_mask": mask})
    assert int(choose_actions(obs.astype(np.float64), mask.astype(np.int64))[0]) == action
    return action


@pytest.mark.parametrize("preset,overrides", SETUPS, ids=[_id(s) for s in SETUPS])
def test_native_and_python_heuristics_agree_at_every_decision(preset, overrides):
    rules = make_rules(preset, **overrides)
    starts = PARTNER_SCORES if rules.partnerships else [s and s[:rules.players] for s in CUTTHROAT_SCORES]
    if rules.deck_ranks < 13:
        starts = SHORT_SCORES
    phases = collections.Counter()
    for game in range(GAMES):
        rng = random.Random(game)
        episode = "game" if game % WHOLE_GAME_EVERY == WHOLE_GAME_EVERY - 1 else "hand"
        env = spades_v0.raw_env(rules=rules, episode=episode)
        scores = starts[game % len(starts)]
        env.reset(seed=game, options={"scores": scores} if scores else None)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            view = decode_observation(obs["observation"], signals=rules.signals)
            python = legal[0] if len(legal) == 1 else choose_action(view, legal)
            assert _native(obs["observation"], obs["action_mask"]) == python, (preset, overrides, game, view)
            if len(legal) > 1:
                phases[PHASE_NAMES[view.phase]] += 1
            env.step(rng.choice(legal) if rng.random() < RANDOM_MOVE_CHANCE else python)
    print(f"\n{_id((preset, overrides))}: {GAMES} episodes, decisions compared: {dict(phases)}")
    assert phases["cards"] and phases["bids"]
    if rules.signals:
        assert phases["messages"]
    if rules.blind_nil and rules.partnerships:
        assert phases["blind"]
        if rules.blind_nil_pass:
            assert phases["passes"]


@pytest.mark.parametrize("preset", [p for p in PRESET_NAMES if make_rules(p).partnerships])
def test_duplicate_match_native_against_python_nets_zero_on_every_deal(preset):
    from evaluation import evaluate
    level = evaluate("heuristic", "heuristic:backend=python", deals=16, duplicate=True, rules=preset, seed=len(preset),
                     workers=1)
    assert level.unit_points == [0] * 16, (preset, level.unit_points)
    games = evaluate("heuristic:backend=native", "heuristic:backend=python", games=2, duplicate=True, rules=preset,
                     seed=1, workers=1)
    assert games.unit_points == [0, 0] and games.unit_wins == [0.5, 0.5]
    # Uneven start scores (team A always trails or leads) make the two plays of a deal differ even
    # between equal teams: there the match must come out deal by deal as the Python pair's.
    rules = make_rules(preset)
    starts = ((-190, 40), (460, 120)) if rules.deck_ranks == 13 else ((-120, 40), (220, 60))   # the short game: to 250
    for start in starts:
        mixed, python = (evaluate(a, "heuristic:backend=python", deals=8, duplicate=True, rules=preset, seed=2,
                                  workers=1, start_scores=start) for a in ("heuristic", "heuristic:backend=python"))
        assert mixed.unit_points == python.unit_points, (preset, start)


@pytest.mark.parametrize("obs_dtype,steps", [("float32", 130), ("bfloat16", 60)])
def test_batched_native_heuristic_agrees_with_the_torch_batch_on_the_vector_env(obs_dtype, steps):
    env = SpadesVectorEnv(64, rules="standard", seed=0, obs_dtype=obs_dtype)
    obs, mask = env.reset(seed=3, scores=[-150, 0])
    native, python = HeuristicAgent(backend="native", threads=2), HeuristicAgent(backend="python")
    for _ in range(steps):                             # over a hand, blind nil and passing included
        a = native.act_batch(obs, mask)
        assert a.dtype == torch.int64 and torch.equal(a, python.act_batch(obs, mask))
        obs, mask, *_ = env.step(a)


def test_act_on_both_backends_and_thread_counts_agree():
    env = SpadesVectorEnv(300, rules="tournament", seed=1)
    obs, mask = env.reset(seed=5, scores=[-190, 100])
    from agents.native_heuristic import choose_actions
    for _ in range(60):
        one, many = choose_actions(obs, mask, threads=1), choose_actions(obs, mask, threads=2)
        assert np.array_equal(one, many)
        obs, mask, *_ = env.step(torch.from_numpy(one))


def test_backends_are_chosen_and_named():
    assert agents.make("heuristic").backend == "native"
    assert agents.make("heuristic", backend="python").backend == "python"
    assert "backend='native'" in repr(agents.make("heuristic"))
    from agents.specs import parse_agent_spec
    name, options = parse_agent_spec("heuristic:backend=python")
    assert agents.make(name, **options).backend == "python"
    with pytest.raises(ValueError, match="backend"):
        agents.make("heuristic", backend="fortran")


def test_native_backend_refuses_to_run_without_the_library(monkeypatch):
    import spades_env.native as native
    monkeypatch.setattr(native, "unavailable_reason", lambda: "no compiler")
    with pytest.raises(ValueError, match="not available"):
        HeuristicAgent(backend="native")
    assert HeuristicAgent().backend == "python"         # the default follows what builds


def _first_observation():
    env = spades_v0.raw_env()
    env.reset(seed=0)
    obs, *_ = env.last()
    return obs["observation"], obs["action_mask"]


def test_hostile_inputs_are_named_errors():
    from agents.native_heuristic import NativeHeuristicError, choose_actions
    o, m = _first_observation()
    with pytest.raises(NativeHeuristicError, match="no legal action"):
        choose_actions(o, np.zeros(68, dtype=np.int8))
    with pytest.raises(NativeHeuristicError, match="layout|values"):
        choose_actions(o[:100], m)
    with pytest.raises(NativeHeuristicError, match="shape"):
        choose_actions(o, m[:10])
    with pytest.raises(NativeHeuristicError, match="shape"):
        choose_actions(np.stack([o, o]), np.stack([m, m, m]))
    with pytest.raises(NativeHeuristicError, match="shape"):
        choose_actions(o[None, None], m[None, None])
    with pytest.raises((NativeHeuristicError, ValueError)):
        choose_actions(np.array(["a"] * o.size), m)
    bad = o.copy()
    bad[-5:] = np.nan                                  # the game cells: no target score to read
    with pytest.raises(NativeHeuristicError, match="malformed"):
        choose_actions(bad, m)
    bad = o.copy()
    bad[-5:] = np.inf
    with pytest.raises(NativeHeuristicError, match="malformed"):
        choose_actions(bad, m)
    phase = layout_for_size(o.size).obs_blocks["phase"]
    bad = o.copy()
    bad[phase.offset:phase.offset + phase.size] = 0    # no phase shown: nothing to decide from
    with pytest.raises(NativeHeuristicError, match="row 0: .*impossible"):
        choose_actions(bad, m)
    legal = np.flatnonzero(m)
    one = np.zeros_like(m)
    one[legal[-1]] = 1                                 # a single legal action is taken whatever the view says
    assert choose_actions(bad, one)[0] == legal[-1]
    assert choose_actions(np.empty((0, o.size), np.float32), np.empty((0, 68), np.int8)).shape == (0,)
    rows = np.stack([o, bad, o])
    with pytest.raises(NativeHeuristicError, match="row 1"):
        choose_actions(rows, np.stack([m, m, m]))


def test_garbage_never_crashes():
    from agents.native_heuristic import NativeHeuristicError, choose_actions
    o, _ = _first_observation()
    rng = np.random.default_rng(0)
    decided = 0
    for trial in range(600):                           # an action the mask allows, or a named error
        garbage = rng.normal(0, 3, o.shape).astype(np.float32)
        if trial % 3 == 0:
            garbage[rng.random(o.shape) < 0.05] = np.nan
        if trial % 3 == 1:
            garbage = (rng.random(o.shape) < 0.3).astype(np.float32)   # plausible-looking one-hot noise
        mask = (rng.random(68) < 0.3).astype(np.int8)
        try:
            action = int(choose_actions(garbage, mask, threads=2)[0])
        except NativeHeuristicError:
            continue
        assert mask[action]
        decided += 1
    assert decided


# ---------------------------------------------------------------------- conventions
def _convention_settings():
    from agents.heuristic_conventions import CONVENTION_OPTIONS, Conventions
    singles = [Conventions(**{option: value}) for option, values in CONVENTION_OPTIONS.items() for value in values[1:]]
    combined = [Conventions("aggressive", "eager", "strong", "high_asks", "trumps"),
                Conventions("conservative", "never", "none", "low_asks", "partner_suit"),
                Conventions(nil="eager", discards="high_asks", leads="partner_suit"),
                Conventions(bidding="aggressive", cover="none", discards="none")]
    return singles + combined


CONVENTION_SETTINGS = _convention_settings()
CONVENTION_SETUPS = [("standard", {}), ("tournament", {}), ("cutthroat", {})]


@pytest.mark.parametrize("conventions", CONVENTION_SETTINGS, ids=[c.spec() for c in CONVENTION_SETTINGS])
def test_native_and_python_heuristics_agree_under_every_convention(conventions):
    """Every seat plays under the conventions (so the partner's signals and nils are its own),
    with random moves now and then; C decides exactly as Python at every decision."""
    from agents.native_heuristic import choose_action as native_action
    changed = 0
    for preset, overrides in CONVENTION_SETUPS:
        rules = make_rules(preset, **overrides)
        for game in range(max(12, GAMES // 8)):
            rng = random.Random(game)
            env = spades_v0.raw_env(rules=rules, episode="hand")
            env.reset(seed=game, options={"scores": [-150, 0]} if game % 4 == 3 and rules.partnerships else None)
            for _ in env.agent_iter():
                obs, _, term, trunc, _ = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"]).tolist()
                view = decode_observation(obs["observation"])
                python = legal[0] if len(legal) == 1 else choose_action(view, legal, None, conventions)
                native = native_action(obs["observation"], obs["action_mask"], conventions)
                assert native == python, (conventions, preset, game, view)
                changed += len(legal) > 1 and python != choose_action(view, legal)
                env.step(rng.choice(legal) if rng.random() < RANDOM_MOVE_CHANCE else python)
    assert changed, f"{conventions.spec()} never changed a decision"


def test_batched_native_heuristic_under_conventions_agrees_with_python():
    env = SpadesVectorEnv(48, rules="standard", seed=0)
    obs, mask = env.reset(seed=4, scores=[-150, 0])
    spec = dict(bidding="aggressive", nil="eager", cover="strong", discards="low_asks", leads="partner_suit")
    native = HeuristicAgent(backend="native", threads=2, **spec)
    python = HeuristicAgent(backend="python", **spec)
    for _ in range(70):
        a = native.act_batch(obs, mask)
        assert torch.equal(a, python.act_batch(obs, mask))
        obs, mask, *_ = env.step(a)


def test_bad_convention_codes_are_named_errors():
    from agents.native_heuristic import NativeHeuristicError, choose_actions
    o, m = _first_observation()
    for codes in [(0, 0, 0, 4, 0), (3, 0, 0, 0, 0), (0, 0, 0, 0, -1), (0, 0, 0), ("a", 0, 0, 0, 0)]:
        with pytest.raises(NativeHeuristicError, match="convention codes"):
            choose_actions(o, m, conventions=codes)
    assert choose_actions(o, m, conventions=(0, 0, 0, 0, 0))[0] == choose_actions(o, m)[0]
    # C checks them too (HEUR_ERR_BAD_CONVENTIONS, nothing written) for callers that skip Python.
    from agents.native_heuristic import _layout_array, _library
    out = np.full(1, 99, dtype=np.int64)
    bad = np.array([0, 0, 0, 4, 0], dtype=np.int32)
    mask = np.ascontiguousarray(m != 0, dtype=np.uint8)
    status = _library().spades_heuristic_from_obs_with(o.ctypes.data, mask.ctypes.data, 1,
                                                       _layout_array(layout_for_size(o.size)).ctypes.data,
                                                       bad.ctypes.data, out.ctypes.data, 1)
    assert status == -4 and out[0] == 99
