"""The batched engine's step in C, for ``SpadesVectorEnv(..., backend="native")`` on the CPU.

``engine.c`` is a second implementation of :meth:`SpadesVectorEnv._full_step` that steps one
table at a time in a tight loop and writes the observation and mask in the same pass: on a
CPU that is several times faster than the torch step, compiled or not (the torch step stays
the reference, and the only path on a GPU). It works in place on the env's state tensors, so
``reset``, ``observe_seat``, ``state_tensor`` and snapshots are unchanged; tests/spades_env/test_native.py
checks it against the torch step in every partnership preset.

The C file is compiled on first use with the system C compiler (``$CC``, else ``cc``) into a
cache folder (``$SPADES_NATIVE_CACHE``, else ``~/.cache/spades_env``), keyed by the source,
the flags (``$SPADES_NATIVE_CFLAGS`` adds some) and the CPU, and loaded with ctypes. Several
threads share the tables (``threads``, with OpenMP; where the compiler has no OpenMP the
library is built without it and runs on one thread; in a process forked from one that ran it,
it runs on one thread too, since OpenMP's threads do not survive a fork). Python's lock is released while it runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
import torch


SOURCE = Path(__file__).with_name("engine.c")
NATIVE_DIR = SOURCE.parent


def sources() -> list[Path]:
    """Every C file of the native library (the engine first, then the players' files in name
    order): one shared library holds them all."""
    return [SOURCE] + sorted(p for p in NATIVE_DIR.glob("*.c") if p != SOURCE)


def _source_digest() -> bytes:
    """The bytes the cache key depends on: every C source and header of the library."""
    files = sources() + sorted(NATIVE_DIR.glob("*.h"))
    return b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in files)
FLAGS = ("-O3", "-march=native", "-shared", "-fPIC", "-std=c99", "-fno-strict-aliasing")
OPENMP_FLAG = "-fopenmp"

# The C file's parameter and pointer order (its enums).
PARAMS = ("nil", "blind_nil", "blind_nil_min_deficit", "blind_nil_pass", "min_team_bid", "has_max_team_bid",
          "max_team_bid", "bids_may_total_13", "no_spades_first_trick", "two_of_clubs_leads", "spades_lead",
          "nil_tricks_count_for_partner", "nil_bonus", "blind_nil_bonus", "bags", "bag_limit", "bag_penalty",
          "bags_from_score_digit", "target_score", "has_mercy", "mercy_score", "max_hands", "fixed_dealer",
          "episode_hand", "reward_kind", "pass_slots", "obs_size",
          "o_hand", "o_phase", "o_dealer", "o_to_act", "o_bids", "o_passed", "o_received", "o_tricks_taken",
          "o_trick_leader", "o_current_trick", "o_played", "o_voids", "o_spades_broken", "o_sides", "o_game",
          "tricks_per_hand", "signals", "num_actions", "o_signal_phase", "o_messages")
DOUBLE_PARAMS = ("reward_scale", "win_bonus", "shaping", "bag_cost")
STATE_FIELDS = ("hands", "deal", "phase", "to_act", "dealer", "bids", "blind", "looked", "passed", "received",
                "pass_from", "pass_to", "pass_len", "pass_pos", "trick", "trick_len", "leader", "led_suit",
                "win_card", "win_seat", "tricks_taken", "tricks_played", "played", "voids", "broken", "scores",
                "bags", "hand_number", "deal_index", "potential", "messages")
BUFFERS = ("actions", "pool", "queue", "start_scores", "start_bags", "fixed_start_dealer", "obs", "mask",
           "rewards", "done", "final_scores", "winner", "need")
SIZES = ("batch", "pool", "queue")
OBS_SIZE = 742             # engine.c's STANDARD_SHAPE: the standard game's observation, its offsets compiled in
OBS_BLOCKS = ("hand", "phase", "dealer", "to_act", "bids", "passed", "received", "tricks_taken", "trick_leader",
              "current_trick", "played", "voids", "spades_broken", "sides", "game")
SIGNAL_BLOCKS = ("signal_phase", "messages")     # appended under signals: N (engine.c shape_of)
REWARD_KINDS = {"team_score": 0, "team_diff": 1, "win": 2}
SPADES_LEAD = {"broken": 0, "any": 1, "forced_only": 2}


BAD_ACTION = -1000        # engine.c's SPADES_BAD_ACTION: the first bad table b comes back as -1000 - b


class NativeEngineError(RuntimeError):
    """The C engine could not be built or loaded, or cannot run this env."""


_LIBRARY: Optional[ctypes.CDLL] = None
_FORKED = False      # this process was forked from one that had loaded the library


def _note_fork() -> None:
    global _FORKED
    _FORKED = _FORKED or _LIBRARY is not None


os.register_at_fork(after_in_child=_note_fork)


def usable_threads(threads: int) -> int:
    """``threads``, or 1 in a process forked from one that had run the library: GNU OpenMP's
    threads do not survive a fork, and a parallel region in the child would hang for ever (as
    torch's own parallel ops do there), so the child runs the same code on one thread."""
    return 1 if _FORKED else max(1, int(threads))


def _cache_dir() -> Path:
    root = os.environ.get("SPADES_NATIVE_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "spades_env"


def _cpu_key() -> str:
    """What -march=native depends on: the CPU model and its flags."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        lines = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))][:2]
        return "\n".join(lines)
    except OSError:
        return platform.processor() or platform.machine()


def compile_flags(openmp: bool = True) -> tuple[str, ...]:
    """The compiler's flags: ``FLAGS``, then ``$SPADES_NATIVE_CFLAGS`` (e.g. ``-march=x86-64-v2`` for
    a library that other machines can share, or ``-mno-avx`` to try the code without AVX), then
    OpenMP's."""
    extra = tuple(os.environ.get("SPADES_NATIVE_CFLAGS", "").split())
    return FLAGS + extra + ((OPENMP_FLAG,) if openmp else ())


def library_path(openmp: bool = True) -> Path:
    """Where the compiled engine for this source, compiler, flags and CPU lives."""
    compiler = os.environ.get("CC", "cc")
    flags = compile_flags(openmp)
    key = hashlib.sha256(_source_digest() + repr((compiler, flags, _cpu_key())).encode()).hexdigest()[:16]
    return _cache_dir() / f"spades_native_{key}{'' if openmp else '_serial'}.so"


def build(force: bool = False) -> Path:
    """Compile the C sources (:func:`sources`) into one library in the cache, with OpenMP if the compiler has it (once; atomic, so
    concurrent processes are safe). Returns the library's path."""
    for openmp in (True, False):
        out = library_path(openmp)
        if out.is_file() and not force:
            return out
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        raise NativeEngineError(f"backend='native' needs a C compiler: {compiler!r} was not found (install gcc or "
                                "clang, or set $CC; or use backend='torch')")
    errors = []
    for openmp in (True, False):
        out = library_path(openmp)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            workspace = tempfile.TemporaryDirectory(dir=out.parent)
        except OSError as error:
            raise NativeEngineError(f"backend='native': cannot write its compiled engine to {str(out.parent)!r} "
                                    f"({error.strerror or error}); set $SPADES_NATIVE_CACHE to a writable "
                                    "folder") from None
        with workspace as tmp:
            target = Path(tmp) / out.name
            flags = compile_flags(openmp)
            done = subprocess.run([compiler, *flags, "-o", str(target), *map(str, sources())], capture_output=True,
                                  text=True)
            if done.returncode == 0:
                os.replace(target, out)
                return out
            errors.append(done.stderr.strip())
    raise NativeEngineError(f"compiling {', '.join(p.name for p in sources())} with {compiler!r} failed:\n{errors[-1]}")


def load() -> ctypes.CDLL:
    """The compiled engine, built if needed."""
    global _LIBRARY
    if _LIBRARY is None:
        lib = ctypes.CDLL(str(build()))
        counts = (ctypes.c_int64 * 4)()
        lib.spades_native_counts(counts)
        expected = (len(PARAMS), len(DOUBLE_PARAMS), len(STATE_FIELDS) + len(BUFFERS), len(SIZES))
        if tuple(counts) != expected:
            raise NativeEngineError(f"the compiled engine's layout {tuple(counts)} does not match the Python side's "
                                    f"{expected}")
        lib.spades_native_init()
        lib.spades_step_all.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]
        lib.spades_step_all.restype = ctypes.c_int64
        lib.spades_random_legal.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3
        lib.spades_random_legal.restype = ctypes.c_int64
        lib.spades_deal_from_keys.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2
        lib.spades_deal_from_keys.restype = ctypes.c_int64
        lib.spades_step_until.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 9
        lib.spades_step_until.restype = ctypes.c_int64
        lib.spades_heuristic_from_obs.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                                  ctypes.c_void_p, ctypes.c_int64]
        lib.spades_heuristic_from_obs.restype = ctypes.c_int64
        lib.spades_heuristic_layout_ok.argtypes = [ctypes.c_void_p]
        lib.spades_heuristic_layout_ok.restype = ctypes.c_int
        lib.spades_native_check_layout.argtypes = [ctypes.c_void_p]
        lib.spades_native_check_layout.restype = ctypes.c_int
        _LIBRARY = lib
    return _LIBRARY


