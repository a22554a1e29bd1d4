"""What every command line shares: argparse errors in one line, output files checked before any
work starts, and the one "no progress bar" flag.

A mistyped number (``--deals ten``) or choice (``--partner serach``) used to print argparse's
usage block; a ``--json`` inside a read-only folder, under a file or on a full device failed
after the work was done, with a traceback. Here they are one line and exit status 2, up front.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Any, Optional

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


def check_output_file(path: Any, flag: str) -> Path:
    """``path`` as a file this command may write (created with its folders when missing), or an
    :class:`EvaluationError` naming the flag: a folder, a path under a file, a folder that cannot
    be written, or something that is not a regular file (``/dev/full``) are refused here, before
    any work starts. Nothing is created. A path written with a trailing slash names a folder
    (``--json out/`` wrote a file named ``out``: ``Path`` drops the slash)."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        raise EvaluationError(f"{flag} {path}: ends in a slash, so it names a folder: expected a file to write, "
                              f"e.g. {path.rstrip('/' + os.sep) or '.'}/result.json")
    path = Path(path)
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        raise EvaluationError(f"{flag} {path}: cannot be used ({exc.strerror or exc})") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise EvaluationError(f"{flag} {path} is a folder: expected a file to write")
        if not stat.S_ISREG(info.st_mode) and str(path) != os.devnull:
            raise EvaluationError(f"{flag} {path} is not a regular file (a device, FIFO or socket): "
                                  "expected a file to write")
        if not writable(path):
            raise EvaluationError(f"{flag} {path}: no permission to write it (read-only)")
        return path
    folder = path.parent
    while not folder.exists() and folder != folder.parent:      # made when the file is written
        folder = folder.parent
    if not folder.is_dir():
        raise EvaluationError(f"{flag} {path}: {folder} is not a folder")
    if not writable(folder):
        raise EvaluationError(f"{flag} {path}: the folder {folder} is not writable (read-only)")
    return path


def writable(path: Any) -> bool:
    """Whether this process may write ``path`` and its owner meant it to be written: a file or
    folder without any write permission bit is read-only even to root, who ``os.access`` lets
    write anything (the file was written where the user had said no)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    needed = os.W_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)
    return os.access(path, needed) and bool(mode & 0o222)


def write_text_file(path: Any, text: str, flag: Optional[str] = None) -> Path:
    """Write ``text`` to ``path`` (its folders made); an :class:`EvaluationError` naming the file
    (and ``flag``) when the system refuses (a full disk, a folder made read-only since the check)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        where = f"{flag} {path}" if flag else str(path)
        raise EvaluationError(f"{where}: cannot be written ({exc.strerror or exc})") from None
    return path


def fail_line(prog: str, exc: BaseException) -> int:
    """Print ``exc`` as one line after ``prog: error:`` and return exit status 2."""
    message = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


__all__ = ["OneLineParser", "add_progress_flags", "progress_disabled", "check_output_file",
           "write_text_file", "fail_line", "writable"]
