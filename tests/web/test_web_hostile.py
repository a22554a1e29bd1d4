"""Hostile requests to ``spades-web`` (issue 42): what any web page the user visits, a DNS name
rebound to 127.0.0.1 or a careless client could send. Each is refused with a 4xx and a short
reason, nothing is applied, and at the end the server still answers within seconds.

Most probes go over HTTP to a real uvicorn server on a free local port (as a browser would
reach it); the body limits are also checked at the ASGI level, where the bytes pulled from the
client can be counted."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
try:
    import httpx2 as httpx
except ImportError:                                   # pragma: no cover
    httpx = pytest.importorskip("httpx")

from web.limits import MAX_BODY, MAX_MESSAGE, BrowserGuard  # noqa: E402
from web.server import create_app  # noqa: E402
from web.table import TableError, TableGame  # noqa: E402

EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real server on 127.0.0.1 (its app, base URL and port), stopped after the module."""
    folder = tmp_path_factory.mktemp("records")
    app = create_app(folder, host="127.0.0.1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    running = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not running.started and time.time() < deadline:
        time.sleep(0.05)
    assert running.started, "the server did not start"
    yield app, f"http://127.0.0.1:{port}", port
    running.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server[1], timeout=30) as client:
        yield client


def _games(server) -> int:
    return len(server[0].state.web.games)


def _error(response, status: int) -> str:
    assert response.status_code == status, response.text[:300]
    message = response.json()["error"]
    assert 0 < len(message) <= MAX_MESSAGE + 40 and "Traceback" not in message
    return message


# ---------------------------------------------------------------- 1. other sites, other names

def test_a_request_from_another_site_is_refused_and_nothing_is_made(server, http):
    before = _games(server)
    as_text = {"Origin": EVIL, "Content-Type": "text/plain"}
    assert "other sites" in _error(http.post("/api/games", content=b'{"seat": 2}', headers=as_text), 403)
    assert "other sites" in _error(http.post("/api/inspect", content=b"{}", headers=as_text), 403)
    for origin in (EVIL, "null", "http://127.0.0.1:1", f"http://localhost:{server[2]}"):   # another port or name
        response = http.post("/api/games", json={"seat": 2}, headers={"Origin": origin})
        assert "other sites" in _error(response, 403)
    cross = http.post("/api/games", json={"seat": 2}, headers={"Sec-Fetch-Site": "cross-site"})
    assert "other sites" in _error(cross, 403)
    assert _games(server) == before
    made = http.post("/api/games", json={"seat": 2}, headers={"Origin": server[1], "Sec-Fetch-Site": "same-origin"})
    assert made.status_code == 201                    # the page's own requests pass
    gone = http.delete(f"/api/games/{made.json()['id']}", headers={"Origin": EVIL})
    assert "other sites" in _error(gone, 403)
    assert http.get(f"/api/games/{made.json()['id']}").status_code == 200     # not deleted
    assert http.delete(f"/api/games/{made.json()['id']}").status_code == 200


def test_json_bodies_must_say_they_are_json(http):
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        message = _error(http.post("/api/games", content=b'{"seat": 2}', headers={"Content-Type": kind}), 415)
        assert "application/json" in message
    no_type = http.post("/api/analyse", content=b"{}", headers={"Content-Type": ""})
    assert no_type.status_code == 415
    charset = http.post("/api/games", content=b'{"seat": 2}', headers={"Content-Type": "application/json; charset=utf-8"})
    assert charset.status_code == 201
    http.delete(f"/api/games/{charset.json()['id']}")


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil",
                                  "10.0.0.1", "[::2]:80", "127.0.0.1:x"])
def test_a_host_that_is_not_this_server_is_refused_against_dns_rebinding(http, host):
    for path in ("/", "/api/options", "/static/app.js"):
        message = _error(http.get(path, headers={"Host": host}), 421)
        assert "DNS rebinding" in message


def test_the_loopback_names_are_this_server(http, server):
    for host in (f"127.0.0.1:{server[2]}", f"localhost:{server[2]}", "localhost", f"[::1]:{server[2]}"):
        assert http.get("/api/options", headers={"Host": host}).status_code == 200


