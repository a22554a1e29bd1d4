"""The one rule for files this project writes, and the one for files it reads.

Writing. Every output (a model, a shard, a collection's manifest, a JSON summary, a plot, a
record, a kept game) is a regular file or a new path, checked by :func:`check_output` before any
work starts: a folder, a device, a FIFO or a socket is refused by name, so is a path under a file,
an output that is one of the command's inputs (same path or, via ``samefile``, the same file),
and a read-only file or folder (root may write anything; a file without write bits was meant not
to be written). Files are written by :func:`write_atomic` and its wrappers: into a ``.tmp``
beside the target, always removed on failure, and renamed onto the target only after the target
is checked again right before ``os.replace`` (a device could have appeared meanwhile: as root,
``os.replace`` onto ``/dev/null`` replaces the device with a regular file). Only JSON and plots
(``stream_ok=True``) may go to an existing ``/dev/stdout``-style device or FIFO, which is then
written in place, never renamed onto.

Reading. Every input (a model, a checkpoint, a shard, a record, a rules or config file, a
recording) is opened by :func:`open_input`: the path is opened without blocking, and the opened
file (links resolved) must be a regular file within the size bound of its kind, so ``/dev/zero``,
a FIFO or a folder is refused at once, never read or hashed. Whatever goes wrong is a
:class:`FileRuleError`: one line naming the file and what was expected.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Optional

# Size bounds by kind of input (each far above any file the project writes).
MAX_MODEL_BYTES = 1 << 30           # exported models are a few MB; training checkpoints tens of MB
MAX_SHARD_BYTES = 1 << 30           # a labelling or bid-value shard: a few MB
MAX_JSON_BYTES = 64 << 20           # records, manifests, summaries
MAX_TEXT_BYTES = 1_000_000          # rules files, configs
MAX_JSON_DEPTH = 64                 # a record nests 5 or 6 levels

_CHUNK = 1 << 20


class FileRuleError(ValueError):
    """A path that breaks the output or input rule (the message names it and what was expected)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "something else"


def writable(path: Path) -> bool:
    """Whether ``path`` may be written and its owner meant it to be (any write bit set)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    needed = os.W_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)
    return os.access(path, needed) and bool(mode & 0o222)


STREAM_NAMES = ("/dev/null", "/dev/stdout", "/dev/stderr")


def _stream_name(path: Any) -> bool:
    text = os.path.normpath(str(path))
    return text in STREAM_NAMES or re.fullmatch(r"/(dev|proc/self)/fd/\d+", text) is not None


def is_stream(path: Any) -> bool:
    """Whether ``path`` is a stream JSON or a plot may be written to in place: ``/dev/null``,
    ``/dev/stdout``, ``/dev/stderr`` or ``/dev/fd/N`` (whatever they lead to), or an existing
    FIFO. ``/dev/full`` and devices elsewhere are not streams: they are refused."""
    if _stream_name(path):
        return os.path.exists(path)
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):
        pass
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _output_stat(path: Path, what: str, inputs: Iterable[Any], kind: str) -> Optional[os.stat_result]:
    """What ``path`` is now (None: nothing there yet), after refusing it as one of ``inputs``."""
    for source in inputs:
        if source is not None and _same_file(path, Path(source)):
            raise FileRuleError(f"{what} {path} is the input {source}: expected another {kind}")
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise FileRuleError(f"{what} {path}: cannot be used ({exc.strerror or exc})") from None


def check_output(path: Any, what: str = "output", *, stream_ok: bool = False,
                 inputs: Iterable[Any] = (), make_folders: bool = True) -> Path:
    """``path`` as a file this command may write, or a :class:`FileRuleError` naming ``what``.

    Refused: a trailing slash (it names a folder), an existing folder, device, FIFO or socket
    (devices and FIFOs admitted when ``stream_ok``: JSON and plots written in place), an output
    that is one of ``inputs``, a read-only file, a parent that is a file (or, without
    ``make_folders``, missing) or read-only. Nothing is created."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        raise FileRuleError(f"{what} {path}: ends in a slash, so it names a folder: expected a file to write")
    if path is None or str(path) == "":
        raise FileRuleError(f"{what}: an empty path: expected a file to write")
    path = Path(path)
    info = _output_stat(path, what, inputs, "file to write")
    if stream_ok and is_stream(path):
        return path
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise FileRuleError(f"{what} {path} is a folder: expected a file or a new path to write")
        if not stat.S_ISREG(info.st_mode):
            raise FileRuleError(f"{what} {path} is {_kind(info.st_mode)}, not a regular file: expected a file "
                                "or a new path to write")
        if _stream_name(path):
            raise FileRuleError(f"{what} {path} is a stream, not a regular file: expected a file or a new path "
                                "to write (this output is renamed into place)")
        if not writable(path):
            raise FileRuleError(f"{what} {path}: no permission to write it (read-only)")
        return path
    folder = path.parent
    while make_folders and not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        if folder.exists() or os.path.lexists(folder):
            raise FileRuleError(f"{what} {path}: {folder} is not a folder")
        raise FileRuleError(f"{what} {path}: the folder {folder} does not exist")
    if not writable(folder):
        raise FileRuleError(f"{what} {path}: the folder {folder} is not writable (read-only)")
    return path


