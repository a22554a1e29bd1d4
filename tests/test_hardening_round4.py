"""Hardening, round four (issue 51): each case of the red-team run replayed through the public
commands (a subprocess per command line, HTTP for the web server), each refused cleanly: exit
status 2 or an HTTP 4xx, one line naming the bad input and what was expected, no traceback, no
signal, within seconds.

- agent options sized past reason (``search:threads=100000`` crashed with exit 139) in every
  command that takes a spec;
- rules files from the command line: an alias bomb, ``/dev/zero``, 5,000-deep nesting, a
  5,000-digit number;
- a tiny checkpoint declaring a huge network (4.8 GB and 12 s before);
- ``--ray ADDRESS`` with nothing listening (hung for minutes), or a cluster that never answers;
- a journal resumed after a model file changed; ``--journal dir/``;
- the web page's headers (CSP, frame protection), ``index: 1.7``, server paths in errors.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "agents" / "models"
# The console scripts of pyproject.toml, run as ``python -c`` so that the test needs no install.
COMMANDS = {
    "spades-eval": ("evaluation.cli", "main"),
    "spades-league": ("coop.cli", "league_main"),
    "spades-coop": ("coop.cli", "main"),
    "spades-play": ("play.cli", "main"),
    "spades-bench": ("tools.bench", "main"),
    "spades-label": ("train.labelling.cli", "main"),
}


def run_command(name: str, *args: str, timeout: float = 120, env: dict | None = None) -> tuple[int, str, float]:
    """Run a public command; (exit status, stderr, seconds)."""
    module, function = COMMANDS[name]
    code = f"import sys; from {module} import {function}; sys.exit({function}())"
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    return done.returncode, done.stderr, time.perf_counter() - began


def assert_refused(name: str, status: int, err: str, pattern: str) -> None:
    """Exit status 2 (not a signal), one line on stderr matching ``pattern``, no traceback."""
    assert status == 2, f"{name} exited {status}: {err[-2000:]}"
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    assert lines[0].startswith(f"{name}: error:"), lines[0]
    assert re.search(pattern, lines[0]), lines[0]


# ---------------------------------------------------------------- 1. agent options, every command

SPEC_COMMANDS = [
    ("spades-eval", ["--team-a", "{spec}", "--team-b", "random", "--deals", "1", "--workers", "1"]),
    ("spades-league", ["{spec}", "random", "--deals", "1", "--workers", "1", "--no-progress"]),
    ("spades-coop", ["run", "{spec}", "--suite", "quick", "--deals", "1", "--workers", "1", "--no-progress"]),
]


@pytest.mark.parametrize("name, args", SPEC_COMMANDS, ids=[c[0] for c in SPEC_COMMANDS])
def test_search_threads_past_the_bound_are_refused_by_every_command(name, args):
    spec = "search:threads=100000,worlds=20"
    status, err, seconds = run_command(name, *[a.replace("{spec}", spec) for a in args])
    assert_refused(name, status, err, r"search:threads=100000,worlds=20.*threads=100000: expected an integer "
                                      r"1\.\.256 \(the bound for every command\)")
    assert seconds < 60


@pytest.mark.parametrize("spec, message", [
    ("search:worlds=1000000000", r"worlds=1000000000: expected an integer 1\.\.200,000"),
    ("search:bid_worlds=1e400", r"bid_worlds=inf: expected an integer 1\.\.10,000"),
    ("heuristic:threads=0", r"threads=0: expected an integer 1\.\.256"),
])
def test_other_sizes_past_their_bounds_are_refused(spec, message):
    status, err, _ = run_command("spades-eval", "--team-a", spec, "--team-b", "random", "--deals", "1")
    assert_refused("spades-eval", status, err, message)


def test_the_bounds_hold_for_agents_made_in_python_too():
    import agents
    from agents.specs import AgentSpecError, parse_agent_spec
    with pytest.raises(ValueError, match=r"search: threads=100000: expected a whole number from 0 to 256"):
        agents.make("search", threads=100000)
    with pytest.raises(AgentSpecError, match=r"threads=100000"):
        parse_agent_spec("heuristic:threads=100000")
    assert parse_agent_spec("search:threads=4,worlds=20000") == ("search", {"threads": 4, "worlds": 20000})


# ---------------------------------------------------------------- 2. rules files from the command line

BOMB = "".join(f"{x}: &{x} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n"
               for p, x in zip(["", *"abcdefgh"], "abcdefghi"))


@pytest.fixture(scope="module")
def hostile_rules(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("rules")
    files = {"bomb": BOMB, "deep": "target_score: " + "[" * 5000 + "]" * 5000 + "\n",
             "digits": "target_score: " + "9" * 5000 + "\n"}
    paths = {}
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text)
        paths[name] = str(folder / f"{name}.yaml")
    paths["zero"] = "/dev/zero"
    paths["folder"] = str(folder)
    return paths


RULES_CASES = [
    ("bomb", r"YAML anchors and aliases .* are not accepted"),
    ("zero", r"rules file /dev/zero is not a regular file"),
    ("deep", r"nested too deeply \(at most 16 levels\)"),
    ("digits", r"a value cannot be read \(a number of more than 4,300 digits"),
    ("folder", r"is a (directory|folder): expected a YAML file"),
]


@pytest.mark.parametrize("case, message", RULES_CASES, ids=[c[0] for c in RULES_CASES])
def test_a_hostile_rules_file_is_refused_before_parsing(hostile_rules, case, message):
    status, err, seconds = run_command("spades-eval", "--team-a", "random", "--team-b", "random", "--deals", "1",
                                       "--workers", "1", "--rules", hostile_rules[case])
    assert_refused("spades-eval", status, err, message)
    assert seconds < 60


@pytest.mark.parametrize("name, args", [("spades-play", []), ("spades-bench", [])])
def test_other_commands_read_rules_files_within_the_same_limits(hostile_rules, name, args):
    status, err, _ = run_command(name, "--rules", hostile_rules["bomb"], *args)
    assert_refused(name, status, err, r"YAML anchors and aliases")


def test_a_big_rules_file_is_refused_by_its_size(tmp_path):
    from spades_env.rules import RulesError, make_rules
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * 70_000 + "\ntarget_score: 300\n")
    with pytest.raises(RulesError, match=r"big.yaml: 70,021 bytes; expected at most 65,536"):
        make_rules(str(big))


# ---------------------------------------------------------------- 3. checkpoints declaring huge networks

def _lying_checkpoint(path: Path, hidden: int, layers: int = 6) -> Path:
    import torch
    torch.save({"format": "spades-neural-policy", "version": 1, "rules": "standard", "provenance": {},
                "arch": {"obs_size": 742, "hidden": hidden, "layers": layers, "head_hidden": 128},
                "policy": {"trunk.0.weight": torch.zeros(4, 4)}}, path)
    return path


@pytest.mark.parametrize("hidden, message", [
    (24_000, r"arch hidden=24000: expected an integer 1\.\.8,192; nothing was loaded"),
    (8_000, r"arch .* declares 328,041,028 weights; expected at most 64,000,000; nothing was loaded"),
    (2_000, r"the policy weights do not match the declared arch .*nothing was loaded"),
])
def test_a_tiny_checkpoint_declaring_a_huge_network_is_refused_by_spades_eval(tmp_path, hidden, message):
    model = _lying_checkpoint(tmp_path / "huge.pt", hidden)
    assert model.stat().st_size < 2_000
    status, err, _ = run_command("spades-eval", "--team-a", f"neural:checkpoint={model}", "--team-b", "random",
                                 "--deals", "1", "--workers", "1")
    assert_refused("spades-eval", status, err, message)


def test_the_checkpoint_refusal_takes_no_time_and_no_memory(tmp_path):
    """Measured in a fresh process after torch is imported: under a second, under 100 MB more."""
    model = _lying_checkpoint(tmp_path / "huge.pt", 8_000)
    code = ("import resource, sys, time, torch\n"
            "from agents.neural import ModelError, read_checkpoint\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "began = time.perf_counter()\n"
            "try:\n    read_checkpoint(sys.argv[1])\nexcept ModelError:\n    pass\n"
            "print(time.perf_counter() - began, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n")
    out = subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, check=True).stdout.split()
    seconds, grown_kb = float(out[0]), int(out[1])
    assert seconds < 1.0 and grown_kb < 100_000, (seconds, grown_kb)


def test_every_shipped_model_still_loads():
    from agents.neural import policy_from_checkpoint, read_checkpoint
    for path in sorted(MODELS.glob("*.pt")):
        policy_from_checkpoint(read_checkpoint(path), str(path))


# ---------------------------------------------------------------- 4. --ray with nothing there

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]            # closed again when the test connects


RAY_COMMANDS = [
    ("spades-eval", ["--team-a", "random", "--team-b", "random", "--deals", "2", "--workers", "1"]),
    ("spades-league", ["random", "heuristic", "--deals", "2", "--no-progress"]),
    ("spades-coop", ["run", "random", "--suite", "quick", "--deals", "1", "--no-progress"]),
]


@pytest.mark.parametrize("name, args", RAY_COMMANDS, ids=[c[0] for c in RAY_COMMANDS])
def test_ray_with_nothing_listening_is_refused_at_once(name, args):
    port = _closed_port()
    status, err, seconds = run_command(name, *args, "--ray", f"127.0.0.1:{port}")
    assert_refused(name, status, err, rf"--ray 127\.0\.0\.1:{port}: nothing accepts connections at "
                                      rf"127\.0\.0\.1:{port}")
    assert seconds < 60


def test_ray_that_never_answers_is_given_up_after_the_wait(tmp_path):
    """A listener that accepts and says nothing, and a Ray whose ``init`` never returns (a stand-in
    module: the real one retried for minutes): one line after SPADES_RAY_CONNECT_TIMEOUT."""
    fake = tmp_path / "fake" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import time\n\ndef is_initialized():\n    return False\n\n"
                                      "def init(**options):\n    time.sleep(3600)\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    try:
        env = {"PYTHONPATH": f"{fake.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               "SPADES_RAY_CONNECT_TIMEOUT": "2"}
        status, err, seconds = run_command("spades-eval", "--team-a", "random", "--team-b", "random", "--deals", "2",
                                           "--ray", f"127.0.0.1:{port}", env=env)
    finally:
        listener.close()
    assert_refused("spades-eval", status, err, r"could not reach a Ray cluster within 2 s .*"
                                               r"SPADES_RAY_CONNECT_TIMEOUT=SECONDS waits longer")
    assert seconds < 60


def test_a_bad_ray_address_or_wait_is_one_line():
    status, err, _ = run_command("spades-eval", "--team-a", "random", "--team-b", "random", "--deals", "1",
                                 "--ray", "127.0.0.1:99999")
    assert_refused("spades-eval", status, err, r"port '99999': expected a number 1\.\.65535")
    status, err, _ = run_command("spades-eval", "--team-a", "random", "--team-b", "random", "--deals", "1",
                                 "--ray", "127.0.0.1:1", env={"SPADES_RAY_CONNECT_TIMEOUT": "forever"})
    assert_refused("spades-eval", status, err, r"SPADES_RAY_CONNECT_TIMEOUT='forever': expected seconds")


# ---------------------------------------------------------------- 5. journals

def test_a_journal_resumed_after_its_model_changed_is_refused(tmp_path):
    model, journal = tmp_path / "partner.pt", tmp_path / "match.jsonl"
    shutil.copy(MODELS / "zoo_scratch_s1.pt", model)
    args = ["--team-a", f"neural:checkpoint={model}", "--team-b", "random", "--deals", "2", "--workers", "1",
            "--quiet", "--journal", str(journal)]
    status, err, _ = run_command("spades-eval", *args)
    assert status == 0, err
    assert f"neural:checkpoint={model}" in json.loads(journal.read_text().splitlines()[0])["models"]
    shutil.copy(MODELS / "zoo_scratch_s2.pt", model)               # retrained under the same name
    status, err, _ = run_command("spades-eval", *args)
    assert_refused("spades-eval", status, err, r"line 1: the model file of 'neural:checkpoint=.*partner\.pt' "
                                               r"changed since this journal was written")


def test_a_zoo_partners_model_is_in_the_journal_header(tmp_path):
    """``spades-coop run`` journals its partners' models too: a retrained zoo model changes it."""
    from evaluation.journal import Journal
    from evaluation.matches import Team, match_config
    from coop.partners.zoo import file_digest
    config = match_config(Team.of("random"), Team.of("neural:model=zoo_scratch_s1"), deals=1, duplicate=True)
    journal = Journal(tmp_path / "j.jsonl", [config])
    journal.close()
    header = json.loads((tmp_path / "j.jsonl").read_text().splitlines()[0])
    assert header["models"] == {"neural:model=zoo_scratch_s1": file_digest(MODELS / "zoo_scratch_s1.pt")}


