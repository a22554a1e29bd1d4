"""The free signal's measures (rules with ``signals: N``), part of ``spades-coop signals``.

A message costs nothing and means nothing until agents give it meaning (docs/rules.md), so the two
questions are the ones the bids answer in coop/measures/signals.py, asked of the messages:

- ``message_information_hand``: how much the message tells about the sender's hand, in bits per
  hand: the decoder of ``bid_information_hand`` (coop/measures/bid_decoder.py) with the message as
  its label: a multinomial logistic regression from hand features (suit lengths, the high cards,
  on a short deck every rank of the deck, the trick estimate), cross-fitted over folds of deals,
  minus the same with the messages shuffled among the hands, bootstrap over deals. A sender that
  always sends one message tells exactly 0; a message that is a function of the features tells
  its entropy (at most log2 N).
- ``message_listening``: at the agent's decisions after its partner has sent its message, the
  partner's message in the agent's observation is replaced by another one (uniform among the
  other N - 1) and the agent asked again from the same seed: the share of decisions whose choice
  changes (Wilson interval), by phase (the agent's own message, its bid, its card play);
  ``message_listening_control`` asks again with nothing changed; ``message_listening_kl`` is the
  mean KL divergence in bits between the action distributions with the real and the changed
  message (agents with ``action_probabilities``). An agent that ignores messages scores exactly 0.
- ``message_use``: how often each message is sent (a convention that uses one message is silent).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from spades_env.cards import parse_card

from coop.common import kl_bits, kl_bootstrap, partner_decisions, probe_answers, value_dict
from coop.measures.bid_decoder import HONOURS, bid_information_hand, hand_features
from evaluation.matches import derive_seed
from evaluation.statistics import wilson_interval

SIGNAL_ACTION_BASE = 68          # action 68 + m sends message m (spades_env.game)
PARTNER = 2                       # the partner's relative seat: its row of the observation's messages block
MESSAGE_PHASES = ("signal", "bidding", "play")


def decoder_ranks(rules) -> tuple[int, ...]:
    """The ranks whose cards are the decoder's features: A, K, Q, J of the full deck, every rank
    of a short deck (six ranks: the whole hand, as the deck is small)."""
    if rules.deck_ranks >= 13:
        return HONOURS
    return tuple(range(12, 12 - rules.deck_ranks, -1))


def sent_messages(hand: dict) -> dict[int, int]:
    """Seat -> the message it sent in a hand record (its ``actions``: ids from 68 are messages)."""
    return {int(seat): int(action) - SIGNAL_ACTION_BASE for seat, action in hand["actions"]
            if int(action) >= SIGNAL_ACTION_BASE}


def read_messages(outcomes, rules, seats_of) -> dict:
    """The messages the agent's seats (``seats_of(play)``) sent in its records, with the features
    of the hands they were sent from and the deal (unit) of each."""
    ranks = decoder_ranks(rules)
    messages, units, features = [], [], []
    for unit, plays in enumerate(outcomes):
        for o in plays:
            for hand in o.record["hands"]:
                sent = sent_messages(hand)
                for s in seats_of(o.play):
                    if s not in sent:
                        continue
                    cards = [parse_card(c) for c in hand["deal"][s]]
                    messages.append(sent[s])
                    features.append(hand_features(cards, ranks=ranks))      # the trick estimate's bucket too
                    units.append(unit)
    width = len(features[0]) if features else 0
    return {"messages": np.array(messages, dtype=np.int64), "units": np.array(units, dtype=np.int64),
            "features": np.array(features).reshape(len(messages), width)}


def message_information(data: dict, signals: int, seed: int) -> dict:
    """``message_information_hand`` and ``message_use`` from :func:`read_messages`' data."""
    info = bid_information_hand(data["messages"], data["features"], data["units"], seed, label="message")
    counts = np.bincount(data["messages"], minlength=signals)[:signals] if len(data["messages"]) else np.zeros(signals)
    total = max(1, int(counts.sum()))
    return {"message_information_hand": info,
            "message_use": {"counts": [int(c) for c in counts], "shares": [round(float(c) / total, 6) for c in counts]}}


def _rate(successes: int, n: int, **extra) -> dict:
    if n == 0:
        return value_dict(None, None, None, n=0, **extra)
    iv = wilson_interval(successes, n)
    return value_dict(successes / n, 0.0 if successes == 0 else iv.low, 1.0 if successes == n else iv.high,
                      n=n, **extra)