def unavailable_reason() -> Optional[str]:
    """None where the C engine builds (or is already built) for this machine and loads, else the
    first line of why not (no compiler, a failed build, a cache folder that cannot be written)."""
    global _AVAILABLE_FOR
    settings = _build_settings()
    if _LIBRARY is not None and _AVAILABLE_FOR == settings:    # agents ask at every construction
        return None
    try:
        build()
        load()
    except (NativeEngineError, OSError) as exc:
        return str(exc).splitlines()[0]
    _AVAILABLE_FOR = settings
    return None


_AVAILABLE_FOR: Optional[tuple] = None      # the build settings under which the library was found


def _build_settings() -> tuple:
    """What decides whether the library builds here, short of the sources and the CPU."""
    return tuple(os.environ.get(name) for name in ("CC", "SPADES_NATIVE_CFLAGS", "SPADES_NATIVE_CACHE"))


def _check_status(status: int, actions: torch.Tensor, otherwise: str, num_actions: int = 68) -> None:
    """Raise the :class:`NativeEngineError` a C step's nonzero status stands for."""
    if status <= BAD_ACTION:
        table = BAD_ACTION - int(status)
        raise NativeEngineError(f"action {int(actions[table])} at table {table}: not an action id "
                                f"(0..{num_actions - 1}); no table was stepped")
    if status:
        raise NativeEngineError(f"{otherwise} (code {status})")