def check_output_folder(path: Any, what: str = "output folder", *, inputs: Iterable[Any] = ()) -> Path:
    """``path`` as a folder this command may write into (existing, or new under a writable
    folder); a file, a device or a path under a file is a :class:`FileRuleError`. Nothing is created."""
    if path is None or str(path) == "":
        raise FileRuleError(f"{what}: an empty path: expected a folder")
    path = Path(path)
    info = _output_stat(path, what, inputs, "folder")
    if info is not None:
        if not stat.S_ISDIR(info.st_mode):
            raise FileRuleError(f"{what} {path} is {'a file' if stat.S_ISREG(info.st_mode) else _kind(info.st_mode)}: "
                                "expected a folder or a new path")
        if not writable(path):
            raise FileRuleError(f"{what} {path}: the folder is not writable (read-only)")
        return path
    folder = path.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise FileRuleError(f"{what} {path}: {folder} is not a folder")
    if not writable(folder):
        raise FileRuleError(f"{what} {path}: the folder {folder} is not writable (read-only)")
    return path


def write_atomic(path: Any, write: Callable[[BinaryIO], None], what: str = "output", *,
                 stream_ok: bool = False) -> Path:
    """Write ``path`` through ``write(file)``: into a ``.tmp`` beside it, then renamed onto it
    after the target was checked once more; the ``.tmp`` is removed whatever fails. With
    ``stream_ok``, an existing device or FIFO target is written in place instead."""
    path = check_output(path, what, stream_ok=stream_ok)
    if stream_ok and is_stream(path):
        try:
            with open(path, "ab") as file:            # appended: never truncates what stdout holds
                write(file)
        except OSError as exc:
            raise FileRuleError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None
        return path
    if path.is_symlink():                              # replace what the link leads to, keep the link
        path = Path(os.path.realpath(path))
        check_output(path, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise FileRuleError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None
    tmp = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)                 # what open() would have made (mkstemp makes 0600)
        try:                                           # the target again, right before the rename
            info = os.lstat(path)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            kind = "a link" if stat.S_ISLNK(info.st_mode) else _kind(info.st_mode)
            raise FileRuleError(f"{what} {path} is now {kind}, not a regular file: nothing was written there")
        os.replace(tmp, path)
    except OSError as exc:
        raise FileRuleError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None
    finally:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
    return path


