"""Tianshou's trainer runs on the registered gymnasium id unchanged (its buffers batch every
info: no None, the same keys at every step). Runs where Tianshou is installed (the integrations
step of .ci/run)."""

from __future__ import annotations

import warnings

import gymnasium
import pytest

pytest.importorskip("tianshou")

import spades_env  # noqa: E402


def test_tianshou_dqn_trains_for_a_few_epochs():
    from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    def make():
        return gymnasium.make(spades_env.GYMNASIUM_ID, reward="team_diff", episode="hand")

    env = make()
    net = Net(state_shape=env.observation_space.shape, action_shape=env.action_space.n, hidden_sizes=[64, 64])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.2)
    algorithm = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=1.0, target_update_freq=50)
    training = Collector(policy=algorithm, env=DummyVectorEnv([make] * 4), buffer=VectorReplayBuffer(4000, 4),
                         exploration_noise=True)
    testing = Collector(policy=algorithm, env=DummyVectorEnv([make] * 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # an unmasked DQN plays illegal actions; the env says so
        stats = algorithm.run_training(OffPolicyTrainerParams(
            training_collector=training, test_collector=testing, max_epochs=3, epoch_num_steps=300,
            collection_step_num_env_steps=40, test_step_num_episodes=4, batch_size=64,
            update_step_num_gradient_steps_per_sample=0.25))
    assert stats.train_step >= 900 and stats.train_episode > 0