# ------------------------------------------------------------------ argument checks
# The C entry points trust their pointers and sizes: a buffer shorter than the sizes say is read
# or written out of bounds (a segfault, or quietly wrong values). Every public wrapper checks its
# arguments here first and names the argument and what it expected.

def _fail(where: str, name: str, expected: str, got: str) -> None:
    raise NativeEngineError(f"{where}: {name}: expected {expected}, got {got}")


def _describe(value) -> str:
    if isinstance(value, (np.ndarray, torch.Tensor)):
        device = value.device if isinstance(value, torch.Tensor) else None
        contiguous = value.is_contiguous() if isinstance(value, torch.Tensor) else value.flags.c_contiguous
        kind = "a tensor" if device is not None else "an array"
        return (f"{kind} of shape {tuple(value.shape)} {value.dtype}"
                + (f" on {device}" if device and device.type != "cpu" else "")
                + ("" if contiguous else ", not contiguous"))
    return type(value).__name__


def _cpu_tensor(where: str, name: str, value, expected: str, dims: int) -> torch.Tensor:
    """``value`` if it is a CPU tensor with ``dims`` dimensions, else a NativeEngineError."""
    if not isinstance(value, torch.Tensor) or value.device.type != "cpu" or value.dim() != dims:
        _fail(where, name, expected, _describe(value))
    return value


def _count(where: str, name: str, value, low: int = 1) -> int:
    """A plain integer >= ``low`` (threads)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        _fail(where, name, f"an integer >= {low}", repr(value)[:40])
    return int(value)


def _checked_heuristic_inputs(obs, mask, layout_array, threads) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`heuristic_codes`'s arguments checked against each other: the C loop reads as many
    rows of the layout's observation size from ``obs`` as ``obs`` has, and the layout's action
    count (68 + signals) of bytes a row from ``mask``."""
    where = "heuristic_codes"
    _count(where, "threads", threads)
    entries = len(HEURISTIC_BLOCKS) + 5
    if (not isinstance(layout_array, np.ndarray) or layout_array.dtype != np.int64
            or layout_array.shape != (entries,) or not layout_array.flags.c_contiguous):
        _fail(where, "layout_array", f"a C-contiguous ({entries},) int64 array, heuristic_layout(layout).numpy()",
              _describe(layout_array))
    if not (_LIBRARY or load()).spades_heuristic_layout_ok(ctypes.c_void_p(layout_array.ctypes.data)):
        _fail(where, "layout_array", "an observation layout (every block inside the observation)",
              str(layout_array.tolist()))
    size = int(layout_array[-1])
    if (not isinstance(obs, np.ndarray) or obs.dtype != np.float32 or obs.ndim != 2 or obs.shape[1] != size
            or not obs.flags.c_contiguous):
        _fail(where, "obs", f"a C-contiguous (rows, {size}) float32 array (the layout's observation size)",
              _describe(obs))
    if (not isinstance(mask, np.ndarray) or mask.dtype not in (np.uint8, np.bool_)
            or mask.shape != (obs.shape[0], int(layout_array[-2])) or not mask.flags.c_contiguous):
        _fail(where, "mask", f"a C-contiguous ({obs.shape[0]}, {int(layout_array[-2])}) uint8 (or bool) array, "
              "a row per row of obs (the layout's action count)",
              _describe(mask))
    return obs, mask.view(np.uint8), layout_array


