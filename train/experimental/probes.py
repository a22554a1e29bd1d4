"""Probes of a trained policy: what would change in games if it bid, played or labelled otherwise.

Used to find where the shipped policy's points go (docs/shipped_model.md, "After shipping"); none
of them is a player we ship. Each plays duplicate whole games against the heuristic, paired with
the unchanged policy on the same games (``spades-eval --baseline``)::

    python -m train.experimental.probes bid-plus --share 0.5 --games 100 --seed 40
    python -m train.experimental.probes blind-nil-at --threshold 0.2 --games 200 --seed 12
    python -m train.experimental.probes bid-ratio --ratio 0.5 --games 200 --seed 40
    python -m train.experimental.probes bid-tilt --tilt 1.4 --games 400 --seed 12
    python -m train.experimental.probes bid-tilt --tilt 0 --bags-tilt 7:0.6 --games 400 --seed 12
    python -m train.experimental.probes heuristic-bids --games 400 --seed 12
    python -m train.experimental.probes nil-defence --player search --games 400 --seed 12
    python -m train.experimental.probes strict-ducking-labels -- --teacher heuristic --student agents/models/neural_v3.pt \\
        --only ducking --follow-teacher 0.0 --varied-start 1 --deals 40000 --shard-deals 400 --workers 2 \\
        --seed 31 --out runs/ducking_strict_labels

``bid-plus``: the policy bids one more than its choice on a share of its bids of 1 to 12.
``bid-ratio``: it bids one more where it gives that bid at least ``ratio`` times the probability of its
choice (optionally only with ``--min-bags`` bags carried).
``bid-tilt``: ``tilt * (b - 1)`` added to the log-probability of each bid ``b`` of 1 to 13 (what
``python -m train.bids.bid_tilt`` writes into a network's bias); ``--partner-bid-tilt``, ``--bags-tilt K:T``,
``--lead-tilt S:T``, ``--trail-tilt S:T`` and ``--their-bags-tilt K:T`` use another tilt where the
partner has bid, the side carries ``K`` bags or more, it leads with ``S`` points or more, the other
side does, or the other side carries ``K`` bags or more; ``--their-nil-tilt`` where an opponent has
bid nil, ``--partner-blind-nil-tilt`` where the partner has bid blind nil, ``--their-blind-nil-tilt``
where an opponent has (``--baseline`` names the policy it is paired with).
``heuristic-bids``: the policy's card play with the heuristic's bids (``--own-blind-nil``: the policy
keeps its blind-nil decision). ``heuristic-blind-nil``: only the blind-nil decision is the
heuristic's. ``heuristic-cards``: its bids with the heuristic's passing and card
play. ``heuristic-nil-play``: the heuristic (or ``--player``) plays the hands where the policy's side
bid nil. ``nil-defence``: the heuristic (or ``--player``) plays while an opponent's nil is intact
(``--blind-only``: a blind nil; ``--leads-only``: only the leads).
``blind-nil-at``: it bids blind nil whenever its probability of it is above the threshold.
``strict-ducking-labels``: ``spades-label --only ducking`` with a stricter test, positions where
no set is possible at all (both sides past their contracts, no nil intact).
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.experimental.probes", "train.experimental.probes:main"))

import argparse
import math
import random
import sys
import zlib
from typing import Optional

import numpy as np

import agents
from agents import heuristic
from agents.base import observation_view
from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_PLAY
from train.labelling.positions import intact_opponent_nils


class _Probe:
    """A changed copy of a neural policy: everything not overridden (reset, name, ...) is
    the policy's own."""

    def __init__(self, **options) -> None:
        self.inner = agents.make("neural", **options)

    def __getattr__(self, name: str):
        if name == "inner":                         # not set yet (a copy being built)
            raise AttributeError(name)
        return getattr(self.inner, name)


class BidPlus(_Probe):
    """The policy, bidding one more than its choice on ``share`` of its bids of 1 to 12."""

    def __init__(self, share: float, seed: Optional[int] = None, **options) -> None:
        super().__init__(**options)
        self.share, self.salt = share, 1 if seed is None else seed

    def _draw(self, obs: dict) -> float:
        """A uniform draw fixed by the position: the same raises whatever the order in which
        the workers play the games."""
        observation = np.asarray(obs["observation"], dtype=np.float32).tobytes()
        return random.Random(zlib.crc32(observation) * 1_000_003 + self.salt).random()

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        action = self.inner.act(obs, info)
        bid = action - BID_ACTION_BASE
        if 1 <= bid <= 12 and self._draw(obs) < self.share and obs["action_mask"][action + 1]:
            return action + 1
        return action


