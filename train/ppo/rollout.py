"""Rollout storage and per-seat advantages for turn-based self-play on the batched engine.

At every step of a table exactly one seat acts, but all four receive rewards (a trick, the end
of the hand). Each (table, seat) is its own trajectory: the rewards that arrive between two of
a seat's decisions belong to the first of them, and a seat's next value is the value of its
own next decision. ``seat_advantages`` computes GAE along those chains for the whole batch at
once, walking the steps backwards. :class:`Collector` plays the tables and fills the storage;
:class:`StartingScores` says where the tables' episodes start.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, fields
from typing import Optional

import torch
import torch.nn.functional as F

from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, NUM_ACTIONS, PHASE_BIDDING, PHASE_PLAY

from agents.networks import sample_actions   # (the policy's draw; the trainer and the lab's populations share it)

# Who chooses a seat's action on a table (a code per (table, seat)): the learning policy, a
# past policy from the pool, or the heuristic.
LEARNER, POOL, HEURISTIC = 0, 1, 2
# What plays the other side of a table (``table_kind``; index = the code): the learner itself,
# a past policy from the pool, or the heuristic (:class:`train.ppo.opponents.OpponentPool` draws it).
KINDS = ("self", "pool", "heuristic")
# Steps of a hand of the standard game without blind nil: four bids and 52 cards.
HAND_STEPS = 56


def hand_steps(rules) -> int:
    """Steps of a hand without blind nil under ``rules``: a bid and a hand's cards per seat, and
    a message per seat with ``signals`` (56 in the standard game, 32 on ``short_signals``)."""
    return rules.players * (1 + rules.cards_per_hand + (1 if rules.signals else 0))


def agent_actions(agent, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An AEC-env agent (``act(obs, info)``, e.g. the heuristic) choosing at each row of batched
    observations and masks: through its ``act_batch`` where it has one (the heuristic), else
    the rows handed over one by one in the AEC env's numpy form."""
    if hasattr(agent, "act_batch"):
        return agent.act_batch(obs, mask).to(obs.device)
    obs_np, mask_np = obs.cpu().numpy(), mask.cpu().numpy().astype("int8")
    chosen = [agent.act({"observation": o, "action_mask": m}) for o, m in zip(obs_np, mask_np)]
    return torch.tensor(chosen, dtype=torch.int64, device=obs.device)


@dataclass
class Rollout:
    """``steps`` x ``tables`` decisions (time first)."""

    obs: torch.Tensor           # (T, B, obs_size) float32: what the seat to act saw
    mask: torch.Tensor          # (T, B, num_actions) bool: 68, plus one per message with signals
    action: torch.Tensor        # (T, B) int64
    logp: torch.Tensor          # (T, B) float32: log-probability of the action (learner rows)
    value: torch.Tensor         # (T, B) float32: the critic's value (learner rows)
    seat: torch.Tensor          # (T, B) int64: the seat that acted
    learner: torch.Tensor       # (T, B) bool: the decision was the learning policy's
    reward: torch.Tensor        # (T, B, 4) float32: every seat's reward for the step
    done: torch.Tensor          # (T, B) bool: the episode ended with the step
    state: Optional[torch.Tensor] = None   # (T, B, state_size) float32: full state (central critic)

    @classmethod
    def empty(cls, steps: int, tables: int, obs_size: int, state_size: Optional[int],
              device: torch.device, num_actions: int = NUM_ACTIONS) -> "Rollout":
        T, B = steps, tables
        z = lambda *shape, dtype=torch.float32: torch.zeros(*shape, dtype=dtype, device=device)  # noqa: E731
        return cls(obs=z(T, B, obs_size), mask=z(T, B, num_actions, dtype=torch.bool),
                   action=z(T, B, dtype=torch.int64), logp=z(T, B), value=z(T, B),
                   seat=z(T, B, dtype=torch.int64), learner=z(T, B, dtype=torch.bool), reward=z(T, B, 4),
                   done=z(T, B, dtype=torch.bool),
                   state=None if state_size is None else z(T, B, state_size))

    def flat(self, rows: torch.Tensor, **extra: torch.Tensor) -> dict[str, torch.Tensor]:
        """The selected decisions ((T, B) bool) as flat tensors, plus ``extra`` (T, B, ...) ones.
        When every decision is selected (pure self-play) they are views of the storage, in the
        same order, instead of copies."""
        take_all = bool(rows.all())
        pick = (lambda v: v.reshape(-1, *v.shape[2:])) if take_all else (lambda v: v[rows])
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and f.name not in ("reward", "done", "learner"):
                out[f.name] = pick(value)
        for name, value in extra.items():
            out[name] = pick(value)
        return out

    def clear_choices(self) -> None:
        """Zero what only the learner's rows fill (``logp``, ``value``), before the storage is
        filled again by another rollout (everything else is overwritten at every step)."""
        self.logp.zero_()
        self.value.zero_()


