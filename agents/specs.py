"""Agent specs: the one way every command names an agent and its options.

    parse_agent_spec("search:worlds=200,seed=3")   # -> ("search", {"worlds": 200, "seed": 3})
    make_agent("neural:checkpoint=runs/x/model.pt")

A spec is a registry name, optionally followed by ``:key=value,key=value``. Values are read as
``true``/``false`` (also yes/no/on/off), ``none``/``null``, an int, a float, or else the text
itself. ``spades-eval``, ``spades-label``, ``spades-play``, ``spades-web`` and the training
configs all take specs through this module.

Options that size what an agent allocates (threads, sampled worlds) are bounded here, where every
command reads its specs (:data:`OPTION_BOUNDS`): ``search:threads=100000`` crashed the process
(exit 139) and ``threads=30000`` took 500 MB for one deal. The web server's allow-list
(``web/limits.py``) is tighter still: it bounds the time of one decision as well.
"""

from __future__ import annotations

import math
from typing import Any

MAX_THREADS = 256            # threads one agent may start (each holds a stack)
MAX_WORLDS = 200_000         # sampled deals per decision: 10x the native "strong" budget (~50 MB)
MAX_BID_WORLDS = 10_000      # sampled deals per bidding decision (default 64)
MAX_OVERSAMPLE = 16          # draws per kept world when bids are inferred (default 3)

# Every command's bounds, by option name, for any agent that takes the option.
OPTION_BOUNDS: dict[str, tuple[int, int]] = {
    "threads": (1, MAX_THREADS),
    "worlds": (1, MAX_WORLDS),
    "min_worlds": (1, MAX_WORLDS),
    "bid_worlds": (1, MAX_BID_WORLDS),
    "oversample": (1, MAX_OVERSAMPLE),
}


class AgentSpecError(ValueError):
    """A spec that cannot be read (says what was wrong and what is expected)."""


def parse_value(text: str) -> Any:
    """An option value: ``true``/``false`` (also yes/no/on/off), ``none``/``null``, int, float,
    or the string itself."""
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_agent_spec(spec: Any) -> tuple[str, dict[str, Any]]:
    """``"search:worlds=20,seed=3"`` -> ``("search", {"worlds": 20, "seed": 3})``; an
    :class:`AgentSpecError` for anything else. The name is not checked against the registry
    here (:func:`make_agent` does)."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"agent spec {spec!r}: expected a registry name, optionally with "
                             "options: NAME or NAME:key=value,key=value")
    name, sep, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise AgentSpecError(f"agent spec {spec!r}: no agent name before ':'")
    options: dict[str, Any] = {}
    if sep:
        if not rest.strip():
            raise AgentSpecError(f"agent spec {spec!r}: nothing after ':' (expected NAME:key=value,...)")
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key.isidentifier():
                raise AgentSpecError(f"agent spec {spec!r}: option {item.strip()!r} is not key=value "
                                     "(expected NAME:key=value,key=value)")
            if key in options:
                raise AgentSpecError(f"agent spec {spec!r}: option {key!r} is given twice")
            options[key] = parse_value(value.strip())
    check_option_bounds(options, spec)
    return name, options


def check_option_bounds(options: dict[str, Any], spec: Any) -> None:
    """An :class:`AgentSpecError` for a number outside :data:`OPTION_BOUNDS` (a value that is
    not a number is left to the agent, which says what it takes)."""
    for key, (low, high) in OPTION_BOUNDS.items():
        value = options.get(key)
        if value is None or isinstance(value, str):
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or not low <= value <= high:
            shown = repr(spec) if len(str(spec)) <= 120 else repr(str(spec)[:120] + "...")
            raise AgentSpecError(f"agent spec {shown}: {key}={value}: expected an integer {low}..{high:,} "
                                 "(the bound for every command)")


def check_agent_name(name: str, spec: str) -> None:
    """An :class:`AgentSpecError` naming the registered agents when ``name`` is not one."""
    import difflib

    from .base import available
    if name not in available():
        close = difflib.get_close_matches(name, available(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise AgentSpecError(f"unknown agent {name!r}{hint} in {spec!r}; registered agents: {', '.join(available())}")


def make_agent(spec: str, **defaults: Any):
    """A new agent from a spec (``defaults`` fill options the spec does not set, e.g. a seed);
    an :class:`AgentSpecError` when the spec, the name or an option is wrong."""
    from .base import make
    name, options = parse_agent_spec(spec)
    check_agent_name(name, spec)
    for key, value in defaults.items():
        options.setdefault(key, value)
    try:
        return make(name, **options)
    except TypeError as exc:                    # an option the agent does not take
        raise AgentSpecError(f"agent spec {spec!r}: {exc}") from None
