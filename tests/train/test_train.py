"""Training: the config object, per-seat advantages, a tiny run end to end, kill + resume, the
neural agent and its model files."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import agents
from agents.networks import PolicyNet
from agents.neural import ModelError, NeuralAgent, export_model, read_checkpoint
from spades_env import spades_v0
from train.ppo.config import (FIELD_SECTION, FIELDS, SECTIONS, ConfigError, TrainConfig, config_from_dict,
                          describe_fields, load_config)
from train.ppo.trainer import Trainer, main
from train.ppo import config as config_module
from train.ppo.update import learner_logits
from train.ppo.rollout import Rollout, finished_rows, sample_actions, seat_advantages

from helpers import play_hand_asserting_legal
from helpers_train import TINY, tiny

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------- config
def train_configs_in_the_repo() -> list[tuple[Path, dict, bool]]:
    """(file, its spades-train fields, whether it is a spades-coop study) of every config in
    configs/ (the recipes' stage configs in configs/recipes/*/ included, the rules and the recipes
    themselves not) and of every experiment's config (experiments/*/*.yaml): the fields are the
    file itself, or a study's ``train:`` mapping."""
    found = []
    paths = [*(ROOT / "configs").glob("*.yaml"), *(ROOT / "configs" / "recipes").glob("*/*.yaml"),
             *(p for p in (ROOT / "experiments").glob("*/*.yaml") if p.name != "study.yaml")]
    for path in sorted(paths):
        raw = yaml.safe_load(path.read_text())
        study = isinstance(raw.get("train"), dict)
        found.append((path, raw["train"] if study else raw, study))
    return found


def test_config_files_in_the_repo_load():
    for path, fields, study in train_configs_in_the_repo():
        if not study:
            load_config(path)
        config_from_dict(fields, str(path))


def test_config_errors_name_the_field_and_what_is_expected(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown field 'learning_rat'.*did you mean 'learning_rate'"):
        load_config(None, ["learning_rat=0.1"])
    with pytest.raises(ConfigError, match=r"num_envs='many': expected int"):
        load_config(None, ["num_envs=many"])
    with pytest.raises(ConfigError, match=r"env_backend='c': expected 'torch', 'native' or 'auto'"):
        load_config(None, ["env_backend=c"])
    with pytest.raises(ConfigError, match=r"compile_env=true \(torch.compile\) does not apply"):
        load_config(None, ["env_backend=native", "compile_env=true"])
    with pytest.raises(ConfigError, match=r"env_backend='native' runs on the CPU"):
        load_config(None, ["env_backend=native", "device=cuda"])
    with pytest.raises(ConfigError, match=r"critic='global': expected 'local' or 'central'"):
        load_config(None, ["critic=global"])
    with pytest.raises(ConfigError, match=r"learn_precision='float16': expected 'float32', 'bfloat16' or 'auto'"):
        load_config(None, ["learn_precision=float16"])
    with pytest.raises(ConfigError, match=r"opponents: unknown kind 'random'"):
        load_config(None, ["opponents={random: 1}"])
    with pytest.raises(ConfigError, match=r"win_bonus=-1.0: expected 0 or more"):
        load_config(None, ["win_bonus=-1"])
    with pytest.raises(ConfigError, match=r"max_updates=-1: expected 0 or more, or null"):
        load_config(None, ["max_updates=-1"])
    with pytest.raises(ConfigError, match=r"target_kl=0.0: expected a positive number or null"):
        load_config(None, ["target_kl=0"])
    with pytest.raises(ConfigError, match=r"bid_value_temperature=0.0: expected a positive number"):
        load_config(None, ["bid_value_temperature=0"])
    with pytest.raises(ConfigError, match=r"bid_value_rounds=0: expected a positive integer"):
        load_config(None, ["bid_value_rounds=0"])
    with pytest.raises(ConfigError, match=r"bid_value_deals=-1: expected 0 or more"):
        load_config(None, ["bid_value_deals=-1"])
    with pytest.raises(ConfigError, match=r"distill_data=3: expected str"):
        load_config(None, ["distill_data=3"])
    with pytest.raises(ConfigError, match=r"gae_lambda=1.5: expected a number in \[0, 1\]"):
        load_config(None, ["gae_lambda=1.5"])
    with pytest.raises(ConfigError, match="minibatch_size=99999 exceeds"):
        load_config(None, ["minibatch_size=99999", "num_envs=8", "rollout_steps=8"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_envs: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML") as refused:
        load_config(bad)
    assert "\n" not in str(refused.value)                         # one line
    with pytest.raises(ConfigError, match=r"override 'opponents=\{self: 1': the value is not valid YAML") as refused:
        load_config(None, ["opponents={self: 1"])
    assert "\n" not in str(refused.value)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="expected field=value"):
        load_config(None, ["epochs"])


def test_every_field_is_documented_under_its_section():
    text = describe_fields()
    for section, cls in SECTIONS.items():
        block = text.split(f"\n[{section}] ", 1)[1].split("\n[", 1)[0]
        for f in dataclasses.fields(cls):
            assert f"\n  {f.name}: " in block, (section, f.name)
    assert sorted(FIELDS) == sorted(TrainConfig().to_dict()) and len(FIELDS) == 125   # 87, then start, eval_games, final_eval_games, allow_held_out, blind_nil_explore, nil_explore, nil_explore_max_bid; then issue 47: desync_tables, bid_gae_lambda, bid_learning, bid_temperature, bid_value_coef, bid_fit_passes, bid_replay_updates, bid_advantage_norm, reset_bid_head, bid_counterfactual_nil, bid_fit_minibatch; then issue 48: reward_bias, diversity_from, diversity_coef; then issue 46: nil_defence_head; then issue 73: lr_warmup_decisions, lr_half_life_decisions, lr_floor, nil_explore_final, nil_explore_decisions, bid_playout_every, bid_playout_deals; issue 74: message_information_coef; issue 73: nil_explore_target, nil_explore_gain, nil_explore_max; issue 72: expert_ray, expert_eval_start, bid_value_objective; issue 73: nil_features
    assert load_config(None, ["learning_rate=1", "total_decisions=2e6"]).total_decisions == 2_000_000


def test_show_config_prints_the_sections(capsys):
    assert main(["--show-config"]) == 0
    out = capsys.readouterr().out
    assert [line.split("]")[0][1:] for line in out.splitlines() if line.startswith("[")] == list(SECTIONS)
    assert "  clip: 0.2\n      PPO clip range" in out


def test_fields_are_read_flat_or_by_section(tmp_path):
    flat = tmp_path / "flat.yaml"
    flat.write_text("clip: 0.3\nnum_envs: 64\nrollout_steps: 64\n")
    nested = tmp_path / "nested.yaml"
    nested.write_text("ppo: {clip: 0.3}\nexperience:\n  num_envs: 64\n  rollout_steps: 64\n")
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("ppo: {clip: 0.3}\nnum_envs: 64\nrollout_steps: 64\n")
    configs = [load_config(path) for path in (flat, nested, mixed)]
    assert configs[0] == configs[1] == configs[2]
    assert configs[0].ppo.clip == configs[0].clip == 0.3 and configs[0].experience.num_envs == 64
    assert load_config(flat, ["ppo.clip=0.1"]).clip == 0.1
    assert config_from_dict(configs[0].to_sections()) == configs[0]        # config.yaml reads back
    assert TrainConfig.from_flat(configs[0].to_dict()) == configs[0]


@pytest.mark.parametrize("values, message", [
    ({"clip": 0.1, "ppo": {"clip": 0.2}}, r"field 'clip' is given twice \(clip and ppo.clip\)"),
    ({"ppo": {"num_envs": 8}}, r"field 'num_envs' belongs to section 'experience', not 'ppo'"),
    ({"ppo": {"clipp": 0.2}}, r"unknown field 'clipp' in section 'ppo' \(did you mean 'clip'\?\)"),
    ({"ppo": 0.2}, r"section 'ppo' must be a mapping"),
    ({"ppo": {"clip": "wide"}}, r"clip='wide': expected float"),
])
def test_sectioned_config_errors_name_the_field(values, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(values)


def test_every_config_file_loads_and_keeps_its_values():
    """The configs in configs/ are flat; each field lands in its section with the same value."""
    checked = 0
    for path, raw, _ in train_configs_in_the_repo():
        config = config_from_dict(raw, str(path))
        for name, value in raw.items():
            assert name in FIELDS, (path.name, name)
            assert getattr(getattr(config, FIELD_SECTION[name]), name) == getattr(config, name)
        checked += 1
    assert checked >= 11
    with pytest.raises(ConfigError, match=r"override 'ppo.num_envs=3': field 'num_envs' belongs to section"):
        load_config(None, ["ppo.num_envs=3"])


# ---------------------------------------------------------------------- advantages
def brute_force_advantages(reward, done, seat, value, bootstrap, gamma, lam):
    """One (table, seat) chain at a time, in plain Python."""
    T, B = seat.shape
    adv = np.zeros((T, B))
    for b in range(B):
        for s in range(4):
            steps = [t for t in range(T) if seat[t, b] == s]
            for i, t in enumerate(steps):
                # the seat's next decision in the same episode, if any
                end = next((u for u in range(t, T) if done[u, b]), None)
                nxt = steps[i + 1] if i + 1 < len(steps) else None
                if nxt is not None and end is not None and end < nxt:
                    nxt = None
                stop = end if (nxt is None and end is not None) else (nxt - 1 if nxt is not None else T - 1)
                r = sum(reward[u, b, s] for u in range(t, stop + 1))
                if nxt is not None:
                    next_v = value[nxt, b]
                elif end is not None:
                    next_v = 0.0
                else:
                    next_v = bootstrap[b, s]
                adv[t, b] = r + gamma * next_v - value[t, b]
            # GAE: accumulate backwards along the chain (broken by episode ends)
            for i in range(len(steps) - 2, -1, -1):
                t, nxt = steps[i], steps[i + 1]
                if not any(done[u, b] for u in range(t, nxt)):
                    adv[t, b] += gamma * lam * adv[nxt, b]
    return adv


@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (1.0, 0.95), (0.9, 0.8)])
def test_seat_advantages_match_a_brute_force_walk(gamma, lam):
    rng = np.random.default_rng(int(gamma * 100 + lam * 10))
    T, B = 40, 6
    seat = rng.integers(0, 4, (T, B))
    done = rng.random((T, B)) < 0.08
    reward = rng.normal(size=(T, B, 4)) * (rng.random((T, B, 1)) < 0.3)
    value = rng.normal(size=(T, B))
    bootstrap = rng.normal(size=(B, 4))
    expected = brute_force_advantages(reward, done, seat, value, bootstrap, gamma, lam)
    got = seat_advantages(torch.tensor(reward), torch.tensor(done), torch.tensor(seat), torch.tensor(value),
                          torch.tensor(bootstrap), gamma, lam)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-9)


