"""Game records and their exact replay.

A record (``env.unwrapped.game_record()``) is plain JSON: the rules, the starting dealer, scores
and bags, and per hand the dealer, the deal, every action in order (``[seat, action]``), the bids
(and which were blind), the passed cards, every trick (leader, cards, winner), tricks taken per
seat, the score change, bags and running score per side; then the winner once the game is over.
:func:`replay` plays a record back through a fresh environment and checks every hand's score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from .game import IllegalActionError, parse_deal
from .rules import make_rules

RECORD_FORMAT = "spades-record/1"


class ReplayError(ValueError):
    """A record that cannot be read, or that does not play back to the scores it states."""


def save_record(record: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))
    return path


def load_record(path: str | Path) -> dict:
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ReplayError(f"cannot read game record {path}: {exc}") from None
    return record


def _check_record(record: Any) -> None:
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise ReplayError(f"not a Spades game record (expected a dict with format {RECORD_FORMAT!r})")
    for key in ("rules", "start", "hands"):
        if key not in record:
            raise ReplayError(f"game record has no {key!r} entry")


def iter_replay(record: dict, render_mode: Optional[str] = None, **env_kwargs: Any) -> Iterator[tuple[Any, int, int]]:
    """Play a record back step by step, yielding ``(env, seat, action)`` before each action.

    The env is a raw :class:`~spades_env.env.SpadesEnv` with the record's rules. Everything the
    record states (bids, tricks, scores, bags, winner...) is checked against what the replay
    produces; a mismatch raises :class:`ReplayError` naming the entry.
    """
    from .env import SpadesEnv

    _check_record(record)
    rules = make_rules(record["rules"])
    episode = record.get("episode", rules.episode)
    env = SpadesEnv(rules=rules, episode=episode, render_mode=render_mode, **env_kwargs)
    hands = record["hands"]
    if not hands:
        raise ReplayError("game record has no hands")
    start = record["start"]
    try:
        deals = [parse_deal(h["deal"], rules) for h in hands]
    except (KeyError, ValueError) as exc:
        raise ReplayError(f"game record has a bad deal: {exc}") from None
    env.reset(options={"deal": hands[0]["deal"], "dealer": start["dealer"], "scores": start["scores"],
                       "bags": start["bags"]})
    env.game.deal_queue = deals[1:]
    for number, hand in enumerate(hands, start=1):
        for seat, action in hand["actions"]:
            game = env.game
            if game.to_act != seat or game.hand_number != number:
                raise ReplayError(f"hand {number}: the record has seat {seat} acting, the game expects "
                                  f"seat {game.to_act} in hand {game.hand_number}")
            yield env, seat, action
            try:
                env.step(action)
            except IllegalActionError as exc:
                raise ReplayError(f"hand {number}: the record's action {action} by seat {seat} is not "
                                  f"legal in the replayed game ({exc})") from None
        if hand.get("complete"):
            _compare(f"hand {number}", env.game.hand_record(number - 1), hand)
    replayed = env.game_record()
    if not hands[-1].get("complete"):
        _compare(f"hand {len(hands)}", replayed["hands"][-1], hands[-1])
    _compare("the game", {k: v for k, v in replayed.items() if k != "hands"},
             {k: v for k, v in record.items() if k != "hands"})


def _compare(where: str, replayed: dict, recorded: dict) -> None:
    """Every entry the record states must be what the replay produced."""
    for key, value in recorded.items():
        if key in replayed and replayed[key] != value:
            raise ReplayError(f"{where}: the record says {key}={value!r}, the replay gives {replayed[key]!r}")


def replay(record: dict, render_mode: Optional[str] = None,
           on_step: Optional[Callable[[Any, int, int], None]] = None, **env_kwargs: Any):
    """Play a record back exactly; returns the raw env at the record's last position.

    ``env.game_record()`` of the result equals the input record (rules, deals, actions, scores).
    """
    env = None
    for env, seat, action in iter_replay(record, render_mode=render_mode, **env_kwargs):
        if on_step is not None:
            on_step(env, seat, action)
    if env is None:  # a record with no action at all
        from .env import SpadesEnv
        _check_record(record)
        rules = make_rules(record["rules"])
        env = SpadesEnv(rules=rules, episode=record.get("episode", rules.episode), render_mode=render_mode)
        start = record["start"]
        env.reset(options={"deal": record["hands"][0]["deal"], "dealer": start["dealer"],
                           "scores": start["scores"], "bags": start["bags"]})
    return env
