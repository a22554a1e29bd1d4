"""``spades-train``: PPO with action masking, self-play on the batched engine.

    spades-train --config configs/quickstart.yaml            # writes runs/quickstart/
    spades-train --config configs/quickstart.yaml --resume   # continue a killed run
    spades-train --config configs/quickstart.yaml --set num_envs=256 --set critic=central
    spades-train --show-config                               # every config field, documented

One update: every table of the batched engine plays ``rollout_steps`` decisions; the learning
policy's decisions become a batch for ``epochs`` passes of clipped PPO. Per hand a table's
other side is drawn from ``opponents``: the current policy (self-play, both sides learn), a
past policy from the pool, or the heuristic. The policy network has a bidding head and a card
head (:mod:`agents.networks`); the critic sees the seat's observation, or with
``critic: central`` the full state as well (training only). The warm starts before PPO live in
:mod:`train.warm_starts`: ``imitation_decisions`` first imitates the heuristic (PPO then
improves on it); ``distill_data`` fits the policy to a stronger teacher's choices labelled by
``spades-label`` (:mod:`train.label`), and ``bid_value_deals`` fits the bidding head to
Monte-Carlo values of every bid (:mod:`train.bid_values`). ``expert_rounds`` then runs expert
iteration with the native search (:mod:`train.expert_iteration`).

The run folder holds ``config.yaml``, ``metrics.csv``, ``tensorboard/``, ``learning_curves.png``,
``checkpoints/`` (``last.pt`` and numbered ones, written atomically), ``final_eval.json`` and
``model.pt`` (the policy alone, for ``agents.make("neural", checkpoint=...)``). A checkpoint
holds everything the run needs to continue exactly: weights, optimizer, opponent pool, the
tables mid-hand and every random stream, so a resumed run continues as if never stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import shutil
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Optional

import torch
import torch.nn.functional as F
import yaml

from agents.heuristic import HeuristicAgent
from agents.networks import NUM_CARDS, PolicyNet, ValueNet, masked_entropy
from agents.neural import CHECKPOINT_FORMAT, ModelError, NeuralAgent, export_model, read_checkpoint
from spades_env.rewards import RewardError
from spades_env.rules import RulesError
from spades_env.vector import SpadesVectorEnv, VectorEnvError

from .config import VARIED_START_TENS, ConfigError, TrainConfig, describe_fields, load_config
from .fitting import progress_bar as _bar
from .warm_starts import WarmStarts
from .metrics import MetricsLog, plot_learning_curves
from .rollout import HEURISTIC, LEARNER, POOL, Rollout, agent_actions, sample_actions, seat_advantages
from .run_lock import RunFolderBusy, RunLock

KINDS = ("self", "pool", "heuristic")
RECENT_EPISODES = 2000

# Fields a resumed run may change (they do not change what is learned, only how long the run
# lasts and what is measured along the way).
RESUMABLE_CHANGES = {"max_updates", "total_decisions", "eval_every", "eval_deals", "eval_opponents", "final_eval_deals",
                     "eval_against_start",
                     "checkpoint_every", "keep_checkpoints", "tensorboard", "progress", "threads", "compile_env",
                     "env_backend", "expert_rounds", "expert_workers", "expert_eval_deals", "expert_eval_opponents"}


class Trainer(WarmStarts):
    """A PPO self-play run; ``Trainer(config).train()``. ``resume``: True (the run folder's
    ``checkpoints/last.pt``) or a checkpoint path."""

    def __init__(self, config: TrainConfig, resume: bool | str | Path = False, overwrite: bool = False,
                 log: Callable[[str], None] = print) -> None:
        cfg, notes = config.validate().resolve_auto()
        self.config = cfg
        self.log = log
        for note in notes:
            log(note)
        try:                      # before anything in the folder is read, deleted or written
            self.run_lock = RunLock(cfg.run_path).acquire()
        except RunFolderBusy as busy:
            raise ConfigError(str(busy)) from None
        if not resume and (cfg.run_path / "checkpoints" / "last.pt").exists():
            if not overwrite:
                raise ConfigError(f"{cfg.run_path} already holds a run: continue it with --resume, start over with "
                                  "--overwrite, or pick another name (--set name=...)")
            for old in ("checkpoints", "tensorboard"):
                shutil.rmtree(cfg.run_path / old, ignore_errors=True)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.device = dev = torch.device(cfg.device)
        torch.manual_seed(cfg.seed)
        self.env = SpadesVectorEnv(cfg.num_envs, rules=cfg.rules, reward=cfg.reward, episode=cfg.episode,
                                   device=dev, seed=cfg.seed, reward_scale=cfg.reward_scale,
                                   shaping=cfg.shaping, win_bonus=cfg.win_bonus,
                                   check_actions=False, compile=cfg.compile_env, backend=cfg.env_backend)
        self.generator = torch.Generator(device=dev)
        self.generator.manual_seed(cfg.seed + 1)
        self.obs, self.mask = self._reset_tables(self.env)
        self.obs_size = self.env.obs_size
        self._rollout_storage: Optional[Rollout] = None     # reused by every collect()
        self.state_size = self.env.state_tensor().shape[1] if cfg.critic == "central" else None
        self.policy = PolicyNet(self.obs_size, cfg.hidden, cfg.layers, cfg.head_hidden, cfg.card_features).to(dev)
        self.critic = ValueNet(self.obs_size + (self.state_size or 0), cfg.hidden, cfg.layers).to(dev)
        self.optimizer = torch.optim.Adam(list(self.policy.parameters()) + list(self.critic.parameters()),
                                          lr=cfg.learning_rate, eps=1e-5)
        self.heuristic = HeuristicAgent(seed=cfg.seed)
        self.pool_weights: list[dict] = []
        self.pool_nets: list[PolicyNet] = []
        self.pool_added = 0
        B = cfg.num_envs
        self.controller = torch.zeros(B, 4, dtype=torch.int64, device=dev)    # LEARNER / POOL / HEURISTIC
        self.table_kind = torch.zeros(B, dtype=torch.int64, device=dev)       # index into KINDS
        self.learner_side = torch.zeros(B, dtype=torch.int64, device=dev)
        self.pool_slot = torch.zeros(B, dtype=torch.int64, device=dev)
        self.recent = {kind: deque(maxlen=RECENT_EPISODES) for kind in KINDS}
        self.update = 0
        self.decisions = 0
        self.wall_s = 0.0
        self.imitated = cfg.imitation_decisions == 0
        self.distilled = cfg.distill_data is None
        self.bid_value_rounds_done = 0
        self.expert_rounds_done = 0
        self.start_policy: Optional[dict] = None     # the policy's weights when PPO began (eval_against_start)
        self._start_results: dict[tuple, Any] = {}  # (deals, seed, opponent) -> its MatchResult
        self.last_gain: dict[str, Any] = {}        # opponent -> Interval of the last evaluation
        self.run_path = cfg.run_path
        self.checkpoint_dir = self.run_path / "checkpoints"
        self._assign(torch.ones(B, dtype=torch.bool, device=dev))
        if cfg.init_from and not resume:
            self._init_from(Path(cfg.init_from))
        resume_update = None
        if resume:
            path = self.checkpoint_dir / "last.pt" if resume is True else Path(resume)
            self.load_checkpoint(path)
            resume_update = self.update
        self.run_path.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir.mkdir(exist_ok=True)
        (self.run_path / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        columns = ["wall_s", "decisions_per_s", "rollout_s", "learn_s", "learning_rate", "loss__policy",
                   "loss__value", "loss__entropy_bid", "loss__entropy_card", "loss__approx_kl",
                   "loss__clip_fraction", "loss__explained_variance", "pool_size"]
        columns += [f"train__points_vs_{k}" for k in KINDS]
        for name in cfg.eval_opponents:
            columns += [f"eval__{name}__{s}" for s in ("diff", "low", "high", "made", "opp_made",
                                                       "gain", "gain_low", "gain_high")]
        self.metrics = MetricsLog(self.run_path, columns, cfg.tensorboard, resume_update)

    def _init_from(self, path: Path) -> dict:
        """Start from the policy (and critic, where it fits) of a checkpoint or model; returns its
        policy's arch."""
        data = read_checkpoint(path)
        if data["arch"] == self.policy.arch:
            self.policy.load_state_dict(data["policy"])
        elif self.policy.can_grow_from(data["arch"]):
            self.policy.load_grown(data["policy"], data["arch"])
            self.log(f"init_from: {path}'s policy {data['arch']} grown into {self.policy.arch} (same logits; "
                     "the new units start unused)")
        else:
            raise ConfigError(f"init_from={str(path)!r}: its policy has shape {data['arch']}, this config "
                              f"builds {self.policy.arch} (set hidden/layers/head_hidden to match, or larger to "
                              "grow it)")
        if "critic" in data and data.get("critic_arch") == self.critic.arch:
            self.critic.load_state_dict(data["critic"])
        else:
            self.log(f"init_from: {path} has no critic of this shape; the critic starts from scratch")
        self.imitated = True
        return data["arch"]

    # ------------------------------------------------------------------ opponents
    def _assign(self, tables: torch.Tensor) -> None:
        """Draw who plays the other side of the given tables (at the start of their episode)."""
        n = int(tables.sum())
        if n == 0:
            return
        cfg, dev = self.config, self.device
        shares = torch.tensor([float(cfg.opponents.get(k, 0.0)) for k in KINDS], device=dev)
        if not self.pool_weights:
            shares[POOL] = 0.0
        if float(shares.sum()) <= 0:
            shares[0] = 1.0
        kind = torch.multinomial(shares, n, replacement=True, generator=self.generator)
        side = torch.randint(0, 2, (n,), generator=self.generator, device=dev)
        slot = torch.randint(0, max(1, len(self.pool_weights)), (n,), generator=self.generator, device=dev)
        seats = torch.arange(4, device=dev)[None, :]
        other_side = (seats % 2) != side[:, None]
        code = torch.where(kind == 1, POOL, torch.where(kind == 2, HEURISTIC, LEARNER))
        ctrl = torch.where(other_side, code[:, None], torch.zeros_like(code)[:, None])
        idx = torch.nonzero(tables)[:, 0]
        self.controller[idx] = ctrl
        self.table_kind[idx] = kind
        self.learner_side[idx] = side
        self.pool_slot[idx] = slot

    def _add_to_pool(self) -> None:
        weights = {k: v.detach().to("cpu").clone() for k, v in self.policy.state_dict().items()}
        cfg = self.config
        if len(self.pool_weights) < cfg.pool_size:
            self.pool_weights.append(weights)
        else:
            self.pool_weights[self.pool_added % cfg.pool_size] = weights
        self.pool_added += 1
        self._load_pool_nets()

    def _load_pool_nets(self) -> None:
        cfg = self.config
        while len(self.pool_nets) < len(self.pool_weights):
            net = PolicyNet(self.obs_size, cfg.hidden, cfg.layers, cfg.head_hidden, cfg.card_features)
            self.pool_nets.append(net.to(self.device))
        for net, weights in zip(self.pool_nets, self.pool_weights):
            net.load_state_dict(weights)
            net.eval()

    # ------------------------------------------------------------------ starting scores
    def random_start(self, tables: Optional[int] = None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Random (B, 2) starting scores (-150..490 in steps of 10) and bags (0..bag_limit-1); with
        ``varied_start_share`` below 1, the other tables start from 0-0 and no bags."""
        B, rules = tables or self.config.num_envs, self.env.rules
        low, high = VARIED_START_TENS
        scores = torch.randint(low, high + 1, (B, 2), generator=self.generator, device=self.device) * 10
        bags = torch.randint(0, rules.bag_limit, (B, 2), generator=self.generator, device=self.device)
        share = self.config.varied_start_share
        if share < 1:
            varied = torch.rand(B, 1, generator=self.generator, device=self.device) < share
            scores, bags = scores * varied, bags * varied
        return scores, None if rules.bags_from_score_digit else bags

    def _reset_tables(self, env: SpadesVectorEnv) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.config.varied_start:
            return env.reset()
        scores, bags = self.random_start()
        return env.reset(scores=scores, bags=bags)

    def _vary_start(self, env: SpadesVectorEnv, done: torch.Tensor) -> None:
        """With ``varied_start``, the finished tables' next episodes start from new random scores."""
        if self.config.varied_start and bool(done.any()):
            scores, bags = self.random_start()
            env.set_start(scores, bags, tables=done)

    # ------------------------------------------------------------------ experience
    def _critic_input(self, obs: torch.Tensor, state: Optional[torch.Tensor]) -> torch.Tensor:
        return obs if state is None else torch.cat([obs, state], 1)

    @torch.no_grad()
    def _choose(self, obs: torch.Tensor, mask: torch.Tensor, controller: torch.Tensor,
                state: Optional[torch.Tensor], buf: Rollout, t: int) -> torch.Tensor:
        """Everyone's action at every table; fills the learner rows' log-probabilities and values."""
        actions = torch.zeros(obs.shape[0], dtype=torch.int64, device=self.device)
        learner_rows = torch.nonzero(controller == LEARNER)[:, 0]
        if learner_rows.numel():
            # in pure self-play every row is the learner's: read them without copies
            rows = slice(None) if learner_rows.numel() == obs.shape[0] else learner_rows
            logits = self.policy(obs[rows], mask[rows])
            logp_all = F.log_softmax(logits, 1)
            # softmax, not logp_all.exp(): exp is ten times slower on the masked -1e9 entries
            a = sample_actions(torch.softmax(logits, 1), self.generator)
            actions[rows] = a
            buf.logp[t, rows] = logp_all.gather(1, a[:, None])[:, 0]
            buf.value[t, rows] = self.critic(self._critic_input(obs[rows], None if state is None else state[rows]))
        pool_rows = controller == POOL
        if bool(pool_rows.any()):
            for slot in torch.unique(self.pool_slot[pool_rows]).tolist():
                rows = torch.nonzero(pool_rows & (self.pool_slot == slot))[:, 0]
                probs = torch.softmax(self.pool_nets[slot](obs[rows], mask[rows]), 1)
                actions[rows] = sample_actions(probs, self.generator)
        rows = torch.nonzero(controller == HEURISTIC)[:, 0]
        if rows.numel():
            actions[rows] = agent_actions(self.heuristic, obs[rows], mask[rows])
        return actions

    def collect(self) -> Rollout:
        """Play ``rollout_steps`` steps of every table. The storage is reused: the next call
        overwrites what this one returns (``learn`` has used it by then)."""
        cfg, env = self.config, self.env
        buf = self._rollout_storage
        if buf is None:
            buf = self._rollout_storage = Rollout.empty(cfg.rollout_steps, cfg.num_envs, self.obs_size,
                                                        self.state_size, self.device)
        else:       # reused: a fresh (T, B, 742) buffer costs ~70 ms of page faults per update
            buf.clear_choices()
        obs, mask = self.obs, self.mask
        for t in range(cfg.rollout_steps):
            seat = env.to_act
            controller = self.controller.gather(1, seat[:, None])[:, 0]
            state = env.state_tensor() if self.state_size else None
            actions = self._choose(obs, mask, controller, state, buf, t)
            buf.obs[t], buf.mask[t], buf.action[t], buf.seat[t] = obs, mask, actions, seat
            buf.learner[t] = controller == LEARNER
            if state is not None:
                buf.state[t] = state
            obs, mask, rewards, done, info = env.step(actions)
            buf.reward[t], buf.done[t] = rewards.to(torch.float32), done
            if bool(done.any()):
                self._episodes_finished(done, info["final_scores"])
                self._vary_start(env, done)
        self.obs, self.mask = obs, mask
        return buf

    def _episodes_finished(self, done: torch.Tensor, final_scores: torch.Tensor) -> None:
        idx = torch.nonzero(done)[:, 0]
        side = self.learner_side[idx]
        scores = final_scores[idx]
        diff = (scores.gather(1, side[:, None]) - scores.gather(1, (1 - side)[:, None]))[:, 0]
        for kind, d in zip(self.table_kind[idx].tolist(), diff.tolist()):
            self.recent[KINDS[kind]].append(d)
        self._assign(done)

    @torch.no_grad()
    def _bootstrap(self) -> torch.Tensor:
        """(B, 4): every seat's value where the rollout stops (its episode goes on)."""
        state = self.env.state_tensor() if self.state_size else None
        values = [self.critic(self._critic_input(self.env.observe_seat(seat), state)) for seat in range(4)]
        return torch.stack(values, 1)

    # ------------------------------------------------------------------ learning
    def _learner_precision(self):
        """bfloat16 autocast with ``learn_precision: bfloat16``, else nothing."""
        if self.config.learn_precision == "bfloat16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _learner_logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The policy's logits for learning: the trunk in the learner's precision, the heads in
        float32 (bfloat16 logits would blur the PPO ratios by a few percent)."""
        if self.config.learn_precision == "float32":
            return self.policy(obs, mask)
        with self._learner_precision():
            trunk, per_card = self.policy.embed(obs)
        return self.policy.heads(trunk.float(), None if per_card is None else per_card.float(), mask)

    def learn(self, buf: Rollout) -> dict:
        cfg = self.config
        advantages = seat_advantages(buf.reward, buf.done, buf.seat, buf.value, self._bootstrap(),
                                     cfg.gamma, cfg.gae_lambda)
        returns = advantages + buf.value
        data = buf.flat(buf.learner, advantage=advantages, ret=returns)
        n = data["action"].shape[0]
        if n == 0:
            return {}
        if cfg.anneal_lr:
            for group in self.optimizer.param_groups:
                group["lr"] = cfg.learning_rate * (1.0 - self.update / cfg.updates)
        stats: dict[str, list[float]] = {k: [] for k in ("policy", "value", "entropy_bid", "entropy_card",
                                                          "approx_kl", "clip_fraction")}
        params = list(self.policy.parameters()) + list(self.critic.parameters())
        critic_only = self.update < cfg.critic_warmup_updates
        with self._policy_parts_only():
            self._ppo_epochs(data, n, params, critic_only, stats)
        out = {f"loss__{k}": sum(v) / len(v) for k, v in stats.items() if v}
        with torch.no_grad():
            var = data["ret"].var()
            out["loss__explained_variance"] = float(1 - (data["ret"] - data["value"]).var() / var) if var > 0 else 0.0
        out["learning_rate"] = self.optimizer.param_groups[0]["lr"]
        return out

    @contextlib.contextmanager
    def _policy_parts_only(self):
        """Within it, the policy's weights outside ``policy_parts`` take no gradient, so PPO's
        steps leave them as they are (Adam skips weights without a gradient)."""
        part = self.config.policy_parts
        keep = {id(p) for p in self.policy.part_parameters(part)}
        frozen = [p for p in self.policy.parameters() if id(p) not in keep]
        for p in frozen:
            p.requires_grad_(False)
        try:
            yield
        finally:
            for p in frozen:
                p.requires_grad_(True)

    def _ppo_epochs(self, data: dict, n: int, params: list, critic_only: bool, stats: dict) -> None:
        """PPO's passes over one batch of experience (``stats`` collects the losses)."""
        cfg = self.config
        stop = False
        for _ in range(cfg.epochs):
            order = torch.randperm(n, generator=self.generator, device=self.device)
            for start in range(0, n, cfg.minibatch_size):
                mb = order[start:start + cfg.minibatch_size]
                if mb.numel() < 2:
                    continue
                obs = data["obs"][mb]
                logits = self._learner_logits(obs, data["mask"][mb])
                logp_all = F.log_softmax(logits, 1)
                action = data["action"][mb]
                logp = logp_all.gather(1, action[:, None])[:, 0]
                log_ratio = logp - data["logp"][mb]
                ratio = log_ratio.exp()
                adv = data["advantage"][mb]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip, 1 + cfg.clip)).mean()
                entropy = masked_entropy(logp_all, torch.softmax(logits, 1))
                with self._learner_precision():
                    value = self.critic(self._critic_input(obs, data["state"][mb] if "state" in data else None))
                value = value.float()
                value_loss = 0.5 * (value - data["ret"][mb]).pow(2).mean()
                loss = cfg.value_coef * value_loss
                if not critic_only:
                    loss = loss + policy_loss - cfg.entropy_coef * entropy.mean()
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    is_bid = action >= NUM_CARDS
                    approx_kl = float(((ratio - 1) - log_ratio).mean())
                    stats["policy"].append(float(policy_loss))
                    stats["value"].append(float(value_loss))
                    if bool(is_bid.any()):
                        stats["entropy_bid"].append(float(entropy[is_bid].mean()))
                    if bool((~is_bid).any()):
                        stats["entropy_card"].append(float(entropy[~is_bid].mean()))
                    stats["approx_kl"].append(approx_kl)
                    stats["clip_fraction"].append(float(((ratio - 1).abs() > cfg.clip).float().mean()))
                if cfg.target_kl is not None and approx_kl > cfg.target_kl and not critic_only:
                    stop = True
                    break
            if stop:
                break

    # ------------------------------------------------------------------ imitation warm start
    # ------------------------------------------------------------------ evaluation
    def evaluate(self, deals: int, seed: int, progress: bool = False) -> dict:
        """Duplicate matches of the current policy (greedy) against each ``eval_opponents``; with
        ``eval_against_start`` (once PPO has made an update) also its gain over the policy PPO
        started from, paired on the same deals."""
        from evaluation import evaluate, paired_difference

        def match(weights: Optional[dict], name: str, show: bool):
            policy = copy.deepcopy(self.policy).to("cpu").eval()
            if weights is not None:
                policy.load_state_dict(weights)

            def neural() -> NeuralAgent:          # the factory's name labels the team
                return NeuralAgent(policy=policy)
            return evaluate(neural, name, deals=deals, duplicate=True, rules=self.config.rules, seed=seed,
                            workers=1, progress=show)

        against_start = self.config.eval_against_start and self.start_policy is not None and self.update > 0
        row, results, gains = {}, {}, {}
        for name in self.config.eval_opponents:
            result = match(None, name, progress)
            a, b = result.teams["A"], result.teams["B"]
            row.update({f"eval__{name}__diff": result.score_diff.mean, f"eval__{name}__low": result.score_diff.low,
                        f"eval__{name}__high": result.score_diff.high, f"eval__{name}__made": a.make_rate,
                        f"eval__{name}__opp_made": b.make_rate})
            results[name] = result
            if against_start:
                key = (deals, seed, name)
                if key not in self._start_results:       # the start policy is fixed: play it once
                    self._start_results[key] = match(self.start_policy, name, False)
                start = self._start_results[key]
                gain, _ = paired_difference(result, start)
                row.update({f"eval__{name}__gain": gain.mean, f"eval__{name}__gain_low": gain.low,
                            f"eval__{name}__gain_high": gain.high})
                gains[name] = gain
        self.last_eval, self.last_gain = results, gains
        return row

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_data(self) -> dict:
        cfg = self.config
        return {
            "format": CHECKPOINT_FORMAT, "version": 1, "config": cfg.to_dict(), "rules": self.env.rules.name,
            "arch": self.policy.arch, "critic_arch": self.critic.arch,
            "update": self.update, "decisions": self.decisions, "wall_s": self.wall_s, "imitated": self.imitated,
            "distilled": self.distilled, "bid_value_rounds_done": self.bid_value_rounds_done,
            "expert_rounds_done": self.expert_rounds_done,
            "policy": self.policy.state_dict(), "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "pool": self.pool_weights, "pool_added": self.pool_added,
            "env": self.env.state_dict(), "generator": self.generator.get_state(),
            "heuristic_rng": list(_listify(self.heuristic.rng.getstate())),
            "controller": self.controller.cpu(), "table_kind": self.table_kind.cpu(),
            "learner_side": self.learner_side.cpu(), "pool_slot": self.pool_slot.cpu(),
            "recent": {k: list(v) for k, v in self.recent.items()},
            "provenance": {"trained_by": "spades-train", "config_name": cfg.name, "init_from": cfg.init_from},
            "start_policy": self.start_policy,
        }

    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/update_NNNNNN.pt`` and ``last.pt`` atomically; prune old ones."""
        data = self.checkpoint_data()
        numbered = self.checkpoint_dir / f"update_{self.update:06d}.pt"
        for path in (numbered, self.checkpoint_dir / "last.pt"):
            tmp = path.with_name(path.name + ".tmp")
            torch.save(data, tmp)
            tmp.replace(path)
        old = sorted(self.checkpoint_dir.glob("update_*.pt"))[:-self.config.keep_checkpoints]
        for path in old:
            path.unlink(missing_ok=True)
        return numbered

    def load_checkpoint(self, path: Path) -> None:
        data = read_checkpoint(path)
        if data["format"] != CHECKPOINT_FORMAT:
            raise ModelError(f"{path}: an exported model, not a training checkpoint (resume needs "
                             "checkpoints/last.pt or update_*.pt of a run)")
        saved = data["config"]
        now = self.config.to_dict()
        defaults = TrainConfig().to_dict()        # fields added since the checkpoint: their defaults
        differ = sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k, defaults[k]) != now[k])
        if differ:
            raise ConfigError(f"{path}: the checkpoint's run used other settings: "
                              + ", ".join(f"{k}={saved.get(k, defaults[k])!r} (config now {now[k]!r})" for k in differ)
                              + f"; only {', '.join(sorted(RESUMABLE_CHANGES))} may change on resume")
        try:
            self.policy.load_state_dict(data["policy"])
            self.critic.load_state_dict(data["critic"])
            self.optimizer.load_state_dict(data["optimizer"])
            self.pool_weights = list(data["pool"])
            self.pool_added = int(data["pool_added"])
            self._load_pool_nets()
            self.env.load_state_dict(data["env"])
            self.generator.set_state(data["generator"])
            self.heuristic.rng.setstate(_tuplify(data["heuristic_rng"]))
            for name in ("controller", "table_kind", "learner_side", "pool_slot"):
                setattr(self, name, data[name].to(self.device))
            self.recent = {k: deque(data["recent"][k], maxlen=RECENT_EPISODES) for k in KINDS}
            self.update, self.decisions = int(data["update"]), int(data["decisions"])
            self.wall_s, self.imitated = float(data["wall_s"]), bool(data["imitated"])
            self.distilled = bool(data.get("distilled", self.config.distill_data is None))
            self.bid_value_rounds_done = int(data.get("bid_value_rounds_done", 0))
            self.expert_rounds_done = int(data.get("expert_rounds_done", 0))
            self.start_policy = data.get("start_policy")
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise ModelError(f"{path}: incomplete or corrupt training checkpoint ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        self.obs, self.mask = self.env.observe()
        self.log(f"resumed from {path}: update {self.update}/{self.config.updates}, {self.decisions:,} decisions")

    # ------------------------------------------------------------------ the loop
    def train(self) -> dict:
        """Run to ``total_decisions``; returns the final evaluation row. The run folder is
        released when the run ends, however it ends."""
        try:
            return self._train()
        finally:
            self.run_lock.release()

    def _train(self) -> dict:
        cfg = self.config
        if not self.imitated:
            self.imitate()
            self.save_checkpoint()
        if not self.distilled:
            self.distill()
            self.save_checkpoint()
        while cfg.bid_value_deals and self.bid_value_rounds_done < cfg.bid_value_rounds:
            self.value_bids()
            self.save_checkpoint()
        if self.expert_rounds_done < cfg.expert_rounds:
            from .expert_iteration import run_rounds
            run_rounds(self)
        bar = _bar(cfg.last_update * cfg.batch_decisions, f"training {cfg.name}", cfg.progress,
                   initial=self.update * cfg.batch_decisions)
        eval_seed = cfg.seed + 1_000_003
        if self.start_policy is None and self.update == 0:
            self.start_policy = copy.deepcopy(self.policy.state_dict())
        while self.update < cfg.last_update:
            start = time.perf_counter()
            buf = self.collect()
            rollout_s = time.perf_counter() - start
            stats = self.learn(buf)
            learn_s = time.perf_counter() - start - rollout_s
            self.update += 1
            self.decisions += cfg.batch_decisions
            self.wall_s += rollout_s + learn_s
            if self.update % cfg.pool_every == 0:
                self._add_to_pool()
            row = {"update": self.update, "decisions": self.decisions, "wall_s": round(self.wall_s, 2),
                   "decisions_per_s": cfg.batch_decisions / (rollout_s + learn_s),
                   "rollout_s": rollout_s, "learn_s": learn_s, "pool_size": len(self.pool_weights), **stats}
            for kind, values in self.recent.items():
                if values:
                    row[f"train__points_vs_{kind}"] = sum(values) / len(values)
            if self.update == cfg.last_update:
                row.update(self._final_evaluation())
            elif cfg.eval_every and self.update % cfg.eval_every == 0:
                row.update(self.evaluate(cfg.eval_deals, eval_seed))
                bar.write(self._eval_line(row))
            self.metrics.add(row)
            bar.update(cfg.batch_decisions)
            bar.set_postfix_str(f"last update {row['decisions_per_s']:,.0f} dec/s" + (
                f", vs heuristic (train) {row['train__points_vs_heuristic']:+.1f}"
                if "train__points_vs_heuristic" in row else ""))
            if self.update % cfg.checkpoint_every == 0 or self.update == cfg.last_update:
                self.save_checkpoint()
            if (cfg.eval_every and self.update % cfg.eval_every == 0) or self.update == cfg.last_update:
                plot_learning_curves(self.metrics, self.run_path / "learning_curves.png", cfg.eval_opponents, cfg.name)
        bar.close()
        if not (self.checkpoint_dir / "last.pt").exists():       # max_updates 0 after init_from
            self.save_checkpoint()
        return self.finish()

    def _eval_line(self, row: dict) -> str:
        parts = [f"update {row['update']}, {row['decisions']:,} decisions:"]
        for name in self.config.eval_opponents:
            d, lo, hi = (row.get(f"eval__{name}__{s}") for s in ("diff", "low", "high"))
            parts.append(f"vs {name} {d:+.1f} [{lo:+.1f}, {hi:+.1f}]" if lo is not None else f"vs {name} {d:+.1f}")
            g, glo, ghi = (row.get(f"eval__{name}__{s}") for s in ("gain", "gain_low", "gain_high"))
            if g is not None:
                parts.append(f"(over the start {g:+.1f}" + (f" [{glo:+.1f}, {ghi:+.1f}])" if glo is not None else ")"))
        return " ".join(parts) + " points/hand (duplicate, 95% CI)"

    def _final_evaluation(self) -> dict:
        cfg = self.config
        deals = max(2, cfg.final_eval_deals)          # the final table always has rows
        self.log(f"final evaluation: {deals} duplicate deals (held out) against {', '.join(cfg.eval_opponents)}")
        self.final_row = self.evaluate(deals, cfg.seed + 2_000_003, progress=cfg.progress)
        return self.final_row

    def finish(self) -> dict:
        """The final table, ``final_eval.json`` and the exported model."""
        cfg = self.config
        if getattr(self, "final_row", None) is None:      # resumed after the last update
            self._final_evaluation()
        self.log(format_table(self.last_eval, cfg, self.last_gain))
        summary = {"update": self.update, "decisions": self.decisions, "wall_s": round(self.wall_s, 2),
                   "training_decisions_per_s": self.decisions / self.wall_s if self.wall_s else None,
                   "evaluation": {name: r.to_dict() for name, r in self.last_eval.items()},
                   "gain_over_start": {name: g.to_dict() for name, g in self.last_gain.items()}}
        (self.run_path / "final_eval.json").write_text(json.dumps(summary, indent=2, default=str))
        export_model(self.checkpoint_dir / "last.pt", self.run_path / "model.pt")
        self.metrics.close()
        self.log(f"run folder: {self.run_path} (model.pt, metrics.csv, learning_curves.png, tensorboard/)")
        return self.final_row


def format_table(results: dict, cfg: TrainConfig, gains: Optional[dict] = None) -> str:
    """The final evaluation as a table; ``gains`` (opponent -> Interval) adds the gain over the
    policy PPO started from, paired on the same deals."""
    gains = gains or {}
    head = f"{'opponent':<12} {'points/hand':>12} {'95% CI':>18} {'contracts made':>15} {'opp. made':>10}"
    lines = [head + (f" {'gain over the start (95% CI)':>30}" if gains else "")]
    for name, r in results.items():
        d = r.score_diff
        ci = f"[{d.low:+.1f}, {d.high:+.1f}]" if d.low is not None else "-"
        made = lambda t: f"{100 * t.make_rate:.1f}%" if t.make_rate is not None else "-"   # noqa: E731
        line = f"{name:<12} {d.mean:>+12.1f} {ci:>18} {made(r.teams['A']):>15} {made(r.teams['B']):>10}"
        if name in gains:
            g = gains[name]
            line += f" {f'{g.mean:+.1f}' + (f' [{g.low:+.1f}, {g.high:+.1f}]' if g.low is not None else ''):>30}"
        lines.append(line)
    return (f"{cfg.name}: the trained policy (greedy) against the baselines, {next(iter(results.values())).units} "
            "duplicate deals each\n" + "\n".join(lines))


def _listify(value):
    return [_listify(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tuplify(value):
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="spades-train", description="PPO with action masking, self-play on the batched engine: "
                                     "learns bidding and card play; see train/ppo.py and the README.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="YAML config (fields: spades-train --show-config)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a config field (repeatable), e.g. --set num_envs=256")
    parser.add_argument("--resume", nargs="?", const=True, default=False, metavar="CHECKPOINT",
                        help="continue the run from its checkpoints/last.pt (or the given checkpoint)")
    parser.add_argument("--overwrite", action="store_true",
                        help="start over in a run folder that already holds a run (its checkpoints are deleted)")
    parser.add_argument("--show-config", action="store_true", help="list every config field and exit")
    args = parser.parse_args(argv)
    if args.show_config:
        print(describe_fields())
        return 0
    try:
        config = load_config(args.config, args.set)
        if args.resume is True and not (config.run_path / "checkpoints" / "last.pt").exists():
            raise ConfigError(f"--resume: no checkpoint at {config.run_path / 'checkpoints' / 'last.pt'}")
        trainer = Trainer(config, resume=args.resume, overwrite=args.overwrite,
                          log=lambda line: print(line, flush=True))
        trainer.train()
    except (ConfigError, ModelError, FileNotFoundError, RulesError, RewardError, VectorEnvError) as exc:
        print(f"spades-train: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spades-train: interrupted; continue with --resume (from the last checkpoint)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
