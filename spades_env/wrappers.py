"""PettingZoo's standard AEC wrappers, with the same behaviour and without the per-read cost.

The stock wrappers reach the env's attributes through ``__getattr__`` at every level (about 2 us
a read, some 30 us a decision through three wrappers). These subclasses keep every check and
side effect of the originals (and ``isinstance`` still sees the originals) but read the hot
attributes straight from the unwrapped env and call the inner env directly. Each keeps its own
state under its own names and overrides every method of the original that reads state, so
nothing here depends on PettingZoo's private attributes (the unwrapped env's AEC bookkeeping,
``_cumulative_rewards`` and friends, is the protocol every AEC env implements).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import (AssertOutOfBoundsWrapper, BaseWrapper, OrderEnforcingWrapper,
                                       TerminateIllegalWrapper)


def _forward(name: str, guard_before_reset: bool = False) -> property:
    """A property reading ``name`` straight from the unwrapped env (optionally refusing, like
    OrderEnforcingWrapper, to be read before ``reset``)."""
    def get(self):
        if guard_before_reset and not self._was_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self._raw, name)
    get.__name__ = name
    return property(get)


_HOT_ATTRIBUTES = ("agent_selection", "agents", "possible_agents", "rewards", "terminations",
                   "truncations", "infos", "_cumulative_rewards", "observation_spaces", "action_spaces")
_GUARDED_BEFORE_RESET = ("rewards", "terminations", "truncations", "infos", "agent_selection", "agents")


class _FastAttributes:
    """Direct reads of the attributes every AEC loop touches (set below from _HOT_ATTRIBUTES)."""

    def observation_space(self, agent):
        return self._raw.observation_spaces[agent]

    def action_space(self, agent):
        return self._raw.action_spaces[agent]


class FastTerminateIllegalWrapper(_FastAttributes, TerminateIllegalWrapper):
    """An illegal action ends the game, the mover scoring ``illegal_reward``: the mask checked is
    the one of the acting agent's last observation (observed now if it was not)."""

    def __init__(self, env, illegal_reward: float) -> None:
        TerminateIllegalWrapper.__init__(self, env, illegal_reward)
        self._raw = env.unwrapped
        self._illegal_reward = float(illegal_reward)
        self._last_obs: Any = None          # the acting agent's last observation, until it steps
        self._last_info: Any = None
        self._ended_by_illegal_move = False

    def reset(self, seed=None, options=None) -> None:
        self._ended_by_illegal_move = False
        self._last_obs = None
        self._last_info = None
        self.env.reset(seed=seed, options=options)

    def observe(self, agent):
        raw = self._raw
        obs = self.env.observe(agent)
        if agent == raw.agent_selection:
            self._last_obs = obs
            self._last_info = raw.infos.get(agent, {})
        return obs

    def step(self, action) -> None:
        raw = self._raw
        agent = raw.agent_selection
        if self._last_obs is None:
            self.observe(agent)
        prev = self._last_obs
        if isinstance(prev, dict):
            mask = prev["action_mask"]
        else:
            mask = self._last_info["action_mask"]
        self._last_obs = None
        self._last_info = None
        dead = raw.terminations[agent] or raw.truncations[agent]
        if self._ended_by_illegal_move and dead:
            raw._was_dead_step(action)
        elif not dead and not mask[action]:
            EnvLogger.warn_on_illegal_move()
            raw._cumulative_rewards[agent] = 0
            raw.terminations = dict.fromkeys(raw.agents, True)
            raw.truncations = dict.fromkeys(raw.agents, True)
            raw.rewards = dict.fromkeys(raw.truncations, 0)
            raw.rewards[agent] = self._illegal_reward
            raw._accumulate_rewards()
            raw._deads_step_first()
            self._ended_by_illegal_move = True
            if hasattr(raw, "_done"):  # SpadesEnv: the episode is over, every mask is now zero
                raw._done = True
        else:
            self.env.step(action)