@pytest.mark.parametrize("name, args", [
    ("spades-eval", ["--team-a", "random", "--team-b", "random", "--deals", "1", "--quiet"]),
    ("spades-coop", ["run", "random", "--suite", "quick", "--deals", "1", "--no-progress"]),
    ("spades-league", ["random", "heuristic", "--deals", "1", "--no-progress"]),
])
def test_a_journal_path_ending_in_a_slash_is_refused_and_nothing_is_created(tmp_path, name, args):
    status, err, _ = run_command(name, *args, "--journal", f"{tmp_path}/newdir/")
    assert_refused(name, status, err, r"newdir/: ends in a slash, so it names a folder: expected a file")
    assert not (tmp_path / "newdir").exists()
    status, err, _ = run_command(name, *args, "--journal", str(tmp_path))
    assert_refused(name, status, err, r"is a (directory|folder): expected a file")


# ---------------------------------------------------------------- 6. the web server

@pytest.fixture()
def client(tmp_path):
    from starlette.testclient import TestClient

    from web.server import create_app
    records, models = tmp_path / "records", tmp_path / "models"
    records.mkdir()
    models.mkdir()
    _lying_checkpoint(models / "huge.pt", 24_000)         # offered by name, as --models DIR offers it
    with TestClient(create_app(records, models_dir=models), base_url="http://127.0.0.1:8000") as client:
        client.records, client.models = records, models
        yield client


