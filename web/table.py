"""One game at the web table: a person in one seat, agents in the others.

A :class:`TableGame` owns a raw AEC env (whole games, any rules) and the agents of the other
seats. The server asks it for the person's view (:meth:`TableGame.view`: only what that seat
may see, with every legal action and, for each card that is not, the reason), applies the
person's actions (:meth:`TableGame.play`, refused with the reason when illegal) and lets the
agents move (:meth:`TableGame.advance`, run in a worker thread so that a slow agent never
holds up the server). A lock keeps each game consistent; games share nothing.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Optional

import numpy as np

import agents as registry
from agents.human import HumanAgent
from spades_env import spades_v0
from spades_env.cards import RANK_LETTERS, SUIT_LETTERS, card_pretty
from spades_env.game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, PHASE_NAMES, PHASE_PLAY, PHASE_SIGNAL,
                             SIGNAL_ACTION_BASE, IllegalActionError, action_str)
from spades_env.observation import decode_observation
from spades_env.names import SEAT_NAMES, bid_word, side_name   # the page's words come from here
from spades_env.rules import make_rules

from .limits import browser_agent, models_offered, short


# the person's name in a record's ``players`` (``person:NAME``), for telling people apart in kept games
PLAYER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")


class TableError(ValueError):
    """A request the table cannot carry out (says why)."""


class NotYourTurn(TableError):
    """The person acted out of turn, or after the game ended."""


def parse_agent_spec(spec: Any) -> tuple[str, dict]:
    """:func:`agents.specs.parse_agent_spec`, checked against the registry (the person's seat
    is not an agent's), its errors as :class:`TableError`."""
    from agents.specs import AgentSpecError, check_agent_name, parse_agent_spec as parse

    try:
        name, options = parse(spec)
        if name == "human":
            raise AgentSpecError("agent spec 'human': the person's seat is chosen with 'seat'; the others are agents")
        check_agent_name(name, spec)
    except AgentSpecError as exc:
        raise TableError(str(exc)) from None
    return name, options


def browser_agent_spec(spec: Any, models: dict) -> tuple[str, dict]:
    """A spec sent by a browser: :func:`parse_agent_spec`, then only the options of
    :data:`web.limits.AGENT_OPTIONS` (bounded budgets, models by name, never a path), model
    names replaced by their files. Its errors as :class:`TableError` saying what is allowed."""
    name, options = parse_agent_spec(spec)
    try:
        return name, browser_agent(name, options, models, spec)
    except ValueError as exc:
        raise TableError(str(exc)) from None


def table_rules(rules: Any):
    """The rules of a request: a preset name, or a mapping of rule settings (what a rules YAML
    file holds, optionally with ``preset``). Never a path: a request must not open files."""
    from spades_env.rules import PRESET_NAMES, RulesError

    if isinstance(rules, str) and rules not in PRESET_NAMES:
        raise TableError(f"rules={rules!r}: unknown rules preset; presets: {', '.join(PRESET_NAMES)}, or a mapping "
                         "of rule settings (a rules file's contents)")
    if not isinstance(rules, (str, dict)):
        raise TableError(f"rules={rules!r}: expected a preset name or a mapping of rule settings")
    try:
        return make_rules(rules)
    except (RulesError, TypeError, ValueError) as exc:
        raise TableError(f"rules: {exc}") from None


def bid_words(bids: list, blind: list) -> list:
    """Each seat's bid as people say it ("nil", "blind nil", "4"); None where not bid yet."""
    return [None if b is None or b < 0 else bid_word(int(b), bool(k)) for b, k in zip(bids, blind)]


def side_names(rules) -> list[str]:
    """Whom the scores belong to: the partnerships ("North-South"), or each seat in cutthroat."""
    if rules.partnerships:
        return [side_name(k) for k in range(2)]
    return list(SEAT_NAMES[:rules.players])


def hand_summary(hand: dict) -> dict:
    """A scored hand of a game record as the page's score table shows it (its bids in words too)."""
    # results: the engine's own breakdown per side (contract, nil, bags, penalties), for the page to explain a change
    summary = {k: hand[k] for k in ("bids", "blind", "tricks_taken", "score_change", "scores", "bags", "scores_before",
                                    "bags_taken", "bag_penalties", "results", "messages") if k in hand}
    if "bids" in hand:
        summary["bid_words"] = bid_words(hand["bids"], hand.get("blind") or [False] * len(hand["bids"]))
    return summary


def card_json(card: int) -> dict:
    rank = RANK_LETTERS[card % 13]
    return {"id": card, "rank": "10" if rank == "T" else rank, "suit": SUIT_LETTERS[card // 13],
            "text": card_pretty(card)}


def messages_json(game) -> list:
    """The message each absolute seat sent this hand under ``signals`` (None: not yet), or [] without a signal."""
    return [None if m < 0 else int(m) for m in game.messages] if game.rules.signals else []


def action_json(action: int) -> dict:
    if action >= SIGNAL_ACTION_BASE:
        message = action - SIGNAL_ACTION_BASE
        return {"id": action, "kind": "message", "message": message, "text": f"message {message}"}
    if action < 52:
        return {"id": action, "kind": "card", "text": card_pretty(action), "card": card_json(action)}
    if action == BLIND_NIL_ACTION:
        return {"id": action, "kind": "blind_nil", "text": "blind nil"}
    if action == LOOK_ACTION:
        return {"id": action, "kind": "look", "text": "look at my cards"}
    bid = action - BID_ACTION_BASE
    return {"id": action, "kind": "bid", "bid": bid, "text": "nil" if bid == 0 else str(bid)}


class TableGame:
    """A whole game: ``seat`` is the person's (0-3: North, East, South, West), ``seats`` the
    agent spec of every other seat, ``rules`` a preset name, a mapping or a ``Rules``.
    ``models``: the neural models a spec may name (:func:`web.limits.models_offered`); specs
    take only the options a browser may set (:func:`browser_agent_spec`)."""

    def __init__(self, game_id: str, seat: int, seats: dict[int, str], rules: Any = "standard",
                 seed: Optional[int] = None, pace: float = 0.0, models: Optional[dict] = None,
                 trick_pause: float = 0.0, keep: bool = False, player_name: Optional[str] = None) -> None:
        self.rules = table_rules(rules)
        n = self.rules.players
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < n:
            raise TableError(f"seat={seat!r}: expected a seat number 0..{n - 1} ({', '.join(SEAT_NAMES[:n])})")
        if not isinstance(pace, (int, float)) or isinstance(pace, bool) or not 0 <= pace <= 5:
            raise TableError(f"pace={pace!r}: expected seconds between agents' moves, 0 to 5")
        if not isinstance(trick_pause, (int, float)) or isinstance(trick_pause, bool) or not 0 <= trick_pause <= 5:
            raise TableError(f"trick_pause={trick_pause!r}: expected seconds a finished trick stays in view, 0 to 5")
        if not isinstance(keep, bool):
            raise TableError(f"keep={str(keep)[:40]!r}: expected true (keep this game's record) or false")
        if player_name is not None and not (isinstance(player_name, str) and PLAYER_NAME.fullmatch(player_name)):
            raise TableError(f"player_name={str(player_name)[:40]!r}: expected up to 40 letters, digits, '_' or '-' "
                             "(the name the kept records give the person's seat), or null")
        self.player_name = player_name
        self.id, self.seat, self.pace = game_id, seat, float(pace)
        # the person chose to keep this game as data (off by default): the server writes its record
        self.keep = keep
        self.keep_error: Optional[str] = None   # why the record could not be written, if it could not
        self.kept_version = 0                    # the version last written (0: nothing to write yet)
        # the agents wait this long after a trick is finished, so that people see its four cards
        self.trick_pause = float(trick_pause)
        self.last_move = time.monotonic()     # when the last action was applied (the pace counts from it)
        for other in seats:
            if not isinstance(other, int) or not 0 <= other < n or other == seat:
                raise TableError(f"agents: seat {other!r} " + ("is yours (the person's)" if other == seat else
                                 f"is not a seat: expected seats 0..{n - 1} other than yours ({seat})"))
        if models is None:
            models = models_offered()
        self.specs: dict[int, str] = {}
        self.agents: dict[int, Any] = {}
        for other in range(n):
            if other == seat:
                continue
            spec = seats.get(other, "heuristic")
            name, options = browser_agent_spec(spec, models)
            try:
                options.setdefault("seed", None if seed is None else seed + other)   # a spec's own seed wins
                self.agents[other] = registry.make(name, **options)
            except (TypeError, ValueError, FileNotFoundError) as exc:
                raise TableError(f"seat {other} ({SEAT_NAMES[other]}): agent {spec!r}: {exc}") from None
            self.specs[other] = spec
        self.env = spades_v0.raw_env(rules=self.rules, episode="game")
        self.env.reset(seed=seed)
        self.names = self.env.possible_agents
        self.explainer = HumanAgent(seat=0, rules=self.rules, unicode=True, color=False)
        self.lock = threading.Lock()
        self.version = 0              # bumped at every action: clients ask for what is newer
        self.log: list[dict] = []     # public events, in order
        self.thinking: Optional[int] = None
        self.error: Optional[str] = None
        self.cancelled = threading.Event()   # set when the game is deleted: its agents stop
        self.created = time.time()
        self._skip_done()
        self.thinking = self._agent_to_act()

    # ------------------------------------------------------------------ moves
    def _skip_done(self) -> None:
        env = self.env
        while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)

    def cancel(self) -> None:
        """Stop the agents: :meth:`advance` returns after the decision in progress (whose
        budget :data:`web.limits.AGENT_OPTIONS` keeps short) and never starts another."""
        self.cancelled.set()

    def set_keep(self, keep: Any) -> None:
        """The person's switch: keep this game's record (True) or not (False, the default)."""
        if not isinstance(keep, bool):
            raise TableError(f"keep={str(keep)[:40]!r}: expected true (keep this game's record) or false")
        with self.lock:
            if keep != self.keep:
                self.keep, self.keep_error = keep, None
                self.version += 1                 # other tabs on this game see the switch too

    @property
    def over(self) -> bool:
        return not self.env.agents

    @property
    def to_act(self) -> Optional[int]:
        return None if self.over else self.names.index(self.env.agent_selection)

    def _apply(self, seat: int, action: int) -> None:
        game = self.env.game
        phase, hand_number = PHASE_NAMES[game.phase], game.hand_number
        before_tricks = list(game.tricks_taken)
        self.env.step(action)
        event = {"seat": seat, "action": action_json(action), "phase": phase, "hand": hand_number}
        game = self.env.game
        if phase == "play" and (game.hand_number != hand_number or not game.trick_cards):
            if game.hand_number == hand_number:
                won = [s for s in range(len(before_tricks)) if game.tricks_taken[s] > before_tricks[s]]
                event["trick_won_by"] = won[0] if won else None
            else:                                   # the hand's last trick: the next hand has begun
                event["trick_won_by"] = self.env.game_record()["hands"][hand_number - 1]["tricks"][-1]["winner"]
        self.log.append(event)
        self.version += 1
        self.last_move = time.monotonic()
        self.thinking = self._agent_to_act()
        self._skip_done()

    def _agent_to_act(self) -> Optional[int]:
        """The seat an agent thinks for now (through the pace's wait too), None on the person's turn."""
        seat = self.to_act
        return None if seat is None or seat == self.seat or self.error else seat

    def play(self, action: Any) -> None:
        """The person's action; a :class:`TableError` with the reason when it is not legal now."""
        with self.lock:
            if self.over:
                raise NotYourTurn("the game is over: start a new one")
            if self.to_act != self.seat:
                raise NotYourTurn(f"it is {SEAT_NAMES[self.to_act]}'s turn, not yours")
            count = self.rules.num_actions
            if not isinstance(action, int) or isinstance(action, bool):
                raise TableError(f"action={str(action)[:40]!r}: expected an action id (an integer 0..{count - 1})")
            if not 0 <= action < count:
                messages = (f", {SIGNAL_ACTION_BASE}-{count - 1} messages 0-{self.rules.signals - 1}"
                            if self.rules.signals else "")
                raise TableError(f"action {action}: out of range: action ids are 0..{count - 1} "
                                 f"(0-51 cards, {BID_ACTION_BASE}-{BLIND_NIL_ACTION - 1} bids 0-13, "
                                 f"{BLIND_NIL_ACTION} blind nil, {LOOK_ACTION} look{messages})")
            legal = self.env.legal_actions()
            if action not in legal:
                raise TableError(self.why_illegal(action))
            try:
                self._apply(self.seat, action)
            except IllegalActionError as exc:      # the engine is the judge
                raise TableError(str(exc)) from None

    def advance(self) -> None:
        """Let the agents move until it is the person's turn or the game is over (blocking: the
        server runs it in a worker thread). An agent that fails stops the game with its error."""
        while True:
            with self.lock:
                seat = self.to_act
                if seat is None or seat == self.seat or self.error or self.cancelled.is_set():
                    self.thinking = None
                    return
                # pace every agent move, the first after the person's too; a finished trick longer
                finished = bool(self.log) and "trick_won_by" in self.log[-1]
                wait = max(self.pace, self.trick_pause if finished else 0.0) - (time.monotonic() - self.last_move)
            if wait > 0 and self.cancelled.wait(wait):
                return
            with self.lock:
                if self.to_act != seat or self.cancelled.is_set():
                    continue
                self.thinking = seat          # the seat on turn (the person is never "thinking")
                obs = self.env.observe(self.env.agent_selection)
                info = self.env.infos[self.env.agent_selection]
                agent = self.agents[seat]
            try:
                action = int(agent.act(obs, info))          # outside the lock: the view stays readable
            except Exception as exc:                          # noqa: BLE001 (shown to the person)
                with self.lock:
                    self.error = short(f"{SEAT_NAMES[seat]} ({self.specs[seat]}) failed: {type(exc).__name__}: {exc}")
                    self.thinking = None
                    self.version += 1
                return
            with self.lock:
                if self.cancelled.is_set():          # deleted while the agent thought
                    self.thinking = None
                    return
                self._apply(seat, action)

    # ------------------------------------------------------------------ explanations
    def why_illegal(self, action: int) -> str:
        env = self.env
        obs = env.observe(self.names[self.seat])
        view = decode_observation(obs["observation"], signals=self.rules.signals)
        if env.game.phase == PHASE_SIGNAL and action < SIGNAL_ACTION_BASE:
            return ("this is the free signal: send a message first (the bids and the cards come after every "
                    "seat has sent one)")
        if action >= SIGNAL_ACTION_BASE:
            if env.game.phase != PHASE_SIGNAL:
                return f"a message is sent only in the free signal, before the bids: this is the {PHASE_NAMES[env.game.phase]}"
            return f"message {action - SIGNAL_ACTION_BASE}: not a message of these rules (0..{self.rules.signals - 1})"
        if action < 52:
            if view.phase != PHASE_PLAY and PHASE_NAMES[env.game.phase] != "passing":
                return f"{card_pretty(action)}: this is the {PHASE_NAMES[env.game.phase]}, not the card play"
            return self.explainer.explain_card(action, view)
        if BID_ACTION_BASE <= action < BLIND_NIL_ACTION:
            if PHASE_NAMES[env.game.phase] != "bidding":
                return f"a bid is not expected now: this is the {PHASE_NAMES[env.game.phase]}"
            if action - BID_ACTION_BASE > self.rules.tricks_per_hand:
                return (f"a bid of {action - BID_ACTION_BASE}: a hand has {self.rules.tricks_per_hand} tricks "
                        f"(deck_ranks={self.rules.deck_ranks}), bids are 0..{self.rules.tricks_per_hand}")
            return self.explainer.explain_bid(action - BID_ACTION_BASE, view)
        if action in (BLIND_NIL_ACTION, LOOK_ACTION):
            return ("blind nil is offered only before you look at your cards, to a side that trails by "
                    f"{self.rules.blind_nil_min_deficit} or more" if self.rules.blind_nil else
                    "blind nil is not played under these rules")
        return f"action {action}: not an action id (0..{self.rules.num_actions - 1})"

    # ------------------------------------------------------------------ the person's view
    def view(self) -> dict:
        """Everything the person's seat may see, as JSON: no other hand, ever (except at the end
        of a hand, the cards already played)."""
        with self.lock:
            env, game = self.env, self.env.game
            n = self.rules.players
            me = self.names[self.seat]
            obs = env.observe(me)
            legal = [int(a) for a in np.flatnonzero(obs["action_mask"])] if self.to_act == self.seat else []
            hand = [c for c in range(52) if game.hands[self.seat] >> c & 1]
            looked = bool(game.looked[self.seat])
            unseen = not looked and PHASE_NAMES[game.phase] in ("blind_nil_decision",)
            cards = sorted(hand, key=lambda c: (-(c // 13 == 3), -(c // 13), -(c % 13)))
            reasons = {}
            if self.to_act == self.seat and not unseen:
                for c in cards:
                    if c not in legal:
                        reasons[c] = self.why_illegal(c)
            record = env.game_record()
            return {
                "id": self.id, "version": self.version, "seat": self.seat, "players": n,
                "seat_names": list(SEAT_NAMES[:n]), "rules": self.rules.name,
                "target_score": self.rules.target_score, "bag_limit": self.rules.bag_limit if self.rules.bags else None,
                "bag_penalty": self.rules.bag_penalty, "blind_nil_pass": self.rules.blind_nil_pass,
                # the free signal (signals: N messages) and the short deck (deck_ranks, tricks a hand)
                "signals": self.rules.signals, "messages": messages_json(game),
                "deck_ranks": self.rules.deck_ranks, "tricks_per_hand": self.rules.tricks_per_hand,
                "partnerships": self.rules.partnerships, "agents": {str(s): v for s, v in self.specs.items()},
                "phase": PHASE_NAMES[game.phase], "hand_number": game.hand_number, "dealer": game.dealer,
                "to_act": self.to_act, "thinking": self.thinking, "over": self.over, "error": self.error,
                "hand": [] if unseen else [card_json(c) for c in cards],
                "hand_hidden": unseen, "hand_size": len(hand),
                "legal": [action_json(a) for a in legal], "illegal_reasons": {str(k): v for k, v in reasons.items()},
                "bids": [None if b is None or b < 0 else int(b) for b in game.bids],   # None: not bid yet
                "bid_words": bid_words(game.bids, game.blind), "side_names": side_names(self.rules),
                "blind": [bool(b) for b in game.blind],
                "trick": [{"seat": (game.trick_leader + i) % n, "card": card_json(c)}
                          for i, c in enumerate(game.trick_cards)],
                "trick_winning": int(game.win_seat) if game.trick_cards else None,   # whose card wins so far
                "hand_counts": [bin(game.hands[s]).count("1") for s in range(n)],   # public: cards each seat holds
                # blind nil passing: how many cards this seat still passes, and the cards it received
                "passes_left": sum(1 for s, _ in game.pass_queue if s == self.seat),
                "received": [int(c) for c in range(52) if game.received[self.seat] >> c & 1],
                "trick_pause": self.trick_pause, "pace": self.pace,
                "keep": self.keep, "keep_error": self.keep_error,
                "tricks_won": list(game.tricks_taken),
                "scores": list(game.scores), "bags": list(game.bags),
                "spades_broken": bool(game.spades_broken),
                "last_trick": self._last_trick(),
                "hands": [hand_summary(h) for h in record["hands"] if h.get("complete")],
                "winner": record.get("winner"),
                "log": self._public_log(),
            }

    def _public_log(self) -> list[dict]:
        """The last 80 events (a whole hand, for the page's log of the hand in progress); a card
        passed between two other seats is not shown (only those partners see it)."""
        partner = (self.seat + 2) % self.rules.players if self.rules.partnerships else self.seat
        events = []
        for event in self.log[-80:]:
            if event["phase"] == "passing" and event["seat"] not in (self.seat, partner):
                event = {**event, "action": {"id": None, "kind": "pass", "text": "a card"}}
            events.append(event)
        return events

    def _last_trick(self) -> Optional[dict]:
        """The last completed trick (its cards and winner), from the public log."""
        cards, winner = [], None
        # fresh: nothing happened after it (then it stays in the middle; a bid of the next hand clears it)
        fresh = bool(self.log) and "trick_won_by" in self.log[-1]
        for event in reversed(self.log):
            if event["phase"] != "play":
                if cards:
                    break
                continue
            if "trick_won_by" in event and cards:
                break
            cards.append({"seat": event["seat"], "card": event["action"]["card"]})
            if "trick_won_by" in event:
                winner = event["trick_won_by"]
        if not cards or winner is None and len(cards) < self.rules.players:
            return None
        return {"cards": list(reversed(cards)), "winner": winner, "fresh": fresh, "hand": self.log[-1]["hand"] if fresh else None}

    def record(self) -> dict:
        """The game record, with who sat in each seat (``players``: the agents' specs, and
        "person" or "person:NAME" for the person; a replay ignores it)."""
        person = "person" if self.player_name is None else f"person:{self.player_name}"
        with self.lock:
            record = self.env.game_record()
        record["players"] = [self.specs.get(s, person) for s in range(self.rules.players)]
        return record

    def describe(self, action: int) -> str:
        return action_str(action)
