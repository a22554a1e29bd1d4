"""People's games kept as data, by their choice (issue 49): the web table writes a game's record
only when the person's "Keep my games" switch is on (off by default), in the folder the server
was given (``spades-web --keep-games DIR``, by default the records folder), and exports the kept
games as JSON lines through an endpoint that opens no path from the client and keeps the
server's guards (Origin, content type)."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("starlette")
TestClient = pytest.importorskip("starlette.testclient").TestClient

from spades_env.record import replay  # noqa: E402
from web.server import create_app, main  # noqa: E402

SHORT = {"preset": "standard", "target_score": 100}      # a game over in a hand or two


@pytest.fixture
def folders(tmp_path):
    return tmp_path / "records", tmp_path / "kept"


@pytest.fixture
def client(folders):
    records, kept = folders
    with TestClient(create_app(records, keep_dir=kept), base_url="http://127.0.0.1:8000") as c:
        yield c


def _turn(client, state, timeout=30.0):
    deadline = time.time() + timeout
    while not state["over"] and state["to_act"] != state["seat"] and time.time() < deadline:
        state = client.get(f"/api/games/{state['id']}?since={state['version']}&wait=2").json()
    return state


def _play(client, state, moves=10_000):
    """The person plays the first legal action, ``moves`` times or to the game's end."""
    for _ in range(moves):
        state = _turn(client, state)
        if state["over"]:
            break
        response = client.post(f"/api/games/{state['id']}/action", json={"action": state["legal"][0]["id"]})
        assert response.status_code == 200, response.text
        state = response.json()
    return state


def _kept(folder):
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def test_nothing_is_written_while_the_switch_is_off(client, folders):
    records, kept = folders
    state = client.post("/api/games", json={"seat": 2, "seed": 3, "rules": SHORT}).json()
    assert state["keep"] is False                          # off by default
    state = _play(client, state)
    assert state["over"]                                   # a whole game, finished: still nothing
    client.delete(f"/api/games/{state['id']}")
    assert _kept(kept) == [] and _kept(records) == []
    assert client.get("/api/kept-games").json()["games"] == 0
    assert client.get("/api/kept-games/export").text == ""


def test_a_kept_game_is_written_after_each_move_and_replays(client, folders):
    records, kept = folders
    state = client.post("/api/games", json={"seat": 2, "seed": 4, "rules": SHORT, "keep": True,
                                            "player_name": "ana"}).json()
    assert state["keep"] is True
    state = _play(client, state, moves=3)
    name = f"web-{state['id']}.json"
    assert _kept(kept) == [name] and _kept(records) == []  # the keep folder, not the inspector's
    record = json.loads((kept / name).read_text())
    assert record["players"][2] == "person:ana"             # named: people told apart when cloning
    mine = [a for h in record["hands"] for s, a in h["actions"] if s == 2]
    assert len(mine) == 3                                  # the person's moves so far, all of them
    replay(record)
    state = _play(client, state)
    final = json.loads((kept / name).read_text())
    assert state["over"] and final.get("winner") is not None
    replay(final)


def test_what_a_client_sees_is_kept_even_before_the_agents_thread_writes_it(folders, monkeypatch):
    """The agents move in a worker thread that writes the record after them; a client polling the game
    may see the end first. The view itself writes what it shows, so a game seen over is kept over
    (the planted delay: the agents' thread never writes)."""
    import web.server as server

    def kick_without_keeping(self, game):
        self.pool.submit(game.advance)

    monkeypatch.setattr(server.WebState, "kick", kick_without_keeping)
    records, kept = folders
    with TestClient(create_app(records, keep_dir=kept), base_url="http://127.0.0.1:8000") as client:
        state = client.post("/api/games", json={"seat": 2, "seed": 4, "rules": SHORT, "keep": True}).json()
        state = _play(client, state)
        assert state["over"]
        final = json.loads((kept / f"web-{state['id']}.json").read_text())
        assert final.get("winner") is not None
        assert final["hands"][-1]["actions"][-1][0] != 2      # an agent's move ended it: only the view wrote it
        replay(final)