def _web_error(response, status: int) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "\n" not in message and "Traceback" not in message
    return message


def test_every_answer_carries_a_strict_csp_and_frame_protection(client):
    from web.headers import CONTENT_SECURITY_POLICY
    answers = [client.get("/"), client.get("/static/app.js"), client.get("/static/style.css"),
               client.get("/api/options"), client.get("/api/games/nope"), client.get("/favicon.ico"),
               client.get("/api/options", headers={"Host": "evil.example"}),           # refused by the guard
               client.post("/api/games", content=b"x", headers={"Content-Type": "text/plain"})]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 404, 200, 421, 415]
    for answer in answers:
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
    policy = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"      # no 'unsafe-inline'


def test_the_page_has_no_inline_script_or_style():
    """What the policy would block: inline scripts, style elements or attributes, handlers."""
    static = ROOT / "web" / "static"
    for page in static.glob("*.html"):
        html = page.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), page.name
        assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=|javascript:", html, re.I), page.name
    for script in static.glob("*.js"):
        text = script.read_text()
        assert not re.search(r"\beval\(|new Function\(|setAttribute\(\s*['\"]style|\.innerHTML\s*=[^=]*<script",
                             text), script.name


@pytest.mark.parametrize("index", [1.7, True, "1.7", "1e0", [1]])
def test_a_record_index_that_is_not_a_whole_number_is_refused(client, index):
    from helpers import heuristic_hand_record
    record = heuristic_hand_record()
    message = _web_error(client.post("/api/inspect", json={"record": [record, record], "index": index}), 400)
    assert message.startswith("index=") and "expected a whole record number" in message
    (client.records / "two.json").write_text(json.dumps([record, record]))
    if not isinstance(index, list):
        query = "true" if index is True else str(index)
        assert "expected a whole record number" in _web_error(client.get(f"/api/records/two.json?index={query}"), 400)
    assert client.post("/api/inspect", json={"record": [record, record], "index": 1}).json()["index"] == 1