class NativeStepper:
    """Steps a :class:`SpadesVectorEnv` with the C engine (``threads`` threads)."""

    def __init__(self, env, threads: Optional[int] = None) -> None:
        if env.device.type != "cpu":
            raise NativeEngineError(f"backend='native' runs on the CPU; this env is on {env.device} (use "
                                    "backend='torch' there)")
        self.lib = load()
        self.env = env
        r, layout = env.rules, env.layout
        if tuple(layout.obs_blocks) != OBS_BLOCKS + (SIGNAL_BLOCKS if r.signals else ()):
            raise NativeEngineError(f"backend='native': unexpected observation blocks {tuple(layout.obs_blocks)}")
        values = {
            "nil": int(r.nil), "blind_nil": int(r.blind_nil), "blind_nil_min_deficit": r.blind_nil_min_deficit,
            "blind_nil_pass": r.blind_nil_pass, "min_team_bid": r.min_team_bid or 0,
            "has_max_team_bid": int(r.max_team_bid is not None), "max_team_bid": r.max_team_bid or 0,
            "bids_may_total_13": int(r.bids_may_total_13), "no_spades_first_trick": int(r.no_spades_first_trick),
            "two_of_clubs_leads": int(r.two_of_clubs_leads), "spades_lead": SPADES_LEAD[r.spades_lead],
            "nil_tricks_count_for_partner": int(r.nil_tricks_count_for_partner), "nil_bonus": r.nil_bonus,
            "blind_nil_bonus": r.blind_nil_bonus, "bags": int(r.bags), "bag_limit": r.bag_limit,
            "bag_penalty": r.bag_penalty, "bags_from_score_digit": int(r.bags_from_score_digit),
            "target_score": r.target_score, "has_mercy": int(r.mercy_score is not None),
            "mercy_score": r.mercy_score or 0, "max_hands": r.max_hands or 0,
            "fixed_dealer": -1 if r.fixed_dealer is None else r.fixed_dealer,
            "episode_hand": int(env.episode == "hand"), "reward_kind": REWARD_KINDS[env.reward_scheme.reward],
            "pass_slots": env._pass_slots, "obs_size": env.obs_size,
            **{f"o_{name}": block.offset for name, block in layout.obs_blocks.items()},
            "tricks_per_hand": r.tricks_per_hand, "signals": r.signals, "num_actions": env.num_actions,
        }
        if not r.signals:
            values.update(o_signal_phase=0, o_messages=0)
        scheme = env.reward_scheme
        self.params = torch.tensor([int(values[name]) for name in PARAMS], dtype=torch.int64)
        if not self.lib.spades_native_check_layout(ctypes.c_void_p(self.params.data_ptr())):
            raise NativeEngineError(f"backend='native' writes the four-player partnership observation ({OBS_SIZE} "
                                    f"cells in the standard game); this env's has {env.obs_size} (offsets "
                                    f"{[values['o_' + name] for name in OBS_BLOCKS]}, {r.tricks_per_hand} tricks a "
                                    f"hand, {r.signals} messages), which engine.c does not derive")
        self.dparams = torch.tensor([float(getattr(scheme, name)) for name in DOUBLE_PARAMS], dtype=torch.float64)
        B = env.num_envs
        self.need = torch.zeros(B, dtype=torch.uint8)
        self.threads = max(1, min(int(threads or torch.get_num_threads()), B, 64))
        self.sizes = (ctypes.c_int64 * 3)()
        self.sizes[0] = B
        self.params_ptr, self.dparams_ptr = self.params.data_ptr(), self.dparams.data_ptr()
        self.pointers = (ctypes.c_void_p * (len(STATE_FIELDS) + len(BUFFERS)))()
        self.pointers_address, self.sizes_address = ctypes.addressof(self.pointers), ctypes.addressof(self.sizes)
        self._state = None          # the state whose pointers are set
        self._inputs = None         # the deal pool, queue and start tensors whose pointers are set
        self._until_scratch: Optional[tuple] = None     # step_until's per-move buffers, made once

    def deal_from_keys(self, keys: torch.Tensor, dealers: torch.Tensor) -> torch.Tensor:
        """:func:`deal_from_keys` on this stepper's threads."""
        return deal_from_keys(keys, dealers, self.threads)

    def _point(self, actions: torch.Tensor, rewards: torch.Tensor, done: torch.Tensor, final_scores: torch.Tensor,
               winner: torch.Tensor) -> None:
        """Set the pointers of the state, the deal inputs, the actions and the per-move buffers
        (the observation and mask are the caller's to set)."""
        env = self.env
        pointers = self.pointers
        if env.state is not self._state:               # a new state (VecState is frozen): its pointers
            s = env.state
            s = s.replace(**{name: getattr(s, name).contiguous() for name in STATE_FIELDS})  # plain (B, ...) rows
            env.state = self._state = s
            for i, name in enumerate(STATE_FIELDS):
                pointers[i] = getattr(s, name).data_ptr()
        inputs = (env._deal_pool, env._deal_queue, env._start_scores, env._start_bags, env._fixed_start_dealer)
        if self._inputs is None or any(a is not b for a, b in zip(inputs, self._inputs)):
            self._inputs = inputs = tuple(None if t is None else t.contiguous() for t in inputs)
            env._deal_pool, env._deal_queue, env._start_scores, env._start_bags, env._fixed_start_dealer = inputs
            for i, t in enumerate(inputs, start=len(STATE_FIELDS) + 1):     # after the actions, as in BUFFERS
                pointers[i] = None if t is None else t.data_ptr()
            self.sizes[1], self.sizes[2] = inputs[0].shape[0], inputs[1].shape[1]
        first = len(STATE_FIELDS)                      # the buffers, in the order of BUFFERS
        pointers[first] = actions.data_ptr()
        for i, t in enumerate((rewards, done, final_scores, winner, self.need), start=first + 8):
            pointers[i] = t.data_ptr()

    def step(self, actions: torch.Tensor):
        """One step of every table, in place on ``env.state``; returns what ``_full_step`` returns
        after the state: (pool pointer, observation, mask (uint8), rewards, done, final scores, winner)."""
        env = self.env
        B = env.num_envs
        if (not isinstance(actions, torch.Tensor) or actions.dtype != torch.int64 or tuple(actions.shape) != (B,)
                or actions.device.type != "cpu"):
            _fail("NativeStepper.step", "actions", f"({B},) int64 action ids on the CPU", _describe(actions))
        if not actions.is_contiguous():
            actions = actions.contiguous()
        obs = torch.empty(B, env.obs_size, dtype=torch.float32)
        mask = torch.empty(B, env.num_actions, dtype=torch.uint8)
        rewards = torch.empty(B, 4, dtype=torch.float64)
        done = torch.empty(B, dtype=torch.uint8)
        final_scores = torch.empty(B, 2, dtype=torch.int64)
        winner = torch.empty(B, dtype=torch.int64)
        new_ptr = torch.empty((), dtype=torch.int64)
        self._point(actions, rewards, done, final_scores, winner)
        self.pointers[len(STATE_FIELDS) + 6] = obs.data_ptr()
        self.pointers[len(STATE_FIELDS) + 7] = mask.data_ptr()
        status = self.lib.spades_step_all(self.params_ptr, self.dparams_ptr, self.pointers_address,
                                          self.sizes_address, usable_threads(self.threads), int(env._pool_ptr),
                                          new_ptr.data_ptr())
        _check_status(status, actions, "the C step refused its arguments", env.num_actions)
        return new_ptr, obs, mask, rewards, done.view(torch.bool), final_scores, winner

    def _check_until_arguments(self, actions, seat_kind, heuristic_layout, rng) -> None:
        """:meth:`step_until`'s arguments, before the C loop trusts them."""
        where, B = "step_until", self.env.num_envs
        if (not isinstance(rng, torch.Tensor) or rng.dtype != torch.int64 or not rng.is_contiguous()
                or tuple(rng.shape) != (B,) or rng.device.type != "cpu"):
            _fail(where, "rng", f"({B},) int64 random states, contiguous, on the CPU", _describe(rng))
        if (not isinstance(actions, torch.Tensor) or tuple(actions.shape) != (B,) or actions.device.type != "cpu"
                or actions.is_floating_point() or actions.is_complex() or actions.dtype == torch.bool):
            _fail(where, "actions", f"({B},) integer action ids on the CPU", _describe(actions))
        if (not isinstance(seat_kind, torch.Tensor) or seat_kind.dtype != torch.int64 or tuple(seat_kind.shape) != (4,)
                or not seat_kind.is_contiguous() or seat_kind.device.type != "cpu"):
            _fail(where, "seat_kind", "(4,) int64 on the CPU: -1 the caller's seat, 0 random, 1 heuristic",
                  _describe(seat_kind))
        kinds = seat_kind.tolist()
        if any(k not in (-1, 0, 1) for k in kinds) or -1 not in kinds:
            _fail(where, "seat_kind", "-1 (the caller's seat, at least one), 0 (random) or 1 (heuristic) per seat",
                  str(kinds))
        if 1 in kinds:
            entries = len(HEURISTIC_BLOCKS) + 5
            if (not isinstance(heuristic_layout, torch.Tensor) or heuristic_layout.dtype != torch.int64
                    or tuple(heuristic_layout.shape) != (entries,) or not heuristic_layout.is_contiguous()
                    or heuristic_layout.device.type != "cpu"
                    or not self.lib.spades_heuristic_layout_ok(ctypes.c_void_p(heuristic_layout.data_ptr()))
                    or int(heuristic_layout[-1]) != self.env.obs_size):
                _fail(where, "heuristic_layout", f"heuristic_layout(env.layout): ({entries},) int64 for the env's "
                      f"{self.env.obs_size}-cell observation (a heuristic seat reads it)", _describe(heuristic_layout)
                      if not isinstance(heuristic_layout, torch.Tensor) or heuristic_layout.shape != (entries,)
                      else str(heuristic_layout.tolist()))

    def step_until(self, actions: torch.Tensor, seat_kind: torch.Tensor, heuristic_layout: Optional[torch.Tensor],
                   rng: torch.Tensor):
        """The caller's actions at every table, then the other seats' moves until a caller's seat is to
        act at every table, in one C call (``engine.c`` spades_step_until). ``seat_kind``: (4,) int64,
        -1 for the caller's seats, 0 random, 1 heuristic (reading ``heuristic_layout``); ``rng``: (B,)
        int64 random states, advanced in place. Returns (pool pointer, observation, mask (uint8),
        rewards (B, 4) summed over the moves, ended (B,), final scores, winner, other seats' moves)."""
        env = self.env
        B = env.num_envs
        self._check_until_arguments(actions, seat_kind, heuristic_layout, rng)
        actions = actions.to(torch.int64).clone()              # the loop writes the other seats' moves here
        if self._until_scratch is None:                        # each move's buffers: the loop's scratch
            self._until_scratch = (torch.empty(B, 4, dtype=torch.float64), torch.empty(B, dtype=torch.uint8),
                                   torch.empty(B, 2, dtype=torch.int64), torch.empty(B, dtype=torch.int64))
        self._point(actions, *self._until_scratch)
        obs = torch.empty(B, env.obs_size, dtype=torch.float32)
        mask = torch.empty(B, env.num_actions, dtype=torch.uint8)
        self.pointers[len(STATE_FIELDS) + 6] = obs.data_ptr()
        self.pointers[len(STATE_FIELDS) + 7] = mask.data_ptr()
        rewards = torch.empty(B, 4, dtype=torch.float64)
        ended = torch.empty(B, dtype=torch.uint8)
        final_scores = torch.empty(B, 2, dtype=torch.int64)
        winner = torch.empty(B, dtype=torch.int64)
        moves = torch.empty(B, dtype=torch.int64)
        new_ptr = torch.empty((), dtype=torch.int64)
        status = self.lib.spades_step_until(
            self.params_ptr, self.dparams_ptr, self.pointers_address, self.sizes_address, usable_threads(self.threads),
            int(env._pool_ptr), new_ptr.data_ptr(), seat_kind.data_ptr(),
            None if heuristic_layout is None else heuristic_layout.data_ptr(), rng.data_ptr(), rewards.data_ptr(),
            ended.data_ptr(), final_scores.data_ptr(), winner.data_ptr(), moves.data_ptr())
        _check_status(status, actions, "the C play-until loop refused its arguments or stopped", env.num_actions)
        return new_ptr, obs, mask, rewards, ended.view(torch.bool), final_scores, winner, moves


