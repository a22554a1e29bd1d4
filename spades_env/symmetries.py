"""The game's symmetries: relabellings of the side suits that leave the rules unchanged.

Clubs, diamonds and hearts play alike (spades are trump, so they never move): renaming them, a
card's suit and nothing else, turns every game into another game of the same rules with the
same bids, tricks and scores. :func:`symmetries` lists the relabellings valid under a rule set,
identity first: the six permutations of the side suits, or the two that keep clubs in place
where a rule names clubs (``two_of_clubs_leads``, and ``players: 3``, which removes the two of
clubs). Each :class:`Relabelling` maps actions, legal-action masks, observations, global states
and game records; :meth:`SymmetryGroup.batched` gives the same maps as index gathers over the
batched engine's tensors, one relabelling per table (Other-Play, data augmentation).

Under a free signal (``signals: N``) the messages mean nothing but what the players make them
mean, so renaming them is a symmetry too: a relabelling also carries ``messages = (m0, .., mN-1)``
(message ``m`` becomes ``messages[m]``: action ``68 + m`` becomes ``68 + messages[m]``, every row
of the observation's ``messages`` block is permuted, nothing else moves), composed with the suit
relabellings. The group of a signal variant holds every suit relabelling times every message
permutation (``N!`` of them, for N up to :data:`FULL_MESSAGE_GROUP_LIMIT`; past it, the ``N``
cyclic shifts ``m -> m + k mod N``, a subgroup, so that the group stays small enough to list and
gather; any permutation can still be built as a :class:`Relabelling`). Without a signal the group
is exactly the suit relabellings. A short deck (``deck_ranks``) keeps the same ranks in every
suit, so its suit relabellings are those of the full deck.

Convention: a relabelling ``g`` with ``suits = (s0, s1, s2, s3)`` renames suit ``k`` to
``suits[k]``; card ``suit * 13 + rank`` becomes ``suits[suit] * 13 + rank``. ``g.map_*`` takes
something seen in a game to what is seen at the same moment of the relabelled game. Names: the
suit cycles (``identity``, ``(C D)``, ``(C D H)``), then ``messages:1032`` (the images of messages
0, 1, 2, ...; comma-separated past 10 messages) when the messages move.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Sequence
from typing import Any, Callable, Mapping, Optional

import numpy as np

from .cards import CLUBS, NUM_CARDS, NUM_RANKS, NUM_SUITS, SPADES, SUIT_LETTERS, SUIT_NAMES, card_str, parse_card
from .game import SIGNAL_ACTION_BASE, parse_deal
from .observation import Layout, layout_for
from .record import _check_record
from .rules import Rules, RULE_NAMES, make_rules

SIDE_SUITS = (0, 1, 2)
MAX_SAMPLE = 100_000_000       # rows of one BatchedSymmetries.sample (sizes checked before allocating)
"""Clubs, diamonds, hearts: the suits a relabelling may move (spades are trump and stay)."""

SUIT_NAMING_RULES: dict[str, Callable[[Rules], tuple[int, ...]]] = {
    "two_of_clubs_leads": lambda r: (CLUBS,) if r.two_of_clubs_leads else (),
    "players": lambda r: (CLUBS,) if r.players == 3 else (),       # the two of clubs is removed
}
"""Rules that can single out a side suit: each gives the suits it names under a rule set."""

SUIT_NEUTRAL_RULES = frozenset(RULE_NAMES) - set(SUIT_NAMING_RULES)
"""Every other rule treats the three side suits alike (tests/spades_env/test_symmetries.py checks that each
rule is in one list or the other, so a new rule must be classified before it ships)."""

CARD_BLOCKS = ("hand", "passed", "received", "current_trick", "played", "true_hands")
"""Observation and state blocks whose rows have one cell per card."""
SUIT_BLOCKS = ("voids",)
"""Blocks whose rows have one cell per suit."""
MESSAGE_BLOCKS = ("messages",)
"""Blocks whose rows have one cell per message of the free signal."""
FULL_MESSAGE_GROUP_LIMIT = 5
"""The most messages for which the group holds every message permutation (5! x 6 = 720
elements); with more, it holds the cyclic shifts of the messages."""


class SymmetryError(ValueError):
    """Input a relabelling cannot map: an action id, a vector of the wrong length, a record of
    other rules, an unknown relabelling."""


def named_suits(rules: Rules | str | os.PathLike | Mapping[str, Any] | None = "standard") -> dict[int, list[str]]:
    """The side suits a rule set singles out, each with the rules that name it."""
    r = make_rules(rules)
    named: dict[int, list[str]] = {}
    for rule, suits_of in SUIT_NAMING_RULES.items():
        for suit in suits_of(r):
            named.setdefault(suit, []).append(rule)
    return named


def _cycle_name(suits: tuple[int, ...]) -> str:
    """Cycle notation over suit letters: ``identity``, ``(C D)``, ``(C D H)``."""
    seen, cycles = set(), []
    for start in range(NUM_SUITS):
        if start in seen or suits[start] == start:
            continue
        cycle, k = [], start
        while k not in seen:
            seen.add(k)
            cycle.append(SUIT_LETTERS[k])
            k = suits[k]
        cycles.append("(" + " ".join(cycle) + ")")
    return " ".join(cycles) or "identity"


def _message_name(messages: tuple[int, ...]) -> str:
    """``messages:1032``: the image of each message in turn (comma-separated past 10 messages)."""
    return "messages:" + ("," if len(messages) > 10 else "").join(str(m) for m in messages)


def _row_index(blocks: Mapping[str, Any], size: int, card_inner: np.ndarray, suit_inner: np.ndarray,
               message_inner: np.ndarray) -> np.ndarray:
    """An index over a vector of ``blocks`` that relabels every card, suit and message row."""
    index = np.arange(size)
    for block in blocks.values():
        if block.name in CARD_BLOCKS:
            inner = card_inner
        elif block.name in SUIT_BLOCKS:
            inner = suit_inner
        elif block.name in MESSAGE_BLOCKS:
            inner = message_inner
        else:
            continue
        for row in range(block.size // block.width):
            start = block.offset + row * block.width
            index[start:start + block.width] = start + inner
    return index


def _check_messages(messages: Any, rules: Rules) -> tuple[int, ...]:
    """A message permutation for ``rules`` (None: the identity), or a SymmetryError naming the problem."""
    n = rules.signals
    if messages is None:
        return tuple(range(n))
    try:
        given = tuple(messages)
    except TypeError:
        raise SymmetryError(f"messages={messages!r:.80}: expected a permutation of the messages 0..{n - 1}") from None
    if any(isinstance(m, bool) or not isinstance(m, (int, np.integer)) for m in given) \
            or sorted(int(m) for m in given) != list(range(n)):
        if not n:
            raise SymmetryError(f"messages={messages!r:.80}: the {rules.name} rules have no signal (signals=0), "
                                "so there are no messages to relabel")
        raise SymmetryError(f"messages={messages!r:.80}: expected a permutation of the {n} messages 0..{n - 1} "
                            f"(signals={n} in the {rules.name} rules)")
    return tuple(int(m) for m in given)


class Relabelling:
    """One renaming of the side suits (and of the messages of a free signal), and its maps
    (module doc). Build them with :func:`symmetries`."""

    def __init__(self, suits: Sequence[int], rules: Rules | str | Mapping[str, Any] = "standard",
                 messages: Optional[Sequence[int]] = None) -> None:
        rules = rules if isinstance(rules, Rules) else make_rules(rules)
        self.messages = _check_messages(messages, rules)
        """``messages[m]``: the new number of message ``m`` (the identity without a signal)."""
        try:
            given = tuple(suits)
        except TypeError:
            raise SymmetryError(f"suits={suits!r}: expected four suit numbers 0..3, spades (3) last") from None
        if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in given):
            # 0.5 or '1' were cast to a suit number: a caller's mistake passed for a relabelling
            raise SymmetryError(f"suits={suits!r}: expected four suit numbers 0..3 (whole numbers, not text or "
                                "fractions), spades (3) last")
        suits = tuple(int(s) for s in given)
        if sorted(suits) != list(range(NUM_SUITS)) or suits[SPADES] != SPADES:
            raise SymmetryError(f"suits={suits!r}: expected a permutation of the suits 0..3 that keeps spades (3)")
        for suit, by in named_suits(rules).items():
            if suits[suit] != suit:
                raise SymmetryError(f"suits={suits!r} moves {SUIT_NAMES[suit]}, which the {rules.name} rules name "
                                    f"({', '.join(by)}): not a symmetry of these rules")
        self.suits = suits
        self.rules = rules
        self.num_actions = rules.num_actions
        self.messages_move = self.messages != tuple(range(rules.signals))
        self.name = _cycle_name(suits)
        if self.messages_move:
            self.name = _message_name(self.messages) if self.name == "identity" else \
                f"{self.name} {_message_name(self.messages)}"
        self.card_map = np.array([suits[c // NUM_RANKS] * NUM_RANKS + c % NUM_RANKS for c in range(NUM_CARDS)])
        """New id of each card."""
        self.action_map = np.concatenate([self.card_map, np.arange(NUM_CARDS, SIGNAL_ACTION_BASE),
                                          SIGNAL_ACTION_BASE + np.array(self.messages, dtype=np.int64)]).astype(np.int64)
        """New id of each action (cards and messages relabelled; bids, blind nil and look unchanged)."""
        self.action_index = np.argsort(self.action_map)
        """``mask[action_index]`` is the mask of the relabelled game (new action ``d`` reads old ``action_index[d]``)."""
        suit_index = np.argsort(np.array(suits))
        message_index = np.argsort(np.array(self.messages, dtype=np.int64))
        layout: Layout = layout_for(rules)
        self.observation_index = _row_index(layout.obs_blocks, layout.obs_size, self.action_index[:NUM_CARDS],
                                            suit_index, message_index)
        """``observation[observation_index]`` is the observation of the relabelled game."""
        self.state_index = _row_index(layout.global_blocks, layout.state_size, self.action_index[:NUM_CARDS],
                                      suit_index, message_index)
        """``state[state_index]`` is the global state (``env.state()``) of the relabelled game."""
        self._hand_masks = [(((1 << NUM_RANKS) - 1) << (NUM_RANKS * s), NUM_RANKS * (suits[s] - s))
                            for s in range(NUM_SUITS)]

    # ------------------------------------------------------------------ the group
    @property
    def is_identity(self) -> bool:
        return self.suits == tuple(range(NUM_SUITS)) and not self.messages_move

    @property
    def inverse(self) -> "Relabelling":
        """The relabelling that undoes this one."""
        back = [0] * NUM_SUITS
        for k, s in enumerate(self.suits):
            back[s] = k
        back_messages = [0] * len(self.messages)
        for m, image in enumerate(self.messages):
            back_messages[image] = m
        return Relabelling(back, self.rules, back_messages)

    def then(self, other: "Relabelling") -> "Relabelling":
        """This relabelling followed by ``other`` (same rules)."""
        if not isinstance(other, Relabelling):
            raise SymmetryError(f"then({other!r}): expected a Relabelling")
        if other.rules.signals != self.rules.signals:
            raise SymmetryError(f"then({other!r}): its rules have signals={other.rules.signals}, these "
                                f"signals={self.rules.signals}")
        return Relabelling([other.suits[s] for s in self.suits], self.rules, [other.messages[m] for m in self.messages])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Relabelling) and other.suits == self.suits and other.messages == self.messages
                and other.rules == self.rules)

    def __hash__(self) -> int:
        return hash((self.suits, self.messages, self.rules))

    def __repr__(self) -> str:
        moves = ", ".join(f"{SUIT_NAMES[k]}->{SUIT_NAMES[s]}" for k, s in enumerate(self.suits) if k != s)
        if self.messages_move:
            moves = ", ".join(filter(None, [moves, ", ".join(f"message {m}->{image}" for m, image
                                                             in enumerate(self.messages) if m != image)]))
        return f"Relabelling({self.name}{': ' + moves if moves else ''})"

    # ------------------------------------------------------------------ cards and actions
    def map_card(self, card: int | str) -> int:
        """The new id of a card (an id 0..51 or a name such as ``"AS"``)."""
        try:
            return int(self.card_map[parse_card(card)])
        except ValueError as exc:
            raise SymmetryError(str(exc)) from None

    def map_cards(self, cards: int) -> int:
        """A 52-bit card set (a hand as the engine keeps it), relabelled."""
        if isinstance(cards, bool) or not isinstance(cards, (int, np.integer)) or not 0 <= cards < 1 << NUM_CARDS:
            raise SymmetryError(f"cards={cards!r}: expected a card set as a 52-bit non-negative integer")
        cards = int(cards)
        out = 0
        for mask, shift in self._hand_masks:
            part = cards & mask
            out |= part << shift if shift >= 0 else part >> -shift
        return out

    def map_action(self, action: int) -> int:
        """The action id in the relabelled game: cards and messages relabelled, bids and
        blind-nil actions unchanged."""
        n = self.num_actions
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < n:
            raise SymmetryError(f"action {action!r}: expected an action id 0..{n - 1}")
        return int(self.action_map[action])

    def map_mask(self, mask: Any) -> Any:
        """A legal-action mask relabelled: ``rules.num_actions`` cells (68, plus one per message;
        any dtype; the last axis of an array, so logits and policy probabilities map too), or
        the engine's integer mask of as many bits."""
        n = self.num_actions
        if isinstance(mask, (int, np.integer)) and not isinstance(mask, bool):
            if not 0 <= mask < 1 << n:
                raise SymmetryError(f"mask={mask!r}: expected a {n}-bit non-negative integer or {n} cells")
            mask = int(mask)
            out = self.map_cards(mask & ((1 << NUM_CARDS) - 1)) | (mask & (((1 << SIGNAL_ACTION_BASE) - 1)
                                                                          ^ ((1 << NUM_CARDS) - 1)))
            for m, image in enumerate(self.messages):
                if mask >> (SIGNAL_ACTION_BASE + m) & 1:
                    out |= 1 << (SIGNAL_ACTION_BASE + image)
            return out
        return self._gather(mask, self.action_index, "mask", f"{n} cells, one per action")

    # ------------------------------------------------------------------ vectors
    def map_observation(self, observation: Any) -> np.ndarray:
        """An observation vector (``obs["observation"]``, or rows of them) as the relabelled game shows it."""
        return self._gather(observation, self.observation_index, "observation",
                            f"{len(self.observation_index)} values (the {self.rules.name} rules' observation)")

    def map_state(self, state: Any) -> np.ndarray:
        """A global state vector (``env.state()``, or rows of them) of the relabelled game."""
        return self._gather(state, self.state_index, "state",
                            f"{len(self.state_index)} values (the {self.rules.name} rules' state)")

    @staticmethod
    def _gather(values: Any, index: np.ndarray, what: str, expected: str) -> np.ndarray:
        array = np.asarray(values)
        if array.ndim == 0 or array.shape[-1] != len(index):
            raise SymmetryError(f"{what} of shape {array.shape}: expected {expected} on the last axis")
        return array[..., index]

    # ------------------------------------------------------------------ deals and records
    def map_deal(self, deal: Any) -> list[list[int]]:
        """A deal (one list of cards per seat, ids or names) relabelled, each hand in id order."""
        try:
            masks = parse_deal(deal, self.rules)
        except ValueError as exc:
            raise SymmetryError(f"deal: {exc}") from None
        return [sorted(int(self.card_map[c]) for c in range(NUM_CARDS) if m >> c & 1) for m in masks]

    def map_record(self, record: dict) -> dict:
        """A game record (``env.unwrapped.game_record()``) of the relabelled game: deals, card
        actions, passes and tricks relabelled, and the messages of a signal, everything else
        (bids, scores, winner) as it was. It replays with :func:`spades_env.replay`."""
        rules, _, _, hands = _check_record(record)
        if rules.signals != self.rules.signals:
            raise SymmetryError(f"relabelling {self.name} is for signals={self.rules.signals}, the record's rules "
                                f"have signals={rules.signals}: use a relabelling of symmetries(record['rules'])")
        for suit, by in named_suits(rules).items():
            if self.suits[suit] != suit:
                raise SymmetryError(f"relabelling {self.name} moves {SUIT_NAMES[suit]}, which the record's rules "
                                    f"name ({', '.join(by)}): use a relabelling of symmetries(record['rules'])")
        mapped = copy.deepcopy(record)
        for number, (hand, out) in enumerate(zip(hands, mapped["hands"]), start=1):
            try:
                masks = parse_deal(hand["deal"], rules)
            except (TypeError, ValueError) as exc:
                raise SymmetryError(f"record hand {number}: bad deal: {exc}") from None
            out["deal"] = [[card_str(c) for c in range(NUM_CARDS) if self.map_cards(m) >> c & 1] for m in masks]
            out["actions"] = [[seat, self._record_action(action, number)] for seat, action in hand["actions"]]
            if "passes" in hand:
                out["passes"] = [{**p, "card": self._record_card(p.get("card"), number, "passes")}
                                 for p in self._entries(hand["passes"], number, "passes")]
            if "tricks" in hand:
                out["tricks"] = [{**t, "cards": [self._record_card(c, number, "tricks") for c in self._cards(t, number)]}
                                 for t in self._entries(hand["tricks"], number, "tricks")]
            if "messages" in hand:
                out["messages"] = [self._record_message(m, number) for m in self._message_list(hand["messages"], number)]
        return mapped

    def _record_action(self, action: int, number: int) -> int:
        n = self.num_actions
        if not 0 <= action < n:
            raise SymmetryError(f"record hand {number}: action {action} is not an action id 0..{n - 1}")
        return int(self.action_map[action])

    def _record_message(self, message: Any, number: int) -> Optional[int]:
        if message is None:
            return None
        if isinstance(message, bool) or not isinstance(message, int) or not 0 <= message < len(self.messages):
            raise SymmetryError(f"record hand {number} 'messages': {message!r:.40} is not a message "
                                f"0..{len(self.messages) - 1} or null")
        return self.messages[message]

    @staticmethod
    def _message_list(value: Any, number: int) -> list:
        if not isinstance(value, list):
            raise SymmetryError(f"record hand {number} 'messages': expected a list (one per seat), got {value!r:.80}")
        return value

    def _record_card(self, value: Any, number: int, entry: str) -> Any:
        try:
            card = parse_card(value)
        except ValueError as exc:
            raise SymmetryError(f"record hand {number} {entry!r}: {exc}") from None
        new = int(self.card_map[card])
        return new if isinstance(value, (int, np.integer)) else card_str(new)

    @staticmethod
    def _cards(trick: dict, number: int) -> list:
        cards = trick.get("cards", [])
        if not isinstance(cards, list):
            raise SymmetryError(f"record hand {number} 'tricks': cards should be a list, got {cards!r:.80}")
        return cards

    @staticmethod
    def _entries(value: Any, number: int, entry: str) -> list[dict]:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise SymmetryError(f"record hand {number} {entry!r}: expected a list of mappings, got {value!r:.80}")
        return value


