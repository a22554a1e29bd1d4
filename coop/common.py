"""Helpers shared by the cooperation tools (scenarios, signals, league): building players once
per spec, per-deal scores out of played matches, JSON and plot files."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from evaluation.matches import Player
from evaluation.outcomes import EvaluationError, PlayOutcome


class PlayerCache:
    """One :class:`Player` per spec string, so that equal specs are the same player (and the
    matches they play can be shared)."""

    def __init__(self) -> None:
        self._players: dict[Any, Player] = {}

    def get(self, spec: Any) -> Player:
        key = spec if isinstance(spec, str) else id(spec)
        player = self._players.get(key)
        if player is None:
            player = self._players[key] = Player.of(spec.strip() if isinstance(spec, str) else spec)
        return player


def player_key(player: Player) -> tuple:
    """Players with equal keys play alike: the same spec (label) and the same seed salt."""
    return (player.label, player.salt)


def deal_scores(outcomes: Sequence[Sequence[PlayOutcome]]) -> list[float]:
    """Per deal, team A's points minus team B's per hand (a duplicate's two plays pooled)."""
    scores = []
    for plays in outcomes:
        hands = sum(o.hands for o in plays)
        scores.append(sum(o.diff for o in plays) / hands)
    return scores


def fmean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def kl_bits(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) in bits over the actions p gives weight (q floored, so a change to an action p
    never takes stays finite)."""
    keep = p > 0
    return float((p[keep] * np.log2(p[keep] / np.maximum(q[keep], 1e-12))).sum())


def kl_bootstrap(kl_by_deal: np.ndarray, probes_by_deal: np.ndarray, available: bool, seed: int, method: str,
                 resamples: int = 1000) -> dict:
    """Mean KL per probe (bits) with a percentile bootstrap over deals (each resample's KL over
    its own probes: deals hold different numbers of them); None where the agent exposes no
    probabilities or nothing was probed."""
    probes = int(probes_by_deal.sum())
    if not available or probes == 0:
        return value_dict(None, None, None, n=probes, method=method)
    draws = np.random.default_rng(seed).integers(0, len(kl_by_deal), (resamples, len(kl_by_deal)))
    resampled = kl_by_deal[draws].sum(1) / np.maximum(probes_by_deal[draws].sum(1), 1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return value_dict(float(kl_by_deal.sum() / probes), float(low), float(high), n=probes, method=method)


def probe_answers(probe: Any, probe_seed: int, observations: Sequence[Any], mask: Any, info: Any) -> list:
    """The probe's choice for each observation under one mask, reset to the same seed before each
    (so that only the observation can change the answer)."""
    answers = []
    for observation in observations:
        probe.reset(probe_seed)
        answers.append(probe.act({"observation": observation, "action_mask": mask}, info))
    return answers


def partner_decisions(player: Player, opponent: Player, rules: Any, deals: int, seed: int, tag: str,
                      progress: bool = False):
    """The listening probes' walk: ``deals`` hands of ``player`` (seats 0 and 2) against
    ``opponent``, from the duplicate deals of ``seed``, yielding ``(k, deal, seat, obs, info)`` at
    every decision of seats 0 and 2 with a real choice; once the caller has probed it, the seat's
    own agent plays it. ``tag`` names the env's and the seats' seeds (``{tag}-env``, ``{tag}-seat``)
    and the progress bar, so that each measure keeps its own random streams."""
    from tqdm import tqdm

    from evaluation.cli_common import progress_disabled
    from evaluation.matches import derive_seed, make_deal
    from spades_env import spades_v0

    env = spades_v0.raw_env(rules=rules, episode="hand", reward_scale=1.0)
    seated = [player.factory(), opponent.factory(), player.factory(), opponent.factory()]
    for k in tqdm(range(deals), desc=tag.replace("-", " "), unit="deal", disable=progress_disabled(progress),
                  dynamic_ncols=True):
        deal, dealer = make_deal(seed, k, rules)
        options = {"deal": deal} if dealer is None else {"deal": deal, "dealer": dealer}
        env.reset(seed=derive_seed("spades-coop", f"{tag}-env", seed, k), options=options)
        for s, agent in enumerate(seated):
            agent.reset(derive_seed("spades-coop", f"{tag}-seat", seed, k, s))
        for name in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            seat = env.agent_name_mapping[name]
            if seat in (0, 2) and np.count_nonzero(obs["action_mask"]) > 1:
                yield k, deal, seat, obs, info
            env.step(seated[seat].act(obs, info))


def value_dict(value: Optional[float], low: Optional[float], high: Optional[float], **extra: Any) -> dict:
    return {"value": value, "low": low, "high": high, **extra}


def write_json(path: Union[str, os.PathLike], data: Any, flag: Optional[str] = None) -> Path:
    """``data`` as JSON at ``path`` (folders made); a refused write is an EvaluationError naming it."""
    from evaluation.cli_common import write_text_file
    return write_text_file(path, json.dumps(data, indent=2, sort_keys=False) + "\n", flag)


def plot_path(json_path: Optional[str], plot: Optional[str]) -> Optional[Path]:
    """Where a command writes its plot: ``--plot``, else beside ``--json`` (``.png``), else nowhere."""
    if plot:
        return Path(plot)
    if json_path:
        return Path(json_path).with_suffix(".png")
    return None


MAX_DEALS = 1_000_000        # per scenario or pair: a suite multiplies it, and 10**30 overflowed deep in play


def check_positive(value: Any, what: str, most: int = MAX_DEALS) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EvaluationError(f"{what}={value!r}: expected a positive integer")
    if value > most:
        raise EvaluationError(f"{what}={value!r}: expected at most {most:,}")
    return value


__all__ = ["PlayerCache", "player_key", "deal_scores", "fmean", "value_dict", "write_json", "plot_path",
           "check_positive", "MAX_DEALS", "EvaluationError"]
