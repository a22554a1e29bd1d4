"""One seat learns, the others are played by given policies: Spades as a single-agent gymnasium env.

Single-agent libraries (Stable-Baselines3, sb3-contrib's ``MaskablePPO``, ...) train on it as on
any gymnasium env::

    from spades_env.single_agent import SpadesSingleAgentEnv

    env = SpadesSingleAgentEnv(seat=0, opponents=agents.make("heuristic", seed=0))
    obs, info = env.reset(seed=0)
    while True:
        action = my_policy(obs, env.action_masks())
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break

A *policy* for another seat is either an object with ``act(obs, info) -> int`` (the agent
protocol) or a plain callable ``f(obs, info) -> int``. Both receive exactly what PettingZoo's
``env.last()`` hands that seat: ``obs = {"observation": float32 array, "action_mask": int8
array of rules.num_actions}`` (68, and one per message of a signal) and that seat's info dict. Seats without a policy play uniformly at random among
their legal actions, drawn from the env's ``np_random`` (so a seeded reset is deterministic).
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable, Mapping, Optional

import gymnasium
import numpy as np
from gymnasium import spaces

from .env import NO_WINNER, SpadesEnv
from .game import IllegalActionError, action_str

Policy = Any  # an object with act(obs, info) -> int, or a callable f(obs, info) -> int

ILLEGAL_ACTION_CHOICES = ("terminate", "raise")


class UniformRandomPolicy:
    """Plays a uniformly random legal action, drawn from ``rng`` (a numpy Generator)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def act(self, obs: dict, info: Optional[dict] = None) -> int:
        legal = np.flatnonzero(obs["action_mask"])
        return int(legal[self.rng.integers(len(legal))])


NO_ILLEGAL_ACTION = -1       # info["illegal_action"] when the episode did not end on an illegal action
OUT_OF_RANGE_ACTION = -2     # ... when it ended on something that is not an action id (0..67)


def _policy_function(policy: Policy, seat: int) -> Callable[[dict, dict], Any]:
    """The ``f(obs, info)`` to call for a policy given as an agent or as a callable."""
    act = getattr(policy, "act", None)
    if callable(act):
        return act
    if callable(policy):
        return policy
    raise TypeError(f"policy for seat {seat}: expected an object with act(obs, info) or a callable "
                    f"f(obs, info), got {type(policy).__name__}")


