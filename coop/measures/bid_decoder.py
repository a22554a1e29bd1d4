"""How much a bid tells about the hand itself: ``bid_information_hand`` of ``spades-coop signals``.

``bid_information`` (coop/measures/signals.py) asks what a bid tells about one number, the
heuristic's trick estimate, so a convention that encodes anything else reads as no signal: a
bidder that bids its number of hearts scored 0.03 bits there. This measure asks a decoder instead.
A multinomial logistic regression predicts the bid from features of the hand (the length of
every suit, its honours, the trick estimate; :func:`hand_features`), fitted on some deals and
scored on the others (cross-fitting over ``folds`` groups of deals, so every hand is scored by a
decoder that never saw its deal). The information is the cross-entropy of the bid's marginal
(fitted on the same deals) minus the decoder's, in bits per hand. A decoder that learns nothing
real still pays for its fitting noise on unseen deals, so the same estimate with the bids
shuffled among the hands (the *control*, mean over ``shuffles``) is subtracted. The interval is a
percentile bootstrap over deals of the per-hand differences, each resample paired with one
shuffle of the control. A bidder whose bid never changes tells exactly 0; a bid that is a
function of the features tells its entropy (about 2 bits for the number of hearts).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from coop.common import value_dict

SUIT_LENGTHS = 8          # one-hot suit length 0..6, and 7 or more
HONOURS = (12, 11, 10, 9)  # ranks of A, K, Q, J (rank 0 is the two)
POTENTIAL_BUCKETS = 8     # the trick estimate rounded, 7 and more together (as bid_information)


def hand_features(cards: list[int], potential: Optional[int] = None,
                  ranks: tuple[int, ...] = HONOURS) -> np.ndarray:
    """A hand's features for the decoder (binary, no scaling needed): every suit's length
    one-hot (0..6, 7+), every suit's cards of ``ranks`` (A, K, Q and J; on a short deck every
    rank it has: coop/measures/messages.py), and the trick estimate's bucket one-hot."""
    out = np.zeros(4 * SUIT_LENGTHS + 4 * len(ranks) + POTENTIAL_BUCKETS)
    lengths = np.bincount(np.asarray(cards, dtype=np.int64) // 13, minlength=4)
    for suit in range(4):
        out[suit * SUIT_LENGTHS + min(int(lengths[suit]), SUIT_LENGTHS - 1)] = 1.0
    base = 4 * SUIT_LENGTHS
    for card in cards:
        rank = card % 13
        if rank in ranks:
            out[base + (card // 13) * len(ranks) + ranks.index(rank)] = 1.0
    if potential is None:
        from agents.heuristic import estimate_tricks
        potential = int(min(POTENTIAL_BUCKETS - 1, max(0, round(estimate_tricks(list(cards))))))
    out[base + 4 * len(ranks) + potential] = 1.0
    return out


def fit_decoder(x: np.ndarray, y: np.ndarray, classes: int, l2: float = 0.01, steps: int = 300) -> np.ndarray:
    """Multinomial logistic regression (weights with a bias row, L2 on all), by Nesterov's
    accelerated gradient from zero with the step of the loss's smoothness bound: plain numpy,
    deterministic, and strongly convex (the L2), so a few hundred steps reach the optimum."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    onehot = np.eye(classes)[y]
    smooth = 0.5 * float(np.linalg.eigvalsh(xb.T @ xb / len(y))[-1]) + 2 * l2
    mu = 2 * l2
    momentum = (1 - np.sqrt(mu / smooth)) / (1 + np.sqrt(mu / smooth))
    w = ahead = np.zeros((xb.shape[1], classes))
    for _ in range(steps):
        logits = xb @ ahead
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(1, keepdims=True)
        grad = xb.T @ (p - onehot) / len(y) + 2 * l2 * ahead
        if np.abs(grad).max() < 1e-6:            # converged
            return ahead
        w_next = ahead - grad / smooth
        ahead = w_next + momentum * (w_next - w)
        w = w_next
    return w


def _log2_probs(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    logits = np.hstack([x, np.ones((len(x), 1))]) @ w
    logits -= logits.max(1, keepdims=True)
    return (logits - np.log(np.exp(logits).sum(1, keepdims=True))) / np.log(2)


def cross_fitted_gain(features: np.ndarray, labels: np.ndarray, fold: np.ndarray, classes: int,
                      l2: float = 0.01, mix: float = 0.01) -> np.ndarray:
    """Per hand, in bits: the marginal's cross-entropy minus the decoder's, both fitted on the
    other folds' deals. The decoder's probabilities are mixed with the marginal's (``mix``) so
    that a bid its folds never saw costs bits, not infinity."""
    gain = np.zeros(len(labels))
    for f in np.unique(fold):
        train, test = fold != f, fold == f
        counts = np.bincount(labels[train], minlength=classes) + 0.5
        marginal = counts / counts.sum()
        w = fit_decoder(features[train], labels[train], classes, l2)
        decoder = (1 - mix) * np.exp2(_log2_probs(w, features[test])) + mix * marginal
        rows = np.flatnonzero(test)
        gain[rows] = np.log2(decoder[np.arange(len(rows)), labels[test]]) - np.log2(marginal[labels[test]])
    return gain


def bid_information_hand(bids: np.ndarray, features: np.ndarray, units: np.ndarray, seed: int,
                         folds: int = 5, shuffles: int = 10, resamples: int = 1000, l2: float = 0.01,
                         label: str = "bid") -> dict:
    """The information the bid carries about the hand (module docstring): ``{value, low, high}``
    in bits per hand, with ``raw`` (the decoder's gain), ``control`` (the same with shuffled bids)
    and ``hands``. ``units`` are the deals (folds and resamples keep a deal's hands together).
    ``label`` names what ``bids`` are in the method's line (``message``: the free signal's
    ``message_information_hand``, the same estimate of another label)."""
    rng = np.random.default_rng(seed)
    bids, units = np.asarray(bids), np.asarray(units)
    method = (f"decoder of the {label} from hand features, cross-fitted over {folds} folds of deals, minus "
              f"{shuffles} shuffled-{label} controls; percentile bootstrap over deals")
    values, labels = np.unique(bids, return_inverse=True)
    distinct = np.unique(units)
    if len(values) < 2 or len(distinct) < 2:        # one bid (or one deal): nothing to tell
        return value_dict(0.0, 0.0, 0.0, raw=0.0, control=0.0, hands=int(len(bids)), method=method)
    order = rng.permutation(len(distinct))
    fold_of = {int(u): int(i % min(folds, len(distinct))) for i, u in zip(order, distinct)}
    fold = np.array([fold_of[int(u)] for u in units])
    gain = cross_fitted_gain(features, labels, fold, len(values), l2)
    control = np.stack([cross_fitted_gain(features, rng.permutation(labels), fold, len(values), l2)
                        for _ in range(shuffles)])
    raw, shuffled = float(gain.mean()), float(control.mean())
    # per deal sums, so that a resample of deals is a weighted sum
    index = np.searchsorted(distinct, units)
    per_deal = np.bincount(index, weights=gain, minlength=len(distinct))
    per_deal_control = np.stack([np.bincount(index, weights=c, minlength=len(distinct)) for c in control])
    hands = np.bincount(index, minlength=len(distinct)).astype(float)
    draws = rng.integers(0, len(distinct), (resamples, len(distinct)))
    which = np.arange(resamples) % shuffles
    n = hands[draws].sum(1)
    boot = (per_deal[draws].sum(1) - per_deal_control[which[:, None], draws].sum(1)) / n
    low, high = np.percentile(boot, [2.5, 97.5])
    return value_dict(raw - shuffled, float(low), float(high), raw=raw, control=shuffled, hands=int(len(bids)),
                      method=method)


__all__ = ["hand_features", "fit_decoder", "cross_fitted_gain", "bid_information_hand"]
