"""The single-agent gymnasium wrapper: API conformance, rewards, determinism, other seats' policies."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from spades_env import IllegalActionError, spades_v0
from spades_env.single_agent import SpadesSingleAgentEnv, UniformRandomPolicy


def play_episode(env: SpadesSingleAgentEnv, seed: int, rng_seed: int = 0, options=None):
    """Reset with ``seed`` and play random legal learner actions; returns the transitions."""
    rng = np.random.default_rng(rng_seed)
    obs, info = env.reset(seed=seed, options=options)
    transitions = [(obs, None, False, False, info)]
    while True:
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (68,) and mask.any()
        assert np.array_equal(mask, info["action_mask"].astype(bool))
        assert obs in env.observation_space
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        transitions.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            assert not env.action_masks().any()
            return transitions


def aec_rewards_of_record(record: dict, seed: int, **env_kwargs) -> tuple[dict, bool, bool]:
    """Replay the record's actions through the wrapped AEC env: total reward per agent, and
    whether it ended in termination / truncation."""
    env = spades_v0.env(**env_kwargs)
    env.reset(seed=seed)
    actions = [tuple(sa) for hand in record["hands"] for sa in hand["actions"]]
    totals = dict.fromkeys(env.possible_agents, 0.0)
    ended = (False, False)
    for agent in env.agent_iter():
        _, reward, termination, truncation, _ = env.last()
        totals[agent] += reward
        if termination or truncation:
            ended = (termination, truncation)
            env.step(None)
            continue
        seat, action = actions.pop(0)
        assert agent == f"player_{seat}"
        env.step(action)
    assert not actions
    return totals, ended[0], ended[1]


# ---------------------------------------------------------------------------- gymnasium API
def test_check_env_passes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # infinite Box bounds of the score block; illegal sampled actions
        check_env(SpadesSingleAgentEnv())
        check_env(SpadesSingleAgentEnv(seat=3, render_mode="ansi", episode="game"))


def test_spaces():
    env = SpadesSingleAgentEnv()
    aec = spades_v0.raw_env()
    assert env.observation_space == aec.observation_space("player_0")["observation"]
    assert env.action_space.n == 68
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == env.observation_space.shape
    assert info["action_mask"].dtype == np.int8
    assert env.action_space.sample(mask=info["action_mask"]) in np.flatnonzero(info["action_mask"])


# ---------------------------------------------------------------------------- rewards and episodes
@pytest.mark.parametrize("seat", [0, 1, 2, 3])
@pytest.mark.parametrize("kwargs", [
    {},
    {"reward": "team_diff", "shaping": 1.0},
    {"rules": "cutthroat", "reward": "team_diff"},
    {"rules": "tournament", "episode": "game", "reward": "team_score", "shaping": 0.5, "max_hands": 3},
    {"episode": "game", "reward": "win", "max_hands": 2},
], ids=["team_score", "team_diff+shaping", "cutthroat", "game+shaping", "game+win"])
def test_rewards_sum_to_what_the_aec_env_paid(seat, kwargs):
    env_kwargs = {"episode": "hand", **kwargs}
    env = SpadesSingleAgentEnv(seat=seat, **env_kwargs)
    seed = 11 + seat
    transitions = play_episode(env, seed, rng_seed=seat)
    total = sum(t[1] for t in transitions[1:])
    aec_totals, terminated, truncated = aec_rewards_of_record(env.aec_env.game_record(), seed, **env_kwargs)
    assert total == pytest.approx(aec_totals[f"player_{seat}"], abs=1e-9)
    assert (transitions[-1][2], transitions[-1][3]) == (terminated, truncated)
    assert all(not (t[2] or t[3]) for t in transitions[:-1])
    if env_kwargs.get("shaping"):  # shaping pays after tricks: rewards arrive before the last step
        assert any(t[1] != 0 for t in transitions[1:-1])


def test_game_episode_plays_several_hands_and_truncates_at_max_hands():
    # No mercy rule and a target out of reach in two hands: the game is cut at max_hands.
    env_kwargs = {"episode": "game", "max_hands": 2, "mercy_score": None, "shaping": 1.0}
    env = SpadesSingleAgentEnv(seat=1, **env_kwargs)
    transitions = play_episode(env, seed=5)
    record = env.aec_env.game_record()
    info = transitions[-1][4]
    assert record["truncated"] and len(record["hands"]) == 2
    assert transitions[-1][2:4] == (False, True)
    assert info["hands_played"] == 2 and info["scores"] == record["scores"]
    aec_totals, _, truncated = aec_rewards_of_record(record, 5, **env_kwargs)
    assert truncated
    assert sum(t[1] for t in transitions[1:]) == pytest.approx(aec_totals["player_1"], abs=1e-9)


def test_reset_after_an_episode_and_reset_options():
    env = SpadesSingleAgentEnv(seat=0)
    play_episode(env, seed=1)
    deal = [[f"{r}{s}" for r in "23456789TJQKA"] for s in "SHDC"]  # seat 0 holds every spade
    obs, info = env.reset(options={"deal": deal, "dealer": 3, "scores": [100, 50]})
    hand = obs[env.aec_env.observation_layout.obs_blocks["hand"].slice]
    assert np.flatnonzero(hand).tolist() == list(range(39, 52))
    assert env.aec_env.game.actions == []  # seat 0 bids first after dealer 3: nobody acted yet
    assert env.aec_env.scores == [100, 50]
    play_episode(env, seed=2)


def test_step_after_the_end_needs_a_reset():
    env = SpadesSingleAgentEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(52)
    play_episode(env, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(52)


# ---------------------------------------------------------------------------- determinism
def test_same_seed_same_trajectory():
    def run(env, seed):
        return play_episode(env, seed, rng_seed=7)

    a = run(SpadesSingleAgentEnv(seat=2, shaping=1.0), 3)
    b = run(SpadesSingleAgentEnv(seat=2, shaping=1.0), 3)
    assert len(a) == len(b)
    for (oa, ra, ta, ua, ia), (ob, rb, tb, ub, ib) in zip(a, b):
        assert np.array_equal(oa, ob) and ra == rb and ta == tb and ua == ub
        assert np.array_equal(ia["action_mask"], ib["action_mask"])
    c = run(SpadesSingleAgentEnv(seat=2, shaping=1.0), 4)
    assert len(a) != len(c) or any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c))


def test_constructor_seed_and_aec_deal():
    env = SpadesSingleAgentEnv(seed=9)
    env.reset()
    first = env.aec_env.game_record()["hands"][0]
    env.reset(seed=9)
    assert env.aec_env.game_record()["hands"][0] == first
    aec = spades_v0.raw_env()
    aec.reset(seed=9)
    assert aec.game_record()["hands"][0]["deal"] == first["deal"]  # a seed deals as the AEC env does


# ---------------------------------------------------------------------------- the other seats
class RecordingAgent:
    """Plays at random and checks it is asked only at its own seats' turns with their own view."""

    def __init__(self, env: SpadesSingleAgentEnv, seats: set[int], seed: int) -> None:
        self.env, self.seats, self.calls = env, seats, []
        self.random = UniformRandomPolicy(np.random.default_rng(seed))

    def act(self, obs, info):
        aec = self.env.aec_env
        agent = aec.agent_selection
        seat = aec.agent_name_mapping[agent]
        assert seat in self.seats
        assert set(obs) == {"observation", "action_mask"}
        expected = aec.observe(agent)
        assert np.array_equal(obs["observation"], expected["observation"])
        assert np.array_equal(obs["action_mask"], expected["action_mask"]) and obs["action_mask"].any()
        assert info is aec.infos[agent]
        self.calls.append(seat)
        return self.random.act(obs, info)


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_partner_and_opponent_policies_play_only_their_seats(seat):
    env = SpadesSingleAgentEnv(seat=seat)
    partner = RecordingAgent(env, {(seat + 2) % 4}, seed=1)
    opponents = RecordingAgent(env, {(seat + 1) % 4, (seat + 3) % 4}, seed=2)
    env = SpadesSingleAgentEnv(seat=seat, partner=partner, opponents=opponents)
    partner.env = opponents.env = env
    play_episode(env, seed=seat)
    counts = {s: 0 for s in range(4)}
    for s, _ in (tuple(x) for h in env.aec_env.game_record()["hands"] for x in h["actions"]):
        counts[s] += 1
    assert len(partner.calls) == counts[(seat + 2) % 4] > 0
    assert len(opponents.calls) == counts[(seat + 1) % 4] + counts[(seat + 3) % 4] > 0


