"""What a searching seat knows of the hidden cards, how it samples them, and how it chooses
among candidates from their values in the sampled worlds.

Shared by the readable search (:mod:`agents.search`) and its C backend's driver
(:mod:`agents.native_search`), which must sample and choose exactly alike.
"""

from __future__ import annotations

import math
from math import comb
from typing import Optional, Sequence

from spades_env.cards import SUIT_MASKS, cards_to_mask, mask_to_cards
from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION
from spades_env.observation import ObservationView

from .heuristic_decisions import deck_mask

# ====================================================================== what the seat knows
class Knowledge:
    """What the observing seat (seat 0 of the simulation frame) knows about the hidden cards.

    ``unseen``: cards of the deck (a short deck's only) it has not seen (not in its hand, not played); ``known[s]``: unseen cards
    known to sit in seat ``s``'s hand (cards this seat passed to its partner and the partner has
    not played); ``sizes[s]``: cards seat ``s`` holds now; ``voids[s]``: suit bitmask of the
    suits seat ``s`` has shown void in. ``hidden_seats``: the seats whose hands are sampled (all
    but seat 0, and seat 0 too while it has not looked at its cards)."""

    def __init__(self, view: ObservationView) -> None:
        n = self.n = view.players
        self.tricks_per_hand = view.tricks_per_hand
        deck = deck_mask(n, self.tricks_per_hand)      # a short deck's worlds hold only its cards
        self.hand = cards_to_mask(view.hand)
        self.played = [cards_to_mask(p) for p in view.played]
        played_all = 0
        for m in self.played:
            played_all |= m
        self.played_all = played_all
        self.voids = [sum(1 << x for x in v) for v in view.voids]
        self.sizes = [self.tricks_per_hand - len(view.played[s]) for s in range(n)]
        self.looked = bool(view.hand) or view.phase not in (PHASE_BLIND_DECISION, PHASE_BIDDING)
        self.unseen = deck & ~self.hand & ~played_all
        self.known = [0] * n
        if view.partnerships and view.passed:
            # Cards we passed (blind-nil passing happens only between partners) and do not hold
            # again are in the partner's hand until it plays them.
            self.known[2] = cards_to_mask(view.passed) & self.unseen
        if self.looked:
            self.hidden_seats = list(range(1, n))
        else:
            self.hidden_seats = list(range(n))
            self.hand = 0

    def free(self) -> int:
        """The unseen cards not known to be in a particular hand."""
        m = self.unseen
        for k in self.known:
            m &= ~k
        return m

    def sampler(self) -> "DealSampler":
        free = self.free()
        seats = self.hidden_seats
        caps = [self.sizes[s] - self.known[s].bit_count() for s in seats]
        return DealSampler(free, caps, [self.voids[s] for s in seats])

    def hands_from(self, sample: Sequence[int]) -> list[int]:
        """Full per-seat hands (absolute frame) from a sampler draw."""
        hands = [0] * self.n
        if self.looked:
            hands[0] = self.hand
        for i, s in enumerate(self.hidden_seats):
            hands[s] = sample[i] | self.known[s]
        return hands


