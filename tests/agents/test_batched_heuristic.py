"""The batched heuristic (``agents.batched_heuristic``) against the per-row heuristic: the same
action at every decision of thousands of games, in every partnership preset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import agents
from agents.batched_heuristic import choose_actions
from agents.heuristic import choose_action
from spades_env import spades_v0
from spades_env.game import BLIND_NIL_ACTION, PHASE_PASSING, PHASE_PLAY
from spades_env.observation import decode_observation, layout_for_size
from spades_env.vector import SpadesVectorEnv

from helpers_vector import TEST_DEVICE


def nil_situations(obs: torch.Tensor) -> torch.Tensor:
    """Which nil is at stake at each decision: 1 the seat's own intact nil (bid nil, no trick
    taken yet), 2 its partner's, 3 an opponent's, 0 none (in that order of priority)."""
    out = torch.zeros(obs.shape[0], dtype=torch.long)
    for i, row in enumerate(obs.numpy()):
        view = decode_observation(row)
        intact = [view.bids[s] == 0 and view.tricks_taken[s] == 0 for s in range(view.players)]
        partner = 2 if view.partnerships and view.players == 4 else None
        if intact[0]:
            out[i] = 1
        elif partner is not None and intact[partner]:
            out[i] = 2
        elif any(intact[s] for s in range(1, view.players) if s != partner):
            out[i] = 3
    return out


def per_row(obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.tensor([choose_action(decode_observation(o), m.nonzero()[0].tolist())
                         for o, m in zip(obs.numpy(), mask.numpy())])


@pytest.mark.parametrize("rules, tables, steps", [("standard", 256, 300), ("basic", 96, 150),
                                                  ("tournament", 96, 150), ("openspiel", 96, 150)])
def test_batched_heuristic_matches_the_heuristic_at_every_decision(rules, tables, steps):
    """Whole games (varied scores bring blind nil and its passes), the heuristic playing with a
    random legal action at 30% of the decisions so that the positions vary: every action equal.
    Some rules of the heuristic decide only a few decisions in 10,000 (a ruff that an opponent
    void in spades cannot overruff), hence the long standard run."""
    env = SpadesVectorEnv(tables, rules=rules, episode="game", seed=11)
    obs, mask = env.reset()
    generator = torch.Generator().manual_seed(5)
    situations = torch.zeros(4, dtype=torch.long)
    plays = passes = blind_nils = 0
    phase_cells = layout_for_size(obs.shape[1]).obs_blocks["phase"].slice
    for _ in range(steps):
        fast = choose_actions(obs.to(TEST_DEVICE), mask.to(TEST_DEVICE), min_batch=1).cpu()   # SPADES_TEST_DEVICE
        slow = per_row(obs, mask)
        assert torch.equal(fast, slow), f"{rules}: differs at rows {(fast != slow).nonzero()[:, 0].tolist()}"
        in_play = mask[:, :52].any(1) & (mask[:, :52].sum(1) > 1)
        plays += int(in_play.sum())
        situations += torch.bincount(nil_situations(obs[in_play]), minlength=4)
        passes += int((obs[:, phase_cells].argmax(1) == PHASE_PASSING).sum())
        blind_nils += int((slow == BLIND_NIL_ACTION).sum())
        random_pick = torch.multinomial(mask.float(), 1, generator=generator)[:, 0]
        explore = torch.rand(mask.shape[0], generator=generator) < 0.3
        obs, mask, *_ = env.step(torch.where(explore, random_pick, slow))
    assert plays > 8_000
    if env.rules.nil:                                  # every kind of nil at stake was played through
        assert (situations > 150).all(), situations
    if env.rules.blind_nil:                            # blind nils declared, and the cards passed
        assert blind_nils > 5 and passes > 40, (blind_nils, passes)


def test_batched_heuristic_hands_games_without_partners_to_the_per_row_heuristic():
    """Cutthroat and three-player games (no partner to batch for), and an empty batch."""
    bot = agents.make("heuristic")
    for rules, kwargs in (("cutthroat", {}), ("cutthroat", {"players": 3})):
        raw = spades_v0.raw_env(rules=rules, **kwargs)
        raw.reset(seed=3)
        rows_obs, rows_mask = [], []
        for agent in raw.agent_iter(max_iter=60):
            obs, _, term, trunc, _ = raw.last()
            if term or trunc:
                break
            rows_obs.append(obs["observation"])
            rows_mask.append(obs["action_mask"])
            raw.step(int(bot.act(obs)))
        obs_t = torch.from_numpy(np.stack(rows_obs))
        mask_t = torch.from_numpy(np.stack(rows_mask)).bool()
        assert torch.equal(choose_actions(obs_t, mask_t, min_batch=1), per_row(obs_t, mask_t.to(torch.int8)))
    empty = choose_actions(torch.zeros(0, 742), torch.zeros(0, 68, dtype=torch.bool))
    assert empty.shape == (0,)


def test_heuristic_agent_act_batch_equals_act_on_the_aec_env():
    env = spades_v0.raw_env(rules="standard")
    bot = agents.make("heuristic")
    env.reset(seed=9)
    obs_rows, mask_rows, actions = [], [], []
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = bot.act(obs)
        obs_rows.append(obs["observation"])
        mask_rows.append(obs["action_mask"])
        actions.append(action)
        env.step(action)
    obs_t, mask_t = torch.from_numpy(np.stack(obs_rows)), torch.from_numpy(np.stack(mask_rows))
    assert env.unwrapped.game.phase != PHASE_PLAY
    assert bot.act_batch(obs_t, mask_t).tolist() == actions
    assert choose_actions(obs_t, mask_t, min_batch=1).tolist() == actions
    assert choose_actions(obs_t[:40], mask_t[:40]).tolist() == actions[:40]    # a small batch: row by row


def test_batched_heuristic_under_conventions_decides_as_the_per_row_heuristic():
    """Non-standard conventions go row by row (the tensor ops are the standard play): the same
    actions as choose_action with those conventions, and different from standard somewhere."""
    from agents.heuristic_conventions import Conventions
    conventions = Conventions(bidding="aggressive", nil="never", cover="none", discards="high_asks")
    env = SpadesVectorEnv(300, rules="standard", seed=2)
    obs, mask = env.reset(seed=6)
    differs = False
    for _ in range(30):
        chosen = choose_actions(obs, mask, conventions, min_batch=1)
        expected = [choose_action(decode_observation(o), m.nonzero()[0].tolist(), None, conventions)
                    for o, m in zip(obs.numpy(), mask.numpy())]
        assert chosen.tolist() == expected
        differs |= not torch.equal(chosen, choose_actions(obs, mask, min_batch=1))
        obs, mask, *_ = env.step(chosen)
    assert differs
    assert torch.equal(choose_actions(obs, mask, Conventions(), min_batch=1), choose_actions(obs, mask, min_batch=1))
