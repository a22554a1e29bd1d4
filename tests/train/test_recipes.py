"""spades-train --recipe (train/recipes/): the dry run, reuse, resume after a kill, --from, refusals,
and the shipped lineage's recipes (configs/recipes/)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents import model_manifest
from train.recipes import kinds as recipe_kinds
from train.recipes.kinds import StepKind
from train.recipes.recipe import RecipeError, load_recipe
from train.recipes.runner import run_recipe

ROOT = Path(__file__).resolve().parents[2]
NEURAL_RECIPE = ROOT / "configs" / "recipes" / "neural.yaml"
BEAT_HEURISTIC = ROOT / "configs" / "recipes" / "beat_heuristic.yaml"
EXPERT_LOOP = ROOT / "configs" / "recipes" / "expert_loop.yaml"

# A step that runs in a blink: it writes its text and the bytes of what it reads into model.pt,
# logs each run in runs.log beside the recipe's run folder, and, when told to, dies half-way
# (its partial file left behind) by killing the runner that started it, as a kill -9 would.
WRITE_SCRIPT = r"""
import os, signal, sys
from pathlib import Path
folder, text, die, *inputs = sys.argv[1:]
folder = Path(folder); folder.mkdir(parents=True, exist_ok=True)
partial = folder / "partial"
log = folder.parent / "runs.log"
with open(log, "a") as handle:
    handle.write(f"{folder.name} {'resumed' if partial.exists() else 'fresh'}\n")
if die == "yes" and not partial.exists():
    partial.write_text("half")
    os.kill(os.getppid(), signal.SIGKILL)
    sys.exit(1)
body = text + "|" + "|".join(Path(p).read_bytes()[:12].hex() for p in inputs)
(folder / "model.pt").write_text(body)
"""


def _write_build(step, inputs, folder, resume):
    paths = [str(p) for refs in inputs.values() for p in refs]
    return [WRITE_SCRIPT, str(folder), str(step.config.get("text", "")), "yes" if step.config.get("die") else "no", *paths]


WRITE_KIND = StepKind("write", ("python", "-c"), {"model": "model.pt"}, _write_build, resumable=True,
                      input_parameters=frozenset({"source", "more"}), flags=frozenset({"text", "die"}))


@pytest.fixture
def write_kind(monkeypatch):
    monkeypatch.setitem(recipe_kinds.KINDS, "write", WRITE_KIND)


def write_recipe(folder: Path, steps: str, name: str = "tiny") -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\nrun_dir: {folder / 'run'}\nsteps:\n{steps}")
    return path


CHAIN = """\
  first:
    kind: write
    config: {text: one}
  second:
    kind: write
    config: {text: two}
    inputs: {source: first}
  third:
    kind: write
    config: {text: three}
    inputs: {source: second, more: [first]}