class DealSampler:
    """Uniform sampling of deals of ``free`` cards to seats with capacities ``caps`` (cards
    each must get) where seat ``i`` takes no card of a suit set in ``voids[i]``.

    A deal is determined by its per-suit counts matrix and a uniform arrangement within each
    suit; the number of deals with counts ``n[i][x]`` is the product over suits of multinomials.
    ``_count(x, caps)`` counts the deals of suits ``x..3`` into the remaining capacities
    (memoized); drawing splits suit by suit with weights ``multinomial * count(rest)`` gives
    every consistent deal the same probability. Without a binding void a shuffle is enough."""

    def __init__(self, free: int, caps: Sequence[int], voids: Sequence[int]) -> None:
        self.k = len(caps)
        self.caps = tuple(caps)
        self.by_suit = [mask_to_cards(free & SUIT_MASKS[x]) for x in range(4)]
        self.free_cards = mask_to_cards(free)
        if sum(caps) != len(self.free_cards) or min(caps, default=0) < 0:
            raise ValueError(f"inconsistent knowledge: {len(self.free_cards)} free cards for capacities {list(caps)}")
        self.allowed = [[i for i in range(self.k) if not voids[i] >> x & 1] for x in range(4)]
        self.simple = all(len(self.allowed[x]) == self.k or not self.by_suit[x] for x in range(4))
        self._memo: dict = {}
        self.total = 1 if self.simple else self._count(0, self.caps)
        if self.total == 0:
            raise ValueError("inconsistent knowledge: no deal satisfies the voids and hand sizes")

    def _splits(self, x: int, caps: tuple):
        """(counts per seat, multinomial weight) for the splits of suit ``x`` within ``caps``."""
        u = len(self.by_suit[x])
        allowed = self.allowed[x]
        out = []
        k = self.k

        def rec(j: int, left: int, counts: list, weight: int) -> None:
            if j == len(allowed) - 1:
                i = allowed[j]
                if left <= caps[i]:
                    counts[i] = left
                    out.append((tuple(counts), weight))
                    counts[i] = 0
                return
            i = allowed[j]
            rest_cap = sum(caps[a] for a in allowed[j + 1:])
            for c in range(max(0, left - rest_cap), min(caps[i], left) + 1):
                counts[i] = c
                rec(j + 1, left - c, counts, weight * comb(left, c))
            counts[i] = 0

        if not allowed:
            if u == 0:
                out.append(((0,) * k, 1))
            return out
        rec(0, u, [0] * k, 1)
        return out

    def _count(self, x: int, caps: tuple) -> int:
        if x == 4:
            return 1 if not any(caps) else 0
        key = (x, caps)
        got = self._memo.get(key)
        if got is not None:
            return got
        total = 0
        for counts, w in self._splits(x, caps):
            rest = tuple(c - n for c, n in zip(caps, counts))
            sub = self._count(x + 1, rest)
            if sub:
                total += w * sub
        self._memo[key] = total
        return total

    def sample(self, rng) -> list[int]:
        """One deal: a card bitmask per seat (in the order of ``caps``)."""
        k = self.k
        hands = [0] * k
        if self.simple:
            cards = list(self.free_cards)
            rng.shuffle(cards)
            pos = 0
            for i, c in enumerate(self.caps):
                for card in cards[pos:pos + c]:
                    hands[i] |= 1 << card
                pos += c
            return hands
        caps = self.caps
        for x in range(4):
            suit_cards = self.by_suit[x]
            if not suit_cards:
                continue
            options = []
            total = 0
            for counts, w in self._splits(x, caps):
                rest = tuple(c - n for c, n in zip(caps, counts))
                weight = w * self._count(x + 1, rest)
                if weight:
                    total += weight
                    options.append((total, counts, rest))
            r = rng.randrange(total)
            for cum, counts, rest in options:
                if r < cum:
                    break
            cards = list(suit_cards)
            rng.shuffle(cards)
            pos = 0
            for i in range(k):
                for card in cards[pos:pos + counts[i]]:
                    hands[i] |= 1 << card
                pos += counts[i]
            caps = rest
        return hands


# ====================================================================== choosing
def pick_candidate(candidates: list[int], values: list[list[float]], weights: list[float], base_action: int,
          min_gain: float, min_z: float, bonus: Optional[Sequence[float]] = None
          ) -> tuple[int, list[float], list[Optional[float]]]:
    """The chosen action, the weighted mean value of every candidate, and each candidate's
    z score against the base action (the heuristic's choice, or the guide's): the paired (same
    world) mean difference over its standard error, the worlds' count being their effective
    number (sum of weights)^2 / sum of squared weights. A candidate other than the base is
    taken only when it beats the base by more than ``min_gain`` points and by ``min_z``
    standard errors; the best mean among those wins. ``bonus`` (points per candidate, e.g. a
    guide's prior) is added to the means before they are compared (the returned means
    exclude it; the z scores include it)."""
    total = sum(weights)
    k = len(candidates)
    means = [sum(w * row[i] for w, row in zip(weights, values)) / total for i in range(k)]
    scores = means if bonus is None else [m + float(x) for m, x in zip(means, bonus)]
    if base_action not in candidates:
        best = max(range(k), key=lambda i: scores[i])
        return candidates[best], means, [None] * k
    b = candidates.index(base_action)
    n_eff = total * total / sum(w * w for w in weights)
    zs: list[Optional[float]] = []
    best, best_score = b, scores[b]
    for i in range(k):
        if i == b:
            zs.append(None)
            continue
        gain = scores[i] - scores[b]
        spread = means[i] - means[b]
        var = sum(w * (row[i] - row[b] - spread) ** 2 for w, row in zip(weights, values)) / total
        se = math.sqrt(var / n_eff) if n_eff > 1 else float("inf")
        z = gain / se if se > 0 else (math.inf if gain > 0 else (0.0 if gain == 0 else -math.inf))
        zs.append(z)
        if gain > min_gain and z > min_z and scores[i] > best_score:
            best, best_score = i, scores[i]
    return candidates[best], means, zs


def drop_losers(active: list[int], values: list[list[Optional[float]]], weights: list[float],
                 base: Optional[int], drop_z: float) -> tuple[list[int], list[int]]:
    """Split the active candidates into those kept and those dropped: a candidate is dropped
    when its paired mean difference to the best one so far is below ``-drop_z`` standard
    errors (never the best one, never the heuristic's choice ``base``)."""
    total = sum(weights)
    n_eff = total * total / sum(w * w for w in weights)
    means = {i: sum(w * row[i] for w, row in zip(weights, values)) / total for i in active}
    best = max(active, key=lambda i: means[i])
    kept, out = [], []
    for i in active:
        if i in (best, base):
            kept.append(i)
            continue
        d = means[i] - means[best]
        var = sum(w * (row[i] - row[best] - d) ** 2 for w, row in zip(weights, values)) / total
        se = math.sqrt(var / n_eff) if n_eff > 1 else float("inf")
        (out if d < -drop_z * se else kept).append(i)
    return kept, out