def seat_advantages(reward: torch.Tensor, done: torch.Tensor, seat: torch.Tensor, value: torch.Tensor,
                    bootstrap: torch.Tensor, gamma: float, lam: float) -> torch.Tensor:
    """GAE per (table, seat) chain. ``reward`` (T, B, 4), ``done``/``seat``/``value`` (T, B),
    ``bootstrap`` (B, 4): each seat's value at the end of the rollout. Returns (T, B) advantages
    (meaningful where the acting seat's own values are; returns = advantages + values)."""
    T, B = seat.shape
    next_value = bootstrap.clone()
    next_adv = torch.zeros_like(bootstrap)
    pending = torch.zeros_like(bootstrap)               # rewards since the seat's next decision
    advantages = torch.zeros_like(value)
    for t in range(T - 1, -1, -1):
        # an episode that ended with step t owes nothing to what comes after it
        ended = done[t][:, None]
        next_value = next_value.masked_fill(ended, 0.0)
        next_adv = next_adv.masked_fill(ended, 0.0)
        pending = pending.masked_fill(ended, 0.0)
        pending = pending + reward[t]
        s = seat[t][:, None]
        delta = pending.gather(1, s)[:, 0] + gamma * next_value.gather(1, s)[:, 0] - value[t]
        adv = delta + gamma * lam * next_adv.gather(1, s)[:, 0]
        advantages[t] = adv
        next_value = next_value.scatter(1, s, value[t][:, None])
        next_adv = next_adv.scatter(1, s, adv[:, None])
        pending = pending.scatter(1, s, torch.zeros_like(value[t])[:, None])
    return advantages


def finished_rows(done: torch.Tensor) -> torch.Tensor:
    """(T, B) bool: steps whose episode ended within the rollout (their Monte-Carlo returns are
    complete); the steps after a table's last ``done`` are not."""
    T = done.shape[0]
    steps = torch.arange(T, device=done.device)[:, None].expand_as(done)
    last_done = torch.where(done, steps, torch.full_like(steps, -1)).amax(0)     # (B,)
    return steps <= last_done[None, :]


def intact_nils(state) -> torch.Tensor:
    """(B,) bool: the table is playing cards and some seat's nil (or blind nil) is still intact
    (bid, no trick taken): the positions where keeping, covering and breaking a nil are learnt."""
    return (state.phase == PHASE_PLAY) & ((state.bids == 0) & (state.tricks_taken == 0)).any(1)


def critic_input(obs: torch.Tensor, state: Optional[torch.Tensor]) -> torch.Tensor:
    """What the critic reads: the seat's observation, and with a central critic the full state."""
    return obs if state is None else torch.cat([obs, state], 1)


