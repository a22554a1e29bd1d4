"""Game records and their exact replay.

A record (``env.unwrapped.game_record()``) is plain JSON: the rules, the starting dealer, scores
and bags, and per hand the dealer, the deal, every action in order (``[seat, action]``), the bids
(and which were blind), the passed cards, every trick (leader, cards, winner), tricks taken per
seat, the score change, bags and running score per side; then the winner once the game is over.
Under a free signal (``signals: N``) each hand also holds ``messages`` (per seat, the message it
sent; the actions hold them as ``68 + m``); a short deck's deals hold its cards only. Neither
appears in a record of a game without them, nor in its rules (:meth:`Rules.to_dict`).
:func:`replay` plays a record back through a fresh environment and checks every hand's score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from .files import MAX_JSON_BYTES, MAX_JSON_DEPTH, FileRuleError, json_depth, read_bytes, write_text
from .game import DealError, IllegalActionError, ResetOptionError, parse_deal
from .rules import EPISODE_CHOICES, PRESET_NAMES, Rules, RulesError, make_rules

RECORD_FORMAT = "spades-record/1"


class ReplayError(ValueError):
    """A record that cannot be read, or that does not play back to the scores it states."""


def save_record(record: dict, path: str | Path) -> Path:
    """Write ``record`` as JSON by the output rule (:mod:`spades_env.files`: atomically, never
    renamed onto a device; ``/dev/stdout`` written in place); a :class:`~spades_env.files.FileRuleError`
    naming the file when it cannot be."""
    return write_text(path, json.dumps(record, indent=1), "game record", stream_ok=True)


def load_record(path: str | Path) -> dict:
    """The JSON of a record file; a file that is not readable UTF-8 JSON is a :class:`ReplayError`
    naming the file and what is wrong with it (the record's content is checked by :func:`replay`)."""
    try:                                        # a regular file within bounds, never /dev/zero or a FIFO
        text = read_bytes(path, "game record", MAX_JSON_BYTES).decode("utf-8")
        if json_depth(text) > MAX_JSON_DEPTH:
            raise RecursionError
        record = json.loads(text)
    except FileRuleError as exc:
        raise ReplayError(f"cannot read {exc}") from None
    except UnicodeDecodeError as exc:
        raise ReplayError(f"cannot read game record {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                          "expected the JSON of a game record") from None
    except RecursionError:
        raise ReplayError(f"cannot read game record {path}: its JSON is nested too deeply to be a game "
                          "record") from None
    except (OSError, ValueError) as exc:        # json.JSONDecodeError, integers past Python's digit limit
        raise ReplayError(f"cannot read game record {path}: {str(exc)[:200]}") from None
    return record


def _fail(where: str, expected: str, got: Any) -> None:
    shown = repr(got)
    raise ReplayError(f"game record: {where} should be {expected}, got {shown[:80]}{'...' if len(shown) > 80 else ''}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(_is_int(v) for v in value):
        _fail(where, "a list of integers", value)
    return value


def record_rules(value: Any) -> Rules:
    """The rules a record names: a preset name or an inline mapping of rule settings. A record
    is data, so a string is never read as a file path (a record must not open files)."""
    if isinstance(value, str):
        if value not in PRESET_NAMES:
            _fail("'rules'", f"a preset name ({', '.join(PRESET_NAMES)}) or a mapping of rule settings", value)
    elif not isinstance(value, dict):
        _fail("'rules'", "a preset name or a mapping of rule settings", value)
    try:
        return make_rules(value)
    except RulesError as exc:
        raise ReplayError(f"game record: 'rules' are not a valid rule set: {exc}") from None


def _check_record(record: Any) -> tuple[Rules, str, dict, list]:
    """Read a record's structure (before anything is played): its rules, episode, start and
    hands, each entry checked for type and shape; anything malformed is a ReplayError naming
    the entry."""
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise ReplayError(f"not a Spades game record (expected a dict with format {RECORD_FORMAT!r})")
    for key in ("rules", "start", "hands"):
        if key not in record:
            raise ReplayError(f"game record has no {key!r} entry")
    rules = record_rules(record["rules"])
    episode = record.get("episode", rules.episode)
    if episode not in EPISODE_CHOICES:
        _fail("'episode'", f"one of {', '.join(EPISODE_CHOICES)}", episode)
    start = record["start"]
    if not isinstance(start, dict):
        _fail("'start'", "a mapping with dealer, scores and bags", start)
    for key in ("dealer", "scores", "bags"):
        if key not in start:
            raise ReplayError(f"game record: 'start' has no {key!r} entry")
    if not _is_int(start["dealer"]):
        _fail("start 'dealer'", f"a seat 0..{rules.players - 1}", start["dealer"])
    _int_list(start["scores"], "start 'scores'")
    _int_list(start["bags"], "start 'bags'")
    hands = record["hands"]
    if not isinstance(hands, list):
        _fail("'hands'", "a list of hands", hands)
    if not hands:
        raise ReplayError("game record has no hands")
    for number, hand in enumerate(hands, start=1):
        if not isinstance(hand, dict):
            _fail(f"hand {number}", "a mapping", hand)
        for key in ("deal", "actions"):
            if key not in hand:
                raise ReplayError(f"game record: hand {number} has no {key!r} entry")
        actions = hand["actions"]
        if not isinstance(actions, list) or not all(
                isinstance(a, (list, tuple)) and len(a) == 2 and _is_int(a[0]) and _is_int(a[1]) for a in actions):
            _fail(f"hand {number} 'actions'", "a list of [seat, action] integer pairs", actions)
    return rules, episode, start, hands


def _start_env(record: Any, render_mode: Optional[str], env_kwargs: dict) -> tuple[Any, list]:
    """A fresh raw env at the start of the record's first hand, the later deals queued."""
    from .env import SpadesEnv

    rules, episode, start, hands = _check_record(record)
    deals = []
    for number, hand in enumerate(hands, start=1):
        try:
            deals.append(parse_deal(hand["deal"], rules))
        except (DealError, TypeError, ValueError) as exc:
            raise ReplayError(f"game record: hand {number} has a bad deal: {exc}") from None
    env = SpadesEnv(rules=rules, episode=episode, render_mode=render_mode, **env_kwargs)
    try:
        env.reset(options={"deal": hands[0]["deal"], "dealer": start["dealer"], "scores": start["scores"],
                           "bags": start["bags"]})
    except (ResetOptionError, DealError) as exc:
        raise ReplayError(f"game record: bad 'start': {exc}") from None
    env.game.deal_queue = deals[1:]
    return env, hands


def iter_replay(record: dict, render_mode: Optional[str] = None, **env_kwargs: Any) -> Iterator[tuple[Any, int, int]]:
    """Play a record back step by step, yielding ``(env, seat, action)`` before each action.

    The env is a raw :class:`~spades_env.env.SpadesEnv` with the record's rules (a preset name or
    an inline mapping; never a file). Everything the record states (bids, tricks, scores, bags,
    winner...) is checked against what the replay produces; a malformed record or a mismatch
    raises :class:`ReplayError` naming the entry.
    """
    env, hands = _start_env(record, render_mode, env_kwargs)
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
    inputs = ("hands", "rules")     # the rules were read above (a preset name or a mapping)
    _compare("the game", {k: v for k, v in replayed.items() if k not in inputs},
             {k: v for k, v in record.items() if k not in inputs})


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
        env, _ = _start_env(record, render_mode, env_kwargs)
    return env
