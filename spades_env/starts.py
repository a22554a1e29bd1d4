"""Where a hand starts, by name: ``"zero"`` (0-0, no bags) or ``"real"`` (a state whole games reach).

A single hand started at 0-0 with no bags is not a hand of Spades as it is played: an overtrick
costs nothing, blind nil is never offered (a side must trail by 100), and nothing depends on the
score. ``"real"`` draws the start of a hand (both sides' scores and bags, and the dealer) from the
states that whole games between the baselines reached, so that a single hand meets blind nil and
the bag limit as often as a hand of a real game does.

The table is a small committed data file, ``spades_env/data/real_starts.json``, recorded under the
standard rules by ``python -m evaluation.record_starts`` (its exact command is in the file and in
docs/evaluation.md). Every recorded hand start counts once, and each is stored in both
orientations (the sides swapped, the dealer one seat on), so the table favours neither side.

    from spades_env.starts import sample_starts
    scores, bags, dealers = sample_starts("real", 1000, seed=0)   # (1000, 2), (1000, 2), (1000,)

The env takes it as ``env.reset(seed=s, options={"start": "real"})``, ``spades-eval`` as
``--start real`` and ``spades-train`` as ``game.start: real``.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from .files import MAX_JSON_BYTES, read_text

from .game import start_scores_problem
from .rules import Rules, make_rules

START_NAMES = ("zero", "real")
DATA_FILE = Path(__file__).parent / "data" / "real_starts.json"
FORMAT = "spades-starts/1"
COLUMNS = ("score_0", "score_1", "bags_0", "bags_1", "dealer", "count")


class StartError(ValueError):
    """An unknown start name, an unreadable table, or rules the table was not recorded under."""


def hand_start_names() -> tuple[str, ...]:
    """The names every ``start`` option takes."""
    return START_NAMES


def check_start_name(name: Any, what: str = "start") -> str:
    """``name`` if it is one of :func:`hand_start_names`, else a :class:`StartError` naming it."""
    if not isinstance(name, str) or name not in START_NAMES:
        raise StartError(f"{what}={name!r}: expected one of {', '.join(repr(n) for n in START_NAMES)} "
                         "(0-0 with no bags, or a state drawn from recorded whole games)")
    return name


@dataclass(frozen=True)
class StartTable:
    """Distinct hand-start states and how often games reached each (sides 0 and 1; seats 0..3)."""

    scores: np.ndarray      # (n, 2) int64
    bags: np.ndarray        # (n, 2) int64
    dealers: np.ndarray     # (n,) int64
    counts: np.ndarray      # (n,) int64: recorded hand starts in this state
    meta: dict              # the file's header: rules, sources, the command that made it

    @property
    def hands(self) -> int:
        return int(self.counts.sum())

    def summary(self, rules: Any = "standard") -> dict:
        """What a hand drawn from the table meets, on average: see :func:`start_summary`."""
        rules = rules if isinstance(rules, Rules) else make_rules(rules)
        w = self.counts / self.counts.sum()
        deficit = np.abs(self.scores[:, 0] - self.scores[:, 1])
        offered = (deficit >= rules.blind_nil_min_deficit) if rules.blind_nil else np.zeros(len(w), bool)
        near_limit = (self.bags >= rules.bag_limit - 3).any(1)
        return {"blind_nil_offered_share": float(w @ offered), "mean_bags": float(w @ self.bags.mean(1)),
                "near_bag_limit_share": float(w @ near_limit),
                "mean_abs_score_gap": float(w @ deficit), "hand_starts": self.hands}


def parse_table(data: dict, source: str = "table") -> StartTable:
    """A :class:`StartTable` from the file's JSON (checked: a bad file is one clear error)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StartError(f"{source}: expected a JSON object with format {FORMAT!r}")
    if tuple(data.get("columns", ())) != COLUMNS:
        raise StartError(f"{source}: columns {data.get('columns')!r}, expected {list(COLUMNS)}")
    try:
        rows = np.asarray(data["states"], dtype=np.int64).reshape(-1, len(COLUMNS))
    except (KeyError, TypeError, ValueError):
        raise StartError(f"{source}: 'states' must be rows of {len(COLUMNS)} integers") from None
    if len(rows) == 0 or (rows[:, 5] <= 0).any() or ((rows[:, 4] < 0) | (rows[:, 4] > 3)).any():
        raise StartError(f"{source}: expected at least one state, counts > 0 and dealers 0..3")
    meta = {k: v for k, v in data.items() if k != "states"}
    return StartTable(rows[:, 0:2].copy(), rows[:, 2:4].copy(), rows[:, 4].copy(), rows[:, 5].copy(), meta)


