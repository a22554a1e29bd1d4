"""Helpers of the web table's API tests (tests/web)."""

from __future__ import annotations

import time


def wait_for_turn(client, state, timeout=30.0):
    """The game's state once it is the person's turn (or the game is over, or ``timeout`` s passed)."""
    deadline = time.time() + timeout
    while not state["over"] and state["to_act"] != state["seat"] and time.time() < deadline:
        state = client.get(f"/api/games/{state['id']}?since={state['version']}&wait=2").json()
    return state