class BidRatio(_Probe):
    """The policy, bidding one more than its choice ``b`` (1 to 12) where it gives ``b + 1`` at least
    ``ratio`` times the probability of ``b`` and its side carries at least ``min_bags`` bags: the
    raises go to the hands the policy itself is unsure about, not to a random share."""

    def __init__(self, ratio: float, min_bags: int = 0, **options) -> None:
        super().__init__(**options)
        self.ratio, self.min_bags = ratio, min_bags

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        action = self.inner.act(obs, info)
        bid = action - BID_ACTION_BASE
        if not 1 <= bid <= 12 or not obs["action_mask"][action + 1]:
            return action
        if observation_view(obs).bags[0] < self.min_bags:
            return action
        probs = self.inner.action_probabilities(obs)
        return action + 1 if probs[action + 1] >= self.ratio * probs[action] else action


class BidTilt(_Probe):
    """The policy with ``tilt`` added to the log-probability of each bid ``b`` of 1 to 13 per trick
    above 1 (``tilt * (b - 1)``): nil, blind nil and bid 1 keep their logits, a raise from ``b`` to
    ``b + 1`` is taken where ``p(b + 1) >= exp(-tilt) * p(b)``. The same change as adding it to the
    bidding head's output bias, so a tilt that helps can be shipped inside the network."""

    def __init__(self, tilt: float, keep_nil: bool = False, partner_bid_tilt: Optional[float] = None,
                 bags_tilt: Optional[tuple[int, float]] = None, lead_tilt: Optional[tuple[int, float]] = None,
                 trail_tilt: Optional[tuple[int, float]] = None,
                 their_bags_tilt: Optional[tuple[int, float]] = None, their_nil_tilt: Optional[float] = None,
                 partner_blind_nil_tilt: Optional[float] = None, their_blind_nil_tilt: Optional[float] = None,
                 **options) -> None:
        super().__init__(**options)
        self.tilt, self.keep_nil = tilt, keep_nil
        self.partner_bid_tilt, self.bags_tilt, self.lead_tilt = partner_bid_tilt, bags_tilt, lead_tilt
        self.trail_tilt, self.their_bags_tilt, self.their_nil_tilt = trail_tilt, their_bags_tilt, their_nil_tilt
        self.partner_blind_nil_tilt, self.their_blind_nil_tilt = partner_blind_nil_tilt, their_blind_nil_tilt
        self.by_context = any(t is not None for t in (partner_bid_tilt, bags_tilt, lead_tilt, trail_tilt,
                                                      their_bags_tilt, their_nil_tilt, partner_blind_nil_tilt,
                                                      their_blind_nil_tilt))

    def tilt_at(self, obs: dict) -> float:
        """The tilt for this bidding turn, the first condition that holds deciding:
        ``partner_blind_nil_tilt`` where the partner has bid blind nil; ``their_blind_nil_tilt`` where an
        opponent has; ``bags_tilt = (K, T)``: ``T``
        where the side carries at least ``K`` bags; ``lead_tilt = (S, T)`` where the side leads with at
        least ``S`` points; ``trail_tilt = (S, T)`` where the other side does; ``their_bags_tilt =
        (K, T)`` where the other side carries at least ``K`` bags; ``their_nil_tilt`` where an opponent
        has bid nil or blind nil; ``partner_bid_tilt`` where the partner has bid; else ``tilt``."""
        if not self.by_context:
            return self.tilt
        view = observation_view(obs)
        if self.partner_blind_nil_tilt is not None and view.blind[2]:
            return self.partner_blind_nil_tilt
        if self.their_blind_nil_tilt is not None and (view.blind[1] or view.blind[3]):
            return self.their_blind_nil_tilt
        if self.bags_tilt is not None and view.bags[0] >= self.bags_tilt[0]:
            return self.bags_tilt[1]
        if self.lead_tilt is not None and view.scores[0] >= self.lead_tilt[0] and view.scores[0] > max(view.scores[1:]):
            return self.lead_tilt[1]
        if self.trail_tilt is not None and view.scores[1] >= self.trail_tilt[0] and view.scores[1] > view.scores[0]:
            return self.trail_tilt[1]
        if self.their_bags_tilt is not None and view.bags[1] >= self.their_bags_tilt[0]:
            return self.their_bags_tilt[1]
        if self.their_nil_tilt is not None and 0 in (view.bids[1], view.bids[3]):
            return self.their_nil_tilt
        if self.partner_bid_tilt is not None and view.partner_bid() is not None:
            return self.partner_bid_tilt
        return self.tilt

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        action = self.inner.act(obs, info)
        if not BID_ACTION_BASE <= action <= BID_ACTION_BASE + 13 or (self.keep_nil and action == BID_ACTION_BASE):
            return action
        probs = self.inner.action_probabilities(obs)
        with np.errstate(divide="ignore"):
            scores = np.log(probs)
        bids = np.arange(1, 14)
        scores[BID_ACTION_BASE + bids] += self.tilt_at(obs) * (bids - 1)
        scores[~np.asarray(obs["action_mask"], dtype=bool)] = -np.inf
        if self.keep_nil:
            scores[BID_ACTION_BASE] = -np.inf                # a nil stays a nil, and nothing else becomes one
        return int(scores.argmax())