class SymmetryGroup(Sequence):
    """The relabellings valid under a rule set, identity first (a sequence of :class:`Relabelling`)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.named_suits = named_suits(rules)
        free = [s for s in SIDE_SUITS if s not in self.named_suits]
        elements = []
        message_images = message_permutations(rules.signals)
        for image in itertools.permutations(free):
            suits = list(range(NUM_SUITS))
            for k, s in zip(free, image):
                suits[k] = s
            for messages in message_images:
                elements.append(Relabelling(suits, rules, messages))
        self._elements = tuple(elements)          # itertools gives the identity first
        self._position = {(g.suits, g.messages): i for i, g in enumerate(self._elements)}
        self.inverse_indices = tuple(self.index(g.inverse) for g in self._elements)
        """Position of each element's inverse."""
        self._batched: dict[Any, BatchedSymmetries] = {}

    def __getitem__(self, i):
        return self._elements[i]

    def __len__(self) -> int:
        return len(self._elements)

    def __repr__(self) -> str:
        return f"SymmetryGroup({self.rules.name}: {', '.join(g.name for g in self._elements)})"

    @property
    def identity(self) -> Relabelling:
        return self._elements[0]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self._elements)

    def index(self, relabelling: Relabelling, *_: Any) -> int:
        """Position of a relabelling in the group (by its suits and messages; SymmetryError when not in it)."""
        position = self._position.get((getattr(relabelling, "suits", None), getattr(relabelling, "messages", None)))
        if position is None:
            raise SymmetryError(f"{relabelling!r} is not a symmetry of the {self.rules.name} rules "
                                f"({', '.join(self.names)})")
        return position

    def by_name(self, name: str) -> Relabelling:
        """An element by its name (``"identity"``, ``"(C D)"``, ``"(C D H)"``, ``"(C D) messages:1032"``...)."""
        for g in self._elements:
            if g.name == name:
                return g
        raise SymmetryError(f"no relabelling named {name!r} under the {self.rules.name} rules: "
                            f"expected one of {', '.join(self.names)}")

    def batched(self, device: Any = "cpu") -> "BatchedSymmetries":
        """The group's maps as index tensors on ``device`` (cached per device)."""
        key = str(device)
        if key not in self._batched:
            self._batched[key] = BatchedSymmetries(self, device)
        return self._batched[key]