def test_a_server_bound_to_every_interface_takes_addresses_but_not_names():
    guard = BrowserGuard(None, host="0.0.0.0")
    assert guard.host_allowed("192.168.1.7:8000") and guard.host_allowed("localhost:8000")
    assert not guard.host_allowed("evil.example:8000")
    named = BrowserGuard(None, host="table.lan")
    assert named.host_allowed("table.lan:8000") and not named.host_allowed("192.168.1.7:8000")


def test_the_default_bind_is_this_machine_only(monkeypatch):
    from web import server as web_server
    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: seen.update(host=host, port=port))
    assert web_server.main(["--no-browser"]) == 0
    assert seen == {"host": "127.0.0.1", "port": 8000}


# ---------------------------------------------------------------- 2. agent specs from a browser

@pytest.mark.parametrize("spec, message", [
    ("search:threads=100000", "threads=100000: expected an integer 1.."),
    ("search:worlds=3000000,max_steps=none", "worlds=3000000: expected an integer 1.."),
    ("search:worlds=1e400", "worlds=inf: expected an integer"),
    ("search:max_steps=10000000000", "max_steps=10000000000: expected an integer 1..2,000,000 or none"),
    ("search:backend=python,max_steps=none", "the Python search takes max_steps 1..20,000"),
    ("search:backend=python,worlds=5000", "the Python search takes worlds 1..1,000"),
    ("search:backend=python,budget=strong", "the Python search takes max_steps"),
    ("search:rules=/dev/zero", "option 'rules' is not accepted from a browser"),
    ("search:rules=/dev/stdin", "option 'rules' is not accepted from a browser"),
    ("search:guide=/etc/passwd", "not one of the models this server offers"),
    ("search:min_worlds=100000", "min_worlds=100000: expected an integer 1..64"),
    ("search:bid_worlds=true", "bid_worlds=True: expected an integer"),
    ("search:max_time=nan", "max_time=nan: expected a number"),
    ("heuristic:threads=64", "threads=64: expected an integer 1.."),
    ("heuristic:bidding=reckless", "bidding=reckless: expected one of standard, conservative, aggressive"),
    ("random:anything=1", "option 'anything' is not accepted from a browser (no paths, rule files or unbounded "
                          "budgets); random takes seed (bounds: GET /api/options"),
])
def test_agent_options_a_browser_may_not_set_are_refused_saying_what_is_allowed(http, server, spec, message):
    before = _games(server)
    refused = _error(http.post("/api/games", json={"seat": 2, "agents": {"0": spec}}), 400)
    assert message in refused
    assert _games(server) == before


def test_a_checkpoint_path_gets_one_answer_whether_or_not_the_file_exists(http, tmp_path):
    real = tmp_path / "model.pt"
    real.write_bytes(b"not a model")
    answers = {http.post("/api/games", json={"seat": 2, "agents": {"0": f"neural:checkpoint={path}"}}).text
               for path in ("/etc/shadow", "/etc/passwd", "/no/such.pt", str(real), "../agents/models/neural_v7.pt")}
    assert len(answers) == 1                         # no existence oracle
    assert "not one of the models this server offers" in json.loads(answers.pop())["error"]


def test_the_listed_models_and_bounded_budgets_are_accepted(http):
    options = http.get("/api/options").json()
    assert "neural_v7" in options["models"]
    assert "worlds" in options["agent_options"]["search"] and "rules" not in options["agent_options"]["search"]
    for spec in ("neural:checkpoint=neural_v7", "search:worlds=20000,threads=1", "heuristic:bidding=aggressive,cover=none",
                 "search:backend=python,worlds=50,max_steps=2000", "search:guide=neural_v7"):
        made = http.post("/api/games", json={"seat": 2, "agents": {"0": spec}})
        assert made.status_code == 201, made.text
        assert http.delete(f"/api/games/{made.json()['id']}").status_code == 200


def test_a_models_folder_offers_its_files_by_name(tmp_path):
    import shutil

    from starlette.testclient import TestClient
    shipped = sorted((Path(__file__).parents[2] / "agents" / "models").glob("*.pt"))[0]
    shutil.copy(shipped, tmp_path / "mine.pt")
    (tmp_path / "notes.txt").write_text("not a model")
    with TestClient(create_app(tmp_path / "records", models_dir=tmp_path), base_url="http://127.0.0.1:8000") as client:
        options = client.get("/api/options").json()
        assert "mine" in options["models"] and shipped.stem in options["models"] and "notes" not in options["models"]
        made = client.post("/api/games", json={"seat": 2, "agents": {"0": "neural:checkpoint=mine"}})
        assert made.status_code == 201, made.text
        other = client.post("/api/games", json={"seat": 2, "agents": {"0": f"neural:checkpoint={tmp_path / 'mine.pt'}"}})
        assert other.status_code == 400                  # by name only, even inside the folder