class BlindNilAt(_Probe):
    """The policy, bidding blind nil whenever its probability of it exceeds ``threshold``."""

    def __init__(self, threshold: float, **options) -> None:
        super().__init__(**options)
        self.threshold = threshold

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        if not obs["action_mask"][BLIND_NIL_ACTION]:
            return self.inner.act(obs, info)
        probs = self.inner.action_probabilities(obs)
        if probs[BLIND_NIL_ACTION] > self.threshold:
            return BLIND_NIL_ACTION
        probs[BLIND_NIL_ACTION] = -1.0
        return int(probs.argmax())


class HeuristicBids(_Probe):
    """The policy's card play with the heuristic's bids (and with ``blind_nil`` its blind-nil
    decision too): is the policy's bidding or its card play behind? The subclasses swap other parts,
    some to another ``player`` than the heuristic (``self.heuristic`` is whoever takes over)."""

    def __init__(self, blind_nil: bool = True, player: str = "heuristic", **options) -> None:
        super().__init__(**options)
        self.heuristic, self.blind_nil = agents.make(player), blind_nil

    def reset(self, seed: Optional[int] = None) -> None:
        self.inner.reset(seed)
        self.heuristic.reset(seed)

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        phase = observation_view(obs).phase
        if phase == PHASE_BIDDING or (self.blind_nil and phase == PHASE_BLIND_DECISION):
            return self.heuristic.act(obs, info)
        return self.inner.act(obs, info)


class HeuristicBlindNil(HeuristicBids):
    """The policy, except that the heuristic makes the blind-nil decision (bid it, or look)."""

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        if observation_view(obs).phase == PHASE_BLIND_DECISION:
            return self.heuristic.act(obs, info)
        return self.inner.act(obs, info)


class HeuristicCards(HeuristicBids):
    """The policy's bids (and blind-nil decision) with the heuristic's passing and card play."""

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        phase = observation_view(obs).phase
        if phase in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            return self.inner.act(obs, info)
        return self.heuristic.act(obs, info)


class HeuristicNilPlay(HeuristicBids):
    """The policy, except that the heuristic (or ``player``) passes and plays the cards of a side
    that bid nil (or blind nil), both the nil bidder and its partner, from the end of the bidding on."""

    def __init__(self, player: str = "heuristic", **options) -> None:
        super().__init__(player=player, **options)

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        view = observation_view(obs)
        side_bid_nil = 0 in (view.bids[0], view.bids[2]) or view.blind[0] or view.blind[2]
        if side_bid_nil and view.phase not in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            return self.heuristic.act(obs, info)
        return self.inner.act(obs, info)


class NilDefence(HeuristicBids):
    """The policy, except that ``player`` (the heuristic, or ``search``) passes and plays its cards
    (with ``leads_only``, only its leads) while an opponent's nil (with ``blind_only``, a blind nil)
    is intact, that is while the opponent who bid it has taken no trick: how much better would
    another card play break them?"""

    def __init__(self, player: str = "heuristic", blind_only: bool = False, leads_only: bool = False,
                 **options) -> None:
        super().__init__(player=player, **options)
        self.blind_only, self.leads_only = blind_only, leads_only

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        view = observation_view(obs)
        if self.leads_only and (view.phase != PHASE_PLAY or view.current_trick):
            return self.inner.act(obs, info)
        if view.phase not in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            if any(view.blind[s] or not self.blind_only for s in intact_opponent_nils(view)):
                return self.heuristic.act(obs, info)
        return self.inner.act(obs, info)


