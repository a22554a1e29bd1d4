"""``spades-coop clone`` (coop/partners/clone.py): a partner cloned from people's games.

End to end: a scripted person plays short games at the web table (through its HTTP API) with
"Keep my games" on, the kept games are exported as JSON lines, a policy is fitted to the person's
decisions (held-out games never trained on) and registered as the held-out zoo partner
``human-NAME``, which then joins the held-out scenario and plays. The split is checked apart on
made-up games (by game, per player, whole players held out)."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("starlette")
TestClient = pytest.importorskip("starlette.testclient").TestClient
torch = pytest.importorskip("torch")

from spades_env.game import BID_ACTION_BASE  # noqa: E402
from coop.partners.clone import Game, chosen_seats, main, split_games  # noqa: E402

RULES = {"preset": "standard", "target_score": 200}     # games of 2-4 hands


def person(view):
    """A person with plain habits: the lowest card (clubs first among equals); a bid of the high
    spades and aces held; a look rather than blind nil."""
    legal = [a["id"] for a in view["legal"]]
    cards = [a for a in legal if a < 52]
    if cards:
        return min(cards, key=lambda c: (c % 13, c))
    bids = [a for a in legal if BID_ACTION_BASE <= a < BID_ACTION_BASE + 14]
    if bids:
        hand = [c["id"] for c in view["hand"]]
        want = max(1, sum(c // 13 == 3 and c % 13 >= 9 for c in hand) + sum(c % 13 == 12 for c in hand))
        return min(bids, key=lambda a: abs(a - BID_ACTION_BASE - want))
    return legal[-1]


def _play_kept_game(client, seed):
    state = client.post("/api/games", json={"seat": seed % 4, "seed": seed, "rules": RULES, "keep": True}).json()
    deadline = time.time() + 60
    while not state["over"] and time.time() < deadline:
        if state["to_act"] != state["seat"]:
            state = client.get(f"/api/games/{state['id']}?since={state['version']}&wait=2").json()
            continue
        response = client.post(f"/api/games/{state['id']}/action", json={"action": person(state)})
        assert response.status_code == 200, response.text
        state = response.json()
    assert state["over"]


def test_a_partner_cloned_from_games_kept_at_the_table(tmp_path, monkeypatch, capsys):
    from agents import neural
    from web.server import create_app

    kept, models = tmp_path / "kept", tmp_path / "models"
    models.mkdir()
    monkeypatch.setattr(neural, "MODELS_DIR", models)          # the registered partner goes here
    with TestClient(create_app(tmp_path / "records", keep_dir=kept), base_url="http://127.0.0.1:8000") as client:
        for seed in range(8):
            _play_kept_game(client, seed)
        export = client.get("/api/kept-games/export")
    assert len(export.text.splitlines()) == 8
    (tmp_path / "export.jsonl").write_text(export.text)

    out, report_file = tmp_path / "clone.pt", tmp_path / "clone.json"
    # the export and the folder hold the same 8 games: each counts once
    assert main([str(tmp_path / "export.jsonl"), str(kept), "--out", str(out), "--name", "tester", "--epochs", "12",
                 "--threads", "1", "--json", str(report_file)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(report_file.read_text())
    games = report["games"]
    assert games["duplicates"] == 8 and games["train"] + games["validation"] + games["test"] == 8
    assert games["test"] >= 1 and games["validation"] >= 1
    held = report["held_out"]
    assert held["decisions"] == report["decisions"]["test"] > 20
    # the person's habits are learnt: far above the starting policy and the heuristic on unseen games
    assert held["accuracy"] >= 0.8, report
    assert held["accuracy"] > report["held_out_start"]["accuracy"] + 0.15
    assert held["accuracy"] > report["held_out_heuristic"]["accuracy"] + 0.15
    assert "held-out games" in printed and "human-tester" in printed

    from coop.partners import zoo
    from coop.measures.scenarios import held_out_suite
    assert (models / "human_tester.pt").is_file()
    found = zoo.partner("human-tester", purpose="evaluation")
    assert (found.split, found.group, found.spec) == ("held-out", "human", "neural:model=human_tester")
    assert "human-tester" in held_out_suite().scenarios[0].partners          # joins the held-out scenario
    assert "human-tester" in zoo.format_zoo() and zoo.zoo_listing()[-1]["name"] == "human-tester"
    with pytest.raises(zoo.HeldOutError):
        zoo.partner("human-tester")                                        # never a training partner
    with pytest.raises(zoo.HeldOutError):
        zoo.refuse_for_training("init_from", path=out)                     # nor its file under another name

    import agents
    from spades_env import spades_v0
    env = spades_v0.env(episode="hand")
    env.reset(seed=3)
    players = [agents.make("neural", model="human_tester"), agents.make("heuristic", seed=1)] * 2
    moves = 0
    for name in env.agent_iter():
        obs, _, done, cut, info = env.last()
        moves += not (done or cut) and name in ("player_0", "player_2")
        env.step(None if done or cut else players[int(name[-1])].act(obs, info))
    assert not env.agents and moves >= 28                                 # a whole hand, two seats the clone's


def _game(key, players):
    return Game(key, {}, dict(enumerate(players)), key)


def test_the_split_is_by_game_and_by_player():
    games = [_game(f"a{i}", ["person:ana"]) for i in range(10)] + [_game(f"b{i}", ["person:bo"]) for i in range(5)]
    games += [_game(f"c{i}", ["person:cy"]) for i in range(3)]
    split_games(games, held_out_players=["cy"])                           # cy: person:cy
    by = {}
    for g in games:
        by.setdefault((g.seats[0], g.split), []).append(g.key)
    assert len(by[("person:ana", "test")]) == 2 and len(by[("person:ana", "validation")]) == 1
    assert len(by[("person:bo", "test")]) == 1 and len(by[("person:bo", "validation")]) == 1
    assert len(by[("person:cy", "unseen")]) == 3                            # a held-out player: never trained on
    again = [_game(g.key, [g.seats[0]]) for g in reversed(games)]
    split_games(again, held_out_players=["cy"])
    assert {g.key: g.split for g in again} == {g.key: g.split for g in games}   # by content, not by order


def test_which_seats_are_learnt_from():
    record = {"players": ["heuristic", "person:ana", "search", "person"]}
    assert chosen_seats(record, None) == {1: "person:ana", 3: "person"}
    assert chosen_seats(record, "ana") == {1: "person:ana"}
    assert chosen_seats(record, "heuristic") == {0: "heuristic"}
    assert chosen_seats({"rules": "standard"}, None) == {}                 # a record that names no players


def test_too_few_games_and_bad_options_are_one_line(tmp_path, capsys):
    (tmp_path / "one.json").write_text(json.dumps({"players": ["person"] * 4, "rules": "standard", "hands": []}))
    assert main([str(tmp_path), "--out", str(tmp_path / "m.pt")]) == 2
    assert "at least 2 are needed" in capsys.readouterr().err
    assert main([str(tmp_path / "missing"), "--out", str(tmp_path / "m.pt")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 2 and "--out" in capsys.readouterr().err
    assert main([str(tmp_path), "--name", "../x"]) == 2 and "--name" in capsys.readouterr().err


# ---- issue 75: records bounded before they are parsed, outputs and names checked first --------

def _refused(capsys, argv, *expected):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("spades-coop clone: error: ") and "Traceback" not in err, err
    for text in expected:
        assert text in err, err
    return err.strip()


def test_records_too_deep_too_many_or_too_large_are_refused_before_parsing(tmp_path, capsys):
    import time as clock

    out = tmp_path / "m.pt"
    (tmp_path / "deep_array.json").write_text("[" * 200_000 + "]" * 200_000)
    (tmp_path / "deep_object.json").write_text('{"a":' * 200_000 + "1" + "}" * 200_000)
    for name in ("deep_array.json", "deep_object.json"):
        _refused(capsys, [tmp_path / name, "--out", out], "nested 200,000 levels deep")
    many = tmp_path / "many.json"
    many.write_text("[" + ",".join(["{}"] * 4_100_000) + "]")
    started = clock.monotonic()
    _refused(capsys, [many, "--out", out], "more than 4,000,000 JSON arrays and objects")
    big = tmp_path / "big"
    big.mkdir()
    chunk = "[" + ",".join(["{}"] * 11_000_000) + "]"            # 33 MB each: 66 MB in all
    for k in range(2):
        (big / f"part{k}.json").write_text(chunk)
    _refused(capsys, [big, "--out", out], "bytes in all; expected at most 64,000,000")
    assert clock.monotonic() - started < 120 and not out.exists()


@pytest.mark.parametrize("hands, shown", [(5, "int"), (None, "NoneType"), ([1], "a list holding something else")])
def test_records_of_the_wrong_shape_are_refused_by_name(tmp_path, capsys, hands, shown):
    record = {"players": ["person"] * 4, "rules": "standard", "hands": hands}
    (tmp_path / "r.json").write_text(json.dumps([record, record]))
    _refused(capsys, [tmp_path / "r.json", "--out", tmp_path / "m.pt"], f"r.json[0]: 'hands' is {shown}")


def test_a_device_a_fifo_and_the_start_itself_are_refused_as_outputs_or_records(tmp_path, capsys):
    from agents.neural import DEFAULT_MODEL
    from helpers_files import is_char_device, private_device, private_fifo

    (tmp_path / "one.json").write_text(json.dumps({"players": ["person"] * 4, "rules": "standard", "hands": []}))
    device, fifo = private_device(tmp_path), private_fifo(tmp_path)
    _refused(capsys, [tmp_path / "one.json", "--out", device], "--out", "is a device, not a regular file")
    assert is_char_device(device)
    _refused(capsys, [fifo, "--out", tmp_path / "m.pt"], "pipe is a FIFO, not a regular file")
    _refused(capsys, [tmp_path / "one.json", "--init", f"neural:checkpoint={DEFAULT_MODEL}", "--out", DEFAULT_MODEL],
             "is the input")
    _refused(capsys, [tmp_path / "one.json", "--out", f"{tmp_path}/newdir/"], "ends in a slash")


def test_a_partner_name_that_exists_is_kept_without_force(tmp_path, monkeypatch, capsys):
    from agents import neural

    models = tmp_path / "models"
    models.mkdir()
    (models / "human_ana.pt").write_bytes(b"the held-out partner ana")
    monkeypatch.setattr(neural, "MODELS_DIR", models)
    (tmp_path / "one.json").write_text(json.dumps({"players": ["person"] * 4, "rules": "standard", "hands": []}))
    _refused(capsys, [tmp_path / "one.json", "--name", "ana"], "human-ana exists", "--force")
    assert (models / "human_ana.pt").read_bytes() == b"the held-out partner ana"
    # with --force the name is free (the records, one game, are then too few)
    _refused(capsys, [tmp_path / "one.json", "--name", "ana", "--force"], "at least 2 are needed")


def test_a_clone_with_the_very_weights_of_its_start_or_a_shipped_model_is_not_written(tmp_path, monkeypatch, capsys):
    """A fit that kept epoch 0 is its start: registered, it put the shipped policy itself in the
    held-out split. The fit is stood in for by one that returns the start unchanged."""
    from agents import neural
    from agents.neural import PREVIOUS_MODELS, policy_from_checkpoint, read_checkpoint
    from coop.partners import clone as clone_module

    def kept_epoch_zero(paths, player, init, *args, **kwargs):
        path = neural.DEFAULT_MODEL if init == "neural" else PREVIOUS_MODELS["neural_v3"]
        policy, info = policy_from_checkpoint(read_checkpoint(path))
        report = {"player": "person", "init": init, "games": {}, "decisions": {}, "kept_epoch": 0,
                  "held_out": {"accuracy": 0.5}}
        return policy, report, info["rules"]

    monkeypatch.setattr(clone_module, "clone", kept_epoch_zero)
    out = tmp_path / "m.pt"
    _refused(capsys, [tmp_path, "--out", out], "the very weights of its start")
    _refused(capsys, [tmp_path, "--init", "scratch", "--out", out], "the very weights of the model",
             "neural_v3.pt")
    assert not out.exists()