# The observation blocks the C heuristic's decoder reads, in heuristic.c's L_* order (then the
# player count, side count, tricks per hand, action count (68 + signals) and observation size).
HEURISTIC_BLOCKS = ("hand", "phase", "bids", "passed", "tricks_taken", "trick_leader", "current_trick", "played",
                    "voids", "sides", "game")
_HEURISTIC_LAYOUTS: dict = {}


def heuristic_layout(layout) -> torch.Tensor:
    """The int64 layout array heuristic.c reads observations with (cached per observation size and
    action count: a size alone does not tell a short deck with messages from other rules)."""
    messages = layout.obs_blocks.get("messages")
    num_actions = 68 + (messages.width if messages is not None else 0)
    array = _HEURISTIC_LAYOUTS.get((layout.obs_size, num_actions))
    if array is None:
        offsets = [layout.obs_blocks[name].offset for name in HEURISTIC_BLOCKS]
        array = torch.tensor(offsets + [layout.n, layout.num_sides, layout.tricks_per_hand, num_actions,
                                        layout.obs_size], dtype=torch.int64)
        _HEURISTIC_LAYOUTS[(layout.obs_size, num_actions)] = array
    return array


def heuristic_codes(obs: np.ndarray, mask: np.ndarray, layout_array: np.ndarray, threads: int = 1):
    """heuristic.c at every row: ``obs`` (rows, size) float32 and ``mask`` (rows, 68) uint8 0/1,
    both C-contiguous, ``layout_array`` from :func:`heuristic_layout`. Returns (status, actions):
    status 0 or a HEUR_ERR_* code for the whole call; an action per row, or that row's code.
    Arguments that do not fit each other are a :class:`NativeEngineError` naming the argument."""
    obs, mask, layout_array = _checked_heuristic_inputs(obs, mask, layout_array, threads)
    out = np.empty(obs.shape[0], dtype=np.int64)
    status = (_LIBRARY or load()).spades_heuristic_from_obs(obs.ctypes.data, mask.ctypes.data, obs.shape[0],
                                                            layout_array.ctypes.data, out.ctypes.data,
                                                            usable_threads(threads))
    return int(status), out


