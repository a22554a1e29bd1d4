"""diversity_from / diversity_coef (coop.methods.diversity, MEP-style): the learner is paid the surprise of
its action under the earlier policies' mean, exactly and only at its own decisions; forced moves
earn nothing; held-out partners and unusable entries are refused in one line."""

from __future__ import annotations

import math
import shutil

import pytest
import torch

from agents.neural import MODELS_DIR, policy_from_checkpoint, read_checkpoint
from train.ppo.config import ConfigError
from coop.methods.diversity import MAX_SURPRISE, Diversity, DiversityError, check_diversity
from train.ppo.trainer import Trainer

from helpers_train import tiny

REFERENCE = MODELS_DIR / "zoo_scratch_s1.pt"          # a train-split partner of the zoo


def test_the_bonus_is_the_capped_surprise_under_the_mean_policy():
    from spades_env.vector import SpadesVectorEnv
    env = SpadesVectorEnv(8, rules="standard", episode="hand", seed=1)
    obs, mask = env.reset()
    div = Diversity([str(REFERENCE), "scratch-s1"], coef=5.0, reward_scale=0.01, obs_size=env.obs_size,
                    device=torch.device("cpu"))
    policy, _ = policy_from_checkpoint(read_checkpoint(REFERENCE))
    gen = torch.Generator().manual_seed(3)
    checked = forced = 0
    for _ in range(120):
        actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
        rows = torch.rand(8, generator=gen) < 0.7
        got = div.rewards(obs, mask, actions, rows)
        with torch.no_grad():
            p = torch.softmax(policy(obs, mask), 1).gather(1, actions[:, None])[:, 0]
        for b in range(8):
            if not rows[b]:
                assert float(got[b]) == 0.0
                continue
            want = 0.05 * min(-math.log(max(float(p[b]), 1e-30)), MAX_SURPRISE)
            assert float(got[b]) == pytest.approx(want, rel=1e-4, abs=1e-6)
            checked += 1
            if int(mask[b].sum()) == 1:
                assert float(got[b]) == pytest.approx(0.0, abs=1e-6)
                forced += 1
        obs, mask, _, _, _ = env.step(actions)
    assert checked > 300 and forced > 5


@pytest.mark.parametrize("entries, coef, message", [
    ("scratch-s1", 1.0, "expected a list"),
    (["scratch-s1"], 0.0, "go together"),
    ([], 2.0, "go together"),
    (["scratch-s1"], -1.0, "between 0 and"),
    (["scratch-s1"], 1e9, "between 0 and"),
])
def test_bad_settings_are_refused(entries, coef, message):
    with pytest.raises(DiversityError, match=message):
        check_diversity(entries, coef)


def test_entries_that_are_no_usable_policy_are_refused(tmp_path):
    for entry, message in (("nowhere/x.pt", "no such file"), ("no-such-partner", "neither a checkpoint"),
                           ("heuristic", "not a neural model")):
        with pytest.raises(DiversityError, match=message):
            Diversity([entry], 1.0, 0.01, obs_size=10, device=torch.device("cpu"))
    with pytest.raises(DiversityError, match="observation features"):
        Diversity([str(REFERENCE)], 1.0, 0.01, obs_size=10, device=torch.device("cpu"))


def test_a_held_out_partner_is_refused_whatever_it_is_called(tmp_path):
    copy = tmp_path / "my_partner.pt"
    shutil.copyfile(MODELS_DIR / "zoo_scratch_s3.pt", copy)
    for entry in (str(copy), "scratch-s3"):
        with pytest.raises(ConfigError, match="held-out"):
            tiny(tmp_path, "x", f"diversity_from=[{entry}]", "diversity_coef=1")
    with pytest.raises(DiversityError, match="held-out"):
        Diversity([str(copy)], 1.0, 0.01, obs_size=10, device=torch.device("cpu"))


def test_the_learners_rewards_carry_exactly_the_bonus(tmp_path):
    def rollout(*extra: str):
        trainer = Trainer(tiny(tmp_path, f"d{len(extra)}", "imitation_decisions=0", "num_envs=16",
                               "rollout_steps=48", "opponents={self: 0.5, heuristic: 0.5}", *extra),
                          log=lambda line: None)
        try:
            buf = trainer.collect()
            return {k: getattr(buf, k).clone() for k in ("reward", "action", "seat", "learner", "obs", "mask")}
        finally:
            trainer.run_lock.release()

    plain = rollout()
    diverse = rollout("diversity_from=[scratch-s1]", "diversity_coef=4")
    assert torch.equal(plain["action"], diverse["action"])
    extra = diverse["reward"] - plain["reward"]
    acted = torch.nn.functional.one_hot(plain["seat"], 4).bool()
    assert torch.all(extra[~acted] == 0)
    paid = extra[acted].view_as(plain["seat"])
    policy, _ = policy_from_checkpoint(read_checkpoint(REFERENCE))
    learner = plain["learner"]
    with torch.no_grad():
        p = torch.softmax(policy(plain["obs"][learner], plain["mask"][learner]), 1)
        p = p.gather(1, plain["action"][learner][:, None])[:, 0]
    want = 0.04 * (-torch.log(p)).clamp(max=MAX_SURPRISE)
    assert torch.allclose(paid[learner], want, atol=1e-5)
    assert torch.all(paid[~learner] == 0) and bool((~learner).any())
