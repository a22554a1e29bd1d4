"""A match's finished deals written as they finish, so that a killed ``spades-eval`` resumes:
``spades-eval ... --journal FILE``, then the same command again.

The file is JSON lines: a header naming the match (the teams' specs, rules, mode, deal count,
duplicate, seed, start scores), then one line per finished unit (a deal, or a game seed) with all
its plays' outcomes. Each unit is played from seeds derived from the match seed and its index, so
the units read back are exactly those a full run would play, and the result (its timings
aside) is the uninterrupted run's.

What is refused, before anything is played (an :class:`EvaluationError` naming the file, and the
line where there is one): a path that is not a regular file (a directory, ``/dev/null``, a FIFO:
checked without opening it) or cannot be written; a file that is not UTF-8 text, not a journal,
of another version or of another match; a line whose checksum (every line carries one) does not
match its content, or that is not a well-formed entry of this match. What is not refused: the
last line torn by a kill (cut off and played again), and an entry without all the plays of its
deal (the deal is played again whole: a deal counts only complete).

Versions: a version-3 journal (written before games won from behind were counted) resumes; the
games read from its lines are marked (``PlayOutcome.counts_wins_from_behind``), and the result
counts wins from behind over the other games only, saying so (``wins_from_behind_games`` in the
JSON, a note in the report). Lines appended to it are written whole, so a version-3 header may
stand over lines of both forms; a version-4 header over a line without ``wins_from_behind`` is
refused, and so is a tally whose wins from behind, by a bag-out or by a blind nil exceed its wins. A model file a spec loads
(``neural:checkpoint=FILE``, ``neural:model=NAME``, the shipped ``neural``) is hashed into the
header (``models``): a journal resumed after such a file changed is refused, since its deals were
played by the old model (a zoo partner retrained under the same name used to hand back the old
partner's scores under the new suite hash).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
import warnings
from pathlib import Path
from typing import Any, Optional, Sequence

from .outcomes import HAND_KINDS, TEAMS, EvaluationError, PlayOutcome, TeamTally

FORMAT = "spades-eval-journal"
VERSION = 4                       # 2: a checksum on every line; 3: points by kind, games decided by;
                                  # 4: games won from behind going into the last hand
READS = (3, 4)                    # a version-3 journal resumes: its plays count no wins from behind
_ADDED_IN_4 = {"wins_from_behind"}
CHECK = "check"                   # the key of a line's checksum (its last key)
_NOT_WRITTEN = {"counts_wins_from_behind"}    # known from the tallies' fields when read back
_OUTCOME_FIELDS = {f.name for f in dataclasses.fields(PlayOutcome)} - _NOT_WRITTEN
_TALLY_FIELDS = {f.name for f in dataclasses.fields(TeamTally)}
_SIGNED_TALLY_FIELDS = ("points", "bid_error_sum", "contract_points", "nil_points", "blind_nil_points",
                        "bag_penalty_points")


def match_key(configs: Sequence[Any]) -> list[dict]:
    """What decides the outcomes of a set of matches (JSON-comparable)."""
    key = []
    for config in configs:
        teams = {}
        for name, team in (("A", config.team_a), ("B", config.team_b)):
            teams[name] = [[player.label, player.salt] for player in (team.first, team.second)]
        key.append({"teams": teams, "rules": config.rules.to_dict(), "mode": config.mode, "units": config.units,
                    "duplicate": config.duplicate, "seed": config.seed,
                    "start_scores": list(config.start_scores) if config.start_scores is not None else None,
                    "keep_records": config.keep_records})
        if getattr(config, "start", "zero") != "zero":   # a 0-0 match's key stays as it was
            key[-1]["start"] = config.start
    return json.loads(json.dumps(key))


def model_hashes(configs: Sequence[Any]) -> dict[str, str]:
    """SHA-256 of every model file the players' specs load, by spec (``missing`` for a file that
    is not there): what a resume checks has not changed."""
    from agents.specs import parse_agent_spec

    from .model_files import file_digest, model_file
    hashes: dict[str, str] = {}
    for config in configs:
        for team in (config.team_a, config.team_b):
            for player in (team.first, team.second):
                try:
                    name, options = parse_agent_spec(player.label)
                except ValueError:                 # a factory's label, not a spec
                    continue
                files = []
                if name.startswith("neural") or "checkpoint" in options or "model" in options:
                    files.append(model_file(player.label))        # (imports torch: only when a model is named)
                guide = options.get("guide")
                if isinstance(guide, str):                       # the search's guiding policy
                    files.append(model_file("neural") if guide == "neural" else Path(guide))
                for number, path in enumerate(f for f in files if f is not None):
                    key = player.label if number == 0 else f"{player.label} (guide)"
                    hashes[key] = file_digest(path) or "missing"
    return hashes


def checksum(entry: dict) -> str:
    """The checksum of a line's content (the entry as written, without its checksum)."""
    return hashlib.blake2b(json.dumps(entry).encode(), digest_size=8).hexdigest()