def test_records_errors_do_not_show_the_servers_paths(client):
    (client.records / "loop1.json").symlink_to(client.records / "loop2.json")
    (client.records / "loop2.json").symlink_to(client.records / "loop1.json")
    message = _web_error(client.get("/api/records/loop1.json"), 404)
    assert "loop1.json" in message and str(client.records) not in message and "/tmp" not in message
    # and whatever error escapes a handler: its paths cut to their last part
    from web.limits import without_paths
    assert without_paths("Symlink loop from '/srv/records/a.json'; see /api/options") == \
        "Symlink loop from 'a.json'; see /api/options"


def test_a_huge_network_in_the_models_folder_is_refused_quickly_without_its_path(client):
    began = time.perf_counter()
    message = _web_error(client.post("/api/games", json={"seat": 2, "agents": {"0": "neural:checkpoint=huge"}}), 400)
    assert time.perf_counter() - began < 5
    assert "hidden=24000: expected an integer 1..8,192" in message and str(client.models) not in message


# ---------------------------------------------------------------- 7. the policy in a real browser

def test_the_page_works_under_its_policy_and_refuses_to_be_framed(tmp_path):
    """Chromium loads the table with the policy on (no violation reported, a game starts and
    deals), and a page of another origin that frames it gets nothing (frame-ancestors 'none')."""
    sync_api = pytest.importorskip("playwright.sync_api")
    uvicorn = pytest.importorskip("uvicorn")
    from web.server import create_app
    chromium = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", shutil.which("chromium") or "")
                     if p and Path(p).exists()), None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(tmp_path), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_api.sync_playwright() as p:
            args = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
            try:
                browser = p.chromium.launch(executable_path=chromium, args=args) if chromium \
                    else p.chromium.launch(args=args)
            except Exception as exc:           # no browser here: tests/web/test_web_browser.py says how to get one
                pytest.skip(f"no Chromium to drive: {exc}")
            page = browser.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            page.goto(url)
            page.click("#start")
            page.wait_for_selector("#hand .card", timeout=20000)
            assert page.locator("#hand .card").count() == 13
            violations = [text for text in console if "Content Security Policy" in text]
            assert not violations, violations

            framer = browser.new_page()                     # another origin (about:blank) framing the table
            framed: list[str] = []
            framer.on("console", lambda message: framed.append(message.text))
            framer.set_content(f'<iframe id="victim" src="{url}/" width="800" height="600"></iframe>')
            framer.wait_for_timeout(2000)
            child = framer.frames[1] if len(framer.frames) > 1 else None
            assert child is None or child.query_selector("#start") is None
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("flag", ["--json", "--records"])
def test_an_output_path_ending_in_a_slash_is_refused_before_play(tmp_path, flag):
    status, err, _ = run_command("spades-eval", "--team-a", "random", "--team-b", "random", "--deals", "1", "--quiet",
                                 flag, f"{tmp_path}/out/")
    assert_refused("spades-eval", status, err, rf"{flag} .*out/: ends in a slash, so it names a folder")
    assert not (tmp_path / "out").exists()
