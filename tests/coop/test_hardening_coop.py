"""Hardening, round four (issue 50): the cooperation lab's commands and studies, the symmetry API,
the web server's records list and disconnects, a newcomer's rough edges, and tests that kill the
bugs a review planted without any test noticing.

Every hostile input is replayed through the public command (or API) and must be refused with
one line and exit status 2, before any work starts, within seconds."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

from coop.cli import league_main
from coop.cli import main as coop_main
from evaluation.outcomes import EvaluationError
from coop.cli import main as coop_command
from coop.study.study import StudyError, check_runs_unchanged, load_study

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "coop_study_smoke.yaml"


def refused(capsys, run, *args, contains: str = "", seconds: float = 30.0) -> str:
    """``run(list(args))`` exits 2 (returned or raised) with one line on stderr, fast."""
    start = time.monotonic()
    try:
        code = run(list(args))
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "usage:" not in err, err
    assert contains in err, err
    assert time.monotonic() - start < seconds
    return err


# ------------------------------------------------------------------ spades-coop and spades-league
@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("x")
    return path


@pytest.mark.parametrize("args, contains", [
    (["run", "random", "--deals", str(10 ** 30)], "expected at most 1,000,000"),
    (["run", "random", "--deals", "ten"], "invalid int value: 'ten'"),
    (["run", "random", "--workers", str(10 ** 6)], "workers=1000000: expected at most"),
    (["run", "random", "--json", "{tmp}"], "is a folder"),
    (["run", "random", "--json", "{file}/x.json"], "is not a folder"),
    (["run", "random", "--json", "/dev/full"], "not a regular file"),
    (["run", "random", "--plot", "{file}/x.png"], "--plot"),
    (["run", "random", "--journal", "{tmp}"], "--journal"),
    (["zoo", "--json", "/dev/full"], "not a regular file"),
    (["zoo", "--json", "{file}/x.json"], "is not a folder"),
    (["signals", "random", "--deals", "1"], "--deals=1: expected at least 2"),
    (["signals", "random", "--deals", str(10 ** 30)], "expected at most"),
    (["run", "heuristic:seed=-1", "--deals", "2", "--no-progress"], "seed=-1: expected a whole number"),
    (["run", "search:worlds=abc", "--deals", "2", "--quiet"], "search: worlds='abc': expected a whole number"),
])
def test_the_lab_commands_refuse_bad_input_in_one_line(capsys, tmp_path, a_file, args, contains):
    args = [a.format(tmp=tmp_path, file=a_file) for a in args]
    refused(capsys, coop_main, *args, contains=contains)
    assert list(tmp_path.iterdir()) == [a_file]          # nothing written


@pytest.mark.parametrize("args, contains", [
    (["heuristic", "heuristic", "--deals", "2"], "holds copies of one agent only"),
    (["random", "heuristic", "--deals", str(10 ** 30)], "expected at most"),
    (["random", "heuristic", "--workers", str(10 ** 6)], "expected at most"),
    (["random", "heuristic", "--json", "/dev/full"], "not a regular file"),
    (["random", "heuristic", "--deals", "ten"], "invalid int value"),
])
def test_the_league_refuses_bad_input_in_one_line(capsys, args, contains):
    refused(capsys, league_main, *args, contains=contains)


@pytest.fixture
def locked(tmp_path):
    """A read-only folder (no write bit: refused even to root, whom the system lets write it)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def test_a_read_only_output_folder_is_refused_before_any_play(capsys, locked):
    for flag, name in (("--json", "r.json"), ("--plot", "r.png"), ("--journal", "r.journal")):
        err = refused(capsys, coop_main, "run", "random", "--deals", "2", flag, str(locked / name), contains=flag)
        assert "not writable (read-only)" in err
    refused(capsys, coop_main, "signals", "random", "--json", str(locked / "s.json"), contains="read-only")
    refused(capsys, coop_main, "zoo", "--json", str(locked / "z.json"), contains="read-only")
    refused(capsys, league_main, "random", "heuristic", "--json", str(locked / "l.json"), contains="read-only")
    refused(capsys, league_main, "random", "heuristic", "--plot", str(locked / "l.png"), contains="read-only")
    refused(capsys, league_main, "random", "heuristic", "--journal", str(locked / "l.j"), contains="read-only")
    refused(capsys, coop_command, "bid-values", "neural", "--json", str(locked / "b.json"), contains="read-only")
    refused(capsys, coop_command, "study", "--config", str(SMOKE), "--folder", str(locked / "study"),
            contains="read-only")
    assert list(locked.iterdir()) == []