_GROUPS: dict[Rules, SymmetryGroup] = {}


def message_permutations(signals: int) -> list[tuple[int, ...]]:
    """The message relabellings of the group, identity first: every permutation of the
    ``signals`` messages up to :data:`FULL_MESSAGE_GROUP_LIMIT` of them, else the cyclic shifts
    (``[()]`` without a signal)."""
    if signals <= FULL_MESSAGE_GROUP_LIMIT:
        return list(itertools.permutations(range(signals)))
    return [tuple((m + k) % signals for m in range(signals)) for k in range(signals)]


def symmetries(rules: Rules | str | os.PathLike | Mapping[str, Any] | None = "standard",
               **overrides: Any) -> SymmetryGroup:
    """The relabellings of the game valid under ``rules`` (as ``spades_v0.env(rules=...)`` takes
    them: a preset name, a YAML path, a mapping or a ``Rules``; keyword arguments override single
    rules), identity first: the permutations of clubs, diamonds and hearts that fix every suit
    a rule names (6, or 2 where clubs are named), each with every message relabelling of
    :func:`message_permutations` under a free signal (6 x 24 = 144 with ``signals: 4``)."""
    if isinstance(rules, (str, os.PathLike)) and os.path.exists(rules) and not os.path.isfile(rules):
        # a device (/dev/zero) or a FIFO was read until memory ran out; a folder is no rules file either
        raise SymmetryError(f"rules={str(rules)!r} is not a regular file: expected a preset name or a YAML "
                            "rules file")
    r = make_rules(rules, **overrides)
    group = _GROUPS.get(r)
    if group is None:
        group = _GROUPS[r] = SymmetryGroup(r)
    return group



