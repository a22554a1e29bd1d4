"""Reading a YAML file a person wrote, within bounds: one line for every way it can be wrong.

``yaml.safe_load`` refuses Python tags but not the rest: a few hundred bytes of nested aliases
expand to gigabytes (MemoryError after a minute), 10,000 nested brackets are a RecursionError,
bytes that are not UTF-8 a UnicodeDecodeError, and a folder or ``/dev/zero`` given as the file is
read until memory runs out. :func:`load_yaml_file` checks the file (a regular file of at most
``max_bytes``), then walks YAML's events (no anchors or aliases, at most ``max_depth`` levels)
before anything is built, so each of these is a :class:`YamlLimitError` naming the file, fast.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_YAML_BYTES = 1_000_000        # a config is a few KB
MAX_YAML_DEPTH = 32               # a config nests 3 or 4 levels


class YamlLimitError(ValueError):
    """A YAML file that cannot be read within bounds (the message names the file and why)."""


def read_text_file(path: str | os.PathLike, what: str = "file", max_bytes: int = MAX_YAML_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` (a device, FIFO or folder is
    refused before it is opened)."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise YamlLimitError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise YamlLimitError(f"{what} {path} is a folder: expected a YAML file")
    if not stat.S_ISREG(info.st_mode):
        raise YamlLimitError(f"{what} {path} is not a regular file (a device, FIFO or socket): expected a YAML file")
    if info.st_size > max_bytes:
        raise YamlLimitError(f"{what} {path}: {info.st_size:,} bytes; expected at most {max_bytes:,}")
    from .files import FileRuleError, read_bytes     # opened without blocking: a FIFO swapped in never hangs
    try:
        raw = read_bytes(path, what, max_bytes)
    except FileRuleError as exc:
        raise YamlLimitError(f"cannot read {exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlLimitError(f"{what} {path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") \
            from None


def load_yaml_text(text: str, where: str, max_depth: int = MAX_YAML_DEPTH) -> Any:
    """``yaml.safe_load(text)`` after its events were checked: no anchors or aliases, at most
    ``max_depth`` levels of nesting. ``where`` names the source in the error."""
    import yaml

    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise YamlLimitError(f"{where}: YAML anchors and aliases (&name, *name) are not accepted; "
                                     "write each value out")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > max_depth:
                    raise YamlLimitError(f"{where}: nested too deeply (at most {max_depth} levels)")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise YamlLimitError(f"{where}: not valid YAML ({first})") from None
    except (OverflowError, RecursionError) as exc:
        raise YamlLimitError(f"{where}: a value cannot be read ({type(exc).__name__})") from None
    except ValueError as exc:                  # e.g. an integer of 5,000 digits
        if isinstance(exc, YamlLimitError):
            raise
        reason = str(exc).splitlines()[0]
        if "integer string conversion" in reason:       # Python's advice (set_int_max_str_digits) is not ours
            reason = "a number of more than 4,300 digits; expected a number of a few digits"
        raise YamlLimitError(f"{where}: a value cannot be read ({reason})") from None


def load_yaml_file(path: str | os.PathLike, what: str = "file", max_bytes: int = MAX_YAML_BYTES,
                   max_depth: int = MAX_YAML_DEPTH) -> Any:
    """A YAML file's data, read within bounds (see the module doc)."""
    return load_yaml_text(read_text_file(path, what, max_bytes), f"{what} {path}", max_depth)


__all__ = ["YamlLimitError", "load_yaml_file", "load_yaml_text", "read_text_file", "MAX_YAML_BYTES",
           "MAX_YAML_DEPTH"]