def test_the_slowest_decision_at_a_spec_is_measured_as_the_table_builds_it():
    from web.latency import decision_seconds
    assert len(decision_seconds("random", decisions=3)) == 3
    with pytest.raises(TableError, match="option 'rules' is not accepted"):
        decision_seconds("search:rules=/dev/zero")


def test_analysis_takes_the_same_limits(http, server):
    from helpers import heuristic_hand_record
    record_id = http.post("/api/inspect", json={"record": heuristic_hand_record()}).json()["record_id"]
    for agent in ("neural:checkpoint=/etc/shadow", "search:rules=/dev/zero", "search:threads=100000"):
        response = http.post("/api/analyse", json={"record_id": record_id, "step": 20, "agent": agent})
        assert response.status_code == 400


class _SlowAgent:
    """Thinks until released; counts its decisions."""

    def __init__(self, started: threading.Event, release: threading.Event, calls: list) -> None:
        self.started, self.release, self.calls = started, release, calls

    def act(self, obs, info=None) -> int:
        self.calls.append(1)
        self.started.set()
        self.release.wait(10)
        return int(np.flatnonzero(obs["action_mask"])[0])


def test_a_deleted_game_stops_its_agents_after_the_decision_in_progress():
    game = TableGame("t", 0, {}, seed=1)
    game.advance()                                    # the agents before the person
    assert game.to_act == 0
    game.play(int(game.env.legal_actions()[0]))
    started, release, calls = threading.Event(), threading.Event(), []
    for seat in (1, 2, 3):
        game.agents[seat] = _SlowAgent(started, release, calls)
    version = game.version
    thinker = threading.Thread(target=game.advance)
    thinker.start()
    assert started.wait(10)
    game.cancel()
    release.set()
    thinker.join(10)
    assert not thinker.is_alive()
    assert len(calls) == 1 and game.version == version     # no second decision, nothing applied


class _BrokenAgent:
    def act(self, obs, info=None) -> int:
        raise RuntimeError("x" * 100_000)


def test_an_agent_that_fails_stops_the_game_with_a_short_message():
    game = TableGame("t", 0, {}, seed=1)
    game.advance()
    game.play(int(game.env.legal_actions()[0]))
    game.agents[1] = _BrokenAgent()
    game.advance()
    assert game.error.startswith("East (heuristic) failed: RuntimeError: xxx") and len(game.error) <= MAX_MESSAGE + 40


def test_after_delete_no_more_work_is_scheduled_for_the_game(tmp_path):
    from starlette.testclient import TestClient
    app = create_app(tmp_path)
    state = app.state.web
    game = TableGame("slowgame", 0, {}, seed=1)
    game.advance()
    game.play(int(game.env.legal_actions()[0]))
    started, release, calls, advances = threading.Event(), threading.Event(), [], []
    for seat in (1, 2, 3):
        game.agents[seat] = _SlowAgent(started, release, calls)
    advance = game.advance
    game.advance = lambda: (advances.append(1), advance())[1]
    state.add_game(game)
    state.kick(game)
    assert started.wait(10)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.delete("/api/games/slowgame").status_code == 200
    release.set()
    time.sleep(1.0)
    assert len(advances) == 1 and len(calls) == 1      # the worker stopped; nothing re-scheduled it
    assert "slowgame" not in state.advancing


def test_delete_cancels_the_game(http, server):
    made = http.post("/api/games", json={"seat": 0, "pace": 5}).json()
    game = server[0].state.web.games[made["id"]]
    assert not game.cancelled.is_set()
    assert http.delete(f"/api/games/{made['id']}").status_code == 200
    assert game.cancelled.is_set()


def test_the_table_refuses_agents_for_seats_that_are_not_agents():
    with pytest.raises(TableError, match="is yours"):
        TableGame("t", 2, {2: "heuristic"})
    with pytest.raises(TableError, match="is not a seat"):
        TableGame("t", 2, {7: "heuristic"})


# ---------------------------------------------------------------- 3. rules files

