"""A determinized search player (perfect-information Monte Carlo): ``agents.make("search_v1", seed=0)``,
the ``search`` of before 2026-12-01; ``search`` now adds exact endgames (agents/endgame_search.py).

At every card decision with a real choice it reads its observation back into what its seat
knows (:class:`Knowledge`), samples deals of the unseen cards exactly uniformly among those
consistent with it (:class:`DealSampler`), weights them by how well each sampled hand explains
the bid its seat made, and plays the rest of the hand out in every world with the heuristic on
every seat, once per candidate card (touching cards merged). It plays the candidate with the
best mean hand score difference; the heuristic's own choice stands unless another beats it
clearly. Losing candidates are dropped after a first stage. Bidding uses the heuristic's bid
unless ``search_bids=True`` (for ``search_v1``, searching bids by the hand's points made it weaker:
the play-outs undervalue its play; ``search`` searches them valued by the game instead,
agents/endgame_search.py).

Why this way: exact sampling never gets stuck, the same worlds for every candidate make the
comparison paired, and a per-decision random stream seeded by the agent's seed and the
observation makes every decision reproducible and independent of what happened before.

Worlds are engine games (:meth:`SpadesGame.from_view`, copied per play-out with
:meth:`SpadesGame.copy`); play-outs keep one :class:`RolloutView` per seat up to date
(:func:`rollout_views`, :func:`refresh_view`) instead of rebuilding views per card. The
``native`` backend does the same in C (``agents.native_search``); ``python`` is the reference.
Options, strength and timings: ``docs/agents.md``.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from typing import Optional, Sequence

import numpy as np

from spades_env.cards import SUIT_MASKS, cards_to_mask, mask_to_cards
from spades_env.game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, PHASE_BIDDING,
                             PHASE_BLIND_DECISION, PHASE_PLAY, PHASE_SIGNAL, SpadesGame)
from spades_env.observation import ObservationView, view_from_game
from spades_env.rules import Rules, make_rules
from spades_env.scoring import bag_priced_points, game_bag_cost, game_winner, score_hand

from .heuristic import choose_action as heuristic_action
from .heuristic import choose_bid as heuristic_bid
from .base import Agent, observation_view, register, whole_option
from .specs import MAX_THREADS
from .search_worlds import DealSampler, Knowledge, drop_losers, pick_candidate

__all__ = ["SearchAgent", "Knowledge", "DealSampler", "build_game", "copy_game", "RolloutView",
           "rollout_views", "refresh_view", "play_out", "hand_value", "rules_from_view", "touching_groups"]

BID_OBJECTIVES = ("points", "game")
"""What a searched bid is valued by: the hand's score difference, or the game's win probability from
the scores it leaves (in points of equal worth at 0-0, agents/game_value.py)."""

_ABOVE = tuple(SUIT_MASKS[c // 13] & ~((2 << c) - 1) for c in range(52))
_VIEW_FIELDS = tuple(ObservationView.__dataclass_fields__)


# ====================================================================== rules
def rules_from_view(view: ObservationView, rules=None) -> Rules:
    """The rule set to simulate: ``rules`` when given (a preset name, a path, a mapping or a
    Rules), else read from the observation: cutthroat without partnerships (``players`` from the
    observation), ``openspiel`` when the mercy score is -350, ``short`` for a short deck,
    ``standard`` otherwise; the deck's ranks and the signal's messages are the observation's
    (a short deck of ``tricks_per_hand`` ranks, ``signals`` messages)."""
    if rules is not None:
        return rules if isinstance(rules, Rules) else make_rules(rules)
    overrides = {"signals": view.signals}
    if view.players == 4 and view.tricks_per_hand < 13:
        overrides["deck_ranks"] = view.tricks_per_hand
    if not view.partnerships:
        if view.players != 4:
            return make_rules("cutthroat", players=view.players, **overrides)
        return make_rules("cutthroat", **overrides)
    if view.mercy_score == -350:
        return make_rules("openspiel", **overrides)
    return make_rules("short" if "deck_ranks" in overrides else "standard", **overrides)


# ====================================================================== building worlds
def build_game(view: ObservationView, rules: Rules, hands: Sequence[int]) -> SpadesGame:
    """A world to play out: :meth:`SpadesGame.from_view` (kept under this name for callers)."""
    return SpadesGame.from_view(view, rules, hands)


def copy_game(g: SpadesGame) -> SpadesGame:
    """A play-out's copy of a world: :meth:`SpadesGame.copy` (kept under this name for callers)."""
    return g.copy()