def test_monte_carlo_returns_of_a_hand_are_the_hands_rewards():
    """gamma = lambda = 1, zero values: every decision's return is what its seat received from
    that decision to the end of the episode; rows after the last episode end are incomplete."""
    seat = torch.tensor([[0], [1], [0], [1], [0]])
    done = torch.tensor([[False], [False], [True], [False], [False]])
    reward = torch.zeros(5, 1, 4, dtype=torch.float64)
    reward[1, 0, 0] = 1.0          # seat 0 gets 1 after seat 1's decision
    reward[2, 0] = torch.tensor([2.0, 3.0, 2.0, 3.0])     # hand end
    reward[4, 0, 0] = 5.0
    returns = seat_advantages(reward, done, seat, torch.zeros(5, 1, dtype=torch.float64),
                              torch.zeros(1, 4, dtype=torch.float64), 1.0, 1.0)
    assert returns[:, 0].tolist() == [3.0, 3.0, 2.0, 0.0, 5.0]
    assert finished_rows(done)[:, 0].tolist() == [True, True, True, False, False]


def test_sample_actions_draws_from_the_probabilities_and_never_a_zero_one(monkeypatch):
    generator = torch.Generator().manual_seed(0)
    probs = torch.tensor([[0.0, 0.2, 0.0, 0.5, 0.3, 0.0]]).repeat(60_000, 1)
    drawn = sample_actions(probs, generator)
    frequencies = torch.bincount(drawn, minlength=6).double() / drawn.numel()
    assert frequencies[[0, 2, 5]].sum() == 0
    np.testing.assert_allclose(frequencies[[1, 3, 4]].numpy(), [0.2, 0.5, 0.3], atol=0.01)
    # A uniform draw rounded up to the row's total stays on the last action that can be drawn.
    monkeypatch.setattr(torch, "rand", lambda *shape, **kw: torch.ones(*shape, dtype=kw.get("dtype")))
    assert sample_actions(probs[:2]).tolist() == [4, 4]


