"""Ctrl-C at any moment of a command: one line on stderr and exit status 130, never a traceback.

A command's own ``main`` turns a KeyboardInterrupt into its one line (``spades-train:
interrupted; continue with --resume``), but before ``main`` runs the interpreter is still
importing it, and torch alone takes seconds on a loaded machine: a Ctrl-C there used to end
``spades-train`` with a KeyboardInterrupt traceback and status -2. :func:`launch` is what the
console scripts (:mod:`tools.entry`) and the ``python -m train.*`` modules call before anything
heavy is imported: it imports the command under a SIGINT handler that ends the process at once
(nothing has been written yet), then restores Python's own handler so that ``main`` cleans up
as it always did, and turns an interrupt that escapes ``main`` into the same one line.

Python raises a Ctrl-C's KeyboardInterrupt wherever the main thread happens to be, and where that
is a weakref callback or a ``__del__`` (an import's module-lock callback, for one) the exception
is printed as "Exception ignored in ..." and dropped: the command ran on as if no key had been
pressed (a CI run's ``spades-train`` did, until the test's timeout). :func:`launch` therefore
hooks ``sys.unraisablehook``: a dropped KeyboardInterrupt is delivered again to the main thread a
moment later, outside the callback, and is not printed.

Standard library only, and ``train/__init__`` imports nothing, so importing this module is
instant. A ``python -m`` module starts with::

    if __name__ == "__main__":
        from train.interrupt import launch
        raise SystemExit(launch("python -m train.bids.bid_tilt", "train.bids.bid_tilt:main"))

which imports the module again under its own name, inside the handler (the ``__main__`` copy
stops at that line, before its heavy imports).
"""

from __future__ import annotations

import _thread
import importlib
import os
import signal
import sys
import threading
from typing import Callable, Optional

INTERRUPTED = 130
"""The exit status of a command ended by Ctrl-C (128 + SIGINT), as shells report it."""


def _say_interrupted(prog: str) -> None:
    try:
        sys.stderr.write(f"{prog}: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):                 # a closed stderr: the status says it
        pass


def _end_while_starting(prog: str) -> Callable[[int, object], None]:
    def handler(signum: int, frame: object) -> None:
        _say_interrupted(prog)
        os._exit(INTERRUPTED)          # mid-import: nothing to clean up, and nothing may swallow it
    return handler


def _redeliver_dropped_interrupts(previous: Callable[[object], None]) -> Callable[[object], None]:
    """An unraisable hook that hands a KeyboardInterrupt Python had to drop back to the main thread
    (``previous`` itself when it is such a hook already: a second launch in one process)."""
    if getattr(previous, "redelivers_interrupts", False):
        return previous

    def hook(unraisable: "sys.UnraisableHookArgs") -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # (not from here: this hook runs inside the callback that dropped it)
            again = threading.Timer(0.01, _thread.interrupt_main)
            again.daemon = True
            again.start()
            return
        previous(unraisable)
    hook.redelivers_interrupts = True
    return hook


def launch(prog: str, target: str, argv: Optional[list[str]] = None) -> int:
    """Import ``target`` (``"package.module:function"``) and run it; a Ctrl-C while importing, or
    one that escapes the function, ends with ``PROG: interrupted`` and :data:`INTERRUPTED`."""
    module_name, _, function_name = target.partition(":")
    interruptible = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    try:
        if interruptible:           # (a shell's background job ignores SIGINT: leave that alone)
            signal.signal(signal.SIGINT, _end_while_starting(prog))
        command = getattr(importlib.import_module(module_name), function_name or "main")
        if interruptible:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.unraisablehook = _redeliver_dropped_interrupts(sys.unraisablehook)
        return command(argv) if argv is not None else command()
    except KeyboardInterrupt:
        _say_interrupted(prog)
        return INTERRUPTED
