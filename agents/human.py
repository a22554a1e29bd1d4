"""A person at the table: ``agents.make("human")`` reads each choice from a text terminal.

The agent sees exactly what its own seat sees: every prompt is drawn from the observation
``env.last()`` hands it (read back with :func:`spades_env.decode_observation`), never from the
engine, so no other seat's cards can reach the screen::

    person = agents.make("human", seat=2)            # stdin/stdout; seat only names the others
    action = person.act(obs, info)                    # shows the table, asks until the input is legal

What a person may type:

- a message of the free signal (rules ``signals: N``): ``0``..``N-1`` (or ``m2``, ``message 2``);
- blind-nil decision: ``b`` (bid blind nil) or ``l`` (look at the cards first);
- a bid: ``1``..``13`` (up to the tricks of a hand: fewer in a short deck), ``nil`` (or ``0``);
- a card (passing or playing): ``AS``, ``as``, ``10h``, ``th``, ``A♠``, ``s a``, or the number
  shown next to it in the list of legal cards;
- commands at any prompt: ``?``/``help``, ``score``, ``last`` (the last trick), ``hand``
  (show the table again), ``rules``, ``q``/``quit`` (asks to confirm; raises :class:`QuitGame`).

Illegal or unreadable input is explained ("you must follow hearts", "spades are not broken
yet", "that card is not in your hand") and asked again. End of input (Ctrl-D) raises
:class:`QuitGame` too, so the caller can save the game before leaving (``spades-play`` does).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from typing import Any, Optional, Sequence, TextIO

from spades_env.cards import RANK_LETTERS, SUIT_NAMES, parse_card
from spades_env.game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, PHASE_BIDDING, PHASE_SIGNAL,
                             SIGNAL_ACTION_BASE,
                             PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY)
from spades_env.names import SEAT_NAMES, bid_word, side_name  # noqa: F401  (bid_word: used by play/)
from spades_env.observation import ObservationView

from .base import Agent, legal_actions, observation_view, register

SEAT_LETTERS = "NESW"
CLUBS, DIAMONDS, HEARTS, SPADES = range(4)
DISPLAY_SUITS = (SPADES, HEARTS, DIAMONDS, CLUBS)   # the order a hand is shown in
WIDTH = 78                                          # every line fits an 80-column terminal

_ASCII = str.maketrans({"♠": "S", "♥": "H", "♦": "D", "♣": "C", "·": "|", "─": "-", "═": "=", "→": "->",
                       "\ufffd": "?"})
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (colors, bracketed paste...)."""
    return _ANSI.sub("", text)


