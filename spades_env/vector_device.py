"""Where and how the batched engine runs: the device (checked before use), the observation dtype,
and torch.compile's settings. Public so that tools (spades-bench) check a device the same way."""

from __future__ import annotations

from typing import Any

import torch

from .vector_checks import VectorEnvError

OBS_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

def obs_dtype_of(value: Any) -> torch.dtype:
    """``obs_dtype`` as a torch dtype (a dtype or its name), or a clear error."""
    dtype = OBS_DTYPES.get(value, value) if isinstance(value, str) else value
    if dtype not in OBS_DTYPES.values():
        raise VectorEnvError(f"obs_dtype={value!r}: expected one of {', '.join(OBS_DTYPES)}")
    return dtype


# Compiled steps one process may hold (one per batch size, rules and reward setting): torch's default
# of 8 would silently run the ninth and later ones eagerly, about 10x slower.
RECOMPILE_LIMIT = 64


def recompile_limit_setting() -> tuple[Any, str]:
    """torch.compile's per-function recompile limit: its config module and the setting's name
    (``recompile_limit``; ``cache_size_limit`` in older torch)."""
    import torch._dynamo.config as dynamo_config

    return dynamo_config, "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"


def allow_recompiles(limit: int) -> None:
    """Raise torch.compile's per-function recompile limit to at least ``limit``. Every compiled
    env shares one compiled function (``_full_step_fused``), and each new batch size or rule set
    is one more compilation of it."""
    config, name = recompile_limit_setting()
    if getattr(config, name) < limit:
        setattr(config, name, limit)


def usable_device(device: str | torch.device) -> torch.device:
    """``device`` as a torch.device, or a VectorEnvError saying why it cannot be used here."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise VectorEnvError(f"device={device!r}: not a torch device ({exc}); expected e.g. 'cpu' or 'cuda'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise VectorEnvError(f"device='{dev}': no CUDA GPU is usable here (torch {torch.__version__}, "
                             "torch.cuda.is_available() is False); use device='cpu'")
    try:
        torch.empty(1, device=dev)
    except (RuntimeError, AssertionError) as exc:
        raise VectorEnvError(f"device='{dev}': cannot allocate there ({str(exc).split('. ')[0]}); "
                             "expected a device this torch build can use, e.g. 'cpu'") from None
    return dev


def compile_options() -> dict:
    """Inductor settings of the compiled step: the eager step's rounding, value for value.

    On a GPU, Triton contracts ``a * b + c`` into one fused multiply-add, rounded once instead of
    twice; the rewards (points x scale, then differences and shaping) would then differ from the
    eager step's and the AEC env's in the last bit. ``emulate_precision_casts`` turns that
    contraction off (torch >= 2.10; the CPU backend never contracts)."""
    import torch._inductor.config as inductor_config

    return {"emulate_precision_casts": True} if hasattr(inductor_config, "emulate_precision_casts") else {}
