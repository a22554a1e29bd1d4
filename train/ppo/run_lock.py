"""One run at a time in a run folder.

Two ``spades-train`` processes writing the same folder interleave ``metrics.csv`` and overwrite
each other's checkpoints while both report success. A run therefore holds an exclusive
``flock`` on ``<run folder>/.lock`` for its whole life; a second run on the folder is refused
with a message naming it. The kernel drops the lock when the process ends, however it ends
(SIGKILL included), so a killed run never leaves the folder stuck; a run that ends normally also
removes the file.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Optional

LOCK_NAME = ".lock"


class RunFolderBusy(RuntimeError):
    """Another process holds the run folder."""


class RunLock:
    """The exclusive hold of one run folder (released by :meth:`release` or at process exit)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._file: Optional[object] = None

    def acquire(self) -> "RunLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            handle = open(self.folder / LOCK_NAME, "a+")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                raise RunFolderBusy(f"the run folder {self.folder} is in use by {holder}: wait for that run to end, "
                                    "or pick another name (--set name=...)") from None
            if self._still_there(handle):
                break
            handle.close()          # the file was removed by the run that held it: lock the new one
        handle.seek(0)
        handle.truncate()
        handle.write(f"spades-train (pid {os.getpid()})\n")
        handle.flush()
        self._file = handle
        return self

    def _still_there(self, handle) -> bool:
        try:
            return os.fstat(handle.fileno()).st_ino == os.stat(self.folder / LOCK_NAME).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Unlock, removing ``.lock`` first (a finished run leaves no lock file behind; removed while
        held, so a run that opened the old file sees it is gone and locks a new one)."""
        if self._file is not None:
            try:
                if self._still_there(self._file):
                    (self.folder / LOCK_NAME).unlink()
            except OSError:
                pass
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None
