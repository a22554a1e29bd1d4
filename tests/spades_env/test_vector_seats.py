"""Playing the other seats of the batched tables (spades_env/vector_seats.py): the C loop
(engine.c spades_step_until) makes exactly the moves, deals, rewards and ends of the readable
masked steps, on either engine backend, in every partnership preset; its random seats are the
splitmix64 stream they claim to be; bad seats are refused."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from spades_env.native import random_legal
from spades_env.vector import SpadesVectorEnv, VectorEnvError
from spades_env.vector_seats import SeatPlayers, next_uniform, pick_kth_legal, seed_states

from test_native import NATIVE_CASES

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="the C loop needs a C compiler")

SEATINGS = [
    ["learner", "random", "random", "random"],
    ["learner", "heuristic", "learner", "heuristic"],
    ["random", "heuristic", "learner", "random"],
    ["heuristic", "learner", "heuristic", "learner"],
]


def _play(native: bool, backend: str, seats, kwargs: dict, tables: int = 48, steps: int = 160, threads: int = 2,
          options: dict | None = None):
    kwargs = dict(kwargs)
    engine = SpadesVectorEnv(tables, seed=5, backend=backend, check_actions=False, threads=threads, **kwargs)
    players = SeatPlayers(engine, seats, seed=5, native=native)
    obs, mask = players.reset(seed=5, **(options or {}))
    learner = players.learner_seats
    generator = torch.Generator().manual_seed(9)
    trail = [(obs.clone(), mask.clone())]
    for _ in range(steps):
        assert learner[engine.to_act].all()
        actions = random_legal(mask, torch.rand(tables, generator=generator))
        obs, mask, rewards, ended, info = players.step(actions)
        trail.append((obs.clone(), mask.clone(), rewards.clone(), ended.clone(), info["final_scores"].clone(),
                      info["winner"].clone(), info["moves"].clone(), engine.state.scores.clone()))
    return trail


def _assert_same(a, b):
    assert len(a) == len(b)
    for step, (x, y) in enumerate(zip(a, b)):
        for field, (p, q) in enumerate(zip(x, y)):
            assert torch.equal(p, q), f"step {step}, field {field}"


@pytest.mark.parametrize("seats", SEATINGS, ids=lambda s: "-".join(x[0] for x in s))
def test_the_c_loop_equals_the_masked_steps(seats):
    """Pool deals, whole games, two threads: every observation, mask, reward sum, end, final
    score and move count agrees, and the torch engine's masked steps agree too."""
    fast = _play(True, "native", seats, {"rules": "standard"}, tables=24)
    _assert_same(fast, _play(False, "native", seats, {"rules": "standard"}, tables=24))
    _assert_same(fast, _play(False, "torch", seats, {"rules": "standard"}, tables=24, steps=60)[:61] + fast[61:])
    assert sum(int(step[3].sum()) for step in fast[1:]) > 0            # episodes ended on the way


@pytest.mark.parametrize("kwargs", NATIVE_CASES, ids=lambda v: str(v))
def test_the_c_loop_equals_the_masked_steps_in_every_preset(kwargs):
    seats = ["learner", "heuristic", "random", "heuristic"]
    _assert_same(_play(True, "native", seats, kwargs, steps=100, threads=3),
                 _play(False, "native", seats, kwargs, steps=100, threads=1))


def test_given_deals_and_one_thread_agree_too():
    deals = np.random.default_rng(3).permutation(np.tile(np.arange(52), (16, 1)).T).T
    hands = [[[sorted(int(c) for c in row[13 * s:13 * s + 13]) for s in range(4)] for row in deals[t::16]]
             for t in range(16)]      # 16 tables, one deal each, then the pool
    options = {"deals": [h[0] for h in hands], "dealer": [t % 4 for t in range(16)]}
    seats = ["random", "learner", "random", "heuristic"]
    _assert_same(_play(True, "native", seats, {"episode": "hand"}, tables=16, threads=1, options=options),
                 _play(False, "torch", seats, {"episode": "hand"}, tables=16, threads=1, options=options))