def test_rollout_flat_takes_every_row_as_views_in_the_same_order():
    buf = Rollout.empty(3, 4, 5, None, torch.device("cpu"))
    buf.obs.copy_(torch.arange(60, dtype=torch.float32).reshape(3, 4, 5))
    buf.action.copy_(torch.arange(12).reshape(3, 4))
    extra = torch.arange(12.0).reshape(3, 4)
    every = torch.ones(3, 4, dtype=torch.bool)
    some = every.clone()
    some[1, 2] = False
    views, copies = buf.flat(every, advantage=extra), buf.flat(some, advantage=extra)
    assert views["obs"].data_ptr() == buf.obs.data_ptr()
    keep = some.flatten()
    for key in ("obs", "action", "advantage"):
        assert torch.equal(views[key][keep], copies[key])
    buf.logp.fill_(1.0)
    buf.clear_choices()
    assert not buf.logp.any() and not buf.value.any()


def test_auto_settings_are_decided_for_the_machine(monkeypatch):
    """env_backend=auto: the C step on the CPU where it builds, else torch; learn_precision=auto:
    bfloat16 only on a CPU (or CUDA GPU) with native bfloat16."""
    from spades_env import native

    config = load_config(None, ["env_backend=auto", "learn_precision=auto"])
    monkeypatch.setattr(config_module, "cpu_has_native_bfloat16", lambda: True)
    monkeypatch.setattr(native, "unavailable_reason", lambda: None)
    resolved, notes = config.resolve_auto()
    assert (resolved.env_backend, resolved.learn_precision) == ("native", "bfloat16")
    assert config.env_backend == "auto" and len(notes) == 2
    monkeypatch.setattr(config_module, "cpu_has_native_bfloat16", lambda: False)
    assert config.resolve_auto()[0].learn_precision == "float32"
    assert load_config(None, ["env_backend=auto", "compile_env=true"]).resolve_auto()[0].env_backend == "torch"
    monkeypatch.setattr(native, "unavailable_reason", lambda: "no C compiler")
    resolved, notes = config.resolve_auto()
    assert resolved.env_backend == "torch" and "no C compiler" in notes[0]
    assert load_config(None).resolve_auto() == (load_config(None), [])
    # On a GPU: the torch step, and bfloat16 as the GPU has it (no GPU needed to decide).
    on_gpu = load_config(None, ["env_backend=auto", "learn_precision=auto", "device=cuda"])
    for has_bf16 in (True, False):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda has=has_bf16: has)
        resolved = on_gpu.resolve_auto()[0]
        assert (resolved.env_backend, resolved.learn_precision) == ("torch", "bfloat16" if has_bf16 else "float32")


