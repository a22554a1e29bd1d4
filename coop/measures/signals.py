"""Signalling and listening: ``spades-coop signals SPEC``.

Measured from the agent's own play on duplicate deals (the agent on both seats of a partnership,
against an opponent team), except where a partner is needed that does something specific:

- ``bid_calibration``: per bid, how many tricks the bidder took and how often it made its bid
  (a nil is made when it takes none).
- ``bid_information``: how much a bid tells about the hand, in bits: the mutual information
  between the bid (blind nil its own value) and the hand's trick potential (the heuristic's
  ``estimate_tricks``, rounded, 7 and more together). The plug-in estimate is biased upwards on
  finite samples, so the mean over shuffled bids (the same bids, paired with hands at random: the
  *control*, which holds no information) is subtracted; the interval is a bootstrap over deals.
  A bidder whose bid never changes tells nothing: exactly 0.
- ``bid_information_hand``: how much a bid tells about the hand itself, whatever the convention
  (the number of hearts as well as the trick count): a decoder of the bid from hand features,
  fitted on some deals and scored on others, minus a shuffled control (coop/measures/bid_decoder.py).
- ``listening``: at the agent's decisions where its partner has bid (not nil, not blind), the
  partner's bid in the agent's observation (and the side's contract with it) is replaced by
  another bid, and the agent asked again from the same seed: the share of decisions whose choice
  changes (Wilson interval). ``listening_control`` asks again with nothing changed (an agent that
  is not a function of its observation and seed shows up there). An agent that ignores its
  partner's bid scores exactly 0. ``listening_to_leads`` does the same with the card the partner
  led to the current trick (the agent plays third to it), replaced by an unseen card of the same
  suit, so that what is legal stays the same. ``listening_on_distribution`` swaps the partner's
  bid for one drawn from the bids the agent (the partner's copy) makes on similar hands (trick
  potential within 1 of the partner's hand), not a uniform 1..13; ``listening_kl`` is the size of
  the policy's change there, the mean KL divergence in bits between its action distributions
  (for agents that expose ``action_probabilities``, such as neural ones).
- ``nil_cover``: the agent beside a partner that bids nil often (``heuristic:nil=eager``): the
  share of the partner's nil bids that survive; ``nil_cover_reference`` is that partner's own copy
  in the agent's seat on the same deals.
- ``lead_reply``: when the agent leads, what its partner (its own copy) does third to the trick,
  by the suit led: overtakes, follows low, trumps or discards.
- Under rules with ``signals`` (the free signal): ``message_information_hand``, ``message_use``
  and ``message_listening`` (with its phases, control and KL): coop/measures/messages.py.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from spades_env.cards import parse_card
from spades_env.observation import BID_SLOTS, layout_for

from coop.measures.bid_decoder import bid_information_hand, hand_features
from coop.common import (PlayerCache, check_positive, kl_bits, kl_bootstrap, partner_decisions, probe_answers,
                         value_dict)
from evaluation.matches import Team, derive_seed, match_config, play_matches, resolve_rules
from evaluation.outcomes import EvaluationError
from evaluation.statistics import t_quantile, wilson_interval

POTENTIAL_BUCKETS = 8           # rounded estimate 0..6, and 7 or more
BLIND_NIL_LABEL = 14
NIL_PARTNER = "heuristic:nil=eager"
NIL_PARTNER_FALLBACK = "heuristic"
SUITS = ("clubs", "diamonds", "hearts", "spades")
REPLIES = ("overtook", "followed low", "trumped", "discarded")


# ------------------------------------------------------------------ mutual information
def mutual_information(x: np.ndarray, y: np.ndarray) -> float:
    """Plug-in mutual information (bits) between two label arrays of small non-negative ints."""
    n = len(x)
    if n == 0:
        return 0.0
    joint = np.zeros((int(x.max()) + 1, int(y.max()) + 1))
    np.add.at(joint, (x, y), 1.0)
    joint /= n
    px, py = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    return float(max(0.0, (joint[nz] * np.log2(joint[nz] / (px @ py)[nz])).sum()))


def bid_information(bids: np.ndarray, potential: np.ndarray, units: np.ndarray, seed: int,
                    shuffles: int = 100, blocks: int = 20, block_shuffles: int = 20) -> dict:
    """Mutual information minus the shuffled-label control, with a delete-a-block jackknife
    interval over deals (a bootstrap would not do: resampling with repeats adds spurious
    information of its own, and plug-in MI is biased by it)."""
    rng = np.random.default_rng(seed)

    def corrected(b: np.ndarray, p: np.ndarray, k: int) -> float:
        return mutual_information(b, p) - float(np.mean([mutual_information(rng.permutation(b), p) for _ in range(k)]))

    raw = mutual_information(bids, potential)
    control = raw - corrected(bids, potential, shuffles)
    value = raw - control
    distinct = np.unique(units)
    g = min(blocks, len(distinct))
    if g < 2:
        return value_dict(value, None, None, raw=raw, control=control, hands=int(len(bids)))
    block_of = {u: i % g for i, u in enumerate(distinct.tolist())}
    block = np.array([block_of[u] for u in units.tolist()])
    thetas = np.array([corrected(bids[block != i], potential[block != i], block_shuffles) for i in range(g)])
    se = math.sqrt((g - 1) / g * float(((thetas - thetas.mean()) ** 2).sum()))
    q = t_quantile(0.95, g - 1)
    return value_dict(value, value - q * se, value + q * se, raw=raw, control=control, hands=int(len(bids)),
                      method=f"plug-in MI minus mean over shuffled bids; jackknife over {g} blocks of deals")


def potential_bucket(hand: list[int]) -> int:
    from agents.heuristic import estimate_tricks
    return int(min(POTENTIAL_BUCKETS - 1, max(0, round(estimate_tricks(hand)))))


# ------------------------------------------------------------------ records
def _agent_seats(play: int) -> tuple[int, int]:
    return (0, 2) if play == 0 else (1, 3)


def _trick_reply(cards: list[int]) -> str:
    """The third card's reply to the lead (cards in play order)."""
    led = cards[0] // 13
    best = cards[0]
    for c in cards[1:2]:
        if (c // 13 == best // 13 and c > best) or (c // 13 == 3 and best // 13 != 3):
            best = c
    reply = cards[2]
    if reply // 13 == led:
        return "overtook" if best // 13 == led and reply > best else "followed low"
    return "trumped" if reply // 13 == 3 else "discarded"


def read_selfplay(outcomes, rules) -> dict:
    """Bids, potentials and lead replies of the agent's seats in its self-play records."""
    from coop.measures.messages import decoder_ranks
    ranks = decoder_ranks(rules)
    bids, potential, units, taken, features = [], [], [], [], []
    lead_reply = np.zeros((4, len(REPLIES)), dtype=np.int64)
    for unit, plays in enumerate(outcomes):
        for o in plays:
            seats = _agent_seats(o.play)
            for hand in o.record["hands"]:
                for s in seats:
                    cards = [parse_card(c) for c in hand["deal"][s]]
                    bid = hand["bids"][s]
                    bids.append(BLIND_NIL_LABEL if hand["blind"][s] else bid)
                    potential.append(potential_bucket(cards))
                    features.append(hand_features(cards, potential[-1], ranks=ranks))
                    units.append(unit)
                    taken.append(hand["tricks_taken"][s])
                for trick in hand["tricks"]:
                    if trick["leader"] in seats and len(trick["cards"]) >= 3:
                        cards = [parse_card(c) for c in trick["cards"]]
                        lead_reply[cards[0] // 13, REPLIES.index(_trick_reply(cards))] += 1
    return {"bids": np.array(bids, dtype=np.int64), "potential": np.array(potential, dtype=np.int64),
            "units": np.array(units, dtype=np.int64), "taken": np.array(taken, dtype=np.int64),
            "lead_reply": lead_reply, "features": np.array(features).reshape(len(bids), -1)}


def calibration(bids: np.ndarray, taken: np.ndarray) -> dict:
    """Per bid: hands, mean tricks taken, made rate; overall mean (taken - bid) over non-nil bids."""
    by_bid = []
    for b in sorted(set(bids.tolist())):
        mask = bids == b
        made = taken[mask] == 0 if b in (0, BLIND_NIL_LABEL) else taken[mask] >= b
        by_bid.append({"bid": "blind nil" if b == BLIND_NIL_LABEL else int(b), "hands": int(mask.sum()),
                       "tricks_mean": float(taken[mask].mean()), "made_rate": float(made.mean())})
    plain = (bids > 0) & (bids != BLIND_NIL_LABEL)
    return {"by_bid": by_bid, "overtricks_mean": float((taken[plain] - bids[plain]).mean()) if plain.any() else None,
            "mean_bid": float(bids[plain].mean()) if plain.any() else None,
            "nil_share": float(np.isin(bids, (0, BLIND_NIL_LABEL)).mean()) if len(bids) else None}


def nil_cover_rate(outcomes) -> tuple[int, int]:
    """(partner nil bids, of them kept): the partner sits on the team's second seat."""
    bids = kept = 0
    for plays in outcomes:
        for o in plays:
            partner = _agent_seats(o.play)[1]
            for hand in o.record["hands"]:
                if hand["bids"][partner] == 0:
                    bids += 1
                    kept += hand["tricks_taken"][partner] == 0
    return bids, kept


def _rate(successes: int, n: int, **extra: Any) -> dict:
    if n == 0:
        return value_dict(None, None, None, n=0, **extra)
    iv = wilson_interval(successes, n)
    low = 0.0 if successes == 0 else iv.low         # exact at the ends (no rounding residue)
    high = 1.0 if successes == n else iv.high
    return value_dict(successes / n, low, high, n=n, **extra)


# ------------------------------------------------------------------ listening
def _changed_bid(obs: np.ndarray, at: dict, tricks: int, rng) -> Optional[np.ndarray]:
    """The observation with the partner's (plain, not blind) bid replaced by another; None when
    the partner has no such bid."""
    row = obs[at["bids"]:at["bids"] + BID_SLOTS]
    bid = int(np.argmax(row[:14])) if row[:14].any() else None
    if not bid or row[14]:
        return None
    other = int(rng.choice([b for b in range(1, tricks + 1) if b != bid]))
    changed = obs.copy()
    changed[at["bids"] + bid], changed[at["bids"] + other] = 0.0, 1.0
    changed[at["contract"]] += (other - bid) / tricks
    return changed


def _swapped_bid(obs: np.ndarray, at: dict, tricks: int, bid_pool: dict, partner_bucket: int,
                 rng) -> Optional[np.ndarray]:
    """The observation with the partner's plain bid swapped for another bid the partner's copy
    makes on similar hands (``bid_pool``: trick-potential bucket -> its plain bids in self-play;
    buckets within 1 of the partner's hand), else any of its bids; None without a plain partner
    bid or another bid to swap in."""
    row = obs[at["bids"]:at["bids"] + BID_SLOTS]
    bid = int(np.argmax(row[:14])) if row[:14].any() else None
    if not bid or row[14]:
        return None
    near = [b for k in range(partner_bucket - 1, partner_bucket + 2) for b in bid_pool.get(k, ()) if b != bid]
    near = near or [b for bids in bid_pool.values() for b in bids if b != bid]
    if not near:
        return None
    other = int(near[int(rng.integers(len(near)))])
    changed = obs.copy()
    changed[at["bids"] + bid], changed[at["bids"] + other] = 0.0, 1.0
    changed[at["contract"]] += (other - bid) / tricks
    return changed


def _changed_lead(obs: np.ndarray, at: dict, rng, lowest_rank: int = 0) -> Optional[np.ndarray]:
    """The observation with the card the partner led to the current trick replaced by another
    unseen card of the same suit (what is legal stays the same; of the deck's ranks, from
    ``lowest_rank``); None when the partner did not lead the current trick or no such card is left."""
    if obs[at["leader"]] < 0.5:
        return None
    trick_row = obs[at["trick"]:at["trick"] + 52]
    if not trick_row.any():
        return None
    card = int(np.argmax(trick_row))
    seen = obs[at["hand"]:at["hand"] + 52] + obs[at["played"]:at["played"] + 4 * 52].reshape(4, 52).sum(0)
    seen += obs[at["all_tricks"]:at["all_tricks"] + 4 * 52].reshape(4, 52).sum(0)
    suit = card // 13
    unseen = [c for c in range(13 * suit + lowest_rank, 13 * suit + 13) if seen[c] < 0.5]
    if not unseen:
        return None
    other = int(rng.choice(unseen))
    changed = obs.copy()
    for base in (at["trick"], at["partner_played"]):
        changed[base + card], changed[base + other] = 0.0, 1.0
    return changed


def listening(player, opponent, rules, deals: int, seed: int, progress: bool = False,
              bid_pool: Optional[dict] = None) -> dict:
    """Ask the agent again with its partner's bid, or the card its partner led, changed in its
    observation (module docstring); with ``bid_pool`` (trick-potential bucket -> the plain bids
    the agent made there) also with the bid swapped on the partner's own distribution."""
    blocks = layout_for(rules).obs_blocks
    at = {"bids": blocks["bids"].offset + 2 * BID_SLOTS,            # the partner's rows (relative seat 2)
          "contract": blocks["sides"].offset + 6,                    # own side's contract / T
          "leader": blocks["trick_leader"].offset + 2,
          "trick": blocks["current_trick"].offset + 2 * 52,
          "partner_played": blocks["played"].offset + 2 * 52,
          "all_tricks": blocks["current_trick"].offset, "played": blocks["played"].offset,
          "hand": blocks["hand"].offset}
    rng = np.random.default_rng(derive_seed("spades-coop", "listening", seed))
    probe = player.factory()
    counts = {"bidding": [0, 0], "play": [0, 0], "lead": [0, 0], "on": [0, 0]}
    unstable = asked = 0
    on_rng = np.random.default_rng(derive_seed("spades-coop", "listening-on-distribution", seed))
    kl_by_deal = np.zeros(deals)
    probes_by_deal = np.zeros(deals)     # on-distribution probes per deal: the KL's denominators
    with_probabilities = hasattr(probe, "action_probabilities")
    for k, deal, seat, obs, info in partner_decisions(player, opponent, rules, deals, seed, "listening", progress):
        vector, mask = obs["observation"], obs["action_mask"]
        phase = "bidding" if any(mask[52:66]) else "play"
        for kind, changed in ((phase, _changed_bid(vector, at, rules.tricks_per_hand, rng)),
                              ("lead", _changed_lead(vector, at, rng, rules.lowest_rank)
                               if phase == "play" else None)):
            if changed is None:
                continue
            probe_seed = derive_seed("spades-coop", "probe", seed, k, seat, int(rng.integers(1 << 30)))
            answers = probe_answers(probe, probe_seed, (vector, changed, vector), mask, info)
            counts[kind][0] += 1
            counts[kind][1] += int(answers[1] != answers[0])
            asked += 1
            unstable += int(answers[2] != answers[0])
        swapped = None if bid_pool is None else _swapped_bid(
            vector, at, rules.tricks_per_hand, bid_pool, potential_bucket(deal[(seat + 2) % 4]), on_rng)
        if swapped is not None:
            probe_seed = derive_seed("spades-coop", "probe-on", seed, k, seat, int(on_rng.integers(1 << 30)))
            answers = probe_answers(probe, probe_seed, (vector, swapped), mask, info)
            counts["on"][0] += 1
            probes_by_deal[k] += 1
            counts["on"][1] += int(answers[1] != answers[0])
            if with_probabilities:
                kl_by_deal[k] += kl_bits(probe.action_probabilities({"observation": vector, "action_mask": mask}),
                                          probe.action_probabilities({"observation": swapped,
                                                                      "action_mask": mask}))
    probes = counts["bidding"][0] + counts["play"][0]
    changed = counts["bidding"][1] + counts["play"][1]
    return {"listening": _rate(changed, probes, method="share of choices changed by the partner's bid; Wilson"),
            "listening_by_phase": {phase: _rate(counts[phase][1], counts[phase][0]) for phase in ("bidding", "play")},
            "listening_to_leads": _rate(counts["lead"][1], counts["lead"][0],
                                        method="share of choices changed by the card the partner led; Wilson"),
            "listening_control": _rate(unstable, asked, method="asked twice with nothing changed"),
            "listening_on_distribution": _rate(counts["on"][1], counts["on"][0],
                                               method="share of choices changed by the partner's bid swapped for "
                                                      "one its copy makes on similar hands; Wilson"),
            "listening_kl": _kl_summary(kl_by_deal, probes_by_deal, with_probabilities,
                                        derive_seed("spades-coop", "listening-kl", seed))}


def _kl_summary(kl_by_deal: np.ndarray, probes_by_deal: np.ndarray, available: bool, seed: int,
                resamples: int = 1000) -> dict:
    """The listening KL's interval (:func:`coop.common.kl_bootstrap`)."""
    return kl_bootstrap(kl_by_deal, probes_by_deal, available, seed, resamples=resamples,
                        method="mean KL(policy with the real bid || with an on-distribution swap), bits; "
                               "percentile bootstrap over deals")


# ------------------------------------------------------------------ the measurement
def measure_signals(agent: Any, *, deals: int = 100, seed: int = 0, opponent: str = "heuristic",
                    rules: Any = "standard", workers: Optional[int] = None, progress: bool = False,
                    nil_partner: Optional[str] = None) -> dict:
    """Everything ``spades-coop signals`` writes, for ``agent`` (a spec or a factory)."""
    check_positive(deals, "deals")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EvaluationError(f"seed={seed!r}: expected an integer")
    rules = resolve_rules(rules)
    if not rules.partnerships:
        raise EvaluationError(f"rules {rules.name!r} have no partnerships: signals need a partner")
    cache = PlayerCache()
    player, opp = cache.get(agent), cache.get(opponent)
    if nil_partner is None:
        nil_partner = NIL_PARTNER
        try:
            cache.get(NIL_PARTNER).factory()
        except Exception:       # the convention options are not there: the plain heuristic
            nil_partner = NIL_PARTNER_FALLBACK
    partner = cache.get(nil_partner)
    match_seed = derive_seed("spades-coop", "signals", seed)
    configs = [match_config(Team(player, player), Team(opp, opp), deals=deals, duplicate=True, rules=rules,
                            seed=match_seed, keep_records=True),
               match_config(Team(player, partner), Team(opp, opp), deals=deals, duplicate=True, rules=rules,
                            seed=match_seed, keep_records=True),
               match_config(Team(partner, partner), Team(opp, opp), deals=deals, duplicate=True, rules=rules,
                            seed=match_seed, keep_records=True)]
    selfplay, beside, reference = play_matches(configs, workers, progress, desc="spades-coop signals")
    data = read_selfplay(selfplay, rules)
    info = bid_information(data["bids"], data["potential"], data["units"], derive_seed("spades-coop", "mi", seed))
    info_hand = bid_information_hand(data["bids"], data["features"], data["units"],
                                     derive_seed("spades-coop", "decoder", seed))
    pool: dict = {}
    for bid, bucket in zip(data["bids"].tolist(), data["potential"].tolist()):
        if 1 <= bid <= rules.tricks_per_hand:
            pool.setdefault(bucket, []).append(bid)
    listened = listening(player, opp, rules, deals, match_seed, progress, bid_pool=pool)
    messages = {}
    if rules.signals:                   # the free signal: what the messages tell and who listens
        from coop.measures.messages import message_information, message_listening, read_messages
        messages = message_information(read_messages(selfplay, rules, _agent_seats), rules.signals,
                                       derive_seed("spades-coop", "message-decoder", seed))
        messages.update(message_listening(player, opp, rules, deals, match_seed, progress))
    lead_reply = data["lead_reply"]
    shares = lead_reply / np.maximum(1, lead_reply.sum(1, keepdims=True))
    return {
        "agent": player.label, "opponent": opp.label, "rules": rules.name, "deals": deals, "seed": seed,
        "bid_information": info,
        "bid_information_hand": info_hand,
        **listened,
        **messages,
        "nil_cover": _rate(*reversed(nil_cover_rate(beside)), partner=partner.label),
        "nil_cover_reference": _rate(*reversed(nil_cover_rate(reference)), partner=partner.label),
        "bid_calibration": calibration(data["bids"], data["taken"]),
        "lead_reply": {"rows": list(SUITS), "columns": list(REPLIES), "counts": lead_reply.tolist(),
                       "shares": [[float(round(v, 6)) for v in row] for row in shares]},
    }


def format_signals(result: dict) -> str:
    def iv(d, fmt):
        if d["value"] is None:
            return "-"
        return f"{fmt.format(d['value'])} [{fmt.format(d['low'])}, {fmt.format(d['high'])}]"
    cal, info = result["bid_calibration"], result["bid_information"]
    lines = [f"signals of {result['agent']} ({result['deals']} duplicate deals vs {result['opponent']}, "
             f"{result['rules']} rules)",
             f"  bid information   {iv(result['bid_information'], '{:.3f}')} bits "
             f"(raw {info['raw']:.3f}, shuffled control {info['control']:.3f})",
             f"  about the hand    {iv(result['bid_information_hand'], '{:.3f}')} bits "
             f"(decoder {result['bid_information_hand']['raw']:.3f}, shuffled control "
             f"{result['bid_information_hand']['control']:.3f})",
             f"  listening         {iv(result['listening'], '{:.3f}')} of {result['listening']['n']} choices "
             f"(control {iv(result['listening_control'], '{:.3f}')})",
             f"  on-distribution   {iv(result['listening_on_distribution'], '{:.3f}')} of "
             f"{result['listening_on_distribution']['n']} choices, KL "
             + (f"{iv(result['listening_kl'], '{:.4f}')} bits" if result["listening_kl"]["value"] is not None
                else "- (no probabilities)"),
             f"  listening, leads  {iv(result['listening_to_leads'], '{:.3f}')} of "
             f"{result['listening_to_leads']['n']} choices",
             f"  nil cover         {iv(result['nil_cover'], '{:.2f}')} of {result['nil_cover']['n']} partner nils "
             f"(partner's copy: {iv(result['nil_cover_reference'], '{:.2f}')})",
             "  calibration       " + ("-" if cal["mean_bid"] is None else
                                       f"mean bid {cal['mean_bid']:.2f}, tricks over bid "
                                       f"{cal['overtricks_mean']:+.2f}, nil share {cal['nil_share']:.3f}"),
             "  made rate by bid  " + ", ".join(f"{b['bid']}: {b['made_rate']:.2f} ({b['hands']})"
                                                for b in cal["by_bid"]),
             "  partner's reply to my lead (shares): " + ", ".join(result["lead_reply"]["columns"])]
    for suit, row in zip(result["lead_reply"]["rows"], result["lead_reply"]["shares"]):
        lines.append(f"    {suit:<9}" + "  ".join(f"{v:5.2f}" for v in row))
    if "message_information_hand" in result:
        from coop.measures.messages import format_messages
        lines[3:3] = format_messages(result)
    return "\n".join(lines)


__all__ = ["measure_signals", "format_signals", "mutual_information", "bid_information", "calibration",
           "listening", "potential_bucket", "NIL_PARTNER"]
