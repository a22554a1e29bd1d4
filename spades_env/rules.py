"""The rules object: every variant in the rule book (docs/rules.md), named presets, YAML loading, validation.

``Rules`` is an immutable dataclass. Build one with :func:`make_rules`, which accepts a preset
name, a path to a YAML file, a mapping, or an existing ``Rules``, plus keyword overrides of
single rules. Unknown or contradictory settings raise :class:`RulesError` at construction,
naming the setting and what was expected.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Optional

SPADES_LEAD_CHOICES = ("broken", "any", "forced_only")
EPISODE_CHOICES = ("game", "hand")
POINTS_LIMIT = 10 ** 6
"""The largest magnitude of a rule counted in points (target, mercy, bonuses, penalty, deficit),
bags or hands: far past any real game, and small enough that every score a game reaches stays
exact in the engines' int64 arithmetic and in the observation's score / target ratios (starting
scores are bounded apart, by ``game.SCORE_LIMIT``). A larger value is refused, naming the bound."""
GAME_SPAN_LIMIT = 10_000
"""The widest gap, in points, between ``target_score`` and ``mercy_score`` (or, under
``mercy_score: null``, between 0 and the target) of a rule set without ``max_hands``: a target a
million points away takes tens of thousands of hands. Past this gap a rule set must cap the game
with ``max_hands``."""
MERCYLESS_HANDS_CAP = 1_000
"""``max_hands`` given to a rule set with ``mercy_score: null`` and no ``max_hands`` of its own.
Only the target and the mercy score end a game; without a mercy score two sides that keep
failing their contracts fall forever (random play under ``mercy_score: null`` does), so such a
game is truncated after this many hands (a real game to 500 lasts 10-30)."""
NAME_LIMIT = 200
"""The longest rule-set name (a label printed in tables, logs and game records)."""
SIGNALS_LIMIT = 16
"""The most messages of the free signal (``signals``): 4 bits, more than a hand's worth of tricks."""
MIN_DECK_RANKS = 2
"""The fewest ranks a suit keeps in a short deck (``deck_ranks``): two cards a seat."""


class RulesError(ValueError):
    """An unknown, mistyped or contradictory rule setting."""