def test_a_write_that_fails_after_the_check_is_one_line(tmp_path, monkeypatch):
    from coop.common import write_json

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)            # the disk fills while the file is written
    with pytest.raises(EvaluationError, match=r"--json .*x\.json: cannot be written \(No space left on device\)"):
        write_json(tmp_path / "x.json", {"a": 1}, "--json")
    assert list(tmp_path.iterdir()) == []             # no .tmp left behind


def test_bid_values_refuse_bad_input_in_one_line(capsys, tmp_path):
    refused(capsys, coop_command, "bid-values", "neural", "--deals", str(10 ** 30), contains="from 2 to 100,000")
    refused(capsys, coop_command, "bid-values", "neural", "--deals", "ten", contains="invalid int value")
    refused(capsys, coop_command, "bid-values", "neural", "--seed", "-1", contains="--seed -1")
    refused(capsys, coop_command, "bid-values", "neural", "--json", str(tmp_path), contains="is a folder")
    refused(capsys, coop_command, "bid-values", "neural:greedy=maybe", "--deals", "2",
            contains="greedy='maybe': expected true or false")


def test_agent_options_are_checked_in_our_words():
    import agents
    from agents.specs import make_agent
    with pytest.raises(ValueError, match=r"heuristic: seed=-1: expected a whole number from 0"):
        make_agent("heuristic:seed=-1")
    with pytest.raises(ValueError, match=r"random: seed=1\.5"):
        agents.make("random", seed=1.5)
    with pytest.raises(ValueError, match=r"search: worlds='abc': expected a whole number >= 1"):
        make_agent("search:worlds=abc")
    with pytest.raises(ValueError, match=r"search: bid_worlds=2\.5"):
        make_agent("search:bid_worlds=2.5")
    with pytest.raises(ValueError, match=r"heuristic: threads='x'"):
        make_agent("heuristic:threads=x")
    with pytest.raises(ValueError, match=r"neural: greedy='maybe'"):
        make_agent("neural:greedy=maybe")
    assert make_agent("search:worlds=10").worlds == 10 and make_agent("heuristic:seed=3").seed == 3


# ------------------------------------------------------------------ one flag for no progress bar
def test_every_command_takes_no_progress_and_quiet(monkeypatch):
    from evaluation.cli import build_parser as eval_parser
    from coop.cli import _coop_parser, _league_parser
    from train.bids.bid_value_map import build_parser as bid_parser
    from coop.study.study import build_parser as study_parser
    assert eval_parser().parse_args(["--no-progress"]).no_progress
    assert eval_parser().parse_args(["--quiet"]).no_progress
    assert _coop_parser().parse_args(["run", "random", "--quiet"]).no_progress
    assert _league_parser().parse_args(["a", "b", "--no-progress"]).no_progress
    assert bid_parser().parse_args(["neural", "--quiet"]).no_progress
    assert study_parser().parse_args(["--config", "x", "--quiet"]).no_progress


def test_progress_bars_step_aside_when_stderr_is_not_a_terminal(monkeypatch):
    from evaluation.cli_common import progress_disabled
    from train.imitation.fitting import progress_bar
    monkeypatch.setattr(sys, "stderr", SimpleNamespace(isatty=lambda: False, write=lambda s: None, flush=lambda: None))
    assert progress_disabled(True) and progress_disabled(False)
    assert progress_bar(10, "x", True).disable
    monkeypatch.setattr(sys, "stderr", SimpleNamespace(isatty=lambda: True, write=lambda s: None, flush=lambda: None))
    assert not progress_disabled(True) and progress_disabled(False)


def test_spades_train_no_progress_sets_the_field(monkeypatch):
    from train.ppo import trainer as ppo
    seen = {}
    monkeypatch.setattr(ppo, "load_config", lambda path, overrides: seen.setdefault("set", list(overrides))
                        and (_ for _ in ()).throw(ppo.ConfigError("stop")))
    assert ppo.main(["--no-progress"]) == 2
    assert seen["set"] == ["progress=false"]


# ------------------------------------------------------------------ newcomer's rough edges
def test_a_set_typo_is_not_blamed_on_the_yaml_file():
    from train.ppo.config import ConfigError, load_config
    with pytest.raises(ConfigError, match=r"^--set epochz=2: unknown field 'epochz' \(did you mean 'epochs'\?\)"):
        load_config(str(ROOT / "configs" / "quickstart.yaml"), ["epochz=2"])
    with pytest.raises(ConfigError, match=r"^--set epochs=abc: epochs='abc'"):
        load_config(str(ROOT / "configs" / "quickstart.yaml"), ["epochs=abc"])