# ====================================================================== play-outs
class RolloutView:
    """A mutable stand-in for :class:`~spades_env.ObservationView` (same fields, same meaning)
    that a play-out keeps up to date for one seat instead of rebuilding a view per card."""

    __slots__ = _VIEW_FIELDS

    def __init__(self, **fields) -> None:
        for k, v in fields.items():
            setattr(self, k, v)

    @property
    def tricks_played(self) -> int:
        return sum(self.tricks_taken)

    def partner_bid(self) -> Optional[int]:
        return self.bids[2] if self.partnerships else None


def rollout_views(g: SpadesGame, played: list[list[int]], voids: list[set]) -> list[RolloutView]:
    """One RolloutView per seat for the play phase; ``played``/``voids`` are shared, updated in place."""
    r = g.rules
    n = g.n
    S = g.num_sides
    views = []
    for seat in range(n):
        rel = [(seat + k) % n for k in range(n)]
        own = g.side_of[seat]
        sides = [(own + j) % S for j in range(S)]
        views.append(RolloutView(
            players=n, partnerships=r.partnerships, hand=None, phase=PHASE_PLAY,
            dealer=(g.dealer - seat) % n, to_act=0,
            bids=[g.bids[s] if g.bids[s] >= 0 else None for s in rel], blind=[g.blind[s] for s in rel],
            passed=mask_to_cards(g.passed[seat]), received=mask_to_cards(g.received[seat]),
            tricks_taken=None, trick_leader=None, current_trick=None,
            played=[played[s] for s in rel], voids=[voids[s] for s in rel], spades_broken=False,
            scores=[g.scores[s] for s in sides], bags=[g.bags[s] for s in sides],
            may_bid_blind_nil=[g.side_may_bid_blind(s) for s in sides],
            target_score=r.target_score, mercy_score=r.mercy_score, tricks_per_hand=r.tricks_per_hand,
            signals=r.signals, messages=[None if g.messages[s] < 0 else g.messages[s] for s in rel] if r.signals else []))
    return views


def refresh_view(v: RolloutView, g: SpadesGame, seat: int) -> None:
    """Bring ``seat``'s play-out view up to date with ``g`` before it chooses a card."""
    n = g.n
    v.hand = mask_to_cards(g.hands[seat])
    taken = g.tricks_taken
    v.tricks_taken = [taken[(seat + k) % n] for k in range(n)]
    if g.trick_cards:
        lead = g.trick_leader
        v.trick_leader = (lead - seat) % n
        v.current_trick = [((lead + i - seat) % n, c) for i, c in enumerate(g.trick_cards)]
    else:
        v.trick_leader = 0
        v.current_trick = []
    v.spades_broken = g.spades_broken


def play_out(g: SpadesGame, played: Optional[list[list[int]]] = None, voids: Optional[list[set]] = None,
             tricks_left: int = 0) -> None:
    """Play ``g`` to the end of the hand with the heuristic on every seat, or until at most
    ``tricks_left`` tricks remain (where the endgame search's solver takes over). ``played``/``voids``
    (per seat: cards played this hand, suits shown void) must match ``g`` when given."""
    choose = heuristic_action
    while g.phase < PHASE_PLAY or g.phase == PHASE_SIGNAL:   # messages, bids, blind nil, passing: rare, slow path
        g.apply(choose(view_from_game(g, g.to_act), g.legal_mask()))
    if g.phase != PHASE_PLAY:
        return
    n = g.n
    if played is None:
        played = [mask_to_cards(m) for m in g.played]
    if voids is None:
        voids = [{x for x in range(4) if g.voids[s] >> x & 1} for s in range(n)]
    views = rollout_views(g, played, voids)
    stop = g.tricks_per_hand - tricks_left       # play while fewer tricks than this are done
    while g.phase == PHASE_PLAY and g.tricks_played < stop:
        seat = g.to_act
        legal = g.legal_mask()
        if legal & (legal - 1) == 0:
            card = legal.bit_length() - 1
        else:
            v = views[seat]
            refresh_view(v, g, seat)
            card = choose(v, legal)
        if g.trick_cards and card // 13 != g.led_suit:
            voids[seat].add(g.led_suit)
        g.apply(card)
        played[seat].append(card)


def hand_value(g: SpadesGame, seat: int = 0, bag_cost: float = 0) -> float:
    """A finished hand's score difference for ``seat``: its side's score change minus the other
    side's (cutthroat: minus the mean of the other players'); ``bag_cost``: each side's carried
    bags priced at that many points (:func:`spades_env.scoring.bag_priced_points`)."""
    return results_value(g.rules, g.last_results, g.side_of[seat], bag_cost)


