"""The heuristic player on the native library: ``spades_env/native/heuristic.c``.

It makes exactly the decisions of :func:`agents.heuristic.choose_action` (the readable
reference) from the same observation vectors, decoding them in C, so one decision costs
microseconds and a batch of rows is decided in one call, spread over threads. The tests
(``tests/agents/test_native_heuristic.py``) compare both at every decision of thousands of games, under
every convention (:mod:`agents.heuristic_conventions`), which C takes as one int per option.
"""

from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np
import torch

from spades_env.game import NUM_ACTIONS
from spades_env.rules import SIGNALS_LIMIT
from spades_env.native import (HEURISTIC_BLOCKS, NativeEngineError, heuristic_codes, heuristic_layout, load,
                                unavailable_reason, usable_threads)
from spades_env.observation import Layout, layout_for_size

from .heuristic_conventions import CONVENTION_OPTIONS, Conventions

# heuristic.c's error codes (heuristic.h HEUR_ERR_*) and what they mean.
_ERRORS = {-1: "the action mask has no legal action (is it this seat's turn?)",
           -2: "the observation describes an impossible position",
           -3: "the observation is malformed (no value can be read from it)",
           -4: "a convention code is out of range"}


class NativeHeuristicError(ValueError):
    """A position the native heuristic cannot decide (says which row and why)."""


_LIB: Optional[ctypes.CDLL] = None
_LAYOUT_ARRAYS: dict[tuple[int, int], np.ndarray] = {}     # by (observation size, action count)


def available() -> bool:
    """True where the native library builds and loads on this machine."""
    return unavailable_reason() is None


def _library() -> ctypes.CDLL:
    global _LIB
    if _LIB is None:
        lib = load()
        if lib.spades_heuristic_layout_count() != len(HEURISTIC_BLOCKS) + 5:
            raise NativeEngineError("the compiled heuristic's observation layout does not match the Python side's")
        if lib.spades_heuristic_convention_count() != len(CONVENTION_OPTIONS):
            raise NativeEngineError("the compiled heuristic's convention options do not match the Python side's")
        lib.spades_heuristic_from_obs_with.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                       ctypes.c_int64]
        lib.spades_heuristic_from_obs_with.restype = ctypes.c_int64
        _LIB = lib
    return _LIB


def _layout_array(layout: Layout) -> np.ndarray:
    array = heuristic_layout(layout).numpy()         # cached there: its memory stays valid
    _LAYOUT_ARRAYS[(layout.obs_size, int(array[-2]))] = array
    return array


_CODE_ARRAYS: dict[tuple, np.ndarray] = {}


def _code_array(conventions) -> Optional[np.ndarray]:
    """The int32 array C takes for ``conventions`` (a :class:`Conventions`, its ``codes()``, or
    None for standard); None for standard (C's default, the path that existed before)."""
    if conventions is None:
        return None
    codes = conventions.codes() if isinstance(conventions, Conventions) else tuple(conventions)
    if codes in _CODE_ARRAYS:
        return _CODE_ARRAYS[codes]
    if len(codes) != len(CONVENTION_OPTIONS) or not all(
            isinstance(c, (int, np.integer)) and not isinstance(c, bool) and 0 <= c < len(values)
            for c, values in zip(codes, CONVENTION_OPTIONS.values())):
        raise NativeHeuristicError(f"convention codes {codes!r}: expected {len(CONVENTION_OPTIONS)} ints, one "
                                   f"per option of {', '.join(CONVENTION_OPTIONS)}, each an index of its values")
    array = _CODE_ARRAYS[codes] = None if not any(codes) else np.array(codes, dtype=np.int32)   # kept: C reads it
    return array


