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
:mod:`train.imitation.warm_starts`: ``imitation_decisions`` first imitates the heuristic (PPO then
improves on it); ``distill_data`` fits the policy to a stronger teacher's choices labelled by
``spades-label`` (:mod:`train.labelling.cli`), and ``bid_value_deals`` fits the bidding head to
Monte-Carlo values of every bid (:mod:`train.bids.bid_values`). ``expert_rounds`` then runs expert
iteration with the native search (:mod:`train.labelling.expert_iteration`).

The run folder holds ``config.yaml``, ``metrics.csv``, ``tensorboard/``, ``learning_curves.png``,
``checkpoints/`` (``last.pt`` and numbered ones, written atomically), ``final_eval.json`` and
``model.pt`` (the policy alone, for ``agents.make("neural", checkpoint=...)``). A checkpoint
holds everything the run needs to continue exactly: weights, optimizer, opponent pool, the
tables mid-hand and every random stream, so a resumed run continues as if never stopped.
"""
from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.ppo.trainer", "train.ppo.trainer:main"))

import argparse
import copy
import functools
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import torch
import yaml

from agents.heuristic import HeuristicAgent
from agents.networks import PolicyNet, ValueNet
from agents.neural import CHECKPOINT_FORMAT, ModelError, export_model, read_checkpoint
from spades_env.files import FileRuleError, check_output_folder, write_text
from spades_env.rewards import RewardError
from spades_env.rules import RulesError
from spades_env.vector import SpadesVectorEnv, VectorEnvError
from evaluation.cli_common import OneLineParser, add_progress_flags
from coop.methods.cooperation import Cooperation, CooperationError
from coop.methods.hidden_utility import HiddenUtility

from train.imitation import warm_starts
from train.imitation.fitting import progress_bar as _bar
from train.labelling.expert_manifest import verify_finished_rounds
from train.ppo.checkpoints import completed_run, listify, read_training_checkpoint, save_checkpoint, tuplify
from train.ppo.config import ConfigError, TrainConfig, describe_fields, load_config
from train.ppo.metrics import MetricsLog, plot_learning_curves
from train.ppo.opponents import KINDS, OpponentPool
from train.ppo.policy_eval import PolicyEvaluator, eval_columns, eval_line, format_games_table, format_table
from train.ppo.rollout import Collector, Rollout, StartingScores
from train.ppo.run_lock import RunFolderBusy, RunLock
from train.ppo.schedules import nil_explore_at, nil_explore_step
from train.ppo.threads import set_training_threads
from train.ppo.update import learner_logits, ppo_update

__all__ = ["Trainer", "main"]


class Trainer:
    """A PPO self-play run; ``Trainer(config).train()``. ``resume``: True (the run folder's
    ``checkpoints/last.pt``) or a checkpoint path.

    Its parts, each with explicit inputs: :class:`train.ppo.rollout.Collector` plays the tables,
    :class:`train.ppo.opponents.OpponentPool` says who sits where, :func:`train.ppo.update.ppo_update`
    learns from a rollout, :mod:`train.imitation.warm_starts` runs before PPO, :mod:`train.ppo.checkpoints`
    saves and restores, :class:`train.ppo.policy_eval.PolicyEvaluator` and
    :class:`train.ppo.metrics.MetricsLog` measure and record. The trainer owns the networks and the
    random streams and calls the parts in order."""

    def __init__(self, config: TrainConfig, resume: bool | str | Path = False, overwrite: bool = False,
                 log: Callable[[str], None] = print) -> None:
        cfg, notes = config.validate().resolve_auto()
        self.config = cfg
        self.log = log
        for note in notes:
            log(note)
        try:                      # the run folder by the output rule: not a file, a device or under a file
            check_output_folder(cfg.run_path, "run folder")
        except FileRuleError as exc:
            raise ConfigError(str(exc)) from None
        try:                      # before anything in the folder is read, deleted or written
            self.run_lock = RunLock(cfg.run_path).acquire()
        except RunFolderBusy as busy:
            raise ConfigError(str(busy)) from None
        try:
            self._build(resume, overwrite)
        except BaseException:          # a refused resume or a bad setting leaves the folder free
            self.run_lock.release()
            raise

    def _build(self, resume: bool | str | Path, overwrite: bool) -> None:
        cfg, log = self.config, self.log
        if not resume and (cfg.run_path / "checkpoints" / "last.pt").exists():
            if not overwrite:
                raise ConfigError(f"{cfg.run_path} already holds a run: continue it with --resume, start over with "
                                  "--overwrite, or pick another name (--set name=...)")
            for old in ("checkpoints", "tensorboard"):
                shutil.rmtree(cfg.run_path / old, ignore_errors=True)
        set_training_threads(cfg.threads, log)
        self.device = dev = torch.device(cfg.device)
        torch.manual_seed(cfg.seed)                   # the networks' first weights
        self.env = SpadesVectorEnv(cfg.num_envs, rules=cfg.rules, reward=cfg.reward, episode=cfg.episode,
                                   device=dev, seed=cfg.seed, reward_scale=cfg.reward_scale,
                                   shaping=cfg.shaping, win_bonus=cfg.win_bonus, bag_cost=cfg.bag_cost,
                                   check_actions=False, compile=cfg.compile_env, backend=cfg.env_backend)
        self.generator = torch.Generator(device=dev)  # every draw of the run: sampling, opponents, minibatches
        self.generator.manual_seed(cfg.seed + 1)
        self.heuristic = HeuristicAgent(seed=cfg.seed)
        self.starts = StartingScores(cfg.start_kind, cfg.varied_start_share, self.env.rules, cfg.num_envs,
                                     self.generator, dev)
        self.obs_size = self.env.obs_size
        # (a factory that does not hold the trainer: a trainer dropped unfinished frees its run folder at once)
        new_policy = functools.partial(PolicyNet, self.obs_size, cfg.hidden, cfg.layers, cfg.head_hidden,
                                       cfg.card_features, nil_defence_head=cfg.nil_defence_head,
                                       signals=self.env.rules.signals, nil_features=cfg.nil_features)
        self.opponents = OpponentPool(cfg.opponents, cfg.pool_size, cfg.num_envs, new_policy, self.generator, dev)
        self.collector = Collector(self.env, self.opponents, self.heuristic, self.starts, cfg.rollout_steps,
                                   cfg.critic == "central", self.generator, dev,
                                   blind_nil_explore=cfg.blind_nil_explore, nil_explore=cfg.nil_explore,
                                   nil_explore_max_bid=cfg.nil_explore_max_bid)
        hidden_utility = HiddenUtility(cfg.reward_bias, cfg.reward_scale)
        if hidden_utility:
            self.collector.hidden_utility = hidden_utility
        if cfg.diversity_from:
            from coop.methods.diversity import Diversity, DiversityError
            try:
                self.collector.diversity = Diversity(cfg.diversity_from, cfg.diversity_coef, cfg.reward_scale,
                                                     self.obs_size, dev, allow_held_out=cfg.allow_held_out)
            except DiversityError as exc:
                raise ConfigError(str(exc)) from None
        if cfg.bid_learning == "counterfactual":
            from train.bids.bid_counterfactual import CounterfactualBids
            self.collector.counterfactual = CounterfactualBids(
                self.env, self.env.obs_size, cfg.bid_replay_updates, dev, nil=cfg.bid_counterfactual_nil,
                bid_offsets=hidden_utility.bid_offsets(dev) if hidden_utility else None)
        state_size = self.collector.state_size
        self.policy = new_policy().to(dev)
        self.critic = ValueNet(self.obs_size + (state_size or 0), cfg.hidden, cfg.layers).to(dev)
        self.optimizer = torch.optim.Adam(list(self.policy.parameters()) + list(self.critic.parameters()),
                                          lr=cfg.learning_rate, eps=1e-5)
        self.bid_optimizer = None             # bid_learning: counterfactual: the bids' fit has its own Adam
        if cfg.bid_learning == "counterfactual":
            self.bid_optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.bid_value_learning_rate, eps=1e-5)
        self.update = 0
        self.decisions = 0
        self.wall_s = 0.0
        self.imitated = cfg.imitation_decisions == 0
        self.distilled = cfg.distill_data is None
        self.bid_value_rounds_done = 0
        self.expert_rounds_done = 0
        self.expert_manifest: Optional[dict] = {}   # round -> its files' hashes (train/labelling/expert_manifest.py)
        self.start_policy: Optional[dict] = None     # the policy's weights when PPO began (eval_against_start)
        self.evaluator = PolicyEvaluator(cfg)
        self.final_row: Optional[dict] = None
        self.run_path = cfg.run_path
        self.checkpoint_dir = self.run_path / "checkpoints"
        self.opponents.assign(torch.ones(cfg.num_envs, dtype=torch.bool, device=dev))
        # symmetry_augment, other_play, partner_population (coop/methods/cooperation.py); None when all are off
        try:
            self.cooperation = Cooperation.from_config(cfg, self.env.rules, cfg.num_envs, self.generator, dev)
        except CooperationError as exc:             # a setting of the config: reported as one
            raise ConfigError(str(exc)) from None
        if self.cooperation is not None:
            self.collector.cooperation = self.cooperation
            self.cooperation.episodes_started(torch.ones(cfg.num_envs, dtype=torch.bool, device=dev), self.opponents)
        if cfg.init_from and not resume:
            self._init_from(Path(cfg.init_from))
        resume_update = None
        self.completed: Optional[dict] = None        # final_eval.json of a complete run being resumed
        if resume:
            path = self.checkpoint_dir / "last.pt" if resume is True else Path(resume)
            data = self.load_checkpoint(path)
            resume_update = self.update
            # its count of expert rounds must match its records of them (the files are checked when
            # more rounds build on them, train/labelling/expert_iteration.py)
            verify_finished_rounds(self.run_path / "expert", self.expert_rounds_done, self.expert_manifest, str(path),
                                   check_files=False)
            self.completed = completed_run(self.run_path, data, cfg)
        if self.completed is not None:               # nothing to do: leave its files as they are
            self.metrics = None
            return
        self.run_path.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir.mkdir(exist_ok=True)
        write_text(self.run_path / "config.yaml", yaml.safe_dump(cfg.to_sections(), sort_keys=False), "run config")
        columns = ["wall_s", "decisions_per_s", "rollout_s", "learn_s", "learning_rate", "loss__policy",
                   "loss__value", "loss__entropy_bid", "loss__entropy_card", "loss__approx_kl",
                   "loss__clip_fraction", "loss__explained_variance", "pool_size"]
        if cfg.bid_learning == "counterfactual":
            columns.append("loss__bid_values")
        if cfg.bid_playout_every:
            columns += ["bid_playout_s", "bid_playout_bids"]
        columns += ["nil_explore", "train__nil_bid_share", "train__intact_nil_share"]
        columns += [f"train__points_vs_{k}" for k in KINDS] + eval_columns(
            cfg.eval_opponents, games=cfg.eval_games > 0 or cfg.final_eval_games > 0)
        self.metrics = MetricsLog(self.run_path, columns, cfg.tensorboard, resume_update)

    def _init_from(self, path: Path) -> dict:
        """Start from the policy (and critic, where it fits) of a checkpoint or model; returns its
        policy's arch."""
        data = read_checkpoint(path)
        if data["arch"].get("score_tilts"):
            self.log(f"init_from: {path}'s score tilts {data['arch']['score_tilts']} are a fixed rule on top of its "
                     "network (python -m train.bids.bid_tilt); this run starts from the network and trains without them")
            data = {**data, "arch": {k: v for k, v in data["arch"].items() if k != "score_tilts"}}
        if data["arch"] == self.policy.arch:
            self.policy.load_state_dict(data["policy"])
        elif self.policy.defends_nils and {**data["arch"], "nil_defence_head": True} == self.policy.arch:
            self.policy.load_adding_nil_defence(data["policy"])
            self.log(f"init_from: {path}'s policy gets a nil-defence head, a copy of its card head (same play)")
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
        if self.config.reset_bid_head:
            self.policy.reset_bid_head()
            self.log("reset_bid_head: the bidding head starts from random weights")
        self.imitated = True
        return data["arch"]

    # ------------------------------------------------------------------ one update
    def collect(self) -> Rollout:
        """Play ``rollout_steps`` steps of every table (:meth:`train.ppo.rollout.Collector.collect`).
        With ``nil_explore_target`` the collector's ``nil_explore`` is the run's state, stepped after
        every update (:meth:`adapt_nil_explore`); otherwise a function of the update."""
        if self.config.nil_explore_target is None:
            self.collector.nil_explore = nil_explore_at(self.config, self.update)
        return self.collector.collect(self.policy, self.critic)

    def adapt_nil_explore(self) -> None:
        """``nil_explore_target``: the next rollout's nil exploration from this one's intact nils
        (:func:`train.ppo.schedules.nil_explore_step`)."""
        if self.config.nil_explore_target is not None:
            self.collector.nil_explore = nil_explore_step(self.config, self.collector.nil_explore,
                                                          self.collector.intact_nil_share)

    def learn(self, buf: Rollout) -> dict:
        """One PPO update from the rollout (:func:`train.ppo.update.ppo_update`)."""
        augment = None
        if self.cooperation is not None and self.cooperation.augment_maps is not None:
            cfg, policy, device = self.config, self.policy, self.device
            augment = functools.partial(self.cooperation.augment, generator=self.generator,
                                        logits_of=lambda obs, mask: learner_logits(policy, obs, mask, cfg, device))
        counterfactual = self.collector.counterfactual
        return ppo_update(self.policy, self.critic, self.optimizer, buf, self.collector.bootstrap(self.critic),
                          self.config, self.update, self.generator, self.device, augment,
                          bid_records=None if counterfactual is None else counterfactual.records(),
                          bid_optimizer=self.bid_optimizer)

    # ------------------------------------------------------------------ warm starts
    def imitate(self) -> dict:
        result = warm_starts.imitate(self.policy, self.critic, self.config, self.heuristic, self.starts,
                                     self.generator, self.device, self.log)
        self.imitated = True
        return result

    def distill(self) -> dict:
        result = warm_starts.distill(self.policy, self.config, self.env.rules, self.generator, self.device, self.log)
        self.distilled = True
        return result

    def value_bids(self) -> dict:
        """One more round of Monte-Carlo bid values (counted in ``bid_value_rounds_done``)."""
        round_ = self.bid_value_rounds_done + 1
        result = warm_starts.value_bids(self.policy, self.config, self.env.rules, self.heuristic, self.starts,
                                        round_, self.generator, self.device, self.log)
        self.bid_value_rounds_done = round_
        return result

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_data(self) -> dict:
        cfg = self.config
        return {
            "format": CHECKPOINT_FORMAT, "version": 1, "config": cfg.to_dict(), "rules": self.env.rules.name,
            "arch": self.policy.arch, "critic_arch": self.critic.arch,
            "update": self.update, "decisions": self.decisions, "wall_s": self.wall_s, "imitated": self.imitated,
            "distilled": self.distilled, "bid_value_rounds_done": self.bid_value_rounds_done,
            "expert_rounds_done": self.expert_rounds_done, "expert_manifest": self.expert_manifest,
            "policy": self.policy.state_dict(), "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            **self.opponents.state_dict(),
            "env": self.env.state_dict(), "generator": self.generator.get_state(),
            "heuristic_rng": list(listify(self.heuristic.rng.getstate())),
            "recent": {k: list(v) for k, v in self.collector.recent.items()},
            "provenance": {"trained_by": "spades-train", "config_name": cfg.name, "init_from": cfg.init_from},
            "start_policy": self.start_policy,
            **({} if cfg.nil_explore_target is None else {"nil_explore": self.collector.nil_explore}),
            **({} if self.cooperation is None else {"cooperation": self.cooperation.state_dict()}),
            **({} if self.collector.counterfactual is None
               else {"bid_counterfactual": self.collector.counterfactual.state_dict(),
                     "bid_optimizer": self.bid_optimizer.state_dict()}),
        }

    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/update_NNNNNN.pt`` and ``last.pt`` atomically; prune old ones."""
        return save_checkpoint(self.checkpoint_data(), self.checkpoint_dir, self.update, self.config.keep_checkpoints)

    def load_checkpoint(self, path: Path) -> dict:
        """Continue from a checkpoint of this run's settings; returns its contents."""
        data = read_training_checkpoint(path, self.config)
        try:
            self.policy.load_state_dict(data["policy"])
            self.critic.load_state_dict(data["critic"])
            self.optimizer.load_state_dict(data["optimizer"])
            self.opponents.load_state_dict(data)
            self.env.load_state_dict(data["env"])
            self.generator.set_state(data["generator"])
            self.heuristic.rng.setstate(tuplify(data["heuristic_rng"]))
            for kind in KINDS:
                self.collector.recent[kind].clear()
                self.collector.recent[kind].extend(data["recent"][kind])
            self.update, self.decisions = int(data["update"]), int(data["decisions"])
            self.wall_s, self.imitated = float(data["wall_s"]), bool(data["imitated"])
            self.distilled = bool(data.get("distilled", self.config.distill_data is None))
            self.bid_value_rounds_done = int(data.get("bid_value_rounds_done", 0))
            self.expert_rounds_done = int(data.get("expert_rounds_done", 0))
            self.expert_manifest = data.get("expert_manifest")      # None: a checkpoint from before it
            self.start_policy = data.get("start_policy")
            if self.config.nil_explore_target is not None:
                self.collector.nil_explore = float(data["nil_explore"])
            if self.cooperation is not None:
                try:
                    self.cooperation.load_state_dict(data.get("cooperation"))
                except CooperationError as exc:
                    raise ConfigError(str(exc)) from None
            if self.collector.counterfactual is not None:
                self.collector.counterfactual.load_state_dict(data.get("bid_counterfactual"))
                if "bid_optimizer" in data:
                    self.bid_optimizer.load_state_dict(data["bid_optimizer"])
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise ModelError(f"{path}: incomplete or corrupt training checkpoint ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        self.collector.obs, self.collector.mask = self.env.observe()
        self.log(f"resumed from {path}: update {self.update}/{self.config.updates}, {self.decisions:,} decisions")
        return data

    # ------------------------------------------------------------------ the loop
    def train(self) -> dict:
        """Run to ``total_decisions``; returns the final evaluation row. The run folder is
        released when the run ends, however it ends."""
        try:
            if self.completed is not None:
                self.log(f"{self.run_path} is complete: update {self.update}/{self.config.last_update}, final "
                         "evaluation and model.pt written; nothing to do (raise total_decisions or expert_rounds "
                         "to continue it)")
                return {}
            return self._train()
        finally:
            self.run_lock.release()

    def _train(self) -> dict:
        cfg = self.config
        self._warm_starts()
        bar = _bar(cfg.last_update * cfg.batch_decisions, f"training {cfg.name}", cfg.progress,
                   initial=self.update * cfg.batch_decisions)
        eval_seed = cfg.seed + 1_000_003
        if self.start_policy is None and self.update == 0:
            self.start_policy = copy.deepcopy(self.policy.state_dict())
        if cfg.desync_tables and self.update == 0:
            self.collector.desynchronise(self.policy, self.critic)
        while self.update < cfg.last_update:
            row = self._one_update()
            if cfg.bid_playout_every and self.update % cfg.bid_playout_every == 0:
                row.update(self.play_out_bids())
                row["wall_s"] = round(self.wall_s, 2)
            if self.update == cfg.last_update:
                row.update(self._final_evaluation())
            elif cfg.eval_every and self.update % cfg.eval_every == 0:
                row.update(self.evaluate(cfg.eval_deals, eval_seed))
                if cfg.eval_games:           # whole games: the learning curves' games won
                    row.update(self.evaluator.evaluate_games(self.policy, cfg.eval_games, eval_seed + 1))
                bar.write(eval_line(row, cfg.eval_opponents))
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

    def _warm_starts(self) -> None:
        """Those not done yet, in order, each followed by a checkpoint; then the expert rounds."""
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
        if self.expert_rounds_done or cfg.expert_rounds:      # checks the records of the rounds done
            from train.labelling.expert_iteration import run_rounds
            if not (self.checkpoint_dir / "last.pt").exists():
                self.save_checkpoint()        # the rounds' start (init_from, no warm start): a kill in round 1 resumes
            run_rounds(self)

    def _one_update(self) -> dict:
        """Collect, learn, count; the update's metrics row (without evaluations)."""
        cfg = self.config
        start = time.perf_counter()
        buf = self.collect()
        rollout_s = time.perf_counter() - start
        stats = self.learn(buf)
        learn_s = time.perf_counter() - start - rollout_s
        self.update += 1
        self.decisions += cfg.batch_decisions
        self.wall_s += rollout_s + learn_s
        if self.update % cfg.pool_every == 0:
            self.opponents.add(self.policy)
        row = {"update": self.update, "decisions": self.decisions, "wall_s": round(self.wall_s, 2),
               "decisions_per_s": cfg.batch_decisions / (rollout_s + learn_s),
               "rollout_s": rollout_s, "learn_s": learn_s, "pool_size": len(self.opponents.weights), **stats,
               "nil_explore": self.collector.nil_explore, "train__nil_bid_share": self.collector.nil_bid_share,
               "train__intact_nil_share": self.collector.intact_nil_share, **self.collector.recent_points()}
        self.adapt_nil_explore()            # the row keeps the share this rollout explored with
        return row

    def play_out_bids(self) -> dict:
        """``bid_playout_every``: a round of bids valued by playing each out with the current policy on
        every seat (:func:`train.bids.bid_values.collect_bid_values`, no opponent agent), kept for the
        bids' fit until the next round (:meth:`train.bids.bid_counterfactual.CounterfactualBids.set_played_out`)."""
        from train.bids.bid_values import collect_bid_values
        cfg, began = self.config, time.perf_counter()
        data = collect_bid_values(self.policy, self.env.rules, cfg.bid_playout_deals, self.generator, self.device,
                                  start=self.starts.sample if self.starts.varied else None, bag_cost=cfg.bag_cost)
        kept = self.collector.counterfactual.set_played_out(data, cfg.reward_scale)
        seconds = time.perf_counter() - began
        self.wall_s += seconds
        return {"bid_playout_s": seconds, "bid_playout_bids": kept}

    def evaluate(self, deals: int, seed: int, progress: bool = False) -> dict:
        """Duplicate matches of the current policy (greedy) against each ``eval_opponents``; with
        ``eval_against_start`` (once PPO has made an update) also its gain over the policy PPO
        started from, paired on the same deals."""
        against_start = self.config.eval_against_start and self.start_policy is not None and self.update > 0
        return self.evaluator.evaluate(self.policy, self.start_policy if against_start else None, deals, seed,
                                       progress)

    def _final_evaluation(self) -> dict:
        cfg = self.config
        deals = max(2, cfg.final_eval_deals)          # the final table always has rows
        self.log(f"final evaluation: {deals} duplicate deals (held out) against {', '.join(cfg.eval_opponents)}")
        self.final_row = self.evaluate(deals, cfg.seed + 2_000_003, progress=cfg.progress)
        if cfg.final_eval_games:         # after the single hands: their numbers stay as they were
            self.log(f"final evaluation in whole games: {cfg.final_eval_games} duplicate game seeds against "
                     f"{', '.join(cfg.eval_opponents)}")
            self.final_row.update(self.evaluator.evaluate_games(self.policy, cfg.final_eval_games, cfg.seed + 3_000_003,
                                                                progress=cfg.progress))
        return self.final_row

    def finish(self) -> dict:
        """The final table, ``final_eval.json`` and the exported model."""
        cfg = self.config
        if self.final_row is None:      # resumed after the last update, before the files were written
            self._final_evaluation()
        results, gains = self.evaluator.last_results, self.evaluator.last_gains
        self.log(format_table(results, cfg, gains))
        games = self.evaluator.last_game_results if cfg.final_eval_games else {}
        if games:
            self.log(format_games_table(games, cfg))
        summary = {"update": self.update, "decisions": self.decisions, "wall_s": round(self.wall_s, 2),
                   "training_decisions_per_s": self.decisions / self.wall_s if self.wall_s else None,
                   "evaluation": {name: r.to_dict() for name, r in results.items()},
                   "gain_over_start": {name: g.to_dict() for name, g in gains.items()},
                   "evaluation_games": {name: r.to_dict(unit_diffs=False) for name, r in games.items()}}
        write_text(self.run_path / "final_eval.json", json.dumps(summary, indent=2, default=str), "final_eval.json")
        export_model(self.checkpoint_dir / "last.pt", self.run_path / "model.pt")
        self.metrics.close()
        self.log(f"run folder: {self.run_path} (model.pt, metrics.csv, learning_curves.png, tensorboard/)")
        return self.final_row


# ------------------------------------------------------------------ the recipe hook (train/recipes/)

def add_recipe_flags(parser: argparse.ArgumentParser) -> None:
    """``--recipe FILE [--dry-run] [--from STEP=MODEL]``: the runner lives in :mod:`train.recipes`."""
    parser.add_argument("--recipe", metavar="FILE", help="run a recipe: named steps, each a command with its config "
                        "(configs/recipes/neural.yaml makes the shipped model); steps done are reused")
    parser.add_argument("--dry-run", action="store_true", help="with --recipe: print every step's command and "
                        "whether it would run or be reused, and run nothing")
    parser.add_argument("--from", dest="from_step", action="append", default=[], metavar="STEP=MODEL",
                        help="with --recipe: take the shipped model MODEL (agents/models/manifest.json) as STEP's "
                             "output and skip what only fed it (repeatable)")


def recipe_main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.recipe is None:
        parser.error("--dry-run and --from go with --recipe FILE")
    clashing = [flag for flag, given in (("--config", args.config), ("--set", args.set), ("--resume", args.resume),
                                         ("--overwrite", args.overwrite), ("--show-config", args.show_config)) if given]
    if clashing:
        parser.error(f"--recipe runs its own steps; {clashing[0]} goes with --config (a recipe's configs and "
                     "overrides are written in the recipe file)")
    from train.recipes import run_recipe
    return run_recipe(args.recipe, dry_run=args.dry_run, starts=args.from_step)


def main(argv: Optional[list[str]] = None) -> int:
    parser = OneLineParser(prog="spades-train", description="PPO with action masking, self-play on the batched engine: "
                                     "learns bidding and card play; see train/ppo/trainer.py and the README.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="YAML config (fields: spades-train --show-config)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a config field (repeatable), e.g. --set num_envs=256 or --set ppo.clip=0.3")
    parser.add_argument("--resume", nargs="?", const=True, default=False, metavar="CHECKPOINT",
                        help="continue the run from its checkpoints/last.pt (or the given checkpoint); a complete "
                             "run is left as it is")
    parser.add_argument("--overwrite", action="store_true",
                        help="start over in a run folder that already holds a run (its checkpoints are deleted)")
    parser.add_argument("--show-config", action="store_true", help="list every config field by section and exit")
    add_recipe_flags(parser)
    add_progress_flags(parser)
    args = parser.parse_args(argv)
    if args.recipe is not None or args.dry_run or args.from_step:      # a recipe: train/recipes/
        return recipe_main(parser, args)
    if args.no_progress:                   # the flag every command takes; the same as --set progress=false
        args.set.append("progress=false")
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