@pytest.mark.parametrize("module", ["train.labelling.cli", "tools.bench", "tools.demo", "web.server", "train.ppo.trainer"])
def test_every_command_line_prints_one_line_for_an_unknown_flag(capsys, module):
    import importlib
    main = importlib.import_module(module).main
    refused(capsys, main, "--no-such-flag", contains="(see spades-")


def test_spades_train_refuses_a_seed_out_of_range():
    from train.ppo.config import ConfigError, load_config
    for seed in (-1, 10 ** 30):
        with pytest.raises(ConfigError, match=rf"seed={seed}: expected a whole number from 0"):
            load_config(None, [f"seed={seed}"])


def test_spades_play_and_eval_print_one_line_for_a_typo(capsys):
    from evaluation.cli import main as eval_main
    from play.cli import main as play_main
    refused(capsys, play_main, "--partner", "serach", contains="did you mean 'search'")
    refused(capsys, play_main, "--hands", "ten", contains="invalid int value: 'ten'")
    refused(capsys, eval_main, "--team-a", "random", "--team-b", "random", "--deals", "ten",
            contains="invalid int value: 'ten'")


def test_a_finished_run_leaves_no_lock_file_and_a_killed_ones_lock_is_free(tmp_path):
    from train.ppo.run_lock import RunFolderBusy, RunLock
    lock = RunLock(tmp_path / "run").acquire()
    assert (tmp_path / "run" / ".lock").exists()
    with pytest.raises(RunFolderBusy):
        RunLock(tmp_path / "run").acquire()
    lock.release()
    assert not (tmp_path / "run" / ".lock").exists()
    (tmp_path / "run" / ".lock").write_text("spades-train (pid 1)\n")       # left by a killed run: not held
    again = RunLock(tmp_path / "run").acquire()
    again.release()
    assert not (tmp_path / "run" / ".lock").exists()


# ------------------------------------------------------------------ study configs
def smoke(tmp_path: Path, change=None, raw: bytes | None = None) -> Path:
    path = tmp_path / "study.yaml"
    if raw is not None:
        path.write_bytes(raw)
        return path
    data = yaml.safe_load(SMOKE.read_text())
    data["folder"] = str(tmp_path / "study")
    if change:
        change(data)
    path.write_text(yaml.safe_dump(data))
    return path


def _set(*keys):
    def change(data, value):
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


BOMB = (b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n")
BAD_STUDIES = [
    ("after 5", lambda d: _set("methods", "population", "after")(d, 5), "after=5: expected a list"),
    ("after [[x]]", lambda d: _set("methods", "population", "after")(d, [["x"]]), "after=[['x']]: expected a list"),
    ("fields a list", lambda d: _set("methods", "other_play", "fields")(d, [1]), "fields=[1]: expected a mapping"),
    ("evaluation a list", lambda d: _set("evaluation")(d, [1]), "evaluation=[1]: expected a mapping"),
    ("evaluation deals text", lambda d: _set("evaluation", "crossplay_deals")(d, "many"),
     "evaluation.crossplay_deals='many'"),
    ("evaluation deals 10**30", lambda d: _set("evaluation", "league_deals")(d, 10 ** 30), "league_deals=1000"),
    ("evaluation workers 10**6", lambda d: _set("evaluation", "workers")(d, 10 ** 6), "workers=1000000"),
    ("league_extra text", lambda d: _set("evaluation", "league_extra")(d, "random"), "league_extra='random'"),
    ("league_extra misspelt", lambda d: _set("evaluation", "league_extra")(d, ["randon"]), "unknown agent 'randon'"),
    ("reference misspelt", lambda d: _set("evaluation", "reference")(d, "heuristc:seed=1"),
     "evaluation.reference: unknown agent 'heuristc'"),
    ("folder a list", lambda d: _set("folder")(d, [1]), "folder=[1]: expected a text"),
    ("name a mapping", lambda d: _set("name")(d, {"a": 1}), "name={'a': 1}: expected a text"),
    ("train a list", lambda d: _set("train")(d, [1]), "train=[1]: expected a mapping"),
    ("seeds 10**30", lambda d: _set("seeds")(d, [10 ** 30]), "seeds=[1000000000000000000000000000000]"),
    ("seeds -1", lambda d: _set("seeds")(d, [-1]), "expected a list of distinct integers from 0"),
]


@pytest.mark.parametrize("what, change, message", BAD_STUDIES, ids=[c[0] for c in BAD_STUDIES])
def test_a_bad_study_config_is_one_line(capsys, tmp_path, what, change, message):
    config = smoke(tmp_path, change)
    refused(capsys, coop_command, "study", "--config", str(config), contains=message, seconds=10)
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize("what, raw, message", [
    ("not UTF-8", b"name: \xff\xfe\n", "not UTF-8 text"),
    ("10,000 deep", b"a: " + b"[" * 10_000 + b"]" * 10_000 + b"\n", "nested too deeply"),
    ("alias bomb", BOMB, "anchors and aliases"),
    ("not YAML", b"a: [\n", "not valid YAML"),
    ("a list", b"- 1\n", "expected a mapping"),
    ("a huge integer key", b"1: 2\nseeds: [1]\n", "unknown key 1"),
])
def test_a_hostile_study_file_is_one_line_and_fast(capsys, tmp_path, what, raw, message):
    refused(capsys, coop_command, "study", "--config", str(smoke(tmp_path, raw=raw)), contains=message, seconds=5)


def test_a_study_config_that_is_a_device_or_a_folder_is_refused_at_once(capsys, tmp_path):
    refused(capsys, coop_command, "study", "--config", "/dev/zero", contains="not a regular file", seconds=5)
    refused(capsys, coop_command, "study", "--config", str(tmp_path), contains="is a folder", seconds=5)


def test_a_study_folder_that_is_not_a_folder_is_refused(capsys, tmp_path, a_file):
    config = smoke(tmp_path)
    refused(capsys, coop_command, "study", "--config", str(config), "--folder", str(a_file), contains="not a folder")
    refused(capsys, coop_command, "study", "--config", str(config), "--folder", "/dev/null", contains="not a folder")
    refused(capsys, coop_command, "study", "--config", str(config), "--folder", str(a_file / "sub"),
            contains="is not a folder")
    refused(capsys, coop_command, "study", "--config", str(config), "--jobs", "ten", contains="invalid int value")
    refused(capsys, coop_command, "study", "--config", str(config), "--workers", str(10 ** 6), contains="at most")
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "results").write_text("a file")
    refused(capsys, coop_command, "study", "--config", str(config), contains="results is not a folder")


