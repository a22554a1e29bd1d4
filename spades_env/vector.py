"""The batched engine: many Spades tables stepped at once as fixed-shape torch tensors.

``SpadesVectorEnv`` runs ``num_envs`` independent games with no Python loop over tables (the
pgx approach, in PyTorch so that the policy and the engine share one device). Every table always
has exactly one player to act; ``step(actions)`` takes one action per table and returns, for
each table, the observation and action mask of the player to act next (the same encoding as
the AEC env, value for value), the rewards of all four seats, and which tables finished. A
finished table starts a new game by itself; its final rewards and scores are still reported.

Hands, played cards and passed cards are int64 bitboards along the batch; all rules are applied
with ``torch.where`` so one code path serves every phase (blind-nil decision, bidding, passing,
play, scoring, the next hand, the next game). It runs unchanged on CPU and GPU, in eager mode or
under ``torch.compile`` (``compile=True``).

Supported: every partnership preset (standard, basic, tournament, openspiel, short, short_signals)
and their variants, with nil, blind nil and the card passing it brings, bags, the end of the game,
the short deck (``deck_ranks``: the deck's cards dealt, ``T`` tricks a hand, bids 0..T) and the
free signal (``signals``: the signal phase before the bids, actions 68..68+N-1). Not supported:
cutthroat and three players (refused with a clear error).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Optional

import torch

from .cards import NUM_CARDS, NUM_RANKS, NUM_SIDES, NUM_SUITS, SPADES, SUIT_MASKS, TWO_OF_CLUBS
from .game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, PHASE_NAMES, PHASE_ONE_HOT_WIDTH, PHASE_BIDDING,
                   PHASE_BLIND_DECISION, PHASE_PASSING, PHASE_PLAY, PHASE_SIGNAL, SCORE_LIMIT, SIGNAL_ACTION_BASE,
                   parse_deal, start_scores_problem)
from .observation import layout_for
from .rewards import RewardScheme
from .rules import Rules, RulesError, make_rules
from .vector_checks import VectorEnvError, check_deal_tensor, check_options, check_seed, check_snapshot
from .vector_device import (OBS_DTYPES, RECOMPILE_LIMIT, allow_recompiles, compile_options,  # noqa: F401 (re-export)
                            obs_dtype_of, usable_device)
from .scoring import POINTS_PER_BID_TRICK
from .vector_state import VecState  # noqa: F401 (spades_env.vector.VecState stays a name of this module)
from .vector_encoding import F32, F64, FIRST_SPADE, I64, NUM_BIDS, NUM_SEATS, VectorEncoding, _by_side, _suit

SEATS = range(NUM_SEATS)
BLIND_DECISION_ACTIONS = LOOK_ACTION + 1 - BLIND_NIL_ACTION      # blind nil, or look at the cards


def _next_seat(seat: torch.Tensor, steps: int = 1) -> torch.Tensor:
    """The seat ``steps`` to the left (play and bidding go to the left; the partner is 2 away)."""
    return (seat + steps) % NUM_SEATS


class SpadesVectorEnv(VectorEncoding):
    """``num_envs`` Spades tables stepped together.

    Args:
        num_envs: number of tables (the batch size).
        rules: a partnership rule set (preset name, YAML path, mapping or ``Rules``); keyword
            overrides of single rules go in ``rule_overrides``.
        reward, reward_scale, win_bonus, shaping, bag_cost: as in the AEC env (:mod:`spades_env.rewards`).
        episode: ``"game"`` or ``"hand"`` (default: the rules').
        device: where the tensors live (``"cpu"``, ``"cuda"``...); the same values on every device
            (a device this torch build cannot use is refused with a ``VectorEnvError``).
        seed: seeds the deals and the first dealers (reproducible on a given device).
        compile: run the step under ``torch.compile`` (faster for large batches after a warm-up;
            the same values as eager mode, on a GPU too).
        check_actions: verify every action against the mask (a clear error names the tables).
            False skips that (one host sync a step on a GPU); the eager CPU step still refuses ids
            outside 0..67, the C step always does, compiled or on a GPU they are not checked.
        obs_dtype: the dtype of every observation returned (``reset``, ``step``, ``observe``,
            ``observe_seat``, ``state_tensor``): ``torch.float32`` (the default: the AEC env's
            values), or ``torch.bfloat16`` / ``torch.float16`` (or their names), which are exactly
            the float32 observation converted with ``.to(obs_dtype)`` (round to nearest even): every
            0/1 cell is exact; only the fractional cells of the ``sides`` and ``game`` blocks
            (scores / target, bags / bag_limit, tricks / 13, ...) are rounded, to 8 significant bits
            for bfloat16 and 11 for float16. Half the memory traffic, and ready for a network that
            runs in that dtype.
        backend: ``"torch"`` (the default: the tensor code of this module, on any device, eager
            or compiled) or ``"native"``: on the CPU, the step runs in C, one table at a time with
            its observation and mask written in the same pass (:mod:`spades_env.native`, compiled
            on first use with the system C compiler), several times faster than the torch step;
            the same values (tested against it in every preset). It updates the state tensors in
            place (``env.state``'s fields are the same objects from step to step).
            With ``rules.signals`` = N the action space is ``num_actions`` = 68 + N wide (masks too).
        threads: with ``backend="native"``, how many threads share the tables (default: torch's
            thread count).
    """

    def __init__(self, num_envs: int, rules: Rules | str | dict | None = "standard",
                 reward: str = "team_score", episode: Optional[str] = None, device: str | torch.device = "cpu",
                 seed: Optional[int] = None, reward_scale: float = 0.01, win_bonus: float = 0.0,
                 shaping: float = 0.0, bag_cost: float | str = 0.0, compile: bool = False, check_actions: bool = True,
                 deal_pool_size: Optional[int] = None, obs_dtype: torch.dtype | str = torch.float32,
                 backend: str = "torch", threads: Optional[int] = None, **rule_overrides: Any) -> None:
        check_options(num_envs, compile, check_actions, deal_pool_size)
        check_seed(seed)
        self.rules = r = make_rules(rules, **rule_overrides)
        if not r.partnerships or r.players != 4:
            raise VectorEnvError(f"the batched engine runs four-player partnership games; rules {r.name!r} "
                                 f"have players={r.players}, partnerships={r.partnerships} (use the AEC env)")
        self.episode = r.episode if episode is None else episode
        if self.episode not in ("game", "hand"):
            raise RulesError(f"episode={self.episode!r}: expected 'game' or 'hand'")
        self.reward_scheme = RewardScheme(r, reward, reward_scale, win_bonus, shaping, bag_cost)
        self.num_envs = B = num_envs
        self.device = usable_device(device)
        self.check_actions = check_actions
        self.layout = layout_for(r)
        self.obs_size = self.layout.obs_size
        self.num_actions = r.num_actions
        dev = self.device
        self._generator = torch.Generator(device=dev)
        self._generator.manual_seed(int(seed) if seed is not None else torch.seed() % (2 ** 62))
        # the aranges the one-hot encodings compare against: seats, phases, bids, tricks 0..T, cards, messages
        self._ranges = {k: torch.arange(k, dtype=I64, device=dev)
                        for k in (NUM_SEATS, PHASE_ONE_HOT_WIDTH, NUM_BIDS, r.tricks_per_hand + 1, NUM_CARDS, r.signals)
                        if k}
        # the deck: every card of a full deck, or the deck_ranks highest of each suit (the short deck)
        self._deck = torch.tensor([c for c in range(NUM_CARDS) if c % NUM_RANKS >= r.lowest_rank], dtype=I64,
                                  device=dev)
        self._card_bits = torch.ones(NUM_CARDS, dtype=I64, device=dev) << self._ranges[NUM_CARDS]
        self._shifts32 = torch.arange(32, dtype=torch.int32, device=dev)
        self._suit_masks = torch.tensor(SUIT_MASKS, dtype=I64, device=dev)
        self._seat_range = torch.arange(NUM_SEATS, dtype=I64, device=dev)
        self._pass_slots = NUM_SIDES * 2 * max(r.blind_nil_pass, 1)     # per side: k cards there, k back
        self._deal_pool_size = deal_pool_size or 32 * B + 1024
        self._refill_every = 8
        self._refill_margin = self._refill_every * B + 1
        if self._deal_pool_size < 2 * self._refill_margin:
            raise VectorEnvError(f"deal_pool_size={deal_pool_size}: expected at least {2 * self._refill_margin} deals "
                                 f"(for {B} tables)")
        self._deal_pool = torch.empty(0, NUM_SEATS + 1, dtype=I64, device=dev)
        self._pool_ptr = torch.zeros((), dtype=I64, device=dev)
        self._steps = 0
        self._deal_queue = torch.zeros(B, 0, NUM_SEATS, dtype=I64, device=dev)
        self._start_scores = torch.zeros(B, NUM_SIDES, dtype=I64, device=dev)
        self._start_bags = torch.zeros(B, NUM_SIDES, dtype=I64, device=dev)
        self._fixed_start_dealer: Optional[torch.Tensor] = None
        self.obs_dtype = obs_dtype_of(obs_dtype)
        self._compiled = compile
        if compile:
            allow_recompiles(RECOMPILE_LIMIT)
        self._step_fn = (torch.compile(self._full_step_fused, dynamic=False, options=compile_options()) if compile
                         else self._full_step)
        self.state: Optional[VecState] = None
        if backend not in BACKENDS:
            raise VectorEnvError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise VectorEnvError(f"threads={threads!r}: expected a positive integer")
        self.backend = backend
        self._native = None
        if backend == "native":
            if compile:
                raise VectorEnvError("backend='native' steps in C: compile=True (torch.compile) does not apply to it")
            from .native import NativeStepper
            self._native = NativeStepper(self, threads)

    @property
    def compiled(self) -> bool:
        """Whether the tables are stepped by the ``torch.compile``-d engine (``compile=True``)."""
        return self._compiled

    @property
    def to_act(self) -> torch.Tensor:
        """(B,) int64: the seat (0-3) whose decision each table's current observation is, e.g. to
        credit it with that seat's rewards. A copy: it stays valid after the next ``step``."""
        if self.state is None:
            raise VectorEnvError("to_act before reset(): call reset() first")
        return self.state.to_act.clone()

    # ------------------------------------------------------------------ deals
    def draw_deals(self, count: int) -> torch.Tensor:
        """``count`` uniformly random deals and first dealers: (count, 5) int64, the four hands as
        bitboards and a seat. They come from the env's seeded stream (the one its tables are dealt
        from), so drawing here changes the deals the tables get next; ``reset(deals=...)`` takes
        the hands back (e.g. one deal copied onto several tables). More than ``DEAL_CHUNK`` deals
        are drawn that many at a time (a deal's shuffle needs ~1 KB while it is drawn)."""
        if count > DEAL_CHUNK:
            return torch.cat([self.draw_deals(min(DEAL_CHUNK, count - start)) for start in range(0, count, DEAL_CHUNK)])
        deck = self._deck
        keys = torch.rand(count, deck.shape[0], generator=self._generator, device=self.device)
        dealers = torch.randint(0, NUM_SEATS, (count, 1), generator=self._generator, device=self.device)
        if self._native is not None and deck.shape[0] == NUM_CARDS:        # the same deals, ranked in C
            return self._native.deal_from_keys(keys, dealers)
        order = keys.argsort(dim=1, stable=True)         # ties (rare) by card index, as the C ranking
        cards = order if deck.shape[0] == NUM_CARDS else deck[order]          # the short deck's k-th card
        hands = (torch.ones_like(cards) << cards).view(count, NUM_SEATS, self.rules.cards_per_hand).sum(dim=2)
        return torch.cat([hands, dealers], 1)

    def _refill_pool(self, force: bool = False) -> None:
        """Top the pool of seeded deals up (outside the step, so the step never waits on it).
        A step uses at most one deal per table, and the pool is checked every few steps."""
        P = self._deal_pool.shape[0]
        used = int(self._pool_ptr)
        if force or P - used < self._refill_margin:
            keep = self._deal_pool[used:] if not force else self._deal_pool[:0]
            fresh = self.draw_deals(self._deal_pool_size - keep.shape[0])
            self._deal_pool = torch.cat([keep, fresh])
            self._pool_ptr = torch.zeros((), dtype=I64, device=self.device)

    def _take_deals(self, need: torch.Tensor, deal_index: torch.Tensor, pool: torch.Tensor,
                    ptr: torch.Tensor, queue: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Deals (B, 4) and random first dealers (B,) for the tables in ``need``: the table's
        queue of given deals first, then the seeded pool. Returns them and the new pool pointer."""
        rank = torch.cumsum(need.to(I64), 0) - 1
        pooled = pool[(ptr + rank).clamp(0, pool.shape[0] - 1)]
        deals, dealers = pooled[:, :NUM_SEATS], pooled[:, NUM_SEATS]
        queue_len = queue.shape[1]
        if queue_len:
            from_queue = (deal_index < queue_len)[:, None]
            rows = torch.arange(need.shape[0], device=need.device)
            deals = torch.where(from_queue, queue[rows, deal_index.clamp(max=queue_len - 1)], deals)
        return deals, dealers, ptr + need.to(I64).sum()

    # ------------------------------------------------------------------ reset
    def reset(self, seed: Optional[int] = None, deals: Any = None, dealer: Any = None,
              scores: Any = None, bags: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Start a new game at every table; returns ``(observation, action_mask)``.

        ``deals``: per table a sequence of hands' deals in the AEC env's format (four lists of 13
        cards, ids or strings; of ``deck_ranks`` cards of the short deck), either one deal per table
        (B x 4 x 13) or several hands per table (B x H x 4 x 13); tables use them in order, then
        seeded deals. ``dealer``: the first dealer (an int or one per table). ``scores``/``bags``:
        starting values per partnership (a pair, or one pair per table).
        """
        B, dev, r = self.num_envs, self.device, self.rules
        # Validate every option before changing anything.
        check_seed(seed)
        queue = self._parse_deals(deals) if deals is not None else torch.zeros(B, 0, NUM_SEATS, dtype=I64, device=dev)
        start_scores, start_bags = self._start_values(scores, bags)
        first_dealer = None
        if dealer is not None:
            try:
                d = torch.as_tensor(dealer, device=dev)
            except (TypeError, ValueError, RuntimeError, OverflowError):
                raise VectorEnvError(f"dealer={dealer!r:.60}: expected a seat 0..3, or one per table ({B})") from None
            if d.dtype.is_floating_point or d.dtype == torch.bool or d.shape not in ((), (B,)):
                raise VectorEnvError(f"dealer={dealer!r}: expected a seat 0..3, or one per table ({B})")
            d = d.to(I64).expand(B).clone()
            if bool(((d < 0) | (d > 3)).any()):
                raise VectorEnvError(f"dealer={dealer!r}: expected seats 0..3")
            if r.fixed_dealer is not None and bool((d != r.fixed_dealer).any()):
                raise VectorEnvError(f"dealer: the {r.name} rules fix the dealer at seat {r.fixed_dealer}")
            first_dealer = d
        if seed is not None:
            self._generator.manual_seed(int(seed))
            self._deal_pool = self._deal_pool[:0]
        if self._deal_pool.shape[0] == 0:
            self._refill_pool(force=True)
        else:
            self._refill_pool()
        self._deal_queue, self._start_scores, self._start_bags = queue, start_scores, start_bags
        self._fixed_start_dealer = first_dealer
        everyone = torch.ones(B, dtype=torch.bool, device=dev)
        self.state, self._pool_ptr = self._start(self._empty_state(), everyone, everyone, self._deal_pool,
                                                 self._pool_ptr, self._deal_queue)
        obs, self._mask = self.observe()
        return obs, self._mask

    def set_start(self, scores: Any = None, bags: Any = None, tables: Optional[torch.Tensor] = None) -> None:
        """The scores and bags (a pair, or one pair per table) that the next game or hand episode
        of the given tables (a (B,) bool mask; all by default) starts from. Tables already playing
        keep their current values; a table that finishes restarts from these."""
        start_scores, start_bags = self._start_values(scores, bags)
        if tables is None:
            self._start_scores, self._start_bags = start_scores, start_bags
            return
        tables = torch.as_tensor(tables, device=self.device)
        if tables.dtype != torch.bool or tables.shape != (self.num_envs,):
            raise VectorEnvError(f"set_start: tables must be a bool mask of shape ({self.num_envs},)")
        self._start_scores = torch.where(tables[:, None], start_scores, self._start_scores)
        self._start_bags = torch.where(tables[:, None], start_bags, self._start_bags)

    def _start_values(self, scores: Any, bags: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Checked (B, 2) starting scores and bags."""
        r = self.rules
        start_scores = self._per_table_pair("scores", scores)
        start_bags = self._per_table_pair("bags", bags)
        outside = start_scores >= r.target_score
        if r.mercy_score is not None:
            outside |= start_scores <= r.mercy_score
        if bool(outside.any()):
            first = start_scores[outside.any(1)][0].tolist()
            raise VectorEnvError(f"scores={first} (a table's start): {start_scores_problem(r, first)}")
        if r.bags_from_score_digit:
            digit = torch.fmod(start_scores, 10)
            if bags is not None and not torch.equal(digit, start_bags):
                raise VectorEnvError("bags: under bags_from_score_digit the bags are the scores' last digits")
            start_bags = digit
        elif bool(((start_bags < 0) | (start_bags >= r.bag_limit)).any()):
            raise VectorEnvError(f"bags={bags!r}: expected 0..{r.bag_limit - 1} per partnership")
        return start_scores, start_bags

    def _per_table_pair(self, name: str, value: Any) -> torch.Tensor:
        B, dev = self.num_envs, self.device
        if value is None:
            return torch.zeros(B, NUM_SIDES, dtype=I64, device=dev)
        try:
            t = torch.as_tensor(value, device=dev)
        except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
            raise VectorEnvError(f"{name}={value!r:.80}: expected integers per partnership "
                                 f"({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
        if t.dtype.is_floating_point or t.dtype == torch.bool or t.dtype.is_complex:
            raise VectorEnvError(f"{name}: expected integers per partnership, got {t.dtype}")
        t = t.to(I64)
        if name == "scores" and bool((t.abs() > SCORE_LIMIT).any()):
            raise VectorEnvError(f"scores: each starting score must lie within -{SCORE_LIMIT:,}..{SCORE_LIMIT:,}, as "
                                 "in the AEC env")
        if t.shape == (NUM_SIDES,):
            t = t.expand(B, NUM_SIDES)
        if t.shape != (B, NUM_SIDES):
            raise VectorEnvError(f"{name}: expected a pair or one pair per table ({B}, {NUM_SIDES}), got shape "
                                 f"{tuple(t.shape)}")
        return t.clone()

    def _parse_deals(self, deals: Any) -> torch.Tensor:
        """(B, H, 4) bitboards from the AEC env's deal format (or bitboards already)."""
        B, dev = self.num_envs, self.device
        if isinstance(deals, torch.Tensor) and deals.dtype == I64:
            check_deal_tensor(deals, B, self.rules)
            t = deals.to(dev)
            return (t[:, None] if t.dim() == 2 else t).clone()
        per_hand = self.rules.cards_per_hand
        if isinstance(deals, torch.Tensor):
            raise VectorEnvError(f"deals: a tensor of {deals.dtype}: expected int64 bitboards ({B}, 4) or ({B}, H, 4), "
                                 f"or per table the AEC env's deals (four lists of {per_hand} cards)")
        if isinstance(deals, (str, bytes)) or not hasattr(deals, "__iter__"):
            raise VectorEnvError(f"deals={deals!r:.60}: expected one entry per table ({B}): a deal (four lists of "
                                 f"{per_hand} cards) or a list of deals")
        deals = list(deals)
        if len(deals) != B:
            raise VectorEnvError(f"deals: expected one entry per table ({B}), got {len(deals)}")
        per_table = []
        for b, entry in enumerate(deals):
            hands_seq = entry if _is_hand_sequence(entry) else [entry]
            try:
                per_table.append([parse_deal(d, self.rules) for d in hands_seq])
            except ValueError as exc:
                raise VectorEnvError(f"deals: table {b}: {exc}") from None
        depth = max(len(p) for p in per_table)
        if any(len(p) != depth for p in per_table):
            raise VectorEnvError("deals: every table needs the same number of hands")
        return torch.tensor(per_table, dtype=I64, device=dev)

    def _empty_state(self) -> VecState:
        B, dev = self.num_envs, self.device
        z = lambda *shape: torch.zeros(*shape, dtype=I64, device=dev)  # noqa: E731
        Q, S, P = self._pass_slots, NUM_SEATS, NUM_SIDES
        return VecState(hands=z(B, S), deal=z(B, S), phase=z(B), to_act=z(B), dealer=z(B), bids=z(B, S) - 1,
                        blind=z(B, S), looked=z(B, S), passed=z(B, S), received=z(B, S), pass_from=z(B, Q),
                        pass_to=z(B, Q), pass_len=z(B), pass_pos=z(B), trick=z(B, S) - 1, trick_len=z(B),
                        leader=z(B), led_suit=z(B), win_card=z(B), win_seat=z(B), tricks_taken=z(B, S),
                        tricks_played=z(B), played=z(B, S), voids=z(B, S), broken=z(B), scores=z(B, P),
                        bags=z(B, P), hand_number=z(B), deal_index=z(B),
                        potential=torch.zeros(B, P, dtype=F64, device=dev), messages=z(B, S) - 1)

    def _start(self, s: VecState, new_hand: torch.Tensor, new_game: torch.Tensor, pool: torch.Tensor,
               ptr: torch.Tensor, queue: torch.Tensor) -> tuple[VecState, torch.Tensor]:
        """Deal a new hand at the tables in ``new_hand``; those in ``new_game`` (a subset) first
        start a new game (starting scores, bags and dealer). Returns the state and pool pointer."""
        r = self.rules
        deals, pool_dealers, ptr = self._take_deals(new_hand, s.deal_index, pool, ptr, queue)
        if r.fixed_dealer is not None:
            first_dealer = torch.full_like(s.dealer, r.fixed_dealer)
        elif self._fixed_start_dealer is not None:
            first_dealer = self._fixed_start_dealer
        else:
            first_dealer = pool_dealers
        g, g2 = new_game, new_game[:, None]
        s = s.replace(scores=torch.where(g2, self._start_scores, s.scores),
                      bags=torch.where(g2, self._start_bags, s.bags),
                      hand_number=torch.where(g, torch.zeros_like(s.hand_number), s.hand_number),
                      dealer=torch.where(g, first_dealer, s.dealer))
        w, w2 = new_hand, new_hand[:, None]
        zeros4 = torch.zeros_like(s.bids)
        looked = 1 - self._seat_from_side(self._side_may_blind(s.scores))
        leader0 = _next_seat(s.dealer)
        s = s.replace(
            hands=torch.where(w2, deals, s.hands), deal=torch.where(w2, deals, s.deal),
            bids=torch.where(w2, zeros4 - 1, s.bids), blind=torch.where(w2, zeros4, s.blind),
            looked=torch.where(w2, looked, s.looked), passed=torch.where(w2, zeros4, s.passed),
            received=torch.where(w2, zeros4, s.received),
            pass_len=torch.where(w, torch.zeros_like(s.pass_len), s.pass_len),
            pass_pos=torch.where(w, torch.zeros_like(s.pass_pos), s.pass_pos),
            trick=torch.where(w2, zeros4 - 1, s.trick), trick_len=torch.where(w, torch.zeros_like(s.trick_len), s.trick_len),
            tricks_taken=torch.where(w2, zeros4, s.tricks_taken),
            tricks_played=torch.where(w, torch.zeros_like(s.tricks_played), s.tricks_played),
            played=torch.where(w2, zeros4, s.played), voids=torch.where(w2, zeros4, s.voids),
            broken=torch.where(w, torch.zeros_like(s.broken), s.broken),
            hand_number=s.hand_number + w.to(I64), deal_index=s.deal_index + w.to(I64),
            to_act=torch.where(w, leader0, s.to_act), leader=torch.where(w, leader0, s.leader),
            potential=torch.where(w2, torch.zeros_like(s.potential), s.potential),
            phase=torch.where(w, torch.full_like(s.phase, PHASE_SIGNAL if r.signals else PHASE_BIDDING), s.phase))
        if r.signals:           # the messages first (the first bidder's turn begins when they are sent)
            return s.replace(messages=torch.where(w2, zeros4 - 1, s.messages)), ptr
        return self._begin_bidding_turn(s, w), ptr

    # ------------------------------------------------------------------ rule helpers
    def _side_may_blind(self, scores: torch.Tensor) -> torch.Tensor:
        """(B, 2) 1 where the side may bid blind nil (trails by at least the deficit)."""
        r = self.rules
        if not r.blind_nil:
            return torch.zeros_like(scores)
        deficit = scores.flip(1) - scores
        return (deficit >= r.blind_nil_min_deficit).to(I64)

    def _legal_bids(self, s: VecState, seat: torch.Tensor) -> torch.Tensor:
        """(B, 14) 1 for the bids (0 = nil .. 13; at most T) ``seat`` may make (:meth:`_legal_bid_bits` unpacked)."""
        return (self._legal_bid_bits(s, seat)[:, None] >> self._ranges[NUM_BIDS]) & 1

    def _begin_bidding_turn(self, s: VecState, where: torch.Tensor) -> VecState:
        """At ``to_act``'s bidding turn: offer blind nil, or show its cards (tables in ``where``)."""
        seat = s.to_act
        looked_now = s.looked.gather(1, seat[:, None])[:, 0]
        side_may = self._side_may_blind(s.scores).gather(1, (seat & 1)[:, None])[:, 0]
        nil_legal = self._legal_bid_bits(s, seat) & 1
        offer = where & (looked_now == 0) & (side_may == 1) & (nil_legal == 1)
        show = where & (looked_now == 0) & ~offer
        seat_oh = self._seat_range[None, :] == seat[:, None]
        looked = torch.where(show[:, None] & seat_oh, torch.ones_like(s.looked), s.looked)
        phase = torch.where(offer, torch.full_like(s.phase, PHASE_BLIND_DECISION),
                            torch.where(where, torch.full_like(s.phase, PHASE_BIDDING), s.phase))
        return s.replace(looked=looked, phase=phase)

    # ------------------------------------------------------------------ legal actions
    def legal_mask(self, s: Optional[VecState] = None) -> torch.Tensor:
        """(B, num_actions) bool: the legal actions of the player to act at every table (68, then
        one per message of the free signal)."""
        s = self.state if s is None else s
        cards = (self._legal_cards(s)[:, None] & self._card_bits) != 0              # (B, 52)
        bids = (self._legal_bids(s, s.to_act) == 1) & (s.phase == PHASE_BIDDING)[:, None]
        blind = (s.phase == PHASE_BLIND_DECISION)[:, None].expand(s.phase.shape[0], BLIND_DECISION_ACTIONS)
        if not self.rules.signals:
            return torch.cat([cards, bids, blind], 1)
        messages = (s.phase == PHASE_SIGNAL)[:, None].expand(s.phase.shape[0], self.rules.signals)
        return torch.cat([cards, bids, blind, messages], 1)

    def _legal_cards(self, s: VecState) -> torch.Tensor:
        """(B,) bitboard of the cards the player to act may play or pass (0 in other phases)."""
        r = self.rules
        hand = s.hands.gather(1, s.to_act[:, None])[:, 0]
        spades = self._suit_masks[SPADES]
        non_spades = hand & ~spades
        has_non_spades = non_spades != 0
        following = s.trick_len > 0
        first_trick = s.tricks_played == 0
        follow = hand & self._suit_masks[s.led_suit.clamp(0, NUM_SUITS - 1)]
        follow_legal = torch.where(follow != 0, follow, hand)
        if r.no_spades_first_trick:
            follow_legal = torch.where((follow == 0) & first_trick & has_non_spades, non_spades, follow_legal)
        restrict = torch.zeros_like(has_non_spades)
        if r.spades_lead == "broken":
            restrict = s.broken == 0
        elif r.spades_lead == "forced_only":
            restrict = torch.ones_like(has_non_spades)
        if r.no_spades_first_trick:
            restrict = restrict | first_trick
        lead_legal = torch.where(restrict & has_non_spades, non_spades, hand)
        if r.two_of_clubs_leads:
            lead_legal = torch.where(first_trick & ((hand & 1) != 0), torch.ones_like(hand), lead_legal)
        play = torch.where(following, follow_legal, lead_legal)
        cards = torch.where(s.phase == PHASE_PLAY, play, torch.zeros_like(hand))
        return torch.where(s.phase == PHASE_PASSING, hand, cards)

    def state_tensor(self, s: Optional[VecState] = None) -> torch.Tensor:
        """(B, state_size) float32 (or ``obs_dtype``): the AEC env's ``state()`` of every table (centralized critics):
        the public vector in the absolute frame (every seat's private blocks included), then every
        true hand."""
        s = self.state if s is None else s
        return self._cast(self._encode(s, torch.zeros_like(s.to_act), egocentric=False))

    def _cast(self, obs: torch.Tensor) -> torch.Tensor:
        """A float32 observation in ``obs_dtype``."""
        return obs if self.obs_dtype == F32 else obs.to(self.obs_dtype)

    # ------------------------------------------------------------------ snapshots
    _SNAPSHOT_TENSORS = ("_deal_pool", "_pool_ptr", "_deal_queue", "_start_scores", "_start_bags", "_mask")

    def state_dict(self) -> dict:
        """Everything needed to continue exactly where the tables are (the training checkpoints
        save it): the table states, the deal stream and the pending deals, on the CPU."""
        if self.state is None:
            raise VectorEnvError("state_dict() before reset(): call reset() first")
        cpu = lambda t: None if t is None else t.detach().to("cpu").clone()     # noqa: E731
        return {"format": "spades-vector-env", "num_envs": self.num_envs, "rules": self.rules.name,
                "state": {f.name: cpu(getattr(self.state, f.name)) for f in fields(VecState)},
                "generator": self._generator.get_state().clone(), "steps": self._steps,
                "fixed_start_dealer": cpu(self._fixed_start_dealer),
                **{name.lstrip("_"): cpu(getattr(self, name)) for name in self._SNAPSHOT_TENSORS}}

    def load_state_dict(self, snapshot: dict) -> None:
        """Continue from :meth:`state_dict` (same ``num_envs`` and rules)."""
        check_snapshot(self, snapshot)          # everything, before anything changes
        dev = self.device
        # copies: the native step works in place, and the snapshot must stay loadable again
        saved = snapshot["state"]        # (a snapshot from before the free signal has no messages: none sent)
        self.state = VecState(**{f.name: (saved[f.name] if f.name in saved else getattr(self._empty_state(), f.name))
                                 .to(dev, copy=True) for f in fields(VecState)})
        self._generator.set_state(snapshot["generator"])
        self._steps = int(snapshot["steps"])
        fixed = snapshot["fixed_start_dealer"]
        self._fixed_start_dealer = None if fixed is None else fixed.to(dev)
        for name in self._SNAPSHOT_TENSORS:
            setattr(self, name, snapshot[name.lstrip("_")].to(dev))

    # ------------------------------------------------------------------ step
    def _as_action_tensor(self, actions: Any) -> torch.Tensor:
        """``actions`` as int64 on the env's device, refused with a :class:`VectorEnvError` when they
        are not integers (a float or bool tensor would be truncated silently) or not a 1-D batch."""
        try:
            tensor = torch.as_tensor(actions, device=self.device)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise VectorEnvError(f"actions={actions!r:.80}: expected a tensor (or array or list) of {self.num_envs} "
                                 f"integer action ids ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
        if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
            raise VectorEnvError(f"actions of dtype {tensor.dtype}: expected integer action ids (int64), one per table")
        if tensor.dim() != 1:
            raise VectorEnvError(f"actions of shape {tuple(tensor.shape)}: expected one action per table, shape "
                                 f"({self.num_envs},)")
        return tensor.to(I64)

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """Apply one action per table. Returns ``(observation, mask, rewards (B, 4), done (B,), info)``.

        ``done`` marks tables whose episode ended at this step; they have already started a new
        one (the observation is its first decision). ``info["final_scores"]`` holds the scores
        at the end of the finished episode (and the current scores elsewhere); ``info["winner"]``
        the winning side (-1: none yet / tied).
        """
        if self.state is None:
            raise VectorEnvError("step() before reset(): call reset() first")
        if not (isinstance(actions, torch.Tensor) and actions.dtype == I64 and actions.dim() == 1
                and actions.device == self.device):                  # (the common case, without a copy)
            actions = self._as_action_tensor(actions)
        if actions.shape[0] != self.num_envs:
            raise VectorEnvError(f"actions: expected one per table ({self.num_envs}), got {actions.shape[0]}")
        num_actions = self.num_actions
        if self.check_actions:
            mask = self._mask
            ok = (actions >= 0) & (actions < num_actions)
            ok = ok & mask.gather(1, actions.clamp(0, num_actions - 1)[:, None])[:, 0]
            if not bool(ok.all()):
                bad = torch.nonzero(~ok)[:5, 0].tolist()
                raise VectorEnvError(f"illegal actions at tables {bad}: "
                                     + "; ".join(f"table {b}: action {int(actions[b])} in phase "
                                                 f"{PHASE_NAMES[int(self.state.phase[b])]}, legal "
                                                 f"{torch.nonzero(mask[b])[:, 0].tolist()}" for b in bad))
        elif self._native is None and not self._compiled and actions.device.type == "cpu":
            # unchecked, the torch step would still read an id that is no action as a card or a bid
            # (1000: a bid of 948); the C step refuses those itself. Only on the CPU, where reading
            # the answer costs nothing: compiled or on a GPU, check_actions=False means no host sync.
            outside = (actions < 0) | (actions >= num_actions)
            if bool(outside.any()):
                table = int(torch.nonzero(outside)[0, 0])
                raise VectorEnvError(f"action {int(actions[table])} at table {table}: not an action id "
                                     f"(0..{num_actions - 1}); no table was stepped")
        self._steps += 1
        if self._steps % self._refill_every == 0:
            self._refill_pool()
        if self._native is not None:
            self._pool_ptr, obs, mask, rewards, finished, final_scores, winner = self._native.step(actions)
            obs = self._cast(obs)
        else:
            (self.state, self._pool_ptr, obs, mask, rewards, finished, final_scores,
             winner) = self._step_fn(self.state, actions, self._deal_pool, self._pool_ptr, self._deal_queue)
        if mask.dtype != torch.bool:
            mask = mask.view(torch.bool)          # the fused step's 0/1 bytes, reinterpreted (no copy)
        self._mask = mask
        return obs, mask, rewards, finished, {"final_scores": final_scores, "winner": winner}

    def _needed(self, which: torch.Tensor) -> bool:
        """Whether work for the tables in ``which`` must run: in eager mode skip it when no
        table needs it (a cheap host check); compiled code always runs it (no data-dependent
        control flow, no host synchronization)."""
        return self._compiled or bool(which.any())

    def _full_step(self, s: VecState, a: torch.Tensor, pool: torch.Tensor, ptr: torch.Tensor,
                   queue: torch.Tensor):
        """One step of every table, the next hands and games included, and what the players to
        act see next: a pure function of tensors (what ``compile=True`` compiles)."""
        s, rewards, hand_done, episode_over, final_scores, winner = self._step_impl(s, a)
        if self._needed(hand_done):
            s, ptr = self._start(s, hand_done, episode_over, pool, ptr, queue)
        obs, mask = self.observe(s)
        return s, ptr, obs, mask, rewards, episode_over, final_scores, winner

    def _full_step_fused(self, s: VecState, a: torch.Tensor, pool: torch.Tensor, ptr: torch.Tensor,
                         queue: torch.Tensor):
        """``_full_step`` with the observation and mask built from packed bit words (what
        ``compile=True`` compiles): the same values, but the mask comes back as 0/1 uint8 bytes
        (``step`` views them as bool). Written for ``torch.compile``: in eager mode it is slower."""
        s, rewards, hand_done, episode_over, final_scores, winner = self._step_impl(s, a)
        s, ptr = self._start(s, hand_done, episode_over, pool, ptr, queue)
        obs = self._observation_fused(s, s.to_act)
        mask = self._legal_mask_fused(s)
        return s, ptr, obs, mask, rewards, episode_over, final_scores, winner

    def _step_impl(self, s: VecState, a: torch.Tensor):
        r = self.rules
        B, dev = self.num_envs, self.device
        phase = s.phase
        seat = s.to_act
        seat_oh = self._seat_range[None, :] == seat[:, None]           # (B, NUM_SEATS)
        is_play = phase == PHASE_PLAY
        is_bid = phase == PHASE_BIDDING
        is_blind = phase == PHASE_BLIND_DECISION
        is_pass = phase == PHASE_PASSING
        T = r.tricks_per_hand
        card = a.clamp(0, NUM_CARDS - 1)          # (the other phases' action ids are no card)
        bit = torch.ones_like(card) << card

        # -- play a card
        hands = torch.where(seat_oh & is_play[:, None], s.hands ^ bit[:, None], s.hands)
        played = torch.where(seat_oh & is_play[:, None], s.played | bit[:, None], s.played)
        suit = _suit(card)
        leading = s.trick_len == 0
        led = torch.where(leading, suit, s.led_suit)
        void_bit = torch.where(~leading & (suit != led), torch.ones_like(led) << led, torch.zeros_like(led))
        voids = torch.where(seat_oh & is_play[:, None], s.voids | void_bit[:, None], s.voids)
        beats = leading | ((suit == _suit(s.win_card)) & (card > s.win_card)) | ((suit == SPADES) & (s.win_card < FIRST_SPADE))
        win_card = torch.where(is_play & beats, card, s.win_card)
        win_seat = torch.where(is_play & beats, seat, s.win_seat)
        trick = torch.where(seat_oh & is_play[:, None], card[:, None].expand(B, NUM_SEATS), s.trick)
        trick_len = s.trick_len + is_play.to(I64)
        leader = torch.where(is_play & leading, seat, s.leader)
        broken = s.broken | (is_play & (suit == SPADES)).to(I64)
        trick_done = is_play & (trick_len == NUM_SEATS)
        winner_oh = self._seat_range[None, :] == win_seat[:, None]
        tricks_taken = s.tricks_taken + (winner_oh & trick_done[:, None]).to(I64)
        tricks_played = s.tricks_played + trick_done.to(I64)
        hand_done = trick_done & (tricks_played == T)
        next_in_play = torch.where(trick_done, win_seat, _next_seat(seat))
        s = s.replace(hands=hands, played=played, voids=voids, win_card=win_card, win_seat=win_seat,
                      led_suit=torch.where(is_play, led, s.led_suit),
                      trick=torch.where(trick_done[:, None], torch.full_like(trick, -1), trick),
                      trick_len=torch.where(trick_done, torch.zeros_like(trick_len), trick_len),
                      leader=torch.where(trick_done, win_seat, leader), broken=broken,
                      tricks_taken=tricks_taken, tricks_played=tricks_played)

        # -- passing a card
        pass_to = s.pass_to.gather(1, s.pass_pos.clamp(max=self._pass_slots - 1)[:, None])[:, 0]
        to_oh = self._seat_range[None, :] == pass_to[:, None]
        moving = is_pass[:, None]
        hands = torch.where(seat_oh & moving, s.hands ^ bit[:, None], s.hands)
        hands = torch.where(to_oh & moving, hands | bit[:, None], hands)
        passed = torch.where(seat_oh & moving, s.passed | bit[:, None], s.passed)
        received = torch.where(to_oh & moving, s.received | bit[:, None], s.received)
        pass_pos = s.pass_pos + is_pass.to(I64)
        passing_over = is_pass & (pass_pos >= s.pass_len)
        next_passer = s.pass_from.gather(1, pass_pos.clamp(max=self._pass_slots - 1)[:, None])[:, 0]
        s = s.replace(hands=hands, passed=passed, received=received, pass_pos=pass_pos)

        # -- bids and the blind-nil decision
        bid_value = torch.where(is_blind, torch.zeros_like(a), a - BID_ACTION_BASE)
        makes_bid = is_bid | (is_blind & (a == BLIND_NIL_ACTION))
        looks = is_blind & (a == LOOK_ACTION)
        bids = torch.where(seat_oh & makes_bid[:, None], bid_value[:, None].expand(B, NUM_SEATS), s.bids)
        blind = torch.where(seat_oh & (is_blind & (a == BLIND_NIL_ACTION))[:, None], torch.ones_like(s.blind), s.blind)
        looked = torch.where(seat_oh & looks[:, None], torch.ones_like(s.looked), s.looked)
        bidding_over = makes_bid & (seat == s.dealer)
        looked = torch.where(bidding_over[:, None], torch.ones_like(looked), looked)
        s = s.replace(bids=bids, blind=blind, looked=looked)
        if r.signals:           # -- a message: the dealer's is the last, then the first bidder's turn
            is_signal = phase == PHASE_SIGNAL
            messages = torch.where(seat_oh & is_signal[:, None], (a - SIGNAL_ACTION_BASE)[:, None].expand(B, NUM_SEATS),
                                   s.messages)
            signal_over = is_signal & (seat == s.dealer)
            s = s.replace(messages=messages)
        if self._needed(bidding_over):
            pass_from_q, pass_to_q, pass_len_q = self._pass_queue(s)
        else:
            pass_from_q = pass_to_q = s.pass_from
            pass_len_q = torch.zeros_like(s.pass_len)
        starts_passing = bidding_over & (pass_len_q > 0)
        s = s.replace(pass_from=torch.where(starts_passing[:, None], pass_from_q, s.pass_from),
                      pass_to=torch.where(starts_passing[:, None], pass_to_q, s.pass_to),
                      pass_len=torch.where(starts_passing, pass_len_q, s.pass_len),
                      pass_pos=torch.where(starts_passing, torch.zeros_like(s.pass_pos), s.pass_pos))
        play_starts = (bidding_over & (pass_len_q == 0)) | passing_over
        first_leader = _next_seat(s.dealer)
        if r.two_of_clubs_leads:
            first_leader = ((s.hands & (1 << TWO_OF_CLUBS)) != 0).to(I64).argmax(1)

        # -- who acts next, in which phase
        next_bidder = _next_seat(seat)
        to_act = torch.where(is_play, next_in_play, seat)
        to_act = torch.where(makes_bid & ~bidding_over, next_bidder, to_act)
        to_act = torch.where(starts_passing, pass_from_q[:, 0], to_act)
        to_act = torch.where(is_pass & ~passing_over, next_passer, to_act)
        to_act = torch.where(play_starts, first_leader, to_act)
        if r.signals:
            to_act = torch.where(is_signal, next_bidder, to_act)         # (the dealer's left: the first bidder)
        new_phase = torch.where(looks, torch.full_like(phase, PHASE_BIDDING), phase)
        new_phase = torch.where(starts_passing, torch.full_like(phase, PHASE_PASSING), new_phase)
        new_phase = torch.where(play_starts, torch.full_like(phase, PHASE_PLAY), new_phase)
        s = s.replace(to_act=to_act, phase=new_phase,
                      leader=torch.where(play_starts, first_leader, s.leader),
                      led_suit=torch.where(play_starts, torch.zeros_like(s.led_suit), s.led_suit))
        next_bidders = makes_bid & ~bidding_over
        if r.signals:
            next_bidders = next_bidders | signal_over
        if self._needed(next_bidders):
            s = self._begin_bidding_turn(s, next_bidders)

        # -- rewards: shaping after tricks, scores after the last trick
        scheme = self.reward_scheme
        rewards = torch.zeros(B, NUM_SEATS, dtype=F64, device=dev)   # float64: the AEC env's Python floats
        no_hand_done = not self._needed(hand_done)
        if no_hand_done and not (scheme.shaping > 0 and self._needed(trick_done)):
            never = torch.zeros_like(hand_done)
            return s, rewards, never, never, s.scores.clone(), torch.full_like(s.phase, -1)
        points, bags_after = self._score_hand(s)
        scores = torch.where(hand_done[:, None], s.scores + points, s.scores)
        bags_new = torch.where(hand_done[:, None], bags_after, s.bags)
        game_winner, game_over, truncated = self._game_end(scores, s.hand_number, hand_done)
        if scheme.reward != "win":
            side_points = points.to(F64)
            if scheme.bag_cost:
                side_points = side_points - scheme.bag_cost * (bags_after - s.bags).to(F64)
            side_reward = side_points * scheme.reward_scale
            rewards = rewards + torch.where(hand_done[:, None], self._per_seat(side_reward), 0.0)
        win_values = self._win_values(game_winner)
        if scheme.reward == "win":
            rewards = rewards + torch.where(game_over[:, None], self._seat_from_side(win_values), 0.0)
        elif scheme.win_bonus:
            rewards = rewards + torch.where(game_over[:, None], scheme.win_bonus * self._seat_from_side(win_values), 0.0)
        potential = s.potential
        if scheme.shaping > 0:
            new_potential = torch.where(hand_done[:, None], torch.zeros_like(potential), self._potential(s))
            delta = torch.where(trick_done[:, None], new_potential - potential, torch.zeros_like(potential))
            rewards = rewards + self._per_seat(delta * (scheme.shaping * scheme.reward_scale))
            potential = torch.where(trick_done[:, None], new_potential, potential)
        s = s.replace(scores=scores, bags=bags_new, potential=potential)

        # -- the end of a hand: the next hand, or the end of the episode
        episode_over = hand_done & (game_over | truncated | torch.full_like(hand_done, self.episode == "hand"))
        next_hand = hand_done & ~episode_over
        if r.fixed_dealer is None:
            s = s.replace(dealer=torch.where(next_hand, _next_seat(s.dealer), s.dealer))
        final_scores = s.scores.clone()
        winner = torch.where(episode_over, game_winner, torch.full_like(game_winner, -1))
        return s, rewards, hand_done, episode_over, final_scores, winner

    def _pass_queue(self, s: VecState) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The blind-nil passing order if the bidding ended now: (from, to, length).

        A side passes when exactly one partner bid blind nil: the partner passes k cards to the
        bidder, then the bidder k back. The side whose blind-nil bidder bid first passes first.
        """
        k = self.rules.blind_nil_pass
        B, dev = self.num_envs, self.device
        Q = self._pass_slots
        if k == 0 or not self.rules.blind_nil:
            z = torch.zeros(B, Q, dtype=I64, device=dev)
            return z, z, torch.zeros(B, dtype=I64, device=dev)
        blind = _by_side(s.blind)                                        # (B, 2 sides, 2 members)
        active = (blind.sum(2) == 1)                                     # exactly one blind-nil bidder
        sides = torch.arange(NUM_SIDES, device=dev)[None, :]
        bidder = torch.where(blind[:, :, 0] == 1, 0, 1) * NUM_SIDES + sides    # member 0 or 1 of each side
        partner = _next_seat(bidder, NUM_SIDES)
        order = (bidder - s.dealer[:, None] - 1) % NUM_SEATS             # bidding position
        first = torch.where(~active[:, 1] | (active[:, 0] & (order[:, 0] < order[:, 1])), 0, 1)
        second = 1 - first
        pick = lambda t, side: t.gather(1, side[:, None])[:, 0]          # noqa: E731
        def entries(side):
            b, p = pick(bidder, side), pick(partner, side)
            return (torch.stack([p] * k + [b] * k, 1), torch.stack([b] * k + [p] * k, 1))
        f1, t1 = entries(first)
        f2, t2 = entries(second)
        second_active = pick(active.to(I64), second)[:, None] == 1
        froms = torch.cat([f1, torch.where(second_active, f2, 0)], 1)
        tos = torch.cat([t1, torch.where(second_active, t2, 0)], 1)
        return froms, tos, 2 * k * active.to(I64).sum(1)

    def _score_hand(self, s: VecState) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 2) points and bags after, if the hand were scored now: :func:`spades_env.scoring.score_side`
        (the reference) on every table; engine.c ``score_hand`` is its C twin
        (tests/spades_env/test_scoring_twins.py)."""
        r = self.rules
        bids = _by_side(s.bids)
        taken = _by_side(s.tricks_taken)
        blind = _by_side(s.blind)
        is_nil = bids == 0
        contract = bids.clamp(min=0).sum(2)
        nil_value = torch.where(blind == 1, r.blind_nil_bonus, r.nil_bonus)
        nil_points = torch.where(is_nil, torch.where(taken == 0, nil_value, -nil_value), 0).sum(2)
        if r.nil_tricks_count_for_partner:
            counted = taken.sum(2)
            nil_bags = torch.zeros_like(counted)
        else:
            counted = torch.where(is_nil, 0, taken).sum(2)
            nil_bags = torch.where(is_nil, taken, 0).sum(2)
        made = counted >= contract
        contract_points = torch.where(made, POINTS_PER_BID_TRICK * contract, -POINTS_PER_BID_TRICK * contract)
        if not r.bags:
            return contract_points + nil_points, torch.zeros_like(contract)
        over = torch.where(made, counted - contract, 0)
        bags_taken = over + nil_bags
        if r.bags_from_score_digit:
            counter = torch.fmod(s.scores, 10) + bags_taken
            penalties = torch.where(counter > 0, counter // 10, 0)
            points = contract_points + over + nil_points - r.bag_penalty * penalties
            return points, torch.fmod(s.scores + points, 10)
        counter = s.bags + bags_taken
        # counter // bag_limit without an integer division: exact for small non-negative integers, as
        # the quotient's fraction (m + 0.5) / bag_limit stays far from a whole number even where the
        # device divides through the reciprocal (CUDA)
        penalties = ((counter.to(F64) + 0.5) / r.bag_limit).floor().to(I64)
        points = contract_points + over + nil_points - r.bag_penalty * penalties
        return points, counter - penalties * r.bag_limit

    def _game_end(self, scores: torch.Tensor, hand_number: torch.Tensor, hand_done: torch.Tensor):
        """(winning side or -1, game over, truncated) after a hand that ended with ``scores``:
        :func:`spades_env.scoring.game_winner` on every table."""
        r = self.rules
        reached = (scores >= r.target_score).any(1)
        if r.mercy_score is not None:
            reached = reached | (scores <= r.mercy_score).any(1)
        unique = scores[:, 0] != scores[:, 1]
        leader = torch.where(unique, scores.argmax(1), torch.full_like(hand_number, -1))
        game_over = hand_done & reached & unique
        truncated = torch.zeros_like(game_over)
        if r.max_hands is not None:
            truncated = hand_done & ~game_over & (hand_number >= r.max_hands)
        ends = game_over | truncated
        return torch.where(ends, leader, torch.full_like(leader, -1)), ends, truncated

    def _potential(self, s: VecState) -> torch.Tensor:
        """(B, 2) Phi per side, in points (see :mod:`spades_env.rewards`)."""
        r = self.rules
        bids = _by_side(s.bids)
        taken = _by_side(s.tricks_taken)
        blind = _by_side(s.blind)
        is_nil = bids == 0
        counted, contract = self._counted_and_contract(s)
        nil_value = torch.where(blind == 1, r.blind_nil_bonus, r.nil_bonus)
        nil_loss = torch.where(is_nil & (taken > 0), nil_value, 0).sum(2)
        return (POINTS_PER_BID_TRICK * torch.minimum(counted, contract) - nil_loss).to(F64)

    def _per_seat(self, side_values: torch.Tensor) -> torch.Tensor:
        """(B, 2) per side -> (B, 4) per seat, combined like the reward scheme."""
        if self.reward_scheme.reward != "team_score":
            side_values = torch.stack([side_values[:, 0] - side_values[:, 1],
                                       side_values[:, 1] - side_values[:, 0]], 1)
        return self._seat_from_side(side_values)

    @staticmethod
    def _seat_from_side(side_values: torch.Tensor) -> torch.Tensor:
        return side_values.repeat(1, NUM_SEATS // NUM_SIDES)      # seats 0, 1, 2, 3 -> sides 0, 1, 0, 1

    def _win_values(self, winner: torch.Tensor) -> torch.Tensor:
        """(B, 2): +1 for the winning side, -1 for the other, 0 without a winner."""
        sides = torch.arange(NUM_SIDES, device=self.device)[None, :]
        values = torch.where(sides == winner[:, None], 1.0, -1.0)
        return torch.where((winner >= 0)[:, None], values, 0.0).to(F64)


BACKENDS = ("torch", "native")
# Deals shuffled at once by draw_deals: bounds its scratch memory (~1 KB a deal) at huge batches,
# where the pool of deals holds 32 per table.
DEAL_CHUNK = 1 << 20


def _is_hand_sequence(entry: Any) -> bool:
    """True if ``entry`` is a list of deals (each four hands) rather than one deal."""
    try:
        first = entry[0]
        return not isinstance(first, (str, int)) and len(first) == NUM_SEATS and not isinstance(first[0], (str, int))
    except (TypeError, IndexError, KeyError):
        return False
