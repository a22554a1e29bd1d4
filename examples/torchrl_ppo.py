"""PPO with TorchRL's own pieces on the batched engine: ``SpadesTorchRLEnv``, a masked
categorical actor, GAE and ``ClipPPOLoss``. Needs ``pip install "spades-rl[torchrl]"``.

The learner plays one side (both seats) against random players at 1,024 tables, one hand per
episode, rewarded with the hand's points minus the other side's (``team_diff``, / 100). It is
measured before and after training by the same env: the side's mean reward per hand against
``random`` and against ``heuristic`` (points per hand = reward x 100).

    python examples/torchrl_ppo.py                          # about 2 minutes on 2 CPU cores
    python examples/torchrl_ppo.py --updates 200 --tables 4096

Not the project's trainer (``spades-train`` has per-seat GAE for self-play, a pool of
opponents, checkpoints and resume): this shows TorchRL users that the env drops into their code.
"""

from __future__ import annotations

import argparse
import time

import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.modules import MaskedCategorical, ProbabilisticActor, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from spades_env.game import NUM_ACTIONS
from spades_env.torchrl_env import SpadesTorchRLEnv


def make_modules(obs_size: int, hidden: int) -> tuple[ProbabilisticActor, ValueOperator]:
    logits = TensorDictModule(nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                            nn.ReLU(), nn.Linear(hidden, NUM_ACTIONS)),
                              in_keys=["observation"], out_keys=["logits"])
    actor = ProbabilisticActor(logits, in_keys={"logits": "logits", "mask": "action_mask"}, out_keys=["action"],
                               distribution_class=MaskedCategorical, return_log_prob=True)
    critic = ValueOperator(nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU(), nn.Linear(hidden, 1)),
                           in_keys=["observation"])
    return actor, critic


@torch.no_grad()
def points_per_hand(actor: ProbabilisticActor, opponents: str, hands: int = 2048, seed: int = 123) -> float:
    """The learner side's mean points per hand against ``opponents`` (sampled actions)."""
    env = SpadesTorchRLEnv(hands, learners="side", opponents=opponents, seed=seed, episode="hand",
                           reward="team_diff")
    td = env.reset()
    total = torch.zeros(hands)
    finished = torch.zeros(hands, dtype=torch.bool)
    while not bool(finished.all()):
        td = env.step(actor(td))
        nxt = td["next"]
        total += torch.where(finished, 0.0, nxt["reward"][:, 0])
        finished |= nxt["done"][:, 0]
        td = nxt
    return float(total.mean()) * 100.0


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=60)
    parser.add_argument("--tables", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=32, help="steps per table per update")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    env = SpadesTorchRLEnv(args.tables, learners="side", opponents="random", seed=args.seed, episode="hand",
                           reward="team_diff")
    actor, critic = make_modules(env.engine.obs_size, args.hidden)
    before = {name: points_per_hand(actor, name) for name in ("random", "heuristic")}
    print(f"before training: {before['random']:+.1f} points/hand vs random, {before['heuristic']:+.1f} vs heuristic")
    advantage = GAE(gamma=1.0, lmbda=0.95, value_network=critic, average_gae=True)
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.01, normalize_advantage=False)
    optimizer = torch.optim.Adam(loss.parameters(), lr=args.lr)
    td = env.reset()
    began = time.perf_counter()
    decisions = 0
    for update in range(args.updates):
        with torch.no_grad():
            rollout = env.rollout(args.steps, actor, auto_reset=False, tensordict=td, break_when_any_done=False)
            rollout = rollout.contiguous()          # a dense tensordict, (tables, steps)
            td = rollout[..., -1]["next"]
            advantage(rollout)
        decisions += rollout.numel()
        batch = rollout.reshape(-1)
        for _ in range(4):                                       # epochs
            for part in batch.split(8192):
                losses = loss(part)
                total = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                total.backward()
                nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
                optimizer.step()
        if (update + 1) % 10 == 0:
            reward = float(rollout["next", "reward"].sum() / rollout["next", "done"].sum().clamp(min=1)) * 100
            print(f"update {update + 1:>4}: {decisions:,} decisions, {reward:+.1f} points/hand in training, "
                  f"{time.perf_counter() - began:.0f} s", flush=True)
    after = {name: points_per_hand(actor, name) for name in ("random", "heuristic")}
    print(f"after training:  {after['random']:+.1f} points/hand vs random, {after['heuristic']:+.1f} vs heuristic "
          f"({decisions:,} decisions in {time.perf_counter() - began:.0f} s)")
    return {"before": before, "after": after, "decisions": decisions}


if __name__ == "__main__":
    main()