def test_plain_callables_and_the_others_mapping_in_cutthroat():
    seen = []

    def lowest_legal(obs, info):
        seen.append(int(env.aec_env.agent_selection[-1]))
        return int(np.flatnonzero(obs["action_mask"])[0])

    env = SpadesSingleAgentEnv(seat=1, rules="cutthroat", others={0: lowest_legal, 3: lowest_legal})
    play_episode(env, seed=0)
    assert set(seen) == {0, 3}
    assert env.aec_env.game_record()["hands"][0]["bids"][0] == 0 or not env.aec_env.rules.nil


def test_an_illegal_action_of_another_seat_names_the_seat():
    env = SpadesSingleAgentEnv(seat=0, partner=lambda obs, info: 51 if obs["action_mask"][52] else 0)
    with pytest.raises(IllegalActionError, match=r"seat 2 \(player_2\).*51"):
        for seed in range(5):
            play_episode(env, seed)
    with pytest.raises(RuntimeError, match="reset"):  # the interrupted episode cannot go on
        env.step(52)


def test_bad_policy_arguments():
    with pytest.raises(ValueError, match="seat=4"):
        SpadesSingleAgentEnv(seat=4)
    with pytest.raises(ValueError, match="no partnerships"):
        SpadesSingleAgentEnv(rules="cutthroat", partner=lambda o, i: 0)
    with pytest.raises(ValueError, match="learner's seat"):
        SpadesSingleAgentEnv(seat=1, others={1: lambda o, i: 0})
    with pytest.raises(ValueError, match="already given"):
        SpadesSingleAgentEnv(seat=0, partner=lambda o, i: 0, others={2: lambda o, i: 0})
    with pytest.raises(ValueError, match="not a seat"):
        SpadesSingleAgentEnv(others={7: lambda o, i: 0})
    with pytest.raises(TypeError, match="seat 1"):
        SpadesSingleAgentEnv(others={1: "heuristic"})
    with pytest.raises(ValueError, match="illegal_action"):
        SpadesSingleAgentEnv(illegal_action="ignore")


