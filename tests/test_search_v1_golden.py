"""``search_v1`` is the ``search`` of before the exact endgames, decision for decision: the
decisions recorded on 2026-12-01 (tests/data/search_v1_decisions.json, both backends, bids
searched at one seat) must come back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agents
from spades_env import spades_v0
from spades_env.native import unavailable_reason

GOLDEN = json.loads((Path(__file__).parent / "data" / "search_v1_decisions.json").read_text())


def decisions(case: dict, name: str) -> list[int]:
    env = spades_v0.raw_env(rules="standard", episode="hand")
    bots = [agents.make(name, seed=case["seed"] + s, backend=case["backend"], worlds=case["worlds"], bid_worlds=16,
                        search_bids=(s == 0)) for s in range(4)]
    env.reset(seed=case["deal_seed"], options={"scores": [120, 240]})
    actions = []
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = int(bots[env.possible_agents.index(agent)].act(obs, info))
        actions.append(action)
        env.step(action)
    return actions


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['backend']}-{c['worlds']}")
def test_search_v1_repeats_the_recorded_decisions(case):
    if case["backend"] == "native" and unavailable_reason() is not None:
        pytest.skip("the native library does not build here")
    assert decisions(case, "search_v1") == case["actions"]


def test_search_is_the_endgame_search_and_plays_differently():
    case = GOLDEN["cases"][0]
    if unavailable_reason() is not None:
        pytest.skip("the native library does not build here")
    bot = agents.make("search")
    assert bot.name == "search" and bot.endgame_tricks >= 1
    assert agents.make("search", endgame_tricks=0).endgame_tricks == 0
    assert decisions(case, "search") != case["actions"]       # the solver changes some card
