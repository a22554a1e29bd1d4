"""RLlib's PPO with action masking on Spades, through :mod:`spades_env.rllib`. Needs
``pip install "spades-rl[rllib]"`` (best in an environment of its own: RLlib pins gymnasium).

The learner sits in seat 0 of the single-agent env; its partner and both opponents play
uniformly random legal moves. One hand per episode, rewarded with the hand's points minus the
other side's (``team_diff``, / 100). The trained module is measured before and after on the same
300 seeded hands (sampled actions, masked): the side's mean points per hand.

    python examples/rllib_ppo.py                                # about 3 minutes on 2 CPU cores
    python examples/rllib_ppo.py --iterations 40 --env-runners 2
    python examples/rllib_ppo.py --address auto --env-runners 32 # on a running Ray cluster
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ray
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns

from spades_env import rllib as spades_rllib

ENV_CONFIG = {"seat": 0, "reward": "team_diff", "episode": "hand"}


@torch.no_grad()
def points_per_hand(module, hands: int = 300, seed: int = 10_000) -> float:
    """The learner side's mean points per hand over ``hands`` seeded hands (masked, sampled)."""
    env = spades_rllib.single_agent_env(ENV_CONFIG)
    generator = torch.Generator().manual_seed(seed)
    total = 0.0
    for hand in range(hands):
        obs, _ = env.reset(seed=seed + hand)
        done = False
        while not done:
            batch = {Columns.OBS: {key: torch.as_tensor(value)[None] for key, value in obs.items()}}
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0]
            logits = torch.where(torch.as_tensor(obs["action_mask"]) > 0, logits, torch.tensor(-1e9))
            action = int(torch.multinomial(torch.softmax(logits, 0), 1, generator=generator))
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
    return total / hands * 100.0


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--env-runners", type=int, default=1, help="sampling processes (RLlib env runners)")
    parser.add_argument("--envs-per-runner", type=int, default=8)
    parser.add_argument("--address", default=None, help="a running Ray cluster (default: a local Ray)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    spades_rllib.register()
    config = (PPOConfig()
              .environment(spades_rllib.SINGLE_AGENT, env_config=ENV_CONFIG)
              # a busy machine can take minutes to start a runner: wait for its samples rather than
              # return an iteration without any (RLlib's default waits 60 s)
              .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=args.envs_per_runner,
                           sample_timeout_s=600)
              .training(train_batch_size_per_learner=4000, minibatch_size=1000, num_epochs=4, lr=1e-3, gamma=1.0,
                        lambda_=0.95, entropy_coeff=0.01)
              .rl_module(rl_module_spec=spades_rllib.action_masking_spec())
              .debugging(seed=args.seed))
    algo = config.build_algo()
    before = points_per_hand(algo.get_module())
    print(f"before training: {before:+.1f} points/hand vs random", flush=True)
    began = time.perf_counter()
    steps = 0
    for iteration in range(args.iterations):
        result = algo.train()
        runners = result.get("env_runners", {})      # absent from an iteration that sampled nothing
        steps = result.get("num_env_steps_sampled_lifetime", steps)
        if not isinstance(steps, (int, float)):
            steps = runners.get("num_env_steps_sampled_lifetime", 0)
        episode_return = runners.get("episode_return_mean", float("nan"))
        print(f"iteration {iteration + 1:>3}: {int(steps):,} decisions, {episode_return * 100:+.1f} points/hand "
              f"in training, {time.perf_counter() - began:.0f} s", flush=True)
    seconds = time.perf_counter() - began
    after = points_per_hand(algo.get_module())
    print(f"after training:  {after:+.1f} points/hand vs random ({int(steps):,} decisions in {seconds:.0f} s)")
    algo.stop()
    ray.shutdown()
    return {"before": before, "after": after, "decisions": int(steps), "seconds": seconds}


if __name__ == "__main__":
    np.set_printoptions(precision=2)
    main()