def random_legal(mask: torch.Tensor, uniform: torch.Tensor, threads: int = 1) -> torch.Tensor:
    """A uniformly random legal action per row of a CPU (B, 68) mask (bool, or any dtype: nonzero is
    legal), in C: the k-th legal action with k = floor(u * count) for the row's uniform ``u``
    (``uniform``: (B,) float32 in [0, 1)), or -1 where a row has none. The same choice as ``spades-bench``'s torch
    picker for the same u. ``threads``: how many threads share the rows."""
    where = "random_legal"
    _cpu_tensor(where, "mask", mask, "a (B, actions) tensor on the CPU", 2)
    rows, width = mask.shape
    if width < 1 or mask.is_complex():
        _fail(where, "mask", "a (B, actions) tensor with at least one action", _describe(mask))
    _cpu_tensor(where, "uniform", uniform, f"a ({rows},) float tensor on the CPU, one uniform per row", 1)
    if uniform.shape[0] != rows:
        _fail(where, "uniform", f"one uniform per row of the mask ({rows})", f"{uniform.shape[0]} uniforms")
    threads = _count(where, "threads", threads)
    if mask.dtype != torch.bool:
        mask = mask != 0                                    # 0/1 bytes
    if not mask.is_contiguous():
        mask = mask.contiguous()
    if uniform.dtype != torch.float32 or not uniform.is_contiguous():
        uniform = uniform.to(torch.float32).contiguous()
    out = torch.empty(rows, dtype=torch.int64)
    status = (_LIBRARY or load()).spades_random_legal(mask.data_ptr(), uniform.data_ptr(), out.data_ptr(), rows,
                                                      width, usable_threads(threads))
    if status:
        raise NativeEngineError(f"random_legal: the C code refused its arguments (code {status})")
    return out