@functools.lru_cache(maxsize=4)
def load_table(path: Optional[str] = None) -> StartTable:
    """The recorded table (``spades_env/data/real_starts.json`` unless ``path``), read once."""
    file = Path(path) if path is not None else DATA_FILE
    try:                                    # a regular file within bounds (never /dev/zero or a FIFO)
        data = json.loads(read_text(file, "real starts table", MAX_JSON_BYTES))
    except (OSError, ValueError, RecursionError) as exc:   # FileRuleError is a ValueError
        raise StartError(f"the real starts table {str(file)!r} cannot be read ({exc}); regenerate it with "
                         "python -m evaluation.record_starts") from None
    return parse_table(data, str(file))


def check_rules(table: StartTable, rules: Rules) -> None:
    """The table's states must be states of a game under ``rules``: the same target, bag limit
    and mercy score as it was recorded under, partnerships, bags kept apart from the score, the
    full deck (a free signal changes no score, so ``signals`` is free)."""
    recorded = table.meta.get("rules_settings", {})
    problems = [f"{key}={getattr(rules, key)!r} (recorded under {recorded.get(key)!r})"
                for key in ("target_score", "bag_limit", "mercy_score")
                if key in recorded and getattr(rules, key) != recorded[key]]
    if not rules.partnerships:
        problems.append("partnerships=False (the table has two sides)")
    if rules.bags_from_score_digit:
        problems.append("bags_from_score_digit=True (the table's bags are not its scores' last digits)")
    if rules.deck_ranks != recorded.get("deck_ranks", 13):
        # a short deck's hands move scores by far fewer points: full-deck games' states are not its states
        problems.append(f"deck_ranks={rules.deck_ranks} (a short deck; the table was recorded with the full deck)")
    if not problems:
        low, high = int(table.scores.min()), int(table.scores.max())
        problem = start_scores_problem(rules, [low, high])
        if problem:
            problems.append(f"its scores reach {low}..{high}: {problem}")
    if problems:
        raise StartError(f"start='real' under rules {rules.name!r}: the real starts table was recorded under "
                         f"{table.meta.get('rules', 'standard')!r} rules and does not fit: {'; '.join(problems)}")


def _uniforms(rng: Union[None, int, random.Random, np.random.Generator], count: int) -> np.ndarray:
    if isinstance(rng, random.Random):
        return np.array([rng.random() for _ in range(count)])
    if isinstance(rng, np.random.Generator):
        return rng.random(count)
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.default_rng(rng).random(count)
    raise StartError(f"seed={rng!r}: expected an integer seed, a random.Random or a numpy Generator")


def sample_starts(name: str, count: int, seed: Union[None, int, random.Random, np.random.Generator] = None,
                  rules: Any = "standard", table: Optional[StartTable] = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` hand starts named ``name``: scores (count, 2), bags (count, 2), dealers (count,),
    all int64, side 0 = seats 0+2.

    ``"zero"``: 0-0, no bags, and a uniformly drawn dealer (as the first hand of a game).
    ``"real"``: drawn from the recorded table in proportion to how often games reached each state.
    ``seed``: an integer, a ``random.Random`` or a numpy ``Generator``; the same seed gives the same
    starts. ``rules`` must fit the table (:func:`check_rules`) for ``"real"``.
    """
    check_start_name(name)
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise StartError(f"count={count!r}: expected a whole number >= 0")
    u = _uniforms(seed, int(count))
    if name == "zero":
        zeros = np.zeros((count, 2), dtype=np.int64)
        return zeros, zeros.copy(), np.minimum((u * 4).astype(np.int64), 3)
    rules = rules if isinstance(rules, Rules) else make_rules(rules)
    table = table if table is not None else load_table()
    check_rules(table, rules)
    cumulative = np.cumsum(table.counts)
    index = np.minimum(np.searchsorted(cumulative, u * cumulative[-1], side="right"), len(cumulative) - 1)
    dealers = table.dealers[index]
    if rules.fixed_dealer is not None:
        dealers = np.full_like(dealers, rules.fixed_dealer)
    return table.scores[index].copy(), table.bags[index].copy(), dealers


def start_summary(name: str, rules: Any = "standard") -> dict:
    """What a hand started as ``name`` meets on average: the share of hands where blind nil is
    offered (a side trails by at least ``blind_nil_min_deficit``), the mean bags a side carries
    in, the share where a side is within 3 bags of the limit, and the mean score gap."""
    check_start_name(name)
    if name == "zero":
        return {"blind_nil_offered_share": 0.0, "mean_bags": 0.0, "near_bag_limit_share": 0.0,
                "mean_abs_score_gap": 0.0, "hand_starts": None}
    rules = rules if isinstance(rules, Rules) else make_rules(rules)
    table = load_table()
    check_rules(table, rules)
    return table.summary(rules)
