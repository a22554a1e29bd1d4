"""A fast reading of a training checkpoint's messages on the batched engine (the pilot's probe).

    python experiments/2026-12-01-short-signals-pilot/probe_messages.py RUN_FOLDER [--tables 1024]

For the run's kept checkpoints (and model.pt): every seat's greedy message at the signal phase of
``--tables`` fresh hands (self-play, the policy on all four seats), then the information those
messages carry about the sender's hand by ``message_information_hand``'s own estimator
(coop/measures/bid_decoder.py with the short deck's features; one table = one unit). It reads the
same quantity as ``spades-coop signals --rules short_signals`` without the AEC env's per-decision
cost, so the pilot can follow a run's convention as it forms; the committed numbers are
``spades-coop signals``'.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from agents.neural import policy_from_checkpoint, read_checkpoint
from coop.measures.bid_decoder import bid_information_hand, hand_features
from coop.measures.messages import decoder_ranks
from coop.measures.signals import potential_bucket
from spades_env.observation import layout_for
from spades_env.vector import SpadesVectorEnv


@torch.no_grad()
def probe(path: Path, tables: int, seed: int) -> dict:
    data = read_checkpoint(path)
    policy, info = policy_from_checkpoint(data, str(path))
    rules_name = "short_signals"
    env = SpadesVectorEnv(tables, rules=rules_name, seed=seed)
    rules = env.rules
    hand = layout_for(rules).obs_blocks["hand"]
    obs, mask = env.reset()
    messages, features, units, entropy = [], [], [], []
    for _ in range(rules.players):                       # the signal phase: one message a seat
        assert bool(mask[:, 68:].any(1).all()), "expected the signal phase"
        logits = policy(obs, mask)
        action = logits.argmax(1)
        p = torch.softmax(logits[:, 68:], 1)
        entropy.append(float(-(p * torch.log2(p.clamp(min=1e-12))).sum(1).mean()))
        cards = obs[:, hand.offset:hand.offset + 52] > 0.5
        for t in range(tables):
            held = torch.nonzero(cards[t])[:, 0].tolist()
            messages.append(int(action[t]) - 68)
            features.append(hand_features(held, potential_bucket(held), ranks=decoder_ranks(rules)))
            units.append(t)
        obs, mask, *_ = env.step(action)
    messages = np.array(messages)
    result = bid_information_hand(messages, np.array(features), np.array(units), seed, label="message")
    result["shares"] = np.bincount(messages, minlength=rules.signals).tolist()
    result["entropy"] = float(np.mean(entropy))          # of the policy's message distribution, bits
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--tables", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    paths = sorted((args.run / "checkpoints").glob("update_*.pt")) + [args.run / "model.pt"]
    for path in paths:
        if path.is_file():
            r = probe(path, args.tables, args.seed)
            print(f"{path.name:>18}  {r['value']:.3f} [{r['low']:.3f}, {r['high']:.3f}] bits  greedy messages {r['shares']}, policy entropy {r['entropy']:.2f} bits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