def test_the_random_seats_are_splitmix64():
    """next_uniform is splitmix64 (the top 24 bits of each output), computed here with Python ints."""
    state = torch.tensor([0, 1234567, -5], dtype=torch.int64)
    ints = [0, 1234567, (1 << 64) - 5]
    for _ in range(5):
        uniform = next_uniform(state)
        for i in range(3):
            ints[i] = (ints[i] + 0x9E3779B97F4A7C15) % (1 << 64)
            z = ints[i]
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % (1 << 64)
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % (1 << 64)
            z ^= z >> 31
            assert float(uniform[i]) == (z >> 40) / float(1 << 24)
    assert state.tolist() == [v - (1 << 64) if v >= 1 << 63 else v for v in ints]


def test_the_random_seats_pick_uniformly():
    """Opening bids of random seats: each legal bid about equally often."""
    engine = SpadesVectorEnv(4000, seed=1, backend="native", check_actions=False, rules="basic")
    players = SeatPlayers(engine, ["learner", "random", "random", "random"], seed=2, native=True)
    players.reset(seed=2)
    bids = engine.state.bids[engine.state.bids >= 0]
    counts = torch.bincount(bids, minlength=14).double()
    assert counts[0] == 0                                     # basic: no nil; every bid 1..13 is legal to them
    counts = counts[1:]
    expected = counts.sum() / 13
    assert (((counts - expected) ** 2) / expected).sum() < 40      # chi-square, 12 dof: p ~ 1e-4


def test_pick_kth_legal_is_random_legal():
    generator = torch.Generator().manual_seed(0)
    mask = torch.rand(500, 68, generator=generator) < 0.2
    mask[:, 3] = True
    uniform = torch.rand(500, generator=generator)
    assert torch.equal(pick_kth_legal(mask, uniform), random_legal(mask, uniform))


def test_seed_states_are_reproducible():
    assert torch.equal(seed_states(7, 10), seed_states(7, 10))
    assert not torch.equal(seed_states(7, 10), seed_states(8, 10))


def test_bad_seats_are_refused():
    engine = SpadesVectorEnv(4, seed=0, backend="native")
    with pytest.raises(VectorEnvError, match="one of learner, random, heuristic"):
        SeatPlayers(engine, ["learner", "rnd", "random", "random"])
    with pytest.raises(VectorEnvError, match="4 seats"):
        SeatPlayers(engine, ["learner", "random"])
    with pytest.raises(VectorEnvError, match="must be 'learner'"):
        SeatPlayers(engine, ["random"] * 4)
    with pytest.raises(VectorEnvError, match="native=True"):
        SeatPlayers(engine, ["learner", lambda o, m: m.long().argmax(1), "random", "random"], native=True)
    with pytest.raises(VectorEnvError, match="expected a SpadesVectorEnv"):
        SeatPlayers(object(), ["learner"] * 4)
    players = SeatPlayers(engine, ["learner", "random", "random", "random"])
    with pytest.raises(VectorEnvError, match="before reset"):
        players.step(torch.zeros(4, dtype=torch.int64))


def test_a_policy_seat_is_played_by_the_masked_steps():
    engine = SpadesVectorEnv(8, seed=0, backend="native", check_actions=False)
    calls = []

    def lowest_legal(obs, mask):
        calls.append(obs.shape[0])
        return mask.long().argmax(1)

    players = SeatPlayers(engine, ["learner", lowest_legal, "random", lowest_legal], seed=0)
    assert not players.native
    obs, mask = players.reset(seed=0)
    for _ in range(20):
        obs, mask, *_ = players.step(mask.long().argmax(1))
        assert (engine.to_act == 0).all()
    assert calls