def changed_message(obs: np.ndarray, offset: int, signals: int, rng) -> Optional[np.ndarray]:
    """The observation with the partner's message (its one-hot row at ``offset``) replaced by
    another drawn uniformly; None before the partner has sent one."""
    row = obs[offset:offset + signals]
    if not row.any():
        return None
    sent = int(np.argmax(row))
    other = int(rng.choice([m for m in range(signals) if m != sent]))
    changed = obs.copy()
    changed[offset + sent], changed[offset + other] = 0.0, 1.0
    return changed


def message_listening(player, opponent, rules, deals: int, seed: int, progress: bool = False) -> dict:
    """Ask the agent again with its partner's message changed in its observation (module doc)."""
    from spades_env.observation import layout_for

    signals = rules.signals
    offset = layout_for(rules).obs_blocks["messages"].offset + PARTNER * signals
    rng = np.random.default_rng(derive_seed("spades-coop", "message-listening", seed))
    probe = player.factory()
    with_probabilities = hasattr(probe, "action_probabilities")
    counts = {phase: [0, 0] for phase in MESSAGE_PHASES}
    unstable = 0
    kl_by_deal, probes_by_deal = np.zeros(deals), np.zeros(deals)
    for k, _, seat, obs, info in partner_decisions(player, opponent, rules, deals, seed, "message-listening", progress):
        vector, mask = obs["observation"], obs["action_mask"]
        changed = changed_message(vector, offset, signals, rng)
        if changed is not None:
            phase = ("signal" if mask[SIGNAL_ACTION_BASE:].any() else
                     "bidding" if mask[52:SIGNAL_ACTION_BASE].any() else "play")
            probe_seed = derive_seed("spades-coop", "message-probe", seed, k, seat, int(rng.integers(1 << 30)))
            answers = probe_answers(probe, probe_seed, (vector, changed, vector), mask, info)
            counts[phase][0] += 1
            counts[phase][1] += int(answers[1] != answers[0])
            unstable += int(answers[2] != answers[0])
            probes_by_deal[k] += 1
            if with_probabilities:
                kl_by_deal[k] += kl_bits(probe.action_probabilities({"observation": vector, "action_mask": mask}),
                                         probe.action_probabilities({"observation": changed, "action_mask": mask}))
    asked = sum(c[0] for c in counts.values())
    changed_choices = sum(c[1] for c in counts.values())
    return {"message_listening": _rate(changed_choices, asked,
                                       method="share of choices changed by the partner's message; Wilson"),
            "message_listening_by_phase": {phase: _rate(counts[phase][1], counts[phase][0])
                                           for phase in MESSAGE_PHASES},
            "message_listening_control": _rate(unstable, asked, method="asked twice with nothing changed"),
            "message_listening_kl": kl_bootstrap(
                kl_by_deal, probes_by_deal, with_probabilities, derive_seed("spades-coop", "message-listening-kl", seed),
                method="mean KL(policy with the real message || with another), bits; percentile bootstrap over deals")}


def format_messages(result: dict) -> list[str]:
    """The lines ``format_signals`` adds under rules with signals."""
    def iv(d, fmt):
        if d["value"] is None:
            return "-"
        return f"{fmt.format(d['value'])} [{fmt.format(d['low'])}, {fmt.format(d['high'])}]"
    info = result["message_information_hand"]
    kl = result["message_listening_kl"]
    by_phase = result["message_listening_by_phase"]
    return [f"  message about hand {iv(info, '{:.3f}')} bits (decoder {info['raw']:.3f}, shuffled control "
            f"{info['control']:.3f}); messages sent: "
            + ", ".join(f"{m}: {share:.2f}" for m, share in enumerate(result["message_use"]["shares"])),
            f"  message listening {iv(result['message_listening'], '{:.3f}')} of {result['message_listening']['n']} "
            f"choices (control {iv(result['message_listening_control'], '{:.3f}')}; "
            + ", ".join(f"{p} {iv(by_phase[p], '{:.3f}')}" for p in MESSAGE_PHASES) + "), KL "
            + (f"{iv(kl, '{:.4f}')} bits" if kl["value"] is not None else "- (no probabilities)")]


__all__ = ["decoder_ranks", "sent_messages", "read_messages", "message_information", "message_listening",
           "changed_message", "format_messages", "MESSAGE_PHASES"]
