"""How many torch threads training uses: no more than the cores that are actually free.

torch's intra-op threads spin while they wait for each other; on a core that another job is
using, one of them is descheduled and the others wait for it at every operation. On a 2-core
machine with the other core busy, the quickstart's ``threads: 2`` made its imitation fit take
9 minutes instead of about 1 (issue 39). So the count is decided once, when the run starts:

    threads = max(1, min(config threads (0: no limit), free cores))
    free cores = cores this process may use (os.sched_getaffinity) - round(1-minute load average)

The load average counts the jobs already running (this one has barely started), so a machine
busy with one other job leaves one core fewer. The count is logged; results are bit-identical
only between runs with the same count, so a run that must repeat exactly sets ``threads: 1``.
"""

from __future__ import annotations

import os
from typing import Callable, Optional


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; all of them where that is unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):           # not Linux
        return max(1, os.cpu_count() or 1)


def recent_load() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def free_cores(cores: Optional[int] = None, load: Optional[float] = None) -> int:
    """Cores not taken by other jobs: usable cores minus the rounded load average, at least 1."""
    cores = usable_cores() if cores is None else cores
    load = recent_load() if load is None else load
    return max(1, cores - int(round(max(0.0, load))))


def training_threads(requested: int, cores: Optional[int] = None, load: Optional[float] = None) -> tuple[int, str]:
    """The torch thread count for ``threads: requested`` (0: as many as are free) and a line
    saying why."""
    cores = usable_cores() if cores is None else cores
    load = recent_load() if load is None else load
    free = free_cores(cores, load)
    chosen = free if requested <= 0 else max(1, min(requested, free))
    asked = "threads 0 (as many as free)" if requested <= 0 else f"threads {requested}"
    return chosen, (f"torch threads: {chosen} ({asked}; {cores} usable cores, load average {load:.2f}, "
                    f"{free} free)")


def set_training_threads(requested: int, log: Callable[[str], None] = print) -> int:
    """Set torch's intra-op threads by :func:`training_threads`; returns the count."""
    import torch

    chosen, why = training_threads(requested)
    torch.set_num_threads(chosen)
    log(why)
    return chosen
