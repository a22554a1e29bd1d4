"""Bad input from outside gets an error that names what was wrong and what was expected, and
leaves nothing half-applied: reset options, rule files, reward settings, actions of the AEC env
(wrapped and raw) and of the batched engine, spades-label's student model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spades_env import spades_v0
from spades_env.game import DealError
from spades_env.rewards import RewardError
from spades_env.rules import RulesError
from spades_env.vector import SpadesVectorEnv, VectorEnvError


@pytest.mark.parametrize("options, message", [
    ({"deal": [1, 2, 3, 4]}, r"seat 0's hand is 1 \(int\): expected a list of 13 cards"),
    ("deal", r"options='deal' \(str\): expected a dict of deal, dealer, scores, bags"),
    ({"dealer": 1.5}, r"dealer=1.5 is not a seat"),
])
def test_bad_reset_options_are_refused_and_the_env_keeps_its_game(options, message):
    env = spades_v0.env()
    env.reset(seed=0)
    before = env.unwrapped.game.hands[:]
    with pytest.raises(DealError, match=message):
        env.reset(seed=1, options=options)
    assert env.unwrapped.game.hands == before            # nothing half-applied


def test_bad_rule_settings_and_files_are_refused(tmp_path):
    with pytest.raises(RulesError, match=r"rules preset \[1\]: expected a preset name"):
        spades_v0.env(rules={"preset": [1]})
    with pytest.raises(RulesError, match=r"rule name=5 is invalid"):
        spades_v0.env(rules={"name": 5})
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    with pytest.raises(RulesError, match=r"binary.yaml is not UTF-8 text .*expected a YAML file"):
        spades_v0.env(rules=str(binary))
    with pytest.raises(RulesError, match=r"is a directory: expected a YAML file"):
        spades_v0.env(rules=str(tmp_path))


@pytest.mark.parametrize("name", ["reward_scale", "win_bonus", "shaping"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_reward_settings_must_be_finite(name, value):
    with pytest.raises(RewardError, match=rf"{name}={value!r}: expected a finite number"):
        spades_v0.env(**{name: value})


@pytest.mark.parametrize("action", [True, False, 1.5, 60.0, np.float32(60.0), "60", None])
def test_the_wrapped_env_refuses_what_is_not_an_action_id(action):
    env = spades_v0.env()
    env.reset(seed=0)
    with pytest.raises(AssertionError, match=r"is not in action space: expected an integer action id 0..67"):
        env.step(action)
    env.step(60)                                       # the game goes on: nothing was applied
    assert env.unwrapped.game.bids[env.unwrapped.game.dealer + 1 & 3] == 8


def test_the_raw_env_refuses_a_step_after_the_episode_ended():
    import agents
    raw = spades_v0.raw_env()
    raw.reset(seed=0)
    bot = agents.make("heuristic")
    for _ in raw.agent_iter():
        obs, _, term, trunc, info = raw.last()
        raw.step(None if term or trunc else bot.act(obs, info))
    with pytest.raises(RuntimeError, match=r"after the episode ended.*call env.reset\(\)"):
        raw.step(None)


@pytest.mark.parametrize("actions, message", [
    ("abc", r"expected a tensor \(or array or list\) of 4 integer action ids"),
    (None, r"expected a tensor \(or array or list\) of 4 integer action ids"),
    (torch.full((4,), 60.5), r"dtype torch.float32: expected integer action ids"),
    (np.full(4, 60.0), r"dtype torch.float64: expected integer action ids"),
    (torch.ones(4, dtype=torch.bool), r"dtype torch.bool: expected integer action ids"),
    (torch.full((2, 2), 60), r"shape \(2, 2\): expected one action per table, shape \(4,\)"),
])
def test_the_batched_engine_refuses_actions_that_are_not_integer_ids(actions, message):
    env = SpadesVectorEnv(4)
    obs, _ = env.reset(seed=0)
    with pytest.raises(VectorEnvError, match=message):
        env.step(actions)
    assert torch.equal(env.observe()[0], obs)          # nothing applied
    env.step(np.full(4, 60, dtype=np.int32))           # integer arrays of any width are fine


def test_spades_label_names_a_student_file_that_is_not_a_model(tmp_path, capsys):
    from train.labelling.cli import main
    bad = tmp_path / "notes.txt"
    bad.write_text("not a model")
    assert main(["--student", str(bad), "--out", str(tmp_path / "labels"), "--deals", "2", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "spades-label: error: student=" in err and "not a spades model" in err and "Traceback" not in err


@pytest.mark.parametrize("scores", [[10 ** 12, 0], [0, -(10 ** 9) - 1], [2 ** 63, 0]])
def test_huge_starting_scores_are_refused_alike_by_both_engines(scores):
    env = spades_v0.env()
    env.reset(seed=0)
    with pytest.raises(DealError, match=r"each starting score must lie within"):
        env.reset(seed=1, options={"scores": scores})
    vector = SpadesVectorEnv(2)
    with pytest.raises(VectorEnvError, match=r"scores"):
        vector.reset(seed=0, scores=scores)
    # the widest allowed start (just under the largest target; the lowest score, with no mercy rule)
    # is played the same way by both: the same deal and actions, the same scores after the hand
    wide = dict(target_score=10 ** 6, mercy_score=None, max_hands=1)
    start = [10 ** 6 - 1, -(10 ** 9)]
    raw = spades_v0.raw_env(episode="hand", **wide)
    raw.reset(seed=1, options={"scores": start})
    deal = raw.game_record()["hands"][0]["deal"]
    vector = SpadesVectorEnv(2, **wide)
    vector.reset(seed=1, deals=[deal, deal], dealer=raw.game.dealer, scores=start)
    assert vector.state.scores[0].tolist() == start
    done = torch.zeros(2, dtype=torch.bool)
    while not done.all():
        action = int(raw.game.legal_actions()[0])
        raw.step(action)
        _, _, _, done, info = vector.step(torch.full((2,), action, dtype=torch.int64))
    expected = raw.game.scores
    assert raw.game.game_over and expected != start    # scored, and over (max_hands)
    assert info["final_scores"].tolist() == [expected, expected]


def test_ray_options_without_ray_say_what_to_install(monkeypatch, capsys, tmp_path):
    """--ray where Ray is not importable (hidden here even where it is installed): exit 2 and
    the extra to install, before anything is played or written."""
    import sys

    from evaluation import cli as evaluation_cli
    from train.labelling import cli as label
    monkeypatch.setitem(sys.modules, "ray", None)          # `import ray` raises ImportError
    assert evaluation_cli.main(["--team-a", "random", "--team-b", "random", "--deals", "2", "--ray", "--quiet"]) == 2
    assert "pip install 'spades-rl[ray]'" in capsys.readouterr().err
    assert label.main(["--teacher", "heuristic", "--deals", "2", "--out", str(tmp_path / "labels"), "--ray",
                       "--no-progress"]) == 2
    assert "pip install 'spades-rl[ray]'" in capsys.readouterr().err
    assert not list((tmp_path / "labels").glob("shard_*"))


# Older surfaces, reprobed: rule values past any real game, seeds and switches that are no
# seed or switch, and an engine too large to allocate were accepted or failed deep inside.
@pytest.mark.parametrize("rule", ["target_score", "mercy_score", "nil_bonus", "blind_nil_bonus", "bag_penalty",
                                  "bag_limit", "blind_nil_min_deficit", "max_hands"])
@pytest.mark.parametrize("value", [10 ** 30, 2 ** 63, 1_000_001])
def test_rule_values_are_bounded_and_the_bound_is_named(rule, value):
    from spades_env.rules import POINTS_LIMIT
    signed = -value if rule == "mercy_score" else value
    with pytest.raises(RulesError, match=rf"rule {rule}={signed} is invalid: expected a value within "
                                          r"-1,000,000..1,000,000 \(POINTS_LIMIT\)"):
        spades_v0.env(**{rule: signed})
    at_bound = {rule: -POINTS_LIMIT if rule == "mercy_score" else POINTS_LIMIT}
    if rule in ("target_score", "mercy_score"):
        at_bound["max_hands"] = 50      # a game this wide ends only with a cap (GAME_SPAN_LIMIT)
    spades_v0.env(**at_bound)          # the bound itself is a rule value like any other
    with pytest.raises(RulesError, match=rf"rule {rule}="):
        SpadesVectorEnv(2, **{rule: signed})          # no OverflowError from the engine's int64 tensors


@pytest.mark.parametrize("name, shown", [("", "''"), ("x" * 1000, r"'x{59}\.\.\. \(1002 characters\)"),
                                         ("a\x00b", r"'a\\x00b'"), ("line\nbreak", r"'line\\nbreak'")])
def test_a_rule_set_name_is_a_short_printable_label(name, shown):
    with pytest.raises(RulesError, match=rf"rule name={shown} is invalid: expected a label of 1..200 printable"):
        spades_v0.env(rules={"name": name})


def test_an_empty_rules_string_is_an_unknown_preset_not_the_current_folder():
    with pytest.raises(RulesError, match=r"unknown rules preset ''; presets: standard"):
        spades_v0.env(rules="")


@pytest.mark.parametrize("seed", [1.5, "7", True, [1], 2 ** 70])
def test_seeds_that_are_no_integer_are_refused(seed):
    env = spades_v0.env()
    env.reset(seed=0)
    before = env.unwrapped.game.hands[:]
    if seed != 2 ** 70:                # Python's random takes any integer
        with pytest.raises(DealError, match=r"reset: seed=.*: expected an integer or None"):
            env.reset(seed=seed)
        assert env.unwrapped.game.hands == before
    with pytest.raises(VectorEnvError, match=r"seed=.*: expected None or an integer within -2\*\*63..2\*\*64-1"):
        SpadesVectorEnv(2, seed=seed)
    engine = SpadesVectorEnv(2, seed=0)
    engine.reset(seed=0)
    with pytest.raises(VectorEnvError, match=r"seed=.*: expected None or an integer"):
        engine.reset(seed=seed)


@pytest.mark.parametrize("options, message", [
    ({"num_envs": 2 ** 40}, r"num_envs=1099511627776: expected at most 67,108,864 tables \(MAX_NUM_ENVS\)"),
    ({"num_envs": 2, "compile": "yes"}, r"compile='yes': expected True or False"),
    ({"num_envs": 2, "check_actions": 0}, r"check_actions=0: expected True or False"),
    ({"num_envs": 2, "deal_pool_size": 1.5}, r"deal_pool_size=1.5: expected an integer"),
    ({"num_envs": 2, "deal_pool_size": -1}, r"deal_pool_size=-1: expected at least 34 deals \(for 2 tables\)"),
])
def test_engine_sizes_and_switches_are_checked(options, message):
    with pytest.raises(VectorEnvError, match=message):
        SpadesVectorEnv(**options)


@pytest.mark.parametrize("options, message", [
    ({"dealer": "1"}, r"dealer='1': expected a seat 0..3, or one per table \(2\)"),
    ({"deals": 5}, r"deals=5: expected one entry per table \(2\)"),
    ({"deals": torch.zeros(2, 4)}, r"deals: a tensor of torch.float32: expected int64 bitboards \(2, 4\)"),
])
def test_the_engines_reset_names_options_that_are_no_option(options, message):
    """(Each was a raw TypeError from deep inside.)"""
    env = SpadesVectorEnv(2, seed=0)
    env.reset(seed=0)
    before = env.state.hands.clone()
    with pytest.raises(VectorEnvError, match=message):
        env.reset(seed=1, **options)
    assert torch.equal(env.state.hands, before)


@pytest.mark.parametrize("seat, message", [
    (1.5, r"seat=1.5: expected a seat 0..3, or one per table \(2\)"),        # was truncated to seat 1
    (torch.tensor([0, 1, 2]), r"seat=tensor\(\[0, 1, 2\]\): expected a seat 0..3, or one per table \(2\)"),
    ("north", r"seat='north': expected a seat 0..3"),
    (4, r"seat: expected seats 0..3, got \[4\]"),
])
def test_observe_seat_refuses_what_is_no_seat(seat, message):
    env = SpadesVectorEnv(2, seed=0)
    env.reset(seed=0)
    with pytest.raises(VectorEnvError, match=message):
        env.observe_seat(seat)


def test_a_numpy_integer_seed_seeds_like_the_int():
    a, b = SpadesVectorEnv(2, seed=np.int64(3)), SpadesVectorEnv(2, seed=3)
    assert torch.equal(a.reset(seed=np.int64(5))[0], b.reset(seed=5)[0])


def test_the_gym_views_reset_refuses_options_that_are_no_mapping():
    from spades_env.vector_gym import SpadesGymVectorEnv
    envs = SpadesGymVectorEnv(2, seed=0)
    with pytest.raises(VectorEnvError, match=r"options=\[1\]: expected a dict of reset options"):
        envs.reset(options=[1])
