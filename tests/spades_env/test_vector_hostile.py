"""Hostile snapshots and deal tensors never reach the batched engine's steps (issue: a crafted
checkpoint crashed the C step). Each is refused with VectorEnvError and the env is unchanged."""

import copy

import numpy as np
import pytest
import torch

from spades_env.native import unavailable_reason
from spades_env.vector import SpadesVectorEnv, VectorEnvError
from spades_env.vector_checks import MAX_ABS_SCORE, check_snapshot

BACKENDS = ["torch"] + ([] if unavailable_reason() else ["native"])
B = 8


def _played_env(backend, steps=40, rules="standard"):
    env = SpadesVectorEnv(B, rules=rules, backend=backend, seed=0)
    env.reset(seed=1, scores=[-150, 0])
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        u = torch.rand(B, 68, generator=g)
        env.step(torch.where(env._mask.bool(), u, torch.full_like(u, -1)).argmax(1))
    return env


def _random_legal(env, g):
    u = torch.rand(B, 68, generator=g)
    return torch.where(env._mask.bool(), u, torch.full_like(u, -1)).argmax(1)


def _edited(snapshot, edit):
    snap = copy.deepcopy(snapshot)
    edit(snap)
    return snap


HOSTILE = {
    "pass_to far out of range": lambda s: s["state"]["pass_to"].fill_(10 ** 7),
    "to_act out of range": lambda s: s["state"]["to_act"].__setitem__(0, 10 ** 6),
    "negative dealer": lambda s: s["state"]["dealer"].__setitem__(3, -1),
    "state cut to one row": lambda s: s["state"].__setitem__("hands", s["state"]["hands"][:1]),
    "float32 state": lambda s: s["state"].__setitem__("bids", s["state"]["bids"].float()),
    "missing field": lambda s: s["state"].pop("trick"),
    "not a tensor": lambda s: s["state"].__setitem__("phase", [0] * B),
    "overlapping hands": lambda s: s["state"]["hands"].__setitem__((0, 1), s["state"]["hands"][0, 0]),
    "a card lost": lambda s: s["state"]["hands"].__setitem__((0, 0), 0),
    "phase 9": lambda s: s["state"]["phase"].fill_(9),
    "trick card 52": lambda s: s["state"]["trick"].__setitem__((0, 0), 52),
    "tricks do not add up": lambda s: s["state"]["tricks_played"].__setitem__(0, 13),
    "huge score": lambda s: s["state"]["scores"].__setitem__((0, 0), MAX_ABS_SCORE + 1),
    "nan potential": lambda s: s["state"]["potential"].__setitem__((0, 0), float("nan")),
    "pool pointer past the pool": lambda s: s.__setitem__("pool_ptr", torch.tensor(10 ** 9)),
    "bad pool deal": lambda s: s["deal_pool"].__setitem__((0, 0), -1),
    "pool of floats": lambda s: s.__setitem__("deal_pool", s["deal_pool"].float()),
    "generator of the wrong size": lambda s: s.__setitem__("generator", torch.zeros(3, dtype=torch.uint8)),
    "mask of ints": lambda s: s.__setitem__("mask", s["mask"].long()),
    "fixed dealer 7": lambda s: s.__setitem__("fixed_start_dealer", torch.full((B,), 7)),
    "steps negative": lambda s: s.__setitem__("steps", -5),
    "wrong table count": lambda s: s.__setitem__("num_envs", B + 1),
    "not a snapshot": lambda s: s.__setitem__("format", "pickle"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_snapshot_is_refused_and_the_env_unchanged(backend, case):
    env = _played_env(backend)
    good = env.state_dict()
    before = env.state_dict()
    with pytest.raises(VectorEnvError):
        env.load_state_dict(_edited(good, HOSTILE[case]))
    after = env.state_dict()
    for name, value in before["state"].items():
        assert torch.equal(value, after["state"][name]), name
    # and it still plays on
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        env.step(_random_legal(env, g))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fuzzed_snapshots_give_a_named_error_or_a_playable_env(backend):
    """Single cells of a real snapshot set to random values: the load either refuses it with
    VectorEnvError or the tables play on without a crash (no signal: the process survives)."""
    env = _played_env(backend, steps=60)
    good = env.state_dict()
    rng = np.random.default_rng(0)
    names = sorted(good["state"])
    refused = accepted = 0
    for trial in range(300):
        snap = copy.deepcopy(good)
        name = names[rng.integers(len(names))]
        t = snap["state"][name]
        flat = t.view(-1)
        index = int(rng.integers(flat.numel()))
        choice = rng.integers(4)
        value = [-1, 0, int(rng.integers(-100, 100)), int(rng.integers(-2 ** 62, 2 ** 62))][choice]
        flat[index] = value
        try:
            env.load_state_dict(snap)
        except VectorEnvError:
            refused += 1
            continue
        accepted += 1
        g = torch.Generator().manual_seed(trial)
        for _ in range(20):
            mask = env._mask
            if not bool(mask.any(1).all()):
                break
            env.step(_random_legal(env, g))
    assert refused > 0 and accepted > 0


def test_real_snapshots_pass_the_check_all_along():
    for rules in ("standard", "tournament"):
        env = SpadesVectorEnv(B, rules=rules, seed=0)
        env.reset(seed=2, scores=[-150, 0])
        g = torch.Generator().manual_seed(0)
        for step in range(400):
            if step % 10 == 0:
                check_snapshot(env, env.state_dict())
            env.step(_random_legal(env, g))


def _deal_rows():
    env = SpadesVectorEnv(B, seed=0)
    return env.draw_deals(B)[:, :4].clone()


@pytest.mark.parametrize("case", ["overlap", "all bits", "empty hand", "rows", "shape"])
def test_bad_deal_tensors_are_refused(case):
    env = SpadesVectorEnv(B, seed=0)
    env.reset(seed=0)
    deals = _deal_rows()
    if case == "overlap":
        deals[0, 1] = deals[0, 0]
    elif case == "all bits":
        deals[0, 0] = -1
    elif case == "empty hand":
        deals[0, 0] = 0
    elif case == "rows":
        deals = deals[:3]
    else:
        deals = deals[:, :3]
    before = env.state_dict()
    with pytest.raises(VectorEnvError, match="deals"):
        env.reset(deals=deals)
    assert torch.equal(before["state"]["hands"], env.state_dict()["state"]["hands"])


def test_good_deal_tensors_are_taken():
    env = SpadesVectorEnv(B, seed=0)
    deals = _deal_rows()
    env.reset(deals=deals)
    assert torch.equal(env.state.deal, deals)


@pytest.mark.skipif(__import__("spades_env.native", fromlist=["x"]).unavailable_reason() is not None,
                    reason="no native library")
def test_the_c_entry_points_check_their_own_arguments():
    """Called wrongly (by another caller, or a bug on the Python side) the C code returns an error
    code instead of writing anywhere: null pointers and counts out of range, and an action that is
    not an action id reaching the step unchecked (check_actions=False), which steps no table."""
    from spades_env import native
    lib = native.load()
    assert lib.spades_random_legal(None, None, None, 4, 68, 1) == -10
    assert lib.spades_deal_from_keys(None, None, None, -1, 1) == -10
    assert lib.spades_step_all(None, None, None, None, 1, 0, None) == -10
    env = SpadesVectorEnv(8, backend="native", check_actions=False, seed=0)
    env.reset(seed=0)
    before = env.state_dict()
    actions = torch.full((8,), 60, dtype=torch.int64)
    actions[5] = 99
    with pytest.raises(native.NativeEngineError, match=r"action 99 at table 5: not an action id"):
        env.step(actions)
    after = env.state_dict()
    assert all(torch.equal(before["state"][k], after["state"][k]) for k in before["state"])   # nothing stepped


@pytest.mark.skipif(__import__("spades_env.native", fromlist=["x"]).unavailable_reason() is not None,
                    reason="no native library")
def test_the_play_until_loop_checks_its_own_arguments():
    """spades_step_until refuses null buffers and action ids out of range (naming the table), and
    steps no table then; seat codes out of range and seats with no caller are refused before the
    call (tests/spades_env/test_native_arguments.py has the wrappers' checks)."""
    from spades_env import native
    from spades_env.vector_seats import SeatPlayers
    lib = native.load()
    assert lib.spades_step_until(*([None] * 4), 1, 0, *([None] * 9)) == -10
    env = SpadesVectorEnv(8, backend="native", check_actions=False, seed=0)
    players = SeatPlayers(env, ["learner", "random", "learner", "random"], seed=0, native=True)
    obs, mask = players.reset(seed=0)
    before = env.state_dict()
    stepper = env._native
    for kinds in ([-1, 0, 7, 0], [0, 0, 0, 0], [-2, 0, -1, 0], [-1, 1, -1, 1]):   # the last: heuristic, no layout
        with pytest.raises(native.NativeEngineError, match="seat_kind|heuristic_layout"):
            stepper.step_until(mask.long().argmax(1), torch.tensor(kinds), None, players.rng)
    for rng in (players.rng.int(), players.rng[:4], players.rng.repeat(2)[::2]):   # dtype, size, strides
        with pytest.raises(native.NativeEngineError, match=r"rng: expected \(8,\) int64 random states"):
            stepper.step_until(mask.long().argmax(1), torch.tensor([-1, 0, -1, 0]), None, rng)
    actions = mask.long().argmax(1)
    actions[3] = 70
    with pytest.raises(native.NativeEngineError, match=r"action 70 at table 3: not an action id"):
        players.step(actions)
    after = env.state_dict()
    assert all(torch.equal(before["state"][k], after["state"][k]) for k in before["state"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_action_that_is_no_action_id_is_refused_unchecked_too(backend):
    """check_actions=False skips the legality check, not the range: on either backend an id
    outside 0..67 (1000 was recorded as a bid of 948 by the torch step) steps no table."""
    from spades_env.native import NativeEngineError
    env = SpadesVectorEnv(B, backend=backend, check_actions=False, seed=0)
    _, mask = env.reset(seed=0)
    before = env.state_dict()
    for bad in (1000, -1, 68):
        actions = mask.long().argmax(1)
        actions[2] = bad
        with pytest.raises((VectorEnvError, NativeEngineError), match=rf"action {bad} at table 2: not an action id"):
            env.step(actions)
    after = env.state_dict()
    assert all(torch.equal(before["state"][k], after["state"][k]) for k in before["state"])