class BatchedSymmetries:
    """The maps of a :class:`SymmetryGroup` over the batched engine's tensors, as index gathers.

    ``which`` says which relabelling applies: a position in the group (one for every row), a
    :class:`Relabelling` of the group, or a (B,) integer tensor with one position per row, so that
    every table can see the game through a relabelling of its own (Other-Play). Results equal
    the per-state maps of :class:`Relabelling` value for value. ``check=False`` skips the value
    checks of ``which`` and of action ids (one host synchronization each) in hot loops."""

    def __init__(self, group: SymmetryGroup, device: Any = "cpu") -> None:
        import torch

        self.group = group
        self.device = torch.device(device)
        long = lambda rows: torch.as_tensor(np.stack(rows), dtype=torch.int64, device=self.device)  # noqa: E731
        self.observation_index = long([g.observation_index for g in group])
        """(G, obs_size): row ``i`` is the gather index of relabelling ``i``."""
        self.state_index = long([g.state_index for g in group])
        self.action_index = long([g.action_index for g in group])
        self.action_map = long([g.action_map for g in group])
        self.suit_shift = long([[NUM_RANKS * s for s in g.suits] for g in group])
        self.inverse_index = long([group.inverse_indices])[0]

    def __len__(self) -> int:
        return len(self.group)

    def inverse(self, which: Any) -> Any:
        """Positions of the inverses of ``which`` (an int for an int, a tensor for a tensor)."""
        which = self._which(which, None, check=True)
        return self.group.inverse_indices[which] if isinstance(which, int) else self.inverse_index[which]

    def sample(self, count: int, generator: Any = None) -> Any:
        """(count,) positions drawn uniformly from the group (identity included), on this form's
        device; ``generator`` (a ``torch.Generator`` on any device) makes the draw reproducible."""
        import torch

        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 0 <= count <= MAX_SAMPLE:
            raise SymmetryError(f"sample(count={count!r}): expected a whole number of rows from 0 to {MAX_SAMPLE:,}")
        where = generator.device if generator is not None else self.device
        return torch.randint(0, len(self.group), (count,), generator=generator, device=where).to(self.device)

    def _which(self, which: Any, rows: Optional[int], check: bool) -> Any:
        import torch

        if isinstance(which, Relabelling):
            return self.group.index(which)
        if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
            if not 0 <= which < len(self.group):
                raise SymmetryError(f"which={which}: expected a position 0..{len(self.group) - 1} in the group "
                                    f"({', '.join(self.group.names)})")
            return int(which)
        if not isinstance(which, torch.Tensor) or which.dtype in (torch.bool,) or which.is_floating_point() \
                or which.is_complex() or which.dim() != 1 or (rows is not None and which.shape[0] != rows):
            shown = f"tensor of shape {tuple(which.shape)}, dtype {which.dtype}" if isinstance(which, torch.Tensor) \
                else repr(which)
            raise SymmetryError(f"which={shown}: expected a position in the group, a Relabelling, or one integer "
                                f"position per row{f' ({rows},)' if rows is not None else ''}")
        which = which.to(device=self.device, dtype=torch.int64)
        if check and bool(((which < 0) | (which >= len(self.group))).any()):
            raise SymmetryError(f"which: positions must lie in 0..{len(self.group) - 1}, got "
                                f"{sorted(set(which.tolist()))[:8]}")
        return which

    def _gather(self, values: Any, index: Any, which: Any, what: str, check: bool) -> Any:
        import torch

        if not isinstance(values, torch.Tensor):
            raise SymmetryError(f"{what}: expected a torch tensor, got {type(values).__name__}")
        width = index.shape[1]
        if values.dim() == 0 or values.shape[-1] != width:
            raise SymmetryError(f"{what} of shape {tuple(values.shape)}: expected {width} cells on the last axis")
        which = self._which(which, values.shape[0] if values.dim() == 2 else None, check)
        if isinstance(which, int):
            return values.index_select(-1, index[which].to(values.device))
        if values.dim() != 2:
            raise SymmetryError(f"{what} of shape {tuple(values.shape)}: one relabelling per row needs a "
                                f"(rows, {width}) tensor")
        return values.gather(1, index.index_select(0, which).to(values.device))

    def map_observations(self, observations: Any, which: Any, check: bool = True) -> Any:
        """(B, obs_size) observations (any dtype) as the relabelled games show them."""
        return self._gather(observations, self.observation_index, which, "observations", check)

    def map_states(self, states: Any, which: Any, check: bool = True) -> Any:
        """(B, state_size) global states (``state_tensor()``) of the relabelled games."""
        return self._gather(states, self.state_index, which, "states", check)

    def map_masks(self, masks: Any, which: Any, check: bool = True) -> Any:
        """(B, rules.num_actions) per-action cells of the relabelled games: masks, and as well logits or
        probabilities (to take a relabelled policy's output back, map with ``inverse(which)``)."""
        return self._gather(masks, self.action_index, which, "masks", check)

    def map_actions(self, actions: Any, which: Any, check: bool = True) -> Any:
        """(B,) action ids in the relabelled games (cards and messages relabelled; bids and blind-nil actions unchanged)."""
        import torch

        if not isinstance(actions, torch.Tensor) or actions.dtype == torch.bool or actions.is_floating_point() \
                or actions.is_complex():
            raise SymmetryError(f"actions: expected an integer tensor of action ids, got {actions!r:.80}")
        which = self._which(which, actions.shape[0] if actions.dim() == 1 else None, check)
        actions = actions.to(device=self.device, dtype=torch.int64)
        num_actions = self.action_map.shape[1]
        if check and bool(((actions < 0) | (actions >= num_actions)).any()):
            raise SymmetryError(f"actions: expected action ids 0..{num_actions - 1}, got "
                                f"{sorted(set(actions.flatten().tolist()))[:8]}")
        if isinstance(which, int):
            return self.action_map[which][actions]
        if actions.dim() != 1:
            raise SymmetryError(f"actions of shape {tuple(actions.shape)}: one relabelling per row needs (rows,)")
        return self.action_map[which, actions]

    def map_card_sets(self, cards: Any, which: Any, check: bool = True) -> Any:
        """int64 card bitboards (B, ...) relabelled: hands, played cards, the deals that
        ``SpadesVectorEnv.reset(deals=...)`` takes."""
        import torch

        if not isinstance(cards, torch.Tensor) or cards.dtype != torch.int64 or cards.dim() == 0:
            raise SymmetryError(f"cards: expected an int64 tensor of card bitboards with rows first, got {cards!r:.80}")
        if check and bool(((cards < 0) | (cards >= 1 << NUM_CARDS)).any()):
            # bits 52-63 are no cards: they were shifted into other suits' cards or dropped
            raise SymmetryError(f"cards: expected card sets of 52 bits (0 <= value < 2**52), got bits 52-63 set "
                                f"in {int(((cards < 0) | (cards >= 1 << NUM_CARDS)).sum())} of them")
        which = self._which(which, cards.shape[0], check)
        shift = self.suit_shift[which].to(cards.device)
        if not isinstance(which, int):
            shift = shift.view(cards.shape[0], *([1] * (cards.dim() - 1)), NUM_SUITS)
        out = torch.zeros_like(cards)
        for s in range(NUM_SUITS):
            out |= ((cards >> (NUM_RANKS * s)) & ((1 << NUM_RANKS) - 1)) << shift[..., s]
        return out

    def wrap_policy(self, policy: Callable[[Any, Any], Any], which: Any) -> Callable[[Any, Any], Any]:
        """A batched policy ``policy(obs, mask) -> actions`` that sees every table through its
        relabelling and answers in the real game's actions (Other-Play's partner). ``which``: as
        above, or a function returning it, read at every call (change it per episode)."""
        def relabelled(observations: Any, masks: Any) -> Any:
            current = which() if callable(which) else which
            chosen = policy(self.map_observations(observations, current), self.map_masks(masks, current))
            return self.map_actions(chosen, self.inverse(current))
        return relabelled


