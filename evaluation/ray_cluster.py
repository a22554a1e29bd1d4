"""Work spread over a Ray cluster, for ``spades-eval --ray`` and ``spades-label --ray``
(``pip install "spades-rl[ray]"``).

``--ray`` alone starts a Ray instance on this machine (one worker per CPU, or ``--workers``);
``--ray ADDRESS`` joins a running cluster (``ray start --head`` on one machine, ``ray start
--address HEAD:6379`` on the others; ``auto`` finds the one this machine belongs to). Every
node needs this package installed in the same Python environment; files named in agent specs
(e.g. ``neural:checkpoint=model.pt``) must exist at the same path on every node, except
``spades-label``'s student, which the driver sends with the work.

The tasks are pure functions of their arguments (deal indices and seeds), so the results do
not depend on which node plays what: ``spades-eval --ray`` gives exactly the per-deal results of
``--workers 1``. Results come back to the driver, which writes everything (``spades-label``'s
shards, atomically, so a killed run resumes from the shards written).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

LOCAL = "local"          # what a bare --ray means: start a Ray instance here


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached (says which and what to do)."""


def connect(address: Optional[str], num_cpus: Optional[int] = None):
    """``ray`` initialised: a new local instance (``address`` None or ``"local"``; ``num_cpus``
    workers) or the cluster at ``address``. Returns the module."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'spades-rl[ray]'") from None
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")    # (quiet: no GPU is asked for)
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    try:
        if address in (None, LOCAL):
            ray.init(num_cpus=num_cpus, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"--ray {address or ''}: could not {'start' if address in (None, LOCAL) else 'reach'} "
                             f"a Ray cluster ({str(exc).splitlines()[0]})") from None
    return ray


def map_unordered(ray, function: Callable, items: Sequence[Any], shared: Any = None,
                  max_in_flight: Optional[int] = None) -> Iterator[Any]:
    """``function(shared, item)`` for every item as Ray tasks; yields results as they finish.
    ``shared`` goes to the object store once. On an error or Ctrl-C the tasks not yet finished
    are cancelled (nothing plays on after the driver stops)."""
    remote = ray.remote(num_cpus=1, max_retries=2)(function)
    shared_ref = ray.put(shared)
    if max_in_flight is None:
        max_in_flight = max(1, int(ray.cluster_resources().get("CPU", 1)) * 4)
    waiting = list(items)[::-1]
    running: list = []
    try:
        while waiting or running:
            while waiting and len(running) < max_in_flight:
                running.append(remote.remote(shared_ref, waiting.pop()))
            ready, running = ray.wait(running, num_returns=1)
            yield ray.get(ready[0])
    finally:
        for ref in running:
            ray.cancel(ref, force=True)


def chunked(items: Iterable[Any], size: int) -> list[list[Any]]:
    items = list(items)
    return [items[i:i + size] for i in range(0, len(items), size)]
