"""A match's finished deals written as they finish, so that a killed ``spades-eval`` resumes:
``spades-eval ... --journal FILE``, then the same command again.

The file is JSON lines: a header naming the match (the teams' specs, rules, mode, deal count,
duplicate, seed, start scores), then one line per finished unit (a deal, or a game seed) with its
plays' outcomes. Each unit is played from seeds derived from the match seed and its index, so
the units read back are exactly those a full run would play, and the result (its timings
aside) is the uninterrupted run's. A line torn by a kill is dropped (that unit is played again);
a file that names another match is refused. The journal trusts the specs: a checkpoint file
changed under the same path is not noticed.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Sequence

from .outcomes import EvaluationError, PlayOutcome, TeamTally

FORMAT = "spades-eval-journal"
VERSION = 1


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
    return json.loads(json.dumps(key))


class Journal:
    """The finished units of ``configs`` in ``path`` (read at construction; ``add`` appends)."""

    def __init__(self, path: str | Path, configs: Sequence[Any], error: type = EvaluationError) -> None:
        self.path = Path(path)
        self.done: dict[tuple[int, int], list] = {}
        key = match_key(configs)
        header = {"format": FORMAT, "version": VERSION, "match": key}
        if self.path.exists() and self.path.stat().st_size > 0:
            text = self.path.read_text()
            lines = text.splitlines()
            try:
                first = json.loads(lines[0])
            except (json.JSONDecodeError, IndexError):
                raise error(f"--journal {self.path}: not a spades-eval journal (its first line is not JSON)") from None
            if not isinstance(first, dict) or first.get("format") != FORMAT:
                raise error(f"--journal {self.path}: not a spades-eval journal")
            if first.get("match") != key:
                raise error(f"--journal {self.path} holds another match (other teams, rules, deals or seed); "
                            "pick another file, or delete it to start again")
            for line in lines[1:]:
                try:
                    entry = json.loads(line)
                    m, unit = int(entry["m"]), int(entry["unit"])
                    outcomes = [_outcome(o) for o in entry["outcomes"]]
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue                             # a line torn by a kill: that unit is played again
                if 0 <= m < len(configs) and 0 <= unit < configs[m].units:
                    self.done[(m, unit)] = outcomes
            self._file = self.path.open("a")
            if not text.endswith("\n"):
                self._file.write("\n")                   # end a torn last line before appending
        else:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w")
            self._file.write(json.dumps(header) + "\n")
            self._file.flush()

    def add(self, m: int, unit: int, outcomes: list) -> None:
        """Append one finished unit (flushed to the OS: a kill of this process loses nothing written)."""
        entry = {"m": m, "unit": unit, "outcomes": [dataclasses.asdict(o) for o in outcomes]}
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()
        self.done[(m, unit)] = outcomes

    def close(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


def _outcome(data: dict) -> Any:
    fields = {f.name for f in dataclasses.fields(PlayOutcome)}
    if set(data) - fields:
        raise ValueError("unknown outcome fields")
    values = dict(data)
    values["tallies"] = {team: TeamTally(**tally) for team, tally in data["tallies"].items()}
    return PlayOutcome(**values)
