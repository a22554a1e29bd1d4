"""The neural networks of the neural agent and of training (PyTorch).

``PolicyNet`` maps an observation (the env's float vector) and the action mask to 68 masked
logits (68 + N under rules with ``signals: N``). A shared trunk feeds two heads: the *card head*
scores the 52 cards (playing and passing) and the *bidding head* the 16 other actions (bids 0-13
with 0 = nil, blind nil, look) and the N messages, which are chosen before any bid.
Only one head's actions are ever legal at a time, so the two policies learn independently on
top of shared features. ``ValueNet`` is the critic: the observation (local) or the observation
plus the full state (central, training only).

With ``card_features`` the policy first derives, from the observation alone, what a card player
counts in their head (:class:`CardFeatures`: for every card whether it is unseen, how many unseen
cards of its suit are above and below it, whether it is a master card, which card wins the trick
so far and which of one's cards would beat it, suit lengths and known voids), and the card head
scores each card from the trunk's features together with that card's own features, with weights
shared by all 52 cards.

With ``score_tilts`` (written by ``python -m train.bids.bid_tilt --lead-tilt/--trail-tilt``) the bids
depend on the score by a fixed rule on top of the network: where the side leads with at least
``S`` points (``lead``), or the other side does (``trail``), ``T * (b - 1)`` is added to the logit
of every bid ``b`` of 1 to 13 (docs/shipped_model.md).

With ``nil_defence_head`` the card decisions taken while an opponent's nil (blind or not) is
intact (bid, no trick taken yet) are scored by a second card head of the same shape, which also
reads who holds the intact nil, whether that seat has played to the trick and whether its card
wins it. It starts as a copy of the card head (:meth:`PolicyNet.copy_card_head_to_nil_defence`),
so the policy plays as before, and ``part_parameters("nil_defence")`` names it alone: training it
changes the play there and nowhere else (breaking the other side's nils is where the native search
outplays the policy most: docs/shipped_model.md).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from spades_env.cards import NUM_CARDS
from spades_env.game import BID_ACTION_BASE, NUM_ACTIONS, PHASE_PLAY
from spades_env.observation import BID_SLOTS, layout_for_size
from spades_env.rules import SIGNALS_LIMIT

NUM_OTHER_ACTIONS = NUM_ACTIONS - NUM_CARDS     # bids 0..13 (ids 52..65), blind nil (66), look (67)
MASKED_LOGIT = -1e9
SCORE_TILT_KINDS = ("lead", "trail")
MAX_SCORE_TILT = 10.0
NIL_DEFENCE_OPPONENTS = (1, 3)        # the relative seats of the other side (four players, two sides)
NIL_DEFENCE_CONTEXT = 3 * len(NIL_DEFENCE_OPPONENTS)   # per opponent: nil intact, played to the trick, winning it


def checked_score_tilts(score_tilts: dict) -> dict:
    """``score_tilts`` as plain values ({"lead": [S, T], "trail": [S, T]}, either or both), or a
    ValueError naming what is wrong (a model file is outside input)."""
    if not isinstance(score_tilts, dict) or not score_tilts or set(score_tilts) - set(SCORE_TILT_KINDS):
        raise ValueError(f"score_tilts={str(score_tilts)[:80]}: expected a mapping with 'lead' and/or 'trail'")
    checked = {}
    for kind, value in score_tilts.items():
        try:
            at, tilt = value
            ok = (isinstance(at, int) and not isinstance(at, bool) and abs(at) <= 100_000
                  and isinstance(tilt, (int, float)) and not isinstance(tilt, bool) and abs(tilt) <= MAX_SCORE_TILT)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"score_tilts[{kind!r}]={str(value)[:60]}: expected [points, tilt], an integer score "
                             f"and a tilt from -{MAX_SCORE_TILT:g} to {MAX_SCORE_TILT:g}")
        checked[kind] = [int(at), float(tilt)]
    return checked


def mlp(sizes: list[int], last_activation: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_activation or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class CardFeatures(nn.Module):
    """Derived card-counting features of a batch of observations (no learned weights).

    ``forward(obs)`` returns ``(per_card, summary)``: ``per_card`` (B, 52, ``per_card_size``) and
    ``summary`` (B, ``summary_size``). Per card: held, unseen (in no one's play and not held), played
    this hand, in the current trick, the trick's winning card so far, unseen cards of its suit
    above it and below it (/13), own cards of its suit above it (/13), master card (held, none
    unseen above it), would beat the trick's winner now, own and unseen cards of its suit (/13),
    and whether each other seat is known void in its suit. Summary: cards in the trick (/n),
    which relative seat wins the trick so far (n), own cards per suit (/13), unseen per suit (/13).

    ``nil_features`` (four players in two sides): where each nil stands, which the network would
    otherwise have to find by combining a bid cell with a tricks-taken cell. Per card, four more
    channels: it would beat the trick's winner while the seat's own nil is intact (a nil that
    must duck), while the partner's intact nil wins the trick (a cover), while an opponent's
    intact nil wins it (rescuing that nil), and while any opponent's nil is intact. Summary, eight
    more: each relative seat's nil intact (bid, blind or not, and no trick taken yet), and each
    such seat winning the trick so far. Measured before it existed: scratch policies at 9M-33M
    decisions played a winning card on 14-22% of the turns where their own nil could duck, their
    card choice unchanged when the own bid read 2 instead of nil
    (experiments/2026-12-01-scratch-nil/README.md, 2026-12-03).
    """

    PER_CARD = 12       # plus one known-void flag per other seat
    WINNER = 4          # the per-card channel that marks the trick's winning card so far

    NIL_PER_CARD = 4
    NIL_SUMMARY = 8

    def __init__(self, obs_size: int, signals: int = 0, nil_features: bool = False) -> None:
        super().__init__()
        layout = layout_for_size(obs_size, signals=signals)      # signals: the size alone does not fix it
        self.n = n = layout.n
        self.nil_features = bool(nil_features)
        if self.nil_features and (n != 4 or layout.num_sides != 2):
            raise ValueError(f"nil_features: expected four players in two sides (got {n} players)")
        self.summary_size = 1 + n + 8 + (self.NIL_SUMMARY if self.nil_features else 0)
        self.per_card_size = self.PER_CARD + (n - 1) + (self.NIL_PER_CARD if self.nil_features else 0)
        blocks = layout.obs_blocks
        if self.nil_features:
            bids, taken = blocks["bids"], blocks["tricks_taken"]
            # bid slot 0 is nil (blind nil sets it too); tricks-taken slot 0 is "none yet"
            self.register_buffer("_nil_cells", torch.tensor([bids.offset + r * BID_SLOTS for r in range(n)]),
                                 persistent=False)
            self.register_buffer("_no_trick_cells", torch.tensor([taken.offset + r * taken.width for r in range(n)]),
                                 persistent=False)
        self.hand = blocks["hand"].slice
        self.trick = blocks["current_trick"].slice
        self.played = blocks["played"].slice
        self.leader = blocks["trick_leader"].slice
        self.voids = blocks["voids"].slice
        rank = torch.arange(NUM_CARDS) % 13
        suit = torch.arange(NUM_CARDS) // 13
        # Trick strength of a card: spades beat the led suit, which beats the rest.
        self.register_buffer("rank_score", (rank + 1).float(), persistent=False)
        self.register_buffer("is_spade", (suit == 3).float(), persistent=False)
        above = (suit[:, None] == suit[None, :]) & (rank[None, :] > rank[:, None])       # [c, d]: d above c
        below = (suit[:, None] == suit[None, :]) & (rank[None, :] < rank[:, None])
        self.register_buffer("above", above.float(), persistent=False)
        self.register_buffer("below", below.float(), persistent=False)
        self.register_buffer("suit_of", nn.functional.one_hot(suit, 4).float(), persistent=False)   # (52, 4)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, n = obs.shape[0], self.n
        hand = obs[:, self.hand]
        trick_rows = obs[:, self.trick].reshape(B, n, NUM_CARDS)
        played = obs[:, self.played].reshape(B, n, NUM_CARDS).sum(1).clamp(max=1)
        in_trick = trick_rows.sum(1)
        unseen = (1 - hand - torch.maximum(played, in_trick)).clamp(min=0)
        higher_unseen = unseen @ self.above.T / 13                 # per card c: sum over d above c
        lower_unseen = unseen @ self.below.T / 13
        higher_held = hand @ self.above.T / 13
        master = hand * (higher_unseen == 0).float()
        # The led suit is the suit of the leader's card in the current trick.
        leader = obs[:, self.leader]
        lead_card = (leader[:, :, None] * trick_rows).sum(1)                              # (B, 52)
        lead_suit = lead_card @ self.suit_of                                              # (B, 4)
        follows = lead_suit @ self.suit_of.T                                               # (B, 52)
        strength = (self.rank_score + 50 * follows + 100 * self.is_spade) * ((follows + self.is_spade) > 0)
        trick_strength = strength * in_trick
        best = trick_strength.max(1, keepdim=True).values
        winner = in_trick * (trick_strength == best).float() * (best > 0).float()
        beats = hand * (strength > best).float() * (best > 0).float()
        held_per_suit = hand @ self.suit_of / 13                                          # (B, 4)
        unseen_per_suit = unseen @ self.suit_of / 13
        voids = obs[:, self.voids].reshape(B, n, 4)[:, 1:]                                 # other seats
        per_card = torch.cat([
            torch.stack([hand, unseen, played, in_trick, winner, higher_unseen, lower_unseen, higher_held,
                         master, beats, held_per_suit @ self.suit_of.T, unseen_per_suit @ self.suit_of.T], 2),
            (voids @ self.suit_of.T).transpose(1, 2),
        ], 2)
        winner_seat = (trick_rows * winner[:, None, :]).sum(2)                           # (B, n)
        summary = torch.cat([in_trick.sum(1, keepdim=True) / n, winner_seat, held_per_suit, unseen_per_suit], 1)
        if self.nil_features:
            intact = ((obs[:, self._nil_cells] > 0.5) & (obs[:, self._no_trick_cells] > 0.5)).to(obs.dtype)  # (B, 4)
            nil_winning = intact * winner_seat
            opponent_nil_winning = (nil_winning[:, 1] + nil_winning[:, 3]).clamp(max=1)
            opponent_nil = torch.maximum(intact[:, 1], intact[:, 3])
            per_card = torch.cat([per_card, beats[:, :, None] * torch.stack(
                [intact[:, 0], nil_winning[:, 2], opponent_nil_winning, opponent_nil], 1)[:, None, :]], 2)
            summary = torch.cat([summary, intact, nil_winning], 1)
        return per_card, summary


class PolicyNet(nn.Module):
    """Shared trunk, a card head and a bidding head; ``forward`` returns masked logits (B, 68 + signals).

    ``signals``: the bidding head also scores that many messages (actions 68..; ``Rules.signals``).

    ``card_features``: the trunk also reads :class:`CardFeatures` and the card head scores each
    card from the trunk's output and the card's own features (weights shared across cards, plus a
    learned embedding per card).

    ``nil_defence_head``: a second card head scores the cards while an opponent's nil is intact
    (module doc); it needs ``card_features`` and four players in two sides.

    ``nil_features``: :class:`CardFeatures` also says where each nil stands (its doc); it needs
    ``card_features`` and four players in two sides."""

    PARTS = ("all", "cards", "bids", "nil_defence")      # what :meth:`part_parameters` can name

    def __init__(self, obs_size: int, hidden: int = 256, layers: int = 2, head_hidden: int = 128,
                 card_features: bool = False, score_tilts: Optional[dict] = None,
                 nil_defence_head: bool = False, signals: int = 0, nil_features: bool = False) -> None:
        super().__init__()
        self.arch = {"obs_size": obs_size, "hidden": hidden, "layers": layers, "head_hidden": head_hidden}
        if not isinstance(signals, int) or isinstance(signals, bool) or not 0 <= signals <= SIGNALS_LIMIT:
            raise ValueError(f"signals={signals!r}: expected 0..{SIGNALS_LIMIT} messages (a rules' signals)")
        self.signals = signals
        if signals:                      # absent at 0: every model file written before stays the same
            self.arch["signals"] = signals
        if card_features:
            self.arch["card_features"] = True
        if nil_features:                 # absent when off: every model file written before stays the same
            if not card_features:
                raise ValueError("nil_features: expected card_features too (they extend the card features)")
            self.arch["nil_features"] = True
        self.score_tilts = None
        if score_tilts is not None:
            self.score_tilts = self.arch["score_tilts"] = checked_score_tilts(score_tilts)
            layout = layout_for_size(obs_size, signals=signals)
            sides = layout.obs_blocks["sides"]
            # the cells the rule reads: the target score, then each side's score (a fraction of it)
            cells = [layout.obs_blocks["game"].offset] + list(range(sides.offset, sides.offset + sides.size, sides.width))
            self.register_buffer("_score_cells", torch.tensor(cells), persistent=False)
            steps = torch.zeros(NUM_ACTIONS + signals)
            steps[BID_ACTION_BASE + 1:BID_ACTION_BASE + 14] = torch.arange(13.0)      # b - 1 for bids 1..13
            self.register_buffer("_bid_steps", steps, persistent=False)
        self.features = CardFeatures(obs_size, signals, nil_features) if card_features else None
        extra = 0 if self.features is None else NUM_CARDS * self.features.per_card_size + self.features.summary_size
        per_card_size = 0 if self.features is None else self.features.per_card_size
        self.trunk = mlp([obs_size + extra] + [hidden] * layers)
        if self.features is None:
            self.card_head = mlp([hidden, head_hidden, NUM_CARDS], last_activation=False)
            last_card_layer = self.card_head[-1]
        else:
            self.card_context = nn.Linear(hidden, head_hidden)
            self.card_own = nn.Linear(per_card_size, head_hidden, bias=False)
            self.card_embedding = nn.Parameter(torch.zeros(NUM_CARDS, head_hidden))
            self.card_score = nn.Linear(head_hidden, 1)
            last_card_layer = self.card_score
        self.bid_head = mlp([hidden, head_hidden, NUM_OTHER_ACTIONS + signals], last_activation=False)
        # Small initial logits: a near-uniform policy over the legal actions to start from.
        for layer in (last_card_layer, self.bid_head[-1]):
            nn.init.orthogonal_(layer.weight, gain=0.01)
            nn.init.zeros_(layer.bias)
        self.defends_nils = bool(nil_defence_head)
        if self.defends_nils:
            self._build_nil_defence_head(obs_size, hidden, head_hidden, per_card_size, signals)

    def _build_nil_defence_head(self, obs_size: int, hidden: int, head_hidden: int, per_card_size: int,
                                signals: int = 0) -> None:
        """The second card head and the observation cells its gate and context read."""
        layout = layout_for_size(obs_size, signals=signals)
        if self.features is None or layout.n != 4 or layout.num_sides != 2:
            raise ValueError("nil_defence_head: expected card_features and four players in two sides "
                             f"(got card_features={self.features is not None}, {layout.n} players)")
        self.arch["nil_defence_head"] = True
        blocks = layout.obs_blocks
        bids, taken, trick = blocks["bids"], blocks["tricks_taken"], blocks["current_trick"]
        opponents = NIL_DEFENCE_OPPONENTS
        self.register_buffer("_play_cell", torch.tensor(blocks["phase"].offset + PHASE_PLAY), persistent=False)
        # bid slot 0 is nil (a blind nil sets it too, with the blind flag); tricks-taken slot 0 is "none yet"
        self.register_buffer("_nil_cells", torch.tensor([bids.offset + r * BID_SLOTS for r in opponents]),
                             persistent=False)
        self.register_buffer("_no_trick_cells", torch.tensor([taken.offset + r * taken.width for r in opponents]),
                             persistent=False)
        self.register_buffer("_opponent_trick_cells", torch.tensor(
            [trick.offset + r * NUM_CARDS + c for r in opponents for c in range(NUM_CARDS)]), persistent=False)
        self.nil_context = nn.Linear(hidden + NIL_DEFENCE_CONTEXT, head_hidden)
        self.nil_own = nn.Linear(per_card_size, head_hidden, bias=False)
        self.nil_embedding = nn.Parameter(torch.zeros(NUM_CARDS, head_hidden))
        self.nil_score = nn.Linear(head_hidden, 1)
        self.copy_card_head_to_nil_defence()

    @torch.no_grad()
    def copy_card_head_to_nil_defence(self) -> None:
        """The nil-defence head set to the card head's weights (its extra context inputs weighted 0),
        so that it scores every card exactly as the card head does."""
        hidden = self.card_context.weight.shape[1]
        self.nil_context.weight.zero_()
        self.nil_context.weight[:, :hidden] = self.card_context.weight
        self.nil_context.bias.copy_(self.card_context.bias)
        self.nil_own.weight.copy_(self.card_own.weight)
        self.nil_embedding.copy_(self.card_embedding)
        self.nil_score.weight.copy_(self.card_score.weight)
        self.nil_score.bias.copy_(self.card_score.bias)

    def load_adding_nil_defence(self, state: dict) -> None:
        """Load the weights of the same policy without a nil-defence head (``state``), the head
        starting as a copy of its card head: the same logits everywhere."""
        missing, unexpected = self.load_state_dict(state, strict=False)
        if unexpected or not self.defends_nils or any(not name.startswith("nil_") for name in missing):
            raise ValueError("load_adding_nil_defence: expected the weights of this policy without its nil-defence "
                             f"head (missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})")
        self.copy_card_head_to_nil_defence()

    @torch.no_grad()
    def reset_bid_head(self) -> None:
        """The bidding head's weights drawn again as a new policy's are (default init, small last
        layer): bids near uniform again, everything else kept."""
        for layer in self.bid_head:
            if isinstance(layer, nn.Linear):
                layer.reset_parameters()
        nn.init.orthogonal_(self.bid_head[-1].weight, gain=0.01)
        nn.init.zeros_(self.bid_head[-1].bias)

    def part_parameters(self, part: str) -> list[nn.Parameter]:
        """The weights of one part of the policy: ``all``, ``cards`` (the card head alone: what
        follows the trunk for the 52 cards) or ``bids`` (the bidding head alone)."""
        if part == "all":
            return list(self.parameters())
        if part == "bids":
            return list(self.bid_head.parameters())
        if part == "nil_defence":
            if not self.defends_nils:
                raise ValueError("part='nil_defence': this policy has no nil-defence head (nil_defence_head)")
            return [*self.nil_context.parameters(), *self.nil_own.parameters(), self.nil_embedding,
                    *self.nil_score.parameters()]
        if part == "cards":
            if self.features is None:
                return list(self.card_head.parameters())
            return [*self.card_context.parameters(), *self.card_own.parameters(), self.card_embedding,
                    *self.card_score.parameters()]
        raise ValueError(f"part={part!r}: expected one of {', '.join(self.PARTS)}")

    def can_grow_from(self, arch: dict) -> bool:
        """Whether :meth:`load_grown` accepts a policy of shape ``arch``: the same observation and
        card features and messages, no wider or deeper than this one, and neither with a nil-defence head (its
        context columns follow the trunk's width, so a copy into the leading block would misplace
        them)."""
        return (arch.get("obs_size") == self.arch["obs_size"]
                and bool(arch.get("card_features")) == bool(self.arch.get("card_features"))
                and bool(arch.get("nil_features")) == bool(self.arch.get("nil_features"))
                and arch.get("signals", 0) == self.signals
                and not arch.get("nil_defence_head") and not self.defends_nils
                and all(isinstance(arch.get(k), int) and 1 <= arch[k] <= self.arch[k]
                        for k in ("hidden", "layers", "head_hidden")))

    @torch.no_grad()
    def load_grown(self, state: dict, arch: dict) -> None:
        """Start from a smaller policy (``state`` of a ``PolicyNet(**arch)``), computing exactly its
        logits: every old weight is copied into the leading block of its larger counterpart, the
        new units keep their random initialisation but no old unit reads them (those weights are
        zero), and trunk layers beyond the old depth start as the identity (their input has been
        through a ReLU, so ``relu(x) = x``). Training then grows into the new units."""
        if not self.can_grow_from(arch):
            raise ValueError(f"load_grown: a policy of shape {arch} cannot grow into {self.arch} (same "
                             "observation size and card features, hidden/layers/head_hidden no larger)")
        own = dict(self.named_parameters())
        for name, old in state.items():
            if name not in own:
                raise ValueError(f"load_grown: the smaller policy has a parameter {name!r} this one lacks")
            new = own[name]
            if old.dim() == 2:
                rows, cols = old.shape
                new[:rows, :cols] = old
                new[:rows, cols:] = 0.0          # old units ignore the new inputs
            else:
                new[:old.shape[0]] = old
        for name, new in own.items():
            if name not in state:                # a trunk layer beyond the old depth
                if new.dim() == 2:
                    new.copy_(torch.eye(*new.shape))
                else:
                    new.zero_()

    def embed(self, obs: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The trunk's output (B, hidden), and the per-card features (None without them)."""
        if self.features is None:
            return self.trunk(obs), None
        per_card, summary = self.features(obs)
        return self.trunk(torch.cat([obs, per_card.flatten(1), summary], 1)), per_card

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.logits_from(obs, *self.embed(obs), mask)

    def logits_from(self, obs: torch.Tensor, trunk: torch.Tensor, per_card: Optional[torch.Tensor],
                    mask: torch.Tensor) -> torch.Tensor:
        """The masked logits (B, 68) from :meth:`embed`'s outputs: the heads, the nil-defence head
        where it applies, then the score rule."""
        logits = self.defend_nils(obs, trunk, per_card, self.heads(trunk, per_card, mask), mask)
        return self.tilt_bids_by_score(obs, logits, mask)

    def intact_opponent_nils(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, 2) bool: each opponent's (left, then right) nil, blind or not, bid and no trick taken
        yet."""
        return (obs[:, self._nil_cells] > 0.5) & (obs[:, self._no_trick_cells] > 0.5)

    def nil_defence_gate(self, obs: torch.Tensor) -> torch.Tensor:
        """(B,) bool: a card to play while an opponent's nil is intact;
        :func:`train.labelling.positions.nil_defence_position` is the readable reference."""
        return (obs[:, self._play_cell] > 0.5) & self.intact_opponent_nils(obs).any(1)

    def nil_defence_context(self, obs: torch.Tensor, per_card: torch.Tensor) -> torch.Tensor:
        """(B, 6): for each opponent (left, then right) whether its nil is intact, whether it has
        played to the current trick and whether its card wins the trick so far."""
        intact = self.intact_opponent_nils(obs).to(per_card.dtype)
        trick = obs[:, self._opponent_trick_cells].reshape(obs.shape[0], len(NIL_DEFENCE_OPPONENTS), NUM_CARDS)
        trick = trick.to(per_card.dtype)
        winning = (trick * per_card[:, None, :, CardFeatures.WINNER]).sum(2)
        return torch.cat([intact, trick.sum(2), winning], 1)

    def defend_nils(self, obs: torch.Tensor, trunk: torch.Tensor, per_card: Optional[torch.Tensor],
                    logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``logits`` with the card logits of the rows :meth:`nil_defence_gate` picks scored by the
        nil-defence head instead (unchanged without one). Only those rows are computed."""
        if not self.defends_nils:
            return logits
        rows = self.nil_defence_gate(obs).nonzero()[:, 0]
        if rows.numel() == 0:
            return logits
        legal = mask[rows, :NUM_CARDS]
        context = torch.cat([trunk[rows], self.nil_defence_context(obs[rows], per_card[rows])], 1)
        cards = self.score_legal_cards(self.nil_context(context), per_card[rows], legal, self.nil_own,
                                       self.nil_embedding, self.nil_score).masked_fill(~legal, MASKED_LOGIT)
        return logits.index_put((rows,), torch.cat([cards.to(logits.dtype), logits[rows, NUM_CARDS:]], 1))

    def tilt_bids_by_score(self, obs: torch.Tensor, logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``logits`` with the ``score_tilts`` rule applied (unchanged without one): the scores read
        back from the observation's cells as :func:`~spades_env.observation.decode_observation` reads
        them (side 0 is the policy's own, side 1 its left-hand opponents'). On the CPU a batch with
        no bid to choose is left alone (12 decisions in 13 are cards); elsewhere that test would
        wait for the device, and the rule's shift of masked logits changes nothing."""
        if self.score_tilts is None:
            return logits
        if obs.device.type == "cpu" and not bool(mask[:, BID_ACTION_BASE + 1:BID_ACTION_BASE + 14].any()):
            return logits
        cells = obs[:, self._score_cells].float()
        scores = torch.round(cells[:, 1:] * (cells[:, :1] * 1000.0))
        own, left, others = scores[:, 0], scores[:, 1], scores[:, 1:].amax(1)
        shift = torch.zeros_like(own)
        if "trail" in self.score_tilts:
            at, tilt = self.score_tilts["trail"]
            shift = torch.where((left >= at) & (left > own), tilt, shift)
        if "lead" in self.score_tilts:                       # first in the rule's order: it wins a tie
            at, tilt = self.score_tilts["lead"]
            shift = torch.where((own >= at) & (own > others), tilt, shift)
        return logits + shift.to(logits.dtype)[:, None] * self._bid_steps.to(logits.dtype)

    def heads(self, trunk: torch.Tensor, per_card: Optional[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        """Masked logits (B, 68) from :meth:`embed`'s outputs."""
        if per_card is None:
            card_logits = self.card_head(trunk)
        else:
            card_logits = self.legal_card_logits(trunk, per_card, mask[:, :NUM_CARDS])
        logits = torch.cat([card_logits, self.bid_head(trunk)], 1)
        return logits.masked_fill(~mask, MASKED_LOGIT)

    def legal_card_logits(self, trunk: torch.Tensor, per_card: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """The card head's logits (B, 52) computed for the legal cards only (at most a hand's
        worth, 13 of 52; other entries hold a score or 0): the per-card layer is most of the learner's time, and
        the other cards' logits are masked anyway. Equal to :meth:`every_card_logits` on every
        legal card (tests/agents/test_networks.py)."""
        return self.score_legal_cards(self.card_context(trunk), per_card, legal, self.card_own,
                                      self.card_embedding, self.card_score)

    @staticmethod
    def score_legal_cards(context: torch.Tensor, per_card: torch.Tensor, legal: torch.Tensor, own_layer: nn.Module,
                          embedding: torch.Tensor, score_layer: nn.Module) -> torch.Tensor:
        """A card head's logits (B, 52) at the legal cards: ``relu(context + own_layer(card's
        features) + embedding[card])`` scored by ``score_layer`` (the card head's and the
        nil-defence head's layers)."""
        k = max(int(legal.sum(1).max()), 1) if legal.shape[0] else 1
        picked = legal.float().topk(k, 1).indices                            # (B, k): every legal card, then fillers
        own = per_card.gather(1, picked[:, :, None].expand(-1, -1, per_card.shape[2]))
        hidden = torch.relu(context[:, None, :] + own_layer(own) + embedding[picked])
        scores = score_layer(hidden)[:, :, 0]
        return scores.new_zeros(scores.shape[0], NUM_CARDS).scatter(1, picked, scores)

    def every_card_logits(self, trunk: torch.Tensor, per_card: torch.Tensor) -> torch.Tensor:
        """The readable reference of :meth:`legal_card_logits`: all 52 cards scored."""
        hidden = torch.relu(self.card_context(trunk)[:, None, :] + self.card_own(per_card) + self.card_embedding)
        return self.card_score(hidden)[:, :, 0]


class ValueNet(nn.Module):
    """The critic: one value per row, in reward units."""

    def __init__(self, input_size: int, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.arch = {"input_size": input_size, "hidden": hidden, "layers": layers}
        self.net = mlp([input_size] + [hidden] * layers + [1], last_activation=False)
        nn.init.orthogonal_(self.net[-1].weight, gain=1.0)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)[:, 0]


def masked_entropy(log_probs: torch.Tensor, probs: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Entropy per row of a masked categorical (masked actions contribute exactly 0). Pass
    ``probs`` (the softmax of the same logits) when at hand: ``log_probs.exp()`` is slow on the
    masked entries' huge negative values."""
    if probs is None:
        probs = log_probs.exp()
    return -(probs * log_probs).sum(1)


def sample_actions(probs: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """One action per row drawn from ``probs`` (B, A), rows summing to about 1 with zeros for
    the masked actions: the inverse of the cumulative distribution at a uniform draw. It draws
    exactly as ``torch.multinomial(probs, 1)`` would in distribution (not the same stream), at a
    twentieth of its cost at 2,048 x 68, and never returns an action of probability 0."""
    cumulative = probs.cumsum(1)
    draw = torch.rand(probs.shape[0], 1, generator=generator, device=probs.device, dtype=probs.dtype)
    chosen = (cumulative <= draw * cumulative[:, -1:]).sum(1)
    # A draw rounded up to the total would land past the last possible action: keep it there.
    last_possible = probs.shape[1] - 1 - (probs.flip(1) > 0).to(torch.int8).argmax(1)
    return torch.minimum(chosen, last_possible)
