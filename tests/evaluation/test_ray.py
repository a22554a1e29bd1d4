"""spades-eval and spades-label on Ray (evaluation/ray_cluster.py): on a local Ray, the per-deal
results are exactly those of --workers 1, and a labelling run killed mid-way resumes with
nothing lost. Runs where Ray is installed (the integrations step of .ci/run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ray = pytest.importorskip("ray")

from evaluation import compare, evaluate  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_eval_on_ray_equals_one_worker(local_ray):
    one = evaluate("heuristic", "random", deals=24, duplicate=True, seed=3, workers=1)
    spread = evaluate("heuristic", "random", deals=24, duplicate=True, seed=3, workers=2, ray="local")
    assert spread.unit_diffs == one.unit_diffs
    assert spread.to_dict(timing=False) == one.to_dict(timing=False)


def test_compare_on_ray_equals_one_worker(local_ray):
    args = ("heuristic", "random", "heuristic")
    one = compare(*args, deals=16, seed=1, workers=1)
    spread = compare(*args, deals=16, seed=1, workers=2, ray="local")
    assert spread.to_dict(timing=False) == one.to_dict(timing=False)


def _label(out: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "train.label", "--teacher", "search:worlds=6", "--deals", "24",
               "--shard-deals", "2", "--out", str(out), "--no-progress", *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _shards(out: Path) -> list[Path]:
    return sorted(out.glob("shard_*.pt"))


def test_label_on_ray_resumes_after_a_kill_with_nothing_lost(tmp_path):
    killed = _label(tmp_path / "ray", "--ray", "--workers", "2")
    deadline = time.time() + 240
    while len(_shards(tmp_path / "ray")) < 2 and time.time() < deadline and killed.poll() is None:
        time.sleep(0.2)
    os.killpg(killed.pid, signal.SIGKILL)           # the driver and the Ray it started, at once
    killed.wait()
    written = len(_shards(tmp_path / "ray"))
    assert 2 <= written < 12, f"{written} shards at the kill: the test needs a run cut mid-way"
    again = _label(tmp_path / "ray", "--ray", "--workers", "2")
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out
    assert f"{written} of 12 shards already in" in out
    reference = _label(tmp_path / "one", "--workers", "1")
    out, _ = reference.communicate(timeout=600)
    assert reference.returncode == 0, out
    assert [p.name for p in _shards(tmp_path / "ray")] == [p.name for p in _shards(tmp_path / "one")]
    for a, b in zip(_shards(tmp_path / "ray"), _shards(tmp_path / "one")):
        x, y = torch.load(a, weights_only=True), torch.load(b, weights_only=True)
        for key in ("obs", "mask", "target", "values", "teacher", "student", "phase", "deal", "seat"):
            assert torch.equal(x[key].nan_to_num(), y[key].nan_to_num()) if x[key].is_floating_point() \
                else torch.equal(x[key], y[key]), (a.name, key)
