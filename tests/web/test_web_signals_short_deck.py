"""The web table and inspector at the tables of issue 74: ``short`` and ``short_signals`` offered
and played (a short deck dealt, bids within its tricks), the person sends a message, everyone's
messages shown in the view and the log, wrong messages and bids refused with the reason, and
the record's messages stepped through and analysed in the inspector."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette")
pytest.importorskip("starlette.testclient")     # needs httpx2 (or httpx)

from spades_env.game import BID_ACTION_BASE, SIGNAL_ACTION_BASE  # noqa: E402
from spades_env.record import replay  # noqa: E402
from helpers_web import wait_for_turn  # noqa: E402
from web.table import TableGame, TableError, action_json  # noqa: E402


def _act(client, state, action):
    response = client.post(f"/api/games/{state['id']}/action", json={"action": action})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_short_presets_are_offered(client):
    offered = client.get("/api/options").json()["rules"]
    assert "short" in offered and "short_signals" in offered


def test_a_person_sends_a_message_and_plays_a_short_deck(client):
    state = client.post("/api/games", json={"seat": 1, "agents": {"0": "heuristic", "2": "random", "3": "heuristic"},
                                            "rules": "short_signals", "seed": 4}).json()
    assert state["signals"] == 4 and state["deck_ranks"] == 6 and state["tricks_per_hand"] == 6
    assert len(state["hand"]) == 6 and all(c["id"] % 13 >= 7 for c in state["hand"])      # nine to ace
    state = wait_for_turn(client, state)
    assert state["phase"] == "signal"
    assert [a["kind"] for a in state["legal"]] == ["message"] * 4
    assert [a["id"] for a in state["legal"]] == [SIGNAL_ACTION_BASE + m for m in range(4)]
    # out of range, and a bid in the signal phase: refused with the reason, nothing applied
    wrong = client.post(f"/api/games/{state['id']}/action", json={"action": SIGNAL_ACTION_BASE + 4})
    assert wrong.status_code == 400 and "0..71" in wrong.json()["error"]
    early = client.post(f"/api/games/{state['id']}/action", json={"action": BID_ACTION_BASE + 2})
    assert early.status_code == 400 and "free signal" in early.json()["error"]
    state = _act(client, state, SIGNAL_ACTION_BASE + 2)
    assert state["messages"][1] == 2
    state = wait_for_turn(client, state)
    assert state["phase"] == "bidding" and None not in state["messages"]
    assert state["messages"][0] == 0 and state["messages"][3] == 0        # the heuristic sends message 0
    sent = [(e["seat"], e["action"]["message"]) for e in state["log"] if e["action"]["kind"] == "message"]
    assert sorted(sent) == sorted((s, state["messages"][s]) for s in range(4))
    assert max(a.get("bid", 0) for a in state["legal"]) == 6
    too_high = client.post(f"/api/games/{state['id']}/action", json={"action": BID_ACTION_BASE + 8})
    assert too_high.status_code == 400 and "6 tricks" in too_high.json()["error"]
    late = client.post(f"/api/games/{state['id']}/action", json={"action": SIGNAL_ACTION_BASE})
    assert late.status_code == 400 and "only in the free signal" in late.json()["error"]
    # the rest of the hand: the first legal action each turn
    while len(state["hands"]) < 1 and not state["over"]:
        state = _act(client, state, state["legal"][0]["id"])
        state = wait_for_turn(client, state)
    hand = state["hands"][0]
    assert sum(hand["tricks_taken"]) == 6 and hand["messages"][1] == 2
    record = client.get(f"/api/games/{state['id']}/record").json()
    env = replay(record)                                   # the record replays, messages and all
    assert env.game_record()["hands"][0] == record["hands"][0]


def test_the_inspector_shows_the_messages(client, tmp_path):
    game = TableGame("g", 0, {1: "heuristic", 2: "heuristic", 3: "heuristic"}, rules="short_signals", seed=2)
    game.advance()
    game.play(SIGNAL_ACTION_BASE + 3)
    while not game.over and len(game.record()["hands"]) < 2:
        game.advance()
        if game.to_act == 0:
            game.play(game.view()["legal"][0]["id"])
    record = game.record()
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "game.json").write_text(json.dumps(record))
    data = client.get("/api/records/game.json").json()
    assert data["signals"] == 4 and data["tricks_per_hand"] == 6
    first = data["frames"][0]
    assert first["phase"] == "signal" and first["messages"] == [None] * 4 and [len(h) for h in first["hands"]] == [6] * 4
    after = next(f for f in data["frames"] if f["phase"] == "bidding")
    assert after["messages"][0] == 3 and None not in after["messages"]
    message_steps = [i for i, f in enumerate(data["frames"]) if f["action"] and f["action"]["kind"] == "message"]
    assert len(message_steps) >= 4
    step = next(i for i in message_steps if data["frames"][i]["to_act"] != 0)
    result = client.post("/api/analyse", json={"record_id": data["record_id"], "step": step,
                                               "agent": "heuristic"}).json()
    assert result["choice"] == action_json(SIGNAL_ACTION_BASE) and len(result["legal"]) == 4
    # the shipped model reads the full deck's observation: told so in one line, never a crash
    neural = client.post("/api/analyse", json={"record_id": data["record_id"], "step": step, "agent": "neural"})
    assert neural.status_code == 400 and "this model expects" in neural.json()["error"]


def test_the_short_table_without_signals_has_no_messages():
    game = TableGame("g", 2, {0: "heuristic", 1: "heuristic", 3: "heuristic"}, rules="short", seed=1)
    game.advance()                                  # the agents bid up to the person's turn
    view = game.view()
    assert view["to_act"] == 2
    assert view["signals"] == 0 and view["messages"] == [] and view["hand_size"] == 6
    with pytest.raises(TableError, match="0..67"):
        game.play(SIGNAL_ACTION_BASE)