"""


def runs_log(folder: Path) -> list[str]:
    log = folder / "run" / "runs.log"
    return log.read_text().splitlines() if log.exists() else []


def run_quietly(path, *flags, starts=()):
    lines = []
    code = run_recipe(path, dry_run="--dry-run" in flags, starts=list(starts), log=lines.append)
    return code, lines


# -------------------------------------------------------------------------- dry run and reuse

def test_the_dry_run_lists_every_command_and_runs_nothing(tmp_path, write_kind):
    path = write_recipe(tmp_path, CHAIN)
    code, lines = run_quietly(path, "--dry-run")
    assert code == 0
    assert [line.split()[1] for line in lines[1:4]] == ["first", "second", "third"]
    assert all("[run]" in line for line in lines[1:4])
    assert str(tmp_path / "run" / "first" / "model.pt") in lines[2]        # the input is the step's output
    assert lines[-1] == "would run 3"
    assert runs_log(tmp_path) == [] and not (tmp_path / "run" / "state.json").exists()


def test_a_rerun_reuses_what_is_unchanged_and_reruns_what_changed(tmp_path, write_kind):
    path = write_recipe(tmp_path, CHAIN)
    assert run_quietly(path)[0] == 0
    assert runs_log(tmp_path) == ["first fresh", "second fresh", "third fresh"]
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    recorded = state["steps"]["third"]["outputs"]["model"]["sha256"]
    assert recorded == model_manifest.file_sha256(tmp_path / "run" / "third" / "model.pt")
    code, lines = run_quietly(path, "--dry-run")
    assert all("[reuse]" in line for line in lines[1:4]) and lines[-1] == "would reuse 3"
    assert run_quietly(path)[0] == 0 and len(runs_log(tmp_path)) == 3             # nothing ran again

    path.write_text(path.read_text().replace("{text: two}", "{text: TWO}"))      # a config changed
    assert run_quietly(path)[0] == 0
    assert runs_log(tmp_path)[3:] == ["second fresh", "third fresh"]              # it and what reads it
    assert (tmp_path / "run" / "third" / "model.pt").read_text().startswith("three|")

    (tmp_path / "run" / "first" / "model.pt").write_text("tampered")              # an output changed
    _, lines = run_quietly(path, "--dry-run")
    assert "[run]" in lines[1] and "outputs changed" in lines[1]
    assert "after the steps it reads" in lines[2]                   # what reads it waits for the new bytes
    assert run_quietly(path)[0] == 0
    assert runs_log(tmp_path)[5:] == ["first fresh"]        # made again, the same bytes: what reads it is reused
    assert (tmp_path / "run" / "first" / "model.pt").read_text() == "one|"


def test_outputs_deleted_after_what_reads_them_finished_are_not_made_again(tmp_path, write_kind):
    import shutil
    path = write_recipe(tmp_path, CHAIN)
    assert run_quietly(path)[0] == 0
    shutil.rmtree(tmp_path / "run" / "second")            # e.g. label shards, deleted once fitted
    _, lines = run_quietly(path, "--dry-run")
    assert "[reuse]" in lines[2] and "deleted after every step that reads them" in lines[2]
    assert lines[-1] == "would reuse 3"
    assert run_quietly(path)[0] == 0 and len(runs_log(tmp_path)) == 3          # nothing ran again

    path.write_text(path.read_text().replace("{text: three}", "{text: THREE}"))   # a reader must run again:
    _, lines = run_quietly(path, "--dry-run")                                  # the deleted step is needed
    assert "[run]" in lines[2] and "outputs changed" in lines[2] and "after the steps it reads" in lines[3]
    assert run_quietly(path)[0] == 0
    assert runs_log(tmp_path)[3:] == ["second fresh", "third fresh"]

    (tmp_path / "run" / "first" / "model.pt").unlink()     # deleted, but one of its readers is not finished:
    (tmp_path / "run" / "third" / "model.pt").unlink()     # third's output (read by none) is gone too
    _, lines = run_quietly(path, "--dry-run")
    assert "[run]" in lines[1] and "[run]" in lines[3]


def test_a_killed_recipe_resumes_the_step_it_was_in(tmp_path):
    """The step kills the runner half-way (SIGKILL: no clean-up); the rerun resumes that step,
    its partial output kept, and reuses the one before."""
    path = write_recipe(tmp_path, CHAIN.replace("{text: two}", "{text: two, die: true}"))
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import test_recipes as t; "
              "from train.recipes import kinds, recipe, runner; kinds.KINDS['write'] = t.WRITE_KIND; "
              "sys.exit(runner.run_recipe(sys.argv[2]))")
    first = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent), str(path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == -9, first.stderr
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert state["steps"]["first"]["status"] == "done" and state["steps"]["second"]["status"] == "running"
    second = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent), str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "[resume]" in second.stdout and "[reuse]" in second.stdout
    assert runs_log(tmp_path) == ["first fresh", "second fresh", "second resumed", "third fresh"]
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert {step["status"] for step in state["steps"].values()} == {"done"}


def _done_train_step(tmp_path, config_text: str):
    """A recipe of one train step recorded as done (its model and checkpoint stand in files), and
    the runner that decides it."""
    from train.recipes.runner import Runner, hash_output
    (tmp_path / "step.yaml").write_text(config_text)
    path = write_recipe(tmp_path, "  a:\n    kind: train\n    config: step.yaml\n")
    runner = Runner(load_recipe(path), [], lambda line: None)
    step = runner.recipe.steps["a"]
    folder = runner.folder("a")
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "model.pt").write_bytes(b"model")
    (folder / "checkpoints" / "last.pt").write_bytes(b"checkpoint")
    outputs = {name: {"path": str(p), "sha256": hash_output(p)} for name, p in step.kind.output_paths(folder).items()}
    return runner, step, outputs


def test_raising_a_train_steps_length_continues_it_and_any_other_change_starts_it_over(tmp_path):
    """Raising expert_rounds or total_decisions in a finished step's config resumes it from its
    checkpoint (the trainer goes on from the rounds done); a change of what is learned reruns it."""
    runner, step, outputs = _done_train_step(tmp_path, "total_decisions: 100000\nexpert_rounds: 0\n")
    runner.state.record("a", {"kind": "train", "fingerprint": runner.fingerprint(step), "status": "done",
                              "outputs": outputs, "length": runner.length(step)})
    assert runner.decide(step).action == "reuse"
    config = tmp_path / "step.yaml"
    config.write_text("total_decisions: 200000\nexpert_rounds: 0\neval_deals: 64\n")
    planned = runner.decide(step)
    assert planned.action == "resume" and "total_decisions 100000 -> 200000 raised" in planned.reason
    assert planned.argv[-1] == "--resume"
    config.write_text("total_decisions: 50000\nexpert_rounds: 0\n")          # lowered: the longer run stands
    assert runner.decide(step).action == "reuse"
    config.write_text("total_decisions: 100000\nexpert_rounds: 0\nlearning_rate: 0.0001\n")
    planned = runner.decide(step)
    assert planned.action == "run" and "changed" in planned.reason
    (tmp_path / "run" / "a" / "checkpoints" / "last.pt").unlink()
    config.write_text("total_decisions: 300000\nexpert_rounds: 0\n")
    assert runner.decide(step).action == "run"                # nothing to continue from: it starts over
    from train.recipes.runner import _raised
    assert _raised({"total_decisions": "many"}, {"total_decisions": 10}) == ""    # an edited state: no crash
    assert _raised({"max_updates": 5}, {"max_updates": None}) == "max_updates 5 -> None"   # uncapped: raised


def test_a_state_of_the_older_fingerprint_is_reused_and_upgraded(tmp_path):
    """A state.json written before train fingerprints left out the resumable fields still reuses
    its steps; the run records the new fingerprint and the step's length, so that raising the
    length later continues the step."""
    runner, step, outputs = _done_train_step(tmp_path, "total_decisions: 100000\n")
    runner.state.record("a", {"kind": "train", "fingerprint": runner.legacy_fingerprint(step), "status": "done",
                              "outputs": outputs})
    planned = runner.decide(step)
    assert planned.action == "reuse" and planned.upgrade
    assert runner.run() == 0
    entry = json.loads((tmp_path / "run" / "state.json").read_text())["steps"]["a"]
    assert entry["fingerprint"] == runner.fingerprint(step) and entry["length"]["total_decisions"] == 100000
    (tmp_path / "step.yaml").write_text("total_decisions: 200000\n")
    assert runner.decide(step).action == "resume"


def test_a_field_added_to_spades_train_leaves_a_finished_step_as_it_was(tmp_path, monkeypatch):
    """A new spades-train field at its default (which keeps what training did) is no change to a
    step: the fingerprint counts settings that differ from the defaults, and a state written by the
    runner that counted every field (before the field existed) is reused and upgraded."""
    from train.ppo import config as train_config
    from train.recipes import runner as runner_module
    runner, step, outputs = _done_train_step(tmp_path, "total_decisions: 100000\n")
    runner.state.record("a", {"kind": "train", "fingerprint": runner.fingerprint(step, form="all_fields"),
                              "status": "done", "outputs": outputs, "length": runner.length(step)})
    planned = runner.decide(step)
    assert planned.action == "reuse" and planned.upgrade
    before = runner.fingerprint(step)
    assert "bid_value_objective" in runner_module.FIELDS_ADDED_SINCE
    defaults = train_config.TrainConfig().to_dict()
    original = train_config.TrainConfig.to_dict
    monkeypatch.setattr(train_config.TrainConfig, "to_dict", lambda self: {**original(self), "a_field_added_later": 1})
    assert set(train_config.TrainConfig().to_dict()) - set(defaults) == {"a_field_added_later"}
    assert runner.fingerprint(step) == before        # at its default in the step and in spades-train alike
    (tmp_path / "step.yaml").write_text("total_decisions: 100000\nbid_value_objective: win\n")
    assert runner.fingerprint(step) != before and runner.decide(step).action == "run"


# -------------------------------------------------------------------------------------- --from

def test_from_takes_a_shipped_model_and_skips_what_only_fed_it(tmp_path, write_kind):
    steps = "  feeder:\n    kind: write\n    config: {text: feeder}\n" + CHAIN.replace(
        "  first:\n    kind: write\n    config: {text: one}\n",
        "  first:\n    kind: write\n    config: {text: one}\n    inputs: {source: feeder}\n")
    path = write_recipe(tmp_path, steps)
    code, lines = run_quietly(path, "--dry-run", starts=["first=neural_v6"])
    assert code == 0
    assert "[skip]" in lines[1] and "only feeds first" in lines[1]
    assert "[from] neural_v6 (agents/models/neural_v6.pt" in lines[2]
    assert "agents/models/neural_v6.pt" in lines[3] and "[run]" in lines[3]
    assert run_quietly(path, starts=["first=neural"])[0] == 0                    # an alias: the same file
    assert runs_log(tmp_path) == ["second fresh", "third fresh"]
    shipped_head = (ROOT / "agents" / "models" / "neural_v7.pt").read_bytes()[:12].hex()
    assert (tmp_path / "run" / "second" / "model.pt").read_text() == f"two|{shipped_head}"


@pytest.mark.parametrize("start, message", [
    ("first", r"--from 'first': expected STEP=MODEL"),
    ("nowhere=neural_v6", r"no step 'nowhere'"),
    ("first=neural_v99", r"'neural_v99' is not a model in manifest.json"),
    ("first=../neural_v6.pt", r"not a model in manifest.json"),
])
def test_from_refusals_are_one_line(tmp_path, write_kind, capsys, start, message):
    path = write_recipe(tmp_path, CHAIN)
    assert run_quietly(path, "--dry-run", starts=[start])[0] == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("spades-train: error: --from")
    assert re.search(message, err), err


def test_from_refuses_a_step_whose_checkpoint_is_read(tmp_path, capsys):
    path = write_recipe(tmp_path, """\
  base:
    kind: train
    config: {max_updates: 0}
  after:
    kind: export
    inputs: {checkpoint: base.checkpoint}
