"""The public wrappers of the C library (spades_env/native/__init__.py) check their arguments
before the call: shapes, dtypes, devices, contiguity and matching batch sizes. The C loops
trust the sizes they are given, so a mismatch read or wrote out of bounds (issue 42:
``heuristic_codes(obs(200000, 742), mask(1, 68), layout)`` segfaulted; smaller mismatches read
stray memory and returned status 0). Each is now a NativeEngineError naming the argument and
what was expected. CI runs this file under ASan/UBSan (.ci/run), where any read out of bounds
would abort."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spades_env import native
from spades_env.native import NativeEngineError, deal_from_keys, heuristic_codes, heuristic_layout, random_legal
from spades_env.observation import layout_for
from spades_env.rules import make_rules
from spades_env.vector import SpadesVectorEnv

pytestmark = pytest.mark.skipif(native.unavailable_reason() is not None, reason="no native library")

LAYOUT = heuristic_layout(layout_for(make_rules("standard"))).numpy()
SIZE = int(LAYOUT[-1])


def _rows(count: int, size: int = SIZE):
    return np.zeros((count, size), dtype=np.float32), np.ones((count, 68), dtype=np.uint8)


def _bad_layout(edit):
    layout = LAYOUT.copy()
    edit(layout)
    return layout


HEURISTIC_CASES = {
    # the cases, at a size that keeps the test small: more observation rows than mask rows,
    # and observations narrower than the layout says
    "mask rows fewer than obs rows": (lambda: (_rows(64)[0], _rows(1)[1], LAYOUT, 1),
                                      r"mask: expected a C-contiguous \(64, 68\) uint8"),
    "obs narrower than the layout": (lambda: (np.zeros((1000, 1), np.float32), _rows(1000)[1], LAYOUT, 1),
                                     rf"obs: expected a C-contiguous \(rows, {SIZE}\) float32 array"),
    "obs wider than the layout": (lambda: (_rows(4, SIZE + 1)[0], _rows(4)[1], LAYOUT, 1), r"obs: expected"),
    "obs float64": (lambda: (_rows(4)[0].astype(np.float64), _rows(4)[1], LAYOUT, 1), r"obs: .*of shape \(4, \d+\) float64"),
    "obs not contiguous": (lambda: (np.zeros((4, 2 * SIZE), np.float32)[:, ::2], _rows(4)[1], LAYOUT, 1),
                           r"obs: .*not contiguous"),
    "obs one row, 1-d": (lambda: (np.zeros(SIZE, np.float32), _rows(1)[1], LAYOUT, 1), r"obs: .*of shape \(\d+,\)"),
    "obs a list": (lambda: ([[0.0] * SIZE], _rows(1)[1], LAYOUT, 1), r"obs: .*got list"),
    "obs a tensor": (lambda: (torch.zeros(1, SIZE), _rows(1)[1], LAYOUT, 1), r"obs: .*of shape \(1, \d+\) torch.float32"),
    "mask int64": (lambda: (_rows(4)[0], _rows(4)[1].astype(np.int64), LAYOUT, 1), r"mask: .*int64"),
    "mask narrow": (lambda: (_rows(4)[0], np.ones((4, 52), np.uint8), LAYOUT, 1), r"mask: .*of shape \(4, 52\)"),
    "mask more rows": (lambda: (_rows(2)[0], _rows(9)[1], LAYOUT, 1), r"mask: expected a C-contiguous \(2, 68\)"),
    "mask not contiguous": (lambda: (_rows(4)[0], np.ones((68, 4), np.uint8).T, LAYOUT, 1), r"mask: .*not contiguous"),
    "layout int32": (lambda: (*_rows(2), LAYOUT.astype(np.int32), 1), r"layout_array: .*int32"),
    "layout short": (lambda: (*_rows(2), LAYOUT[:-1].copy(), 1), r"layout_array: expected a C-contiguous \(16,\)"),
    "layout a tensor": (lambda: (*_rows(2), torch.from_numpy(LAYOUT), 1), r"layout_array: .*torch.int64"),
    "layout block past the end": (lambda: (*_rows(2), _bad_layout(lambda a: a.__setitem__(0, 10 ** 6)), 1),
                                  r"layout_array: expected an observation layout"),
    "layout size too large": (lambda: (*_rows(2), _bad_layout(lambda a: a.__setitem__(-1, 2 * 10 ** 6)), 1),
                              r"obs: expected a C-contiguous \(rows, 2000000\)"),
    "layout negative offset": (lambda: (*_rows(2), _bad_layout(lambda a: a.__setitem__(3, -5)), 1),
                               r"layout_array: expected an observation layout"),
    "threads 0": (lambda: (*_rows(2), LAYOUT, 0), r"threads: expected an integer >= 1, got 0"),
    "threads text": (lambda: (*_rows(2), LAYOUT, "2"), r"threads: expected an integer >= 1, got '2'"),
    "threads bool": (lambda: (*_rows(2), LAYOUT, True), r"threads: expected an integer >= 1, got True"),
}


@pytest.mark.parametrize("case", sorted(HEURISTIC_CASES))
def test_heuristic_codes_refuses_arguments_that_do_not_fit(case):
    make, message = HEURISTIC_CASES[case]
    with pytest.raises(NativeEngineError, match="heuristic_codes: " + message):
        heuristic_codes(*make())


def test_heuristic_codes_takes_what_fits():
    """Real positions decide as before; a bool mask is the same bytes as a 0/1 uint8 one."""
    env = SpadesVectorEnv(16, seed=0)
    obs, mask = env.reset(seed=0)
    rows, legal = obs.numpy(), mask.numpy()
    status, out = heuristic_codes(rows, legal.astype(np.uint8), LAYOUT)
    assert status == 0 and legal[np.arange(16), out].all()
    assert np.array_equal(heuristic_codes(rows, legal, LAYOUT, threads=2)[1], out)
    status, none = heuristic_codes(rows[:0], legal[:0], LAYOUT)
    assert status == 0 and none.shape == (0,)


MASK = torch.ones(4, 68, dtype=torch.bool)
RANDOM_LEGAL_CASES = {
    "1-d mask": ((MASK[0], torch.rand(68)), r"mask: expected a \(B, actions\) tensor on the CPU, got a tensor of shape \(68,\)"),
    "numpy mask": ((MASK.numpy(), torch.rand(4)), r"mask: expected .*got an array of shape \(4, 68\) bool"),
    "no actions": ((MASK[:, :0], torch.rand(4)), r"mask: expected a \(B, actions\) tensor with at least one action"),
    "fewer uniforms": ((MASK, torch.rand(3)), r"uniform: expected one uniform per row of the mask \(4\), got 3"),
    "more uniforms": ((MASK, torch.rand(40)), r"uniform: expected one uniform per row of the mask \(4\), got 40"),
    "2-d uniforms": ((MASK, torch.rand(4, 1)), r"uniform: expected a \(4,\) float tensor on the CPU"),
    "list uniforms": ((MASK, [0.5] * 4), r"uniform: expected .*got list"),
    "threads 0": ((MASK, torch.rand(4), 0), r"threads: expected an integer >= 1, got 0"),
    "threads -3": ((MASK, torch.rand(4), -3), r"threads: expected an integer >= 1, got -3"),
}


@pytest.mark.parametrize("case", sorted(RANDOM_LEGAL_CASES))
def test_random_legal_names_the_bad_argument(case):
    args, message = RANDOM_LEGAL_CASES[case]
    with pytest.raises(NativeEngineError, match="random_legal: " + message):
        random_legal(*args)


KEYS, DEALERS = torch.rand(4, 52), torch.zeros(4, dtype=torch.int64)
DEAL_CASES = {
    "51 keys": ((KEYS[:, :51], DEALERS), r"keys: expected \(count, 52\) float32 keys in \[0, 1\) on the CPU, got "
                                         r"a tensor of shape \(4, 51\)"),
    "float64 keys": ((KEYS.double(), DEALERS), r"keys: expected .*torch.float64"),
    "1-d keys": ((KEYS[0], DEALERS[:1]), r"keys: expected .*of shape \(52,\)"),
    "negative key": ((KEYS - 1, DEALERS), r"keys: expected .*got a key outside \[0, 1\)"),
    "NaN key": ((torch.full((4, 52), float("nan")), DEALERS), r"keys: .*got a key outside \[0, 1\)"),
    "fewer dealers": ((KEYS, DEALERS[:3]), r"dealers: expected \(4,\) or \(4, 1\) integer seats on the CPU, one per "
                                           r"deal, got a tensor of shape \(3,\)"),
    "float dealers": ((KEYS, DEALERS.float()), r"dealers: expected .*torch.float32"),
    "dealer 4": ((KEYS, DEALERS + 4), r"dealers: expected seats 0..3, got 4"),
    "dealer -1": ((KEYS, DEALERS - 1), r"dealers: expected seats 0..3, got -1"),
    "list dealers": ((KEYS, [0, 1, 2, 3]), r"dealers: expected .*got list"),
    "threads 0": ((KEYS, DEALERS, 0), r"threads: expected an integer >= 1, got 0"),
}


@pytest.mark.parametrize("case", sorted(DEAL_CASES))
def test_deal_from_keys_names_the_bad_argument(case):
    args, message = DEAL_CASES[case]
    with pytest.raises(NativeEngineError, match="deal_from_keys: " + message):
        deal_from_keys(*args)


def test_the_native_step_names_bad_actions():
    """NativeStepper.step is reached through env.step, which converts the actions; called
    directly, anything but (B,) int64 on the CPU is refused before the C step reads it."""
    env = SpadesVectorEnv(4, backend="native", seed=0)
    _, mask = env.reset(seed=0)
    good = mask.long().argmax(1)
    for bad, got in ((good[:3], r"a tensor of shape \(3,\)"), (good.int(), r"a tensor of shape \(4,\) torch.int32"), (good.tolist(), "list")):
        with pytest.raises(NativeEngineError, match=rf"NativeStepper.step: actions: expected \(4,\) int64 action ids "
                                                    rf"on the CPU, got {got}"):
            env._native.step(bad)


def test_the_play_until_loop_names_bad_arguments():
    from spades_env.vector_seats import SeatPlayers
    env = SpadesVectorEnv(8, backend="native", check_actions=False, seed=0)
    players = SeatPlayers(env, ["learner", "heuristic", "learner", "random"], seed=0, native=True)
    _, mask = players.reset(seed=0)
    stepper, actions, kinds, layout = env._native, mask.long().argmax(1), players._seat_kind, players._layout
    cases = [
        ((actions[:5], kinds, layout, players.rng), r"actions: expected \(8,\) integer action ids on the CPU"),
        ((actions.float(), kinds, layout, players.rng), r"actions: .*torch.float32"),
        ((actions, kinds.int(), layout, players.rng), r"seat_kind: expected \(4,\) int64 on the CPU"),
        ((actions, kinds[:3], layout, players.rng), r"seat_kind: .*of shape \(3,\)"),
        ((actions, torch.tensor([-1, 0, 7, 0]), layout, players.rng), r"seat_kind: expected -1 .*got \[-1, 0, 7, 0\]"),
        ((actions, torch.tensor([0, 0, 1, 0]), layout, players.rng), r"seat_kind: .*at least one.*got \[0, 0, 1, 0\]"),
        ((actions, kinds, None, players.rng), r"heuristic_layout: expected heuristic_layout\(env.layout\)"),
        ((actions, kinds, layout[:-1], players.rng), r"heuristic_layout: .*of shape \(15,\)"),
        ((actions, kinds, torch.where(torch.arange(16) == 15, 10 ** 6, layout), players.rng),
         r"heuristic_layout: expected .*for the env's \d+-cell observation"),
        ((actions, kinds, layout, players.rng[:4]), r"rng: expected \(8,\) int64 random states, contiguous"),
        ((actions, kinds, layout, players.rng.int()), r"rng: .*torch.int32"),
        ((actions, kinds, layout, players.rng.repeat(2)[::2]), r"rng: .*not contiguous"),
    ]
    before = env.state_dict()
    for args, message in cases:
        with pytest.raises(NativeEngineError, match="step_until: " + message):
            stepper.step_until(*args)
    after = env.state_dict()
    assert all(torch.equal(before["state"][k], after["state"][k]) for k in before["state"])   # nothing stepped
