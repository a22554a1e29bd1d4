"""Recorded decisions of the heuristic as it was before conventions existed (commit a469642), so
that the default conventions can be checked to decide exactly as before, decision for decision.

``python tests/heuristic_golden.py`` (re)writes ``tests/data/heuristic_golden.json`` with the code
on ``PYTHONPATH``: run it against a checkout of the old commit, never to paper over a change."""

from __future__ import annotations

import json
import random
import sys
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np

GOLDEN_FILE = Path(__file__).parent / "data" / "heuristic_golden.json"
EPISODES = 24                  # per setup; every 6th a whole game, the others one hand
RANDOM_MOVE_CHANCE = 0.15      # odd positions come up too
SETUPS = [("standard", {}), ("basic", {}), ("tournament", {}), ("openspiel", {}), ("cutthroat", {}),
          ("cutthroat", {"players": 3}), ("standard", {"blind_nil_pass": 3, "bags": False})]
SCORES = [None, [0, 0], [-150, 0], [-250, 120], [300, 450], [420, 80], [95, -105], [-38, 460]]


def setup_id(preset: str, overrides: dict) -> str:
    return preset + "".join(f"-{k}={v}" for k, v in sorted(overrides.items()))


@contextmanager
def _scores_recorded_before_starts_were_bounded(rules, scores):
    """[-250, 120] lies below the mercy score, which starting scores may no longer do (issue 75);
    the decisions were recorded from it, so it is replayed as the scores of a game in progress."""
    from spades_env import env as env_module
    from spades_env.game import SpadesGame, start_scores_problem
    if scores is None or start_scores_problem(rules, scores) is None:
        yield
        return

    class GameInProgress(SpadesGame):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, mid_game=True, **kwargs)

    with mock.patch.object(env_module, "SpadesGame", GameInProgress):
        yield


def replay(preset: str, overrides: dict, decide, recorded=None) -> list[int]:
    """Play the setup's episodes with ``decide(view, legal) -> action`` at every decision with more
    than one legal action (and seeded random moves now and then); returns those decisions. With
    ``recorded``, stops at the first decision that differs from it (AssertionError naming it)."""
    from spades_env import spades_v0
    from spades_env.observation import decode_observation
    from spades_env.rules import make_rules
    rules = make_rules(preset, **overrides)
    decisions: list[int] = []
    for episode in range(EPISODES):
        rng = random.Random(episode)
        env = spades_v0.raw_env(rules=rules, episode="game" if episode % 6 == 5 else "hand")
        scores = SCORES[episode % len(SCORES)]
        if scores is not None and not rules.partnerships:
            scores = (scores * 2)[:rules.players]
        with _scores_recorded_before_starts_were_bounded(rules, scores):
            env.reset(seed=episode, options={"scores": scores} if scores else None)
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            if len(legal) == 1:
                env.step(legal[0])
                continue
            action = decide(decode_observation(obs["observation"]), legal)
            if recorded is not None:
                k = len(decisions)
                assert k < len(recorded) and recorded[k] == action, (
                    f"{setup_id(preset, overrides)} episode {episode} decision {k}: now {action}, "
                    f"recorded {recorded[k] if k < len(recorded) else 'nothing'}")
            decisions.append(action)
            env.step(rng.choice(legal) if rng.random() < RANDOM_MOVE_CHANCE else action)
    return decisions


def main() -> None:
    from agents.heuristic import choose_action
    golden = {setup_id(p, o): replay(p, o, choose_action) for p, o in SETUPS}
    GOLDEN_FILE.write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    print(f"{GOLDEN_FILE}: {sum(map(len, golden.values()))} decisions from {sys.modules['agents'].__file__}")


if __name__ == "__main__":
    main()
