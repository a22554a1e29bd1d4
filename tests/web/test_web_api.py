"""The web table's server (web/server.py) through its JSON API: a whole game played, illegal
moves refused with the reason, bad requests, two games kept apart, records opened, stepped and
analysed, and nothing read outside the records folder."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("starlette.testclient")     # needs httpx2 (or httpx)

from spades_env import spades_v0  # noqa: E402
import agents  # noqa: E402
from spades_env.record import iter_replay, replay  # noqa: E402
from helpers_web import wait_for_turn  # noqa: E402

from helpers import heuristic_hand_record  # noqa: E402


def _play_heuristically(client, state, hands=1):
    """The person's seat plays the first legal action until `hands` hands are over."""
    while not state["over"] and len(state["hands"]) < hands:
        state = wait_for_turn(client, state)
        if state["over"] or len(state["hands"]) >= hands:
            break
        response = client.post(f"/api/games/{state['id']}/action", json={"action": state["legal"][0]["id"]})
        assert response.status_code == 200, response.text
        state = response.json()
    return state


def test_a_person_plays_whole_hands_and_the_record_replays(client, tmp_path):
    response = client.post("/api/games", json={"seat": 2, "agents": {"0": "heuristic", "1": "random", "3": "heuristic"},
                                               "rules": "standard", "seed": 3})
    assert response.status_code == 201, response.text
    state = response.json()
    assert state["seat"] == 2 and state["agents"] == {"0": "heuristic", "1": "random", "3": "heuristic"}
    assert len(state["hand"]) == 13 and all("rank" in c and "suit" in c for c in state["hand"])
    state = _play_heuristically(client, state, hands=2)
    assert len(state["hands"]) >= 2 and state["hands"][0]["scores"] is not None
    record = client.get(f"/api/games/{state['id']}/record")
    assert record.status_code == 200 and "attachment" in record.headers["content-disposition"]
    env = replay(record.json())                          # the downloaded record replays exactly
    assert env.game_record()["hands"][0] == record.json()["hands"][0]


def test_the_person_never_sees_another_hand(client):
    state = client.post("/api/games", json={"seat": 0, "seed": 5}).json()
    text = json.dumps(state)
    env = spades_v0.raw_env()
    env.reset(seed=5)
    mine = {c["id"] for c in state["hand"]}
    assert mine == {c for c in range(52) if env.game.hands[0] >> c & 1}
    assert "hands\": [[" not in text                     # no per-seat hand lists in the view


def test_an_illegal_card_is_refused_with_the_reason(client):
    state = client.post("/api/games", json={"seat": 2, "seed": 11}).json()
    # bid, then wait for a trick where the person must follow suit while holding a card of another suit
    for _ in range(200):
        state = wait_for_turn(client, state)
        assert not state["over"]
        if state["phase"] == "play" and state["illegal_reasons"]:
            break
        state = client.post(f"/api/games/{state['id']}/action", json={"action": state["legal"][0]["id"]}).json()
    card, reason = next(iter(state["illegal_reasons"].items()))
    response = client.post(f"/api/games/{state['id']}/action", json={"action": int(card)})
    assert response.status_code == 400
    assert response.json()["error"] == reason
    assert any(word in reason for word in ("must follow", "not broken", "first trick", "two of clubs", "may not"))
    assert client.get(f"/api/games/{state['id']}").json()["version"] == state["version"]   # nothing applied


@pytest.mark.parametrize("body, status, message", [
    ({"seat": 7}, 400, "seat=7: expected a seat number 0..3"),
    ({"seat": 2, "agents": {"0": "serch"}}, 400, "unknown agent 'serch'"),
    ({"seat": 2, "agents": {"0": "human"}}, 400, "the person's seat is chosen"),
    ({"seat": 2, "rules": "chess"}, 400, "rules='chess': unknown rules preset"),
    ({"seat": 2, "seed": "x"}, 400, "seed='x': expected an integer"),
    ({"seat": 2, "colour": "red"}, 400, "unknown field(s) ['colour']"),
    ({"seat": 2, "agents": {"0": "neural:checkpoint=/no/such.pt"}}, 400, "not one of the models this server offers"),
])
def test_bad_new_game_requests_are_explained(client, body, status, message):
    response = client.post("/api/games", json=body)
    assert response.status_code == status
    assert message in response.json()["error"]