def choose_actions(observations, masks, threads: int = 1, conventions=None) -> np.ndarray:
    """The heuristic's action at every row: ``observations`` (rows, obs_size) and ``masks``
    (rows, 68 + signals; nonzero = legal), numpy arrays or CPU tensors, under ``conventions`` (a
    :class:`Conventions` or its ``codes()``; None: standard). Returns int64 actions (rows,).
    Raises :class:`NativeHeuristicError` naming the first row that cannot be decided."""
    codes = _code_array(conventions)
    if isinstance(observations, torch.Tensor):     # bfloat16 / float16 too: their values, as float32
        observations = observations.detach().to("cpu", torch.float32).numpy()
    if isinstance(masks, torch.Tensor):
        masks = masks.detach().cpu().numpy()
    obs = np.ascontiguousarray(observations, dtype=np.float32)
    if obs.ndim == 1:
        obs = obs[None]
    mask = np.asarray(masks)
    if mask.ndim == 1:
        mask = mask[None]
    if obs.ndim != 2 or mask.ndim != 2:
        raise NativeHeuristicError(f"expected observations (rows, size) and masks (rows, {NUM_ACTIONS} + signals), "
                                   f"got shapes {tuple(np.shape(observations))} and {tuple(np.shape(masks))}")
    if mask.shape[0] != obs.shape[0] or not NUM_ACTIONS <= mask.shape[1] <= NUM_ACTIONS + SIGNALS_LIMIT:
        raise NativeHeuristicError(f"masks must have shape ({obs.shape[0]}, {NUM_ACTIONS} + signals 0..{SIGNALS_LIMIT}), "
                                   f"got {tuple(mask.shape)}")
    try:
        layout = layout_for_size(obs.shape[1], signals=mask.shape[1] - NUM_ACTIONS)
    except ValueError as exc:
        raise NativeHeuristicError(str(exc)) from None
    mask = np.ascontiguousarray(mask != 0, dtype=np.uint8)
    _library()                                       # (checks the compiled layout once)
    if codes is None:
        code, out = heuristic_codes(obs, mask, _layout_array(layout), threads)
    else:
        out = np.empty(obs.shape[0], dtype=np.int64)
        code = _LIB.spades_heuristic_from_obs_with(obs.ctypes.data, mask.ctypes.data, obs.shape[0],
                                                   _layout_array(layout).ctypes.data, codes.ctypes.data,
                                                   out.ctypes.data, usable_threads(threads))
    if code:
        raise NativeHeuristicError(_ERRORS.get(int(code), f"error {code}"))
    if out.size and out.min() < 0:
        row = int(np.flatnonzero(out < 0)[0])
        raise NativeHeuristicError(f"row {row}: {_ERRORS.get(int(out[row]), f'error {out[row]}')}")
    return out


_BYTE_MASKS = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.bool_))


_CODE_POINTERS: dict = {}


def _code_pointer(conventions) -> Optional[int]:
    """The address of :func:`_code_array`'s array for ``conventions`` (None: standard), cached."""
    try:
        return _CODE_POINTERS[conventions]
    except (KeyError, TypeError):
        array = _code_array(conventions)
        pointer = None if array is None else array.ctypes.data
        try:
            _CODE_POINTERS[conventions] = pointer
        except TypeError:               # an unhashable sequence of codes: not cached
            pass
        return pointer


def choose_action(observation, mask, conventions=None) -> int:
    """One row's action: :func:`choose_actions` with a fast path for the AEC env's numpy arrays
    (a contiguous float32 observation and an int8/uint8/bool mask), the per-call overhead of
    :meth:`HeuristicAgent.act`, under every convention alike. Anything else, and every error,
    goes through :func:`choose_actions`."""
    codes = None if conventions is None else _code_pointer(conventions)
    if (_LIB is not None and type(observation) is np.ndarray and type(mask) is np.ndarray
            and observation.dtype == np.float32 and observation.ndim == 1 and observation.flags.c_contiguous
            and mask.dtype in _BYTE_MASKS and mask.ndim == 1 and mask.flags.c_contiguous):
        layout = _LAYOUT_ARRAYS.get((observation.shape[0], mask.shape[0]))   # set by the first choose_actions call
        if layout is not None:
            out = np.empty(1, dtype=np.int64)
            code = _LIB.spades_heuristic_from_obs_with(observation.__array_interface__["data"][0],
                                                       mask.__array_interface__["data"][0], 1,
                                                       layout.__array_interface__["data"][0], codes,
                                                       out.__array_interface__["data"][0], 1)
            if code == 0 and out[0] >= 0:
                return int(out[0])
    return int(choose_actions(observation, mask, conventions=conventions)[0])