def test_native_bfloat16_is_read_from_the_cpu_flags(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Some CPU\nflags\t\t: fpu sse avx2 avx512f avx512bw\n")
    assert not config_module.cpu_has_native_bfloat16(cpuinfo)
    cpuinfo.write_text("flags\t\t: fpu avx512f avx512_bf16\n")
    assert config_module.cpu_has_native_bfloat16(cpuinfo)
    cpuinfo.write_text("flags\t\t: fpu amx_tile amx_bf16\n")
    assert config_module.cpu_has_native_bfloat16(cpuinfo)
    assert not config_module.cpu_has_native_bfloat16(tmp_path / "missing")


@pytest.mark.skipif(shutil.which("cc") is None, reason="env_backend=auto picks the C step only with a compiler")
def test_auto_backend_run_records_what_it_picked(tmp_path):
    lines = []
    trainer = Trainer(tiny(tmp_path, "auto", "env_backend=auto", "learn_precision=auto", "imitation_decisions=0",
                           "max_updates=1"), log=lines.append)
    trainer.train()
    assert trainer.env.backend == "native" and trainer.config.env_backend == "native"
    assert any(line.startswith("env_backend auto -> native") for line in lines)
    assert "env_backend: native" in (tmp_path / "auto" / "config.yaml").read_text()


# ---------------------------------------------------------------------- runs
def weights(path: Path) -> dict:
    return read_checkpoint(path)["policy"]


def test_tiny_run_writes_everything_and_its_model_plays(tmp_path):
    config = tiny(tmp_path, "tiny", "tensorboard=true")
    Trainer(config, log=lambda line: None).train()
    run = tmp_path / "tiny"
    for name in ("config.yaml", "metrics.csv", "learning_curves.png", "final_eval.json", "model.pt",
                 "checkpoints/last.pt"):
        assert (run / name).is_file(), name
    assert list((run / "tensorboard").iterdir())
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [int(r["update"]) for r in rows] == list(range(1, config.updates + 1))
    assert all(float(r["decisions_per_s"]) > 0 for r in rows)
    assert rows[2]["eval__heuristic__diff"] != "" and rows[-1]["eval__random__diff"] != ""
    assert len(list((run / "checkpoints").glob("update_*.pt"))) == config.keep_checkpoints
    bot = agents.make("neural", checkpoint=str(run / "model.pt"))
    env = spades_v0.env()
    env.reset(seed=3)
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        action = None if term or trunc else bot.act(obs, info)
        assert action is None or obs["action_mask"][action] == 1
        env.step(action)


def test_evaluations_report_the_gain_over_the_start_paired(tmp_path):
    """``eval_against_start``: the policy PPO started from (here the imitation's) plays the same
    deals; the gain is the paired mean of the deal-by-deal differences, in the metrics, the final
    table and final_eval.json; the checkpoint keeps the start policy for resuming."""
    from evaluation import evaluate, mean_interval
    config = tiny(tmp_path, "gain", "eval_opponents=[random]", "eval_every=3")
    lines: list[str] = []
    trainer = Trainer(config, log=lines.append)
    trainer.train()
    run = tmp_path / "gain"
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert rows[2]["eval__random__gain"] != "" and rows[0]["eval__random__gain"] == ""
    start = read_checkpoint(run / "checkpoints" / "last.pt")["start_policy"]
    assert start is not None and not all(torch.equal(start[k], v) for k, v in trainer.policy.state_dict().items())

    def unit_diffs(weights: dict, deals: int, seed: int) -> list[float]:
        policy = type(trainer.policy)(trainer.obs_size, config.hidden, config.layers, config.head_hidden)
        policy.load_state_dict(weights)
        return evaluate(lambda: NeuralAgent(policy=policy.eval()), "random", deals=deals, duplicate=True,
                        seed=seed, workers=1).unit_diffs

    final_seed = config.seed + 2_000_003
    now, before = unit_diffs(trainer.policy.state_dict(), 2, final_seed), unit_diffs(start, 2, final_seed)
    gain = mean_interval([x - y for x, y in zip(now, before)])
    assert float(rows[-1]["eval__random__gain"]) == pytest.approx(gain.mean)
    assert trainer.evaluator.last_gains["random"].mean == pytest.approx(gain.mean)
    summary = json.loads((run / "final_eval.json").read_text())
    assert summary["gain_over_start"]["random"]["mean"] == pytest.approx(gain.mean)
    assert any("gain over the start" in line for line in lines)
    off = tiny(tmp_path, "nogain", "eval_opponents=[random]", "eval_every=3", "eval_against_start=false")
    Trainer(off, log=lambda line: None).train()
    rows = list(csv.DictReader((tmp_path / "nogain" / "metrics.csv").open()))
    assert all(r["eval__random__gain"] == "" for r in rows)


def test_killed_run_resumes_exactly(tmp_path):
    """A run killed (SIGKILL) mid-way and resumed ends with the very weights of a run never
    stopped, and one metrics row per update."""
    config = tiny(tmp_path, "straight")
    Trainer(config, log=lambda line: None).train()
    args = [f"--set={item}" for item in TINY + [f"run_dir={tmp_path}", "name=killed"]]
    cmd = [sys.executable, "-c", "import sys; from train.ppo.trainer import main; sys.exit(main(sys.argv[1:]))", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    target = tmp_path / "killed" / "checkpoints" / "update_000003.pt"
    deadline = time.time() + 120
    while not target.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert target.exists(), "the run never reached update 3"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed" / "model.pt").exists(), "killed too late: the run had finished"
    assert main(args + ["--resume"]) == 0
    straight, resumed = weights(tmp_path / "straight" / "model.pt"), weights(tmp_path / "killed" / "model.pt")
    assert straight.keys() == resumed.keys()
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key
    rows = list(csv.DictReader((tmp_path / "killed" / "metrics.csv").open()))
    assert [int(r["update"]) for r in rows] == list(range(1, config.updates + 1))
    # The evaluations, the gain over the start policy included, are those of the run never stopped.
    straight_rows = list(csv.DictReader((tmp_path / "straight" / "metrics.csv").open()))
    evals = [k for k in rows[0] if k.startswith("eval__")]
    assert any(r["eval__heuristic__gain"] for r in rows[3:])
    assert [[r[k] for k in evals] for r in rows] == [[r[k] for k in evals] for r in straight_rows]


def test_resuming_a_complete_run_says_so_and_rewrites_nothing(tmp_path, capsys):
    """--resume on a finished run: exit 0, a line saying it is complete, no evaluation played and
    no file of the run folder written again."""
    args = [f"--set={item}" for item in TINY + [f"run_dir={tmp_path}", "name=done", "total_decisions=1024"]]
    assert main(args) == 0
    run = tmp_path / "done"
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in run.rglob("*") if p.is_file() and p.name != ".lock"}
    capsys.readouterr()
    assert main(args + ["--resume"]) == 0
    out = capsys.readouterr().out
    assert "is complete" in out and "final evaluation:" not in out
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in run.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before
    # a longer run of the same settings is not complete: it continues
    assert main([a for a in args if "total_decisions" not in a] + ["--set=total_decisions=1536", "--resume"]) == 0
    assert "is complete" not in capsys.readouterr().out
    assert json.loads((run / "final_eval.json").read_text())["update"] == 3
    # without its final files the run is finished again (evaluation and model written)
    (run / "final_eval.json").unlink()
    assert main([a for a in args if "total_decisions" not in a] + ["--set=total_decisions=1536", "--resume"]) == 0
    assert "final evaluation:" in capsys.readouterr().out and (run / "final_eval.json").exists()


@pytest.mark.parametrize("requested, cores, load, expected", [
    (2, 2, 0.1, 2), (2, 2, 1.2, 1), (2, 2, 3.7, 1), (0, 2, 0.0, 2), (0, 8, 2.4, 6), (4, 8, 0.0, 4),
    (1, 16, 0.0, 1), (0, 1, 5.0, 1),
])
def test_training_threads_are_the_free_cores_at_most(requested, cores, load, expected):
    from train.ppo.threads import training_threads
    chosen, why = training_threads(requested, cores=cores, load=load)
    assert chosen == expected
    assert f"torch threads: {expected}" in why and f"{cores} usable cores" in why


def test_a_run_logs_its_thread_count(tmp_path, monkeypatch):
    import train.ppo.threads as threads
    monkeypatch.setattr(threads, "recent_load", lambda: 1.3)
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    lines: list[str] = []
    before = torch.get_num_threads()
    try:
        Trainer(tiny(tmp_path, "threads", "threads=2"), log=lines.append).run_lock.release()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert any(line.startswith("torch threads: 1 (threads 2; 2 usable cores, load average 1.30, 1 free)")
               for line in lines)


def test_resume_refuses_changed_settings_and_bad_checkpoints(tmp_path, capsys):
    config = tiny(tmp_path, "run", "total_decisions=512")
    Trainer(config, log=lambda line: None).train()
    with pytest.raises(ConfigError, match="already holds a run: continue it with --resume"):
        Trainer(tiny(tmp_path, "run", "total_decisions=512"))
    with pytest.raises(ConfigError, match=r"hidden=32 \(config now 64\)"):
        Trainer(tiny(tmp_path, "run", "total_decisions=512", "hidden=64"), resume=True)
    args = [f"--set={item}" for item in TINY + [f"run_dir={tmp_path}", "name=nothing"]]
    assert main(args + ["--resume"]) == 2
    assert "no checkpoint" in capsys.readouterr().err
    broken = tmp_path / "broken.pt"
    broken.write_bytes((tmp_path / "run" / "checkpoints" / "last.pt").read_bytes()[:5000])
    with pytest.raises(ModelError, match="corrupt or not a spades model"):
        Trainer(tiny(tmp_path, "run", "total_decisions=512"), resume=broken)
    with pytest.raises(ModelError, match="corrupt or not a spades model"):
        NeuralAgent(checkpoint=broken)
    (tmp_path / "text.pt").write_text("not a model")
    with pytest.raises(ModelError, match="corrupt or not a spades model") as refused:
        NeuralAgent(checkpoint=tmp_path / "text.pt")
    assert "weights_only" not in str(refused.value)       # torch's advice does not apply to a broken file
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ModelError, match="not a spades model"):
        NeuralAgent(checkpoint=tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError, match="not found"):
        agents.make("neural", checkpoint=str(tmp_path / "missing.pt"))
    with pytest.raises(ModelError, match="an exported model, not a training checkpoint"):
        Trainer(tiny(tmp_path, "run", "total_decisions=512"), resume=tmp_path / "run" / "model.pt")