""")
    assert run_recipe(path, dry_run=True, starts=["base=neural_v6"]) == 2
    assert "reads base.checkpoint, and a shipped model gives only a model" in capsys.readouterr().err


# -------------------------------------------------------------------------------- validation

@pytest.mark.parametrize("steps, message", [
    ("  a:\n    kind: bake\n", r"step 'a': kind 'bake': expected one of .*train"),
    ("  a:\n    kind: tilt\n    config: {tilt: 1}\n    inputs: {source: nowhere}\n", r"input source: unknown step 'nowhere'"),
    ("  a:\n    kind: tilt\n    config: {tilt: 1}\n    inputs: {source: b}\n"
     "  b:\n    kind: tilt\n    config: {tilt: 1}\n    inputs: {source: a}\n", r"the steps form a cycle \(a -> b -> a\)"),
    ("  a:\n    kind: train\n", r"step 'a': no config \(a train step needs config"),
    ("  a:\n    kind: train\n    config: nowhere.yaml\n", r"config 'nowhere.yaml': no such file"),
    ("  a:\n    kind: train\n    config: {max_updates: 0}\n    set: {learning_rat: 0.1}\n",
     r"unknown field 'learning_rat'.*did you mean 'learning_rate'"),
    ("  a:\n    kind: tilt\n    config: {tilt: 1}\n    inputs: {source: agents/models/neural_v6.pt}\n",
     r"is not a step; inputs name the step that makes them"),
    ("  a:\n    kind: tilt\n    config: {tilt: 1, tilted: 2}\n    inputs: {source: a}\n", r"config 'tilted': not a flag"),
    ("  a:\n    kind: collect\n    config: {deals: 8}\n", r"no input student"),
    ("  logs:\n    kind: tilt\n    config: {tilt: 1}\n", r"step name 'logs' is the run folder's own"),
    ("  a:\n    kind: train\n    config: {max_updates: 0}\n  b:\n    kind: export\n    inputs: {checkpoint: a.weights}\n",
     r"step 'a' \(train\) has no output 'weights' \(expected one of model, checkpoint\)"),
])
def test_recipe_mistakes_are_one_line_with_exit_2(tmp_path, capsys, steps, message):
    from train.ppo import main
    path = write_recipe(tmp_path, steps)
    assert main(["--recipe", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("spades-train: error: "), err
    assert re.search(message, err), err
    with pytest.raises(RecipeError):
        load_recipe(path)


def test_the_recipe_flags_go_together(tmp_path, capsys):
    from train.ppo import main
    for argv, message in ((["--dry-run"], "--dry-run and --from go with --recipe FILE"),
                          (["--recipe", "x.yaml", "--config", "configs/quickstart.yaml"], "--config goes with --config")):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert main(["--recipe", str(tmp_path / "none.yaml")]) == 2
    assert "no such recipe file" in capsys.readouterr().err


# ------------------------------------------------------------------------- the shipped recipes

def test_the_neural_recipe_dry_run_lists_every_step_of_the_lineage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                                 # its run folder: none yet
    recipe = load_recipe(NEURAL_RECIPE)
    code, lines = run_quietly(NEURAL_RECIPE, "--dry-run")
    assert code == 0
    listed = [line.split()[1] for line in lines if line[:3].strip().isdigit()]
    assert listed == list(recipe.steps) and len(listed) >= 30
    assert lines[-1] == f"would run {len(listed)}"
    kinds = {step.kind.name for step in recipe.steps.values()}
    assert kinds >= {"train", "label", "export", "tilt", "collect", "fit", "ship", "evaluate"}
    commands = "\n".join(line for line in lines if "[run]" in line)
    assert "--set expert_rounds" not in commands and "--set bid_counterfactual_nil=played" in commands
    assert "agents/models" not in commands                      # inputs come from steps, never from a shipped file
    for entry in model_manifest.load_manifest()["models"]:       # every shipped version names its step here
        if entry["name"].startswith("neural_v"):
            assert entry["recipe"] == "configs/recipes/neural.yaml" and entry["step"] in recipe.steps, entry["name"]


def test_the_neural_recipe_from_neural_v6_runs_only_the_last_steps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, lines = run_quietly(NEURAL_RECIPE, "--dry-run", starts=["nil_defence_rule=neural_v6"])
    assert code == 0
    steps = [line for line in lines if line[:3].strip().isdigit()]
    ran = [line.split()[1] for line in steps if "[run]" in line]
    assert ran == ["game_bids_1", "game_bids_2", "game_bids_3", "game_bids_4", "game_bids_fit", "game_bids_tilt",
                   "ship_neural_v7", "evaluate"]
    collect = next(line for line in steps if line.split()[1] == "game_bids_1")
    assert re.search(r"collect --student \S*agents/models/neural_v6.pt --deals 32768 --shard-deals 1024 "
                     r"--workers 2 --seed 1 ", collect), collect
    fit = next(line for line in steps if line.split()[1] == "game_bids_fit")
    assert "--objective win --from-policy" in fit and "--tilt 0.5" in next(
        line for line in steps if line.split()[1] == "game_bids_tilt")


def test_the_beat_heuristic_recipe_is_a_prefix_of_the_lineage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prefix, lineage = load_recipe(BEAT_HEURISTIC), load_recipe(NEURAL_RECIPE)
    names = list(prefix.steps)
    assert names[-2:] == ["card_play_bags", "evaluate"]
    assert names[:-1] == list(lineage.steps)[:list(lineage.steps).index("card_play_bags") + 1]
    for name in names[:-1]:
        assert prefix.steps[name].config == lineage.steps[name].config
        assert prefix.steps[name].config_file == lineage.steps[name].config_file
    assert run_quietly(BEAT_HEURISTIC, "--dry-run")[0] == 0


def test_the_expert_loop_starts_from_imitation_and_is_taught_by_the_new_search(tmp_path, monkeypatch):
    """Issue 72's recipe: no shipped model as an input, the loop's teacher is ``search`` (not
    search_v1) keeping every candidate, the bids are fitted to its values (no bid tilt, no second
    head); then the heuristic's blind-nil hands are fitted (their card passes), the bidding head
    is refitted to the policy's own play-outs valued by the game; rounds taught by a search that
    prices carried bags follow, and the judging matches read their model."""
    from train.ppo.config import load_config
    monkeypatch.chdir(tmp_path)
    recipe = load_recipe(EXPERT_LOOP)
    assert list(recipe.steps)[:2] == ["imitation", "loop"]
    code, lines = run_quietly(EXPERT_LOOP, "--dry-run")
    assert code == 0 and lines[-1] == f"would run {len(recipe.steps)}"
    commands = "\n".join(line for line in lines if "[run]" in line)
    assert "agents/models" not in commands and "init_from=runs/recipes/expert_loop/imitation/" in commands
    loop = load_config(recipe.steps["loop"].config_file, [])
    assert loop.expert_teacher.split(":")[0] == "search" and "stage=0" in loop.expert_teacher
    assert loop.expert_rounds >= 1 and loop.max_updates == 0 and not loop.expert_bid_values
    assert loop.init_from is None                                # the recipe fills it from the imitation step
    assert loop.expert_eval_start == "real"                       # the rounds see blind nil offered
    assert list(recipe.steps)[2:4] == ["blind_nil_labels", "bids"]
    assert "init_from=runs/recipes/expert_loop/loop/checkpoints/last.pt" in commands
    labels = recipe.steps["blind_nil_labels"]         # the card passes the imitation from 0-0 never met
    assert labels.kind.name == "label" and labels.config["teacher"] == "heuristic" and labels.config["only"] == "blind-nil"
    assert "distill_data=runs/recipes/expert_loop/blind_nil_labels" in commands
    bids = load_config(recipe.steps["bids"].config_file, [])      # the bids valued by the loop's own play
    assert bids.bid_value_deals > 0 and bids.bid_value_objective == "win" and bids.bag_cost == 10
    assert bids.max_updates == 0 and bids.expert_rounds == 0 and bids.imitation_decisions == 0
    assert (bids.hidden, bids.layers, bids.head_hidden, bids.card_features) == \
        (loop.hidden, loop.layers, loop.head_hidden, loop.card_features)
    priced = load_config(recipe.steps["priced_rounds"].config_file, [])   # then rounds with bags priced
    assert list(recipe.steps)[4] == "priced_rounds" and "init_from=runs/recipes/expert_loop/bids/checkpoints/last.pt" in commands
    assert priced.expert_teacher.split(":")[0] == "search" and "bag_cost=game" in priced.expert_teacher
    assert priced.expert_bid_values and priced.bid_value_objective == "win" and priced.max_updates == 0
    assert (priced.hidden, priced.layers, priced.head_hidden, priced.card_features) == \
        (loop.hidden, loop.layers, loop.head_hidden, loop.card_features)
    for team_b in ("search_v1", "neural:model=neural_v7", "heuristic"):
        assert f"--team-b {team_b} " in commands
        assert "--team-a neural:checkpoint=runs/recipes/expert_loop/priced_rounds/model.pt" in commands


def test_a_run_folder_over_the_working_folder_is_refused(tmp_path, monkeypatch, capsys):
    """Step folders are emptied before a step runs: the recipe may not point them at the checkout."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "bad.yaml"
    for run_dir in (".", str(tmp_path.parent)):
        path.write_text(f"name: bad\nrun_dir: {run_dir}\nsteps:\n  a:\n    kind: tilt\n    config: {{tilt: 1}}\n"
                        "    inputs: {source: a}\n")
        assert run_recipe(path, dry_run=True) == 2
        assert "is this folder or above it" in capsys.readouterr().err