@dataclass(frozen=True)
class Rules:
    """One complete rule set. Field names follow docs/rules.md; defaults are the standard game."""

    name: str = "standard"
    """Label of the rule set (the preset it came from, ``+`` when overridden)."""
    players: int = 4
    """4, or 3 (the two of clubs is removed, 17 cards each, no partnerships)."""
    partnerships: bool = True
    """Seats 0+2 and 1+3 play together; false is cutthroat (every player scores alone)."""
    nil: bool = True
    """Nil bids (promise to take no trick) are allowed."""
    blind_nil: bool = True
    """Blind nil (declared before looking at the cards) is offered to trailing partnerships."""
    blind_nil_min_deficit: int = 100
    """A side may bid blind nil while it trails the other by at least this many points."""
    blind_nil_pass: int = 2
    """Cards the partner passes to a blind-nil bidder, and it passes back (0..3)."""
    min_team_bid: int = 0
    """The second partner to bid must bring the side's total to at least this (0: no minimum)."""
    max_team_bid: Optional[int] = None
    """Partners' bids may total at most this (None: no maximum; OpenSpiel uses 13)."""
    bids_may_total_13: bool = True
    """False is the Oh Hell rule: the dealer may not make all bids total the tricks in a hand."""
    no_spades_first_trick: bool = False
    """No spade may be played to the first trick unless the player holds nothing else."""
    two_of_clubs_leads: bool = False
    """The holder of the two of clubs leads it to the first trick."""
    spades_lead: str = "broken"
    """When spades may be led: "broken" (after a spade was played, or holding only spades),
    "any" (always), "forced_only" (only by a player holding nothing else, the whole hand)."""
    nil_tricks_count_for_partner: bool = False
    """A nil bidder's tricks count toward the partner's contract (else they are bags)."""
    nil_bonus: int = 100
    """Points won for a kept nil, lost for a broken one."""
    blind_nil_bonus: int = 200
    """Points won for a kept blind nil, lost for a broken one."""
    bags: bool = True
    """Overtricks score 1 point each and accumulate toward the bag penalty; false: they score nothing."""
    bag_limit: int = 10
    """Bags that trigger the penalty; the counter drops by this much each time."""
    bag_penalty: int = 100
    """Points lost each time the bag counter reaches ``bag_limit``."""
    bags_from_score_digit: bool = False
    """Read the bag count from the score's last digit, as OpenSpiel does (C++ remainder)."""
    target_score: int = 500
    """A side at or above this with more points than the other wins."""
    mercy_score: Optional[int] = -200
    """A side at or below this loses at once (None: no mercy rule)."""
    max_hands: Optional[int] = None
    """End the game (truncated) after this many hands (None: no limit)."""
    fixed_dealer: Optional[int] = None
    """Always this dealer, never rotating (OpenSpiel: 3); None draws the first dealer at random
    and passes the deal to the left after every hand."""
    episode: str = "game"
    """Default episode of the environment: "game" (to the end of the game) or "hand"."""
    signals: int = 0
    """A free signal: after the deal and before the bids each seat, in bidding order, sends one of
    this many messages (actions 68.., seen by everyone, scored by nothing); 0 is off, the game."""
    deck_ranks: int = 13
    """Ranks in each suit: 13 is the full deck; fewer keep the highest ranks (6: nine to ace, 24
    cards), so a hand has ``deck_ranks`` cards and tricks (the short deck, for fast studies)."""

    def __post_init__(self) -> None:
        if (self.mercy_score is None and self.max_hands is None and isinstance(self.target_score, int)
                and 0 < self.target_score <= GAME_SPAN_LIMIT):
            object.__setattr__(self, "max_hands", MERCYLESS_HANDS_CAP)     # so that every game ends
        _validate(self)

    # Derived quantities, used everywhere.
    @property
    def cards_per_hand(self) -> int:
        return 4 * self.deck_ranks // self.players

    @property
    def tricks_per_hand(self) -> int:
        return 4 * self.deck_ranks // self.players

    @property
    def lowest_rank(self) -> int:
        """The lowest rank index (2 = 0 .. A = 12) in the deck: ``13 - deck_ranks``."""
        return 13 - self.deck_ranks

    @property
    def num_actions(self) -> int:
        """Size of the action space: the 68 actions of the game, then one per message."""
        return 68 + self.signals

    @property
    def num_sides(self) -> int:
        return 2 if self.partnerships else self.players

    def side_of(self, seat: int) -> int:
        return seat % 2 if self.partnerships else seat

    def side_members(self, side: int) -> tuple[int, ...]:
        return (side, side + 2) if self.partnerships else (side,)

    @property
    def max_bid(self) -> int:
        """The highest single bid: the tricks of a hand, at most the 13 the action space can
        express (52 + 13; the three-player game's hands have 17 cards)."""
        return min(13, self.tricks_per_hand)

    def replace(self, **overrides: Any) -> "Rules":
        return make_rules(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a mapping (``make_rules`` takes it back). The options of the signal and
        the short deck appear only when set, so that every record, journal key and result of a
        game without them reads byte for byte as before they existed."""
        settings = dataclasses.asdict(self)
        for name, off in OPTIONS_SHOWN_WHEN_SET.items():
            if settings[name] == off:
                del settings[name]
        return settings


OPTIONS_SHOWN_WHEN_SET = {"signals": 0, "deck_ranks": 13}
"""Rules that :meth:`Rules.to_dict` leaves out at these values (their "off" setting)."""


RULE_NAMES = tuple(f.name for f in fields(Rules))

PRESETS: dict[str, dict[str, Any]] = {
    "standard": {},
    "basic": {"nil": False, "blind_nil": False},
    "tournament": {"min_team_bid": 4, "no_spades_first_trick": True},
    "cutthroat": {"partnerships": False, "blind_nil": False, "blind_nil_pass": 0},
    "short": {
        "deck_ranks": 6,
        "blind_nil": False,
        "target_score": 250,
        "mercy_score": -150,
        "nil_bonus": 50,
        "bag_limit": 5,
        "bag_penalty": 50,
    },
    "openspiel": {
        "blind_nil": False,
        "fixed_dealer": 3,
        "max_team_bid": 13,
        "nil_tricks_count_for_partner": True,
        "spades_lead": "forced_only",
        "target_score": 500,
        "mercy_score": -350,
        "bags_from_score_digit": True,
        "episode": "hand",
    },
}
PRESETS["short_signals"] = {**PRESETS["short"], "signals": 4}     # the small game with a free signal
PRESETS = {name: PRESETS[name] for name in ("standard", "basic", "tournament", "cutthroat", "short", "short_signals",
                                             "openspiel")}
PRESET_NAMES = tuple(PRESETS)

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs" / "rules"

_OPTIONAL_INT = {"max_team_bid", "mercy_score", "max_hands", "fixed_dealer"}


def _validate(rules: Rules) -> None:
    def fail(name: str, expected: str) -> None:
        shown = repr(getattr(rules, name))
        shown = shown if len(shown) <= 80 else f"{shown[:60]}... ({len(shown)} characters)"
        raise RulesError(f"rule {name}={shown} is invalid: expected {expected}")

    for f in fields(Rules):
        value = getattr(rules, f.name)
        if f.name in ("name", "spades_lead", "episode"):
            if not isinstance(value, str):
                fail(f.name, "a string")
        elif isinstance(f.default, bool):
            if not isinstance(value, bool):
                fail(f.name, "true or false")
        elif f.name in _OPTIONAL_INT:
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                fail(f.name, "an integer or null")
        elif isinstance(value, bool) or not isinstance(value, int):
            fail(f.name, "an integer")

    if not rules.name or len(rules.name) > NAME_LIMIT or not rules.name.isprintable():
        fail("name", f"a label of 1..{NAME_LIMIT} printable characters")
    for name in ("blind_nil_min_deficit", "nil_bonus", "blind_nil_bonus", "bag_limit", "bag_penalty", "target_score",
                 "mercy_score", "max_hands"):
        value = getattr(rules, name)
        if value is not None and abs(value) > POINTS_LIMIT:
            fail(name, f"a value within -{POINTS_LIMIT:,}..{POINTS_LIMIT:,} (POINTS_LIMIT)")
    if rules.players not in (3, 4):
        fail("players", "3 or 4")
    if rules.spades_lead not in SPADES_LEAD_CHOICES:
        fail("spades_lead", f"one of {', '.join(SPADES_LEAD_CHOICES)}")
    if rules.episode not in EPISODE_CHOICES:
        fail("episode", f"one of {', '.join(EPISODE_CHOICES)}")
    if not 0 <= rules.blind_nil_pass <= 3:
        fail("blind_nil_pass", "0..3")
    if rules.blind_nil_min_deficit < 0:
        fail("blind_nil_min_deficit", "a number of points >= 0")
    if not 0 <= rules.signals <= SIGNALS_LIMIT:
        fail("signals", f"0..{SIGNALS_LIMIT} messages (0: no signal, SIGNALS_LIMIT)")
    if not MIN_DECK_RANKS <= rules.deck_ranks <= 13:
        fail("deck_ranks", f"{MIN_DECK_RANKS}..13 ranks a suit (13: the full deck)")
    if not 0 <= rules.min_team_bid <= 13:
        fail("min_team_bid", "0..13 (0 means no minimum)")
    if rules.max_team_bid is not None and not 1 <= rules.max_team_bid <= 26:
        fail("max_team_bid", "1..26 or null")
    if rules.bag_limit < 1:
        fail("bag_limit", "a positive number of bags")
    if rules.bag_penalty < 0:
        fail("bag_penalty", "a number of points >= 0")
    if rules.nil_bonus < 0 or rules.blind_nil_bonus < 0:
        fail("nil_bonus" if rules.nil_bonus < 0 else "blind_nil_bonus", "a number of points >= 0")
    if rules.target_score <= 0:
        fail("target_score", "a positive number of points")
    if rules.mercy_score is not None and rules.mercy_score >= rules.target_score:
        fail("mercy_score", f"below target_score ({rules.target_score}) or null")
    if rules.max_hands is not None and rules.max_hands < 1:
        fail("max_hands", "a positive number of hands or null")
    if rules.fixed_dealer is not None and not 0 <= rules.fixed_dealer < rules.players:
        fail("fixed_dealer", f"a seat 0..{rules.players - 1} or null")
    if rules.max_hands is None and rules.mercy_score is None:     # (a target within the span got a cap)
        fail("target_score", f"at most {GAME_SPAN_LIMIT:,} points (GAME_SPAN_LIMIT) under mercy_score: null, "
                             "or max_hands set, so that every game ends")
    if rules.max_hands is None and rules.target_score - rules.mercy_score > GAME_SPAN_LIMIT:
        fail("target_score", f"at most {GAME_SPAN_LIMIT:,} points above mercy_score ({rules.mercy_score}) "
                             "(GAME_SPAN_LIMIT), or max_hands set, so that every game ends")

    def contradiction(message: str) -> None:
        raise RulesError(f"contradictory rules: {message}")

    if rules.players == 3 and rules.partnerships:
        contradiction("players=3 has no partnerships; set partnerships=false")
    if rules.deck_ranks != 13 and rules.players != 4:
        contradiction(f"deck_ranks={rules.deck_ranks} (a short deck) needs players=4")
    if rules.deck_ranks != 13 and rules.two_of_clubs_leads:
        contradiction(f"deck_ranks={rules.deck_ranks} removes the two of clubs, so two_of_clubs_leads must be false")
    if rules.min_team_bid > rules.tricks_per_hand:
        contradiction(f"min_team_bid={rules.min_team_bid} exceeds the {rules.tricks_per_hand} tricks of a hand "
                      f"(deck_ranks={rules.deck_ranks})")
    if rules.players == 3 and rules.two_of_clubs_leads:
        contradiction("players=3 removes the two of clubs, so two_of_clubs_leads must be false")
    if rules.blind_nil and not rules.nil:
        contradiction("blind_nil=true needs nil=true (blind nil is a nil bid): pass blind_nil=False "
                      "as well, or use the 'basic' preset")
    if rules.blind_nil and not rules.partnerships:
        contradiction("blind_nil needs partnerships (it is offered to a trailing side and "
                      "brings card passing with the partner); set blind_nil=false")
    if not rules.partnerships and (rules.min_team_bid or rules.max_team_bid is not None):
        contradiction("min_team_bid and max_team_bid need partnerships")
    if rules.partnerships and not rules.nil and rules.max_team_bid is not None and rules.max_team_bid < 2:
        contradiction(f"max_team_bid={rules.max_team_bid} with nil=false leaves the second partner no legal bid "
                      "(without nil each partner bids at least 1); use max_team_bid >= 2 or nil=true")
    if not rules.partnerships and rules.nil_tricks_count_for_partner:
        contradiction("nil_tricks_count_for_partner needs partnerships (in cutthroat a nil bidder has no "
                      "partner); set nil_tricks_count_for_partner=false")
    if rules.max_team_bid is not None and rules.min_team_bid > rules.max_team_bid:
        contradiction(f"min_team_bid={rules.min_team_bid} exceeds max_team_bid={rules.max_team_bid}")
    if rules.bags_from_score_digit and (not rules.bags or rules.bag_limit != 10):
        contradiction("bags_from_score_digit reads bags from the score's last digit, so it needs "
                      "bags=true and bag_limit=10")


def _check_keys(settings: Mapping[str, Any], source: str) -> None:
    for key in settings:
        if key not in RULE_NAMES:
            close = difflib.get_close_matches(str(key), RULE_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise RulesError(f"unknown rule {key!r} in {source}{hint}; known rules: {', '.join(RULE_NAMES)}")


# The bounds of a rules file, from the command line or uploaded to the web table (web/limits.py
# takes them from here): a 400-byte alias bomb, /dev/zero, 5,000 nested brackets or a 5,000-digit
# number used to end in MemoryError, RecursionError or ValueError.
MAX_RULES_FILE_BYTES = 65_536       # a rules file is a few hundred bytes
MAX_RULES_FILE_DEPTH = 16           # it nests 1 or 2 levels


def load_rules_file(path: str | os.PathLike) -> dict[str, Any]:
    """Settings from a YAML file: a mapping of rule names, optionally with ``preset: NAME`` as base.
    The file is checked before it is parsed (:mod:`spades_env.safe_yaml`: a regular file of at
    most :data:`MAX_RULES_FILE_BYTES`, no anchors or aliases, at most :data:`MAX_RULES_FILE_DEPTH`
    levels); every way it can be wrong is a one-line :class:`RulesError`."""
    from .safe_yaml import YamlLimitError, load_yaml_text, read_text_file

    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise RulesError(f"rules file not found: {path}")
    if path.is_dir():
        raise RulesError(f"rules file {path} is a directory: expected a YAML file")
    try:
        text = read_text_file(path, "rules file", max_bytes=MAX_RULES_FILE_BYTES)
        data = load_yaml_text(text, f"rules file {path}", max_depth=MAX_RULES_FILE_DEPTH)
    except YamlLimitError as exc:
        message = str(exc)
        if ": not UTF-8 text " in message:     # "... (byte N: b'\\xff')"
            raise RulesError(f"rules file {path} is not UTF-8 text {message.split(': not UTF-8 text ', 1)[1]}: "
                             "expected a YAML file") from None
        raise RulesError(message) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RulesError(f"rules file {path} must hold a mapping of rule names to values, got {type(data).__name__}")
    settings = dict(data)
    base = settings.pop("preset", None)
    _check_keys(settings, f"rules file {path}")
    resolved = dict(PRESETS[_preset_name(base)]) if base is not None else {}
    resolved.setdefault("name", str(base) if base else path.stem)
    resolved.update(settings)
    if base is not None and "name" not in settings:
        resolved["name"] = path.stem
    return resolved


def _preset_name(name: Any) -> str:
    if not isinstance(name, str):
        raise RulesError(f"rules preset {name!r}: expected a preset name (a string: {', '.join(PRESET_NAMES)})")
    if name not in PRESETS:
        close = difflib.get_close_matches(str(name), PRESET_NAMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise RulesError(f"unknown rules preset {name!r}{hint}; presets: {', '.join(PRESET_NAMES)}; "
                         "or give a path to a YAML file")
    return name


def make_rules(rules: "Rules | str | os.PathLike | Mapping[str, Any] | None" = "standard", **overrides: Any) -> Rules:
    """Build a validated :class:`Rules`.

    ``rules`` is a preset name (``standard``, ``basic``, ``tournament``, ``cutthroat``,
    ``openspiel``), a path to a YAML file (``.yaml``/``.yml``), a mapping of rule settings, or a
    ``Rules``; keyword arguments override single rules.
    """
    if rules is None:
        rules = "standard"
    if isinstance(rules, Rules):
        settings = rules.to_dict()
    elif isinstance(rules, Mapping):
        settings = dict(rules)
        base = settings.pop("preset", None)
        _check_keys(settings, "the rules mapping")
        merged = dict(PRESETS[_preset_name(base)]) if base is not None else {}
        merged.setdefault("name", str(base) if base is not None else "custom")
        merged.update(settings)
        settings = merged
    elif isinstance(rules, (str, os.PathLike)):
        text = os.fspath(rules)
        if text in PRESETS:
            settings = dict(PRESETS[text])
            settings["name"] = text
        elif text and (text.endswith((".yaml", ".yml")) or os.sep in text or Path(text).exists()):
            settings = load_rules_file(text)
        else:
            _preset_name(text)  # raises with the list of presets
            raise AssertionError("unreachable")
    else:
        raise RulesError(f"rules must be a preset name, a YAML path, a mapping or a Rules object, got {type(rules).__name__}")

    if overrides:
        _check_keys(overrides, "the keyword overrides")
        changed = {k: v for k, v in overrides.items() if k == "name" or settings.get(k, getattr(Rules, k)) != v}
        settings.update(overrides)
        if changed and "name" not in overrides:
            base_name = settings.get("name", "custom")
            settings["name"] = base_name if base_name.endswith("+") else base_name + "+"
    return Rules(**settings)