def deal_from_keys(keys: torch.Tensor, dealers: torch.Tensor, threads: int = 1) -> torch.Tensor:
    """Deals from random keys in C: (count, 5) int64 rows of four hand bitboards and the dealer,
    where card ``c`` goes to seat ``rank(keys[row, c]) // 13`` (ties by card index, as
    ``keys.argsort(dim=1, stable=True)`` orders them). ``keys``: (count, 52) float32 in [0, 1)
    (non-negative: they are compared as their bit patterns);
    ``dealers``: (count,) or (count, 1) int64. The same deals as ``SpadesVectorEnv.draw_deals``'s
    torch path, several times faster."""
    where = "deal_from_keys"
    expected = "(count, 52) float32 keys in [0, 1) on the CPU"
    _cpu_tensor(where, "keys", keys, expected, 2)
    if keys.shape[1] != 52 or keys.dtype != torch.float32:
        _fail(where, "keys", expected, _describe(keys))
    if not bool(((keys >= 0) & (keys < 1)).all()):      # NaN included: compared as bit patterns in C
        _fail(where, "keys", expected, "a key outside [0, 1)")
    count = keys.shape[0]
    keys = keys.contiguous()
    if (not isinstance(dealers, torch.Tensor) or dealers.device.type != "cpu" or dealers.is_floating_point()
            or dealers.is_complex() or dealers.dtype == torch.bool or dealers.shape not in ((count,), (count, 1))):
        _fail(where, "dealers", f"({count},) or ({count}, 1) integer seats on the CPU, one per deal", _describe(dealers))
    dealers = dealers.to(torch.int64).contiguous().view(-1)
    if count and not bool(((dealers >= 0) & (dealers <= 3)).all()):
        _fail(where, "dealers", "seats 0..3", f"{int(dealers[(dealers < 0) | (dealers > 3)][0])}")
    threads = _count(where, "threads", threads)
    out = torch.empty(count, 5, dtype=torch.int64)
    status = load().spades_deal_from_keys(keys.data_ptr(), dealers.data_ptr(), out.data_ptr(), count,
                                          usable_threads(threads))
    if status:
        raise NativeEngineError(f"deal_from_keys: the C code refused its arguments (code {status})")
    return out