def benchmark(specs: Sequence[str], batch: int = 4096, reps: int = 40) -> list[str]:
    """Milliseconds per call of the batched maps on ``batch`` tables, beside one engine step, for
    each ``device:threads:backend`` spec (``cuda:1:torch``, ``cpu:1:native``...): the figures of
    docs/symmetries.md (the command is there)."""
    import time

    import torch

    from .vector import SpadesVectorEnv

    lines = []
    for spec in specs:
        device, threads, backend = spec.split(":")
        torch.set_num_threads(int(threads))
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

        def timed(fn: Callable[[], Any]) -> float:
            for _ in range(3):
                fn()
            sync()
            start = time.perf_counter()
            for _ in range(reps):
                fn()
            sync()
            return (time.perf_counter() - start) / reps * 1e3

        extra = {"threads": int(threads)} if backend == "native" else {}
        env = SpadesVectorEnv(batch, rules="standard", seed=0, device=device, backend=backend, **extra)
        current = list(env.reset())
        gen = torch.Generator(device=device).manual_seed(0)

        def step() -> None:
            mask = current[1]
            actions = torch.where(mask, torch.rand(mask.shape, generator=gen, device=device), -1.0).argmax(1)
            current[:] = env.step(actions)[:2]

        rows = [("engine step (random legal actions)", timed(step))]
        obs, mask = current
        maps = symmetries("standard").batched(device)
        which = maps.sample(batch, generator=gen)
        actions = torch.randint(0, SIGNAL_ACTION_BASE, (batch,), device=device)
        states, hands = env.state_tensor(), env.state.hands
        rows += [
            ("map_observations, a relabelling per row", timed(lambda: maps.map_observations(obs, which))),
            ("map_observations, one for all rows", timed(lambda: maps.map_observations(obs, 3))),
            ("map_masks, per row", timed(lambda: maps.map_masks(mask, which))),
            ("map_actions, per row", timed(lambda: maps.map_actions(actions, which))),
            ("map_states, per row", timed(lambda: maps.map_states(states, which))),
            ("map_card_sets (B, 4), per row", timed(lambda: maps.map_card_sets(hands, which))),
            ("Other-Play decision: obs and mask in, action back",
             timed(lambda: (maps.map_observations(obs, which), maps.map_masks(mask, which),
                            maps.map_actions(actions, maps.inverse(which))))),
            ("obs.clone() (a plain copy, for scale)", timed(lambda: obs.clone())),
        ]
        lines.append(f"{device} backend={backend} threads={threads} tables={batch}")
        lines += [f"  {name:52s} {ms:8.3f} ms" for name, ms in rows]
    return lines


__all__ = ["symmetries", "named_suits", "Relabelling", "SymmetryGroup", "BatchedSymmetries", "SymmetryError",
           "benchmark", "message_permutations", "SIDE_SUITS", "SUIT_NAMING_RULES", "SUIT_NEUTRAL_RULES", "CARD_BLOCKS",
           "SUIT_BLOCKS", "MESSAGE_BLOCKS", "FULL_MESSAGE_GROUP_LIMIT"]