class StartingScores:
    """Where the tables' episodes start (``kind``, :data:`train.ppo.config.START_KINDS`): 0-0;
    ``"varied"``, random scores (-150..490 in steps of 10) and bags (0..bag_limit-1); or
    ``"real"``, scores and bags drawn from :mod:`spades_env.starts`' table of states whole games
    reach (the dealer stays the engine's draw). Drawn on a share ``varied_share`` of the episodes.
    ``kind`` may also be a bool, as the ``varied_start`` flag (True: ``"varied"``)."""

    def __init__(self, kind, varied_share: float, rules, tables: int, generator: torch.Generator,
                 device: torch.device) -> None:
        self.kind = ("varied" if kind else "zero") if isinstance(kind, bool) else kind
        self.varied_share, self.rules = varied_share, rules
        self.tables, self.generator, self.device = tables, generator, device
        self._real = None
        if self.kind == "real":
            from spades_env.starts import check_rules, load_table
            table = load_table()
            check_rules(table, rules)
            self._real = (torch.as_tensor(table.scores, device=device), torch.as_tensor(table.bags, device=device),
                          torch.as_tensor(table.counts, device=device).cumsum(0).to(torch.float64))
        elif self.kind not in ("zero", "varied"):
            raise ValueError(f"start={kind!r}: expected 'zero', 'varied' or 'real'")

    @property
    def varied(self) -> bool:
        """Episodes start elsewhere than 0-0 (varied or real)."""
        return self.kind != "zero"

    def sample(self, tables: Optional[int] = None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(B, 2) starting scores and bags (varied or real); with ``varied_share`` below 1, the
        other tables start from 0-0 and no bags."""
        from train.ppo.config import VARIED_START_TENS

        B, rules, gen, dev = tables or self.tables, self.rules, self.generator, self.device
        if self._real is not None:
            table_scores, table_bags, cumulative = self._real
            draw = torch.rand(B, generator=gen, device=dev, dtype=torch.float64) * cumulative[-1]
            index = torch.searchsorted(cumulative, draw, right=True).clamp_(max=len(cumulative) - 1)
            scores, bags = table_scores[index], table_bags[index]
        else:
            low, high = VARIED_START_TENS
            scores = torch.randint(low, high + 1, (B, 2), generator=gen, device=dev) * 10
            bags = torch.randint(0, rules.bag_limit, (B, 2), generator=gen, device=dev)
        if self.varied_share < 1:
            varied = torch.rand(B, 1, generator=gen, device=dev) < self.varied_share
            scores, bags = scores * varied, bags * varied
        return scores, None if rules.bags_from_score_digit else bags

    def reset(self, env) -> tuple[torch.Tensor, torch.Tensor]:
        """Start every table of ``env``; its first observations and masks."""
        if not self.varied:
            return env.reset()
        scores, bags = self.sample()
        return env.reset(scores=scores, bags=bags)

    def renew(self, env, done: torch.Tensor) -> None:
        """The finished tables' next episodes start from newly drawn scores (varied or real)."""
        if self.varied and bool(done.any()):
            scores, bags = self.sample()
            env.set_start(scores, bags, tables=done)


class Collector:
    """Plays the tables of the batched engine: every step, the learner, the pool's past policies
    and the heuristic choose at the tables and seats they control (:class:`train.ppo.opponents.OpponentPool`);
    the learner's decisions are stored with their log-probabilities and values for PPO."""

    RECENT_EPISODES = 2000

    def __init__(self, env, opponents, heuristic, starts: StartingScores, steps: int, central_critic: bool,
                 generator: torch.Generator, device: torch.device, cooperation=None,
                 blind_nil_explore: float = 0.0, nil_explore: float = 0.0,
                 nil_explore_max_bid: Optional[int] = None) -> None:

        self.env, self.opponents, self.heuristic, self.starts = env, opponents, heuristic, starts
        self.cooperation = cooperation       # coop.methods.cooperation.Cooperation, or None (every setting off)
        self.blind_nil_explore = blind_nil_explore   # share of offered blind nils bid whatever the policy says
        self.nil_explore = nil_explore               # share of bidding turns bid nil whatever the policy says
        self.nil_explore_max_bid = nil_explore_max_bid   # ... only where the policy drew a bid this low (None: any)
        self.counterfactual = None           # train.bids.bid_counterfactual.CounterfactualBids, or None
        self.hidden_utility = None           # coop.methods.hidden_utility.HiddenUtility (reward_bias), or None
        self.diversity = None                # coop.methods.diversity.Diversity (diversity_from), or None
        self.steps, self.generator, self.device = steps, generator, device
        self.obs, self.mask = starts.reset(env)
        self.obs_size = env.obs_size
        self.num_actions = env.rules.num_actions      # 68, and a message each with signals
        self.state_size = env.state_tensor().shape[1] if central_critic else None
        self.storage: Optional[Rollout] = None          # reused by every collect()
        # the learner's side's points minus the other side's, per finished episode, by opponent kind
        self.recent = {kind: deque(maxlen=self.RECENT_EPISODES) for kind in KINDS}
        self.intact_nil_share = 0.0          # of the last rollout's table steps (intact_nils)
        self.nil_bid_share = 0.0             # of the last rollout's bidding turns: nil or blind nil bid

    def explore_blind_nil(self, sampled: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``sampled`` with blind nil put in, where it is legal, on a ``blind_nil_explore`` share of
        the rows: a policy that never bids blind nil never learns to play one, so it could never
        find out what one is worth (as DouZero's epsilon-greedy, for the one action that matters).
        The forced bid is stored with the policy's own log-probability and no importance weight,
        so the bidding gradient is biased: an exploration device for the card play that follows."""
        return self.put_in(sampled, mask[:, BLIND_NIL_ACTION].bool(), self.blind_nil_explore, BLIND_NIL_ACTION)

    def explore_nil(self, sampled: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``sampled`` with nil put in on a ``nil_explore`` share of the bidding turns (nil legal):
        from scratch no seat bids nil, so neither keeping a nil nor breaking one is ever played,
        and nil's value can only be learnt from nils that are bid. The coin does not look at the
        hand, so the nils played value nil without bias (``bid_counterfactual_nil: played``).
        Stored with the policy's own log-probability, as :meth:`explore_blind_nil`. With
        ``nil_explore_max_bid`` only the turns where the policy drew a bid that low qualify: the
        policy's own weakest hands, where a nil can be kept (the coin then looks at the hand
        through the policy's bid, so nils valued by play, ``played``, are nils of low hands). Gates
        read from the policy's values instead (nil within a margin of the best bid; the favourite
        bid but nil at most 2) closed within 20 updates from scratch, the bids' values moving fast:
        experiments/2026-12-01-scratch-nil/README.md."""
        legal = mask[:, BID_ACTION_BASE].bool()
        if self.nil_explore_max_bid is not None:
            legal = legal & (sampled >= BID_ACTION_BASE) & (sampled <= BID_ACTION_BASE + self.nil_explore_max_bid)
        return self.put_in(sampled, legal, self.nil_explore, BID_ACTION_BASE)

    def put_in(self, sampled: torch.Tensor, legal: torch.Tensor, share: float, action: int) -> torch.Tensor:
        """``sampled`` with ``action`` in the rows where it is ``legal`` on a coin of probability ``share``
        (one draw per row from the run's stream, legal or not)."""
        coin = torch.rand(sampled.shape[0], generator=self.generator, device=sampled.device) < share
        return torch.where(legal & coin, torch.full_like(sampled, action), sampled)

    @torch.no_grad()
    def desynchronise(self, policy, critic, steps: Optional[int] = None) -> None:
        """Put the tables at different points of their hands before the first rollout
        (``desync_tables``). Every hand episode lasts the same steps (56 in the standard game:
        :func:`hand_steps`), so tables reset together stay in step for the whole run: they all bid
        in the same steps, and with short rollouts whole updates hold no bidding decision. Here the
        tables play ``steps`` steps (default: a hand's; nothing is learnt from them) and each keeps
        its state after a number of them drawn uniformly from 0..steps; the engine then continues
        from that mixture."""
        env = self.env
        steps = hand_steps(env.rules) if steps is None else steps
        scratch = Rollout.empty(1, env.num_envs, self.obs_size, self.state_size, self.device, self.num_actions)
        snapshots = [env.state_dict()]
        obs, mask = self.obs, self.mask
        for _ in range(steps):
            seat = env.to_act
            controller = self.opponents.controller.gather(1, seat[:, None])[:, 0]
            state = env.state_tensor() if self.state_size else None
            actions = self.choose(policy, critic, obs, mask, controller, state, scratch, 0)
            obs, mask, _, done, info = env.step(actions)
            if bool(done.any()):
                self._episodes_finished(done, info["final_scores"])
                self.starts.renew(env, done)
            snapshots.append(env.state_dict())
        kept = torch.randint(0, steps + 1, (env.num_envs,), generator=self.generator, device=self.device).cpu()
        tables = torch.arange(env.num_envs)
        mixed = dict(snapshots[-1])
        mixed["state"] = {name: torch.stack([snap["state"][name] for snap in snapshots])[kept, tables]
                          for name in snapshots[-1]["state"]}
        mixed["mask"] = torch.stack([snap["mask"] for snap in snapshots])[kept, tables]
        env.load_state_dict(mixed)
        self.obs, self.mask = env.observe()

    @torch.no_grad()
    def choose(self, policy, critic, obs: torch.Tensor, mask: torch.Tensor, controller: torch.Tensor,
               state: Optional[torch.Tensor], buf: Rollout, t: int) -> torch.Tensor:
        """Everyone's action at every table; fills the learner rows' log-probabilities and values."""
        actions = torch.zeros(obs.shape[0], dtype=torch.int64, device=self.device)
        learner_rows = torch.nonzero(controller == LEARNER)[:, 0]
        if learner_rows.numel():
            # in pure self-play every row is the learner's: read them without copies
            rows = slice(None) if learner_rows.numel() == obs.shape[0] else learner_rows
            logits = policy(obs[rows], mask[rows])
            logp_all = F.log_softmax(logits, 1)
            # softmax, not logp_all.exp(): exp is ten times slower on the masked -1e9 entries
            a = sample_actions(torch.softmax(logits, 1), self.generator)
            if self.blind_nil_explore > 0:       # draws nothing when off: runs without it repeat exactly
                a = self.explore_blind_nil(a, mask[rows])
            if self.nil_explore > 0:
                a = self.explore_nil(a, mask[rows])
            actions[rows] = a
            buf.logp[t, rows] = logp_all.gather(1, a[:, None])[:, 0]
            buf.value[t, rows] = critic(critic_input(obs[rows], None if state is None else state[rows]))
        pool_rows = controller == POOL
        if bool(pool_rows.any()):
            self.opponents.pool_actions(obs, mask, pool_rows, actions)
        if self.cooperation is not None:          # partner_population: its members' seats
            self.cooperation.population_actions(obs, mask, controller, actions)
        rows = torch.nonzero(controller == HEURISTIC)[:, 0]
        if rows.numel():
            actions[rows] = agent_actions(self.heuristic, obs[rows], mask[rows])
        return actions

    def collect(self, policy, critic) -> Rollout:
        """Play ``steps`` steps of every table. The storage is reused: the next call overwrites
        what this one returns (the update has used it by then)."""
        env = self.env
        buf = self.storage
        if buf is None:
            buf = self.storage = Rollout.empty(self.steps, env.num_envs, self.obs_size, self.state_size, self.device,
                                               self.num_actions)
        else:       # reused: a fresh (T, B, 742) buffer costs ~70 ms of page faults per update
            buf.clear_choices()
        obs, mask = self.obs, self.mask
        intact, bids, nils = (torch.zeros((), dtype=torch.int64, device=self.device) for _ in range(3))
        for t in range(self.steps):
            seat = env.to_act
            intact += intact_nils(env.state).sum()
            controller = self.opponents.controller.gather(1, seat[:, None])[:, 0]
            state = env.state_tensor() if self.state_size else None
            if self.cooperation is not None:      # other_play: the seats see relabelled games
                obs, mask, state = self.cooperation.view(seat, obs, mask, state)
            actions = self.choose(policy, critic, obs, mask, controller, state, buf, t)
            buf.obs[t], buf.mask[t], buf.action[t], buf.seat[t] = obs, mask, actions, seat
            buf.learner[t] = controller == LEARNER
            if state is not None:
                buf.state[t] = state
            if self.cooperation is not None:      # ...and answer in them: back to the real game's actions
                actions = self.cooperation.real_actions(seat, actions)
            bidding = env.state.phase == PHASE_BIDDING
            blind_nil = actions == BLIND_NIL_ACTION
            bids += (bidding | blind_nil).sum()
            nils += ((bidding & (actions == BID_ACTION_BASE)) | blind_nil).sum()
            if self.counterfactual is not None:   # bid_learning: counterfactual
                self.counterfactual.before_step(buf.obs[t], buf.mask[t], actions, buf.learner[t])
            bias = None
            if self.hidden_utility is not None:   # reward_bias: the learner's own events, read before the step
                bias = self.hidden_utility.rewards(env.state, seat, actions) * buf.learner[t]
            if self.diversity is not None:        # diversity_from: the surprise of the learner's choice (its view)
                bonus = self.diversity.rewards(buf.obs[t], buf.mask[t], buf.action[t], buf.learner[t])
                bias = bonus if bias is None else bias + bonus
            obs, mask, rewards, done, info = env.step(actions)
            if self.counterfactual is not None:
                self.counterfactual.after_step(done)
            buf.reward[t], buf.done[t] = rewards.to(torch.float32), done
            if bias is not None:
                buf.reward[t].scatter_add_(1, seat[:, None], bias[:, None])
            if bool(done.any()):
                self._episodes_finished(done, info["final_scores"])
                self.starts.renew(env, done)
        self.obs, self.mask = obs, mask
        self.intact_nil_share = int(intact) / (self.steps * env.num_envs)
        self.nil_bid_share = int(nils) / max(1, int(bids))
        if self.counterfactual is not None:
            self.counterfactual.end_rollout()
        return buf

    def _episodes_finished(self, done: torch.Tensor, final_scores: torch.Tensor) -> None:

        pool = self.opponents
        idx = torch.nonzero(done)[:, 0]
        side = pool.learner_side[idx]
        scores = final_scores[idx]
        diff = (scores.gather(1, side[:, None]) - scores.gather(1, (1 - side)[:, None]))[:, 0]
        for kind, d in zip(pool.table_kind[idx].tolist(), diff.tolist()):
            self.recent[KINDS[kind]].append(d)
        pool.assign(done)
        if self.cooperation is not None:
            self.cooperation.episodes_started(done, pool)

    @torch.no_grad()
    def bootstrap(self, critic) -> torch.Tensor:
        """(B, 4): every seat's value where the rollout stops (its episode goes on)."""
        state = self.env.state_tensor() if self.state_size else None
        if self.cooperation is not None:          # each seat's value of the game it sees
            views = [self.cooperation.seat_view(seat, self.env.observe_seat(seat), state) for seat in range(4)]
            return torch.stack([critic(critic_input(obs, seen)) for obs, seen in views], 1)
        values = [critic(critic_input(self.env.observe_seat(seat), state)) for seat in range(4)]
        return torch.stack(values, 1)

    def recent_points(self) -> dict[str, float]:
        """Mean points per episode against each kind of opponent, over the recent episodes."""
        return {f"train__points_vs_{kind}": sum(v) / len(v) for kind, v in self.recent.items() if v}
