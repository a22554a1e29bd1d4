"""Diagnostic: a policy with some decisions handed to the heuristic: MODE pass (its card passes),
bnplay (every seat while a blind nil is bid), both, bids (its bids and blind-nil
decisions), none.

    python experiments/2026-12-02-loop-passes-and-bids/hybrid.py CHECKPOINT MODE TEAM_B GAMES SEED
"""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from agents.neural import NeuralAgent
from agents.heuristic import HeuristicAgent
from evaluation import evaluate
from spades_env.observation import decode_observation
from spades_env.game import PHASE_NAMES

PASSING = PHASE_NAMES.index("passing")
BLIND_DECISION, BIDDING = PHASE_NAMES.index("blind_nil_decision"), PHASE_NAMES.index("bidding")

class Hybrid(NeuralAgent):
    def __init__(self, checkpoint, mode):
        super().__init__(checkpoint=checkpoint)
        self.mode, self.h = mode, HeuristicAgent(seed=0)
    def act(self, obs, info=None):
        view = decode_observation(np.asarray(obs["observation"]))
        if self.mode in ("pass", "both") and view.phase == PASSING:
            return self.h.act(obs, info)
        if self.mode in ("bnplay", "both") and any(view.blind) and view.phase != PASSING:
            return self.h.act(obs, info)        # any seat while a blind nil is in the hand
        if self.mode == "bids" and view.phase in (BLIND_DECISION, BIDDING):
            return self.h.act(obs, info)        # the heuristic bids (and decides blind nil), the policy plays
        return super().act(obs, info)

class F:
    def __init__(self, c, m): self.c, self.m = c, m
    def __call__(self): return Hybrid(self.c, self.m)

ck, mode, team_b, games, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
r = evaluate(F(ck, mode), team_b, games=games, duplicate=True, seed=seed, workers=2)
A = r.to_dict()["teams"]["A"] if "teams" in r.to_dict() else None
d = r.to_dict()
print(r.format())
for t in "AB":
    T = d["teams"][t]; print(t, "BN", T["blind_nil_bids"], T["blind_nil_rate"], "nil", T["nil_bids"], T["nil_rate"])