class FastAssertOutOfBoundsWrapper(_FastAttributes, AssertOutOfBoundsWrapper):
    def __init__(self, env) -> None:
        AssertOutOfBoundsWrapper.__init__(self, env)
        self._raw = env.unwrapped
        self._n = self._raw.action_spaces[self._raw.possible_agents[0]].n

    def observe(self, agent):
        return self.env.observe(agent)

    def step(self, action) -> None:
        if not (type(action) is int and 0 <= action < self._n):
            raw = self._raw
            agent = raw.agent_selection
            # PettingZoo's AssertOutOfBoundsWrapper raises AssertionError here; so do we, saying what
            # was given (a bool or a float is not an action id even where gymnasium's Discrete takes it)
            assert (action is None and (raw.terminations[agent] or raw.truncations[agent])) or (
                not isinstance(action, (bool, np.bool_, float, np.floating))
                and raw.action_spaces[agent].contains(action)), \
                (f"action {action!r} is not in action space: expected an integer action id 0..{self._n - 1}"
                 + (" (or None once this agent is done)" if action is not None else
                    f"; None is only for an agent that is done, and {agent} is to act"))
        self.env.step(action)


def _order_enforcing_iter(wrapper, max_iter: int):
    raw = wrapper._raw
    while raw.agents and max_iter > 0:
        max_iter -= 1
        agent = raw.agent_selection
        assert wrapper._stepped, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._stepped = False
        yield agent


class FastOrderEnforcingWrapper(_FastAttributes, OrderEnforcingWrapper):
    """Refuses use before ``reset`` (reads, observe, step, state, render, agent_iter) and a
    second turn of ``agent_iter`` without a ``step``; warns on a step after the game ended."""

    _GUARDED_NAMES = frozenset(_GUARDED_BEFORE_RESET + ("num_agents",))

    def __init__(self, env) -> None:
        self._was_reset = False     # set before the base class: __getattr__ reads it
        self._stepped = False       # a step (or reset) since agent_iter last yielded
        OrderEnforcingWrapper.__init__(self, env)
        self._raw = env.unwrapped

    def __getattr__(self, name: str) -> Any:
        if name in FastOrderEnforcingWrapper._GUARDED_NAMES and not self._was_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return BaseWrapper.__getattr__(self, name)

    def reset(self, seed=None, options=None) -> None:
        self._was_reset = True
        self._stepped = True
        self.env.reset(seed=seed, options=options)

    def render(self):
        if not self._was_reset:
            EnvLogger.error_render_before_reset()
        return self.env.render()

    def state(self):
        if not self._was_reset:
            EnvLogger.error_state_before_reset()
        return self.env.state()

    def observe(self, agent):
        if not self._was_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.observe(agent)

    def step(self, action) -> None:
        if not self._was_reset:
            EnvLogger.error_step_before_reset()
        elif not self._raw.agents:
            self._stepped = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._stepped = True
            self.env.step(action)

    def agent_iter(self, max_iter: int = 2**63):
        """PettingZoo's AECOrderEnforcingIterator as a generator: same checks, less overhead."""
        if not self._was_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _order_enforcing_iter(self, max_iter)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict]:
        raw = self._raw
        agent = raw.agent_selection
        assert agent is not None
        observation = self.observe(agent) if observe else None
        return (observation, raw._cumulative_rewards[agent], raw.terminations[agent],
                raw.truncations[agent], raw.infos[agent])


for _name in _HOT_ATTRIBUTES:
    setattr(_FastAttributes, _name, _forward(_name))
for _name in _GUARDED_BEFORE_RESET:
    setattr(FastOrderEnforcingWrapper, _name, _forward(_name, guard_before_reset=True))
del _name


def wrap(raw_env, illegal_reward: float = -1.0):
    """PettingZoo's classic wrapping: illegal-move termination, bounds check, order enforcing."""
    env = FastTerminateIllegalWrapper(raw_env, illegal_reward=illegal_reward)
    env = FastAssertOutOfBoundsWrapper(env)
    return FastOrderEnforcingWrapper(env)