# A batched policy's actions are checked like the learner's: wrong dtype or shape, ids that are
# no action, and illegal moves are refused naming the seat (each once stalled a table for ever,
# or cast 52.7 / a 0-d tensor / 1000 into a wrong move that corrupted the table).
BAD_POLICIES = {
    "always_zero": (lambda obs, mask: torch.zeros(mask.shape[0], dtype=torch.int64),
                    r"illegal policy action 0 at table \d+ \(seat \d to act\)"),
    "floats": (lambda obs, mask: torch.full((mask.shape[0],), 52.7), r"dtype torch.float32: expected \(6,\) integer"),
    "numpy_floats": (lambda obs, mask: np.full(mask.shape[0], 53.0), r"dtype torch.float64: expected \(6,\) integer"),
    "scalar_tensor": (lambda obs, mask: torch.tensor(52), r"shape \(\) and dtype torch.int64: expected \(6,\)"),
    "too_few": (lambda obs, mask: torch.full((2,), 52), r"shape \(2,\) and dtype torch.int64: expected \(6,\)"),
    "bools": (lambda obs, mask: mask[:, 0], r"dtype torch.bool: expected \(6,\) integer"),
    "no_action_id": (lambda obs, mask: torch.full((mask.shape[0],), 1000), r"illegal policy action 1000 at table"),
    "negative": (lambda obs, mask: torch.full((mask.shape[0],), -1), r"illegal policy action -1 at table"),
    "random_ids": (lambda obs, mask: torch.randint(0, 68, (mask.shape[0],), generator=torch.Generator().manual_seed(1)),
                   r"illegal policy action \d+ at table \d+ \(seat \d to act\); legal there: \[\d"),
    "none": (lambda obs, mask: None, r"policy \(seat \d to act\): actions=.*expected \(6,\) integer action ids"),
    "text": (lambda obs, mask: ["AS"] * mask.shape[0], r"policy \(seat \d to act\): actions=.*expected \(6,\) integer"),
}


def _within(seconds: int):
    """Fail (rather than hang the suite) if the block runs longer than ``seconds``."""
    import contextlib
    import signal

    @contextlib.contextmanager
    def guard():
        def stop(signum, frame):
            raise AssertionError(f"did not return within {seconds} s")
        previous = signal.signal(signal.SIGALRM, stop)
        signal.alarm(seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    return guard()


@pytest.mark.parametrize("backend", ["torch", "native"])
@pytest.mark.parametrize("name", sorted(BAD_POLICIES))
def test_a_bad_policy_opponent_is_refused_naming_its_seat(name, backend):
    """Through the gymnasium view, on either engine: refused at once, and the tables are left
    with 52 cards each (nothing was played from the bad actions)."""
    from spades_env.vector_gym import SpadesGymVectorEnv

    policy, message = BAD_POLICIES[name]
    envs = SpadesGymVectorEnv(6, seat=0, opponents=policy, partner="random", seed=3, backend=backend)
    with _within(60), pytest.raises(VectorEnvError, match=message):
        _, info = envs.reset(seed=3)
        for _ in range(60):          # bids and cards: every kind of decision reaches the policy
            legal = info["action_mask"].astype(bool)
            _, _, _, _, info = envs.step(legal.argmax(1))
    state = envs.engine.state
    held = [bin(int(h)).count("1") for h in (state.hands | state.played).flatten()]
    assert sum(held) == 52 * 6


def test_a_good_policy_opponent_still_plays_whole_games():
    """The checks refuse nothing legal: a policy that picks the first legal action plays on."""
    from spades_env.vector_gym import SpadesGymVectorEnv

    first_legal = lambda obs, mask: mask.to(torch.uint8).argmax(1)       # noqa: E731
    envs = SpadesGymVectorEnv(6, seat=1, opponents=first_legal, seed=3, backend="native")
    _, info = envs.reset(seed=3)
    ended = 0
    for _ in range(300):
        _, _, terminated, _, info = envs.step(info["action_mask"].astype(bool).argmax(1))
        ended += int(terminated.sum())
    assert ended > 0