def test_train_fields_edited_between_kill_and_resume_are_refused(capsys, tmp_path):
    from coop.study.study import _write_run_config
    config = smoke(tmp_path)
    study = load_study(config)
    for started in study.runs():                    # population's globs name the runs folder
        _write_run_config(started)
        (started.path / "checkpoints").mkdir(parents=True)
        (started.path / "checkpoints" / "last.pt").write_bytes(b"started")
    run = study.runs()[0]
    check_runs_unchanged(study)                                         # as it started: fine
    moved = tmp_path / "moved"
    shutil.copytree(study.folder, moved)
    check_runs_unchanged(load_study(config, str(moved)))                 # the folder moved: fine too
    edited = smoke(tmp_path, lambda d: d["train"].__setitem__("total_decisions", 1024))
    with pytest.raises(StudyError, match=rf"run {run.name} started with other fields .*total_decisions changed"):
        check_runs_unchanged(load_study(edited))
    refused(capsys, coop_command, "study", "--config", str(edited), "--resume", contains="total_decisions changed")


# ------------------------------------------------------------------ study pieces: read, stale, replayed
@pytest.fixture
def finished(tmp_path):
    """A study of two finished runs (fake models) whose lab functions are stand-ins that count
    what they play; ``again()`` runs the evaluate stage and returns what was played."""
    study = load_study(smoke(tmp_path, lambda d: (d.__setitem__("seeds", [1]),
                                                  d["methods"].pop("population"))))
    for run in study.runs():
        run.path.mkdir(parents=True)
        (run.path / "model.pt").write_bytes(run.name.encode())
        (run.path / "final_eval.json").write_text(json.dumps({"wall_s": 1.0}))
    return study


def fake_lab(monkeypatch, played: list):
    import coop.measures.league as league
    import evaluation.results as results
    import coop.measures.scenarios as scenarios
    import coop.measures.signals as signals
    from coop.study import report as coop_study_report

    def crossplay(specs, **kw):
        played.append(("crossplay", len(specs), kw["deals"]))
        n, d = len(specs), kw["deals"]
        cells = [[SimpleNamespace(unit_diffs=[float(i - j)] * d) for j in range(n)] for i in range(n)]
        return SimpleNamespace(cells=cells, to_dict=lambda timing: {
            "reference": kw["reference"], "score_diff": [[float(i - j) for j in range(n)] for i in range(n)]})

    def run_suite(spec, suite, **kw):
        played.append(("scenario", spec, kw["deals"]))
        return {"suite_hash": scenarios.suite_hash(scenarios.suite_definition(suite, kw["deals"], kw["seed"])),
                "scenarios": [{"score": 1.0, "low": 0.0, "high": 2.0, "normalised": 0.5, "partners": []}]}

    def measure_signals(spec, **kw):
        played.append(("signals", spec, kw["deals"]))
        value = {"value": 0.1, "low": 0.0, "high": 0.2}
        return {"bid_information": value, "listening": value, "nil_cover": value}

    def run_league(roster, **kw):
        played.append(("league", len(roster), kw["deals"]))
        rows = [{"agent": a, "rating": 0.0, "low": -1.0, "high": 1.0} for a in roster]
        return {"roster": list(roster), "ratings": rows,
                "nash": {"ratings": [{"agent": a, "nash_average": 0.0, "weight": 0.5} for a in roster]}}

    monkeypatch.setattr(results, "crossplay", crossplay)
    monkeypatch.setattr(scenarios, "run_suite", run_suite)
    monkeypatch.setattr(signals, "measure_signals", measure_signals)
    monkeypatch.setattr(league, "run_league", run_league)
    monkeypatch.setattr(league, "plot_league", lambda result, path: None)
    monkeypatch.setattr(coop_study_report, "_plot_crossplay", lambda *a: None)
    monkeypatch.setattr(coop_study_report, "_plot_gaps", lambda *a: None)


