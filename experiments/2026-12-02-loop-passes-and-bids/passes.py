"""Diagnostic: on 3,000 blind-nil hands the heuristic plays, how often each model passes the card the
heuristic passes (the blind-nil bidder's passes and its partner's).

    python experiments/2026-12-02-loop-passes-and-bids/passes.py MODEL [MODEL ...]
"""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from agents.neural import NeuralAgent
from agents.heuristic import HeuristicAgent
from spades_env import spades_v0
from spades_env.observation import decode_observation
from spades_env.game import PHASE_NAMES
from spades_env.cards import card_str
PASSING = PHASE_NAMES.index("passing")
models = {p: NeuralAgent(checkpoint=p) for p in sys.argv[1:]}
h = HeuristicAgent(seed=0)
agree = {p: [0, 0, 0, 0] for p in models}   # bidder agree, bidder n, partner agree, partner n
examples = []
n = 0
for seed in range(3000):
    env = spades_v0.raw_env(rules="standard", episode="hand")
    env.reset(seed=seed, options={"scores": [0, 200] if seed % 2 else [200, 0]})
    for name in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None); continue
        view = decode_observation(np.asarray(obs["observation"]))
        a = h.act(obs)
        if view.phase == PASSING:
            seat = int(name[-1])
            g = env.unwrapped.game if hasattr(env.unwrapped, "game") else None
            bidder = g is not None and g.blind[seat] if hasattr(g, "blind") else None
            for p, m in models.items():
                b = m.act(obs)
                k = 0 if bidder else 2
                agree[p][k] += int(b == a); agree[p][k + 1] += 1
                if len(examples) < 6 and p == sys.argv[1]:
                    examples.append((("bidder" if bidder else "partner"), sorted(card_str(c) for c in np.flatnonzero(obs["action_mask"][:52])), card_str(a), card_str(b)))
        if view.phase > PASSING + 1:
            break
        env.step(a)
for p, v in agree.items():
    print(p, "blind-nil bidder passes agree %d/%d, partner %d/%d" % tuple(v))
for e in examples: print(e)