def _read_umask() -> int:
    """This process's umask, read without changing it where the system tells it (Linux): setting
    and restoring it would race with files other threads create meanwhile."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)                             # elsewhere: once, when this module is imported
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_bytes(path: Any, data: bytes, what: str = "output", *, stream_ok: bool = False) -> Path:
    """:func:`write_atomic` of ``data``."""
    return write_atomic(path, lambda file: file.write(data), what, stream_ok=stream_ok)


def write_text(path: Any, text: str, what: str = "output", *, stream_ok: bool = False) -> Path:
    """:func:`write_atomic` of ``text`` (UTF-8)."""
    return write_bytes(path, text.encode("utf-8"), what, stream_ok=stream_ok)


def write_json(path: Any, data: Any, what: str = "output", *, indent: Optional[int] = 1,
               stream_ok: bool = True, **dump_options: Any) -> Path:
    """``data`` as JSON (a device or FIFO target such as ``/dev/stdout`` written in place)."""
    return write_text(path, json.dumps(data, indent=indent, **dump_options) + "\n", what, stream_ok=stream_ok)


def save_torch(obj: Any, path: Any, what: str = "output") -> Path:
    """``torch.save(obj)`` to ``path`` by the output rule (never onto a device)."""
    import torch

    return write_atomic(path, lambda file: torch.save(obj, file), what)


def save_figure(fig: Any, path: Any, what: str = "plot", **savefig_options: Any) -> Path:
    """A matplotlib figure saved by the output rule, its format from the target's suffix."""
    fmt = Path(str(path)).suffix.lstrip(".") or "png"
    return write_atomic(path, lambda file: fig.savefig(file, format=fmt, **savefig_options), what, stream_ok=True)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

def check_input(path: Any, what: str = "input", max_bytes: int = MAX_MODEL_BYTES) -> Path:
    """``path`` if it is (links resolved) a regular file of at most ``max_bytes``; a
    :class:`FileRuleError` naming ``what`` otherwise. Nothing is opened."""
    if path is None or str(path) == "":
        raise FileRuleError(f"{what}: an empty path: expected a file to read")
    path = Path(path)
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise FileRuleError(f"{what} {path}: not found (expected a file to read)") from None
    except OSError as exc:
        raise FileRuleError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    _check_input_info(path, info, what, max_bytes)
    return path


