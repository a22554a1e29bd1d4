"""Spades for reinforcement learning: a PettingZoo AEC environment, a pure rules engine, records."""

from . import spades_v0
from .cards import card_str, format_hand, parse_card
from .game import (BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, PHASE_SIGNAL, SIGNAL_ACTION_BASE,
                   DealError, IllegalActionError, ResetOptionError, SpadesGame, action_str)
from .observation import Layout, ObservationView, decode_observation, layout_for, view_from_game
from .record import ReplayError, iter_replay, load_record, replay, save_record
from .rewards import REWARD_SCHEMES, RewardError
from .rules import PRESET_NAMES, PRESETS, Rules, RulesError, make_rules
from .single_agent import SpadesSingleAgentEnv
from .symmetries import Relabelling, SymmetryError, SymmetryGroup, symmetries

__version__ = "0.1.0"

GYMNASIUM_ID = "spades_env/Spades-v0"
"""``gymnasium.make(GYMNASIUM_ID, **kwargs)`` builds a :class:`SpadesSingleAgentEnv` (kwargs go to it)."""


def _register_with_gymnasium() -> None:
    """Register the single-agent view under :data:`GYMNASIUM_ID` (once per process), so that
    ``gymnasium.make`` and tools built on it (SB3's ``make_vec_env``) find it by name."""
    import gymnasium

    if GYMNASIUM_ID not in gymnasium.registry:
        gymnasium.register(id=GYMNASIUM_ID, entry_point="spades_env.single_agent:SpadesSingleAgentEnv",
                           disable_env_checker=False)


_register_with_gymnasium()

__all__ = [
    "spades_v0", "SpadesGame", "Rules", "make_rules", "PRESETS", "PRESET_NAMES", "RulesError",
    "IllegalActionError", "DealError", "ResetOptionError", "RewardError", "ReplayError", "REWARD_SCHEMES",
    "replay", "iter_replay", "save_record", "load_record", "Layout", "layout_for",
    "decode_observation", "ObservationView", "view_from_game",
    "card_str", "parse_card", "format_hand", "action_str",
    "NUM_ACTIONS", "BID_ACTION_BASE", "BLIND_NIL_ACTION", "LOOK_ACTION", "SIGNAL_ACTION_BASE", "PHASE_SIGNAL",
    "SpadesSingleAgentEnv", "GYMNASIUM_ID",
    "symmetries", "Relabelling", "SymmetryGroup", "SymmetryError",
]
