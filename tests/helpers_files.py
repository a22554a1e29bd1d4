"""Hostile paths for the output and input rules (spades_env/files.py): private devices and FIFOs
(never the real /dev/null), files under files, and model files that lie about their size."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def private_device(folder: Path, name: str = "null", minor: int = 3) -> Path:
    """A character device of our own in ``folder`` (1,3 is null, 1,5 zero, 1,7 full): as root, a
    command that renamed onto it would turn it into a regular file, which the tests then see."""
    path = folder / name
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    return path


def private_fifo(folder: Path, name: str = "pipe") -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def leftovers(folder: Path) -> list[str]:
    """Names under ``folder`` a failed write may have left (``.tmp`` files), anywhere below."""
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.name.endswith(".tmp"))


def run_module(module: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m module args`` from the repository root, its output captured."""
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def assert_one_line_refusal(run: subprocess.CompletedProcess, *expected: str) -> str:
    """Exit status 2, one line on stderr holding each of ``expected``, no traceback."""
    err = run.stderr
    assert run.returncode == 2, (run.returncode, err[-2000:])
    assert err.count("\n") == 1 and "Traceback" not in err, err[-2000:]
    for text in expected:
        assert text in err, err
    return err.strip()


def stride_zero_weights(shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """Weights of the given shapes that are views of one float each: a few bytes in the file."""
    return {name: torch.zeros(1).expand(*shape) for name, shape in shapes.items()}


def model_with_declared_critic(source: Path, out: Path, **critic_arch: int) -> Path:
    """``source``'s model with a critic of ``critic_arch`` whose weights are stride-0 views (the
    file stays small however large the critic it declares)."""
    from agents.networks import ValueNet

    data = torch.load(source, weights_only=True)
    arch = {"input_size": data["arch"]["obs_size"], **critic_arch}
    with torch.device("meta"):
        shapes = {name: tuple(t.shape) for name, t in ValueNet(**arch).state_dict().items()}
    torch.save({**data, "critic_arch": arch, "critic": stride_zero_weights(shapes)}, out)
    return out