def _check_input_info(path: Path, info: os.stat_result, what: str, max_bytes: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise FileRuleError(f"{what} {path} is a folder: expected a file to read")
    if not stat.S_ISREG(info.st_mode):
        raise FileRuleError(f"{what} {path} is {_kind(info.st_mode)}, not a regular file: expected a file to read")
    if info.st_size > max_bytes:
        raise FileRuleError(f"{what} {path}: {info.st_size:,} bytes; expected at most {max_bytes:,}")


def open_input(path: Any, what: str = "input", max_bytes: int = MAX_MODEL_BYTES) -> BinaryIO:
    """``path`` opened for reading (binary) after the input rule: opened without blocking (a FIFO
    never hangs), and the opened file must be a regular file of at most ``max_bytes``."""
    path = check_input(path, what, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise FileRuleError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        _check_input_info(path, os.fstat(fd), what, max_bytes)   # the file opened, whatever the path became
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Any, what: str = "input", max_bytes: int = MAX_MODEL_BYTES) -> bytes:
    """The bytes of ``path`` by the input rule (never more than ``max_bytes`` read)."""
    with open_input(path, what, max_bytes) as file:
        try:
            data = file.read(max_bytes + 1)
        except OSError as exc:
            raise FileRuleError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise FileRuleError(f"{what} {path}: more than {max_bytes:,} bytes")
    return data


def read_text(path: Any, what: str = "input", max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of ``path`` by the input rule."""
    raw = read_bytes(path, what, max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRuleError(f"{what} {path}: not UTF-8 text (byte {exc.start}): expected a text file") from None


def file_sha256(path: Any, what: str = "input", max_bytes: int = MAX_MODEL_BYTES) -> str:
    """SHA-256 of ``path``'s bytes by the input rule (read in chunks)."""
    digest = hashlib.sha256()
    total = 0
    with open_input(path, what, max_bytes) as file:
        try:
            while chunk := file.read(_CHUNK):
                total += len(chunk)
                if total > max_bytes:
                    raise FileRuleError(f"{what} {path}: more than {max_bytes:,} bytes")
                digest.update(chunk)
        except OSError as exc:
            raise FileRuleError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    return digest.hexdigest()


def json_shape(text: str | bytes) -> tuple[int, int]:
    """(how deeply ``text``'s JSON arrays and objects nest, how many there are), found without
    parsing: a 200,000 deep array is measured, not recursed into, and 60 MB of ``{}`` is counted
    before 30 million dicts are built. Brackets inside strings do not count."""
    import numpy as np

    raw = text.encode("utf-8", "replace") if isinstance(text, str) else bytes(text)
    raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")      # escaped backslashes and quotes
    codes = np.frombuffer(raw, dtype=np.uint8)
    brackets = np.flatnonzero((codes == ord("[")) | (codes == ord("{")) | (codes == ord("]")) | (codes == ord("}")))
    quotes = np.flatnonzero(codes == ord('"'))
    if quotes.size:                                    # an odd number of quotes before it: inside a string
        brackets = brackets[(np.searchsorted(quotes, brackets) & 1) == 0]
    if brackets.size == 0:
        return 0, 0
    kinds = codes[brackets]
    opening = (kinds == ord("[")) | (kinds == ord("{"))
    depth = np.cumsum(np.where(opening, 1, -1).astype(np.int32))
    return int(depth.max()), int(np.count_nonzero(opening))


def json_depth(text: str) -> int:
    """How deeply ``text``'s JSON arrays and objects nest (:func:`json_shape`)."""
    return json_shape(text)[0]


def parse_json(text: str | bytes, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)`` once its nesting is within ``max_depth``; a :class:`FileRuleError`
    naming ``where`` for bytes that are not UTF-8, JSON that is not JSON, or too deep."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FileRuleError(f"{where}: not UTF-8 text (byte {exc.start}): expected JSON") from None
    depth = json_depth(text)
    if depth > max_depth:
        raise FileRuleError(f"{where}: JSON nested {depth:,} levels deep; expected at most {max_depth}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FileRuleError(f"{where}: not valid JSON ({first})") from None


def read_json(path: Any, what: str = "input", max_bytes: int = MAX_JSON_BYTES,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A JSON file by the input rule, parsed within ``max_depth`` levels."""
    return parse_json(read_bytes(path, what, max_bytes), f"{what} {path}", max_depth)


def check_zip_sizes(archive: Any, what: str, path: Any, max_bytes: int) -> None:
    """Refuse a torch archive (a zip: a path or a binary file) whose entries would unpack to more
    than ``max_bytes``, sizes taken from the archive's own directory (nothing is inflated)."""
    import zipfile

    try:
        with zipfile.ZipFile(archive) as opened:
            total = sum(entry.file_size for entry in opened.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise FileRuleError(f"{what} {path}: not a torch archive ({type(exc).__name__}): "
                            "expected a file written by torch.save") from None
    if total > max_bytes:
        raise FileRuleError(f"{what} {path}: its archive unpacks to {total:,} bytes; expected at most {max_bytes:,}")


def load_torch(path: Any, what: str = "input", max_bytes: int = MAX_MODEL_BYTES) -> Any:
    """``torch.load`` (weights only: tensors and plain data, no code) of a file by the input rule;
    any loading error (not an archive, truncated, pickled code refused) one line naming it."""
    import torch

    data = io.BytesIO(read_bytes(path, what, max_bytes))
    check_zip_sizes(data, what, path, max_bytes)
    data.seek(0)
    try:
        return torch.load(data, map_location="cpu", weights_only=True)
    except Exception as exc:           # UnpicklingError, RuntimeError, EOFError, zip errors...
        reason = str(exc).splitlines()[0].split(". ")[0] if str(exc) else ""
        raise FileRuleError(f"{what} {path}: corrupt or not a file written by torch.save "
                            f"({type(exc).__name__}: {reason[:160]})") from None


__all__ = ["FileRuleError", "MAX_MODEL_BYTES", "MAX_SHARD_BYTES", "MAX_JSON_BYTES", "MAX_TEXT_BYTES",
           "MAX_JSON_DEPTH", "writable", "check_output", "check_output_folder", "is_stream", "write_atomic", "write_bytes",
           "write_text", "write_json", "save_torch", "save_figure", "check_input", "open_input", "read_bytes",
           "read_text", "file_sha256", "json_shape", "json_depth", "parse_json", "read_json", "check_zip_sizes", "load_torch"]
