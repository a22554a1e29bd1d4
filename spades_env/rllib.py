"""RLlib glue (``pip install "spades-rl[rllib]"``, best in its own environment: RLlib pins its
gymnasium version): the env creators under the names RLlib looks up, with the observation keys
its action-masking module reads, and that module's spec.

    from ray.rllib.algorithms.ppo import PPOConfig
    from spades_env import rllib as spades_rllib
    spades_rllib.register()                                  # the two env names below
    config = (PPOConfig()
              .environment(spades_rllib.SINGLE_AGENT, env_config={"reward": "team_diff"})
              .rl_module(rl_module_spec=spades_rllib.action_masking_spec()))

RLlib's masking module wants a ``Dict`` observation with the keys ``"observations"`` and
``"action_mask"`` (float 0/1); PettingZoo says ``"observation"``. The creators here give the
former, so no glue is left to write:

* :data:`SINGLE_AGENT` (``"spades_single_agent"``): :class:`~spades_env.single_agent.
  SpadesSingleAgentEnv` (the ``env_config`` entries are its arguments: ``seat``, ``opponents``,
  ``partner``, ``rules``, ``reward``, ``episode``...), one learner against fixed players;
* :data:`MULTI_AGENT` (``"spades_multi_agent"``): the AEC env (``spades_v0.env(**env_config)``)
  through RLlib's ``PettingZooEnv``, the agents ``player_0`` .. ``player_3``; map them to one
  shared module (:func:`multi_agent_spec`) for self-play. RLlib's ``PettingZooEnv`` hands each
  agent the rewards it has accumulated when it next observes, so the partner's share of a hand's
  score reaches it at its next turn or at the end of the episode.

On a cluster, ``ray.init(address=...)`` before building the algorithm, and
``.env_runners(num_env_runners=N)`` spreads the sampling over the cluster's CPUs
(``examples/rllib_ppo.py --address``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces

from .single_agent import SpadesSingleAgentEnv

SINGLE_AGENT = "spades_single_agent"
MULTI_AGENT = "spades_multi_agent"
SHARED_MODULE = "shared_policy"


def _masked_space(observation_space: spaces.Box, num_actions: int) -> spaces.Dict:
    return spaces.Dict({"observations": observation_space,
                        "action_mask": spaces.Box(0.0, 1.0, (num_actions,), dtype=np.float32)})


class RLlibObservation(gymnasium.ObservationWrapper):
    """The single-agent env with ``{"observations": obs, "action_mask": float mask}`` observations."""

    def __init__(self, env: SpadesSingleAgentEnv) -> None:
        super().__init__(env)
        self.observation_space = _masked_space(env.observation_space, env.unwrapped.num_actions)

    def observation(self, observation: np.ndarray) -> dict:
        return {"observations": observation, "action_mask": self.env.unwrapped.action_masks().astype(np.float32)}


def single_agent_env(config: Optional[Mapping[str, Any]] = None) -> gymnasium.Env:
    """RLlib's env creator for :data:`SINGLE_AGENT` (``config``: SpadesSingleAgentEnv's arguments)."""
    return RLlibObservation(SpadesSingleAgentEnv(**dict(config or {})))


def _renamed_aec_env(config: Mapping[str, Any]):
    from pettingzoo.utils.wrappers import BaseWrapper

    from . import spades_v0

    class RenamedObservation(BaseWrapper):
        """The AEC env with RLlib's observation keys."""

        def observation_space(self, agent):
            space = super().observation_space(agent)
            return _masked_space(space["observation"], space["action_mask"].shape[0])

        def observe(self, agent):
            seen = super().observe(agent)
            return {"observations": seen["observation"], "action_mask": seen["action_mask"].astype(np.float32)}

    return RenamedObservation(spades_v0.env(**dict(config)))


def multi_agent_env(config: Optional[Mapping[str, Any]] = None):
    """RLlib's env creator for :data:`MULTI_AGENT`: a ``PettingZooEnv`` over ``spades_v0.env(**config)``."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    return PettingZooEnv(_renamed_aec_env(config or {}))


def register() -> None:
    """Register :data:`SINGLE_AGENT` and :data:`MULTI_AGENT` with Ray Tune (what RLlib looks up)."""
    from ray.tune.registry import register_env
    register_env(SINGLE_AGENT, single_agent_env)
    register_env(MULTI_AGENT, multi_agent_env)


def action_masking_spec(hidden: Sequence[int] = (256, 256)):
    """The spec of RLlib's PPO action-masking module (masked logits: illegal actions are never
    sampled), an MLP of ``hidden`` layers for the policy and the value."""
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    return RLModuleSpec(module_class=ActionMaskingTorchRLModule,
                        model_config={"fcnet_hiddens": list(hidden), "fcnet_activation": "relu",
                                      "head_fcnet_hiddens": [], "vf_share_layers": False})


def multi_agent_spec(hidden: Sequence[int] = (256, 256)):
    """A multi-agent spec with one shared masking module, :data:`SHARED_MODULE`; map every agent
    to it with ``.multi_agent(policies={SHARED_MODULE}, policy_mapping_fn=lambda agent, *a, **k:
    SHARED_MODULE)``."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    return MultiRLModuleSpec(rl_module_specs={SHARED_MODULE: action_masking_spec(hidden)})