def encode_line(entry: dict) -> str:
    """One journal line: the entry with its checksum as the last key."""
    return json.dumps({**entry, CHECK: checksum(entry)}) + "\n"


def check_journal_path(path: str | Path) -> bool:
    """Whether ``path`` holds a journal to read (else it is to be created); an
    :class:`EvaluationError` when it is not a regular file or cannot be written. Nothing is
    opened: a FIFO or a device is refused as it is. A path written with a trailing slash
    (``--journal dir/``) names a folder, and is refused (``Path`` drops the slash: a file named
    ``dir`` was created)."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        raise EvaluationError(f"--journal {path}: ends in a slash, so it names a folder: expected a file (new, "
                              f"or a journal to resume), e.g. {path.rstrip('/' + os.sep) or '.'}/journal.jsonl")
    path = Path(path)
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        raise EvaluationError(f"--journal {path}: cannot be read ({exc.strerror or exc})") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise EvaluationError(f"--journal {path} is a directory: expected a file (new, or a journal to resume)")
        if not stat.S_ISREG(info.st_mode):
            raise EvaluationError(f"--journal {path} is not a regular file (a device, FIFO or socket): expected a "
                                  "file (new, or a journal to resume)")
        if not os.access(path, os.R_OK | os.W_OK):
            raise EvaluationError(f"--journal {path}: no permission to read and write it")
        return info.st_size > 0
    folder = path.parent
    while not folder.exists() and folder != folder.parent:       # created at the start of play
        folder = folder.parent
    if not folder.is_dir():
        raise EvaluationError(f"--journal {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EvaluationError(f"--journal {path}: the directory {folder} is not writable")
    return False


class Journal:
    """The finished units of ``configs`` in ``path`` (read and checked at construction, before
    any play; ``add`` appends one unit, ``close`` syncs the file to disk)."""

    def __init__(self, path: str | Path, configs: Sequence[Any]) -> None:
        exists = check_journal_path(path)
        self.path = Path(path)
        self.configs = list(configs)
        self.done: dict[tuple[int, int], list[PlayOutcome]] = {}
        self.version = VERSION           # the header's, once a journal is read
        self._file = None
        header = {"format": FORMAT, "version": VERSION, "match": match_key(configs)}
        models = model_hashes(configs)
        if models:                       # matches without models keep the header they had
            header["models"] = models
        keep = self._read(header) if exists else None
        try:
            if keep is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("w", encoding="utf-8")
                self._file.write(encode_line(header))
                self._file.flush()
            else:
                with self.path.open("r+b") as raw:       # cut a line torn by a kill
                    raw.truncate(keep)
                self._file = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise EvaluationError(f"--journal {self.path}: cannot be written ({exc.strerror or exc})") from None

    def _fail(self, line: Optional[int], message: str) -> EvaluationError:
        where = f"--journal {self.path}" + (f", line {line}" if line is not None else "")
        return EvaluationError(f"{where}: {message}")

    def _read(self, header: dict) -> Optional[int]:
        """Read a journal into ``done``; the number of bytes to keep (a torn last line cut), or
        None when the file holds only a torn header (start again)."""
        data = self.path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail(None, "not a spades-eval journal (not UTF-8 text)") from None
        keep = text.rfind("\n") + 1                  # a last line without its newline was torn by a kill
        if keep == 0:
            if encode_line(header).startswith(text):
                return None                          # killed while writing the header
            raise self._fail(None, "not a spades-eval journal (no complete first line)")
        lines = text[:keep].splitlines()
        first = self._entry(lines[0], 1, header=True)
        self.version = first["version"]
        if first.get("match") != header["match"]:
            raise self._fail(None, "holds another match (other teams, rules, deals or seed); pick another file, or "
                                   "delete it to start again")
        self._check_models(first.get("models"), header.get("models") or {})
        seen: dict[tuple[int, int], int] = {}
        for number, line in enumerate(lines[1:], start=2):
            entry = self._entry(line, number)
            m, unit, outcomes = self._unit(entry, number)
            if (m, unit) in seen:
                word = "deal" if self.configs[m].mode == "hands" else "game"
                raise self._fail(number, f"{word} {unit} is already on line {seen[(m, unit)]}")
            seen[(m, unit)] = number
            plays = [0, 1] if self.configs[m].duplicate else [0]
            if [o.play for o in outcomes] == plays:
                self.done[(m, unit)] = outcomes
            # else: not all the deal's plays are here; it is played again whole
        return len(text[:keep].encode("utf-8"))

    def _check_models(self, written: Any, now: dict[str, str]) -> None:
        """Refuse a journal whose deals were played by a model file that has changed since."""
        if not now:
            return
        if not isinstance(written, dict):
            raise self._fail(1, f"cannot tell whether the model of {next(iter(now))!r} changed since the journal was "
                                "written (it records no model hashes); delete it to start again")
        for spec, digest in now.items():
            if written.get(spec) != digest:
                raise self._fail(1, f"the model file of {spec!r} changed since this journal was written (its deals "
                                    "were played by the old model); delete the journal to start again, or pick "
                                    "another file")

    def _entry(self, line: str, number: int, header: bool = False) -> dict:
        """A line's JSON object, its checksum checked and removed."""
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            entry = None
        if not isinstance(entry, dict):
            what = "not a spades-eval journal (its first line is not a JSON object)" if header else \
                "not a JSON object: the journal is damaged (delete it to start again)"
            raise self._fail(None if header else number, what)
        written = entry.pop(CHECK, None)
        if header and entry.get("format") != FORMAT:
            raise self._fail(None, "not a spades-eval journal")
        if header and entry.get("version") not in READS:
            raise self._fail(1, f"journal format version {entry.get('version')!r}; this spades-eval reads versions "
                                f"{', '.join(map(str, READS))}: finish it with the spades-eval that wrote it, or "
                                "delete it to start again")
        if written != checksum(entry):
            raise self._fail(number, "its checksum does not match its content (changed since spades-eval wrote it); "
                                     "delete the journal to start again")
        return entry

    def _unit(self, entry: dict, number: int) -> tuple[int, int, list[PlayOutcome]]:
        """A unit's entry read into outcomes; an error naming the line when it is not one of this match."""
        try:
            if set(entry) != {"m", "unit", "outcomes"}:
                raise ValueError("expected the keys m, unit, outcomes")
            m, unit = entry["m"], entry["unit"]
            if not (_is_int(m) and 0 <= m < len(self.configs) and _is_int(unit) and 0 <= unit < self.configs[m].units):
                raise ValueError(f"no unit {unit!r} of match {m!r} here")
            if not isinstance(entry["outcomes"], list):
                raise ValueError("outcomes is not a list")
            outcomes = [_outcome(o, unit, self.version) for o in entry["outcomes"]]
        except ValueError as exc:
            raise self._fail(number, f"not an entry of this match ({exc})") from None
        return m, unit, outcomes

    def add(self, m: int, unit: int, outcomes: list[PlayOutcome]) -> None:
        """Append one finished unit (flushed to the OS: a kill of this process loses nothing written)."""
        entry = {"m": m, "unit": unit, "outcomes": [{k: v for k, v in dataclasses.asdict(o).items() if k not in _NOT_WRITTEN}
                                                    for o in outcomes]}
        try:
            self._file.write(encode_line(entry))
            self._file.flush()
        except OSError as exc:
            raise EvaluationError(f"--journal {self.path}: cannot be written ({exc.strerror or exc}); the match "
                                  "was not finished") from None
        self.done[(m, unit)] = outcomes

    def close(self) -> None:
        """Sync and close the file. A failed sync only warns: the units are written, and the
        match's result does not depend on the journal."""
        if self._file is None:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            warnings.warn(f"--journal {self.path}: could not be synced to disk ({exc.strerror or exc})", stacklevel=2)
        finally:
            self._file.close()
            self._file = None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _outcome(data: Any, unit: int, version: int = VERSION) -> PlayOutcome:
    """One play's outcome from its JSON form, every field checked (a ValueError says which), in a
    journal whose header is of ``version`` (3: its tallies may lack ``wins_from_behind``)."""
    if not isinstance(data, dict) or set(data) != _OUTCOME_FIELDS:
        raise ValueError(f"a play needs exactly the fields {sorted(_OUTCOME_FIELDS)}")
    if data["unit"] != unit or data["play"] not in (0, 1) or not _is_int(data["play"]):
        raise ValueError(f"a play of unit {data['unit']!r} (play {data['play']!r}) under unit {unit}")
    if not _is_int(data["hands"]) or data["hands"] < 1:
        raise ValueError(f"hands={data['hands']!r}")
    if data["winner"] not in (None, *TEAMS) or not (data["record"] is None or isinstance(data["record"], dict)):
        raise ValueError("winner or record malformed")
    tallies = data["tallies"]
    if not isinstance(tallies, dict) or set(tallies) != set(TEAMS):
        raise ValueError("tallies need teams A and B")
    forms = (_TALLY_FIELDS,) if version >= 4 else (_TALLY_FIELDS, _TALLY_FIELDS - _ADDED_IN_4)
    for tally in tallies.values():
        if not isinstance(tally, dict) or set(tally) not in forms:
            older = isinstance(tally, dict) and set(tally) == _TALLY_FIELDS - _ADDED_IN_4
            raise ValueError(f"a tally of version 3 (without {', '.join(sorted(_ADDED_IN_4))}) under a version-"
                             f"{version} header" if older else f"a tally needs exactly the fields {sorted(_TALLY_FIELDS)}")
        for name, value in tally.items():
            if not (_is_int(value) or (name == "seconds" and isinstance(value, float))) or \
                    (name not in _SIGNED_TALLY_FIELDS and value < 0):
                raise ValueError(f"tally {name}={value!r}")
        for name in ("wins_from_behind", "wins_by_bag_out", "wins_by_blind_nil"):
            if tally.get(name, 0) > tally["wins"]:
                raise ValueError(f"tally {name}={tally[name]} exceeds its wins={tally['wins']}")
    counted = [set(tally) == _TALLY_FIELDS for tally in tallies.values()]
    if counted[0] != counted[1]:
        raise ValueError(f"one team's tally has {', '.join(sorted(_ADDED_IN_4))}, the other's not")
    kinds = data["kinds"]
    if not isinstance(kinds, dict) or not set(kinds) <= set(HAND_KINDS) or \
            not all(isinstance(v, list) and len(v) == 2 and all(map(_is_int, v)) for v in kinds.values()):
        raise ValueError("kinds malformed")
    values = dict(data)
    values["tallies"] = {team: TeamTally(**tally) for team, tally in tallies.items()}
    return PlayOutcome(**values, counts_wins_from_behind=counted[0])
