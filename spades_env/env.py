"""The PettingZoo AEC environment: a thin face over the engine, the encoder and the rewards."""

from __future__ import annotations

import random
import warnings
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from .cards import NUM_CARDS
from .game import NUM_ACTIONS, PHASE_NAMES, PHASE_PLAY, DealError, SpadesGame, action_str
from .observation import ObservationEncoder, observation_bounds
from .rewards import RewardScheme
from .rules import EPISODE_CHOICES, Rules, RulesError, make_rules

RESET_OPTIONS = ("deal", "dealer", "scores", "bags", "start")

# Turning a legal-action bitmask into an int8 mask: 13-bit chunks looked up as bytes, joined.
_SUIT_BYTES = [bytes((value >> bit) & 1 for bit in range(13)) for value in range(1 << 13)]
_NO_BIDS = bytes(NUM_ACTIONS - NUM_CARDS)
_EMPTY = bytearray()
_INT8 = np.dtype(np.int8)
_frombuffer = np.frombuffer  # positional dtype and a local name: measurably faster per call


def mask_array(legal: int, num_actions: int = NUM_ACTIONS) -> np.ndarray:
    """The int8 action mask (``num_actions`` entries: 68, or ``rules.num_actions`` with a signal;
    writable) of a legal-action bitmask."""
    t = _SUIT_BYTES
    tail = t[(legal >> 52) & 8191] + t[(legal >> 65) & 7][:3] if legal >> NUM_CARDS else _NO_BIDS
    if num_actions > NUM_ACTIONS:     # the messages: bits 68.. (at most 16 of them)
        messages = legal >> NUM_ACTIONS
        tail += (t[messages & 8191] + t[(messages >> 13) & 8191])[:num_actions - NUM_ACTIONS]
    return _frombuffer(_EMPTY.join((t[legal & 8191], t[(legal >> 13) & 8191], t[(legal >> 26) & 8191],
                                    t[(legal >> 39) & 8191], tail)), _INT8)


def _agent_iter(env, max_iter: int):
    while env.agents and max_iter > 0:
        max_iter -= 1
        yield env.agent_selection


NO_WINNER = -1
"""``info["winner"]`` of an episode that ends without ending the game (a hand episode)."""


