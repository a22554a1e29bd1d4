"""spades-train with the cooperation settings (coop/methods/cooperation.py): from scratch, each setting
runs on the batched engine and resumes exactly; they are off by default and the main job's
config does not turn them on; bad settings are refused naming the field."""

from __future__ import annotations

import pytest
import torch

from train.ppo.config import ConfigError, TrainConfig, load_config
from coop.methods.cooperation import Cooperation
from train.ppo.trainer import Trainer

TINY = dict(num_envs=16, rollout_steps=16, minibatch_size=128, total_decisions=256 * 3, hidden=16, layers=1,
            head_hidden=8, epochs=1, eval_every=0, final_eval_deals=2, eval_opponents=["random"],
            eval_against_start=False, checkpoint_every=1, keep_checkpoints=10, tensorboard=False, progress=False,
            threads=1, init_from=None, imitation_decisions=0, opponents={"self": 0.5, "heuristic": 0.5})


def tiny(tmp_path, name: str, **changes) -> TrainConfig:
    return TrainConfig.from_flat({**TINY, "run_dir": str(tmp_path), "name": name, **changes}).validate()


def weights(trainer: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.policy.parameters()]


def test_the_settings_are_off_by_default_and_in_the_main_job():
    for config in (TrainConfig(), load_config("configs/quickstart.yaml")):
        assert (config.symmetry_augment, config.other_play, config.partner_population) == (False, "none", [])
        assert Cooperation.from_config(config, "standard", 4, torch.Generator(), torch.device("cpu")) is None


@pytest.mark.parametrize("field, value, expected", [
    ("other_play", "both", "expected 'none', 'partner' or 'learner'"),
    ("partner_population_share", 1.5, "expected a number in [0, 1]"),
    ("partner_population", [3], "expected a list of zoo partner names"),
    ("symmetry_augment", "yes", "expected bool"),
])
def test_bad_settings_are_refused_naming_the_field(field, value, expected):
    from train.ppo.config import config_from_dict
    with pytest.raises(ConfigError, match=field) as info:
        config_from_dict({field: value})
    assert expected in str(info.value)


def test_a_held_out_population_partner_is_refused_before_training(tmp_path):
    with pytest.raises(ConfigError, match="'low-asks' of the held-out split"):
        Trainer(tiny(tmp_path, "held", partner_population=["low-asks"]), log=lambda line: None)
    with pytest.raises(ConfigError, match="'never-nil' of the validation split"):
        tiny(tmp_path, "validation", partner_population=["never-nil"])
    assert not (tmp_path / "held" / "checkpoints").exists()


def test_every_setting_trains_from_scratch_and_resumes_exactly(tmp_path):
    """Plain self-play (its checkpoints then serve as population members), then Other-Play,
    augmentation and a population together: straight through, and stopped after 2 updates and
    resumed, to the same weights."""
    plain = Trainer(tiny(tmp_path, "plain"), log=lambda line: None)
    plain.train()
    assert plain.start_policy is not None and plain.update == 3          # no imitation: PPO from scratch
    glob = str(tmp_path / "plain" / "checkpoints" / "update_*.pt")
    settings = dict(other_play="partner", symmetry_augment=True, partner_population=["aggressive", glob],
                    partner_population_share=0.5, critic="central")
    straight = Trainer(tiny(tmp_path, "all", **settings), log=lambda line: None)
    population = straight.cooperation.population
    assert [m.source for m in population.members] == ["zoo"] + ["checkpoint"] * 3
    straight.train()
    stopped = Trainer(tiny(tmp_path, "again", max_updates=2, **settings), log=lambda line: None)
    stopped.train()
    resumed = Trainer(tiny(tmp_path, "again", **settings), resume=True, log=lambda line: None)
    resumed.train()
    for a, b in zip(weights(straight), weights(resumed)):
        assert torch.equal(a, b)
    assert torch.equal(straight.cooperation.other_play.which, resumed.cooperation.other_play.which)
    for a, b in zip(weights(straight), weights(plain)):
        assert not torch.equal(a, b)


@pytest.mark.parametrize("mode, relabelled", [("partner", (2, 3)), ("learner", (0, 1))])
def test_the_other_play_mode_of_the_config_relabels_its_seats_and_no_other(tmp_path, mode, relabelled):
    """A 'partner' run must not relabel the learner's seats (0, 1), nor a 'learner' run its partners'."""
    trainer = Trainer(tiny(tmp_path, mode, other_play=mode), log=lambda line: None)
    other_play = trainer.cooperation.other_play
    tables = trainer.config.num_envs
    assert other_play.mode == mode and bool(other_play.which.any())
    obs = torch.rand(tables, trainer.obs_size, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(tables, 68, dtype=torch.bool)
    for seat in range(4):
        seats = torch.full((tables,), seat)
        seen = other_play.seen(seats)
        assert torch.equal(seen, other_play.which if seat in relabelled else torch.zeros_like(seen)), seat
        viewed, _, _ = trainer.cooperation.view(seats, obs, mask, None)
        assert torch.equal(viewed, obs) == (seat not in relabelled), seat
    trainer.run_lock.release()