# ---------------------------------------------------------------------- the neural agent
def test_shipped_model_plays_legal_deterministic_games():
    bots = [agents.make("neural") for _ in range(4)]
    assert bots[0].checkpoint.name == "neural_v7.pt"
    env = spades_v0.env()
    runs = []
    for _ in range(2):
        env.reset(seed=11)
        actions = []
        for agent in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            action = None if term or trunc else bots[int(agent[-1])].act(obs, info)
            assert action is None or obs["action_mask"][action] == 1
            actions.append(action)
            env.step(action)
        runs.append(actions)
    assert runs[0] == runs[1]


def test_sampling_agent_is_reproducible_and_checks_its_input():
    env = spades_v0.env()
    env.reset(seed=5)
    obs, _, _, _, info = env.last()
    picks = [NeuralAgent(greedy=False, seed=s).act(obs, info) for s in (1, 1, 2)]
    assert picks[0] == picks[1] and all(obs["action_mask"][p] for p in picks)
    probs = NeuralAgent().action_probabilities(obs)
    assert abs(probs.sum() - 1) < 1e-5 and (probs[obs["action_mask"] == 0] == 0).all()
    with pytest.raises(ValueError, match=r"expects \(742,\)"):
        NeuralAgent().act({"observation": np.zeros(10, np.float32), "action_mask": obs["action_mask"]})
    with pytest.raises(ValueError, match="mask is empty"):
        NeuralAgent().act({"observation": obs["observation"], "action_mask": np.zeros(68, np.int8)})


def test_export_keeps_the_policy(tmp_path):
    config = tiny(tmp_path, "exp", "total_decisions=512")
    trainer = Trainer(config, log=lambda line: None)
    trainer.train()
    out = export_model(tmp_path / "exp" / "checkpoints" / "last.pt", tmp_path / "small.pt", note="test")
    data = read_checkpoint(out)
    assert data["provenance"]["note"] == "test" and data["provenance"]["update"] == trainer.update
    assert out.stat().st_size < (tmp_path / "exp" / "checkpoints" / "last.pt").stat().st_size
    env = spades_v0.env()
    env.reset(seed=2)
    obs, _, _, _, info = env.last()
    a, b = NeuralAgent(checkpoint=out), NeuralAgent(checkpoint=tmp_path / "exp" / "checkpoints" / "last.pt")
    np.testing.assert_array_equal(a.action_probabilities(obs), b.action_probabilities(obs))


def test_central_critic_and_pure_self_play_run(tmp_path):
    """The centralized critic (observation + full state) and opponents drawn from self-play only."""
    config = tiny(tmp_path, "central", "critic=central", "opponents={self: 1.0}", "imitation_decisions=0",
                  "total_decisions=1024")
    trainer = Trainer(config, log=lambda line: None)
    assert trainer.critic.arch["input_size"] == trainer.obs_size + trainer.env.state_tensor().shape[1]
    trainer.train()
    rows = list(csv.DictReader((tmp_path / "central" / "metrics.csv").open()))
    assert len(rows) == config.updates and rows[-1]["train__points_vs_heuristic"] == ""
    assert bool((trainer.opponents.controller == 0).all())          # every seat learns in self-play


def test_card_feature_policy_trains_and_its_model_plays(tmp_path):
    config = tiny(tmp_path, "cards", "card_features=true", "total_decisions=1536", "eval_every=0")
    trainer = Trainer(config, log=lambda line: None)
    assert trainer.policy.features is not None
    trainer.train()
    assert trainer.opponents.nets and all(net.features is not None for net in trainer.opponents.nets)
    bot = agents.make("neural", checkpoint=tmp_path / "cards" / "model.pt")
    assert bot.policy.arch["card_features"] is True
    play_hand_asserting_legal(bot, seed=1)


def test_the_ppo_loss_is_the_clipped_objective_written_out():
    """train.ppo.update.ppo_loss against the formula computed by hand on a small minibatch: the
    normalised advantages, the clipped ratio, the value and entropy terms and their weights;
    the critic warm-up keeps the value term alone."""
    from types import SimpleNamespace
    from train.ppo.update import ppo_loss
    torch.manual_seed(3)
    policy, critic = PolicyNet(742, 16, 1, 8), torch.nn.Linear(742, 1)
    value_net = lambda x: critic(x)[:, 0]                          # noqa: E731 (a critic returns (B,))
    n = 6
    obs = torch.rand(n, 742)
    mask = torch.zeros(n, 68, dtype=torch.bool)
    mask[:, :5] = True
    action = torch.tensor([0, 1, 2, 3, 4, 0])
    old_logp = torch.log(torch.full((n,), 0.2)) + torch.tensor([0.3, -0.3, 0.0, 0.5, -0.5, 0.1])
    mb = {"obs": obs, "mask": mask, "action": action, "logp": old_logp,
          "advantage": torch.tensor([1.0, -2.0, 0.5, 3.0, -1.0, 0.0]), "ret": torch.linspace(-1, 1, n)}
    cfg = SimpleNamespace(learn_precision="float32", clip=0.2, value_coef=0.7, entropy_coef=0.05)
    parts = ppo_loss(policy, value_net, mb, cfg, critic_only=False, device=torch.device("cpu"))
    with torch.no_grad():
        logp_all = torch.log_softmax(policy(obs, mask), 1)
        ratio = (logp_all[torch.arange(n), action] - old_logp).exp()
        adv = (mb["advantage"] - mb["advantage"].mean()) / (mb["advantage"].std() + 1e-8)
        clipped = torch.minimum(adv * ratio, adv * ratio.clamp(0.8, 1.2))
        policy_loss = -clipped.mean()
        value_loss = 0.5 * ((value_net(obs) - mb["ret"]) ** 2).mean()
        probs = logp_all.exp()
        entropy = -(probs * torch.where(mask, logp_all, torch.zeros_like(logp_all))).sum(1)
        expected = 0.7 * value_loss + policy_loss - 0.05 * entropy.mean()
    assert float((ratio - 1).abs().max()) > 0.2                     # some ratios are clipped
    torch.testing.assert_close(parts.policy, policy_loss)
    torch.testing.assert_close(parts.value, value_loss)
    torch.testing.assert_close(parts.entropy, entropy)
    torch.testing.assert_close(parts.loss, expected)
    warmup = ppo_loss(policy, value_net, mb, cfg, critic_only=True, device=torch.device("cpu"))
    torch.testing.assert_close(warmup.loss, 0.7 * value_loss)


