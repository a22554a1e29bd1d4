"""``import spades_env`` registers the single-agent view with gymnasium under its id."""

import gymnasium
import numpy as np
import pytest

import spades_env
from spades_env.single_agent import SpadesSingleAgentEnv


def test_id_is_registered_on_import():
    assert spades_env.GYMNASIUM_ID == "spades_env/Spades-v0"
    assert spades_env.GYMNASIUM_ID in gymnasium.registry


def test_make_passes_kwargs_to_the_single_agent_env():
    env = gymnasium.make("spades_env/Spades-v0", seat=1, rules="basic")
    assert isinstance(env.unwrapped, SpadesSingleAgentEnv)
    assert env.unwrapped.aec_env.rules.name == "basic"
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    steps = 0
    while True:
        action = int(np.flatnonzero(info["action_mask"])[0])
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            break
    assert steps >= 13                       # at least the bid and 13 cards of one hand
    env.close()


def test_make_is_deterministic_given_the_seed():
    def play(seed):
        env = gymnasium.make("spades_env/Spades-v0")
        obs, info = env.reset(seed=seed)
        trace = [obs.tobytes()]
        for _ in range(10):
            obs, *_rest, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
            trace.append(obs.tobytes())
        return trace

    assert play(5) == play(5)


def test_bad_kwargs_are_a_clear_error():
    with pytest.raises(ValueError, match="seat"):
        gymnasium.make("spades_env/Spades-v0", seat=7)
