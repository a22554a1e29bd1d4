"""The native heuristic (spades_env/native/heuristic.c) makes exactly the Python heuristic's
decision at every position: whole games in every preset (partnerships, cutthroat, three
players), from varied starting scores so that blind nil, passing and bag trouble come up, and
with some random moves so that odd positions come up too. SPADES_NATIVE_HEURISTIC_GAMES raises
the number of games per preset for a long run."""

import collections
import os
import random

import numpy as np
import pytest
import torch

import agents
from agents.heuristic import HeuristicAgent, choose_action
from spades_env import spades_v0
from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY
from spades_env.native import unavailable_reason
from spades_env.observation import decode_observation
from spades_env.vector import SpadesVectorEnv

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no native library: {unavailable_reason()}")

GAMES = int(os.environ.get("SPADES_NATIVE_HEURISTIC_GAMES", "40"))
START_SCORES = [None, [0, 0], [-150, 0], [-250, 120], [300, 450], [420, 80], [0, 480], [95, -105]]
SETUPS = [("standard", {}), ("basic", {}), ("tournament", {}), ("openspiel", {}), ("cutthroat", {}),
          ("cutthroat", {"players": 3})]


def _native(obs, mask):
    from agents.native_heuristic import choose_actions
    return int(choose_actions(obs, mask)[0])


@pytest.mark.parametrize("preset,overrides", SETUPS, ids=[f"{p}{o.get('players', '')}" for p, o in SETUPS])
def test_native_and_python_heuristics_agree_at_every_decision(preset, overrides):
    phases = collections.Counter()
    for game in range(GAMES):
        rng = random.Random(game)
        env = spades_v0.raw_env(rules=preset, episode="hand", **overrides)
        scores = START_SCORES[game % len(START_SCORES)]
        env.reset(seed=game, options={"scores": scores} if scores and env.rules.partnerships else None)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            view = decode_observation(obs["observation"])
            python = legal[0] if len(legal) == 1 else choose_action(view, legal)
            assert _native(obs["observation"], obs["action_mask"]) == python, (preset, game, view)
            phases[view.phase] += 1
            env.step(python if rng.random() < 0.85 else rng.choice(legal))
    assert phases[PHASE_PLAY] and phases[PHASE_BIDDING]
    if preset in ("standard", "tournament"):     # blind nil is offered (and passing follows) there
        assert phases[PHASE_BLIND_DECISION] and phases[PHASE_PASSING]


def test_batched_native_heuristic_agrees_with_the_torch_batch_on_the_vector_env():
    env = SpadesVectorEnv(256, rules="standard", seed=0)
    obs, mask = env.reset(seed=3, scores=[-200, 0])
    native, python = HeuristicAgent(backend="native", threads=2), HeuristicAgent(backend="python")
    for _ in range(300):
        a = native.act_batch(obs, mask)
        assert torch.equal(a, python.act_batch(obs, mask))
        obs, mask, *_ = env.step(a)


def test_backends_are_chosen_and_named():
    assert agents.make("heuristic").backend == "native"
    assert agents.make("heuristic", backend="python").backend == "python"
    with pytest.raises(ValueError, match="backend"):
        agents.make("heuristic", backend="fortran")


def test_native_backend_refuses_to_run_without_the_library(monkeypatch):
    import spades_env.native as native
    monkeypatch.setattr(native, "unavailable_reason", lambda: "no compiler")
    with pytest.raises(ValueError, match="not available"):
        HeuristicAgent(backend="native")
    assert HeuristicAgent().backend == "python"         # the default follows what builds


def test_hostile_inputs_are_named_errors():
    from agents.native_heuristic import NativeHeuristicError, choose_actions
    env = spades_v0.raw_env()
    env.reset(seed=0)
    obs, *_ = env.last()
    o, m = obs["observation"], obs["action_mask"]
    with pytest.raises(NativeHeuristicError, match="no legal action"):
        choose_actions(o, np.zeros(68, dtype=np.int8))
    with pytest.raises(NativeHeuristicError, match="layout|values"):
        choose_actions(o[:100], m)
    with pytest.raises(NativeHeuristicError, match="shape"):
        choose_actions(o, m[:10])
    bad = o.copy()
    bad[-5:] = np.nan                                  # the game cells: no target score to read
    with pytest.raises(NativeHeuristicError, match="malformed"):
        choose_actions(bad, m)
    rng = np.random.default_rng(0)
    for _ in range(300):                               # garbage never crashes: an action or a named error
        garbage = rng.normal(0, 3, o.shape).astype(np.float32)
        mask = (rng.random(68) < 0.3).astype(np.int8)
        try:
            action = int(choose_actions(garbage, mask)[0])
        except NativeHeuristicError:
            continue
        assert mask[action]