def search_side_points(rules_values: np.ndarray, bids, blind, tricks, score_before: int, bags_before: int) -> int:
    """search.c's ``side_points`` (the play-outs' scoring of one side's hand), exposed for the
    differential test of the four scoring twins (tests/spades_env/test_scoring_twins.py). ``rules_values``:
    the search's rule array (``agents.native_search.rules_array(rules)``); ``bids``, ``blind``,
    ``tricks``: the side's one or two members (bids 0..13, nil 0; blind 0/1); the side's score
    and bags before the hand. Returns the side's points for the hand."""
    where = "search_side_points"
    counts = (ctypes.c_int64 * 2)()
    lib = _LIBRARY or load()
    lib.spades_search_counts(counts)
    if (not isinstance(rules_values, np.ndarray) or rules_values.dtype != np.int64
            or rules_values.shape != (counts[0],) or not rules_values.flags.c_contiguous):
        _fail(where, "rules_values", f"a C-contiguous ({counts[0]},) int64 array, agents.native_search.rules_array(rules)",
              _describe(rules_values))
    members = []
    for name, values, low, high in (("bids", bids, 0, 13), ("blind", blind, 0, 1), ("tricks", tricks, 0, 13)):
        values = [int(v) if isinstance(v, (int, np.integer)) else v for v in list(values)]
        if not 1 <= len(values) <= 2 or any(isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high
                                            for v in values):
            _fail(where, name, f"one or two integers {low}..{high}, one per member of the side", repr(values)[:60])
        members.append(values)
    if len({len(m) for m in members}) != 1:
        _fail(where, "bids, blind, tricks", "one entry per member of the side each", f"{[len(m) for m in members]}")
    for name, value in (("score_before", score_before), ("bags_before", bags_before)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or abs(int(value)) > 10 ** 9:
            _fail(where, name, "an integer within -10**9..10**9", repr(value)[:40])
    arrays = [np.ascontiguousarray(m, dtype=np.int64) for m in members]
    out = np.zeros(1, dtype=np.int64)
    lib.spades_search_side_points.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3 + [ctypes.c_void_p]
    lib.spades_search_side_points.restype = ctypes.c_int64
    status = lib.spades_search_side_points(rules_values.ctypes.data, *(a.ctypes.data for a in arrays), len(arrays[0]),
                                           int(score_before), int(bags_before), out.ctypes.data)
    if status:
        _fail(where, "rules_values", "the search's rule values (bag_limit >= 1, points within 2**40)",
              str(rules_values.tolist()))
    return int(out[0])
