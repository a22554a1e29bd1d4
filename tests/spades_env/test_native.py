"""The batched engine's C step (``backend="native"``) gives exactly what the torch step and the
AEC env give, in every partnership preset, and refuses what it cannot do."""

import shutil

import pytest
import torch

from spades_env.vector import SpadesVectorEnv, VectorEnvError

from helpers_vector import compare_with_vector, play_aec_games
from test_vector import DIFFERENTIAL_CASES

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="backend='native' needs a C compiler")


@pytest.mark.parametrize("kwargs,count", DIFFERENTIAL_CASES, ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_native_engine_matches_aec_env(kwargs, count):
    """The AEC env's games replayed through the C step: every observation, mask, reward, end and
    final score agrees (a third of the torch engine's games per case)."""
    games = play_aec_games(max(50, count // 3), seed=101, **kwargs)
    assert compare_with_vector(games, backend="native", **kwargs)["decisions"] > len(games) * 30


NATIVE_CASES = [
    {"rules": "standard"},
    {"rules": "standard", "episode": "hand", "reward": "team_diff", "shaping": 1.0, "obs_dtype": "bfloat16"},
    {"rules": "standard", "bids_may_total_13": False, "blind_nil_pass": 3, "blind_nil_min_deficit": 0,
     "max_hands": 2, "win_bonus": 1.0, "max_team_bid": 11},
    {"rules": "standard", "reward": "win", "two_of_clubs_leads": True, "no_spades_first_trick": True},
    {"rules": "tournament", "bag_limit": 5, "bag_penalty": 50, "nil_tricks_count_for_partner": True},
    {"rules": "openspiel", "min_team_bid": 4, "spades_lead": "forced_only"},
    {"rules": "basic", "bags": False},
    {"rules": "standard", "reward": "team_diff", "bag_cost": "game", "max_hands": 6},
    {"rules": "short", "shaping": 1.0, "bids_may_total_13": False},
    {"rules": "short_signals", "blind_nil": True, "blind_nil_min_deficit": 0, "max_team_bid": 5},
    {"rules": "standard", "signals": 3, "episode": "hand"},
]


@pytest.mark.parametrize("kwargs", NATIVE_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("threads", [1, 3])
def test_native_step_equals_torch_step_state_for_state(kwargs, threads):
    """Hundreds of random games (nil and blind nil often, starting 150 behind so that blind nil is
    offered): after every step the whole state, the observation, mask, rewards, ends, final
    scores, winners and the deal stream equal the torch engine's, on one thread or several."""
    B = 48
    torch_env = SpadesVectorEnv(B, seed=5, **kwargs)
    native_env = SpadesVectorEnv(B, seed=5, backend="native", threads=threads, **kwargs)
    outs = [env.reset(scores=[0, 150]) for env in (torch_env, native_env)]
    gen = torch.Generator().manual_seed(3)
    episodes = 0
    for t in range(360):
        assert torch.equal(outs[0][0], outs[1][0]), f"step {t}: observation"
        assert outs[1][1].dtype == torch.bool and torch.equal(outs[0][1], outs[1][1]), f"step {t}: mask"
        for field in torch_env.state.__dataclass_fields__:
            assert torch.equal(getattr(torch_env.state, field), getattr(native_env.state, field)), f"step {t}: {field}"
        assert int(torch_env._pool_ptr) == int(native_env._pool_ptr)
        noise = torch.rand(B, torch_env.num_actions, generator=gen)
        noise[:, 52] += 0.3
        noise[:, 66] += 0.6
        actions = torch.where(outs[0][1], noise, -1.0).argmax(1)
        outs = [env.step(actions) for env in (torch_env, native_env)]
        for i, name in ((2, "rewards"), (3, "done")):
            assert outs[1][i].dtype == outs[0][i].dtype and torch.equal(outs[0][i], outs[1][i]), f"step {t}: {name}"
        for key in ("final_scores", "winner"):
            assert torch.equal(outs[0][4][key], outs[1][4][key]), f"step {t}: {key}"
        episodes += int(outs[0][3].sum())
    assert torch.equal(torch_env.state_tensor(), native_env.state_tensor())
    assert torch.equal(torch_env.observe_seat(2), native_env.observe_seat(2))
    assert episodes >= 20


def test_snapshots_move_between_backends_and_set_start_applies():
    """A native env continues exactly from a torch env's snapshot (and back), and set_start /
    explicit deals reach the C step."""
    B = 16
    torch_env = SpadesVectorEnv(B, seed=9, episode="hand")
    native_env = SpadesVectorEnv(B, seed=1, episode="hand", backend="native")
    gen = torch.Generator().manual_seed(0)
    obs, mask = torch_env.reset()
    native_env.reset()
    for _ in range(30):
        obs, mask, *_ = torch_env.step(torch.multinomial(mask.float(), 1, generator=gen)[:, 0])
    native_env.load_state_dict(torch_env.state_dict())
    for env in (torch_env, native_env):
        env.set_start(scores=[40, 190], bags=[3, 7], tables=torch.arange(B) % 2 == 0)
    for t in range(200):
        actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
        a, b = torch_env.step(actions), native_env.step(actions)
        for x, y in zip(a[:4], b[:4]):
            assert torch.equal(x, y), f"step {t}"
        mask = a[1]
    assert bool((torch_env.state.scores[::2].sum(1) != 0).any())
    back = SpadesVectorEnv(B, seed=2, episode="hand")
    back.reset()
    back.load_state_dict(native_env.state_dict())
    actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
    assert torch.equal(back.step(actions)[0], native_env.step(actions)[0])


def test_a_snapshot_loads_again_after_native_steps():
    """The C step works in place: a loaded snapshot must not be stepped with it (so it can be
    loaded twice), and a state field cannot be swapped behind the stepper's back."""
    env = SpadesVectorEnv(8, seed=4, backend="native")
    obs, mask = env.reset()
    snapshot = env.state_dict()
    kept = {name: t.clone() for name, t in snapshot["state"].items()}
    actions = torch.multinomial(mask.float(), 1, generator=torch.Generator().manual_seed(0))[:, 0]
    outs = []
    for _ in range(2):
        env.load_state_dict(snapshot)
        outs.append(env.step(actions)[0])
    assert torch.equal(outs[0], outs[1])
    assert all(torch.equal(kept[name], t) for name, t in snapshot["state"].items())
    with pytest.raises(AttributeError):
        env.state.hands = env.state.hands.clone()


def test_native_deals_equal_the_torch_deals():
    """Deals ranked in C equal a stable argsort's, ties included, and both backends draw the
    same deal stream from a seed."""
    from spades_env.native import deal_from_keys
    gen = torch.Generator().manual_seed(2)
    keys = torch.rand(500, 52, generator=gen)
    keys[0, 5] = keys[0, 40]                           # a tie
    keys[1] = 0.25                                     # all tied: cards in index order
    keys[2] = torch.rand(52, generator=gen).mul(8).floor().div(8)   # many ties
    dealers = torch.randint(0, 4, (500, 1), generator=gen)
    order = keys.argsort(dim=1, stable=True)
    expected = torch.cat([(torch.ones_like(order) << order).view(500, 4, 13).sum(2), dealers], 1)
    for threads in (1, 3):
        assert torch.equal(deal_from_keys(keys, dealers, threads), expected)
    assert int(expected[1, 0]) == (1 << 13) - 1
    torch_env, native_env = SpadesVectorEnv(4, seed=11), SpadesVectorEnv(4, seed=11, backend="native")
    assert torch.equal(torch_env.draw_deals(3000), native_env.draw_deals(3000))


def test_the_compiled_in_layout_is_checked():
    """engine.c has the observation's layout compiled in; an env with another one is refused."""
    import ctypes
    env = SpadesVectorEnv(2, backend="native")
    stepper = env._native
    params = stepper.params.clone()
    assert stepper.lib.spades_native_check_layout(ctypes.c_void_p(params.data_ptr())) == 1
    from spades_env.native import PARAMS
    params[PARAMS.index("o_played")] += 1
    assert stepper.lib.spades_native_check_layout(ctypes.c_void_p(params.data_ptr())) == 0
    signals = SpadesVectorEnv(2, rules="short_signals", backend="native")._native.params   # 6 tricks, 4 messages
    assert stepper.lib.spades_native_check_layout(ctypes.c_void_p(signals.data_ptr())) == 1
    for name, change in (("o_messages", 1), ("signals", 1), ("tricks_per_hand", -1), ("num_actions", 1)):
        bad = signals.clone()
        bad[PARAMS.index(name)] += change
        assert stepper.lib.spades_native_check_layout(ctypes.c_void_p(bad.data_ptr())) == 0, name


def test_native_random_legal_matches_the_torch_rule():
    from spades_env.native import random_legal
    gen = torch.Generator().manual_seed(0)
    mask = torch.rand(3000, 68, generator=gen) < torch.rand(3000, 1, generator=gen)
    mask[:, 7] = True
    mask[-1] = False                                   # no legal action: -1
    u = torch.rand(3000, generator=gen)
    seen = mask.view(torch.uint8).cumsum(1, dtype=torch.int32)
    count = seen[:, -1:]
    k = torch.minimum((u[:, None] * count).to(torch.int32), (count - 1).clamp(min=0))
    expected = torch.searchsorted(seen, k, right=True)[:, 0]
    expected[-1] = -1
    for threads in (1, 2):
        assert torch.equal(random_legal(mask, u, threads), expected)
    assert torch.equal(random_legal(mask.to(torch.int8) * 2, u), expected)     # any nonzero cell is legal


def test_native_backend_errors_are_clear():
    with pytest.raises(VectorEnvError, match="backend='nativ'"):
        SpadesVectorEnv(4, backend="nativ")
    with pytest.raises(VectorEnvError, match="compile=True"):
        SpadesVectorEnv(4, backend="native", compile=True)
    with pytest.raises(VectorEnvError, match="threads=0"):
        SpadesVectorEnv(4, backend="native", threads=0)
    env = SpadesVectorEnv(4, backend="native", seed=0)
    with pytest.raises(VectorEnvError, match="before reset"):
        env.step(torch.zeros(4, dtype=torch.int64))
    env.reset()
    with pytest.raises(VectorEnvError, match="illegal actions"):
        env.step(torch.full((4,), 3, dtype=torch.int64))


def test_native_needs_the_cpu(monkeypatch):
    from spades_env import native
    env = SpadesVectorEnv(2, seed=0)
    monkeypatch.setattr(env, "device", torch.device("meta"))
    with pytest.raises(native.NativeEngineError, match="runs on the CPU"):
        native.NativeStepper(env)


def test_a_missing_compiler_is_reported(monkeypatch, tmp_path):
    from spades_env import native
    monkeypatch.setenv("SPADES_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-compiler-xyz")
    with pytest.raises(native.NativeEngineError, match="no-such-compiler-xyz"):
        native.build()


@pytest.mark.skipif(shutil.which("false") is None, reason="needs the 'false' command")
def test_a_failing_compiler_is_reported(monkeypatch, tmp_path):
    from spades_env import native
    monkeypatch.setenv("SPADES_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "false")          # a "compiler" that always fails
    with pytest.raises(native.NativeEngineError, match="compiling engine.c, heuristic.c, search.c, solver.c with 'false' failed"):
        native.build()


def test_an_unwritable_cache_is_reported(monkeypatch, tmp_path):
    from spades_env import native
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPADES_NATIVE_CACHE", str(blocker / "cache"))
    with pytest.raises(native.NativeEngineError, match="SPADES_NATIVE_CACHE"):
        native.build()


def test_the_code_without_avx_gives_the_same_values(tmp_path):
    """engine.c's paths for CPUs without AVX (built with SPADES_NATIVE_CFLAGS=-mno-avx, in a
    fresh process so that it loads that library): the same states, observations and picks."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = {**os.environ, "SPADES_NATIVE_CFLAGS": "-mno-avx -mno-avx2", "SPADES_NATIVE_CACHE": str(tmp_path)}
    tests = Path(__file__).parent
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests / "test_native.py"),
                           "-k", "(state_for_state and 3- and rules and basic) or random_legal_matches or deals_equal"],
                          env=env, cwd=tests.parent, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "3 passed" in done.stdout
    assert len(list(tmp_path.glob("spades_native_*.so"))) == 1


def _step_in_forked_child(queue):
    torch.set_num_threads(1)                 # what torch itself needs in a forked child
    from spades_env.native import random_legal
    env = SpadesVectorEnv(300, backend="native", threads=2, seed=1)
    obs, mask = env.reset()
    for _ in range(20):
        obs, mask, *_ = env.step(random_legal(mask, torch.rand(300), 2))
    env._refill_pool(force=True)
    queue.put(float(obs.sum()))


def test_a_forked_child_steps_on_one_thread():
    """GNU OpenMP's threads do not survive a fork: in a child forked after the parent ran the C
    step on two threads, the step, the picker and the deals run on one thread instead of hanging."""
    import multiprocessing
    env = SpadesVectorEnv(300, backend="native", threads=2)
    obs, mask = env.reset()
    for _ in range(20):
        obs, mask, *_ = env.step(torch.multinomial(mask.float(), 1)[:, 0])
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_step_in_forked_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) > 0
    finally:
        child.join(timeout=5)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


def test_unavailable_reason_says_why_the_c_step_cannot_run(tmp_path, monkeypatch):
    """What spades-bench and env_backend=auto ask: None where it builds, else the first line of why."""
    from spades_env import native

    assert native.unavailable_reason() is None
    monkeypatch.setenv("CC", "no-such-compiler-here")
    monkeypatch.setenv("SPADES_NATIVE_CACHE", str(tmp_path / "cache"))
    assert native.unavailable_reason().startswith("backend='native' needs a C compiler: 'no-such-compiler-here'")