def _as_action(value: Any) -> Optional[int]:
    """An integer action from an int-like value (numpy scalars and 0-d arrays too), or None."""
    if isinstance(value, (bool, float, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


class SpadesSingleAgentEnv(gymnasium.Env):
    """Spades seen from one seat (``seat``); every other seat is played by its policy.

    Args:
        seat: the learner's seat (0..3; 0..2 with three players).
        opponents: one policy that plays every opposing seat (every other seat in cutthroat).
        partner: the policy of the learner's partner (partnership rules only).
        others: ``{seat: policy}`` for any other seats; a seat may be given only once overall.
        rules, reward, episode: as for :class:`spades_env.env.SpadesEnv`; ``episode`` defaults to
            ``"hand"`` here (one hand per episode).
        seed: used by the first ``reset()`` when it is given no seed.
        illegal_action: what an illegal learner action does. ``"terminate"`` (default, as in
            ``spades_v0.env()``) ends the episode with reward ``illegal_reward`` and sets
            ``info["illegal_action"]`` to it (-2 if it is not an action id; -1 at every other
            step); ``"raise"`` raises the engine's ``IllegalActionError``
            (naming the action, phase and legal actions) and leaves the state unchanged.
        illegal_reward: the learner's reward for an illegal action under ``"terminate"``.
        **env_kwargs: passed to the AEC env (``render_mode``, ``reward_scale``, ``win_bonus``,
            ``shaping``, single rule overrides such as ``target_score=300``).

    ``step`` returns as reward everything the learner's seat received since its previous
    decision (PettingZoo's cumulative reward for that agent), so the rewards of an episode sum
    to what the AEC env paid that seat. The action mask of the current decision is
    :meth:`action_masks` (bool, for ``MaskablePPO``) and ``info["action_mask"]`` (int8, usable
    as ``action_space.sample(mask=...)``); it is all zero once the episode is over. Every
    ``info`` has the same keys, shapes and types (``action_mask``, ``scores``, ``bags``,
    ``winner``, ``hands_played``, ``game_over``, ``illegal_action``), so libraries that batch
    infos or fix their layout at the first step (gymnasium's vector envs, Tianshou) take them.
    A policy that returns an illegal action for another seat raises ``IllegalActionError``
    naming that seat.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(self, seat: int = 0, opponents: Optional[Policy] = None, partner: Optional[Policy] = None,
                 others: Optional[Mapping[int, Policy]] = None, rules: Any = "standard",
                 reward: str = "team_score", episode: Optional[str] = "hand", seed: Optional[int] = None,
                 illegal_action: str = "terminate", illegal_reward: float = -1.0,
                 **env_kwargs: Any) -> None:
        super().__init__()
        self.aec_env = SpadesEnv(rules=rules, reward=reward, episode=episode, **env_kwargs)
        aec = self.aec_env
        n = aec.rules.players
        if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < n:
            raise ValueError(f"seat={seat!r}: expected an integer 0..{n - 1}")
        if illegal_action not in ILLEGAL_ACTION_CHOICES:
            raise ValueError(f"illegal_action={illegal_action!r}: expected one of {', '.join(ILLEGAL_ACTION_CHOICES)}")
        self.seat = int(seat)
        self.agent = aec.possible_agents[self.seat]
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.render_mode = aec.render_mode
        self._first_seed = seed

        self.policies = self._seat_policies(opponents, partner, others)
        self._random_policy = UniformRandomPolicy(self.np_random)
        self._policy_functions = {s: _policy_function(p, s) for s, p in self.policies.items()}

        self.observation_space = aec.observation_space(self.agent)["observation"]
        self.num_actions = aec.num_actions          # 68, and one per message under ``signals: N``
        self.action_space = spaces.Discrete(self.num_actions)
        self._mask = np.zeros(self.num_actions, dtype=np.int8)
        self._episode_over = True
        self._has_reset = False

    # ------------------------------------------------------------------ setup
    def _seat_policies(self, opponents: Optional[Policy], partner: Optional[Policy],
                       others: Optional[Mapping[int, Policy]]) -> dict[int, Policy]:
        """``{seat: policy}`` for the seats given a policy; the rest play at random."""
        rules = self.aec_env.rules
        n = rules.players
        me = self.seat
        policies: dict[int, Policy] = {}

        def assign(seat: Any, policy: Policy, source: str) -> None:
            if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < n:
                raise ValueError(f"{source}: seat {seat!r} is not a seat: expected an integer 0..{n - 1}")
            seat = int(seat)
            if seat == me:
                raise ValueError(f"{source}: seat {seat} is the learner's seat")
            if seat in policies:
                raise ValueError(f"{source}: seat {seat} was already given a policy")
            _policy_function(policy, seat)  # fails early on something that is no policy
            policies[seat] = policy

        if partner is not None:
            if not rules.partnerships:
                raise ValueError(f"partner: the {rules.name} rules have no partnerships; use opponents or others")
            assign((me + 2) % 4, partner, "partner")
        if opponents is not None:
            for seat in range(n):
                if seat != me and rules.side_of(seat) != rules.side_of(me):
                    assign(seat, opponents, "opponents")
        for seat, policy in (others or {}).items():
            if policy is not None:
                assign(seat, policy, "others")
        return policies

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[np.ndarray, dict]:
        """Deal (``options``: ``deal``, ``dealer``, ``scores``, ``bags``, as for the AEC env) and
        play the other seats until the learner has to act. A seed seeds both the deal (the same
        deal as ``spades_v0.env().reset(seed=seed)``) and the random seats."""
        if seed is None and not self._has_reset:
            seed = self._first_seed
        super().reset(seed=seed)
        self._random_policy.rng = self.np_random
        self._episode_over = True  # until the other seats have played up to the learner's turn
        self.aec_env.reset(seed=seed, options=options)
        self._has_reset = True
        self._play_others()
        self._episode_over = False
        # The learner takes part in every hand: a fresh deal never ends before its first decision.
        obs, _, info = self._learner_view()
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Apply the learner's action, then play the other seats until the learner acts again or
        the episode ends."""
        if not self._has_reset:
            raise RuntimeError("step() before reset(): call reset() first")
        if self._episode_over:
            raise RuntimeError("step() after the episode ended (or was interrupted by an error): "
                               "call reset() first")
        aec = self.aec_env
        if self.illegal_action == "terminate" and not self._is_legal(action):
            return self._end_on_illegal_action(action)
        aec.step(action)  # under "raise", the engine's IllegalActionError names action, phase and legal actions
        self._episode_over = True  # until the other seats have played up to the learner's turn
        self._play_others()
        obs, reward, info = self._learner_view()
        terminated = aec.terminations[self.agent]
        truncated = aec.truncations[self.agent]
        self._episode_over = terminated or truncated
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner's current decision, as a bool array of ``num_actions`` (MaskablePPO's
        convention); all False once the episode is over."""
        return self._mask.astype(bool)

    def render(self) -> Optional[str]:
        return self.aec_env.render()

    def close(self) -> None:
        self.aec_env.close()

    # ------------------------------------------------------------------ internals
    def _play_others(self) -> None:
        """Step the AEC env with the other seats' policies until the learner is to act or the
        episode is over."""
        aec = self.aec_env
        learner = self.agent
        while True:
            agent = aec.agent_selection
            if agent == learner or aec.terminations[agent] or aec.truncations[agent]:
                return
            seat = aec.agent_name_mapping[agent]
            obs = aec.observe(agent)
            act = self._policy_functions.get(seat, self._random_policy.act)
            action = act(obs, aec.infos[agent])
            checked = _as_action(action)
            if checked is None or not 0 <= checked < self.num_actions or not obs["action_mask"][checked]:
                legal = ", ".join(f"{a} ({action_str(a)})" for a in np.flatnonzero(obs["action_mask"]))
                raise IllegalActionError(
                    f"the policy of seat {seat} ({agent}) returned the illegal action {action!r} "
                    f"in phase {aec.phase}; legal actions: {legal}")
            aec.step(checked)

    def _learner_view(self) -> tuple[np.ndarray, float, dict]:
        """The learner's observation, the reward it received since its last decision, its info."""
        aec = self.aec_env
        view = aec.observe(self.agent)
        self._mask = view["action_mask"]
        return view["observation"], float(aec._cumulative_rewards[self.agent]), self._info()

    def _info(self, illegal_action: int = NO_ILLEGAL_ACTION) -> dict:
        """The same keys, shapes and types at every step (RL libraries batch infos, and some fix
        their layout at the first step): the learner's mask, the game's scores, bags, winner
        (-1 until there is one), hands played and whether the game is over (the AEC env's
        final info when the episode ends), and the illegal action that ended it (-1: none)."""
        game = self.aec_env.game
        return {"action_mask": self._mask.copy(), "scores": [int(v) for v in game.scores],
                "bags": [int(v) for v in game.bags], "winner": NO_WINNER if game.winner is None else int(game.winner),
                "hands_played": int(game.hand_number), "game_over": bool(game.game_over),
                "illegal_action": int(illegal_action)}

    def _is_legal(self, action: Any) -> bool:
        checked = _as_action(action)
        return checked is not None and 0 <= checked < self.num_actions and bool(self._mask[checked])

    def _end_on_illegal_action(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """End the episode with ``illegal_reward``, as PettingZoo's TerminateIllegalWrapper does."""
        legal = ", ".join(str(a) for a in np.flatnonzero(self._mask))
        warnings.warn(f"SpadesSingleAgentEnv: the illegal learner action {action!r:.40} (legal: {legal}) ended the "
                      "episode with illegal_reward (see info['illegal_action']); pass illegal_action='raise' to "
                      "get an error instead", stacklevel=3)
        aec = self.aec_env
        checked = _as_action(action)
        self._mask = np.zeros(self.num_actions, dtype=np.int8)
        self._episode_over = True
        info = self._info(checked if checked is not None and 0 <= checked < self.num_actions else OUT_OF_RANGE_ACTION)
        return aec.observe(self.agent)["observation"], self.illegal_reward, True, False, info
