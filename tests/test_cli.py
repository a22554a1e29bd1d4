"""Smoke tests of the command-line entry points (tiny workloads; the figures are not checked)."""

import json
import os
import sys
from pathlib import Path

import pytest

from tools import bench
from tools import demo


def test_bench_runs_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--decisions", "3000", "--repeats", "1", "--batch-sizes", "1,8",
                       "--vector-seconds", "0.05", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "spades_v0.raw_env" in printed and "spades_v0.env (wrapped)" in printed
    assert "Batched engine" in printed
    data = json.loads(out.read_text())
    assert data["results"]["spades_v0.raw_env"]["decisions"] >= 3000
    assert data["results"]["spades_v0.raw_env"]["decisions_per_s"] > 0
    # the torch step, then (by default, where a C compiler is found) the C step
    assert [(row["batch_size"], row["backend"]) for row in data["vector"]] == [
        (1, "torch"), (8, "torch"), (1, "native"), (8, "native")]
    assert all(row["decisions_per_s"] > 0 for row in data["vector"])
    assert data["vector_device"] == "cpu" and data["torch"]                 # what the figures ran on


def test_bench_rejects_bad_arguments(capsys):
    import pytest
    with pytest.raises(SystemExit):
        bench.main(["--decisions", "0"])
    with pytest.raises(SystemExit):
        bench.main(["--batch-sizes", "4,x"])
    with pytest.raises(SystemExit):
        bench.main(["--processes", "0"])
    with pytest.raises(SystemExit):
        bench.main(["--no-aec", "--threads", "0"])
    with pytest.raises(SystemExit):
        bench.main(["--no-aec", "--device", "gpu"])
    assert "--device: device='gpu': not a torch device" in capsys.readouterr().err


def test_bench_measures_the_heuristic(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--no-aec", "--no-vector", "--heuristic", "--heuristic-batch-sizes", "8,300",
                       "--vector-seconds", "0.05", "--json", str(out)]) == 0
    assert "act_batch decisions/s" in capsys.readouterr().out
    rows = json.loads(out.read_text())["heuristic"]
    assert [row["batch_size"] for row in rows] == [8, 300]
    assert all(row["decisions_per_s"] > 0 and row["row_by_row_decisions_per_s"] > 0 for row in rows)
    import pytest
    with pytest.raises(SystemExit):
        bench.main(["--no-aec", "--no-vector", "--heuristic", "--heuristic-batch-sizes", "8,x"])


def test_bench_other_rules():
    results = bench.run_benchmarks(decisions=2000, rules="cutthroat", repeats=1, openspiel=False,
                                   progress=lambda line: None)
    assert set(results) == {"spades_v0.raw_env", "spades_v0.env (wrapped)"}


def test_bench_vector_only():
    row = bench.run_vector(16, seconds=0.05, rules="tournament")
    assert row["batch_size"] == 16 and row["steps"] > 0 and not row["compiled"]


