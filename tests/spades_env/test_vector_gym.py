"""The batched engine as a gymnasium vector env (spades_env/vector_gym.py): the learner's games
are exactly the AEC env's games on the same deals, the spaces pass gymnasium's checks, and bad
actions are refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import agents
from spades_env import spades_v0
from spades_env.vector_gym import SpadesGymVectorEnv
from spades_env.vector import SpadesVectorEnv, VectorEnvError


def _deals(count: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    deals = []
    for _ in range(count):
        cards = rng.permutation(52)
        deals.append([sorted(int(c) for c in cards[13 * s:13 * s + 13]) for s in range(4)])
    return deals


@pytest.mark.parametrize("seat", [0, 1, 3])
@pytest.mark.parametrize("backend", ["torch", "native"])
def test_the_learners_hands_are_the_aec_envs_hands(seat, backend):
    """The heuristic in every seat (the learner's actions chosen by it too), one hand per table on
    given deals: every table's learner reward equals the AEC env's for that seat on that deal,
    although the tables wait for each other in the masked steps."""
    from spades_env.native import unavailable_reason
    if backend == "native" and unavailable_reason() is not None:
        pytest.skip(unavailable_reason())
    heuristic = agents.make("heuristic")
    tables = 24
    deals = _deals(tables, seed=seat)
    dealers = [t % 4 for t in range(tables)]
    env = SpadesGymVectorEnv(tables, seat=seat, opponents=heuristic.act_batch, episode="hand",
                             reward="team_diff", backend=backend)
    obs, info = env.reset(seed=0, options={"deals": deals, "dealer": dealers})
    total = np.zeros(tables)
    done = np.zeros(tables, dtype=bool)
    for _ in range(40):
        actions = heuristic.act_batch(torch.from_numpy(obs), torch.from_numpy(info["action_mask"].astype(bool)))
        obs, reward, terminated, truncated, info = env.step(actions.numpy())
        total += np.where(done, 0.0, reward)
        done |= terminated
        assert (env.engine.to_act == seat).all()
        if done.all():
            break
    assert done.all()
    for t in range(tables):
        aec = spades_v0.raw_env(episode="hand", reward="team_diff")
        aec.reset(options={"deal": deals[t], "dealer": dealers[t]})
        expected = 0.0
        for name in aec.agent_iter():
            o, r, term, trunc, i = aec.last()
            if aec.agent_name_mapping[name] == seat:
                expected += r
            aec.step(None if term or trunc else heuristic.act(o, i))
        assert total[t] == pytest.approx(expected), t


def test_spaces_and_steps_follow_gymnasium():
    env = SpadesGymVectorEnv(8, seat=2, seed=1)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert obs.shape == (8, 742) and info["action_mask"].shape == (8, 68)
    rng = np.random.default_rng(0)
    for _ in range(50):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs, reward, terminated, truncated, info = env.step(actions)
        assert env.observation_space.contains(obs)
        assert info["action_mask"].any(1).all() and not truncated.any()
    assert env.metadata["autoreset_mode"].name == "SAME_STEP"


def test_bad_input_is_refused():
    env = SpadesGymVectorEnv(4, seat=0, seed=0)
    with pytest.raises(VectorEnvError, match="before reset"):
        env.step(np.zeros(4, dtype=int))
    obs, info = env.reset(seed=0)
    illegal = np.array([int(np.flatnonzero(m == 0)[0]) for m in info["action_mask"]])
    with pytest.raises(VectorEnvError, match="illegal learner action"):
        env.step(illegal)
    with pytest.raises(VectorEnvError, match="expected \\(4,\\) integer action ids"):
        env.step(np.zeros(4) + 0.5)
    with pytest.raises(VectorEnvError, match="seat=5"):
        SpadesGymVectorEnv(4, seat=5)
    with pytest.raises(VectorEnvError, match="expected 'random', 'heuristic' or a batched policy"):
        SpadesGymVectorEnv(4, opponents=42)
    with pytest.raises(VectorEnvError, match="partner='learner'"):
        SpadesGymVectorEnv(4, opponents="learner")
    assert isinstance(env.engine, SpadesVectorEnv)


def test_partner_learner_makes_every_decision_of_the_side_a_step():
    env = SpadesGymVectorEnv(16, seat=1, opponents="heuristic", partner="learner", seed=3)
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(60):
        seen.update(env.engine.to_act.tolist())
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs, reward, terminated, truncated, info = env.step(actions)
    assert seen == {1, 3}


@pytest.mark.parametrize("opponents", ["random", "heuristic"])
def test_the_fast_path_and_the_reference_give_the_same_steps(opponents):
    """The view on the C loop and on the masked steps (native=False): the same arrays."""
    runs = []
    for native in (True, False):
        env = SpadesGymVectorEnv(32, seat=2, opponents=opponents, seed=4, native=native)
        obs, info = env.reset(seed=4)
        rng = np.random.default_rng(1)
        trail = [obs]
        for _ in range(80):
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
            obs, reward, terminated, truncated, info = env.step(actions)
            trail += [obs, reward, terminated, info["action_mask"]]
        runs.append(trail)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_gymnasiums_vector_env_checks_pass():
    """What gymnasium checks of an env, done over the batch (gymnasium has no vector-env checker):
    reset(seed) is deterministic, every observation is in the space, step returns arrays of the
    documented shapes and dtypes, the same actions from the same seed give the same steps; and
    gymnasium's own vector wrappers run over it."""
    import gymnasium
    from gymnasium.utils.env_checker import data_equivalence
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    def run(env, seed):
        obs, info = env.reset(seed=seed)
        trail = [(obs, info)]
        rng = np.random.default_rng(seed)
        for _ in range(70):
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
            obs, reward, terminated, truncated, info = env.step(actions)
            assert env.observation_space.contains(obs) and env.action_space.contains(actions)
            assert reward.shape == terminated.shape == truncated.shape == (8,)
            assert reward.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
            assert info["action_mask"].shape == (8, 68) and info["action_mask"].any(1).all()
            trail.append((obs, reward, terminated, truncated, info))
        return trail

    env = SpadesGymVectorEnv(8, seat=0, opponents="heuristic", seed=0)
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.action_space.shape == (8,) and env.single_observation_space.shape == (742,)
    assert data_equivalence(run(env, 11), run(env, 11))
    wrapped = RecordEpisodeStatistics(SpadesGymVectorEnv(8, seat=1, seed=0))
    obs, info = wrapped.reset(seed=0)
    episodes = 0
    for _ in range(60):
        actions = np.array([int(np.flatnonzero(m)[0]) for m in info["action_mask"]])
        obs, reward, terminated, truncated, info = wrapped.step(actions)
        episodes += int(terminated.sum())
    assert episodes > 0 and len(wrapped.return_queue) > 0
    wrapped.close()
