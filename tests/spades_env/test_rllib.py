"""The RLlib glue (spades_env/rllib.py): the env creators give RLlib's observation keys and pass
its checks, the multi-agent env samples whole games, and the masking module never picks an
illegal action. Runs where RLlib is installed (the RLlib step of .ci/run, its own environment)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

import torch  # noqa: E402

from spades_env import rllib as spades_rllib  # noqa: E402


def test_the_single_agent_creator_gives_rllibs_keys():
    env = spades_rllib.single_agent_env({"reward": "team_diff"})
    obs, info = env.reset(seed=0)
    assert set(obs) == {"observations", "action_mask"} and env.observation_space.contains(obs)
    assert obs["action_mask"].dtype == np.float32 and obs["action_mask"].sum() > 0
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        done = terminated or truncated
    assert env.observation_space.contains(obs)


def test_the_multi_agent_creator_passes_rllibs_check_and_plays_a_game():
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments
    env = spades_rllib.multi_agent_env({"episode": "hand"})
    check_multiagent_environments(env)
    obs, _ = env.reset(seed=1)
    decisions = 0
    while True:
        (agent, seen), = obs.items()
        assert set(seen) == {"observations", "action_mask"}
        obs, rewards, terminated, truncated, _ = env.step({agent: int(np.flatnonzero(seen["action_mask"])[0])})
        decisions += 1
        if terminated["__all__"] or truncated["__all__"]:
            break
    assert decisions >= 13 * 4


def test_the_masking_module_never_picks_an_illegal_action():
    from ray.rllib.core.columns import Columns
    env = spades_rllib.single_agent_env({})
    spec = spades_rllib.action_masking_spec(hidden=(32,))
    spec.observation_space, spec.action_space = env.observation_space, env.action_space
    module = spec.build()
    obs, _ = env.reset(seed=2)
    batch = {Columns.OBS: {k: torch.as_tensor(np.stack([v] * 64)) for k, v in obs.items()}}
    logits = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    picks = torch.distributions.Categorical(logits=logits).sample()
    assert obs["action_mask"][picks.numpy()].all()
    assert set(spades_rllib.multi_agent_spec().rl_module_specs) == {spades_rllib.SHARED_MODULE}
