"""spades-train's config file is read within bounds, and the real game's settings are checked."""

import subprocess
import sys

import pytest

from train.ppo.config import ConfigError, load_config


@pytest.mark.parametrize("text,expected", [
    ("a: &x [1, 2]\nb: *x\n", "alias"),
    ("seed: " + "[" * 5000 + "]" * 5000 + "\n", "nest"),
])
def test_a_hostile_config_file_is_refused_in_one_line(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected):
        load_config(path)
    run = subprocess.run([sys.executable, "-m", "train.ppo.trainer", "--config", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_bad_bag_cost_is_refused_and_expert_iteration_takes_real_starts():
    with pytest.raises(ConfigError, match="bag_cost=-1.0"):
        load_config("configs/quickstart.yaml", overrides=["bag_cost=-1"])
    cfg = load_config("configs/recipes/neural/expert_iteration.yaml", overrides=["varied_start=false", "start=real"])
    assert cfg.start_kind == "real"           # its labels start there (test_label.py: real starts)