class SpadesEnv(AECEnv):
    """Four-player (or three-player) Spades as a PettingZoo AEC environment.

    Args:
        rules: a preset name, a YAML path, a mapping or a :class:`Rules`.
        reward: ``"team_score"``, ``"team_diff"`` or ``"win"`` (see :mod:`spades_env.rewards`).
        episode: ``"game"`` (to the end of the game; truncated at ``max_hands``) or ``"hand"``
            (one hand, then termination); by default the rules' ``episode``.
        render_mode: None, ``"ansi"`` (render returns a string) or ``"human"`` (prints it).
        reward_scale: points to reward (0.01: a made bid of 5 is +0.5).
        win_bonus: terminal win reward added to ``team_score``/``team_diff``.
        shaping: weight of the potential-based per-trick shaping (0: off).
        bag_cost: points charged per bag a side carries into later hands ("game": the penalty
            over the limit, 10 in the standard rules); see :mod:`spades_env.rewards`.
        **rule_overrides: single rules, e.g. ``target_score=300``.
    """

    metadata = {"render_modes": ["ansi", "human"], "name": "spades_v0", "is_parallelizable": False,
                "render_fps": 1}

    def __init__(self, rules: Rules | str | dict | None = "standard", reward: str = "team_score",
                 episode: Optional[str] = None, render_mode: Optional[str] = None,
                 reward_scale: float = 0.01, win_bonus: float = 0.0, shaping: float = 0.0,
                 bag_cost: float | str = 0.0, **rule_overrides: Any) -> None:
        super().__init__()
        self.rules = make_rules(rules, **rule_overrides)
        episode = self.rules.episode if episode is None else episode
        if episode not in EPISODE_CHOICES:
            raise RulesError(f"episode={episode!r}: expected one of {', '.join(EPISODE_CHOICES)}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            hint = (" (stable-baselines3's make_vec_env asks for 'rgb_array' unless env_kwargs sets render_mode=None)"
                    if render_mode == "rgb_array" else "")
            raise ValueError(f"render_mode={render_mode!r}: expected None, 'ansi' or 'human'{hint}")
        self.episode = episode
        self.render_mode = render_mode
        self._human = render_mode == "human"
        self.reward_scheme = RewardScheme(self.rules, reward, reward_scale, win_bonus, shaping, bag_cost)
        if episode == "hand" and (reward == "win" or win_bonus):
            warnings.warn("win rewards are paid only when a hand ends the game, so with episode='hand' "
                          "most episodes pay nothing; use episode='game' or reward='team_score'/'team_diff'",
                          stacklevel=3)
        self._shaping = self.reward_scheme.shaping > 0
        n = self.rules.players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self._encoder = ObservationEncoder(self.rules)
        self._buffer = self._encoder.buffer
        self._gather = list(self._encoder.gather)  # a list of rows: indexing a 2-D array costs a view
        self.observation_layout = self._encoder.layout
        low, high = observation_bounds(self.observation_layout, self.rules)   # finite, from the rules
        self.num_actions = num_actions = self.rules.num_actions     # 68, and one per message of a signal
        obs_space = spaces.Dict({
            "observation": spaces.Box(low=low, high=high, dtype=np.float32),
            "action_mask": spaces.Box(low=0, high=1, shape=(num_actions,), dtype=np.int8),
        })
        act_space = spaces.Discrete(num_actions)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        state_size = self.observation_layout.state_size
        self.state_space = spaces.Box(low=-np.inf, high=np.inf, shape=(state_size,), dtype=np.float32)
        self._rng: Optional[random.Random] = None
        self.game: Optional[SpadesGame] = None
        self._done = True

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> None:
        # A new seed takes effect only if the reset succeeds (nothing half-applied).
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise DealError(f"reset: seed={seed!r:.40}: expected an integer or None")
        rng = random.Random(None if seed is None else int(seed)) if seed is not None or self._rng is None else self._rng
        if options is not None and not isinstance(options, Mapping):
            raise DealError(f"reset: options={options!r} ({type(options).__name__}): expected a dict of "
                            f"{', '.join(RESET_OPTIONS)}")
        options = dict(options or {})
        unknown = [k for k in options if k not in RESET_OPTIONS]
        if unknown:
            warnings.warn(f"reset: ignoring unknown option(s) {unknown}; known options: {', '.join(RESET_OPTIONS)}",
                          stacklevel=2)
        if options.get("start", "zero") != "zero":
            options.update(self._drawn_start(options, rng))
        # Build the new game first: a malformed option raises before anything is changed.
        game = SpadesGame(self.rules, rng, dealer=options.get("dealer"), scores=options.get("scores"),
                          bags=options.get("bags"), deal=options.get("deal"))
        self._rng = rng
        self._start(game)

    def _drawn_start(self, options: dict, rng: random.Random) -> dict:
        """``options["start"]`` (a name of :mod:`spades_env.starts`): scores, bags and dealer drawn
        with the reset's random stream, so the same seed gives the same start."""
        from .starts import StartError, check_start_name, sample_starts
        try:
            check_start_name(options["start"])
        except StartError as exc:
            raise DealError(f"reset: {exc}") from None
        given = [k for k in ("scores", "bags", "dealer") if k in options]
        if given:
            raise DealError(f"reset: start={options['start']!r} draws the scores, bags and dealer; do not also "
                            f"give {', '.join(given)} (or leave start out)")
        try:
            scores, bags, dealers = sample_starts(options["start"], 1, rng, rules=self.rules)
        except StartError as exc:
            raise DealError(f"reset: {exc}") from None
        return {"scores": scores[0].tolist(), "bags": bags[0].tolist(), "dealer": int(dealers[0])}

    def _start(self, game: SpadesGame) -> None:
        self.game = game
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._rewards_dirty = False
        self._potential = [0.0] * self.rules.num_sides
        self._encoder.encode_all(game)
        self._done = False
        self.agent_selection = self.agents[game.to_act]
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict:
        seat = self.agent_name_mapping[agent]
        game = self.game
        if game is None:
            raise RuntimeError("observe() before reset(): call env.reset() first")
        if seat == game.to_act and not self._done:
            mask = mask_array(game.legal_mask(), self.num_actions)
        else:
            mask = np.zeros(self.num_actions, dtype=np.int8)
        return {"observation": self._buffer.take(self._gather[seat]), "action_mask": mask}

    def agent_iter(self, max_iter: int = 2**63):
        """Yield the agent to act until every agent is done (PettingZoo's AECIterator, as a
        generator: the same semantics, a fraction of the per-step cost)."""
        return _agent_iter(self, max_iter)

    def last(self, observe: bool = True) -> tuple:
        agent = self.agent_selection
        return (self.observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], self.infos[agent])

    def state(self) -> np.ndarray:
        return self._encoder.state(self.game)

    @property
    def encoder(self) -> ObservationEncoder:
        """The observation encoder that follows this env's game (labelling copies it to follow a
        copied game without re-encoding)."""
        return self._encoder

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self._done:
            if self.game is None:
                raise RuntimeError("step() before reset(): call env.reset() first")
            if not self.agents:
                raise RuntimeError(f"step({action!r}) after the episode ended: every agent is done and has "
                                   "been stepped with None; call env.reset() for a new episode")
            self._was_dead_step(action)
            return
        game = self.game
        seat = game.to_act
        phase = game.phase
        game.apply(action)  # raises IllegalActionError naming the action, phase and legal actions
        if type(action) is not int:
            action = int(action)
        self._cumulative_rewards[agent] = 0.0
        if self._rewards_dirty:
            self._clear_rewards()
            self._rewards_dirty = False
        if phase == PHASE_PLAY:
            self._encoder.after_card(game, seat, action)
            if not game.trick_cards:
                self._trick_done(game)
        else:
            self._encoder.after_action(game, seat, action, phase)
        if not self._done:
            self.agent_selection = self.possible_agents[game.to_act]
        if self._human:
            self.render()

    def _trick_done(self, game: SpadesGame) -> None:
        scheme = self.reward_scheme
        shaping = None
        if self._shaping:
            after = scheme.potential(game) if game.phase == PHASE_PLAY else [0.0] * self.rules.num_sides
            shaping = scheme.shaping_rewards(self._potential, after)
            self._potential = after
        if game.phase == PHASE_PLAY:
            if shaping is not None:
                self._add_rewards(shaping)
            return
        # The hand was scored.
        rewards = scheme.hand_rewards(game)
        if shaping is not None:
            rewards = [r + f for r, f in zip(rewards, shaping)]
        self._add_rewards(rewards)
        if game.game_over or self.episode == "hand":
            done = self.truncations if (game.truncated and self.episode == "game") else self.terminations
            for a in self.agents:
                done[a] = True
            self._done = True
            self._encoder.after_hand(game)
            for a in self.agents:
                self.infos[a] = self._final_info(game)
        else:
            game.next_hand()
            self._encoder.encode_all(game)

    def _add_rewards(self, values: list[float]) -> None:
        rewards = self.rewards
        cumulative = self._cumulative_rewards
        for agent, value in zip(self.possible_agents, values):
            if agent in rewards:
                rewards[agent] = value
                cumulative[agent] += value
        self._rewards_dirty = True

    def _final_info(self, game: SpadesGame) -> dict:
        """The info of a finished episode. ``winner`` is the winning side, or ``NO_WINNER`` (-1)
        while the game goes on, as in the batched engine: no info value is None, so every RL
        library can batch infos."""
        return {"scores": list(game.scores), "bags": list(game.bags),
                "winner": NO_WINNER if game.winner is None else game.winner,
                "hands_played": game.hand_number, "game_over": game.game_over}

    # ------------------------------------------------------------------ records, rendering
    def game_record(self) -> dict:
        """A JSON-serializable record of the game so far (see :mod:`spades_env.record`)."""
        record = self.game.record()
        record["episode"] = self.episode
        return record

    @property
    def scores(self) -> list[int]:
        return list(self.game.scores)

    @property
    def bags(self) -> list[int]:
        return list(self.game.bags)

    @property
    def phase(self) -> str:
        return PHASE_NAMES[self.game.phase]

    def legal_actions(self) -> list[int]:
        """Legal action ids of the player to act (empty once the episode is over)."""
        return [] if self._done else self.game.legal_actions()

    def render(self) -> Optional[str]:
        if self.render_mode is None:
            warnings.warn("render() called without a render_mode; use render_mode='ansi' or 'human'", stacklevel=2)
            return None
        from .render import render_table
        text = render_table(self.game, done=self._done)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def describe_action(self, action: int) -> str:
        return action_str(action)