def test_bid_entropy_coef_weighs_the_bidding_decisions_alone():
    """null keeps the one coefficient (the same expression as before the field existed); a value
    weighs the entropy of bidding decisions (action ids from 52) by it and the cards by entropy_coef."""
    from types import SimpleNamespace
    from train.ppo.update import entropy_bonus
    entropy = torch.tensor([1.0, 2.0, 3.0, 4.0])
    action = torch.tensor([0, 51, 52, 66])                          # two cards, a bid, blind nil
    plain = SimpleNamespace(entropy_coef=0.01, bid_entropy_coef=None)
    torch.testing.assert_close(entropy_bonus(entropy, action, plain), 0.01 * entropy.mean())
    split = SimpleNamespace(entropy_coef=0.01, bid_entropy_coef=0.5)
    torch.testing.assert_close(entropy_bonus(entropy, action, split),
                               torch.tensor((0.01 * 1 + 0.01 * 2 + 0.5 * 3 + 0.5 * 4) / 4))
    assert load_config(None, ["bid_entropy_coef=0.1"]).bid_entropy_coef == 0.1
    assert load_config(None, ["bid_entropy_coef=null"]).bid_entropy_coef is None
    with pytest.raises(ConfigError, match="bid_entropy_coef"):
        load_config(None, ["bid_entropy_coef=-1"])
    # ... and the PPO loss uses it: a bid's entropy weighs 0.5, a card's 0.01
    from train.ppo.update import ppo_loss
    torch.manual_seed(4)
    policy, critic = PolicyNet(742, 16, 1, 8), torch.nn.Linear(742, 1)
    mask = torch.zeros(4, 68, dtype=torch.bool)
    mask[:, :3] = True
    mask[:, 52:55] = True
    mb = {"obs": torch.rand(4, 742), "mask": mask, "action": torch.tensor([0, 1, 52, 53]),
          "logp": torch.full((4,), -1.8), "advantage": torch.tensor([1.0, -1.0, 0.5, 0.0]),
          "ret": torch.zeros(4)}
    cfg = SimpleNamespace(learn_precision="float32", clip=0.2, value_coef=0.5, entropy_coef=0.01,
                          bid_entropy_coef=0.5)
    parts = ppo_loss(policy, lambda x: critic(x)[:, 0], mb, cfg, critic_only=False, device=torch.device("cpu"))
    weights = torch.tensor([0.01, 0.01, 0.5, 0.5])
    torch.testing.assert_close(parts.loss, 0.5 * parts.value + parts.policy - (weights * parts.entropy).mean())


def test_the_pool_replaces_its_oldest_policy_and_draws_by_share():
    from train.ppo.opponents import OpponentPool
    from train.ppo.rollout import HEURISTIC, LEARNER, POOL
    generator = torch.Generator().manual_seed(0)
    make = lambda: PolicyNet(742, 8, 1, 4)                          # noqa: E731
    pool = OpponentPool({"self": 0.0, "pool": 1.0, "heuristic": 0.0}, 2, 400, make, generator, torch.device("cpu"))
    pool.assign(torch.ones(400, dtype=torch.bool))                  # no past policy yet: the learner everywhere
    assert bool((pool.controller == LEARNER).all())
    for k in range(3):
        net = make()
        torch.nn.init.constant_(next(net.parameters()), float(k))
        pool.add(net)
    first = lambda weights: float(next(iter(weights.values())).flatten()[0])   # noqa: E731
    assert [first(w) for w in pool.weights] == [2.0, 1.0] and pool.added == 3   # the oldest (0) replaced
    pool.assign(torch.ones(400, dtype=torch.bool))
    side = pool.learner_side
    assert bool((pool.controller[torch.arange(400), side] == LEARNER).all())          # partners: the learner
    assert bool((pool.controller[torch.arange(400), 1 - side] == POOL).all())         # the other side: the pool
    assert set(pool.pool_slot.tolist()) == {0, 1}
    heuristic = OpponentPool({"heuristic": 1.0}, 2, 50, make, generator, torch.device("cpu"))
    heuristic.assign(torch.ones(50, dtype=torch.bool))
    assert int((heuristic.controller == HEURISTIC).sum()) == 100                     # two seats a table


def test_target_kl_stops_an_update_early(tmp_path):
    def adam_steps(*extra: str) -> int:
        trainer = Trainer(tiny(tmp_path, "kl", "imitation_decisions=0", "epochs=3", "minibatch_size=64", *extra),
                          overwrite=True, log=lambda line: None)
        trainer.learn(trainer.collect())
        first = next(iter(trainer.policy.parameters()))
        return int(trainer.optimizer.state[first]["step"])
    full, stopped = adam_steps(), adam_steps("target_kl=1e-9")
    assert full >= 6 and stopped < full


def test_varied_start_offers_blind_nil_and_redraws_scores(tmp_path):
    config = tiny(tmp_path, "varied", "varied_start=true", "imitation_decisions=0", "opponents={self: 1.0}")
    trainer = Trainer(config, log=lambda line: None)
    starts = trainer.env._start_scores
    assert starts.unique().numel() > 10 and int(starts.min()) >= -150 and int(starts.max()) <= 490
    offered = 0
    for _ in range(4):
        buf = trainer.collect()
        offered += int(buf.mask[:, :, 66].sum())         # blind nil is offered to trailing sides
    assert offered > 0
    assert not torch.equal(trainer.env._start_scores, starts)   # finished tables drew new scores


def test_varied_start_share_starts_the_other_episodes_from_zero(tmp_path):
    config = tiny(tmp_path, "share", "varied_start=true", "varied_start_share=0.25", "imitation_decisions=0")
    trainer = Trainer(config, log=lambda line: None)
    scores, bags = trainer.starts.sample(4000)
    zero = (scores == 0).all(1) & (bags == 0).all(1)
    assert 0.70 < float(zero.float().mean()) < 0.80             # 75% from 0-0 (and a few drawn as 0-0)
    assert scores[~zero].unique().numel() > 10
    with pytest.raises(ConfigError, match=r"varied_start_share=1.5: expected a number in \[0, 1\]"):
        load_config(None, ["varied_start_share=1.5"])
    with pytest.raises(ConfigError, match=r"bid_value_heuristic_share=-0.1: expected a number in \[0, 1\]"):
        load_config(None, ["bid_value_heuristic_share=-0.1"])


