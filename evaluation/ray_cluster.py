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
import socket
import threading
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

LOCAL = "local"          # what a bare --ray means: start a Ray instance here
RAY_PORT = 6379          # a cluster head's port when the address names none
CLIENT_PORT = 10001      # the same for ray://HOST (Ray Client)
# How long ``--ray ADDRESS`` waits for the cluster: ray.init with nothing listening retried for
# over 200 s (the environment variable sets another wait, in seconds).
CONNECT_TIMEOUT_S = 20.0
TIMEOUT_VARIABLE = "SPADES_RAY_CONNECT_TIMEOUT"


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached (says which and what to do)."""


def connect(address: Optional[str], num_cpus: Optional[int] = None):
    """``ray`` initialised: a new local instance (``address`` None or ``"local"``; ``num_cpus``
    workers) or the cluster at ``address``. Returns the module."""
    timeout = connect_timeout()
    if address not in (None, LOCAL):
        probe_address(address, timeout)           # nothing listening: refused now, not after minutes
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'spades-rl[ray]'") from None
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")    # (quiet: no GPU is asked for)
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address in (None, LOCAL):
        options["num_cpus"] = num_cpus
    else:
        options["address"] = address
    verb = "start" if address in (None, LOCAL) else "reach"
    if address in (None, LOCAL):
        # a local instance starts in this (main) thread: Ray sets signal handlers there, and a
        # local start run from a helper thread made spades-label exit silently
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            raise RayUnavailable(f"--ray: could not {verb} a Ray cluster "
                                 f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        return ray
    outcome: dict[str, BaseException] = {}

    def init() -> None:
        try:
            ray.init(**options)
        except BaseException as exc:             # noqa: BLE001 (handed to the caller's thread)
            outcome["error"] = exc

    # ray.init has no timeout of its own when it connects: it runs in a daemon thread the driver
    # stops waiting for
    waiter = threading.Thread(target=init, name="ray-init", daemon=True)
    waiter.start()
    waiter.join(timeout)
    if waiter.is_alive():
        raise RayUnavailable(f"--ray {address or ''}: could not {verb} a Ray cluster within {timeout:g} s "
                             f"(is it running? {TIMEOUT_VARIABLE}=SECONDS waits longer)")
    error = outcome.get("error")
    if isinstance(error, (ConnectionError, RuntimeError, ValueError, TimeoutError)):
        raise RayUnavailable(f"--ray {address or ''}: could not {verb} a Ray cluster "
                             f"({str(error).splitlines()[0] if str(error) else type(error).__name__})") from None
    if error is not None:
        raise error
    return ray


def connect_timeout(default: float = CONNECT_TIMEOUT_S) -> float:
    """Seconds ``--ray`` waits for a cluster: ``default``, or the environment's
    :data:`TIMEOUT_VARIABLE` (a number of seconds above 0)."""
    text = os.environ.get(TIMEOUT_VARIABLE)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:
        raise RayUnavailable(f"{TIMEOUT_VARIABLE}={text[:40]!r}: expected seconds, above 0 and at most 3600")
    return value


def probe_address(address: str, timeout: float) -> None:
    """A :class:`RayUnavailable` when nothing accepts a connection at ``address`` (``HOST:PORT``,
    ``HOST``, ``ray://HOST[:PORT]``; ``auto`` is left to Ray, which looks it up) within
    ``timeout`` seconds."""
    text = str(address).strip()
    if text.lower() == "auto":
        return
    default_port = RAY_PORT
    if text.startswith("ray://"):
        text, default_port = text[len("ray://"):], CLIENT_PORT
    if "://" in text or not text:
        raise RayUnavailable(f"--ray {address}: expected HOST:PORT, HOST, ray://HOST:PORT or auto")
    if text.startswith("["):                                   # [IPv6]:port
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
        raise RayUnavailable(f"--ray {address}: port {port_text[:20]!r}: expected a number 1..65535")
    port = int(port_text) if port_text else default_port
    try:
        with socket.create_connection((host, port), timeout=min(timeout, 10.0)):
            pass
    except socket.timeout:
        raise RayUnavailable(f"--ray {address}: no answer from {host}:{port} within {min(timeout, 10.0):g} s "
                             "(is the cluster's head running there? `ray start --head`)") from None
    except OSError as exc:
        raise RayUnavailable(f"--ray {address}: nothing accepts connections at {host}:{port} "
                             f"({exc.strerror or exc}; is the cluster's head running there? `ray start --head`)") \
            from None


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
