"""The batched engine as a TorchRL env (spades_env/torchrl_env.py): TorchRL's own spec check
passes in every mode, the side mode is the gymnasium view's game, resets of tables that have
already begun their next episode keep them, and bad actions are refused. Runs where TorchRL is
installed (the integrations step of .ci/run)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl")

from torchrl.envs.utils import check_env_specs  # noqa: E402

from spades_env.native import random_legal  # noqa: E402
from spades_env.torchrl_env import SpadesTorchRLEnv  # noqa: E402
from spades_env.vector import VectorEnvError  # noqa: E402
from spades_env.vector_gym import SpadesGymVectorEnv  # noqa: E402


@pytest.mark.parametrize("learners,opponents", [("side", "random"), ("seat", "heuristic"), ("all", "random")])
def test_check_env_specs_passes(learners, opponents):
    env = SpadesTorchRLEnv(32, learners=learners, opponents=opponents, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env_specs(env, seed=0)
    rollout = env.rollout(120, break_when_any_done=False)      # random legal actions from the masked spec
    assert rollout["next", "done"].any()
    assert rollout["next", "reward"].shape == (32, 120, 4 if learners == "all" else 1)
    legal = rollout["action_mask"].gather(-1, rollout["action"][..., None])
    assert legal.all()


def test_the_side_mode_is_the_gymnasium_views_game():
    """Same seed, same actions: the same observations, masks, rewards and ends as
    SpadesGymVectorEnv(partner='learner')."""
    env = SpadesTorchRLEnv(16, learners="side", seat=1, opponents="heuristic", seed=3, episode="hand")
    view = SpadesGymVectorEnv(16, seat=1, opponents="heuristic", partner="learner", seed=3, episode="hand")
    td = env.reset()
    obs, info = view.reset(seed=3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(100):
        np.testing.assert_array_equal(td["observation"].numpy(), obs)
        np.testing.assert_array_equal(td["action_mask"].numpy(), info["action_mask"].astype(bool))
        assert set(td["seat"].tolist()) <= {1, 3}
        td["action"] = random_legal(td["action_mask"], torch.rand(16, generator=generator))
        out = env.step(td)["next"]
        obs, reward, terminated, truncated, info = view.step(td["action"].numpy())
        np.testing.assert_allclose(out["reward"][:, 0].numpy(), reward.astype(np.float32))
        np.testing.assert_array_equal(out["done"][:, 0].numpy(), terminated)
        td = out


def test_a_partial_reset_keeps_tables_that_began_again_and_a_full_reset_deals_from_the_seed():
    env = SpadesTorchRLEnv(8, learners="all", seed=5)
    first = env.reset()
    td = first
    for _ in range(10):
        td["action"] = td["action_mask"].long().argmax(1)
        td = env.step(td)["next"]
    partial = td.clone()
    partial["_reset"] = torch.zeros(8, 1, dtype=torch.bool)
    partial["_reset"][2] = True
    kept = env.reset(partial)
    assert torch.equal(kept["observation"], td["observation"])
    env.set_seed(5)
    again = env.reset()
    assert torch.equal(again["observation"], first["observation"])


def test_one_hot_actions_are_taken_as_their_index():
    generator = torch.Generator().manual_seed(1)
    envs = [SpadesTorchRLEnv(8, seed=2) for _ in range(2)]
    tds = [env.reset() for env in envs]
    for _ in range(20):
        index = random_legal(tds[0]["action_mask"], torch.rand(8, generator=generator))
        tds[0]["action"] = index
        tds[1]["action"] = torch.nn.functional.one_hot(index, 68)
        tds = [env.step(td)["next"] for env, td in zip(envs, tds)]
        assert torch.equal(tds[0]["observation"], tds[1]["observation"])
        assert torch.equal(tds[0]["reward"], tds[1]["reward"])


def test_bad_input_is_refused():
    with pytest.raises(VectorEnvError, match="learners='both'"):
        SpadesTorchRLEnv(4, learners="both")
    with pytest.raises(VectorEnvError, match="partner"):
        SpadesTorchRLEnv(4, learners="side", partner="random")
    env = SpadesTorchRLEnv(4, seed=0)
    td = env.reset()
    td["action"] = (~td["action_mask"]).long().argmax(1)          # an illegal action everywhere
    with pytest.raises(VectorEnvError, match="illegal learner action"):
        env.step(td)


@pytest.mark.parametrize("policy, message", [
    (lambda obs, mask: torch.zeros(mask.shape[0], dtype=torch.int64), r"illegal policy action 0 at table"),
    (lambda obs, mask: torch.tensor(52), r"policy \(seat \d to act\): actions of shape \(\)"),
    (lambda obs, mask: torch.full((mask.shape[0],), 52.7), r"dtype torch.float32: expected \(4,\) integer"),
])
def test_a_bad_policy_opponent_is_refused_in_a_rollout(policy, message):
    """A rollout against a policy that answers with no legal action id stops with an error naming
    the seat (an always-0 policy made it run for ever; 52.7 or a 0-d tensor corrupted tables)."""
    env = SpadesTorchRLEnv(4, learners="side", opponents=policy, seed=0)
    with pytest.raises(VectorEnvError, match=message):
        env.rollout(40)
