"""Stepping through a game record, and asking an agent what it thinks at any step.

:func:`record_frames` replays a record (``env.game_record()``, ``spades-play --record``, the web
table's download) exactly, through :func:`spades_env.record.iter_replay`, and returns one frame
per action plus the final position: every hand, the bids, the trick in progress, tricks taken,
scores and the action about to be taken. A malformed record raises
:class:`~spades_env.record.ReplayError` naming what is wrong.

:func:`analyse` replays to one step and asks an agent about the seat to act there: a ``neural``
agent gives its probability of every legal action (and its value estimate when the checkpoint
has a critic that reads the seat's observation), ``search`` the mean play-out value of every
candidate, any agent the action it would take.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

import agents as registry
from spades_env.game import PHASE_NAMES
from spades_env.record import ReplayError, iter_replay

from .table import (SEAT_NAMES, action_json, bid_words, browser_agent_spec, card_json, hand_summary, messages_json,
                    side_names)

# A record longer than this is refused (about 75 hands; a game to 500 takes 8-15): each frame is
# about 2 KB of JSON and 0.4 ms to build, so 20,000 frames held a worker for seconds and sent 44 MB.
MAX_FRAMES = 5_000


def _frame(env, seat: Optional[int], action: Optional[int]) -> dict:
    game = env.game
    n = game.n
    return {
        "hand_number": game.hand_number, "phase": PHASE_NAMES[game.phase], "dealer": game.dealer,
        "to_act": seat, "action": None if action is None else action_json(action),
        "hands": [[card_json(c) for c in sorted((c for c in range(52) if game.hands[s] >> c & 1),
                                                key=lambda c: (-(c // 13 == 3), -(c // 13), -(c % 13)))]
                  for s in range(n)],
        "bids": [None if b is None or b < 0 else int(b) for b in game.bids], "blind": [bool(b) for b in game.blind],
        "bid_words": bid_words(game.bids, game.blind),
        "messages": messages_json(game),             # the free signal: who sent which message (signals: N)
        "looked": [bool(k) for k in game.looked],     # a seat that has not looked does not know its hand
        "trick": [{"seat": (game.trick_leader + i) % n, "card": card_json(c)} for i, c in enumerate(game.trick_cards)],
        "trick_winning": int(game.win_seat) if game.trick_cards else None,     # whose card wins so far
        "tricks_won": list(game.tricks_taken), "scores": list(game.scores), "bags": list(game.bags),
        "spades_broken": bool(game.spades_broken),
    }


def record_frames(record: Any) -> dict:
    """The record's frames (one before every action, and the final position) and its summary."""
    if not isinstance(record, dict):
        raise ReplayError(f"a game record is a JSON object (spades-record), got {type(record).__name__}")
    hands = record.get("hands")
    if isinstance(hands, list):               # refused before any replay when it says it is too long
        stated = sum(len(h["actions"]) for h in hands if isinstance(h, dict) and isinstance(h.get("actions"), list))
        if stated > MAX_FRAMES:
            raise ReplayError(f"game record: {stated:,} actions, at most {MAX_FRAMES:,} can be inspected")
    frames = []
    env = None
    for env, seat, action in iter_replay(record):
        frames.append(_frame(env, seat, action))
        if len(frames) > MAX_FRAMES:
            raise ReplayError(f"game record: more than {MAX_FRAMES:,} actions; too long to inspect")
    if env is None:
        raise ReplayError("game record: it holds no action")
    # a game still in progress: its last frame is a decision (the seat to act), not a final position
    in_progress = not env.game_record()["hands"][-1].get("complete")
    final = _frame(env, env.game.to_act if in_progress else None, None)
    frames.append(final)
    rules = env.rules
    replayed = env.game_record()
    players = record.get("players")          # who sat where, where the record says (the web table's do)
    if not (isinstance(players, list) and len(players) == rules.players and all(isinstance(p, str) for p in players)):
        players = None
    return {"rules": rules.name, "players": rules.players, "seat_names": list(SEAT_NAMES[:rules.players]),
            "side_names": side_names(rules), "target_score": rules.target_score,
            "bag_limit": rules.bag_limit if rules.bags else None, "bag_penalty": rules.bag_penalty,
            "partnerships": rules.partnerships, "frames": frames, "in_progress": in_progress,
            "signals": rules.signals, "deck_ranks": rules.deck_ranks, "tricks_per_hand": rules.tricks_per_hand,
            "seat_players": None if players is None else [p[:80] for p in players],
            # scored hands only: the hand in progress has its own row
            "hands": [hand_summary(h) for h in replayed["hands"] if h.get("complete")],
            "winner": replayed.get("winner")}


def analyse(record: dict, step: int, spec: str, models: Optional[dict] = None) -> dict:
    """What agent ``spec`` thinks at frame ``step`` (before that frame's action), for the seat to
    act. ``spec`` takes the options a browser may set; ``models``: the models it may name
    (default :func:`web.limits.models_offered`)."""
    if models is None:
        from .limits import models_offered
        models = models_offered()
    name, options = browser_agent_spec(spec, models)
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ReplayError(f"step={step!r}: expected a frame number (0 or more)")
    env, index = None, -1
    for index, (env, seat, action) in enumerate(iter_replay(record)):
        if index == step:
            break
    else:
        # the last frame of a game in progress is a decision too (nobody has taken it yet)
        if env is None or step != index + 1 or env.game_record()["hands"][-1].get("complete"):
            raise ReplayError(f"step={step}: the record has no action there (the last frame is the final position)")
        seat, action = env.game.to_act, None
    agent_name = env.possible_agents[seat]
    obs = env.observe(agent_name)
    info = env.infos[agent_name]
    legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
    agent = registry.make(name, **options)
    result: dict[str, Any] = {"agent": spec, "seat": seat, "step": step,
                              "recorded": None if action is None else action_json(action),
                              "legal": [action_json(a) for a in legal]}
    if name == "neural":
        probabilities = agent.action_probabilities(obs)
        result["probabilities"] = {str(a): float(probabilities[a]) for a in legal}
        result["value"] = _critic_value(agent, obs)
    choice = int(agent.act(obs, info))
    result["choice"] = action_json(choice)
    found = getattr(agent, "last_info", None) or {}
    if "means" in found:
        result["candidate_values"] = {str(c): float(m) for c, m in zip(found["candidates"], found["means"])}
        result["worlds"] = found.get("worlds")
        zs = found.get("z")        # how sure: each candidate's z-score against the search's base action
        if zs is not None and len(zs) == len(found["candidates"]):
            result["candidate_z"] = {str(c): (None if z is None else float(z)) for c, z in zip(found["candidates"], zs)}
    return result


def _critic_value(agent, obs: dict) -> Optional[float]:
    """The checkpoint's critic value of this observation (points per hand), where it has a
    local critic; None for an exported model (policy only) or a central critic."""
    if agent.checkpoint is None:
        return None
    import torch
    from agents.neural import read_checkpoint
    from agents.networks import ValueNet

    data = read_checkpoint(agent.checkpoint)
    arch, weights = data.get("critic_arch"), data.get("critic")
    if not arch or not weights or arch.get("input_size") != len(obs["observation"]):
        return None
    critic = ValueNet(**arch)
    critic.load_state_dict(weights)
    scale = (data.get("config") or {}).get("reward_scale", 0.01)
    with torch.no_grad():
        value = float(critic(torch.as_tensor(np.asarray(obs["observation"], dtype=np.float32))[None])[0])
    return value / scale