def test_bad_action_requests_are_explained(client):
    state = client.post("/api/games", json={"seat": 2, "seed": 1}).json()
    state = wait_for_turn(client, state)
    gid = state["id"]
    not_json = client.post(f"/api/games/{gid}/action", content=b"{not json", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400 and "is not JSON" in not_json.json()["error"]
    assert "expected {\"action\"" in client.post(f"/api/games/{gid}/action", json={}).json()["error"]
    assert "expected an action id" in client.post(f"/api/games/{gid}/action", json={"action": "AS"}).json()["error"]
    assert client.post(f"/api/games/{gid}/action", json={"action": 3.5}).status_code == 400
    assert client.get("/api/games/nope").status_code == 404
    assert client.post("/api/games/nope/action", json={"action": 1}).status_code == 404


def test_two_games_stay_apart(client):
    a = client.post("/api/games", json={"seat": 2, "seed": 1}).json()
    b = client.post("/api/games", json={"seat": 0, "seed": 2}).json()
    assert a["id"] != b["id"]
    a = wait_for_turn(client, a)
    before_b = wait_for_turn(client, b)
    client.post(f"/api/games/{a['id']}/action", json={"action": a["legal"][0]["id"]})
    after_b = client.get(f"/api/games/{b['id']}").json()
    assert after_b["version"] == before_b["version"] and after_b["hand"] == before_b["hand"]


def test_an_action_out_of_turn_is_refused_with_409(client):
    # pace: 2 s between the agents' moves, so after the person's bid the table is the agents' for 4 s or more
    state = wait_for_turn(client, client.post("/api/games", json={"seat": 0, "seed": 1, "pace": 2}).json())
    gid = state["id"]
    state = client.post(f"/api/games/{gid}/action", json={"action": state["legal"][0]["id"]}).json()
    assert not state["over"] and state["to_act"] != state["seat"]
    refused = client.post(f"/api/games/{gid}/action", json={"action": 60})
    assert refused.status_code == 409
    assert refused.json()["error"].endswith("'s turn, not yours")
    mine = [e for e in client.get(f"/api/games/{gid}").json()["log"] if e["seat"] == 0]
    assert len(mine) == 1                                 # only the first action was applied
    client.delete(f"/api/games/{gid}")


def test_a_slow_agent_does_not_block_other_requests(client):
    slow = client.post("/api/games", json={"seat": 0, "agents": {"1": "search:backend=python,worlds=400"},
                                           "seed": 4}).json()
    slow = wait_for_turn(client, slow)
    # the search (East) thinks after the person's card; meanwhile the server answers at once
    if slow["phase"] != "play":
        for _ in range(8):
            if slow["phase"] == "play":
                break
            slow = wait_for_turn(client, client.post(f"/api/games/{slow['id']}/action",
                                                      json={"action": slow["legal"][0]["id"]}).json())
    client.post(f"/api/games/{slow['id']}/action", json={"action": slow["legal"][0]["id"]})
    began = time.perf_counter()
    fast = client.post("/api/games", json={"seat": 2, "seed": 9})
    assert fast.status_code == 201
    assert time.perf_counter() - began < 2.0


def test_a_heuristic_move_arrives_within_a_tenth_of_a_second(client):
    state = client.post("/api/games", json={"seat": 0, "seed": 12}).json()     # North: East bids next
    state = wait_for_turn(client, state)
    began = time.perf_counter()
    state = client.post(f"/api/games/{state['id']}/action", json={"action": state["legal"][0]["id"]}).json()
    version = state["version"]
    news = client.get(f"/api/games/{state['id']}?since={version}&wait=2").json()
    assert news["version"] > version
    assert time.perf_counter() - began < 0.1 * 3      # one move within ~0.1 s (slack for a loaded CI)


def test_records_open_step_and_analyse(client, tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    record = heuristic_hand_record()
    (folder / "game.json").write_text(json.dumps(record))
    listed = client.get("/api/records").json()["records"]
    assert [r["name"] for r in listed] == ["game.json"]
    data = client.get("/api/records/game.json").json()
    actions = sum(len(h["actions"]) for h in record["hands"])
    assert len(data["frames"]) == actions + 1 and data["frames"][-1]["action"] is None
    first = data["frames"][0]
    assert [len(h) for h in first["hands"]] == [13, 13, 13, 13]
    assert data["frames"][-1]["scores"] == record["hands"][-1]["scores"]
    # the neural policy's probabilities at a card decision sum to 1 over the legal actions
    step = next(i for i, f in enumerate(data["frames"]) if f["phase"] == "play" and len(f["hands"][f["to_act"]]) > 5)
    result = client.post("/api/analyse", json={"record_id": data["record_id"], "step": step, "agent": "neural"}).json()
    assert abs(sum(result["probabilities"].values()) - 1.0) < 1e-4
    assert set(result["probabilities"]) == {str(a["id"]) for a in result["legal"]}
    searched = client.post("/api/analyse", json={"record_id": data["record_id"], "step": step,
                                                 "agent": "search:worlds=50,seed=1"}).json()
    env, seat, _ = next(position for k, position in enumerate(iter_replay(record)) if k == step)
    obs = env.observe(env.possible_agents[seat])
    expected = agents.make("search", worlds=50, seed=1).act(obs, env.infos[env.possible_agents[seat]])
    assert searched["seat"] == seat and searched["choice"]["id"] == expected      # the same search, same seed
    assert str(expected) in searched["candidate_values"]
    bad = client.post("/api/analyse", json={"record_id": data["record_id"], "step": 10 ** 6, "agent": "neural"})
    assert bad.status_code == 400 and "no action there" in bad.json()["error"]
    # an uploaded record works the same way
    uploaded = client.post("/api/inspect", json={"record": record}).json()
    assert len(uploaded["frames"]) == len(data["frames"])


@pytest.mark.parametrize("name", ["../secret.json", "..%2Fsecret.json", ".hidden.json", "notes.txt", "%2Fetc%2Fpasswd"])
def test_no_path_outside_the_records_folder(client, tmp_path, name):
    (tmp_path / "secret.json").write_text(json.dumps(heuristic_hand_record()))
    response = client.get(f"/api/records/{name}")
    assert response.status_code in (400, 404)
    assert "frames" not in response.text


@pytest.mark.parametrize("record, message", [
    ({"format": "something-else"}, "not a replayable game record"),
    ([1, 2, 3], "a JSON object"),
    ({"rules": "standard", "hands": "many"}, "not a replayable game record"),
])
def test_malformed_records_get_a_clear_message(client, record, message):
    response = client.post("/api/inspect", json={"record": record})
    assert response.status_code in (400, 422)
    assert message in response.json()["error"]


def test_the_page_and_its_files_are_served_without_anything_external(client):
    page = client.get("/")
    assert page.status_code == 200 and "<title>Spades table</title>" in page.text
    for asset in ("/static/app.js", "/static/style.css"):
        body = client.get(asset).text
        assert "http://" not in body and "https://" not in body      # offline: no CDN
    assert "http" not in page.text.replace("http-equiv", "")


def test_the_command_refuses_a_bad_port():
    from web.server import main
    with pytest.raises(SystemExit) as stop:
        main(["--port", "70000", "--no-browser"])
    assert stop.value.code == 2


def test_the_command_refuses_a_models_folder_that_is_not_one(tmp_path, capsys):
    """--models was silently ignored when the folder did not exist (the server started anyway)."""
    from web.server import main
    with pytest.raises(SystemExit) as stop:
        main(["--models", str(tmp_path / "missing"), "--no-browser"])
    assert stop.value.code == 2 and "--models" in capsys.readouterr().err


def test_rules_come_as_a_preset_or_settings_never_as_a_path(client, tmp_path):
    secret = tmp_path / "house.yaml"
    secret.write_text("preset: standard\ntarget_score: 300\n")
    refused = client.post("/api/games", json={"seat": 2, "rules": str(secret)})
    assert refused.status_code == 400 and "unknown rules preset" in refused.json()["error"]
    made = client.post("/api/games", json={"seat": 2, "rules_yaml": secret.read_text()})
    assert made.status_code == 201 and made.json()["target_score"] == 300
    assert client.post("/api/games", json={"seat": 2, "rules": {"preset": "standard", "target_score": 250}}).status_code == 201
    bad = client.post("/api/games", json={"seat": 2, "rules_yaml": "target_score: [1"})
    assert bad.status_code == 400 and "not valid YAML" in bad.json()["error"]
    wrong = client.post("/api/games", json={"seat": 2, "rules_yaml": "preset: standard\nbag_limt: 5\n"})
    assert wrong.status_code == 400 and "bag_limt" in wrong.json()["error"]


def test_a_file_of_several_records_is_opened_one_at_a_time(client, tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    records = [heuristic_hand_record(seed) for seed in (1, 2, 3)]
    (folder / "eval.json").write_text(json.dumps(records))        # as spades-eval --records writes
    first = client.get("/api/records/eval.json").json()
    assert first["count"] == 3 and first["index"] == 0
    third = client.get("/api/records/eval.json?index=2").json()
    assert third["frames"][0]["hands"] != first["frames"][0]["hands"]
    assert client.get("/api/records/eval.json?index=3").status_code == 400
    uploaded = client.post("/api/inspect", json={"record": records, "index": 1}).json()
    assert uploaded["index"] == 1 and uploaded["count"] == 3


def _trick_winner(plays: list[tuple[int, int]]) -> int:
    """The seat that wins a trick of (seat, card) plays: the highest spade, else the highest card
    of the suit led (card id // 13 is the suit, spades 3; id % 13 the rank, ace high)."""
    led = plays[0][1] // 13
    trumps = [p for p in plays if p[1] // 13 == 3]
    return max(trumps or [p for p in plays if p[1] // 13 == led], key=lambda p: p[1] % 13)[0]


def test_the_last_trick_of_a_hand_names_its_winner(client):
    state = client.post("/api/games", json={"seat": 2, "seed": 21}).json()
    state = _play_heuristically(client, state, hands=1)
    plays = [e for e in state["log"] if e["phase"] == "play" and e["hand"] == 1]
    last_trick = [(e["seat"], e["action"]["card"]["id"]) for e in plays[-4:]]
    assert plays[-1]["trick_won_by"] == _trick_winner(last_trick)
    assert all("trick_won_by" not in e for e in plays[-4:-1])


def test_a_game_can_be_forgotten_and_huge_bodies_are_refused(client):
    state = client.post("/api/games", json={"seat": 2, "seed": 2}).json()
    assert client.delete(f"/api/games/{state['id']}").json() == {"deleted": state["id"]}
    assert client.get(f"/api/games/{state['id']}").status_code == 404
    huge = client.post("/api/inspect", content=b"{" + b" " * 4_100_000 + b"}",
                       headers={"Content-Type": "application/json"})
    assert huge.status_code == 413 and "at most" in huge.json()["error"]


def test_too_many_games_in_progress_are_refused(client, monkeypatch):
    import web.server
    monkeypatch.setattr(web.server, "MAX_GAMES", 2)
    first = client.post("/api/games", json={"seat": 2, "seed": 1}).json()
    client.post("/api/games", json={"seat": 2, "seed": 2})
    refused = client.post("/api/games", json={"seat": 2, "seed": 3})
    assert refused.status_code == 503 and "in progress" in refused.json()["error"]
    client.delete(f"/api/games/{first['id']}")
    assert client.post("/api/games", json={"seat": 2, "seed": 3}).status_code == 201
