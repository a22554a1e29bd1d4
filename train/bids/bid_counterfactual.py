"""Counterfactual bid values (``bid_learning: counterfactual``): every bid's worth from one hand.

From scratch, the policy gradient gets one noisy number per bid (the hand's outcome, standard
deviation about 60 points) and learns to bid the same on every hand (docs/training.md, the
ablation). But once a hand is over, what any other bid of the same seat would have scored is a
matter of arithmetic: keep the tricks each seat took and the other bids, put bid ``b`` in, and
score the hand again (the engine's own scoring, bags, penalties and the bag cost included). That
gives all 14 bids a value from every hand, as DouZero's Monte-Carlo targets give one: the bidding
head's outputs (times ``bid_temperature``) are fitted to those values by squared error, and the
learner bids by the softmax of its values over the temperature. The tricks are those the card
play took with the bid actually made (a different bid might have been played differently), a bias
that shrinks as the play learns to make what it bids; the outcome of the bid actually made is
exact.

Scored again as a nil, a hand played to make a bid is nearly always a broken nil, so the values
undervalue nil; with ``bid_counterfactual_nil: played`` nil is valued only by the hands where it
was bid (and those hands value nothing else). Only the bids of the bidding phase (nil to 13) are
valued so; the blind-nil decision (offered only to a side 100 behind) stays with PPO. Hand
episodes only (a game's later hands would also depend on the bid).

Both biases go where the bid is played out instead (``bid_playout_every``): every bid of a
bidding turn is played on its own copy of the deal by the current policy, whose play reads the
bid (:mod:`train.bids.bid_values`), so a nil is valued by the policy playing the hand as a nil
bidder and a high bid by the play that goes for it. Those values (:meth:`CounterfactualBids.set_played_out`)
join the kept valued bids of the rollouts until the next round replaces them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

import torch

from spades_env.game import BID_ACTION_BASE, NUM_ACTIONS

NUM_BIDS = 14                         # nil, 1..13: actions BID_ACTION_BASE .. BID_ACTION_BASE + 13
# How nil is valued: "counterfactual" (as every bid: the hand scored again as a nil, with the tricks
# the seat took playing to make its bid, so a nil looks broken almost always) or "played" (a nil
# hand values nil alone, exactly; any other hand values every bid but nil: nil is then learnt
# against the rest by the outcomes of the nils actually bid, Monte-Carlo).
NIL_MODES = ("counterfactual", "played")
CARDS_PER_SUIT, SPADES = 13, 3


class CounterfactualBids:
    """Keeps the learner's bids until their hands end, then values every bid of them.

    :meth:`before_step` is called with every step's decisions, :meth:`after_step` with the
    tables that finished; :meth:`records` returns the valued bids of the latest ``keep_updates``
    rollouts (observation, mask, the 14 bids' values in reward units; nan where illegal)."""

    def __init__(self, env, obs_size: int, keep_updates: int, device: torch.device, nil: str = "counterfactual",
                 bid_offsets: Optional[torch.Tensor] = None) -> None:
        B = env.num_envs
        if nil not in NIL_MODES:
            raise ValueError(f"nil={nil!r}: expected one of {', '.join(NIL_MODES)}")
        self.env, self.device, self.keep_updates, self.nil = env, device, keep_updates, nil
        # (14,) what each bid earns besides the score (reward_bias's bid and nil events), or None
        self.bid_offsets = None if bid_offsets is None else bid_offsets.to(device)
        scheme = env.reward_scheme
        if scheme.reward not in ("team_diff", "team_score"):
            raise ValueError(f"bid_learning: counterfactual needs reward team_diff or team_score, not "
                             f"{scheme.reward!r}")
        self.pending = torch.zeros(B, 4, dtype=torch.bool, device=device)
        self.pending_obs = torch.zeros(B, 4, obs_size, device=device)
        # the rules' action space: 68, and a message each under signals
        self.pending_mask = torch.zeros(B, 4, getattr(env, "num_actions", NUM_ACTIONS), dtype=torch.bool, device=device)
        self.batches: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self._current: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self._snapshot: Optional[SimpleNamespace] = None
        self.played_out: Optional[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None   # set_played_out

    # ------------------------------------------------------------------ collection
    def before_step(self, obs: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor, learner: torch.Tensor) -> None:
        """Remember the learner's bids of this step and what the hand's end will need."""
        env = self.env
        seat = env.to_act
        is_bid = learner & (actions >= BID_ACTION_BASE) & (actions < BID_ACTION_BASE + NUM_BIDS)
        if bool(is_bid.any()):
            rows = torch.nonzero(is_bid)[:, 0]
            self.pending[rows, seat[rows]] = True
            self.pending_obs[rows, seat[rows]] = obs[rows]
            self.pending_mask[rows, seat[rows]] = mask[rows]
        s = env.state               # the native step changes it in place: copies
        self._snapshot = SimpleNamespace(bids=s.bids.clone(), tricks_taken=s.tricks_taken.clone(),
                                         blind=s.blind.clone(), bags=s.bags.clone(), scores=s.scores.clone(),
                                         win_card=s.win_card.clone(), win_seat=s.win_seat.clone(),
                                         seat=seat.clone(), card=actions.clone())

    def after_step(self, done: torch.Tensor) -> None:
        """Value the pending bids of the tables whose hand ended with this step."""
        if not bool(done.any()):
            return
        tables = torch.nonzero(done)[:, 0]
        snap = self._snapshot
        pick = SimpleNamespace(**{k: getattr(snap, k)[tables] for k in vars(snap)})
        taken = final_tricks(pick)
        values = bid_values(self.env, pick, taken)                 # (n, 4, 14) reward units
        waiting = self.pending[tables]                              # (n, 4)
        if bool(waiting.any()):
            t, seat = torch.nonzero(waiting, as_tuple=True)
            obs, mask = self.pending_obs[tables][t, seat], self.pending_mask[tables][t, seat]
            legal = mask[:, BID_ACTION_BASE:BID_ACTION_BASE + NUM_BIDS]
            target = values[t, seat]
            if self.bid_offsets is not None:
                target = target + self.bid_offsets
            target = target.masked_fill(~legal, float("nan"))
            if self.nil == "played":       # nil against the rest only by hands played as nil
                bid_nil = (pick.bids[t, seat] == 0)[:, None]
                is_nil = torch.zeros_like(legal)
                is_nil[:, 0] = True
                target = target.masked_fill(bid_nil != is_nil, float("nan"))
            self._current.append((obs.clone(), mask.clone(), target))
        self.pending[tables] = False

    def end_rollout(self) -> None:
        """The rollout's valued bids become a batch; only the latest ``keep_updates`` are kept."""
        if self._current:
            obs, mask, target = (torch.cat(parts) for parts in zip(*self._current))
            self.batches.append((obs, mask, target))
            self._current = []
        del self.batches[:-self.keep_updates]

    def set_played_out(self, data: dict, reward_scale: float) -> int:
        """Keep the bids valued by play-outs (``data`` of :func:`train.bids.bid_values.collect_bid_values`:
        points, the bidder's side minus the other side) in place of the last round's; the bidding
        turns among them (a valued blind-nil decision values no bid) in reward units, with the
        hidden utility's bid offsets as the rollouts' values have them. Returns how many."""
        values = data["values"][:, :NUM_BIDS].to(self.device, torch.float32) * reward_scale
        keep = ~torch.isnan(values).all(1)
        if self.bid_offsets is not None:
            values = values + self.bid_offsets
        self.played_out = (data["obs"].to(self.device, torch.float32)[keep], data["mask"].to(self.device)[keep],
                           values[keep])
        return int(keep.sum())

    def records(self) -> Optional[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """The valued bids to fit: the latest rollouts' and the last play-outs'; None if none."""
        parts = self.batches + ([self.played_out] if self.played_out is not None else [])
        if not parts:
            return None
        return tuple(torch.cat(group) for group in zip(*parts))

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        cpu = lambda t: t.detach().to("cpu").clone()     # noqa: E731
        return {"pending": cpu(self.pending), "pending_obs": cpu(self.pending_obs),
                "pending_mask": cpu(self.pending_mask),
                "batches": [tuple(cpu(t) for t in batch) for batch in self.batches],
                **({} if self.played_out is None else {"played_out": tuple(cpu(t) for t in self.played_out)})}

    def load_state_dict(self, data: Optional[dict]) -> None:
        if not data:
            return
        dev = self.device
        self.pending = data["pending"].to(dev)
        self.pending_obs = data["pending_obs"].to(dev)
        self.pending_mask = data["pending_mask"].to(dev)
        self.batches = [tuple(t.to(dev) for t in batch) for batch in data["batches"]]
        played = data.get("played_out")
        self.played_out = None if played is None else tuple(t.to(dev) for t in played)


def final_tricks(s: SimpleNamespace) -> torch.Tensor:
    """(n, 4) tricks each seat took in the hand, from the state before its last card (``card``
    played by ``seat``): the trick's winner so far keeps it unless the last card beats its card."""
    card, best = s.card, s.win_card
    same_suit = (card // CARDS_PER_SUIT) == (best // CARDS_PER_SUIT)
    beats = (same_suit & (card % CARDS_PER_SUIT > best % CARDS_PER_SUIT)) | (
        (card // CARDS_PER_SUIT == SPADES) & (best // CARDS_PER_SUIT != SPADES))
    winner = torch.where(beats, s.seat, s.win_seat)
    taken = s.tricks_taken.clone()
    taken[torch.arange(len(winner), device=winner.device), winner] += 1
    return taken


def bid_values(env, s: SimpleNamespace, taken: torch.Tensor) -> torch.Tensor:
    """(n, 4, 14): for every seat and every bid nil..13, the seat's reward for the hand (reward
    units, as the env pays it: points, bag cost, reward scale; team_diff: minus the other side's
    actual reward) had it bid that, all else as it was."""
    scheme = env.reward_scheme
    n = taken.shape[0]
    bids = s.bids[:, None, None, :].repeat(1, 4, NUM_BIDS, 1)          # (n, seat, bid, 4)
    blind = s.blind[:, None, None, :].repeat(1, 4, NUM_BIDS, 1)
    seats = torch.arange(4, device=taken.device)
    for seat in range(4):
        bids[:, seat, :, seat] = torch.arange(NUM_BIDS, device=taken.device)
        blind[:, seat, :, seat] = 0
    flat = lambda t: t[:, None, None].expand(n, 4, NUM_BIDS, *t.shape[1:]).reshape(-1, *t.shape[1:])  # noqa: E731
    state = SimpleNamespace(bids=bids.reshape(-1, 4), blind=blind.reshape(-1, 4), tricks_taken=flat(taken),
                            bags=flat(s.bags), scores=flat(s.scores))
    points, bags_after = env._score_hand(state)                        # the engine's scoring (per side)
    side_reward = points - scheme.bag_cost * (bags_after - state.bags)   # (n*4*14, 2)
    side_reward = side_reward.reshape(n, 4, NUM_BIDS, 2).to(torch.float32)
    own_side = (seats % 2)[None, :, None].expand(n, 4, NUM_BIDS)
    own = side_reward.gather(3, own_side[..., None])[..., 0]
    if scheme.reward == "team_diff":
        actual = SimpleNamespace(bids=s.bids, blind=s.blind, tricks_taken=taken, bags=s.bags, scores=s.scores)
        points, bags_after = env._score_hand(actual)
        actual_reward = (points - scheme.bag_cost * (bags_after - s.bags)).to(torch.float32)   # (n, 2)
        other = actual_reward.gather(1, (1 - seats % 2)[None, :].expand(n, 4))                   # (n, 4)
        own = own - other[:, :, None]
    return own * scheme.reward_scale
