"""Shared driver: the AEC env and the batched engine on identical games (used by tests and checks)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from spades_env import spades_v0
from spades_env.game import parse_deal
from spades_env.vector import SpadesVectorEnv

# The device of the batched engine in the differential tests and of the batched heuristic in its
# agreement test: cpu unless SPADES_TEST_DEVICE says otherwise (e.g. SPADES_TEST_DEVICE=cuda python -m
# pytest tests/spades_env/test_vector.py tests/agents/test_batched_heuristic.py, to check a GPU run exactly).
TEST_DEVICE = os.environ.get("SPADES_TEST_DEVICE", "cpu")


def play_aec_games(count: int, seed: int, with_state: bool = False, **env_kwargs) -> list[dict]:
    """Random legal games in the AEC env; per game the record plus, per decision, what the
    acting seat saw and the rewards every seat received at that step."""
    env = spades_v0.raw_env(**env_kwargs)
    pick = random.Random(seed)
    games = []
    for g in range(count):
        scores = None
        if pick.random() < 0.3:  # sometimes start behind, so blind nil is offered
            scores = [pick.choice([0, 50, -150]), pick.choice([150, 300, 450])]
            if env.rules.target_score != 500:     # (the short game's 250: the same starts, scaled)
                scores = [s * env.rules.target_score // 500 for s in scores]
        env.reset(seed=seed * 1000 + g, options={"scores": scores} if scores else None)
        steps = []
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            if pick.random() < 0.15 and 52 in legal:
                action = 52                       # nil now and then
            elif 66 in legal and pick.random() < 0.5:
                action = 66                       # blind nil when offered, often
            else:
                action = int(legal[pick.randrange(len(legal))])
            state = env.state() if with_state else None
            views = [env.observe(a)["observation"] for a in env.possible_agents] if with_state else None
            env.step(action)
            steps.append({"seat": env.agent_name_mapping[agent], "action": action,
                          "observation": obs["observation"], "mask": obs["action_mask"], "state": state,
                          "views": views,
                          "rewards": [env.rewards[a] for a in env.possible_agents]})
        record = env.game_record()
        games.append({"record": record, "steps": steps, "scores": scores})
    return games


def compare_with_vector(games: list[dict], backend: str = "torch", **env_kwargs) -> dict:
    """Replay the AEC games in one SpadesVectorEnv; assert everything matches. Returns counts."""
    B = len(games)
    rules = env_kwargs.get("rules", "standard")
    device = TEST_DEVICE if backend == "torch" else "cpu"
    vec = SpadesVectorEnv(B, seed=0, device=device, backend=backend, **env_kwargs)
    depth = max(len(g["record"]["hands"]) for g in games)
    deals = []
    for g in games:
        hands = [parse_deal(h["deal"], vec.rules) for h in g["record"]["hands"]]
        hands += [hands[-1]] * (depth - len(hands))
        deals.append(hands)
    dealer = torch.tensor([g["record"]["start"]["dealer"] for g in games])
    scores = torch.tensor([g["record"]["start"]["scores"] for g in games])
    bags = torch.tensor([g["record"]["start"]["bags"] for g in games])
    deal_tensor = torch.tensor(deals, dtype=torch.int64)
    obs, mask = (t.cpu() for t in vec.reset(deals=deal_tensor, dealer=dealer, scores=scores,
                                             bags=None if vec.rules.bags_from_score_digit else bags))
    longest = max(len(g["steps"]) for g in games)
    compared = 0
    for t in range(longest):
        live = [b for b, g in enumerate(games) if t < len(g["steps"])]
        steps = [games[b]["steps"][t] for b in live]
        idx = torch.tensor(live)
        np.testing.assert_array_equal(obs[idx].numpy(), np.stack([s["observation"] for s in steps]),
                                      err_msg=f"{rules}: step {t}: observations of tables {live[:10]}...")
        np.testing.assert_array_equal(mask[idx].numpy().astype(np.int8), np.stack([s["mask"] for s in steps]),
                                      err_msg=f"{rules}: step {t}: masks")
        assert vec.to_act.cpu()[idx].tolist() == [s["seat"] for s in steps], (rules, t, "seat to act")
        if steps[0]["state"] is not None:
            np.testing.assert_array_equal(vec.state_tensor().cpu()[idx].numpy(), np.stack([s["state"] for s in steps]),
                                          err_msg=f"{rules}: step {t}: states")
            for seat in range(4):
                np.testing.assert_array_equal(vec.observe_seat(seat).cpu()[idx].numpy(),
                                              np.stack([s["views"][seat] for s in steps]),
                                              err_msg=f"{rules}: step {t}: observation of seat {seat}")
        actions = mask.to(torch.int64).argmax(1)          # any legal action for finished tables
        actions[idx] = torch.tensor([s["action"] for s in steps])
        compared += len(live)
        obs, mask, rewards, done, info = vec.step(actions.to(vec.device))
        obs, mask, rewards, done = obs.cpu(), mask.cpu(), rewards.cpu(), done.cpu()
        info = {key: value.cpu() for key, value in info.items()}
        assert rewards[idx].tolist() == [s["rewards"] for s in steps], (rules, t, "rewards")
        last = torch.tensor([t == len(games[b]["steps"]) - 1 for b in live])
        assert torch.equal(done[idx], last), (rules, t, "done")
        for b in [live[i] for i in torch.nonzero(last)[:, 0].tolist()]:
            record = games[b]["record"]
            assert info["final_scores"][b].tolist() == record["scores"], (rules, b, "final scores")
            winner = record["winner"] if record["winner"] is not None else -1
            assert int(info["winner"][b]) == winner, (rules, b, "winner")
    return {"games": B, "decisions": compared}
