"""sb3-contrib's MaskablePPO on the single-agent view, by its gymnasium id. Needs
``pip install "spades-rl[sb3]"``.

The learner sits in seat 0; its partner and both opponents play uniformly random legal moves.
One hand per episode, rewarded with the hand's points minus the other side's (``team_diff``,
/ 100). The policy is measured before and after training on the same 300 seeded hands: the
learner side's mean points per hand (reward x 100), sampled actions.

    python examples/sb3_maskable_ppo.py                       # about 2 minutes on 2 CPU cores
    python examples/sb3_maskable_ppo.py --steps 300000

SB3 steps one table per env on the AEC engine (a few thousand decisions per second); for
millions per second use the batched engine (``examples/torchrl_ppo.py``, or
``spades_env.vector_gym.SpadesGymVectorEnv`` in your own loop).
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env

import spades_env  # noqa: F401  (registers spades_env/Spades-v0)

ENV_ID = "spades_env/Spades-v0"
# render_mode=None: make_vec_env asks for "rgb_array" otherwise, which the env does not draw
ENV_KWARGS = {"seat": 0, "reward": "team_diff", "episode": "hand", "render_mode": None}


def points_per_hand(model: MaskablePPO, hands: int = 300, seed: int = 10_000) -> float:
    """The learner side's mean points per hand over ``hands`` seeded hands (sampled actions)."""
    env = gymnasium.make(ENV_ID, **ENV_KWARGS)
    total = 0.0
    for hand in range(hands):
        obs, info = env.reset(seed=seed + hand)
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=False)
            obs, reward, terminated, truncated, info = env.step(int(action))
            total += reward
            done = terminated or truncated
    return total / hands * 100.0


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60_000, help="learner decisions to train on")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    envs = make_vec_env(ENV_ID, n_envs=args.envs, seed=args.seed, env_kwargs=ENV_KWARGS)
    model = MaskablePPO("MlpPolicy", envs, n_steps=512, batch_size=1024, n_epochs=4, learning_rate=1e-3,
                        gamma=1.0, ent_coef=0.01, seed=args.seed, policy_kwargs={"net_arch": [256, 256]}, verbose=0)
    before = points_per_hand(model)
    print(f"before training: {before:+.1f} points/hand vs random", flush=True)
    began = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    seconds = time.perf_counter() - began
    after = points_per_hand(model)
    print(f"after training:  {after:+.1f} points/hand vs random ({args.steps:,} decisions in {seconds:.0f} s, "
          f"{args.steps / seconds:,.0f}/s)")
    return {"before": before, "after": after, "decisions": args.steps, "seconds": seconds}


if __name__ == "__main__":
    np.set_printoptions(precision=2)
    main()
