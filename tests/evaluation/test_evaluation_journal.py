"""spades-eval --journal (evaluation/journal.py): a match killed part-way resumes from its
journal to exactly the uninterrupted result, replaying only the deals it had not finished; a torn
last line is played again; a deal counts only with all its plays. Refused before any play, in one
line: a journal of another match or version, a path that is not a regular writable file (devices,
FIFOs, directories), a file that is not UTF-8, a line whose checksum does not match or that is
not an entry of this match."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from evaluation import EvaluationError, compare, evaluate, main, strip_timing
from evaluation import journal as journal_module
from evaluation import matches


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


def test_a_cut_journal_resumes_to_the_same_result(tmp_path, monkeypatch):
    journal = tmp_path / "match.jsonl"
    plain = evaluate("heuristic", "random", deals=12, duplicate=True, seed=4, workers=1)
    full = evaluate("heuristic", "random", deals=12, duplicate=True, seed=4, workers=1, journal=str(journal))
    assert full.to_dict(timing=False) == plain.to_dict(timing=False)
    lines = _lines(journal)
    assert len(lines) == 1 + 12 and json.loads(lines[0])["format"] == "spades-eval-journal"
    journal.write_text("\n".join(lines[:6]) + "\n" + lines[6][: len(lines[6]) // 2])   # a kill mid-line
    played = []
    original = matches._Worker.play_unit
    monkeypatch.setattr(matches._Worker, "play_unit", lambda self, m, u: played.append(u) or original(self, m, u))
    resumed = evaluate("heuristic", "random", deals=12, duplicate=True, seed=4, workers=1, journal=str(journal))
    assert resumed.to_dict(timing=False) == plain.to_dict(timing=False)
    assert sorted(played) == sorted(set(range(12)) - {json.loads(line)["unit"] for line in lines[1:6]})
    played.clear()
    again = evaluate("heuristic", "random", deals=12, duplicate=True, seed=4, workers=1, journal=str(journal))
    assert played == [] and again.to_dict(timing=False) == plain.to_dict(timing=False)


def test_a_comparison_resumes_too_on_processes(tmp_path):
    journal = tmp_path / "compare.jsonl"
    args = ("heuristic", "random", "heuristic")
    plain = compare(*args, deals=10, seed=2, workers=1)
    compare(*args, deals=10, seed=2, workers=2, journal=str(journal))
    lines = _lines(journal)
    journal.write_text("\n".join(lines[:8]) + "\n")
    resumed = compare(*args, deals=10, seed=2, workers=2, journal=str(journal))
    assert resumed.to_dict(timing=False) == plain.to_dict(timing=False)


def test_a_journal_of_another_match_or_no_journal_is_refused(tmp_path):
    journal = tmp_path / "match.jsonl"
    evaluate("heuristic", "random", deals=3, seed=1, workers=1, journal=str(journal))
    with pytest.raises(EvaluationError, match="holds another match"):
        evaluate("heuristic", "random", deals=3, seed=2, workers=1, journal=str(journal))
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(EvaluationError, match="not a spades-eval journal"):
        evaluate("heuristic", "random", deals=3, seed=1, workers=1, journal=str(other))
    assert other.read_text() == "hello\n"


def test_spades_eval_killed_and_run_again_gives_the_uninterrupted_result(tmp_path):
    journal, killed_json, plain_json = tmp_path / "j.jsonl", tmp_path / "resumed.json", tmp_path / "plain.json"
    base = [sys.executable, "-m", "evaluation.cli", "--team-a", "search:worlds=200", "--team-b", "heuristic",
            "--deals", "150", "--seed", "7", "--workers", "1", "--quiet"]
    run = subprocess.Popen(base + ["--journal", str(journal)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600             # generous: the cores may be shared with other jobs
    while time.time() < deadline and run.poll() is None and (not journal.exists() or len(_lines(journal)) < 6):
        time.sleep(0.05)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    finished = len(_lines(journal)) - 1
    assert 5 <= finished < 150, finished
    subprocess.run(base + ["--journal", str(journal), "--json", str(killed_json)], check=True, capture_output=True)
    subprocess.run(base + ["--json", str(plain_json)], check=True, capture_output=True)
    strip = strip_timing
    assert strip(json.loads(killed_json.read_text())) == strip(json.loads(plain_json.read_text()))


# --------------------------------------------------------------------------------- refused inputs

def _no_play(monkeypatch):
    """Any play now fails the test: a refused journal must be refused before the match is played."""
    def play_unit(self, m, u):
        raise AssertionError("a deal was played before the journal was checked")
    monkeypatch.setattr(matches._Worker, "play_unit", play_unit)


def _small(journal, **kw):
    return evaluate("random", "random:seed=2", deals=4, duplicate=True, seed=1, workers=1, journal=str(journal), **kw)


@pytest.mark.parametrize("path", ["/dev/null", "/dev/zero"])
def test_a_device_is_refused_before_any_play_in_one_line(path, monkeypatch, capsys):
    _no_play(monkeypatch)
    with pytest.raises(EvaluationError, match="not a regular file"):
        _small(path)
    assert main(["--team-a", "random", "--team-b", "random", "--deals", "3", "--quiet", "--journal", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "spades-eval: error: --journal" in err and "not a regular file" in err


def test_a_directory_a_fifo_and_a_file_under_a_file_are_refused_without_opening(tmp_path, monkeypatch):
    _no_play(monkeypatch)
    with pytest.raises(EvaluationError, match="is a directory"):
        _small(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(EvaluationError, match="not a regular file"):     # an open() would block here
        _small(fifo)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(EvaluationError, match="is not a directory"):
        _small(blocker / "sub" / "j.jsonl")


def test_a_fifo_journal_does_not_hang_the_command(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    run = subprocess.run([sys.executable, "-m", "evaluation.cli", "--team-a", "random", "--team-b", "random",
                          "--deals", "2", "--quiet", "--journal", str(fifo)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not a regular file" in run.stderr, run.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_directory_is_refused(tmp_path, monkeypatch):
    _no_play(monkeypatch)
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(EvaluationError, match="not writable"):
            _small(tmp_path / "j.jsonl")
    finally:
        tmp_path.chmod(0o700)


def test_a_file_that_is_not_utf8_is_refused(tmp_path, monkeypatch, capsys):
    _no_play(monkeypatch)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\xff\xfe\x00binary\n")
    with pytest.raises(EvaluationError, match="not UTF-8"):
        _small(junk)
    assert main(["--team-a", "random", "--team-b", "random", "--deals", "3", "--quiet", "--journal", str(junk)]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    assert junk.read_bytes() == b"\xff\xfe\x00binary\n"


def _rewrite(journal, number, change, resign=True):
    """Change line ``number`` (1-based) of a journal, with a valid checksum again unless ``resign`` is off."""
    from evaluation.journal import CHECK, encode_line
    lines = journal.read_text().splitlines(keepends=True)
    entry = json.loads(lines[number - 1])
    entry.pop(CHECK)
    change(entry)
    lines[number - 1] = encode_line(entry) if resign else json.dumps(entry) + "\n"
    journal.write_text("".join(lines))


def test_a_tampered_line_is_refused_naming_the_file_and_the_line(tmp_path, monkeypatch):
    journal = tmp_path / "j.jsonl"
    _small(journal)
    text = journal.read_text()
    lines = text.splitlines(keepends=True)
    entry = json.loads(lines[2])
    entry["outcomes"][0]["tallies"]["A"]["points"] += 100          # well-formed, but not what was played
    journal.write_text("".join(lines[:2]) + json.dumps(entry) + "\n" + "".join(lines[3:]))
    _no_play(monkeypatch)
    with pytest.raises(EvaluationError, match=rf"--journal {journal}, line 3: its checksum does not match"):
        _small(journal)


def test_a_deal_counts_only_with_all_its_plays(tmp_path):
    journal = tmp_path / "j.jsonl"
    plain = _small(journal)
    assert plain.hands == 8
    _rewrite(journal, 2, lambda entry: entry["outcomes"].pop())      # 1 of the deal's 2 plays
    _rewrite(journal, 3, lambda entry: entry["outcomes"].clear())    # none of them (was a ZeroDivisionError)
    resumed = _small(journal)
    assert resumed.hands == 8 and resumed.to_dict(timing=False) == plain.to_dict(timing=False)


def test_malformed_entries_and_repeated_deals_are_refused(tmp_path, monkeypatch):
    journal = tmp_path / "j.jsonl"
    _small(journal)
    good = journal.read_text()
    _no_play(monkeypatch)
    cases = [
        (lambda e: e["outcomes"][0]["tallies"]["A"].update(points="many"), "line 2: not an entry of this match"),
        (lambda e: e.update(unit=99), "line 2: not an entry of this match"),
        (lambda e: e["outcomes"][0]["tallies"].pop("B"), "line 2: not an entry of this match"),
        (lambda e: e["outcomes"][0].update(kinds={"made up": [1, 2]}), "line 2: not an entry of this match"),
    ]
    for change, message in cases:
        journal.write_text(good)
        _rewrite(journal, 2, change)
        with pytest.raises(EvaluationError, match=message):
            _small(journal)
    lines = good.splitlines(keepends=True)
    journal.write_text("".join([lines[0], lines[2], lines[2]] + lines[3:]))     # one deal twice
    with pytest.raises(EvaluationError, match="line 3: deal .* is already on line 2"):
        _small(journal)
    journal.write_text(good.replace("\n", "\n\n", 1))
    with pytest.raises(EvaluationError, match="line 2: not a JSON object"):
        _small(journal)


def test_an_unknown_version_is_refused(tmp_path, monkeypatch):
    journal = tmp_path / "j.jsonl"
    _small(journal)
    good = journal.read_text()
    _no_play(monkeypatch)
    for resign in (True, False):
        journal.write_text(good)
        _rewrite(journal, 1, lambda header: header.update(version=99), resign=resign)
        with pytest.raises(EvaluationError, match="version 99; this spades-eval reads versions 3, 4"):
            _small(journal)


def _as_version_3(entry):
    for play in entry["outcomes"]:
        for tally in play["tallies"].values():
            del tally["wins_from_behind"]


def test_a_version_3_journal_resumes_its_plays_counting_no_wins_from_behind(tmp_path, monkeypatch):
    """Version 4 added one tally field (games won from behind going into the last hand): a journal
    written before it still resumes, every other figure as the uninterrupted run's, and the result
    says that no game of it counted wins from behind."""
    journal = tmp_path / "j.jsonl"
    games = dict(games=3, duplicate=True, seed=5, workers=1, journal=str(journal))
    plain = evaluate("heuristic", "random", **games)
    _rewrite(journal, 1, lambda header: header.update(version=3))
    for number in range(2, len(_lines(journal)) + 1):
        _rewrite(journal, number, _as_version_3)
    _no_play(monkeypatch)
    resumed = evaluate("heuristic", "random", **games)
    assert resumed.wins_from_behind_games == 0 and plain.wins_from_behind_games == 6
    assert resumed.to_dict()["notes"] == ["won from behind counts 0 of the 6 games: the other 6 were read from a "
                                          "version-3 journal, which did not count it"]
    assert "notes" not in plain.to_dict()
    got, expected = resumed.to_dict(timing=False), plain.to_dict(timing=False)
    for data in (got, expected):
        for team in data["teams"].values():
            team.pop("wins_from_behind")
        data.pop("wins_from_behind_games")
        data.pop("notes", None)
    assert got == expected


def test_a_match_resumed_from_version_3_counts_wins_from_behind_over_the_games_that_have_it(tmp_path, capsys):
    """The issue's case in small: part of a match in a version-3 journal, the rest played now. Won
    from behind is reported over the games played now, with a note in the report and the JSON;
    the games played now are appended whole, and the journal resumes again to the same result."""
    journal, report = tmp_path / "j.jsonl", tmp_path / "r.json"
    argv = ["--team-a", "heuristic", "--team-b", "random", "--games", "6", "--duplicate", "--seed", "3",
            "--workers", "1", "--quiet", "--journal", str(journal), "--json", str(report)]
    assert main(argv) == 0
    full = json.loads(report.read_text())
    lines = _lines(journal)
    journal.write_text("\n".join(lines[:4]) + "\n")                 # the header and 3 game seeds
    _rewrite(journal, 1, lambda header: header.update(version=3))
    for number in (2, 3, 4):
        _rewrite(journal, number, _as_version_3)
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    resumed = json.loads(report.read_text())
    note = "won from behind counts 6 of the 12 games: the other 6 were read from a version-3 journal, which did not count it"
    assert resumed["wins_from_behind_games"] == 6 and full["wins_from_behind_games"] == 12
    assert resumed["notes"] == [note] and "notes" not in full
    assert f"note: {note}" in printed and "won from behind in the last hand (of 6 games)" in printed
    later = [json.loads(line) for line in _lines(journal)[4:]]
    assert len(later) == 3 and all("wins_from_behind" in tally for entry in later
                                   for play in entry["outcomes"] for tally in play["tallies"].values())
    assert main(argv) == 0
    assert json.loads(report.read_text())["notes"] == [note]


def test_a_version_4_header_over_version_3_lines_is_refused(tmp_path, monkeypatch, capsys):
    journal = tmp_path / "j.jsonl"
    games = dict(games=2, seed=5, workers=1, journal=str(journal))
    evaluate("heuristic", "random", **games)
    _rewrite(journal, 3, _as_version_3)
    _no_play(monkeypatch)
    with pytest.raises(EvaluationError, match=r"line 3: not an entry of this match \(a tally of version 3 "
                                              r"\(without wins_from_behind\) under a version-4 header\)"):
        evaluate("heuristic", "random", **games)
    assert main(["--team-a", "heuristic", "--team-b", "random", "--games", "2", "--seed", "5", "--workers", "1",
                 "--quiet", "--journal", str(journal)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "under a version-4 header" in err


@pytest.mark.parametrize("field", ["wins_from_behind", "wins_by_bag_out", "wins_by_blind_nil"])
def test_a_tally_with_more_wins_of_a_kind_than_wins_is_refused(field, tmp_path, monkeypatch):
    journal = tmp_path / "j.jsonl"
    games = dict(games=2, seed=5, workers=1, journal=str(journal))
    evaluate("heuristic", "random", **games)

    def inflate(entry):
        tally = entry["outcomes"][0]["tallies"]["B"]
        tally[field] = tally["wins"] + 1
    _rewrite(journal, 2, inflate)
    _no_play(monkeypatch)
    with pytest.raises(EvaluationError, match=rf"line 2: not an entry of this match \(tally {field}=\d+ exceeds its "
                                              r"wins=\d+\)"):
        evaluate("heuristic", "random", **games)


def test_a_header_torn_by_a_kill_starts_again(tmp_path):
    journal = tmp_path / "j.jsonl"
    plain = _small(journal)
    journal.write_text(journal.read_text().splitlines()[0][:40])
    assert _small(journal).to_dict(timing=False) == plain.to_dict(timing=False)
    assert len(_lines(journal)) == 1 + 4


def test_a_failed_sync_at_the_end_warns_and_keeps_the_result(tmp_path, monkeypatch):
    plain = _small(tmp_path / "a.jsonl")

    def fsync(fd):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.warns(UserWarning, match="could not be synced"):
        result = _small(tmp_path / "b.jsonl")
    assert result.to_dict(timing=False) == plain.to_dict(timing=False)