def test_configs_holds_what_a_user_runs_and_says_so():
    """configs/ top: at most 15 entries, each named in configs/README.md's table (the records of
    experiments live in experiments/, the lineage's stages in configs/recipes/neural/)."""
    import fnmatch
    top = sorted(p.name for p in (ROOT / "configs").iterdir() if not p.name.startswith("."))
    assert len(top) <= 15, top
    table = (ROOT / "configs" / "README.md").read_text().split("## Moved")[0]
    named = [cell.split("/")[0] for cell in re.findall(r"^\| `([^`]+)`", table, re.M)]
    for name in top:
        assert name == "README.md" or any(fnmatch.fnmatch(name, pattern) for pattern in named), name
    for stage in (ROOT / "configs" / "recipes" / "neural").glob("*.yaml"):      # every stage config is a step's
        assert f"neural/{stage.name}" in NEURAL_RECIPE.read_text(), stage.name


def test_from_neural_v3_the_recipe_rebuilds_neural_v4_and_neural_v5_tensor_for_tensor(tmp_path):
    """The lineage's two tilt steps, run for real from the shipped neural_v3 (a few seconds): every
    tensor of their models equals the shipped neural_v4's and neural_v5's."""
    import torch
    path = tmp_path / "v45.yaml"
    path.write_text(f"name: v45\nrun_dir: {tmp_path / 'run'}\nextends: {NEURAL_RECIPE}\nuntil: [lead_tilt]\n")
    assert run_recipe(path, starts=["card_play_bags=neural_v3"], log=lambda line: None) == 0
    for step, shipped in (("tilt_up", "neural_v4"), ("lead_tilt", "neural_v5")):
        made = torch.load(tmp_path / "run" / step / "model.pt", weights_only=True)
        ship = torch.load(model_manifest.model_path(shipped), weights_only=True)
        assert made["arch"] == ship["arch"] and made["policy"].keys() == ship["policy"].keys()
        assert all(torch.equal(made["policy"][k], ship["policy"][k]) for k in ship["policy"]), step


def test_the_ship_step_says_whether_the_model_is_the_shipped_one(tmp_path, capsys):
    from train.recipes.ship import main
    models = Path(model_manifest.MODELS_DIR)
    assert main([str(models / "neural_v6.pt"), str(tmp_path / "a" / "model.pt"), "--name", "neural_v6"]) == 0
    assert "identical to the shipped neural_v6" in capsys.readouterr().out
    assert json.loads((tmp_path / "a" / "comparison.json").read_text())["identical"] is True
    assert main([str(models / "neural_v5.pt"), str(tmp_path / "b" / "model.pt"), "--name", "neural_v6"]) == 0
    assert "differs from the shipped neural_v6" in capsys.readouterr().out
    report = json.loads((tmp_path / "b" / "comparison.json").read_text())
    assert report["identical"] is False and any(name.startswith("nil_") for name in report["tensors_differing"])
    assert main([str(models / "neural_v5.pt"), str(tmp_path / "c" / "model.pt"), "--name", "neural_v8"]) == 0
    assert "'neural_v8' is not shipped yet" in capsys.readouterr().out