def results_value(rules: Rules, results, own: int, bag_cost: float = 0) -> float:
    """:func:`hand_value` from a hand's scored results (one per side) for side ``own``."""
    points = [bag_priced_points(rules, res, bag_cost) for res in results]
    others = [p for side, p in enumerate(points) if side != own]
    return points[own] - sum(others) / len(others)


# ====================================================================== move pruning
def touching_groups(legal_cards: Sequence[int], hand: int, gone: int) -> list[list[int]]:
    """Legal cards grouped into classes that win the same tricks: cards of one suit with no card
    between them that is still in play (every card between is ours or in ``gone``: played to an
    earlier trick; a card of the trick in progress is still in play). Groups are listed by their
    lowest card, cards ascending."""
    groups: list[list[int]] = []
    out_of_play = hand | gone
    for c in sorted(legal_cards):
        if groups:
            last = groups[-1][-1]
            if last // 13 == c // 13 and c < 52:
                between = ((1 << c) - 1) & ~((2 << last) - 1)
                if between & ~out_of_play == 0:
                    groups[-1].append(c)
                    continue
        groups.append([c])
    return groups


# ====================================================================== the agent
class SearchAgent(Agent):
    """Perfect-information Monte Carlo over sampled deals with heuristic play-outs (module doc).

    Backend: ``backend`` ``"native"`` (the default where the C library builds: worlds drawn
    and played out in C, :mod:`agents.native_search`) or ``"python"`` (this module, the
    reference); ``threads`` for the native play-outs.
    Budget: ``budget`` (``"default"`` or ``"strong"``, see ``BUDGETS``) sets ``worlds`` (deals
    sampled per card-play decision: 1,000 native / 200 python by default) and ``max_steps``
    (cards simulated per decision: none native / 20,000 python: fewer worlds when many
    candidates meet long play-outs early in the hand; None: no cap); given explicitly they
    win. ``bid_worlds`` (per bidding or blind-nil
    decision, default 64), ``min_worlds`` (at least this many whatever the caps, default 8),
    ``max_time`` (seconds per decision; None, the default: no clock, decisions do not depend on
    the machine). ``stage`` (default 0.25): after this share of the worlds, candidates
    significantly worse than the best so far (by ``drop_z`` standard errors, default 2.5) are
    dropped, the heuristic's choice never.
    Choosing: ``min_gain`` (points per hand another candidate must beat the heuristic's choice
    by, default 0.5) and ``min_z`` (standard errors, default 0); ``bid_min_gain`` (5.0) and
    ``bid_min_z`` (2.0) for bids. ``prune`` (touching cards, default True).
    Worlds: ``infer_bids`` (weight worlds by the bids, default True), ``bid_sharpness`` (1.0),
    ``nil_mismatch`` (0.05), ``oversample`` (draws per world kept when inferring, default 3).
    Bidding: ``search_bids`` (default False: the heuristic bids; see the module doc),
    ``bid_down``/``bid_up`` (bids below/above the heuristic's to try, 0 and 1), ``bid_nil``
    (try nil, default True), ``bid_objective`` (``"points"``, the default: each world's hand
    score difference; ``"game"``: the probability of winning the game from the scores the hand
    leaves, carried bags priced, in points of equal worth at 0-0: agents/game_value.py; two
    partnerships only, elsewhere points). ``bag_cost`` (whole points, default 0; ``"game"``: the
    penalty shared by the bags that bring it, 10 in the standard rules, rounded) prices the bags
    each side carries into later hands in every hand value the search computes, card play and
    points-valued bids alike (the rewards' ``bag_cost``: an overtrick nets +1 - 10), so the search
    sheds tricks it does not need; 0 values a hand by its points as the game scores them.
    Guide: ``guide`` (None, the default; a shipped model's name: ``"neural"`` for the shipped
    model, ``"neural_v7"`` for one version whatever ``neural`` later means; or the path of a
    model or checkpoint) puts a policy network in the heuristic's place: its bids and blind-nil
    decisions are played (unless ``search_bids``), and its favourite card is the base that the
    search keeps unless another candidate beats it; ``guide_weight`` (points per nat, default 0)
    adds that many times the log-probability the guide gives each candidate's class to its
    value before the comparison (a prior: at 0 the guide only picks the base and the bids);
    ``guide_bids`` (default True: the guide bids; False: the heuristic) and ``guide_base``
    (default True: the guide's card is the base; False: the heuristic's) split those roles.
    ``rules`` (None: from the observation, see :func:`rules_from_view`), ``seed``."""

    name = "search_v1"

    # The card-play budget by backend and ``budget`` name: (worlds, max_steps). The native
    # backend is ~100x faster per world, so its default searches 5x the worlds with no step cap
    # in ~6 ms per decision; "strong" spends about the Python default's time (~100 ms).
    BUDGETS = {("python", "default"): (200, 20_000), ("python", "strong"): (1_000, None),
               ("native", "default"): (1_000, None), ("native", "strong"): (20_000, None)}

    def __init__(self, seed: Optional[int] = None, worlds: Optional[int] = None, bid_worlds: int = 64,
                 max_steps: Optional[int] | str = "auto", min_worlds: int = 8, max_time: Optional[float] = None,
                 stage: float = 0.25, drop_z: float = 2.5, rules=None,
                 infer_bids: bool = True, bid_sharpness: float = 1.0, nil_mismatch: float = 0.05,
                 oversample: int = 3, prune: bool = True, min_gain: float = 0.5, min_z: float = 0.0,
                 search_bids: bool = False, bid_min_gain: float = 5.0, bid_min_z: float = 2.0,
                 bid_down: int = 0, bid_up: int = 1, bid_nil: bool = True, backend: Optional[str] = None,
                 threads: int = 1, budget: str = "default", guide: Optional[str] = None,
                 guide_weight: float = 0.0, guide_bids: bool = True, guide_base: bool = True,
                 bid_objective: str = "points", bag_cost: int | str = 0) -> None:
        super().__init__(seed)
        from spades_env.native import unavailable_reason
        if backend is None:
            backend = "native" if unavailable_reason() is None else "python"
        if backend not in ("native", "python"):
            raise ValueError(f"search: backend={backend!r}: expected 'native' or 'python'")
        if backend == "native" and unavailable_reason() is not None:
            raise ValueError(f"search: backend='native' is not available here ({unavailable_reason()}); use "
                             "backend='python'")
        self.backend = backend
        self.threads = max(1, whole_option("search", "threads", threads, least=0, most=MAX_THREADS))
        if (backend, budget) not in self.BUDGETS:
            raise ValueError(f"search: budget={budget!r}: expected 'default' or 'strong'")
        self.budget = budget
        budget_worlds, budget_steps = self.BUDGETS[(backend, budget)]
        worlds = budget_worlds if worlds is None else worlds
        max_steps = budget_steps if max_steps == "auto" else max_steps
        self.worlds = whole_option("search", "worlds", worlds)
        self.bid_worlds = whole_option("search", "bid_worlds", bid_worlds)
        self.max_steps = None if max_steps is None else whole_option("search", "max_steps", max_steps)
        self.min_worlds = max(1, whole_option("search", "min_worlds", min_worlds, least=0))
        self.max_time = None if max_time is None else float(max_time)
        self.stage = float(stage)
        self.drop_z = float(drop_z)
        self.rules_option = rules
        self._rules_cache: dict = {}
        self.infer_bids = bool(infer_bids)
        self.bid_sharpness = float(bid_sharpness)
        self.nil_mismatch = float(nil_mismatch)
        self.oversample = max(1, whole_option("search", "oversample", oversample, least=0))
        self.prune = bool(prune)
        self.min_gain = float(min_gain)
        self.min_z = float(min_z)
        self.search_bids = bool(search_bids)
        self.bid_min_gain = float(bid_min_gain)
        self.bid_min_z = float(bid_min_z)
        self.bid_down, self.bid_up, self.bid_nil = int(bid_down), int(bid_up), bool(bid_nil)
        if bid_objective not in BID_OBJECTIVES:
            raise ValueError(f"search: bid_objective={bid_objective!r}: expected one of {', '.join(BID_OBJECTIVES)}")
        self.bid_objective = bid_objective
        self.bag_cost = bag_cost if bag_cost == "game" else whole_option("search", "bag_cost", bag_cost, least=0,
                                                                           most=1000)
        self._game_values: dict = {}       # rules -> GameValue, built at the first searched bid
        self.guide = None if guide is None else str(guide)
        self.guide_weight = float(guide_weight)
        self.guide_bids, self.guide_base = bool(guide_bids), bool(guide_base)
        if not math.isfinite(self.guide_weight) or self.guide_weight < 0:
            raise ValueError(f"search: guide_weight={guide_weight!r}: expected a finite number >= 0 (points per nat)")
        self._guide_agent = None
        if self.guide is not None:
            from .neural import NeuralAgent, shipped_models      # torch only when a guide is asked for
            # a shipped model's name (neural_v7; "neural" is the manifest's alias) means the same file on
            # every machine; anything else is a model or checkpoint file
            self._guide_agent = (NeuralAgent(model=self.guide) if self.guide in shipped_models()
                                 else NeuralAgent(checkpoint=self.guide))
        self._guide_log_probs: Optional[np.ndarray] = None   # the guide's, at the decision being made
        self.last_info: dict = {}    # what the last search found (for tests and curiosity)
        self._decision_rng = random.Random(seed)

    def __repr__(self) -> str:
        return (f"SearchAgent(seed={self.seed!r}, backend={self.backend!r}, worlds={self.worlds}, "
                f"max_steps={self.max_steps}, "
                f"bid_worlds={self.bid_worlds}, search_bids={self.search_bids}, bid_objective={self.bid_objective!r}, "
                f"max_time={self.max_time!r}, " + (f"bag_cost={self.bag_cost!r}, " if self.bag_cost else "") +
                f"rules={self.rules_option!r}" + (f", guide={self.guide!r}, guide_weight={self.guide_weight:g}"
                                                   if self.guide is not None else "") + ")")

    def bag_cost_for(self, rules: Rules) -> int:
        """The whole points a carried bag costs in this search's hand values under ``rules``."""
        if self.bag_cost == "game":
            return round(game_bag_cost(rules))
        return self.bag_cost

    def _guide_needed(self, view, obs: dict) -> bool:
        """Whether the guide is asked at this decision: only where its network reads this table's
        observation (a network of the standard deck cannot read a short deck's or a signal's: the
        heuristic then plays its roles), and in the card play only where its card or its prior
        is used (``guide_base`` or ``guide_weight``), so that a guide of the bids costs nothing there."""
        guide = self._guide_agent
        if len(obs["observation"]) != guide.obs_size or len(obs["action_mask"]) != NUM_ACTIONS + guide.signals:
            return False
        return view.phase != PHASE_PLAY or self.guide_base or self.guide_weight > 0

    # ------------------------------------------------------------------ entry point
    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
        if not legal:
            raise ValueError("SearchAgent.act: the action mask is empty (is it this agent's turn?)")
        self.last_info = {}
        if len(legal) == 1:
            return legal[0]
        view = observation_view(obs)
        self._decision_rng = self._rng_for(obs)
        self._guide_log_probs = None
        guided = None
        if self._guide_agent is not None and self._guide_needed(view, obs):
            log_probs = self._guide_agent.log_probabilities(obs)
            guided = int(np.argmax(log_probs))
            if view.phase != PHASE_PLAY and not self.search_bids and self.guide_bids:
                self.last_info = {"fallback": "the guide's action for this phase"}
                return guided
            self._guide_log_probs = log_probs
        if guided is not None and (self.guide_base if view.phase == PHASE_PLAY else self.guide_bids):
            fallback = guided
        elif self.backend == "native":
            from .native_heuristic import choose_actions
            fallback = int(choose_actions(obs["observation"], obs["action_mask"])[0])
        else:
            fallback = heuristic_action(view, legal)
        try:
            rules = self._rules(view)
        except Exception as exc:   # rules that do not fit the observation: play the heuristic
            self.last_info = {"fallback": f"rules: {exc}"}
            return fallback
        phase = view.phase
        if phase == PHASE_PLAY:
            groups = self._play_candidates(view, legal, fallback)
            if self.backend == "native":
                from .native_search import search_card
                return search_card(self, view, rules, fallback, groups)
            return self._search(view, rules, legal, fallback, groups, self.worlds, self.min_gain, self.min_z)
        if phase == PHASE_BIDDING and self.search_bids:
            return self._search(view, rules, legal, fallback, self._bid_candidates(legal, fallback),
                                self.bid_worlds, self.bid_min_gain, self.bid_min_z)
        if phase == PHASE_BLIND_DECISION and self.search_bids:
            return self._search(view, rules, legal, fallback, [[BLIND_NIL_ACTION], [LOOK_ACTION]],
                                self.bid_worlds, self.bid_min_gain, self.bid_min_z)
        self.last_info = {"fallback": "heuristic for this phase"}
        return fallback

    def _rng_for(self, obs: dict) -> random.Random:
        """The random stream of one decision: seeded by the agent's seed and the observation
        itself (a stable hash), so a decision depends on nothing else. Two agents with the same
        seed decide alike on the same observation whatever came before, and variants of the
        agent (other bidding options, say) meet the same worlds wherever they see the same
        observations, which makes comparisons between them paired."""
        digest = hashlib.blake2b(np.ascontiguousarray(obs["observation"], dtype=np.float32).tobytes(),
                                 digest_size=16, key=repr(self.seed).encode()[:64]).digest()
        return random.Random(int.from_bytes(digest, "little"))

    def _rules(self, view: ObservationView) -> Rules:
        key = (view.players, view.partnerships, view.mercy_score, view.tricks_per_hand, view.signals)
        rules = self._rules_cache.get(key)
        if rules is None:
            rules = self._rules_cache[key] = rules_from_view(view, self.rules_option)
        if (rules.players != view.players or rules.partnerships != view.partnerships
                or rules.tricks_per_hand != view.tricks_per_hand or rules.signals != view.signals):
            raise ValueError(f"rules {rules.name!r} do not fit a {view.players}-player observation "
                             f"(partnerships {view.partnerships}, {view.tricks_per_hand} tricks a hand, "
                             f"{view.signals} messages)")
        return rules

    # ------------------------------------------------------------------ candidates
    def _play_candidates(self, view: ObservationView, legal: list[int], fallback: int) -> list[list[int]]:
        """Groups of equivalent cards; the group's first card is the one evaluated and played
        (the heuristic's choice when it is in the group)."""
        if not self.prune:
            return [[c] for c in legal]
        k = Knowledge(view)
        # Cards of the trick in progress still compete with ours: they do not make cards touch.
        gone = k.played_all & ~cards_to_mask(c for _, c in view.current_trick)
        groups = touching_groups(legal, k.hand, gone)
        out = []
        for grp in groups:
            if fallback in grp:
                grp = [fallback] + [c for c in grp if c != fallback]
            out.append(grp)
        return out

    def _base_from(self) -> str:
        return "guide" if self._guide_agent is not None and self.guide_base else "heuristic"

    def _bonus(self, groups: list[list[int]], kept: list[int]) -> Optional[list[float]]:
        """The guide's prior for each kept candidate (``guide_weight`` times the log of the
        probability of its class, floored at -20 nats), or None without a weighted guide."""
        if self._guide_log_probs is None or self.guide_weight == 0.0:
            return None
        of_class = {grp[0]: max(-20.0, float(np.logaddexp.reduce(self._guide_log_probs[grp]))) for grp in groups}
        return [self.guide_weight * of_class[c] for c in kept]

    def _bid_candidates(self, legal: list[int], fallback: int) -> list[list[int]]:
        """The heuristic's bid, ``bid_down`` below and ``bid_up`` above it, and nil (``bid_nil``);
        from a heuristic nil, bids 1..1 + bid_up."""
        h = fallback - BID_ACTION_BASE
        if h == 0:
            wanted = {0} | set(range(1, 2 + self.bid_up))
        else:
            wanted = set(range(h - self.bid_down, h + self.bid_up + 1)) | ({0} if self.bid_nil else set())
        return [[a] for a in legal if BID_ACTION_BASE <= a < BLIND_NIL_ACTION and a - BID_ACTION_BASE in wanted]

    # ------------------------------------------------------------------ search
    def _search(self, view: ObservationView, rules: Rules, legal: list[int], fallback: int,
                groups: list[list[int]], n_worlds: int, min_gain: float, min_z: float) -> int:
        if len(groups) <= 1:
            self.last_info = {"fallback": "one candidate"}
            return groups[0][0] if groups else fallback
        start = time.perf_counter()
        knowledge = Knowledge(view)
        try:
            sampler = knowledge.sampler()
        except ValueError as exc:
            self.last_info = {"fallback": str(exc)}
            return fallback
        candidates = [grp[0] for grp in groups]
        in_play = view.phase == PHASE_PLAY
        per_playout = sum(knowledge.sizes) if in_play else view.tricks_per_hand * view.players
        if self.max_steps is not None:
            # Draw no more worlds than the step cap lets us play out (expecting the candidates
            # to shrink to about three after the first stage).
            k = len(candidates)
            k_est = k if (k <= 3 or self.stage <= 0) else self.stage * k + (1 - self.stage) * 3
            affordable = math.ceil(self.max_steps / (per_playout * k_est))
            n_worlds = min(n_worlds, max(self.min_worlds, affordable))
        worlds = self._draw_worlds(view, rules, knowledge, sampler, n_worlds)
        template = SpadesGame.from_view(view, rules, worlds[0][0])
        mask = template.legal_mask()
        if any(not mask >> a & 1 for a in candidates):
            self.last_info = {"fallback": "the simulated rules disagree with the action mask"}
            return fallback
        led = template.led_suit if (in_play and template.trick_cards) else -1
        if in_play:
            base_played = [list(p) for p in view.played]
            base_voids = [set(v) for v in view.voids]
        game_value = None if in_play or self.bid_objective == "points" else self._game_value(rules)
        k = len(candidates)
        active = list(range(k))
        base = candidates.index(fallback) if fallback in candidates else None
        stage_end = max(self.min_worlds, int(self.stage * len(worlds))) if self.stage > 0 else None
        values: list[list[Optional[float]]] = []     # per world: each candidate's hand value
        weights: list[float] = []
        steps = 0
        dropped: list[int] = []
        for hands, weight in worlds:
            world = template.copy()
            world.hands = list(hands)
            row: list[Optional[float]] = [None] * k
            for i in active:
                action = candidates[i]
                g = world.copy()
                if in_play:
                    played = [list(p) for p in base_played]
                    voids = [set(v) for v in base_voids]
                    if led >= 0 and action // 13 != led:
                        voids[0].add(led)
                    g.apply(action)
                    played[0].append(action)
                    row[i] = self._play_out_value(g, played, voids)
                else:
                    g.apply(action)
                    row[i] = self._bid_world_value(g, game_value)
            values.append(row)
            weights.append(weight)
            steps += len(active) * per_playout
            if len(values) == stage_end and len(active) > 2:
                active, out = drop_losers(active, values, weights, base, self.drop_z)
                dropped += [candidates[i] for i in out]
            if len(values) >= self.min_worlds:
                if self.max_steps is not None and steps >= self.max_steps:
                    break
                if self.max_time is not None and time.perf_counter() - start > self.max_time:
                    break
        kept = [candidates[i] for i in active]
        choice, means, zs = pick_candidate(kept, [[row[i] for i in active] for row in values], weights, fallback,
                                  min_gain, min_z, self._bonus(groups, kept))
        candidates = kept
        self.last_info = {"candidates": candidates, "means": means, "z": zs, "worlds": len(values),
                          "drawn_worlds": len(worlds), "dropped": dropped, "steps": steps,
                          "choice": choice, "base": fallback, "base_from": self._base_from(),
                          "seconds": time.perf_counter() - start}
        return choice

    def _bid_world_value(self, g: SpadesGame, game_value) -> float:
        """One world's value of the bid just made in ``g`` to seat 0: the rest of the hand played
        by the heuristic on every seat and scored by the hand's points, or by ``game_value``
        (:class:`agents.game_value.GameValue`). The native backend plays the cards in C
        (``table_tricks``: the same heuristic, so the same tricks) and scores them here."""
        cost = self.bag_cost_for(g.rules)
        if self.backend != "native":
            play_out(g)
            return hand_value(g, 0, cost) if game_value is None else game_value.of_game(g, 0)
        from .native_search import table_tricks
        while g.phase < PHASE_PLAY or g.phase == PHASE_SIGNAL:    # the other bids, blind nil, passing
            g.apply(heuristic_action(view_from_game(g, g.to_act), g.legal_mask()))
        if g.phase != PHASE_PLAY:
            return hand_value(g, 0, cost) if game_value is None else game_value.of_game(g, 0)
        seat, legal = g.to_act, g.legal_mask()
        card = legal.bit_length() - 1 if legal & (legal - 1) == 0 else heuristic_action(view_from_game(g, seat), legal)
        tricks = table_tricks(g, seat, [card])[0]
        r = g.rules
        results = score_hand(r, g.bids, g.blind, tricks, g.scores, g.bags)
        own = g.side_of[0]
        if game_value is None:
            return results_value(r, results, own, cost)
        scores = [score + res.points for score, res in zip(g.scores, results)]
        over = game_winner(r, scores) is not None or (r.max_hands is not None and g.hand_number >= r.max_hands)
        return game_value.of_scores(scores, [res.bags_after for res in results], own, over)

    def _game_value(self, rules: Rules):
        """The bids' yardstick under ``bid_objective="game"`` (agents/game_value.py), one per rules;
        None (the hand's points) where the game is not two partnerships' (cutthroat, three players)."""
        if rules not in self._game_values:
            from .game_value import GameValue
            self._game_values[rules] = GameValue(rules) if rules.players == 4 and rules.partnerships else None
        return self._game_values[rules]

    def _play_out_value(self, g: SpadesGame, played: list[list[int]], voids: list[set]) -> float:
        """One world's value of the card just played in ``g``: the heuristic plays the hand out
        (``search``'s exact endgames override this, agents/endgame_search.py)."""
        play_out(g, played, voids)
        return hand_value(g, 0, self.bag_cost_for(g.rules))

    # ------------------------------------------------------------------ worlds
    def draw_worlds(self, view: ObservationView, rules: Rules, n_worlds: int,
                    rng: random.Random) -> list[tuple[list[int], float]]:
        """``n_worlds`` deals consistent with what the seat of ``view`` knows, drawn as this agent
        draws them before a card decision (uniformly, weighted by the bids unless
        ``infer_bids=False``): (hands in ``view``'s frame, seat 0 the seat; weight) pairs, a deal
        drawn k times once with weight k. For others that value cards over the seat's beliefs
        (``spades-label --teacher playout --worlds``)."""
        knowledge = Knowledge(view)
        self._decision_rng = rng
        return self._draw_worlds(view, rules, knowledge, knowledge.sampler(), n_worlds)

    def _draw_worlds(self, view: ObservationView, rules: Rules, knowledge: Knowledge, sampler: DealSampler,
                     n_worlds: int) -> list[tuple[list[int], float]]:
        """``n_worlds`` consistent deals as (hands, weight): plain draws, or with bid inference
        ``oversample`` times as many draws resampled systematically by their bid likelihood
        (a deal drawn k times is kept once with weight k)."""
        rng = self._decision_rng
        inferring = self.infer_bids and self._inference_seats(view, rules)
        if not inferring:
            return [(knowledge.hands_from(sampler.sample(rng)), 1.0) for _ in range(n_worlds)]
        pool = [knowledge.hands_from(sampler.sample(rng)) for _ in range(n_worlds * self.oversample)]
        weights = [self._bid_likelihood(view, rules, knowledge, hands, inferring) for hands in pool]
        total = sum(weights)
        if total <= 0.0:
            return [(h, 1.0) for h in pool[:n_worlds]]
        step = total / n_worlds
        u = rng.random() * step
        picked: dict[int, int] = {}
        cum = 0.0
        i = 0
        for j in range(n_worlds):
            target = u + j * step
            while cum + weights[i] <= target and i < len(pool) - 1:
                cum += weights[i]
                i += 1
            picked[i] = picked.get(i, 0) + 1
        return [(pool[i], float(k)) for i, k in picked.items()]

    def _inference_seats(self, view: ObservationView, rules: Rules) -> list[int]:
        """Seats whose bid the sampled hands should explain: other seats that bid while seeing
        their cards, whose hand at bidding time we can rebuild (no unknown passes)."""
        n = view.players
        passing = bool(view.passed or view.received)
        seats = []
        for s in range(1, n):
            if view.bids[s] is None or view.blind[s]:
                continue
            if view.partnerships and view.blind[(s + 2) % 4] and not (s == 2 and passing) and rules.blind_nil_pass:
                continue        # its partner bid blind nil: they swapped cards we do not know
            seats.append(s)
        return seats

    def _bid_likelihood(self, view: ObservationView, rules: Rules, knowledge: Knowledge,
                        hands: list[int], seats: list[int]) -> float:
        n = view.players
        order = [(view.dealer + 1 + i) % n for i in range(n)]
        weight = 1.0
        for s in seats:
            hand = hands[s] | knowledge.played[s]
            if s == 2 and (view.passed or view.received):
                hand = (hand & ~cards_to_mask(view.passed)) | cards_to_mask(view.received)
            before = set(order[:order.index(s)])
            rel = [(s + k) % n for k in range(n)]
            bids = [view.bids[t] if t in before else None for t in rel]
            blind = [view.blind[t] if t in before else False for t in rel]
            partner_bid = bids[2] if view.partnerships else None
            legal = self._approx_legal_bids(rules, partner_bid)
            v = RolloutView(players=n, partnerships=view.partnerships, hand=mask_to_cards(hand), phase=PHASE_BIDDING,
                            bids=bids, blind=blind, tricks_per_hand=view.tricks_per_hand)
            predicted = heuristic_bid(v, legal) - BID_ACTION_BASE
            actual = view.bids[s]
            if (predicted == 0) != (actual == 0):
                weight *= self.nil_mismatch
            elif actual:
                weight *= math.exp(-self.bid_sharpness * abs(predicted - actual))
        return weight

    @staticmethod
    def _approx_legal_bids(rules: Rules, partner_bid: Optional[int]) -> int:
        low, high, nil_ok = 1, rules.tricks_per_hand, rules.nil
        if partner_bid is not None:
            if rules.min_team_bid:
                low = max(low, rules.min_team_bid - partner_bid)
                nil_ok = nil_ok and partner_bid >= rules.min_team_bid
            if rules.max_team_bid is not None:
                high = min(high, rules.max_team_bid - partner_bid)
        mask = 0
        for b in range(low, max(low, high) + 1):
            mask |= 1 << (BID_ACTION_BASE + b)
        if nil_ok:
            mask |= 1 << BID_ACTION_BASE
        return mask


register("search_v1", SearchAgent)     # "search" is its successor, agents/endgame_search.py
