"""Smoke tests of the command-line entry points (tiny workloads; the figures are not checked)."""

import json

import sys
from pathlib import Path

import pytest

from train import bench, demo


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
    with pytest.raises(SystemExit) as stop:
        demo.main(["--hands", "-3"])
    assert stop.value.code == 2 and "--hands must be 0" in capsys.readouterr().err


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
    for _ in range(300):                      # until both workers run
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
    from train.bench_players import run_players
    lines = []
    results = run_players(games=1, search_decisions=2, label_deals=2, python_label_deals=1, log=lines.append)
    assert set(results["heuristic"]) >= {"python_act", "native_act", "native_batch", "positions"}
    assert results["search_ms"]["decisions"] == 2 and all(v > 0 for v in results["search_ms"].values())
    assert len(results["labels_per_s"]) == 3 and all(v > 0 for v in results["labels_per_s"].values())
    report = lines[-1]
    for row in ("python act", "native act_batch", "native, the same budget", "playout (native)"):
        assert row in report
    _json.dumps(results)                      # what --json writes


@pytest.mark.parametrize("command, prog", [
    (["spades-bench", "--decisions", "100000000", "--no-openspiel", "--no-vector"], "spades-bench"),
    (["spades-label", "--teacher", "search:backend=python", "--deals", "400", "--workers", "1",
      "--no-progress", "--out", "{tmp}/labels"], "spades-label"),
    (["spades-train", "--config", "configs/quickstart.yaml", "--set", "run_dir={tmp}", "--set", "progress=false",
      "--set", "tensorboard=false"], "spades-train"),
])
def test_ctrl_c_ends_a_command_with_one_line(command, prog, tmp_path):
    """SIGINT (Ctrl-C) mid-run: status 130 and one line on stderr, no traceback."""
    import signal
    import subprocess
    import time
    root = Path(__file__).resolve().parents[1]
    # Ctrl-C's default action, even when the suite itself was started in the background (a shell
    # starts background jobs with SIGINT ignored, and a child inherits that: Python would then
    # never raise KeyboardInterrupt and the command would run on)
    process = subprocess.Popen([part.replace("{tmp}", str(tmp_path)) for part in command], cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(6)                        # well into the work (imports and start-up take 1-3 s)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and f"{prog}: interrupted" in err