def test_bench_native_backend(tmp_path, capsys):
    row = bench.run_vector(64, seconds=0.05, backend="native")
    assert row["backend"] == "native" and row["steps"] > 0
    out = tmp_path / "native.json"
    assert bench.main(["--no-aec", "--native", "--batch-sizes", "16", "--vector-seconds", "0.05",
                       "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "native" in printed
    rows = json.loads(out.read_text())["vector"]
    assert [r["backend"] for r in rows] == ["torch", "native"]
    with pytest.raises(SystemExit):
        bench.main(["--no-aec", "--native", "--device", "cuda"])
    with pytest.raises(SystemExit):
        bench.main(["--no-aec", "--native", "--no-native"])


def test_bench_skips_the_c_step_without_a_compiler(tmp_path, capsys, monkeypatch):
    """By default the bench adds the C step where it can be built; without a compiler it says why
    and measures the torch step alone (with --native that is an error)."""
    monkeypatch.setenv("CC", "no-such-compiler-here")
    monkeypatch.setenv("SPADES_NATIVE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "bench.json"
    assert bench.main(["--no-aec", "--batch-sizes", "4", "--vector-seconds", "0.05", "--json", str(out)]) == 0
    assert "the C step is skipped: backend='native' needs a C compiler" in capsys.readouterr().out
    assert [row["backend"] for row in json.loads(out.read_text())["vector"]] == ["torch"]


def test_bench_and_demo_refuse_before_they_measure(tmp_path, capsys):
    """A --json into a missing folder used to fail after the whole measurement, a negative
    --hands deep in the env: both are one line and exit 2 before anything runs."""
    with pytest.raises(SystemExit) as stop:
        bench.main(["--json", str(tmp_path / "missing" / "out.json")])
    assert stop.value.code == 2
    assert "--json" in capsys.readouterr().err and not (tmp_path / "missing").exists()
    for hands in ("-3", str(10 ** 12)):
        with pytest.raises(SystemExit) as stop:
            demo.main(["--hands", hands])
        assert stop.value.code == 2 and capsys.readouterr().err == (
            f"spades-demo: error: --hands {hands}: expected 0 (the whole game) or a number of hands 1..1000 "
            "(see spades-demo --help)\n")


def test_demo_plays_a_rendered_game(capsys):
    assert demo.main(["--no-bench", "--hands", "2", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "Hand 1 scored" in printed and "Game over" in printed
    assert "North (0)" in printed and "bid" in printed


def test_bench_vector_processes_sum_their_engines(tmp_path):
    out = tmp_path / "bench.json"
    assert bench.main(["--no-aec", "--no-native", "--batch-sizes", "8", "--vector-seconds", "0.2", "--processes",
                       "2", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["vector"][0]
    assert row["processes"] == 2 and row["threads_per_process"] == 1
    assert len(row["per_process_decisions_per_s"]) == 2
    # the sum over the longest measured time: at most the sum of the processes' own rates
    assert 0 < row["decisions_per_s"] <= sum(row["per_process_decisions_per_s"]) * 1.0001


def test_bench_vector_processes_report_a_failing_engine():
    import pytest
    with pytest.raises(RuntimeError, match="process .* failed: .*cutthroat"):
        bench.run_vector_processes(2, 8, seconds=0.1, rules="cutthroat")
    with pytest.raises(ValueError, match="processes and threads"):
        bench.run_vector_processes(0, 8)


def test_bench_vector_processes_report_a_process_that_dies_silently():
    """A process killed without a word (as the kernel's OOM killer would) ends the measurement with
    an error naming it, instead of leaving the others waiting at the start barrier for ever."""
    import multiprocessing
    import os
    import signal
    import threading
    import time

    import pytest

    def kill_one_worker():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            children = multiprocessing.active_children()
            if len(children) == 2:
                os.kill(children[0].pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"ended without a result \(exit codes \[-9\]\)"):
        bench.run_vector_processes(2, 8, seconds=30.0)
    killer.join()
    assert time.monotonic() - start < 30                  # detected, not waited out
    assert not multiprocessing.active_children()          # the other process was ended too


@pytest.mark.parametrize("command", [["spades-bench", "--rules", "nope"], ["spades-demo", "--rules", "cutthroatt"]])
def test_an_unknown_rules_preset_is_one_line_and_exit_2(command):
    import subprocess
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "unknown rules preset" in done.stderr


def _children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (from /proc)."""
    import os
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _slow_match():
    import subprocess
    import time
    process = subprocess.Popen(["spades-eval", "--team-a", "search:backend=python", "--team-b", "heuristic",
                                "--deals", "400", "--workers", "2", "--quiet"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(1200):                     # until both workers run (up to 2 minutes on a loaded machine)
        time.sleep(0.1)
        workers = [p for p in _children(process.pid) if _alive(p)]
        if len(workers) >= 2:
            return process, workers
    process.kill()
    pytest.fail("the workers did not start")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_eval_workers_die_with_their_parent(how):
    import signal
    import time
    process, workers = _slow_match()
    process.send_signal(getattr(signal, how))
    _, err = process.communicate(timeout=60)
    if how != "SIGKILL":
        assert process.returncode == 130
        assert "Traceback" not in err and "interrupted" in err
    deadline = time.time() + 20
    while time.time() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.2)
    assert not any(_alive(p) for p in workers), "orphaned workers"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_worker_is_one_line_not_a_traceback():
    import signal
    process, workers = _slow_match()
    import os
    os.kill(workers[0], signal.SIGKILL)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2
    assert "Traceback" not in err and "worker process died" in err


def test_bench_search_reports_every_player_native_beside_python(tmp_path, capsys):
    """spades-bench --search on a tiny budget: the heuristic's, the search's and the labels' rows."""
    import json as _json
    from tools.bench_players import run_players
    lines = []
    # games=3: the third starts behind (0 to -190), inside the standard rules' mercy score
    results = run_players(games=3, search_decisions=2, label_deals=2, python_label_deals=1, log=lines.append)
    assert set(results["heuristic"]) >= {"python_act", "native_act", "native_batch", "positions"}
    assert results["search_ms"]["decisions"] == 2 and all(v > 0 for v in results["search_ms"].values())
    assert len(results["labels_per_s"]) == 3 and all(v > 0 for v in results["labels_per_s"].values())
    report = lines[-1]
    for row in ("python act", "native act_batch", "native, the same budget", "playout (native)"):
        assert row in report
    _json.dumps(results)                      # what --json writes


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _has_mapped(pid: int, needle: str) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


# The moments a Ctrl-C arrives, each found by what the process has loaded (its /proc/PID/maps),
# not by how long it has run, so that a slow or loaded machine meets the same moments:
# "imports": the first library of the command's imports is mapped (the interpreter's own start-up
# is over, and nothing of the command has run: this is as early as a Python program can answer);
# "torch": torch's library is being loaded (where spades-train died with a traceback on 2 busy
# cores); "work": two seconds after torch came, when the command is at its work on any machine
# (or still importing, on a very slow one: either way it must end the same).
MOMENTS = {"imports": "site-packages/", "torch": "libtorch"}


def _interrupt(command: list[str], moment: str, tmp_path: Path) -> tuple[int, str]:
    import signal
    import subprocess
    import time
    root = Path(__file__).resolve().parents[1]
    # Ctrl-C's default action, even when the suite itself was started in the background (a shell
    # starts background jobs with SIGINT ignored, and a child inherits that: Python would then
    # never raise KeyboardInterrupt and the command would run on)
    process = subprocess.Popen([part.replace("{tmp}", str(tmp_path)).replace("{port}", str(_free_port()))
                                for part in command], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    needle = MOMENTS["torch" if moment == "work" else moment]
    deadline = time.monotonic() + 120
    while not _has_mapped(process.pid, needle) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    if moment == "work":
        time.sleep(2)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def _assert_one_interrupted_line(returncode: int, err: str, prog: str) -> None:
    assert returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines() and \
        err.strip().splitlines()[-1].startswith(f"{prog}: interrupted"), err


COMMANDS = {        # every console script of pyproject.toml, each with work that lasts
    "spades-bench": ["spades-bench", "--decisions", "100000000", "--no-openspiel", "--no-vector"],
    "spades-coop": ["spades-coop", "signals", "heuristic", "--deals", "100000", "--workers", "1"],
    "spades-demo": ["spades-demo", "--hands", "0"],
    "spades-eval": ["spades-eval", "--team-a", "heuristic", "--team-b", "heuristic", "--deals", "100000",
                    "--workers", "1", "--quiet"],
    "spades-label": ["spades-label", "--teacher", "search:backend=python", "--deals", "400", "--workers", "1",
                     "--no-progress", "--out", "{tmp}/labels"],
    "spades-league": ["spades-league", "heuristic", "random", "--deals", "100000", "--workers", "1"],
    "spades-play": ["spades-play"],
    "spades-train": ["spades-train", "--config", "configs/quickstart.yaml", "--set", "run_dir={tmp}", "--set",
                     "progress=false", "--set", "tensorboard=false"],
    "spades-web": ["spades-web", "--no-browser", "--port", "{port}"],
}
TORCH_AT_START = ["spades-coop", "spades-eval", "spades-label", "spades-league", "spades-play", "spades-train"]
# (spades-bench and spades-demo load torch only later, if at all; spades-web not to serve, and
# Ctrl-C is how a person stops the server once it serves: status 0)
PYTHON_M = ["train.ppo", "train.ppo.trainer", "train.bid_tilt", "train.bids.bid_tilt", "train.game_bid_values",
            "train.bids.game_bid_values", "train.label", "train.labelling.cli", "train.export",
            "train.labelling.export", "train.probes", "train.experimental.probes", "train.learning_curve",
            "train.experimental.learning_curve"]       # (train.recipes.ship imports no library: nothing to wait for)


def test_every_console_script_goes_through_the_interrupt_handler_to_a_command_that_exists():
    """Each script of pyproject.toml is a tools.entry launcher (Ctrl-C handled before the heavy
    imports), whose ``module:function`` exists (a module moved without its entry fails here), and
    each is tested below."""
    import importlib
    import tomllib
    from tools import entry
    scripts = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]["scripts"]
    assert sorted(scripts) == sorted(COMMANDS) == sorted(entry.COMMANDS)
    for script, target in scripts.items():
        module, function = target.split(":")
        assert module == "tools.entry" and callable(getattr(entry, function)), script
        module, function = entry.COMMANDS[script].split(":")
        assert callable(getattr(importlib.import_module(module), function)), entry.COMMANDS[script]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("moment, prog", [("imports", p) for p in COMMANDS] + [("torch", p) for p in TORCH_AT_START])
def test_ctrl_c_while_a_command_starts_ends_it_with_one_line(moment, prog, tmp_path):
    """SIGINT (Ctrl-C) while the command is still importing: status 130 and one line, no traceback
    (spades-train used to die mid-import of torch with a KeyboardInterrupt traceback and -2)."""
    returncode, err = _interrupt(COMMANDS[prog], moment, tmp_path)
    _assert_one_interrupted_line(returncode, err, prog)
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("module", PYTHON_M)
def test_ctrl_c_while_a_python_m_module_starts_ends_it_with_one_line(module, tmp_path):
    returncode, err = _interrupt([sys.executable, "-m", module, "--help"], "imports", tmp_path)
    _assert_one_interrupted_line(returncode, err, f"python -m {module}")
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("prog", ["spades-bench", "spades-label", "spades-train"])
def test_ctrl_c_ends_a_command_with_one_line(prog, tmp_path):
    """SIGINT (Ctrl-C) at the command's work: status 130 and one line on stderr, no traceback."""
    command = COMMANDS[prog]
    if prog == "spades-bench":          # the bench loads torch for its batched part only
        command = [part for part in command if part != "--no-vector"]
    returncode, err = _interrupt(command, "work", tmp_path)
    _assert_one_interrupted_line(returncode, err, prog)


# Issue 75: half-checked command lines, each refused in one line (exit 2) before any work.
def _one_line_refusal(run, capsys) -> str:
    """Run ``run()`` (a command's main); its exit status 2 and the one line it wrote to stderr."""
    try:
        status = run()
    except SystemExit as stop:          # argparse's one-line parser errors exit
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, (status, err)
    return err


def test_a_rule_set_whose_games_need_not_end_is_refused_by_eval_and_demo(tmp_path, capsys):
    """target 1,000,000 and no mercy score ran spades-eval --games 1 and spades-demo forever."""
    from evaluation import main as spades_eval
    forever = tmp_path / "forever.yaml"
    forever.write_text("target_score: 1000000\nmercy_score: null\n")
    expected = ("rule target_score=1000000 is invalid: expected at most 10,000 points (GAME_SPAN_LIMIT) under "
                "mercy_score: null, or max_hands set, so that every game ends")
    err = _one_line_refusal(lambda: spades_eval(["--team-a", "random", "--team-b", "random", "--games", "1",
                                                 "--rules", str(forever), "--quiet"]), capsys)
    assert err == f"spades-eval: error: {expected}\n"
    err = _one_line_refusal(lambda: demo.main(["--rules", str(forever), "--no-bench"]), capsys)
    assert err == f"spades-demo: error: --rules: {expected}\n"
    forever.write_text("target_score: 1000000\n")
    err = _one_line_refusal(lambda: demo.main(["--rules", str(forever), "--no-bench"]), capsys)
    assert "rule target_score=1000000 is invalid: expected at most 10,000 points above mercy_score (-200)" in err


@pytest.mark.parametrize("argv, message", [
    (["--decisions", str(10 ** 15)], "--decisions 1000000000000000: expected 1..100,000,000 decisions per run"),
    (["--vector-seconds", "nan"], "--vector-seconds nan: expected a number of seconds above 0 and at most 600"),
    (["--vector-seconds", "inf"], "--vector-seconds inf: expected a number of seconds above 0"),
    (["--processes", "1000000"], "--processes 1000000: expected 1.."),
    (["--batch-sizes", str(10 ** 9)], "--batch-sizes 1000000000: expected batch sizes 1..65,536 separated by commas"),
    (["--heuristic-batch-sizes", "64,0"], "--heuristic-batch-sizes 64,0: expected batch sizes 1..65,536"),
    (["--repeats", "0"], "--repeats 0: expected 1..100 runs"),
    (["--threads", "100000"], "--threads 100000: expected 1..256"),
])
def test_bench_numbers_are_bounded_before_anything_is_measured(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(bench, "run_benchmarks", lambda *a, **k: pytest.fail("measured before the check"))
    assert message in _one_line_refusal(lambda: bench.main(argv), capsys)


@pytest.mark.parametrize("argv", [["--tilt", "nan"], ["--tilt", "inf"], ["--tilt", "1", "--partner-bid-tilt", "nan"],
                                  ["--tilt", "1", "--their-nil-tilt=-inf"], ["--tilt", "1", "--bags-tilt", "7:nan"],
                                  ["--tilt", "1", "--lead-tilt", "100:inf"], ["--tilt", "11"]])
def test_probe_tilts_must_be_finite(argv, capsys):
    from train.experimental import probes
    err = _one_line_refusal(lambda: probes.main(["bid-tilt", *argv]), capsys)
    assert "expected a finite tilt from -10 to 10" in err


def test_the_human_agent_is_refused_where_nobody_is_asked(tmp_path, capsys):
    """`spades-coop signals human` and `spades-label --teacher human` waited on the terminal and
    ended in a QuitGame traceback; every automated match refuses it by name."""
    from coop.cli import main as coop_main
    from evaluation import main as spades_eval
    from train.labelling.cli import main as label_main
    matched = "agent 'human' asks a person for every move, and a match plays by itself"
    assert matched in _one_line_refusal(lambda: coop_main(["signals", "human", "--deals", "4"]), capsys)
    assert matched in _one_line_refusal(lambda: spades_eval(["--team-a", "human", "--team-b", "random",
                                                             "--deals", "2", "--quiet"]), capsys)
    for flag in ("--teacher", "--opponents"):
        err = _one_line_refusal(lambda: label_main(["--teacher", "heuristic", flag, "human", "--deals", "4",
                                                    "--out", str(tmp_path / "labels"), "--no-progress"]), capsys)
        assert "'human': the human agent asks a person for every move" in err
    assert not (tmp_path / "labels").exists()


def test_a_model_for_other_observations_is_refused_naming_both_widths(tmp_path, capsys):
    from agents.networks import PolicyNet
    from agents.neural import ModelError, NeuralAgent, save_model
    from evaluation import main as spades_eval
    path = save_model(PolicyNet(100, hidden=8, layers=1, head_hidden=8), tmp_path / "wide100.pt", "standard", {})
    err = _one_line_refusal(lambda: spades_eval(["--team-a", f"neural:checkpoint={path}", "--team-b", "random",
                                                 "--deals", "2", "--quiet"]), capsys)
    assert "its model reads observations 100 wide, and the standard rules give observations 742 wide" in err
    with pytest.raises(ModelError, match=r"this model expects \(100,\)"):      # the agent itself, in play
        NeuralAgent(checkpoint=path).act({"observation": [0.0] * 742, "action_mask": [1] * 68})


DROPS_ITS_CTRL_C = '''
import signal, sys, time, weakref

class Thing:
    pass

def main():
    def callback(_ref):                 # Ctrl-C arriving inside a weakref callback, as one did
        signal.raise_signal(signal.SIGINT)      # in an import's module-lock callback on CI
        sum(range(1000))                # (the handler runs here: Python drops what it raises)
    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
    print("dropped", flush=True)
    for _ in range(300):                # would run on for 30 s if the interrupt stayed lost
        time.sleep(0.1)
    return 0
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals as on Linux")
def test_a_ctrl_c_python_had_to_drop_still_ends_the_command(tmp_path):
    """A KeyboardInterrupt raised inside a weakref callback is dropped by Python ("Exception ignored
    in ..."); launch hands it back to the main thread: one line, status 130, in well under 30 s."""
    import signal
    import subprocess
    import time
    (tmp_path / "drops_its_ctrl_c.py").write_text(DROPS_ITS_CTRL_C)
    root = Path(__file__).resolve().parents[1]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from train.interrupt import launch; "
         "sys.exit(launch('drops', 'drops_its_ctrl_c:main'))"],
        cwd=root, env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}"}, capture_output=True,
        text=True, timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.stdout == "dropped\n", done
    assert done.returncode == 130 and done.stderr == "drops: interrupted\n", done
    assert time.monotonic() - started < 20


def test_a_second_launch_in_one_process_does_not_wrap_the_interrupt_hook_again():
    from train.interrupt import _redeliver_dropped_interrupts
    once = _redeliver_dropped_interrupts(sys.__unraisablehook__)
    assert once is not sys.__unraisablehook__ and _redeliver_dropped_interrupts(once) is once