def test_init_from_a_checkpoint_starts_from_its_weights(tmp_path):
    first = tiny(tmp_path, "first", "total_decisions=512")
    Trainer(first, log=lambda line: None).train()
    source = tmp_path / "first" / "checkpoints" / "last.pt"
    second = Trainer(tiny(tmp_path, "second", f"init_from={source}"), log=lambda line: None)
    assert second.imitated
    for key, value in read_checkpoint(source)["policy"].items():
        assert torch.equal(second.policy.state_dict()[key], value)
    with pytest.raises(ConfigError, match="init_from=.*set hidden/layers/head_hidden to match, or larger"):
        Trainer(tiny(tmp_path, "third", f"init_from={source}", "hidden=8"), log=lambda line: None)


def test_init_from_a_model_with_score_tilts_trains_its_network_without_the_rule(tmp_path):
    from agents.neural import export_model
    from train.bids.bid_tilt import tilt_bids
    first = tiny(tmp_path, "first", "total_decisions=512")
    Trainer(first, log=lambda line: None).train()
    model = export_model(tmp_path / "first" / "checkpoints" / "last.pt", tmp_path / "first.pt")
    scored = tilt_bids(model, tmp_path / "scored.pt", 0.0, score_tilts={"lead": [300, -1.0]})
    lines = []
    second = Trainer(tiny(tmp_path, "second", f"init_from={scored}"), log=lines.append)
    assert second.policy.score_tilts is None and "score_tilts" not in second.policy.arch
    for key, value in read_checkpoint(scored)["policy"].items():
        assert torch.equal(second.policy.state_dict()[key], value)
    assert any("score tilts {'lead': [300, -1.0]}" in line and "without them" in line for line in lines)


def test_init_from_a_smaller_policy_grows_it_with_the_same_logits(tmp_path):
    first = tiny(tmp_path, "small", "total_decisions=512", "card_features=true")
    Trainer(first, log=lambda line: None).train()
    source = tmp_path / "small" / "checkpoints" / "last.pt"
    small = read_checkpoint(source)
    logs: list[str] = []
    grown = Trainer(tiny(tmp_path, "grown", f"init_from={source}", "card_features=true",
                         f"hidden={2 * first.hidden}", f"layers={first.layers + 1}",
                         f"head_hidden={first.head_hidden + 8}"), log=logs.append)
    assert any("grown into" in line for line in logs)
    policy = PolicyNet(**small["arch"])
    policy.load_state_dict(small["policy"])
    obs = torch.rand(64, policy.arch["obs_size"]).round()
    mask = torch.rand(64, 68) < 0.5
    mask[:, 0] = True
    with torch.no_grad():
        torch.testing.assert_close(grown.policy(obs, mask), policy(obs, mask), rtol=1e-5, atol=1e-4)
    # The new units are live: one gradient step moves the logits away from the small policy's.
    loss = grown.policy(obs, mask).masked_fill(~mask, 0).pow(2).mean()
    loss.backward()
    new_rows = grown.policy.card_score.weight.grad[0, first.head_hidden:]
    assert new_rows.abs().sum() > 0
    with pytest.raises(ValueError, match="cannot grow into"):
        PolicyNet(**small["arch"]).load_grown(grown.policy.state_dict(), grown.policy.arch)
    with pytest.raises(ValueError, match="the smaller policy has a parameter 'extra.weight' this one lacks"):
        grown.policy.load_grown({**small["policy"], "extra.weight": torch.zeros(1, 1)}, small["arch"])


def test_critic_warmup_freezes_the_policy_then_releases_it(tmp_path):
    """``critic_warmup_updates``: a central critic learns from an imported policy that stays fixed."""
    first = tiny(tmp_path, "first", "total_decisions=512", "imitation_decisions=0")
    Trainer(first, log=lambda line: None).train()
    model = export_model(tmp_path / "first" / "checkpoints" / "last.pt", tmp_path / "model.pt")
    config = tiny(tmp_path, "warm", f"init_from={model}", "critic=central", "critic_warmup_updates=2")
    trainer = Trainer(config, log=lambda line: None)
    policy_before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    critic_before = {k: v.clone() for k, v in trainer.critic.state_dict().items()}
    trainer.learn(trainer.collect())                      # update 0 of 2 warm-up updates
    assert all(torch.equal(policy_before[k], v) for k, v in trainer.policy.state_dict().items())
    assert not all(torch.equal(critic_before[k], v) for k, v in trainer.critic.state_dict().items())
    trainer.update = 2                                    # warm-up over: the policy learns again
    trainer.learn(trainer.collect())
    assert not all(torch.equal(policy_before[k], v) for k, v in trainer.policy.state_dict().items())
    with pytest.raises(ConfigError, match="critic_warmup_updates=-1: expected 0 or more"):
        load_config(None, ["critic_warmup_updates=-1"])


@pytest.mark.parametrize("features", [False, True])
def test_policy_parts_trains_one_head_and_leaves_the_rest(tmp_path, features):
    """``policy_parts: cards`` moves the card head only (so the bids cannot change), ``bids`` the
    bidding head only; the critic trains either way, and afterwards every weight trains again."""
    def changed(before: dict, module: torch.nn.Module) -> set[str]:
        return {k for k, v in module.state_dict().items() if not torch.equal(before[k], v)}

    for part, head in (("cards", "card_"), ("bids", "bid_head.")):
        config = tiny(tmp_path, f"{part}{features}", "imitation_decisions=0", f"policy_parts={part}",
                      f"card_features={str(features).lower()}")
        trainer = Trainer(config, log=lambda line: None)
        policy_before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        critic_before = {k: v.clone() for k, v in trainer.critic.state_dict().items()}
        trainer.learn(trainer.collect())
        moved = changed(policy_before, trainer.policy)
        assert moved and all(k.startswith(head) for k in moved), (part, moved)
        assert changed(critic_before, trainer.critic)
        assert all(p.requires_grad for p in trainer.policy.parameters())
    with pytest.raises(ConfigError, match="policy_parts='trunk': expected 'all', 'cards', 'bids' or 'nil_defence'"):
        load_config(None, ["policy_parts=trunk"])


def test_max_updates_stops_early_on_the_full_schedule(tmp_path):
    config = tiny(tmp_path, "short", "max_updates=2", "imitation_decisions=0", "eval_every=0")
    assert config.updates == 6 and config.last_update == 2
    trainer = Trainer(config, log=lambda line: None)
    trainer.train()
    assert trainer.update == 2
    rows = list(csv.DictReader((tmp_path / "short" / "metrics.csv").open()))
    assert len(rows) == 2 and float(rows[1]["learning_rate"]) == pytest.approx(config.learning_rate * (1 - 1 / 6))


