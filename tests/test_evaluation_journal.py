"""spades-eval --journal (evaluation/journal.py): a match killed part-way resumes from its
journal to exactly the uninterrupted result, replaying only the deals it had not finished; a torn
last line is played again; a journal of another match is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from evaluation import EvaluationError, compare, evaluate, strip_timing
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
    deadline = time.time() + 120
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