class QuitGame(Exception):
    """The person asked to leave (``quit``, confirmed) or the input ended (``reason == "eof"``)."""

    def __init__(self, reason: str = "quit") -> None:
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------- looks
def wants_color(stream: Any, color: Optional[bool] = None) -> bool:
    """Colors when asked, else when ``stream`` is a terminal, ``NO_COLOR`` is unset and TERM is
    not ``dumb``."""
    if color is not None:
        return color
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def can_print(stream: Any, text: str = "♠♥♦♣─·→") -> bool:
    """Whether ``stream``'s encoding can print ``text`` (suit symbols, rules, arrows)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return False
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class Style:
    """How cards and emphasis are drawn: ANSI colors or none, suit symbols or letters."""

    def __init__(self, color: bool = False, unicode: bool = True) -> None:
        self.color = color
        self.unicode = unicode
        self.suits = "♣♦♥♠" if unicode else "CDHS"
        self.hline = "─" if unicode else "-"
        self.dot = "·" if unicode else "|"
        self.arrow = "→" if unicode else "->"

    @classmethod
    def for_stream(cls, stream: Any, color: Optional[bool] = None, unicode: Optional[bool] = None) -> "Style":
        return cls(color=wants_color(stream, color), unicode=can_print(stream) if unicode is None else unicode)

    def paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self.paint(text, "1")

    def dim(self, text: str) -> str:
        return self.paint(text, "2")

    def warn(self, text: str) -> str:
        return self.paint(text, "1;33")

    def good(self, text: str) -> str:
        return self.paint(text, "32")

    def bad(self, text: str) -> str:
        return self.paint(text, "31")

    def suit(self, suit: int) -> str:
        symbol = self.suits[suit]
        return self.paint(symbol, "31") if suit in (HEARTS, DIAMONDS) else symbol

    def card(self, card: int, color: bool = True) -> str:
        """``A♠`` / ``10♥`` (hearts and diamonds in red), or ``AS`` / ``10H`` without symbols."""
        rank = RANK_LETTERS[card % 13]
        text = ("10" if rank == "T" else rank) + self.suits[card // 13]
        return self.paint(text, "31") if color and card // 13 in (HEARTS, DIAMONDS) else text

    def rule(self, title: str = "", char: Optional[str] = None) -> str:
        """A horizontal rule with an optional title: ``── Trick 3 of 13 ─────``."""
        char = char or self.hline
        if not title:
            return char * WIDTH
        head = f"{char * 2} {title} "
        return self.bold(head) + char * max(0, WIDTH - len(strip_ansi(head)))


def visible_len(text: str) -> int:
    return len(strip_ansi(text))


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - visible_len(text))


def wrap_items(items: Sequence[str], first: str, indent: int, sep: str = "  ", width: int = WIDTH) -> list[str]:
    """Lay ``items`` out after ``first``, wrapping to ``width`` columns with a hanging indent."""
    lines: list[str] = []
    line = first
    used = visible_len(first)
    fresh = True
    for item in items:
        need = visible_len(item) + (0 if fresh else len(sep))
        if not fresh and used + need > width:
            lines.append(line)
            line, used, fresh = " " * indent, indent, True
            need = visible_len(item)
        line += ("" if fresh else sep) + item
        used += need
        fresh = False
    lines.append(line)
    return lines


def sort_for_display(cards: Sequence[int]) -> list[int]:
    """Cards by suit (spades, hearts, diamonds, clubs), high to low within a suit."""
    order = {suit: i for i, suit in enumerate(DISPLAY_SUITS)}
    return sorted(cards, key=lambda c: (order[c // 13], -(c % 13)))


def card_input_form(card: int) -> str:
    """What to type for a card: ``AS``, ``10H``."""
    rank = RANK_LETTERS[card % 13]
    return ("10" if rank == "T" else rank) + "CDHS"[card // 13]


# ---------------------------------------------------------------------- reading input
_SUIT_WORDS = {"SPADES": "S", "SPADE": "S", "HEARTS": "H", "HEART": "H", "DIAMONDS": "D", "DIAMOND": "D",
               "CLUBS": "C", "CLUB": "C"}
_RANK_WORDS = {"ACE": "A", "KING": "K", "QUEEN": "Q", "JACK": "J", "TEN": "T"}


def parse_card_text(text: str) -> Optional[int]:
    """A card id from what a person typed, or None: ``AS``, ``as``, ``10h``, ``th``, ``A♠``,
    ``♠A``, ``s a``, ``ace of spades``, ``Q♥️`` (emoji forms and outline suits too)."""
    t = text.strip().upper().replace("\ufe0f", "")
    for outline, solid in zip("♧♢♡♤", "♣♦♥♠"):
        t = t.replace(outline, solid)
    words = [w for w in re.split(r"[\s,.\-_/]+", t) if w and w != "OF"]
    words = [_SUIT_WORDS.get(w, _RANK_WORDS.get(w, w)) for w in words]
    t = "".join(words)
    if not t or len(t) > 3:
        return None
    try:
        return parse_card(t)
    except ValueError:
        return None


def parse_bid_text(text: str) -> Optional[int]:
    """A bid 0..13 (0 = nil) from ``4``, ``nil``, ``0``, ``n``, ``zero``; None if not a bid."""
    t = text.strip().lower()
    if t in ("nil", "n", "0", "zero", "null", "bid nil"):
        return 0
    if t.startswith("bid "):
        t = t[4:].strip()
    if re.fullmatch(r"[0-9]{1,2}", t):
        return int(t)
    words = ("zero one two three four five six seven eight nine ten eleven twelve thirteen").split()
    return words.index(t) if t in words else None


def allowed_bids(legal: Sequence[int]) -> list[int]:
    """The bids (0 = nil) among legal action ids."""
    return [a - BID_ACTION_BASE for a in legal if BID_ACTION_BASE <= a < BLIND_NIL_ACTION]


def allowed_messages(legal: Sequence[int]) -> list[int]:
    """The messages of the free signal among legal action ids."""
    return [a - SIGNAL_ACTION_BASE for a in legal if a >= SIGNAL_ACTION_BASE]


def parse_message_text(text: str) -> Optional[int]:
    """A message number from ``2``, ``m2``, ``m 2``, ``message 2``; None if not one."""
    match = re.fullmatch(r"(?:m|msg|message)?\s*(\d{1,2})", text.strip().lower())
    return int(match.group(1)) if match else None


def format_bid_choices(bids: Sequence[int]) -> str:
    """``nil, 1-13`` / ``4-13`` / ``nil, 2, 4-5``."""
    parts: list[str] = []
    numbers = sorted(b for b in bids if b > 0)
    if 0 in bids:
        parts.append("nil")
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        parts.append(str(numbers[i]) if i == j else f"{numbers[i]}-{numbers[j]}")
        i = j + 1
    return ", ".join(parts)


# ---------------------------------------------------------------------- names
class Seats:
    """Names of the seats as the person sees them: ``You``, then the others by compass point
    (when the person's seat is known) or by position (``Left``, ``Partner``, ``Right``)."""

    def __init__(self, seat: Optional[int], n: int = 4, partnerships: bool = True) -> None:
        self.seat, self.n, self.partnerships = seat, n, partnerships

    def abs_name(self, seat: int) -> str:
        if self.seat is not None and seat == self.seat:
            return "You"
        if self.n == 4:
            return SEAT_NAMES[seat]
        return f"Player {seat}"

    def name(self, rel: int) -> str:
        """Relative seat (0 = you, 1 = left, 2 = partner / across, 3 = right) to a name."""
        if rel == 0:
            return "You"
        if self.seat is not None:
            return self.abs_name((self.seat + rel) % self.n)
        if self.n == 3:
            return ("You", "Left", "Right")[rel]
        return ("You", "Left", "Partner" if self.partnerships else "Across", "Right")[rel]

    def role(self, rel: int) -> str:
        if rel == 0:
            return ""
        if self.partnerships and rel == 2:
            return "partner"
        return "opponent" if self.partnerships else ""

    def side_name(self, rel_side: int) -> str:
        """``Us (N/S)`` / ``Them (E/W)``; in cutthroat the player's name."""
        if not self.partnerships:
            return self.name(rel_side)
        word = "Us" if rel_side == 0 else "Them"
        if self.seat is None or self.n != 4:
            return word
        side = (self.seat + rel_side) % 2
        return f"{word} ({side_name(side, short=True)})"

    def abs_side_name(self, side: int) -> str:
        if not self.partnerships:
            return self.abs_name(side)
        own = self.seat % 2 if self.seat is not None else 0
        return self.side_name((side - own) % 2)

    def possessive(self, name: str) -> str:
        return "your" if name == "You" else f"{name}'s"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# ---------------------------------------------------------------------- the agent
HELP_COMMANDS = """\
Commands (at any prompt):
  ?, help    this help            score     the score and bags
  last       the last trick       hand      show the table again
  rules      the rules in play    q, quit   leave (the game is saved)"""

PHASE_HELP = {
    PHASE_SIGNAL: """\
The free signal: before the bids every seat, in bidding order, sends one of a
few messages (type its number). Everyone sees it; it scores nothing and means
whatever your partnership makes it mean.""",
    PHASE_BLIND_DECISION: """\
Blind nil: you bid nil (no tricks at all) *before* looking at your cards.
Kept: a big bonus; one trick taken: the same amount lost. Type b to bid blind
nil, or l to look at your cards and then bid normally.""",
    PHASE_BIDDING: """\
Bidding: say how many tricks you expect to take, 1 to 13 (a short deck has fewer
tricks: 1 to its hand's cards). Your side's contract
is your bid plus your partner's. Nil (type nil or 0) promises to take no trick
at all: +100 if you manage, -100 if not.""",
    PHASE_PASSING: """\
Passing: after a blind nil, the partner passes cards to the blind-nil bidder,
who then passes as many back. Type a card (AS, 10h, qd) or its number.""",
    PHASE_PLAY: """\
Playing: type a card (AS, as, 10h, th{symbol}) or the number shown next to it.
Follow the suit led if you can; otherwise play anything (a spade trumps).
Spades may not be led until one has been played ("broken"), unless you hold
only spades. The highest spade wins the trick, else the highest card of the
suit led.""",
}


class HumanAgent(Agent):
    """A person choosing through a text input/output pair (stdin/stdout by default).

    Args:
        seed: unused (a person is not seeded); accepted like every agent's.
        input, output: the text streams to read from and write to.
        seat: the person's absolute seat, if known: only used to name the other seats
            (North, East...) instead of Left/Partner/Right.
        rules: the :class:`~spades_env.Rules` in play (public), for sharper explanations of
            illegal moves; optional.
        color, unicode: force colors / suit symbols on or off (default: detect from ``output``
            and ``NO_COLOR``).
    """

    name = "human"
    asks_a_person = True

    def __init__(self, seed: Optional[int] = None, input: Optional[TextIO] = None, output: Optional[TextIO] = None,
                 seat: Optional[int] = None, rules: Any = None, color: Optional[bool] = None,
                 unicode: Optional[bool] = None) -> None:
        super().__init__(seed)
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stdout
        self.style = Style.for_stream(self.output, color=color, unicode=unicode)
        self.rules = rules
        n = rules.players if rules is not None else 4
        partnerships = rules.partnerships if rules is not None else True
        self.seats = Seats(seat, n, partnerships)
        self.last_trick: Optional[str] = None   # set by the table (see note_trick)
        self.view: Optional[ObservationView] = None

    # -------------------------------------------------------------- output / input
    def say(self, text: str = "") -> None:
        """Print a line (or lines) to the person (in plain ASCII where the terminal needs it)."""
        text += "\n"
        if not self.style.unicode:
            text = text.translate(_ASCII)
            encoding = getattr(self.output, "encoding", None)
            if encoding:
                try:
                    text.encode(encoding)
                except (UnicodeEncodeError, LookupError):
                    text = text.encode(encoding, "replace").decode(encoding, "replace")
        self.output.write(text)
        self.output.flush()

    def warn(self, text: str, extra: str = "") -> None:
        """An explanation (highlighted, wrapped to the screen), then ``extra`` as it is."""
        lines = textwrap.wrap(text, WIDTH) or [""]
        self.say("\n".join(self.style.warn(line) for line in lines) + (("\n" + extra) if extra else ""))

    def note_trick(self, text: str) -> None:
        """The table tells the person about a finished trick (public); ``last`` shows it again."""
        self.last_trick = text

    def _uses_terminal(self) -> bool:
        try:
            return (self.input is sys.stdin and self.output is sys.stdout
                    and sys.stdin.isatty() and sys.stdout.isatty())
        except (AttributeError, ValueError):
            return False

    def ask(self, prompt: str) -> str:
        """One line from the person (the prompt is written first). End of input: QuitGame."""
        if self._uses_terminal():
            try:
                return input(prompt).strip()   # line editing when readline is loaded
            except EOFError:
                self.say("")
                raise QuitGame("eof") from None
            except UnicodeDecodeError:
                return "\ufffd"                # not readable in the terminal's encoding: explained
        self.output.write(prompt)
        self.output.flush()
        line = self.input.readline()
        if not line:
            self.say("")
            raise QuitGame("eof")
        return line.strip()

    def pause(self, prompt: str = "Press Enter for the next hand (q = quit)> ") -> None:
        """Wait for the person (Enter); ``q`` asks to leave, like at any prompt."""
        while True:
            word = self.ask(prompt).strip().lower()
            if word not in ("q", "quit", "exit", ":q"):
                return
            if self.ask("Quit this game? The game so far will be saved. (y/n)> ").strip().lower() in ("y", "yes"):
                raise QuitGame("quit")

    # -------------------------------------------------------------- acting
    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        legal = legal_actions(obs)
        if not legal:
            raise ValueError("HumanAgent.act: the action mask is empty (is it this seat's turn?)")
        view = observation_view(obs)
        self.view = view
        self.seats.n, self.seats.partnerships = view.players, view.partnerships
        self.say(self.render(view, legal))
        prompt = self.prompt(view, legal)
        while True:
            text = self.ask(prompt)
            action = self.interpret(text, view, legal)
            if action is not None:
                return action

    def interpret(self, text: str, view: ObservationView, legal: Sequence[int]) -> Optional[int]:
        """The action for ``text``, or None after telling the person what went wrong / what they
        asked for."""
        word = text.strip().lower()
        if self._command(word, view, legal):
            return None
        phase = view.phase
        if phase == PHASE_SIGNAL:
            return self._message_choice(word, legal)
        if phase == PHASE_BLIND_DECISION:
            return self._blind_choice(word, legal)
        if phase == PHASE_BIDDING:
            return self._bid_choice(text, view, legal)
        return self._card_choice(text, view, legal)

    def _message_choice(self, word: str, legal: Sequence[int]) -> Optional[int]:
        allowed = allowed_messages(legal)
        message = parse_message_text(word)
        if message is not None and message in allowed:
            return SIGNAL_ACTION_BASE + message
        choices = f"messages 0 to {max(allowed)}" if allowed else "no message"
        if message is not None:
            self.warn(f"There is no message {message}: the signal has {choices}.")
        else:
            self.warn(f"'{word}' is not a message: type its number ({choices}).")
        return None

    def _command(self, word: str, view: ObservationView, legal: Sequence[int]) -> bool:
        if word == "":
            self.say(self.legal_line(view, legal))
            return True
        if word in ("?", "h", "help"):
            symbol = ", A♠" if self.style.unicode else ""
            self.say(PHASE_HELP.get(view.phase, "").replace("{symbol}", symbol) + "\n" + HELP_COMMANDS)
            return True
        if word in ("q", "quit", "exit", ":q"):
            answer = self.ask("Quit this game? The game so far will be saved. (y/n)> ").strip().lower()
            if answer in ("y", "yes"):
                raise QuitGame("quit")
            self.say("Carrying on.")
            return True
        if word in ("score", "scores"):
            self.say("\n".join(self.score_lines(view)))
            return True
        if word in ("last", "last trick"):
            self.say(self.last_trick or "No trick has been completed yet this game.")
            return True
        if word in ("hand", "table", "show", "board"):
            self.say(self.render(view, legal))
            return True
        if word == "rules":
            self.say(self.rules_text())
            return True
        return False

    def _blind_choice(self, word: str, legal: Sequence[int]) -> Optional[int]:
        if word in ("b", "blind", "blind nil", "bn", "y", "yes") and BLIND_NIL_ACTION in legal:
            return BLIND_NIL_ACTION
        if word in ("l", "look", "n", "no") and LOOK_ACTION in legal:
            return LOOK_ACTION
        if parse_bid_text(word) is not None or word == "nil":
            self.warn("First decide: b to bid blind nil (without looking), or l to look at your cards; "
                      "then you bid.")
        else:
            self.warn(f"'{word}' is not a choice here: type b (blind nil) or l (look).")
        return None

    def _bid_choice(self, text: str, view: ObservationView, legal: Sequence[int]) -> Optional[int]:
        allowed = allowed_bids(legal)
        choices = f"You may bid: {format_bid_choices(allowed)}."
        word = text.strip().lower()
        bid = parse_bid_text(word)
        if bid is None:
            if word in ("b", "blind", "blind nil", "bn"):
                reason = "Blind nil is offered only before you look at your cards, while your side trails."
            elif parse_card_text(text) is not None:
                reason = "This is the bidding: say how many tricks you expect to take, not a card."
            else:
                reason = f"'{text.strip()}' is not a bid: type a number of tricks or nil."
            self.warn(reason + " " + choices)
            return None
        tricks = view.tricks_per_hand
        if bid > tricks:
            self.warn(f"There are only {tricks} tricks: a bid is 1 to {tricks}, or nil. " + choices)
            return None
        if bid not in allowed:
            self.warn(self.explain_bid(bid, view) + " " + choices)
            return None
        return BID_ACTION_BASE + bid

    def _card_choice(self, text: str, view: ObservationView, legal: Sequence[int]) -> Optional[int]:
        cards = sort_for_display([a for a in legal if a < 52])
        word = text.strip()
        if re.fullmatch(r"[0-9]{1,2}", word):
            k = int(word)
            if 1 <= k <= len(cards):
                return cards[k - 1]
            self.warn(f"There is no card number {k}: choose 1-{len(cards)}, "
                      f"or type the card (e.g. {card_input_form(cards[0])}).")
            return None
        card = parse_card_text(word)
        if card is None:
            if parse_bid_text(word) == 0 or word.lower() in ("b", "l", "look", "blind"):
                self.warn("The bidding is over: choose a card.", self.legal_line(view, legal))
            else:
                forms = "AS, 10h, th or A♠" if self.style.unicode else "AS, as, 10h or th"
                self.warn(f"'{word}' is not a card. Type it like {forms}, or its number "
                          f"1-{len(cards)}.")
            return None
        if card in cards:
            return card
        self.warn(self.explain_card(card, view), self.legal_line(view, legal))
        return None

    # -------------------------------------------------------------- explanations
    def explain_card(self, card: int, view: ObservationView) -> str:
        """Why ``card`` may not be played (or passed) now, in words."""
        shown = self.style.card(card, color=False)   # inside a highlighted message
        r = self.rules
        hand = view.hand
        if card not in hand:
            played_by = next((rel for rel, cards in enumerate(view.played) if card in cards), None)
            if played_by is not None:
                who = self.seats.name(played_by)
                return f"{shown} has already been played{' by you' if who == 'You' else f' (by {who})'}."
            if card in view.passed:
                return f"You passed {shown} away; it is not in your hand."
            return f"{shown} is not in your hand."
        if view.phase != PHASE_PLAY:
            return f"{shown} cannot be chosen now."
        suit = card // 13
        first_trick = view.tricks_played == 0
        if view.current_trick:
            led = view.current_trick[0][1] // 13
            follow = [c for c in hand if c // 13 == led]
            if suit != led and follow:
                return (f"You must follow {SUIT_NAMES[led]}: you have "
                        f"{' '.join(self.style.card(c, color=False) for c in sort_for_display(follow))}.")
            if suit == SPADES and first_trick and (r is None or r.no_spades_first_trick):
                return "No spade may be played to the first trick (unless you hold nothing else)."
            return f"{shown} is not a legal play now."
        # Leading.
        if first_trick and r is not None and r.two_of_clubs_leads and 0 in hand and card != 0:
            return f"The two of clubs ({self.style.card(0, color=False)}) must lead the first trick."
        if suit == SPADES:
            if r is not None and r.spades_lead == "forced_only":
                return "Under these rules a spade may be led only when you hold nothing but spades."
            if first_trick and r is not None and r.no_spades_first_trick:
                return "No spade may be led to the first trick (unless you hold nothing else)."
            if not view.spades_broken:
                return ("Spades are not broken yet: you may lead a spade only after a spade has been "
                        "played, or when you hold nothing but spades.")
            return "You may not lead a spade now."
        return f"{shown} is not a legal play now."

    def explain_bid(self, bid: int, view: ObservationView) -> str:
        r = self.rules
        partner = view.bids[2] if view.partnerships and view.players == 4 else None
        word = "Nil" if bid == 0 else f"A bid of {bid}"
        if bid == 0 and r is not None and not r.nil:
            return "Nil bids are not allowed under these rules."
        if r is not None and partner is not None and r.min_team_bid:
            if bid == 0 or bid + partner < r.min_team_bid:
                return (f"{word} is not allowed: your side must bid at least {r.min_team_bid} together "
                        f"(your partner bid {bid_word(partner, view.blind[2])}).")
        if r is not None and r.max_team_bid is not None and bid + (partner or 0) > r.max_team_bid:
            return f"{word} is not allowed: your side's bids may total at most {r.max_team_bid}."
        if r is not None and not r.bids_may_total_13 and view.dealer == 0:
            total = sum(b for b in view.bids[1:] if b)
            if bid + total == r.tricks_per_hand:
                return f"As the dealer you may not make the bids add up to {r.tricks_per_hand}."
        return f"{word} is not allowed here."

    # -------------------------------------------------------------- drawing the table
    def render(self, view: ObservationView, legal: Sequence[int]) -> str:
        """The table as this seat sees it, then what may be done now."""
        s = self.style
        names = self.seats
        n = view.players
        phase = view.phase
        dealer = names.name(view.dealer) if view.dealer is not None else "?"
        deals = "you deal" if dealer == "You" else f"{dealer} deals"
        if phase == PHASE_PLAY:
            title = (f"Trick {view.tricks_played + 1} of {view.tricks_per_hand} {s.dot} spades "
                     f"{'broken' if view.spades_broken else 'not broken yet'} {s.dot} {deals}")
        elif phase == PHASE_PASSING:
            title = f"Passing cards {s.dot} {deals}"
        elif phase == PHASE_SIGNAL:
            title = f"The free signal {s.dot} {deals}"
        else:
            title = f"Bidding {s.dot} {deals}"
        lines = ["", s.rule(title)]
        # The seat grid, clockwise from you.
        label_w, col_w = 9, 12
        order = list(range(n))
        lines.append((" " * label_w + "".join(pad(s.bold(names.name(r)) if r == 0 else names.name(r), col_w)
                                              for r in order)).rstrip())
        roles = [names.role(r) for r in order]
        if any(roles):
            lines.append((" " * label_w + "".join(pad(s.dim(role), col_w) for role in roles)).rstrip())
        bids = []
        for r in order:
            if view.bids[r] is None:
                bids.append("?" if (r == 0 and phase in (PHASE_BIDDING, PHASE_BLIND_DECISION)) else "-")
            else:
                bids.append(bid_word(view.bids[r], view.blind[r]))
        def row(label: str, values: Sequence[str]) -> str:
            return (pad(label, label_w) + "".join(pad(v, col_w) for v in values)).rstrip()

        if view.signals:
            lines.append(row("Message", ["-" if m is None else str(m) for m in view.messages]))
        lines.append(row("Bid", bids))
        if phase == PHASE_PLAY:
            lines.append(row("Tricks", [str(view.tricks_taken[r]) for r in order]))
        if not view.partnerships:
            lines.append(row("Score", [str(view.scores[r]) for r in order]))
            lines.append(row("Bags", [str(view.bags[r]) for r in order]))
        else:
            lines.extend(self.side_lines(view))
        if phase == PHASE_PLAY:
            lines.append("")
            lines.append(self.trick_line(view))
        lines.append("")
        lines.extend(self.hand_lines(view))
        lines.extend(self.situation_lines(view, legal))
        return "\n".join(lines)

    def side_lines(self, view: ObservationView) -> list[str]:
        """Per partnership: score, bags, contract and (in play) tricks toward it."""
        s = self.style
        lines = []
        names = self.seats
        for side in (0, 1):
            members = (side, side + 2)
            contract = sum(view.bids[m] or 0 for m in members)
            nils = [f"{bid_word(0, view.blind[m])} ({names.name(m)})" for m in members if view.bids[m] == 0]
            label = names.side_name(side)
            items = [f"score {view.scores[side]:>4}, {plural(view.bags[side], 'bag')}"]
            if any(view.bids[m] is not None for m in members):
                if contract or not nils:
                    items.append(f"contract {contract}" + "".join(" + " + nil for nil in nils))
                else:
                    items.append("bid " + ", ".join(nils))
                if view.phase == PHASE_PLAY:
                    items.append(f"took {sum(view.tricks_taken[m] for m in members)}")
            lines.extend(wrap_items(items, pad(s.bold(label) if side == 0 else label, 12), 12, sep=f" {s.dot} "))
        return lines

    def trick_line(self, view: ObservationView) -> str:
        s = self.style
        number = view.tricks_played + 1
        if not view.current_trick:
            return f"Trick {number}: {s.bold('you lead')}."
        parts = []
        for i, (rel, card) in enumerate(view.current_trick):
            name = self.seats.name(rel)
            parts.append(f"{name} {'led ' if i == 0 else ''}{s.card(card)}")
        parts.append(s.bold("you?"))
        return f"Trick {number}: " + f" {s.dot} ".join(parts)

    def hand_lines(self, view: ObservationView) -> list[str]:
        s = self.style
        if not view.hand:
            return ["Your hand: (face down: you have not looked at your cards)"]
        received = set(view.received) if view.phase == PHASE_PASSING else set()
        groups = []
        for suit in DISPLAY_SUITS:
            cards = sort_for_display([c for c in view.hand if c // 13 == suit])
            if cards:
                groups.append(" ".join(s.card(c) + ("*" if c in received else "") for c in cards))
        lines = wrap_items(groups, "Your hand  ", 11, sep="   ")
        if received:
            lines.append(f"           (* = passed to you: "
                         f"{' '.join(s.card(c) for c in sort_for_display(view.received))})")
        return lines

    def legal_line(self, view: ObservationView, legal: Sequence[int]) -> str:
        s = self.style
        phase = view.phase
        if phase == PHASE_SIGNAL:
            messages = allowed_messages(legal)
            return (f"Send a message: {', '.join(str(m) for m in messages)} (everyone sees it; it scores nothing)."
                    if len(messages) < 3 else f"Send a message: {messages[0]} to {messages[-1]} (everyone sees it; "
                    "it scores nothing).")
        if phase == PHASE_BLIND_DECISION:
            return "Choose: b = bid blind nil (without looking), l = look at your cards."
        if phase == PHASE_BIDDING:
            return f"You may bid: {format_bid_choices(allowed_bids(legal))}."
        cards = sort_for_display([a for a in legal if a < 52])
        if phase == PHASE_PASSING:
            head = "Pass one of: "
        elif view.current_trick:
            led = view.current_trick[0][1] // 13
            if all(c // 13 == led for c in cards):
                head = f"Follow {SUIT_NAMES[led]}: "
            else:
                head = f"No {SUIT_NAMES[led]}, play any: "
        elif len(cards) == len(view.hand):
            head = "Lead any card: "
        else:
            head = "You may lead: "
        items = [f"{s.dim(str(i) + ')')} {s.card(c)}" for i, c in enumerate(cards, start=1)]
        return "\n".join(wrap_items(items, head, 4))

    def situation_lines(self, view: ObservationView, legal: Sequence[int]) -> list[str]:
        s = self.style
        lines = []
        phase = view.phase
        if phase == PHASE_BLIND_DECISION:
            deficit = view.scores[1] - view.scores[0] if view.partnerships else 0
            bonus = self.rules.blind_nil_bonus if self.rules is not None else 200
            passing = self.rules.blind_nil_pass if self.rules is not None else 2
            text = (f"Your side trails by {deficit}, so you may bid BLIND NIL before looking: +{bonus} if "
                    f"you take no trick, -{bonus} if you take any.")
            if passing:
                text += f" Your partner then passes you {passing} cards and you pass {passing} back."
            lines.extend(textwrap.wrap(text, WIDTH))
        elif phase == PHASE_PASSING:
            partner = self.seats.name(2)
            total = self.rules.blind_nil_pass if self.rules is not None else None
            if view.bids[0] == 0 and view.blind[0]:
                total = len(view.received)
                lines.append(f"You bid blind nil: pass {plural(total, 'card')} back to {partner} "
                             f"(card {len(view.passed) + 1} of {total}).")
            else:
                count = f"card {len(view.passed) + 1} of {total}" if total else f"card {len(view.passed) + 1}"
                lines.append(f"{partner} bid blind nil: pass them a card ({count}).")
        elif phase == PHASE_PLAY and not view.current_trick and not view.spades_broken:
            if any(c // 13 != SPADES for c in view.hand):
                lines.append(s.dim("(spades are not broken yet: you cannot lead a spade)"))
        lines.append(self.legal_line(view, legal))
        return lines

    def prompt(self, view: ObservationView, legal: Sequence[int]) -> str:
        phase = view.phase
        if phase == PHASE_SIGNAL:
            return f"Your message (0-{max(allowed_messages(legal))}; ? = help)> "
        if phase == PHASE_BLIND_DECISION:
            return "Blind nil? (b = blind nil, l = look, ? = help)> "
        if phase == PHASE_BIDDING:
            return f"Your bid ({format_bid_choices(allowed_bids(legal))}; ? = help)> "
        cards = sort_for_display([a for a in legal if a < 52])
        example = card_input_form(cards[0])
        what = "Card to pass" if phase == PHASE_PASSING else "Your card"
        numbers = "1" if len(cards) == 1 else f"1-{len(cards)}"
        return f"{what} (e.g. {example} or {numbers}; ? = help)> "

    def score_lines(self, view: ObservationView) -> list[str]:
        names = self.seats
        target = f"{view.target_score} wins"
        mercy = f", {view.mercy_score} loses" if view.mercy_score is not None else ""
        lines = [f"Score ({target}{mercy}):"]
        for side in range(len(view.scores)):
            lines.append(f"  {pad(names.side_name(side), 12)} {view.scores[side]:>5} points, "
                         f"{plural(view.bags[side], 'bag')}")
        return lines

    def rules_text(self) -> str:
        r = self.rules
        if r is None:
            return "The rules in play are not known to this prompt."
        parts = [f"Rules: {r.name}. {r.target_score} to win"
                 + (f", {r.mercy_score} loses" if r.mercy_score is not None else "") + "."]
        parts.append("Nil allowed." if r.nil else "No nil bids.")
        if r.blind_nil:
            parts.append(f"Blind nil (+/-{r.blind_nil_bonus}) when your side trails by "
                         f"{r.blind_nil_min_deficit}+, {r.blind_nil_pass}-card pass.")
        if r.bags:
            parts.append(f"Every {r.bag_limit} bags (overtricks) cost {r.bag_penalty}.")
        lead = {"broken": "Spades may be led once broken.", "any": "Spades may be led any time.",
                "forced_only": "Spades may be led only when you hold nothing else."}[r.spades_lead]
        parts.append(lead)
        if r.min_team_bid:
            parts.append(f"Partners must bid at least {r.min_team_bid} together.")
        if r.no_spades_first_trick:
            parts.append("No spades on the first trick.")
        if r.two_of_clubs_leads:
            parts.append("The two of clubs leads.")
        if r.max_hands:
            parts.append(f"At most {r.max_hands} hand{'s' if r.max_hands != 1 else ''}.")
        if r.deck_ranks < 13:
            parts.append(f"A short deck: the {r.deck_ranks} highest ranks of each suit, {r.tricks_per_hand} cards "
                         "and tricks a hand.")
        if r.signals:
            parts.append(f"Before the bids each seat sends one of {r.signals} messages (0-{r.signals - 1}), "
                         "seen by all.")
        return "\n".join(textwrap.wrap(" ".join(parts), WIDTH))


register("human", HumanAgent)