def evaluate(study, log=None):
    from coop.study.report import evaluate_stage
    return evaluate_stage(study, workers=1, progress=False, log=(log or (lambda line: None)))


def test_nothing_stale_is_mixed_into_a_study(finished, monkeypatch, tmp_path):
    played: list = []
    fake_lab(monkeypatch, played)
    evaluate(finished)
    kinds = sorted(p[0] for p in played)
    assert kinds == ["crossplay", "league", "scenario", "scenario", "signals", "signals"]
    played.clear()
    evaluate(finished)
    assert played == []                                                   # all current: nothing again
    # a model replaced after the evaluation: its pieces, the cross-play and the league again
    run = finished.runs()[0]
    (run.path / "model.pt").write_bytes(b"another model")
    lines: list[str] = []
    evaluate(finished, lines.append)
    assert sorted(p[0] for p in played) == ["crossplay", "league", "scenario", "signals"]
    assert {p[1] for p in played if p[0] in ("scenario", "signals")} == {run.spec}
    assert any("models replaced: " + run.name in line for line in lines), lines
    # the evaluation's deals changed: the pieces that play them again
    played.clear()
    changed = load_study(smoke(tmp_path, lambda d: (d.__setitem__("seeds", [1]), d["methods"].pop("population"),
                                                    d["evaluation"].__setitem__("signals_deals", 3))))
    evaluate(changed)
    assert sorted(p[0] for p in played) == ["signals", "signals"] and {p[2] for p in played} == {3}
    # a run added later (seed 3): cross-play and league again, the new run's pieces played
    played.clear()
    added = load_study(smoke(tmp_path, lambda d: (d.__setitem__("seeds", [1, 3]), d["methods"].pop("population"),
                                                  d["evaluation"].__setitem__("signals_deals", 3))))
    for run in added.runs():
        if not run.path.exists():
            run.path.mkdir(parents=True)
            (run.path / "model.pt").write_bytes(run.name.encode())
            (run.path / "final_eval.json").write_text(json.dumps({"wall_s": 1.0}))
    evaluate(added)
    assert sorted(p[0] for p in played) == ["crossplay", "league", "scenario", "scenario", "signals", "signals"]
    assert next(p for p in played if p[0] == "crossplay")[1] == 4


PIECES = ["crossplay.json", "league.json", "signals/{run}.json", "scenarios/{run}.json"]


