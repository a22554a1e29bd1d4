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


def test_no_info_value_is_none_so_vector_envs_batch_them():
    """A hand that ends without ending the game reports winner -1, not None: gymnasium's vector
    envs (and Tianshou's buffers) batch every info value."""
    from spades_env.env import NO_WINNER
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("spades_env/Spades-v0") for _ in range(2)])
    obs, infos = envs.reset(seed=0)
    finished = 0
    for _ in range(200):
        # a finished episode shows an empty mask; the next step resets it whatever the action
        actions = np.array([int(np.flatnonzero(m)[0]) if m.any() else 0 for m in infos["action_mask"]])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        if terminated.any():
            finished += 1
            assert (infos["winner"][infos["_winner"]] == NO_WINNER).all() or infos["game_over"].any()
    assert finished
    envs.close()


def test_the_gymnasium_checker_has_nothing_to_say_about_the_spaces():
    import warnings

    import gymnasium
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("spades_env/Spades-v0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, skip_render_check=True)
    # the checker's random actions are often illegal: the env says so, and that is all it says
    assert [str(w.message) for w in caught if "illegal learner action" not in str(w.message)] == []


def test_masks_on_an_autoreset_step_are_as_documented():
    """gymnasium's vector envs reset a finished sub-env on its next step (next-step autoreset):
    the terminal step's mask is all zeros; the next step ignores its action, returns the new
    episode's first observation with a non-empty mask, reward 0 and not terminated."""
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("spades_env/Spades-v0")])
    obs, infos = envs.reset(seed=3)
    for _ in range(300):
        action = np.array([int(np.flatnonzero(infos["action_mask"][0])[0])])
        obs, rewards, terminated, truncated, infos = envs.step(action)
        if terminated[0]:
            break
    assert terminated[0] and not infos["action_mask"][0].any()
    obs, rewards, terminated, truncated, infos = envs.step(np.array([12345]))   # any action: ignored
    assert not terminated[0] and rewards[0] == 0 and infos["action_mask"][0].any()
    envs.close()
