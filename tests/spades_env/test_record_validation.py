"""Records are data, never paths: every malformed record is a ReplayError naming the entry."""

import json

import pytest

import spades_env
from helpers_env import play_game


def _finished_record():
    return play_game({"rules": "standard", "episode": "game"}, seed=3, style="low").unwrapped.game_record()


def _malformed_records():
    rec = _finished_record()
    def edited(edit):
        r = json.loads(json.dumps(rec))
        edit(r)
        return r
    return {
        "rules is a file path": edited(lambda r: r.__setitem__("rules", "/dev/zero")),
        "rules is a yaml path": edited(lambda r: r.__setitem__("rules", "configs/rules/x.yaml")),
        "rules is a number": edited(lambda r: r.__setitem__("rules", 5)),
        "rules mapping is bad": edited(lambda r: r.__setitem__("rules", {"players": 9})),
        "start is a list": edited(lambda r: r.__setitem__("start", [1, 2])),
        "start without dealer": edited(lambda r: r["start"].pop("dealer")),
        "dealer is a string": edited(lambda r: r["start"].__setitem__("dealer", "north")),
        "scores are strings": edited(lambda r: r["start"].__setitem__("scores", ["a", "b"])),
        "hands is a dict": edited(lambda r: r.__setitem__("hands", {})),
        "hands is empty": edited(lambda r: r.__setitem__("hands", [])),
        "hand is a number": edited(lambda r: r["hands"].__setitem__(0, 7)),
        "hand without actions": edited(lambda r: r["hands"][0].pop("actions")),
        "actions are not pairs": edited(lambda r: r["hands"][0].__setitem__("actions", [[1, 2, 3]])),
        "action is a string": edited(lambda r: r["hands"][0].__setitem__("actions", [[0, "AS"]])),
        "deal is a number": edited(lambda r: r["hands"][1].__setitem__("deal", 3)),
        "deal has duplicates": edited(lambda r: r["hands"][0]["deal"][0].__setitem__(0, r["hands"][0]["deal"][1][0])),
        "episode is unknown": edited(lambda r: r.__setitem__("episode", "forever")),
        "start scores wrong length": edited(lambda r: r["start"].__setitem__("scores", [0, 0, 0])),
    }


@pytest.mark.parametrize("name", sorted(_malformed_records()))
def test_every_malformed_record_is_a_replay_error(name):
    record = _malformed_records()[name]
    with pytest.raises(spades_env.ReplayError, match="record|hand"):
        spades_env.replay(record)


def test_a_record_may_name_a_preset_or_carry_its_rules_inline():
    rec = _finished_record()
    inline = spades_env.replay(rec)
    named = json.loads(json.dumps(rec))
    named["rules"] = "standard"
    assert spades_env.replay(named).game_record()["scores"] == inline.game_record()["scores"]


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe\x00 not text", r"not UTF-8 text \(invalid start byte at byte 0\); expected the JSON of a game record"),
    (b"[" * 100_000, r"its JSON is nested too deeply to be a game record"),
    (b"{\"format\": ", r"cannot read game record .*Expecting value"),
    (b"1" * 5000, r"cannot read game record .*5000 digits"),
])
def test_a_record_file_that_is_not_json_text_is_a_replay_error(tmp_path, content, message):
    path = tmp_path / "record.json"
    path.write_bytes(content)
    with pytest.raises(spades_env.ReplayError, match=message):
        spades_env.load_record(path)