@pytest.mark.parametrize("extra", [[], ["rules=openspiel", "varied_start=true"]])
def test_max_updates_zero_is_the_imitation_alone(tmp_path, extra):
    """Also: varied starting scores in the imitation, under rules whose bags are the score's digit."""
    config = tiny(tmp_path, "imitation", "max_updates=0", "eval_every=0", *extra)
    trainer = Trainer(config, log=lambda line: None)
    trainer.train()
    assert trainer.update == 0 and trainer.imitated
    run = tmp_path / "imitation"
    assert (run / "model.pt").exists() and (run / "final_eval.json").exists()
    assert read_checkpoint(run / "checkpoints" / "last.pt")["imitated"] is True


def test_max_updates_zero_after_init_from_writes_a_checkpoint(tmp_path):
    first = tiny(tmp_path, "first", "total_decisions=512", "imitation_decisions=0", "eval_every=0")
    Trainer(first, log=lambda line: None).train()
    source = tmp_path / "first" / "checkpoints" / "last.pt"
    Trainer(tiny(tmp_path, "copy", f"init_from={source}", "max_updates=0"), log=lambda line: None).train()
    copied = read_checkpoint(tmp_path / "copy" / "checkpoints" / "last.pt")
    assert copied["update"] == 0 and (tmp_path / "copy" / "model.pt").exists()
    for key, value in read_checkpoint(source)["policy"].items():
        assert torch.equal(copied["policy"][key], value)


def test_neural_agent_evaluates_in_forked_workers():
    """torch's OpenMP pool does not survive fork: worker processes must not hang on it."""
    code = ("import torch; torch.ones(1000, 1000) @ torch.ones(1000, 1000)\n"   # parent pool warmed up
            "from evaluation import evaluate\n"
            "r = evaluate('neural', 'random', deals=4, duplicate=True, workers=2, seed=0)\n"
            "print(r.hands)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "8"


def test_reward_settings_reach_the_engine(tmp_path):
    trainer = Trainer(tiny(tmp_path, "rewards", "episode=game", "reward=team_score", "win_bonus=0.5",
                           "shaping=0.2", "reward_scale=0.02"), log=lambda line: None)
    scheme = trainer.env.reward_scheme
    assert (trainer.env.episode, scheme.reward, scheme.win_bonus, scheme.shaping, scheme.reward_scale) == \
        ("game", "team_score", 0.5, 0.2, 0.02)


def _final_weights(tmp_path, name, *settings):
    """A tiny run's trainer (16 tables, 8 steps, two updates) after training, and its policy's weights."""
    config = tiny(tmp_path, name, "num_envs=16", "rollout_steps=8", "total_decisions=256", "minibatch_size=64",
                  "eval_every=0", *settings)
    trainer = Trainer(config, log=lambda line: None)
    trainer.train()
    return trainer, trainer.policy.state_dict()


def test_compiled_engine_trains_exactly_like_the_eager_one(tmp_path):
    """compile_env=true runs the rollouts on the compiled step: the same experience, the same weights."""
    weights = []
    for compiled in ("false", "true"):
        trainer, final = _final_weights(tmp_path, f"compiled_{compiled}", f"compile_env={compiled}",
                                        "opponents={self: 1.0}", "imitation_decisions=0")
        assert trainer.env.compiled == (compiled == "true")
        weights.append(final)
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


@pytest.mark.skipif(shutil.which("cc") is None, reason="env_backend=native needs a C compiler")
def test_native_engine_trains_exactly_like_the_torch_one(tmp_path):
    """env_backend=native runs the rollouts and the imitation games on the C step: the same
    experience, the same weights (with heuristic opponents and varied starting scores)."""
    weights = []
    for backend in ("torch", "native"):
        trainer, final = _final_weights(tmp_path, f"backend_{backend}", f"env_backend={backend}",
                                        "imitation_decisions=128", "varied_start=true")
        assert trainer.env.backend == backend
        weights.append(final)
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


@pytest.mark.parametrize("card_features", ["false", "true"])
def test_bfloat16_learning_keeps_the_heads_in_float32(tmp_path, card_features):
    """learn_precision=bfloat16: the learner's logits stay within a few hundredths of the float32
    ones (the trunk is rounded, the heads are not), and a run with it trains."""
    config = tiny(tmp_path, f"bf16_{card_features}", "learn_precision=bfloat16", f"card_features={card_features}",
                  "imitation_decisions=0", "total_decisions=1024", "eval_every=0")
    trainer = Trainer(config, log=lambda line: None)
    obs, mask = trainer.env.observe()
    with torch.no_grad():
        reference = trainer.policy(obs, mask)
        logits = learner_logits(trainer.policy, obs, mask, trainer.config, trainer.device)
    assert logits.dtype == torch.float32 and torch.equal(logits <= -1e8, reference <= -1e8)
    assert float((logits - reference)[mask].abs().max()) < 0.05
    trainer.train()
    assert all(torch.isfinite(p).all() for p in trainer.policy.parameters())


# ---------------------------------------------------------------------- one run per folder
def test_a_second_run_on_a_busy_folder_is_refused_and_a_killed_holder_frees_it(tmp_path):
    import signal
    import subprocess
    import time as _time
    from train.ppo.trainer import Trainer
    config = tiny(tmp_path, "busy")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from train.ppo.run_lock import RunLock; lock = RunLock(Path(sys.argv[1])).acquire(); "
                               "print('held', flush=True); time.sleep(60)", str(config.run_path)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=r"run folder .*busy.* is in use by spades-train \(pid"):
            Trainer(config)
        assert not (config.run_path / "checkpoints").exists()      # nothing was touched
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    _time.sleep(0.1)
    trainer = Trainer(config)                                       # the kernel dropped the lock
    trainer.run_lock.release()


def test_a_kill_between_the_two_checkpoint_files_loses_no_update(tmp_path, monkeypatch):
    """``last.pt`` (what ``--resume`` reads) is written before the numbered checkpoint, so a kill
    while the numbered one is written leaves ``last.pt`` holding the newest update."""
    from train.ppo.checkpoints import save_checkpoint
    save_checkpoint({"update": 1}, tmp_path, 1, keep=2)
    real_save, calls = torch.save, []

    def killed_on_the_second_file(data, path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return real_save(data, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", killed_on_the_second_file)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint({"update": 2}, tmp_path, 2, keep=2)
    monkeypatch.setattr(torch, "save", real_save)
    assert torch.load(tmp_path / "last.pt")["update"] == 2
    assert torch.load(tmp_path / "update_000001.pt")["update"] == 1
    assert not (tmp_path / "update_000002.pt").exists()