def no_set_possible(obs: dict) -> bool:
    """A card decision where both sides are past their contracts and no nil is intact: every
    trick left is a bag for whoever takes it (:func:`agents.heuristic.only_bags_left`'s strict test)."""
    return heuristic.only_bags_left(observation_view(obs), obs["action_mask"], no_set_possible=True)


def _games(name: str, games: int, seed: int, workers: int, checkpoint: Optional[str] = None,
           baseline: Optional[str] = None) -> int:
    from evaluation import main as spades_eval
    policy = baseline or (f"neural:checkpoint={checkpoint}" if checkpoint else "neural")
    if checkpoint:
        name = f"{name}:checkpoint={checkpoint}"
    return spades_eval(["--team-a", name, "--baseline", policy, "--team-b", "heuristic", "--games", str(games),
                        "--duplicate", "--workers", str(workers), "--seed", str(seed), "--no-progress"])


def _game_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags every game-playing probe shares."""
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--checkpoint", help="the policy probed (default: the shipped neural)")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    from evaluation.cli_common import OneLineParser          # errors in one line, not the usage block
    parser = OneLineParser(prog="python -m train.experimental.probes", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="probe", required=True)
    for name, flag, helptext in (("bid-plus", "--share", "share of bids 1..12 raised by one"),
                                 ("blind-nil-at", "--threshold", "blind nil above this probability")):
        _game_flags(sub.add_parser(name)).add_argument(flag, type=float, required=True, help=helptext)
    ratio = _game_flags(sub.add_parser("bid-ratio"))
    ratio.add_argument("--ratio", type=float, required=True, help="raise b to b+1 where p(b+1) >= ratio * p(b)")
    ratio.add_argument("--min-bags", type=int, default=0, help="only where the side carries this many bags")
    tilt = _game_flags(sub.add_parser("bid-tilt"))
    tilt.add_argument("--tilt", type=float, required=True, help="added to a bid's log-probability per trick above 1")
    tilt.add_argument("--keep-nil", action="store_true", help="leave the policy's nil bids as they are")
    tilt.add_argument("--partner-bid-tilt", type=float, help="the tilt where the partner has bid already")
    tilt.add_argument("--bags-tilt", metavar="K:T", help="the tilt T where the side carries K bags or more")
    tilt.add_argument("--lead-tilt", metavar="S:T", help="the tilt T where the side leads with S points or more")
    tilt.add_argument("--trail-tilt", metavar="S:T", help="the tilt T where the other side leads with S points or more")
    tilt.add_argument("--their-bags-tilt", metavar="K:T", help="the tilt T where the other side carries K bags or more")
    tilt.add_argument("--partner-blind-nil-tilt", type=float, help="the tilt where the partner has bid blind nil")
    tilt.add_argument("--their-blind-nil-tilt", type=float, help="the tilt where an opponent has bid blind nil")
    tilt.add_argument("--their-nil-tilt", type=float, help="the tilt where an opponent has bid nil or blind nil")
    tilt.add_argument("--baseline", help="the policy compared, paired (default: the probed policy unchanged)")
    bids = _game_flags(sub.add_parser("heuristic-bids", help="the policy's card play with the heuristic's bids"))
    bids.add_argument("--own-blind-nil", action="store_true", help="the policy keeps its own blind-nil decision")
    _game_flags(sub.add_parser("heuristic-blind-nil", help="the heuristic's blind-nil decision, the policy's all else"))
    _game_flags(sub.add_parser("heuristic-cards", help="the policy's bids with the heuristic's card play"))
    nil_play = _game_flags(sub.add_parser("heuristic-nil-play", help="the heuristic plays the hands where the side bid nil"))
    nil_play.add_argument("--player", default="heuristic", help="who plays them instead (an agent spec: search, ...)")
    defence = _game_flags(sub.add_parser("nil-defence", help="another player plays while an opponent's nil is intact"))
    defence.add_argument("--player", default="heuristic", help="who plays then (an agent spec: heuristic, search, ...)")
    defence.add_argument("--blind-only", action="store_true", help="only against a blind nil")
    defence.add_argument("--leads-only", action="store_true", help="only the cards the side leads to a trick")
    labels = sub.add_parser("strict-ducking-labels", help="spades-label --only ducking, where no set is possible")
    labels.add_argument("label_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.probe == "strict-ducking-labels":
        import train.labelling.labeller as labeller
        from train.labelling.cli import main as label_main
        labeller.ducking_position = no_set_possible       # the labeller's workers fork after this
        rest = args.label_args[1:] if args.label_args[:1] == ["--"] else args.label_args
        return label_main(rest)
    if args.probe == "bid-ratio":
        if not 0.0 <= args.ratio:
            parser.error(f"--ratio {args.ratio}: expected a ratio of probabilities, 0 or more")
        agents.register("neural_bid_ratio", lambda **o: BidRatio(args.ratio, args.min_bags, **o))
        return _games("neural_bid_ratio", args.games, args.seed, args.workers, args.checkpoint)
    if args.probe == "bid-tilt":
        from train.bids.bid_tilt import MAX_TILT, threshold_and_tilt

        def check_tilt(flag: str, value: Optional[float]) -> None:
            if value is not None and not (math.isfinite(value) and abs(value) <= MAX_TILT):
                parser.error(f"{flag} {value}: expected a finite tilt from -{MAX_TILT:g} to {MAX_TILT:g} "
                             "(log-probability per trick of bid)")

        for flag in ("--tilt", "--partner-bid-tilt", "--partner-blind-nil-tilt", "--their-blind-nil-tilt",
                     "--their-nil-tilt"):
            check_tilt(flag, getattr(args, flag[2:].replace("-", "_")))

        def context_tilt(flag: str, text: Optional[str], what: str) -> Optional[tuple[int, float]]:
            if text is None:
                return None
            try:
                threshold, tilt = threshold_and_tilt(text)
            except ValueError:
                parser.error(f"{flag} {text!r}: expected {what} and a tilt, as K:T (e.g. 7:2.0)")
            check_tilt(flag, tilt)
            return threshold, tilt
        bags_tilt = context_tilt("--bags-tilt", args.bags_tilt, "a bag count")
        lead_tilt = context_tilt("--lead-tilt", args.lead_tilt, "a score")
        trail_tilt = context_tilt("--trail-tilt", args.trail_tilt, "a score")
        their_bags_tilt = context_tilt("--their-bags-tilt", args.their_bags_tilt, "a bag count")
        agents.register("neural_bid_tilt", lambda **o: BidTilt(args.tilt, args.keep_nil, args.partner_bid_tilt,
                                                               bags_tilt, lead_tilt, trail_tilt, their_bags_tilt,
                                                               args.their_nil_tilt, args.partner_blind_nil_tilt,
                                                               args.their_blind_nil_tilt, **o))
        return _games("neural_bid_tilt", args.games, args.seed, args.workers, args.checkpoint, args.baseline)
    if args.probe == "heuristic-bids":
        agents.register("neural_heuristic_bids", lambda **o: HeuristicBids(not args.own_blind_nil, **o))
        return _games("neural_heuristic_bids", args.games, args.seed, args.workers, args.checkpoint)
    if args.probe == "heuristic-blind-nil":
        agents.register("neural_heuristic_blind_nil", lambda **o: HeuristicBlindNil(**o))
        return _games("neural_heuristic_blind_nil", args.games, args.seed, args.workers, args.checkpoint)
    if args.probe == "heuristic-cards":
        agents.register("neural_heuristic_cards", lambda **o: HeuristicCards(**o))
        return _games("neural_heuristic_cards", args.games, args.seed, args.workers, args.checkpoint)
    if args.probe == "heuristic-nil-play":
        agents.register("neural_heuristic_nil_play", lambda **o: HeuristicNilPlay(args.player, **o))
        return _games("neural_heuristic_nil_play", args.games, args.seed, args.workers, args.checkpoint)
    if args.probe == "nil-defence":
        agents.register("neural_nil_defence", lambda **o: NilDefence(args.player, args.blind_only, args.leads_only, **o))
        return _games("neural_nil_defence", args.games, args.seed, args.workers, args.checkpoint)
    if args.probe == "bid-plus":
        if not 0.0 <= args.share <= 1.0:
            parser.error(f"--share {args.share}: expected a share from 0 to 1")
        agents.register("neural_bid_plus", lambda **o: BidPlus(args.share, **o))
        return _games("neural_bid_plus", args.games, args.seed, args.workers, args.checkpoint)
    if not 0.0 <= args.threshold < 1.0:
        parser.error(f"--threshold {args.threshold}: expected a probability from 0 to 1")
    agents.register("neural_blind_nil_at", lambda **o: BlindNilAt(args.threshold, **o))
    return _games("neural_blind_nil_at", args.games, args.seed, args.workers, args.checkpoint)