# ---------------------------------------------------------------------------- illegal learner actions
def test_every_info_has_the_same_keys_shapes_and_types():
    """RL libraries that fix their buffer's layout at the first step (Tianshou) need it."""
    env = SpadesSingleAgentEnv(episode="game", target_score=200)
    _, info = env.reset(seed=3)
    layout = {k: (type(v), np.shape(v)) for k, v in info.items()}
    assert set(layout) == {"action_mask", "scores", "bags", "winner", "hands_played", "game_over", "illegal_action"}
    assert info["illegal_action"] == -1 and info["winner"] == -1
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        assert {k: (type(v), np.shape(v)) for k, v in info.items()} == layout
        done = terminated or truncated
    assert info["game_over"] and info["winner"] in (0, 1) and info["illegal_action"] == -1


@pytest.mark.parametrize("action", [999, -3, "x"])
def test_an_action_that_is_no_action_id_is_reported_as_minus_two(action):
    env = SpadesSingleAgentEnv()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="illegal learner action"):
        _, _, terminated, _, info = env.step(action)
    assert terminated and info["illegal_action"] == -2


def test_an_illegal_learner_action_terminates_by_default():
    env = SpadesSingleAgentEnv(illegal_reward=-2.0)
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.warns(UserWarning, match="illegal"):
        _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated) == (-2.0, True, False)
    assert info["illegal_action"] == illegal and not env.action_masks().any()
    with pytest.raises(RuntimeError):
        env.step(illegal)
    play_episode(env, seed=1)


def test_an_illegal_learner_action_raises_when_asked():
    env = SpadesSingleAgentEnv(illegal_action="raise")
    _, info = env.reset(seed=0)
    mask = info["action_mask"]
    with pytest.raises(IllegalActionError, match="0"):
        env.step(0)  # a card in the bidding phase
    with pytest.raises(IllegalActionError):
        env.step(68)
    assert np.array_equal(env.action_masks(), mask.astype(bool))  # nothing changed
    env.step(np.int64(np.flatnonzero(mask)[0]))


# ---------------------------------------------------------------------------- rendering, libraries
def test_render_forwards_to_the_aec_env(capsys):
    env = SpadesSingleAgentEnv(render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == env.aec_env.render() and "bid" in env.render()
    env = SpadesSingleAgentEnv(render_mode="human")
    env.reset(seed=0)
    capsys.readouterr()
    assert env.render() is None and "bid" in capsys.readouterr().out


def test_maskable_ppo_trains_a_few_steps():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    env = SpadesSingleAgentEnv(seed=0)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0)
    model.learn(128)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]