def test_the_switch_turns_keeping_on_and_off_within_a_game(client, folders):
    _, kept = folders
    state = client.post("/api/games", json={"seat": 0, "seed": 5, "rules": SHORT}).json()
    state = _play(client, state, moves=2)
    assert _kept(kept) == []
    on = client.post(f"/api/games/{state['id']}/keep", json={"keep": True})
    assert on.status_code == 200 and on.json()["keep"] is True
    path = kept / f"web-{state['id']}.json"
    assert path.is_file()                                  # written at once, the moves so far in it
    state = _play(client, on.json(), moves=2)
    off = client.post(f"/api/games/{state['id']}/keep", json={"keep": False})
    assert off.status_code == 200 and off.json()["keep"] is False
    written = path.read_text()      # read after the switch: until then the agents' moves are written too
    _play(client, off.json(), moves=3)
    assert path.read_text() == written                     # nothing more once it is off
    for body in ({"keep": "yes"}, {"keep": 1}, {}, {"keep": True, "path": "/etc/passwd"}):
        response = client.post(f"/api/games/{state['id']}/keep", json=body)
        assert response.status_code == 400 and "keep" in response.json()["error"]
    bad = client.post("/api/games", json={"seat": 0, "keep": "please"})
    assert bad.status_code == 400 and "keep" in bad.json()["error"]
    for name in ("../x", "a b", "", "x" * 41, 7):
        bad = client.post("/api/games", json={"seat": 0, "player_name": name})
        assert bad.status_code == 400 and "player_name" in bad.json()["error"]


def test_the_export_holds_every_kept_game_and_nothing_else(client, folders, tmp_path):
    _, kept = folders
    ids = []
    for seed in (6, 7):
        state = client.post("/api/games", json={"seat": 1, "seed": seed, "rules": SHORT, "keep": True}).json()
        ids.append(_play(client, state, moves=2)["id"])
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"secret": 1}))
    (kept / "web-aaaaaaaaaaaa.json").symlink_to(secret)    # a link: not followed
    (kept / "notes.json").write_text(json.dumps({"not": "a kept game"}))
    (kept / "web-bbbbbbbbbbbb.json").write_text("{broken")  # not JSON: left out
    assert client.get("/api/kept-games").json() == {"folder": str(kept), "games": 3}
    response = client.get("/api/kept-games/export")
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"] and ".jsonl" in response.headers["content-disposition"]
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    lines = response.text.splitlines()
    assert len(lines) == 2 and "secret" not in response.text
    records = [json.loads(line) for line in lines]
    for record in records:
        replay(record)
    assert sorted(r["players"][1] for r in records) == ["person", "person"]
    # no name or path reaches the endpoint; the server's guards apply to it and to the switch
    assert client.get("/api/kept-games/export/../../secret.json").status_code == 404
    assert client.get("/api/kept-games/export", headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.get("/api/kept-games/export", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    foreign = client.post(f"/api/games/{ids[0]}/keep", json={"keep": False}, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    form = client.post(f"/api/games/{ids[0]}/keep", content=b"keep=false",
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415
    assert client.get(f"/api/games/{ids[0]}").json()["keep"] is True


def test_a_keep_folder_that_cannot_be_written_is_said(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with TestClient(create_app(tmp_path / "records", keep_dir=blocker / "kept"), base_url="http://127.0.0.1:8000") as c:
        state = c.post("/api/games", json={"seat": 2, "seed": 8, "keep": True}).json()
        state = _play(c, state, moves=1)
        assert "could not be kept" in state["keep_error"] and str(tmp_path) not in state["keep_error"]


def test_the_keep_folder_option(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as exit_:
        main(["--keep-games", str(tmp_path / "file"), "--no-browser"])
    assert exit_.value.code == 2 and "--keep-games" in capsys.readouterr().err
    app = create_app(tmp_path / "records")                 # the default: the inspector's folder
    assert app.state.web.keep_dir == tmp_path / "records"


def test_a_keep_folder_that_cannot_be_used_is_refused_at_start_in_one_line(tmp_path, capsys):
    """Issue 75: a file, a path under a file, a read-only folder or a device as --keep-games used
    to start the server, which then failed on every game (or, as root, wrote into the read-only
    folder); each is now refused before serving, in one line."""
    import os
    from helpers_files import is_char_device, private_device

    (tmp_path / "FILE").write_text("")
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    device = private_device(tmp_path)
    for target, expected in ((tmp_path / "FILE" / "kept", "FILE is not a folder"),
                             (tmp_path / "FILE", "FILE is a file: expected a folder"),
                             (readonly, "the folder is not writable (read-only)"),
                             (device, "is a device: expected a folder")):
        with pytest.raises(SystemExit) as exit_:
            main(["--keep-games", str(target), "--no-browser", "--port", "1"])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.count("\n") == 1 and "--keep-games" in err and expected in err, err
    assert os.listdir(readonly) == [] and is_char_device(device)
