"""Your own learning loop on the batched engine: REINFORCE self-play, one file, read top to bottom.

``SpadesVectorEnv`` steps many tables at once. At every step each table has exactly one seat to
act, and all four seats may receive rewards (the hand's score, with ``reward="team_diff"``: the
side's points minus the other side's). So a learning loop has to remember which seat made each
decision and credit it with that seat's rewards up to the end of its hand; ``seat_returns`` does
that for a whole rollout at once (with ``train.ppo.rollout.seat_advantages``, the trainer's GAE per
seat). The policy (one network for bids and cards, masked logits) plays all four seats; it is
evaluated against ``random`` and ``heuristic`` by the same duplicate harness as ``spades-eval``,
before and after training.

    python examples/vector_selfplay.py                        # about 3 minutes on 2 CPU cores
    python examples/vector_selfplay.py --updates 400 --tables 1024

For the real thing (PPO with GAE per seat, a critic, opponents from a pool, checkpoints,
resume) see ``spades-train`` and ``train/ppo/trainer.py``.
"""

from __future__ import annotations

import argparse
import time
from typing import Optional

import torch
from torch import nn

import agents
from spades_env.game import NUM_ACTIONS
from spades_env.vector import SpadesVectorEnv
from evaluation import evaluate
from train.ppo.rollout import finished_rows, seat_advantages


def make_policy(obs_size: int, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, NUM_ACTIONS))


def masked_logits(policy: nn.Module, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return policy(obs).masked_fill(~mask, -1e9)


def seat_returns(rewards: torch.Tensor, seats: torch.Tensor, done: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every decision's return: what the seat that made it earns from that step to the end of the
    hand. ``rewards`` (T, B, 4), ``seats`` and ``done`` (T, B). Also returns which decisions'
    hands ended within the rollout (the others' returns are not known yet).

    The trainer's per-seat GAE with no critic (values 0) and no discounting (gamma = lambda = 1)
    is exactly this Monte-Carlo return."""
    no_values = torch.zeros(seats.shape, dtype=rewards.dtype)
    no_bootstrap = torch.zeros(seats.shape[1], 4, dtype=rewards.dtype)
    returns = seat_advantages(rewards, done, seats, no_values, no_bootstrap, gamma=1.0, lam=1.0)
    return returns.float(), finished_rows(done)


class PolicyAgent(agents.Agent):
    """The policy as an agent of the AEC env (greedy), for the evaluation harness."""

    name = "reinforce"

    def __init__(self, policy: nn.Module, seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.policy = policy

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        with torch.no_grad():
            logits = masked_logits(self.policy, torch.as_tensor(obs["observation"])[None],
                                   torch.as_tensor(obs["action_mask"], dtype=torch.bool)[None])
        return int(logits.argmax())


def points_per_hand(policy: nn.Module, opponent: str, deals: int, seed: int) -> str:
    """The greedy policy against ``opponent`` over duplicate deals, with its 95% interval."""
    result = evaluate(lambda: PolicyAgent(policy), opponent, deals=deals, duplicate=True, seed=seed, workers=1)
    iv = result.score_diff
    return f"{iv.mean:+.1f} points per hand against {opponent}, 95% CI [{iv.low:+.1f}, {iv.high:+.1f}]"


def report(policy: nn.Module, deals: int, seed: int) -> str:
    return "; ".join(points_per_hand(policy, opponent, deals, seed) for opponent in ("random", "heuristic"))


def main(argv: Optional[list[str]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=512, help="tables played at once (default 512)")
    parser.add_argument("--steps", type=int, default=128, help="decisions per table per update (a hand has 56)")
    parser.add_argument("--updates", type=int, default=150)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus")
    parser.add_argument("--eval-deals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)

    env = SpadesVectorEnv(args.tables, rules="standard", reward="team_diff", episode="hand", seed=args.seed)
    obs, mask = env.reset()
    policy = make_policy(obs.shape[1], args.hidden)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    before = report(policy, args.eval_deals, args.seed + 1)
    print(f"untrained: {before}", flush=True)

    start = time.perf_counter()
    for update in range(1, args.updates + 1):
        log_probs, entropies, seats, rewards, dones = [], [], [], [], []
        for _ in range(args.steps):
            seats.append(env.to_act)                        # who decides at each table
            dist = torch.distributions.Categorical(logits=masked_logits(policy, obs, mask))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            entropies.append(dist.entropy())
            obs, mask, reward, done, _ = env.step(action)
            rewards.append(reward)
            dones.append(done)
        returns, complete = seat_returns(torch.stack(rewards), torch.stack(seats), torch.stack(dones))
        used = returns[complete]
        advantage = (returns - used.mean()) / (used.std() + 1e-8)
        loss = (-(torch.stack(log_probs) * advantage)[complete].mean()
                - args.entropy * torch.stack(entropies)[complete].mean())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if update % max(1, args.updates // 10) == 0 or update == args.updates:
            rate = update * args.steps * args.tables / (time.perf_counter() - start)
            print(f"update {update}/{args.updates}: loss {loss.item():+.3f}, "
                  f"{complete.float().mean().item():.0%} of decisions with a finished hand, "
                  f"{rate:,.0f} decisions/s", flush=True)

    after = report(policy, args.eval_deals, args.seed + 1)
    print(f"trained:   {after}")
    return {"before": before, "after": after, "policy": policy}


if __name__ == "__main__":
    main()
