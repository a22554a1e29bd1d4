"""spades-coop study (coop/study/study.py, coop_study_report.py): the configs are checked,
a killed study resumes to finished runs (a method that waits for another starts after it), and
the analysis computes self-play, cross-play and their gap paired by deal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from coop.study.study import StudyError, load_study
from coop.study.report import crossplay_analysis, hypotheses, report_markdown

ROOT = Path(__file__).resolve().parents[2]

TINY_TRAIN = {"threads": 1, "total_decisions": 256 * 6, "num_envs": 16, "rollout_steps": 16, "minibatch_size": 128,
              "opponents": {"self": 1.0}, "hidden": 16, "layers": 1, "head_hidden": 8, "epochs": 1,
              "imitation_decisions": 0, "eval_every": 0, "eval_opponents": ["random"], "eval_against_start": False,
              "final_eval_deals": 2, "checkpoint_every": 1, "keep_checkpoints": 2, "tensorboard": False,
              "progress": False}


def write_study(tmp_path: Path, **changes) -> Path:
    study = {"name": "tiny", "folder": str(tmp_path / "study"), "seeds": [1], "train": dict(TINY_TRAIN),
             "methods": {"selfplay": {},
                         "population": {"fields": {"partner_population": ["{runs}/selfplay_s*/checkpoints/update_*.pt"]},
                                        "after": ["selfplay"]}}}
    study.update(changes)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def test_the_shipped_study_configs_load():
    for name in ("coop_study.yaml", "coop_study_smoke.yaml", "coop_study_imitation.yaml"):
        study = load_study(ROOT / "configs" / name)
        assert {m.name for m in study.methods} == {"selfplay", "other_play", "population"}
    study = load_study(ROOT / "configs" / "coop_study.yaml")
    assert len(study.seeds) >= 5 and study.train["imitation_decisions"] == 0 and study.train["init_from"] is None
    population = next(r for r in study.runs() if r.method.name == "population").fields()["partner_population"]
    assert population[-1] == f"{study.runs_dir}/selfplay_s*/checkpoints/update_*.pt"
    for path in sorted((ROOT / "studies").glob("*/study.yaml")):      # committed studies: their exact configs
        study = load_study(path)
        assert {m.name for m in study.methods} == {"selfplay", "other_play", "population"}
        if "scratch" in path.parent.name:                             # from scratch: no imitation, no init_from
            for run in study.runs():
                fields = run.fields()
                assert fields["imitation_decisions"] == 0 and fields.get("init_from") is None
                assert (path.parent / "runs" / run.name / "model.pt").is_file()


@pytest.mark.parametrize("change, message", [
    ({"seeds": [1, 1]}, "expected a list of distinct integers"),
    ({"seeds": [10 ** 30]}, "expected a list of distinct integers from 0"),
    ({"colour": 3}, "unknown key 'colour'"),
    ({"train": {"name": "x"}}, "train.name is set by the study"),
    ({"train": {"other_play": "both"}}, "other_play='both'"),
    ({"methods": {"a": {"after": ["b"]}}}, "'b' is not another method"),
    ({"methods": {"a": {"after": ["b"]}, "b": {"after": ["c"]}, "c": {"after": ["a"]}, "d": {}}},
     "methods a, b, c wait for each other"),
    ({"evaluation": {"deals": 3}}, "evaluation: unknown key 'deals'"),
    ({"evaluation": {"held_out_partners": "bold"}}, "evaluation.held_out_partners='bold': expected a list"),
    ({"evaluation": {"held_out_partners": []}}, r"evaluation.held_out_partners=\[\]: expected a list"),
])
def test_bad_study_configs_are_refused_clearly(tmp_path, change, message):
    with pytest.raises(StudyError, match=message):
        load_study(write_study(tmp_path, **change))


def study_command(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "coop.cli", "study", "--config", str(config), "--stage", "train",
            "--jobs", "2", *extra]


def wait_until_the_run_is_gone(run: Path, seconds: float = 300.0) -> None:
    """Until no process holds the run folder's lock (train/ppo/run_lock.py): its run has ended."""
    import fcntl
    lock = run / ".lock"
    deadline = time.time() + seconds
    while lock.exists() and time.time() < deadline:
        try:
            with open(lock) as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return                                      # free: closing the file releases it
        except BlockingIOError:
            time.sleep(0.1)
        except FileNotFoundError:
            return
    assert time.time() < deadline, f"the killed run still holds {lock} after {seconds:.0f} s"


