"""What every command line shares: argparse errors in one line, output files checked before any
work starts, and the one "no progress bar" flag.

A mistyped number (``--deals ten``) or choice (``--partner serach``) used to print argparse's
usage block; a ``--json`` inside a read-only folder, under a file or on a full device failed
after the work was done, with a traceback. Here they are one line and exit status 2, up front.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

from spades_env.files import FileRuleError, check_output, writable, write_text

from .outcomes import EvaluationError


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit status 2), not a usage block."""

    def error(self, message: str):  # type: ignore[override]
        first = str(message).strip().splitlines()[0] if str(message).strip() else "bad arguments"
        self.exit(2, f"{self.prog}: error: {first} (see {self.prog} --help)\n")


def add_progress_flags(parser: argparse.ArgumentParser) -> None:
    """``--no-progress`` and its alias ``--quiet``: one flag for every command (``args.no_progress``)."""
    parser.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                        help="no progress bar (none is drawn either when stderr is not a terminal)")


def progress_disabled(wanted: bool) -> bool:
    """tqdm's ``disable=`` for a bar the caller wants (or not): True also when stderr is not a
    terminal, so that a redirected log holds no bar frames (180 KB of them in one log)."""
    if not wanted:
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return not (callable(isatty) and isatty())
    except (OSError, ValueError):           # a closed or odd stream: no bar
        return True


def check_output_file(path: Any, flag: str, stream_ok: bool = True, inputs: Any = ()) -> Path:
    """``path`` as a file this command may write, by the project's output rule
    (:func:`spades_env.files.check_output`), or an :class:`EvaluationError` naming the flag: a
    folder, a path under a file, a read-only place, a device or FIFO (only ``/dev/stdout``-style
    streams when ``stream_ok``: JSON and plots written in place) are refused here, before any work
    starts. Nothing is created."""
    try:
        return check_output(path, flag, stream_ok=stream_ok, inputs=inputs)
    except FileRuleError as exc:
        raise EvaluationError(str(exc)) from None


def write_text_file(path: Any, text: str, flag: Optional[str] = None) -> Path:
    """Write ``text`` to ``path`` by the output rule (atomically; a stream such as ``/dev/stdout``
    in place); an :class:`EvaluationError` naming the file (and ``flag``) when it is refused or the
    system refuses (a full disk, a folder made read-only since the check)."""
    try:
        return write_text(path, text, flag or "output", stream_ok=True)
    except FileRuleError as exc:
        raise EvaluationError(str(exc)) from None


def fail_line(prog: str, exc: BaseException) -> int:
    """Print ``exc`` as one line after ``prog: error:`` and return exit status 2."""
    message = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


__all__ = ["OneLineParser", "add_progress_flags", "progress_disabled", "check_output_file",
           "write_text_file", "fail_line", "writable"]