def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{k}: &a{k} [" + ",".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text, message", [
    (_laughs(9), "anchors and aliases"),
    ("preset: &p standard\n", "anchors and aliases"),
    ("a: " + "[" * 20_000 + "]" * 20_000, "nested too deeply"),
    ("- " * 20_000 + "x", "nested too deeply"),
    ("target_score: " + "9" * 5000 + "\n", "a value cannot be read"),
    ("# " + "x" * 70_000, "at most 65,536"),
    ("!!python/object/apply:os.system ['true']", "not valid YAML"),
    ("target_score: [1", "not valid YAML"),
])
def test_hostile_rules_files_are_refused_quickly_with_a_short_message(http, text, message):
    began = time.perf_counter()
    refused = _error(http.post("/api/games", json={"seat": 2, "rules_yaml": text}), 400)
    assert message in refused
    assert time.perf_counter() - began < 5


# ---------------------------------------------------------------- 4. bodies

def _raw(port: int, head: bytes, timeout: float = 10) -> bytes:
    """The whole answer to ``head`` (the server closes the connection after a refusal)."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        raw.sendall(head)
        while piece := raw.recv(65536):
            answer += piece
    return answer


def test_a_body_announced_over_the_limit_is_refused_before_it_is_sent(server):
    head = (f"POST /api/inspect HTTP/1.1\r\nHost: 127.0.0.1:{server[2]}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 300000000\r\n\r\n").encode()
    began = time.perf_counter()
    answer = _raw(server[2], head)                 # no byte of the body is sent: the answer comes anyway
    assert answer.startswith(b"HTTP/1.1 413") and b"at most 4,000,000" in answer
    assert time.perf_counter() - began < 5


def test_a_chunked_body_is_cut_off_at_the_limit(server):
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    sent, answer = 0, b""
    with socket.create_connection(("127.0.0.1", server[2]), timeout=10) as raw:
        raw.sendall(f"POST /api/inspect HTTP/1.1\r\nHost: 127.0.0.1:{server[2]}\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n".encode())
        try:
            while sent < 64 * (1 << 20) and not answer:
                raw.sendall(chunk)
                sent += 1 << 20
                if select.select([raw], [], [], 0)[0]:
                    answer = raw.recv(65536)
            if not answer:
                answer = raw.recv(65536)
        except (BrokenPipeError, ConnectionResetError):
            answer = answer or raw.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413")
    assert sent < 64 * (1 << 20)                     # answered long before the client was done


def test_the_app_never_pulls_more_than_the_limit_of_a_body(tmp_path):
    app = create_app(tmp_path)
    pulled, messages = [], []
    piece = b" " * 65536

    async def receive():
        pulled.append(len(piece))
        return {"type": "http.request", "body": piece, "more_body": len(pulled) < 400}   # 26 MB in all

    async def send(message):
        messages.append(message)

    scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": "/api/inspect", "raw_path": b"/api/inspect",
             "root_path": "", "scheme": "http", "query_string": b"", "server": ("127.0.0.1", 8000),
             "client": ("127.0.0.1", 5000), "headers": [(b"host", b"127.0.0.1:8000"),
                                                        (b"content-type", b"application/json")]}
    asyncio.run(app(scope, receive, send))
    assert messages[0]["status"] == 413
    assert sum(pulled) <= MAX_BODY + len(piece)


def test_a_record_too_long_to_inspect_is_refused_before_it_is_replayed(http):
    from helpers import heuristic_hand_record
    from web.inspector import MAX_FRAMES
    record = heuristic_hand_record()
    record["hands"] = record["hands"] * (MAX_FRAMES // len(record["hands"][0]["actions"]) + 1)
    began = time.perf_counter()
    refused = http.post("/api/inspect", json={"record": record})
    assert refused.status_code == 422 and f"at most {MAX_FRAMES:,} can be inspected" in refused.json()["error"]
    assert time.perf_counter() - began < 2


def test_uploaded_records_are_kept_within_a_byte_budget(tmp_path, monkeypatch):
    import web.server
    from helpers import heuristic_hand_record
    monkeypatch.setattr(web.server, "MAX_RECORD_BYTES", 40_000)
    state = create_app(tmp_path).state.web
    record = dict(heuristic_hand_record(), notes="x" * 15_000)      # extra text a replay ignores
    ids = [state.remember_record(record) for _ in range(5)]
    assert list(state.records) == ids[-2:]                    # the newest that fit in 40,000 bytes
    assert state.recalled_record(ids[-1]) == record and state.recalled_record(ids[0]) is None


# ---------------------------------------------------------------- 5. 400, never 500

@pytest.mark.parametrize("path, body, message", [
    ("/api/games", b'{"seat": ' + b"9" * 5000 + b"}", "a number of 5,000 digits"),
    ("/api/games", b"[" * 20_000 + b"]" * 20_000, "nested too deeply"),
    ("/api/games", b'{"seat": 2, "rules": ' + b'{"a": ' * 20_000 + b"1" + b"}" * 20_001, "nested too deeply"),
    ("/api/inspect", b'{"record": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", "nested too deeply"),
    ("/api/games", b'{"seat": 2, "pace": 1e400}', "out of range"),
    ("/api/games", b'{"seat": NaN}', "NaN is not a number JSON allows"),
    ("/api/games", b'{"seat": 2, "agents": {"\xc2\xb2": "heuristic"}}', "is not a seat number"),
    ("/api/games", b'{"seat": 2, "agents": {"0": "search:worlds=1e400"}}', "worlds=inf"),
    ("/api/games", b"\xff\xfe\x00", "the request body: not UTF-8 text"),
    ("/api/analyse", b'{"record_id": ' + b"7" * 5000 + b"}", "a number of 5,000 digits"),
    ("/api/inspect", b'{"record": [' + b"{}," * 500_000 + b"{}]}", "the request body: 500,003 objects and lists; at most 400,000"),
])
def test_malformed_bodies_get_400_with_a_reason(http, path, body, message):
    refused = _error(http.post(path, content=body, headers={"Content-Type": "application/json"}), 400)
    assert message in refused


@pytest.mark.parametrize("name", ["a%00b.json", "x" * 300 + ".json", "%0a.json", "a%1fb.json"])
def test_record_names_with_control_characters_or_too_long_get_400(http, name):
    assert "plain file name" in _error(http.get(f"/api/records/{name}"), 400)


def test_actions_out_of_range_are_explained_as_such(http):
    state = http.post("/api/games", json={"seat": 0, "seed": 1}).json()
    deadline = time.time() + 30
    while state["to_act"] != state["seat"] and time.time() < deadline:
        state = http.get(f"/api/games/{state['id']}?since={state['version']}&wait=2").json()
    for action in (-1, -100, 68, 10 ** 30):
        message = _error(http.post(f"/api/games/{state['id']}/action", json={"action": action}), 400)
        assert message.startswith(f"action {action}: out of range: action ids are 0..67")
        assert "bidding" not in message
    assert http.get(f"/api/games/{state['id']}").json()["version"] == state["version"]    # nothing applied
    http.delete(f"/api/games/{state['id']}")


def test_query_numbers_out_of_range_get_400(http):
    state = http.post("/api/games", json={"seat": 2}).json()
    for query in ("since=" + "9" * 5000, "wait=x", "since=1e400"):
        assert http.get(f"/api/games/{state['id']}?{query}").status_code == 400
    http.delete(f"/api/games/{state['id']}")


def test_an_unexpected_error_in_a_handler_is_a_short_400_and_the_server_stays_up(tmp_path):
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route
    from starlette.testclient import TestClient

    calls = []

    async def broken(request):
        calls.append(1)
        raise RuntimeError("internal detail " * 200)

    async def fine(request):
        from starlette.responses import JSONResponse
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/api/broken", broken), Route("/api/fine", fine)],
                    middleware=[Middleware(BrowserGuard, host="127.0.0.1")])
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        response = client.get("/api/broken")
        message = _error(response, 400)
        assert message.startswith("this request could not be handled (RuntimeError: internal detail")
        assert client.get("/api/fine").json() == {"ok": True}
    assert calls == [1]


# ---------------------------------------------------------------- after everything

def test_the_server_still_answers_within_seconds_after_all_of_this(http, server):
    began = time.perf_counter()
    assert http.get("/api/options").status_code == 200
    made = http.post("/api/games", json={"seat": 2, "seed": 3})
    assert made.status_code == 201
    assert http.delete(f"/api/games/{made.json()['id']}").status_code == 200
    assert time.perf_counter() - began < 5