def test_a_killed_study_resumes_and_waits_for_the_methods_it_needs(tmp_path):
    # 30 updates of 4,096 decisions (a few seconds): the kill, as soon as a first checkpoint is
    # written, lands mid-run on a fast machine too (with 16-table updates an idle CI machine
    # finished the run between two polls)
    config = write_study(tmp_path, train={**TINY_TRAIN, "num_envs": 256, "minibatch_size": 1024,
                                          "total_decisions": 256 * 16 * 30})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(study_command(config), cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    checkpoints = tmp_path / "study" / "runs" / "selfplay_s1" / "checkpoints"
    deadline = time.time() + 600             # generous: under a load of 77 a start alone took minutes
    while not list(checkpoints.glob("update_*.pt")) and first.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert list(checkpoints.glob("update_*.pt")), first.communicate()[0]
    first.send_signal(signal.SIGKILL)                 # the run dies with it (no orphan keeps training)
    first.wait()
    # The run is killed by the kernel when the study dies, but on a loaded machine it may take a
    # while to go: wait until its run-folder lock is free, or --resume finds the folder busy.
    wait_until_the_run_is_gone(tmp_path / "study" / "runs" / "selfplay_s1")
    assert not (tmp_path / "study" / "runs" / "selfplay_s1" / "final_eval.json").exists()
    again = subprocess.run(study_command(config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2 and "--resume" in again.stderr    # a folder with runs needs --resume
    resumed = subprocess.run(study_command(config, "--resume"), cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=1200)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = resumed.stdout.splitlines()
    assert "train: selfplay_s1 resumed" in lines
    assert lines.index("train: population_s1 started") > next(i for i, x in enumerate(lines) if "selfplay_s1 done" in x)
    log = (tmp_path / "study" / "logs" / "selfplay_s1.log").read_text()
    assert "resumed from" in log
    for run in ("selfplay_s1", "population_s1"):
        assert (tmp_path / "study" / "runs" / run / "model.pt").is_file()
    done = subprocess.run(study_command(config, "--resume"), cwd=ROOT, env=env, capture_output=True, text=True)
    assert "all 2 runs are done" in done.stdout


def test_a_held_out_piece_played_on_another_zoo_is_played_again(tmp_path, monkeypatch):
    """A scenario piece whose suite hash is not the current suite's (the zoo changed since) is
    played again, journal and all; a current one is kept."""
    import json
    import coop.measures.scenarios as scenarios
    from coop.study import report as coop_study_report
    study = load_study(write_study(tmp_path))
    out = study.results_dir
    for run in study.runs():                                        # two finished runs
        run.path.mkdir(parents=True)
        (run.path / "model.pt").write_bytes(b"")
        (run.path / "final_eval.json").write_text("{}")
        (out / "signals").mkdir(parents=True, exist_ok=True)
        (out / "signals" / f"{run.name}.json").write_text("{}")
    (out / "crossplay.json").write_text("{}")
    (out / "league.json").write_text("{}")
    suite = coop_study_report.study_suite(study.evaluation["suite"])
    current = scenarios.suite_hash(scenarios.suite_definition(suite, study.evaluation["suite_deals"],
                                                              int(study.evaluation["seed"])))
    (out / "scenarios").mkdir()
    (out / "scenarios" / "selfplay_s1.json").write_text(json.dumps({"suite_hash": "an older zoo"}))
    (out / "scenarios" / "selfplay_s1.journal").write_text("stale")
    (out / "scenarios" / "population_s1.json").write_text(json.dumps({"suite_hash": current}))
    played = []

    def fake_run_suite(spec, suite, **kwargs):
        played.append(spec)
        assert not Path(kwargs["journal"]).exists()                 # the stale journal went with it
        return {"suite_hash": current}

    monkeypatch.setattr(scenarios, "run_suite", fake_run_suite)
    monkeypatch.setattr(coop_study_report, "analyse", lambda study: {})
    coop_study_report.evaluate_stage(study, workers=1, progress=False, log=lambda line: None)
    assert played == [next(r for r in study.runs() if r.name == "selfplay_s1").spec]
    assert json.loads((out / "scenarios" / "selfplay_s1.json").read_text())["suite_hash"] == current


def test_the_analysis_pairs_self_play_and_cross_play_by_deal():
    names = ["a_s1", "a_s2", "b_s1", "b_s2"]
    methods = {"a_s1": "a", "a_s2": "a", "b_s1": "b", "b_s2": "b"}
    # diffs[i][j][deal]: 10 with itself, 0 with the other seed of its method, 5 across methods; b
    # agents: 8 with themselves and with each other (no gap)
    diffs = [[[0.0, 0.0, 0.0] for _ in names] for _ in names]
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            same = methods[x] == methods[y]
            value = (10.0 if i == j else 0.0) if methods[x] == "a" and same else 8.0 if same else 5.0
            diffs[i][j] = [value + d for d in (-1.0, 0.0, 1.0)]
    cross = crossplay_analysis(names, methods, diffs)
    a, b = cross["within"]["a"], cross["within"]["b"]
    assert a["self_play"]["mean"] == 10.0 and a["cross_play"]["mean"] == 0.0 and a["gap"]["mean"] == 10.0
    assert a["gap"]["low"] == a["gap"]["high"] == 10.0                  # paired: the deal's luck cancels
    assert b["gap"]["mean"] == 0.0
    assert cross["between"]["a"]["b"]["mean"] == 5.0
    (h,) = hypotheses(cross, {"contrasts": []})
    assert h["mean"] == -5.0 and h["supported"]                        # gap(b) - 0.5 gap(a)
    summary = {"study": "t", "runs": names, "reference": "heuristic", "training_cpu_hours": 0.5,
               "crossplay": cross, "held_out": {"runs": {}}, "signals": {}, "hypotheses": [h]}
    for entry in cross["within"].values():
        entry.pop("per_deal_gap", None)
    text = report_markdown(summary)
    row = next(line for line in text.splitlines() if line.startswith("| a | 2 | +10.0 ["))
    assert row.endswith("| +10.0 [+10.0, +10.0] |")                    # the gap, exact on every deal


def test_held_out_scores_compare_the_best_seeds_paired_by_deal(tmp_path):
    import json

    from coop.study.report import held_out_analysis
    study = load_study(write_study(tmp_path, seeds=[1, 2]))
    per_deal = {"selfplay_s1": [1.0, 2.0, 3.0], "selfplay_s2": [0.0, 0.0, 0.0],
                "population_s1": [2.0, 3.0, 4.0], "population_s2": [5.0, 1.0, 0.0]}
    (study.results_dir / "scenarios").mkdir(parents=True)
    for name, values in per_deal.items():
        beside = {"bold": values[0], "cautious": values[1]}          # the scores beside two partners
        scenario = {"score": sum(values) / 3, "low": None, "high": None, "normalised": 0.5, "per_deal": values,
                    "partners": [{"partner": p, "score": s, "copy": -9.0} for p, s in beside.items()]}
        (study.results_dir / "scenarios" / f"{name}.json").write_text(json.dumps({"scenarios": [scenario]}))
    methods = {name: name.split("_")[0] for name in per_deal}
    held = held_out_analysis(study, list(per_deal), methods)
    assert held["methods"]["selfplay"]["best"] == 2.0 and held["methods"]["population"]["score"] == 2.5
    (contrast,) = held["contrasts"]
    assert contrast["contrast"] == "held-out(population_s1) - held-out(selfplay_s1)"
    assert contrast["mean"] == contrast["low"] == contrast["high"] == 1.0 and contrast["supported"]
    assert held["partners"] == {"bold": {"copy": -9.0, "selfplay": 0.5, "population": 3.5},
                                "cautious": {"copy": -9.0, "selfplay": 1.0, "population": 2.0}}
    assert "| bold | -9.0 | +0.5 | +3.5 |" in report_markdown(
        {"study": "t", "runs": [], "reference": "heuristic", "training_cpu_hours": 0.0,
         "crossplay": {"methods": [], "within": {}, "between": {}, "deals": 3}, "held_out": held, "signals": {},
         "hypotheses": []})


def test_the_report_carries_intervals_for_every_normalised_score_rating_and_signal(tmp_path):
    """Issue 48: each run's normalised held-out score with its bootstrap interval, each method's
    over its seeds, the hand-based bits and the listening KL, the cooperative rating and the Nash
    averages, each with its interval; run names, not specs, in the rating."""
    import json

    from coop.study.report import _named_rating, held_out_analysis
    study = load_study(write_study(tmp_path, seeds=[1, 2]))
    (study.results_dir / "scenarios").mkdir(parents=True)
    normalised = {"selfplay_s1": 0.80, "selfplay_s2": 0.90}
    for name, value in normalised.items():
        scenario = {"score": -3.0, "low": -5.0, "high": -1.0, "normalised": value, "normalised_low": value - 0.1,
                    "normalised_high": value + 0.05, "per_deal": [-3.0, -3.0], "partners": []}
        (study.results_dir / "scenarios" / f"{name}.json").write_text(json.dumps({"scenarios": [scenario]}))
    held = held_out_analysis(study, list(normalised), {n: "selfplay" for n in normalised})
    assert held["methods"]["selfplay"]["normalised_seeds"]["mean"] == pytest.approx(0.85)
    value = lambda v, lo, hi: {"value": v, "low": lo, "high": hi}       # noqa: E731
    specs = {r.spec: r.name for r in study.runs()}
    spec1, spec2 = list(specs)[:2]
    rating = {"mean": -4.0, "mean_low": -6.0, "mean_high": -2.0, "interval": "bootstrap", "agents": [spec1, spec2],
              "ratings": [{"agent": spec1, "best_fit": spec2, **{f"{k}{end}": v for k in
                                                                  ("skill", "partner_score", "self_play_bonus")
                                                                  for end, v in (("", 1.0), ("_low", 0.5),
                                                                                 ("_high", 1.5))}}]}
    summary = {"study": "t", "runs": list(normalised), "reference": "heuristic", "training_cpu_hours": 0.0,
               "crossplay": {"methods": [], "within": {}, "between": {}, "deals": 2}, "held_out": held,
               "signals": {"selfplay_s1": {"method": "selfplay", "bid_information_hand": value(0.91, 0.85, 0.97),
                                           "bid_information": value(0.5, 0.4, 0.6), "listening": value(0.1, 0.05, 0.2),
                                           "listening_kl": value(0.02, 0.01, 0.03), "nil_cover": value(0.5, 0.3, 0.7)}},
               "cooperative_rating": _named_rating(rating, specs),
               "league": {"ratings": [{"agent": "selfplay_s1", "rating": 10.0, "low": 0.0, "high": 20.0}],
                          "nash": [{"agent": "selfplay_s1", "nash_average": 1.5, "low": 0.5, "high": 2.5}]},
               "hypotheses": []}
    text = report_markdown(summary)
    assert "| selfplay_s1 | selfplay | -3.0 [-5.0, -1.0] | 0.80 [0.70, 0.85] |" in text
    assert "| selfplay | -3.0 [-3.0, -3.0] | -3.0 | 0.85 [" in text
    assert "| selfplay_s1 | selfplay | 0.910 [0.850, 0.970] | 0.500 [0.400, 0.600] | 0.100 [0.050, 0.200] | " \
           "0.020 [0.010, 0.030] | 0.500 [0.300, 0.700] |" in text
    assert f"| {specs[spec1]} | +1.0 [+0.5, +1.5] | +1.0 [+0.5, +1.5] | +1.0 [+0.5, +1.5] | {specs[spec2]} |" in text
    assert "| selfplay_s1 | +10 [+0, +20] | +1.5 [+0.5, +2.5] |" in text


def test_a_study_folder_measured_elsewhere_names_its_rating_by_run(tmp_path):
    """A study's results keep the specs they were played with (checkpoint paths under the folder
    of that day); moved to another folder (as the committed studies are) and analysed again, the
    cooperative rating still names runs, not the old paths (it printed the old paths)."""
    import json

    from coop.study.report import analyse
    study = load_study(write_study(tmp_path, seeds=[1, 2]))
    names = [r.name for r in study.runs()]
    old = [f"neural:checkpoint=runs/elsewhere/runs/{n}/model.pt" for n in names]
    assert not set(old) & {r.spec for r in study.runs()}
    n = len(names)
    bound = lambda key, v: {key: v, f"{key}_low": v - 1.0, f"{key}_high": v + 1.0}     # noqa: E731
    rating = {"mean": -4.0, "mean_low": -6.0, "mean_high": -2.0, "interval": "bootstrap", "agents": old,
              "ratings": [{"agent": a, "best_fit": old[(i + 1) % n], **bound("skill", 0.5 * i),
                           **bound("partner_score", -4.0), **bound("self_play_bonus", 0.0)}
                          for i, a in enumerate(old)]}
    piece = {"runs": names, "agents": old, "reference": "heuristic",
             "unit_diffs": [[[float(i - j), 1.0, -1.0] for j in range(n)] for i in range(n)],
             "score_diff": [[float(i - j) for j in range(n)] for i in range(n)], "cooperative_rating": rating}
    study.results_dir.mkdir(parents=True)
    (study.results_dir / "crossplay.json").write_text(json.dumps(piece))
    named = analyse(study)["cooperative_rating"]
    assert named["agents"] == names
    assert [r["agent"] for r in named["ratings"]] == names
    assert [r["best_fit"] for r in named["ratings"]] == names[1:] + names[:1]


def test_a_study_under_other_rules_plays_them_beside_its_own_held_out_partners():
    """The train rules reach every measurement, and held_out_partners replace the zoo's held-out
    split in the held-out scenario; a standard study's suite and inputs are as before."""
    from coop.study.report import study_suite
    standard = study_suite("held-out")
    assert standard.scenarios[0].rules == "standard"
    changed = study_suite("held-out", "short_signals", ["low-asks", "bold"])
    assert changed.scenarios[0].rules == "short_signals" and changed.scenarios[0].partners == ("low-asks", "bold")
    assert changed.scenarios[0].focal_seats == standard.scenarios[0].focal_seats
    assert study_suite("held-out", "standard", None) == standard