@pytest.mark.parametrize("piece", PIECES)
@pytest.mark.parametrize("damage", ["truncated", "foreign"])
def test_a_damaged_piece_is_named_by_report(capsys, finished, monkeypatch, piece, damage):
    fake_lab(monkeypatch, [])
    evaluate(finished)
    path = finished.results_dir / piece.format(run=finished.runs()[0].name)
    text = path.read_text()
    path.write_text(text[: len(text) // 2] if damage == "truncated" else json.dumps({"something": "else"}))
    config = finished.folder.parent / "study.yaml"
    err = refused(capsys, coop_command, "study", "--config", str(config), "--report", contains=str(path))
    assert ("not valid JSON" if damage == "truncated" else "not a") in err


def test_a_damaged_final_eval_is_named(capsys, finished, monkeypatch):
    fake_lab(monkeypatch, [])
    evaluate(finished)
    path = finished.runs()[0].path / "final_eval.json"
    path.write_text('{"wall_s": ')
    config = finished.folder.parent / "study.yaml"
    refused(capsys, coop_command, "study", "--config", str(config), "--report", contains=str(path))


def test_a_crossplay_piece_of_another_study_is_refused(capsys, finished, monkeypatch):
    fake_lab(monkeypatch, [])
    evaluate(finished)
    path = finished.results_dir / "crossplay.json"
    data = json.loads(path.read_text())
    data["runs"] = ["someone_s9", "else_s9"]
    path.write_text(json.dumps(data))
    config = finished.folder.parent / "study.yaml"
    refused(capsys, coop_command, "study", "--config", str(config), "--report", contains="not a run of this study")


# ------------------------------------------------------------------ the symmetry API
def test_the_symmetry_api_refuses_what_it_used_to_cast():
    from spades_env import symmetries
    from spades_env.symmetries import BatchedSymmetries, Relabelling, SymmetryError
    for suits in ([0.5, 1, 2, 3], ["1", "0", "2", "3"], [True, 0, 2, 3], [1.0, 0, 2, 3]):
        with pytest.raises(SymmetryError, match=r"expected four suit numbers 0..3 \(whole numbers"):
            Relabelling(suits)
    assert Relabelling([1, 0, 2, 3]).suits == (1, 0, 2, 3)
    start = time.monotonic()
    with pytest.raises(SymmetryError, match="not a regular file"):
        symmetries("/dev/zero")
    assert time.monotonic() - start < 2
    maps = BatchedSymmetries(symmetries())
    for count in (-1, 2.5, True, 10 ** 12):
        with pytest.raises(SymmetryError, match=r"sample\(count="):
            maps.sample(count)
    assert maps.sample(0).shape == (0,)
    for bad in (1 << 52, 1 << 62, -1):
        with pytest.raises(SymmetryError, match="bits 52-63"):
            maps.map_card_sets(torch.tensor([[3, bad]], dtype=torch.int64), 1)
    full = torch.tensor([[(1 << 52) - 1]], dtype=torch.int64)
    assert torch.equal(maps.map_card_sets(full, 1), full)


# ------------------------------------------------------------------ web
starlette = pytest.importorskip("starlette")


def web_client(tmp_path):
    from starlette.testclient import TestClient
    from web.server import create_app
    return TestClient(create_app(tmp_path, host="127.0.0.1"), base_url="http://127.0.0.1")


def test_a_dangling_link_does_not_break_the_records_list(tmp_path):
    (tmp_path / "good.json").write_text("{}")
    (tmp_path / "gone.json").symlink_to(tmp_path / "nowhere.json")
    with web_client(tmp_path) as client:
        response = client.get("/api/records")
    assert response.status_code == 200, response.text
    data = response.json()
    assert [r["name"] for r in data["records"]] == ["good.json"] and data["skipped"] == ["gone.json"]


@pytest.mark.parametrize("origin", ["http://127.0.0.1.evil.example", "http://127.0.0.1:80.evil.example",
                                    "http://127.0.0.1evil.example", "http://127.0.0.1/../evil"])
def test_an_origin_is_compared_whole_not_as_a_prefix(tmp_path, origin):
    with web_client(tmp_path) as client:
        assert client.get("/api/records", headers={"Origin": "http://127.0.0.1"}).status_code == 200
        response = client.get("/api/records", headers={"Origin": origin})
    assert response.status_code == 403, origin


def test_a_localhost_origin_prefix_is_refused(tmp_path):
    from starlette.testclient import TestClient
    from web.server import create_app
    with TestClient(create_app(tmp_path, host="127.0.0.1"), base_url="http://localhost") as client:
        assert client.get("/api/records", headers={"Origin": "http://localhost"}).status_code == 200
        assert client.get("/api/records", headers={"Origin": "http://localhost.evil.example"}).status_code == 403


def uvicorn_disconnect():
    uvicorn = pytest.importorskip("uvicorn.protocols.utils")
    return uvicorn.ClientDisconnected()


@pytest.mark.parametrize("gone", [lambda: __import__("starlette.requests").requests.ClientDisconnect(),
                                  uvicorn_disconnect, BrokenPipeError, ConnectionResetError],
                         ids=["starlette", "uvicorn", "broken pipe", "reset"])
def test_a_client_disconnect_is_one_line_not_a_traceback(caplog, gone):
    import asyncio
    from web.limits import BrowserGuard

    async def app(scope, receive, send):
        raise gone()

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.disconnect"}

    scope = {"type": "http", "method": "GET", "path": "/api/games/x", "headers": [(b"host", b"127.0.0.1")]}
    with caplog.at_level(logging.INFO):
        asyncio.run(BrowserGuard(app)(scope, receive, send))
    assert sent == []                                                  # nobody to answer
    assert all(record.exc_info is None for record in caplog.records)
    assert any("went away" in record.getMessage() for record in caplog.records)


# Bounds a browser may set (web/limits.py): each decision they allow was timed. A bound raised
# by a slip (bid_worlds 128 -> 128,000) makes one click cost minutes, so every bound is pinned.
PINNED_BOUNDS = {("search", "bid_worlds"): 128, ("search", "min_worlds"): 64, ("search", "oversample"): 4,
                 ("search", "bid_down"): 3, ("search", "bid_up"): 3, ("search", "worlds"): 20_000,
                 ("search", "max_time"): 10}


@pytest.mark.parametrize("agent, option", sorted(PINNED_BOUNDS))
def test_every_budget_a_browser_may_set_is_bounded_where_it_was_timed(agent, option):
    from web.limits import browser_agent
    top = PINNED_BOUNDS[(agent, option)]
    spec = f"{agent}:{option}="
    browser_agent(agent, {option: top}, {}, spec + str(top))
    with pytest.raises(ValueError, match=option):
        browser_agent(agent, {option: top + 1}, {}, spec + str(top + 1))
    with pytest.raises(ValueError, match=option):
        browser_agent(agent, {option: top * 1000}, {}, spec + str(top * 1000))


def test_every_numeric_option_a_browser_may_set_has_a_finite_bound():
    from web.limits import AGENT_OPTIONS, MODEL
    for agent, table in AGENT_OPTIONS.items():
        for option, rule in table.items():
            if rule is MODEL or option == "max_steps":
                continue
            for huge in (10 ** 30, float("inf")):
                with pytest.raises(ValueError):
                    value = rule.check(huge)
                    if agent == "search" and option == "worlds":       # bounded with the backend too
                        raise ValueError
                    raise AssertionError(f"{agent}:{option}={huge} accepted as {value!r}")


# ------------------------------------------------------------------ planted bugs that survived
def test_a_journal_line_without_its_checksum_is_refused(tmp_path):
    from evaluation.journal import CHECK, Journal
    from evaluation.matches import match_config, play_matches
    configs = [match_config("random", "random:seed=1", deals=3, seed=5)]
    path = tmp_path / "m.journal"
    play_matches(configs, workers=1, journal=str(path))
    lines = path.read_text().splitlines()
    entry = json.loads(lines[2])
    del entry[CHECK]
    lines[2] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvaluationError, match=r"line 3: its checksum does not match"):
        Journal(path, configs)
    header = json.loads(lines[0])
    del header[CHECK]
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(EvaluationError, match=r"checksum"):
        Journal(path, configs)


def test_an_expert_shard_copied_in_under_a_new_name_is_refused(tmp_path):
    from train.labelling.expert_manifest import ExpertIterationError, file_digest, verify_files, verify_labels
    folder = tmp_path / "round_01" / "labels_self"
    folder.mkdir(parents=True)
    (folder / "shard_00000.pt").write_bytes(b"labels")
    (folder / "labels.json").write_text("{}")
    record = {name: file_digest(folder / name) for name in ("shard_00000.pt", "labels.json")}
    verify_files(folder, record, "the test")
    shutil.copy(folder / "shard_00000.pt", folder / "shard_00007.pt")
    with pytest.raises(ExpertIterationError, match=r"shard_00007\.pt: a shard the test does not record"):
        verify_files(folder, record, "the test")
    with pytest.raises(ExpertIterationError, match=r"shard_00007\.pt: a shard"):
        verify_labels(tmp_path / "round_01", {"folders": {"labels_self": record}}, "the test")


@pytest.mark.parametrize("shape", [(4, 3), (4, 2), (1, 4), (2, 2), (4, 1, 1)])
def test_a_dealers_tensor_of_another_shape_is_refused(shape):
    from spades_env.native import NativeEngineError, deal_from_keys, unavailable_reason
    if unavailable_reason() is not None:
        pytest.skip(unavailable_reason())
    with pytest.raises(NativeEngineError, match=r"dealers: expected \(4,\) or \(4, 1\) integer seats"):
        deal_from_keys(torch.rand(4, 52), torch.zeros(shape, dtype=torch.int64))


@pytest.mark.parametrize("shape", [(3, 2), (3, 1), (1, 3), (2,), (4,)])
def test_a_vector_reset_refuses_dealers_of_another_shape(shape):
    from spades_env.vector import SpadesVectorEnv, VectorEnvError
    env = SpadesVectorEnv(3, seed=0)
    with pytest.raises(VectorEnvError, match="expected a seat 0..3, or one per table"):
        env.reset(seed=0, dealer=torch.zeros(shape, dtype=torch.int64))


def _scoring_twins_module():
    """tests/spades_env/test_scoring_twins.py, also when this folder is run on its own (pytest puts
    that folder on the path only once it collects a file there)."""
    import importlib.util
    import sys
    from pathlib import Path

    if "test_scoring_twins" in sys.modules:
        return sys.modules["test_scoring_twins"]
    spec = importlib.util.spec_from_file_location(
        "test_scoring_twins", Path(__file__).resolve().parents[1] / "spades_env" / "test_scoring_twins.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["test_scoring_twins"] = module
    spec.loader.exec_module(module)
    return module


def test_a_side_with_two_nils_one_broken_scores_alike_in_every_twin():
    """Both partners bid nil (or blind nil), one takes tricks: every twin scores the side as the
    reference does, and the reference as the rules book says (standard: 100 kept, -100 broken,
    blind 200, the broken nil's tricks are bags)."""
    twins = _scoring_twins_module()
    from agents.native_search import rules_array
    from spades_env import native
    from spades_env.scoring import score_side
    from spades_env.vector import SpadesVectorEnv

    std = SpadesVectorEnv(1).rules
    assert score_side(std, [0, 0], [False, False], [0, 3], 0, 0).points == 0
    assert score_side(std, [0, 0], [False, False], [4, 0], 0, 8).points == -100 + 100 - 100    # a bag penalty
    assert score_side(std, [0, 0], [True, False], [0, 2], 0, 0).points == 200 - 100
    assert score_side(std, [0, 0], [True, True], [5, 0], 0, 0).points == 0
    for kwargs in twins.SCORING_CASES:
        rules = SpadesVectorEnv(1, **kwargs).rules
        rng = random.Random(str(kwargs))
        hands = []
        for broken in range(1, 13):
            for nil_seat, blind in ((0, (0, 0)), (2, (1, 0)), (1, (0, 1)), (3, (1, 1))):
                bids = [3, 3, 3, 3]
                side = nil_seat % 2
                bids[side], bids[side + 2] = 0, 0
                tricks = [0, 0, 0, 0]
                tricks[nil_seat] = broken
                others = [s for s in range(4) if s % 2 != side]
                tricks[others[0]] = 13 - broken
                flags = [0, 0, 0, 0]
                if rules.blind_nil:
                    flags[side], flags[side + 2] = blind
                low = rules.mercy_score + 10 if rules.mercy_score is not None else -200
                scores = [rng.randint(low, rules.target_score - 200) for _ in range(2)]
                bags = ([twins.bags_in_score(s) for s in scores] if rules.bags_from_score_digit else
                        [rng.randint(0, rules.bag_limit - 1) if rules.bags else 0 for _ in range(2)])
                hands.append({"bids": bids, "blind": flags, "tricks": tricks, "scores": scores, "bags": bags,
                              "leader": rng.randrange(4), "winner": others[0], "dealer": rng.randrange(4)})
        expected = [twins._reference(rules, h) for h in hands]
        points = torch.tensor([e["points"] for e in expected])
        for backend in ("torch", "native"):
            if backend == "native" and native.unavailable_reason() is not None:
                continue
            out = twins._play_last_card(kwargs, hands, backend)
            assert torch.equal(out["rewards"].to(torch.int64), points.repeat(1, 2)), (kwargs, backend)
        if native.unavailable_reason() is None:
            search_rules = rules_array(rules)
            for hand, e in zip(hands, expected):
                for side in range(2):
                    members = (side, side + 2)
                    got = native.search_side_points(search_rules, [hand["bids"][m] for m in members],
                                                    [hand["blind"][m] for m in members],
                                                    [hand["tricks"][m] for m in members],
                                                    hand["scores"][side], hand["bags"][side])
                    assert got == e["points"][side], (kwargs, hand, side)


def test_a_real_error_in_a_handler_is_still_logged_with_its_traceback(caplog):
    """Only disconnects are quiet: a bug still leaves its traceback in the log and a 400."""
    import asyncio
    from web.limits import BrowserGuard

    async def app(scope, receive, send):
        raise RuntimeError("a bug")

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/api/x", "headers": [(b"host", b"127.0.0.1")]}
    with caplog.at_level(logging.INFO):
        asyncio.run(BrowserGuard(app)(scope, receive, send))
    assert sent and sent[0]["status"] == 400
    assert any(record.exc_info for record in caplog.records)


def test_report_refuses_pieces_played_from_another_study_state(capsys, finished, monkeypatch):
    """--report plays nothing: a piece whose model, runs or deals changed is refused with why."""
    fake_lab(monkeypatch, [])
    evaluate(finished)
    config = finished.folder.parent / "study.yaml"
    assert coop_command(["study", "--config", str(config), "--report"]) == 0
    run = finished.runs()[1]
    (run.path / "model.pt").write_bytes(b"retrained")
    err = refused(capsys, coop_command, "study", "--config", str(config), "--report",
                  contains="not played from the study as it is now")
    assert "models replaced: " + run.name in err or "model.pt was replaced" in err
