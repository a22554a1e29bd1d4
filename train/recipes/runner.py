"""Run a recipe: every step once, its outputs hashed, what is done reused, what was killed resumed.

The run folder (``run_dir``, by default ``runs/recipes/<name>``) holds one folder per step and
``state.json`` (written atomically after every change): for each step its fingerprint, its
command, whether it is running or done, and the SHA-256 of each output. A step's fingerprint is
the hash of its command, its config's bytes (the file, or the inline mapping) and the hashes of
the outputs it reads. On a rerun a step is

- **reused** when it is done with the same fingerprint and its outputs still hash as recorded;
- **resumed** when it was running with the same fingerprint (killed): ``spades-train --resume``
  from its last checkpoint, or the labelling and collection commands again, which keep their
  finished shards; the other kinds are quick and start over;
- **run** otherwise, in an emptied folder.

``--from STEP=MODEL`` takes a shipped model (a name in ``agents/models/manifest.json``) as
STEP's output: the steps after STEP run, and what only fed STEP is skipped.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from spades_env.files import write_text

from .kinds import display, train_settings
from .recipe import Recipe, RecipeError, Step, load_recipe

STATE_FORMAT = "spades-recipe-state"
STATE_NAME = "state.json"
LOCK_NAME = ".recipe.lock"
SKIPPED_FILES = {LOCK_NAME, ".lock"}
FIELDS_ADDED_SINCE = frozenset({"bid_value_objective"})
"""spades-train fields added after the runners that counted every field in a train step's
fingerprint (2026-12-02): left out when such a fingerprint is recomputed (``form="all_fields"``)."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def hash_output(path: Path) -> Optional[str]:
    """SHA-256 of a file, or of a folder's files (relative names and contents, sorted; lock and
    ``.tmp`` files left out); None when the output is not there."""
    from agents.model_manifest import file_sha256
    if path.is_file():
        return file_sha256(path)
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file()):
        if item.name in SKIPPED_FILES or item.name.endswith(".tmp"):
            continue
        digest.update(item.relative_to(path).as_posix().encode() + b"\0" + file_sha256(item).encode() + b"\n")
    return digest.hexdigest()


def _relative(path: Path) -> Path:
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


# ------------------------------------------------------------------------------------- the state

class RecipeState:
    """``state.json`` of a run folder, saved atomically after every change."""

    def __init__(self, run_dir: Path, recipe: Recipe) -> None:
        self.path = run_dir / STATE_NAME
        self.data = {"format": STATE_FORMAT, "recipe": recipe.name, "recipe_file": str(recipe.path), "steps": {}}
        if self.path.exists():
            from spades_env.files import MAX_JSON_BYTES, FileRuleError, check_input
            try:
                written = json.loads(check_input(self.path, "recipe state", MAX_JSON_BYTES).read_text())
            except FileRuleError as exc:
                raise RecipeError(str(exc)) from None
            except ValueError:
                raise RecipeError(f"{self.path}: not readable JSON; move it away to start the recipe over") from None
            if not isinstance(written, dict) or written.get("format") != STATE_FORMAT \
                    or not isinstance(written.get("steps"), dict):
                raise RecipeError(f"{self.path}: not a recipe state (format {STATE_FORMAT!r}); move it away to start over")
            if written.get("recipe") != recipe.name:
                raise RecipeError(f"{self.path}: the run folder of recipe {written.get('recipe')!r}, not "
                                  f"{recipe.name!r}; give the recipe another run_dir")
            self.data["steps"] = written["steps"]

    def step(self, name: str) -> dict:
        return self.data["steps"].get(name) or {}

    def record(self, name: str, entry: dict) -> None:
        self.data["steps"][name] = entry
        self.save()

    def save(self) -> None:
        write_text(self.path, json.dumps(self.data, indent=1) + "\n", "recipe state")   # the output rule


# ---------------------------------------------------------------------------------------- the plan

@dataclass
class Planned:
    step: Step
    action: str                              # run, resume, reuse, from, skip
    reason: str = ""
    argv: list = field(default_factory=list)
    fingerprint: Optional[str] = None
    given: Optional[tuple] = None            # from: (model name, path, sha256)
    upgrade: bool = False                    # reused under a fingerprint of the older form: record the new one


def parse_starts(recipe: Recipe, starts: list[str]) -> dict[str, tuple]:
    """``["nil_defence=neural_v6"]`` -> ``{"nil_defence": ("neural_v6", path, sha256)}``, the
    model checked against the manifest (its name, its file, its hash)."""
    from agents import model_manifest
    given = {}
    for text in starts:
        step_name, sep, model = str(text).partition("=")
        if not sep or not step_name or not model:
            raise RecipeError(f"--from {text!r}: expected STEP=MODEL, e.g. --from nil_defence=neural_v6")
        if step_name not in recipe.steps:
            raise RecipeError(f"--from {text}: no step {step_name!r} in {recipe.path} "
                              f"(steps: {', '.join(recipe.steps)})")
        step = recipe.steps[step_name]
        if "model" not in step.kind.outputs:
            raise RecipeError(f"--from {text}: step {step_name!r} ({step.kind.name}) makes no model")
        try:
            name = model_manifest.resolve_name(model)
            path = model_manifest.model_path(name)
        except model_manifest.ManifestError as exc:
            raise RecipeError(f"--from {text}: {exc}") from None
        given[step_name] = (name, _relative(path), model_manifest.entries()[name]["sha256"])
    return given


def needed_steps(recipe: Recipe, given: dict) -> dict[str, str]:
    """Which steps a run needs: all of them without ``--from``; with it, the steps after a
    given step and what those read, never what is upstream of a given step only. Returns
    ``{step: "" (needed) or why it is skipped}``."""
    if not given:
        return {name: "" for name in recipe.steps}
    after: set[str] = set()
    for name in recipe.steps:                                  # in order: inputs first
        if any(up in given or up in after for up in recipe.steps[name].upstream()) and name not in given:
            after.add(name)
    needed = set(after)
    stack = list(after)
    while stack:
        for up in recipe.steps[stack.pop()].upstream():
            if up not in given and up not in needed:
                needed.add(up)
                stack.append(up)
    starts = ", ".join(given)
    return {name: "" if name in needed else
            (f"given by --from ({given[name][0]})" if name in given else f"only feeds {starts}")
            for name in recipe.steps}


class Runner:
    """Plans and runs one recipe in its run folder."""

    def __init__(self, recipe: Recipe, starts: list[str] = (), log: Callable[[str], None] = print) -> None:
        self.recipe = recipe
        self.run_dir = recipe.run_dir
        self.log = log
        self.given = parse_starts(recipe, list(starts))
        self.needed = needed_steps(recipe, self.given)
        for name, why in self.needed.items():
            if why:
                continue
            for refs in recipe.steps[name].inputs.values():
                for ref in refs:
                    if ref.step in self.given and (ref.output or "model") != "model":
                        raise RecipeError(f"--from {ref.step}={self.given[ref.step][0]}: step {name!r} reads "
                                          f"{ref.text}, and a shipped model gives only a model")
        self.state = RecipeState(self.run_dir, recipe)
        self.pending: set[str] = set()            # a dry run's steps that would run: what reads them waits

    # -- paths and fingerprints

    def folder(self, name: str) -> Path:
        return self.run_dir / name

    def output_path(self, ref) -> Path:
        if ref.step in self.given:
            return self.given[ref.step][1]
        step = self.recipe.steps[ref.step]
        return step.kind.output_paths(self.folder(ref.step))[ref.output or step.kind.default_output]

    def output_hash(self, ref) -> Optional[str]:
        """The recorded hash of an input (None when the step that makes it has not run)."""
        if ref.step in self.given:
            return self.given[ref.step][2]
        entry = self.state.step(ref.step)
        if entry.get("status") != "done":
            return None
        step = self.recipe.steps[ref.step]
        return entry.get("outputs", {}).get(ref.output or step.kind.default_output, {}).get("sha256")

    def command(self, step: Step, resume: bool = False) -> list[str]:
        if step.config_file is None and step.kind.takes_config_file:
            step.inline_config_path = self.run_dir / "configs" / f"{step.name}.yaml"
        inputs = {parameter: [self.output_path(ref) for ref in refs] for parameter, refs in step.inputs.items()}
        return [*step.kind.program, *step.kind.build(step, inputs, self.folder(step.name), resume)]

    def config_hash(self, step: Step) -> str:
        if step.config_file is not None:
            return hashlib.sha256(step.config_file.read_bytes()).hexdigest()
        return hashlib.sha256(json.dumps(step.config, sort_keys=True, default=str).encode()).hexdigest()

    def input_hashes(self, step: Step) -> Optional[dict]:
        inputs = {}
        for parameter, refs in step.inputs.items():
            hashes = [self.output_hash(ref) for ref in refs]
            if None in hashes:
                return None
            inputs[parameter] = hashes
        return inputs

    def fingerprint(self, step: Step, form: str = "current") -> Optional[str]:
        """What a step's outputs depend on: its kind, command, config and the hashes of its
        inputs (None while an input is not made). A train step's settings count without the
        fields a resumed run may change (how long it lasts, what it measures on the way), so
        that raising ``expert_rounds`` or ``total_decisions`` continues the step, not restarts it,
        and only where they differ from spades-train's defaults, so that a field added to
        spades-train later (at a default that keeps what it did) leaves every step as it was.

        ``form="all_fields"``: the fingerprint of the runners of 2026-12-02, which counted every
        field (:data:`FIELDS_ADDED_SINCE` left out, as those runners did not know them)."""
        inputs = self.input_hashes(step)
        if inputs is None:
            return None
        if step.kind.name != "train":
            return self.legacy_fingerprint(step, inputs)
        from train.ppo.config import RESUMABLE_CHANGES, TrainConfig
        settings = {k: v for k, v in train_settings(step).items() if k not in RESUMABLE_CHANGES}
        if form == "all_fields":
            settings = {k: v for k, v in settings.items() if k not in FIELDS_ADDED_SINCE}
        else:
            defaults = TrainConfig().to_dict()
            settings = {k: v for k, v in settings.items() if k not in defaults or v != defaults[k]}
        command, args = [], iter(self.command(step))
        for arg in args:                     # leave out `--set FIELD=...` of a resumable field
            if arg == "--set":
                value = next(args, "")
                if value.partition("=")[0] not in RESUMABLE_CHANGES:
                    command += [arg, value]
            else:
                command.append(arg)
        body = {"kind": step.kind.name, "command": command, "settings": settings, "inputs": inputs}
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()

    def older_fingerprints(self, step: Step) -> list[Optional[str]]:
        """The fingerprints earlier runners recorded for this step as it stands: a state they wrote
        is reused (and its fingerprint upgraded) while the step is unchanged."""
        if step.kind.name != "train":
            return []
        return [self.legacy_fingerprint(step), self.fingerprint(step, form="all_fields")]

    def legacy_fingerprint(self, step: Step, inputs: Optional[dict] = None) -> Optional[str]:
        """The fingerprint of every step before train steps left out their resumable fields (the
        config file's bytes): a state written then still matches while its config is unchanged."""
        inputs = self.input_hashes(step) if inputs is None else inputs
        if inputs is None:
            return None
        body = {"kind": step.kind.name, "command": self.command(step), "config_sha256": self.config_hash(step),
                "inputs": inputs}
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()

    @staticmethod
    def length(step: Step) -> dict:
        """A train step's fields that say how long it runs (empty for other kinds)."""
        if step.kind.name != "train":
            return {}
        from train.ppo.config import LENGTH_FIELDS
        settings = train_settings(step)
        return {name: settings[name] for name in LENGTH_FIELDS}

    def outputs_intact(self, step: Step, entry: dict) -> bool:
        recorded = entry.get("outputs", {})
        for name, path in step.kind.output_paths(self.folder(step.name)).items():
            if name not in recorded or hash_output(path) != recorded[name].get("sha256"):
                return False
        return True

    def consumed(self, step: Step) -> bool:
        """Whether a finished step's outputs are gone (deleted, not changed) and every step that
        reads them is finished with them: done, its outputs intact and its fingerprint, made from
        the hashes recorded for what it read, unchanged. Label shards run to gigabytes and are
        often deleted once fitted: making them again would rerun what reads them for nothing."""
        if any(path.exists() for path in step.kind.output_paths(self.folder(step.name)).values()):
            return False
        readers = [other for other in self.recipe.steps.values()
                   if any(ref.step == step.name for refs in other.inputs.values() for ref in refs)]
        if not readers:
            return False
        for reader in readers:
            entry = self.state.step(reader.name)
            if entry.get("status") != "done" or not self.outputs_intact(reader, entry):
                return False
            fingerprint = self.fingerprint(reader)
            if fingerprint is None or (entry.get("fingerprint") != fingerprint and
                                       entry.get("fingerprint") not in self.older_fingerprints(reader)):
                return False
        return True

    def decide(self, step: Step) -> Planned:
        """What this step needs now, from the state as it stands."""
        if step.name in self.given:
            return Planned(step, "from", given=self.given[step.name])
        if self.needed[step.name]:
            return Planned(step, "skip", self.needed[step.name])
        fingerprint = None if self.pending.intersection(step.upstream()) else self.fingerprint(step)
        entry = self.state.step(step.name)
        argv = self.command(step)
        if fingerprint is None:
            return Planned(step, "run", "after the steps it reads", argv)
        upgrade = entry.get("fingerprint") != fingerprint and entry.get("fingerprint") in self.older_fingerprints(step)
        if entry.get("fingerprint") == fingerprint or upgrade:
            if entry.get("status") == "done":
                if not self.outputs_intact(step, entry):
                    if self.consumed(step):
                        return Planned(step, "reuse", "its outputs were deleted after every step that reads them "
                                       "had finished with them", argv, fingerprint, upgrade=upgrade)
                    return Planned(step, "run", "its outputs changed since they were recorded", argv, fingerprint)
                raised = _raised(entry.get("length"), self.length(step))
                if raised and (self.folder(step.name) / "checkpoints" / "last.pt").is_file():
                    return Planned(step, "resume", f"{raised} raised: it continues", self.command(step, resume=True),
                                   fingerprint)
                if raised:
                    return Planned(step, "run", f"{raised} raised and no checkpoint to continue from; starts over",
                                   argv, fingerprint)
                return Planned(step, "reuse", "inputs, command and config unchanged", argv, fingerprint,
                               upgrade=upgrade)
            if entry.get("status") == "running" and step.kind.resumable and self.folder(step.name).exists():
                resume = step.kind.name != "train" or \
                    (self.folder(step.name) / "checkpoints" / "last.pt").is_file()
                if resume:
                    return Planned(step, "resume", "killed while running", self.command(step, resume=True),
                                   fingerprint)
            if entry.get("status") == "running":
                return Planned(step, "run", "killed while running; starts over", argv, fingerprint)
        why = "not run yet" if not entry else "its inputs, command or config changed"
        return Planned(step, "run", why, argv, fingerprint)

    # -- dry run and run

    def describe(self, planned: Planned, index: int) -> str:
        head = f"{index:>3} {planned.step.name:<24} [{planned.action}]"
        if planned.action == "from":
            name, path, sha = planned.given
            return f"{head} {name} ({path}, sha256 {sha[:12]}...)"
        if planned.action == "skip":
            return f"{head} ({planned.reason})"
        return f"{head} {display(planned.argv)}" + (f"   # {planned.reason}" if planned.reason else "")

    def busy(self) -> bool:
        """Whether another ``--recipe`` run holds this run folder now."""
        lock_path = self.run_dir / LOCK_NAME
        if not lock_path.is_file():
            return False
        with open(lock_path, "a+") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        return False

    def dry_run(self) -> int:
        self.log(f"recipe {self.recipe.name} ({self.recipe.path}): {len(self.recipe.steps)} steps, run folder "
                 f"{self.run_dir}" + (" (a run is in progress there now: its running step shows as resume)"
                                      if self.busy() else ""))
        counts: dict[str, int] = {}
        for index, step in enumerate(self.recipe.steps.values(), 1):
            planned = self.decide(step)
            if planned.action in ("run", "resume"):
                self.pending.add(step.name)
            counts[planned.action] = counts.get(planned.action, 0) + 1
            self.log(self.describe(planned, index))
            if step.note:
                self.log(f"{'':>29}# {step.note}")
        self.log("would " + ", ".join(f"{verb} {counts[key]}" for key, verb in
                                      (("run", "run"), ("resume", "resume"), ("reuse", "reuse"), ("from", "take"),
                                       ("skip", "skip")) if counts.get(key)))
        return 0

    def run(self) -> int:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / LOCK_NAME, "a+") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RecipeError(f"{self.run_dir}: another spades-train --recipe is running in this run folder") from None
            began = time.perf_counter()
            for index, step in enumerate(self.recipe.steps.values(), 1):
                planned = self.decide(step)
                self.log(self.describe(planned, index))
                if planned.action in ("run", "resume"):
                    code = self.execute(planned)
                    if code != 0:
                        return code
                elif planned.upgrade:
                    entry = dict(self.state.step(step.name), fingerprint=planned.fingerprint)
                    length = self.length(step)
                    if length:
                        entry["length"] = length
                    self.state.record(step.name, entry)
            self.log(f"recipe {self.recipe.name}: done in {time.perf_counter() - began:.0f} s "
                     f"(state: {self.state.path})")
        return 0

    def execute(self, planned: Planned) -> int:
        step, folder = planned.step, self.folder(planned.step.name)
        if planned.fingerprint is None:                      # its inputs are made now: decide again
            planned = self.decide(step)
            if planned.fingerprint is None:
                raise RecipeError(f"step {step.name!r}: an input it reads has no recorded output")
        if planned.action == "run" and folder.exists():
            shutil.rmtree(folder)                            # a fresh start: nothing of an earlier run mixes in
        if step.inline_config_path is not None:
            step.inline_config_path.parent.mkdir(parents=True, exist_ok=True)
            import yaml
            step.inline_config_path.write_text(yaml.safe_dump(dict(step.config), sort_keys=False))
        started = time.perf_counter()
        entry = {"kind": step.kind.name, "fingerprint": planned.fingerprint, "command": display(planned.argv),
                 "status": "running", "started": _now()}
        length = self.length(step)
        if length:
            entry["length"] = length
        self.state.record(step.name, entry)
        logs = self.run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        code = self.spawn(step.kind.executable() + planned.argv[len(step.kind.program):], logs / f"{step.name}.log")
        if code != 0:
            print(f"spades-train: error: recipe step {step.name!r} failed (exit {code}; log {logs / (step.name + '.log')}); "
                  "fix it and run the recipe again: the steps done are reused", file=sys.stderr)
            return code if code in (2, 130) else 1
        outputs = {}
        for name, path in step.kind.output_paths(folder).items():
            digest = hash_output(path)
            if digest is None:
                print(f"spades-train: error: recipe step {step.name!r} ended without its output {name} ({path})",
                      file=sys.stderr)
                return 1
            outputs[name] = {"path": str(path), "sha256": digest}
        entry.update({"status": "done", "finished": _now(), "wall_s": round(time.perf_counter() - started, 1),
                      "outputs": outputs})
        self.state.record(step.name, entry)
        return 0

    def spawn(self, argv: list[str], log_path: Path) -> int:
        """Run one step's command, its output shown and kept in the step's log."""
        with open(log_path, "a") as log:
            log.write(f"# {_now()} {display(argv)}\n")
            log.flush()
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
            try:
                for line in process.stdout:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    log.write(line)
                return process.wait()
            except KeyboardInterrupt:
                process.wait()
                raise


def _raised(recorded: Optional[dict], now: dict) -> str:
    """``"expert_rounds 10 -> 20"`` for each length field raised since ``recorded`` (None:
    unbounded), else "" (also when nothing was recorded)."""
    if not isinstance(recorded, dict):
        return ""
    def count(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)
    raised = []
    for name, value in now.items():
        before = recorded.get(name)
        if not count(before) or not (value is None or count(value)):
            continue                          # unrecorded, or a state.json edited by hand: nothing to compare
        if value is None or value > before:
            raised.append(f"{name} {before} -> {value}")
    return ", ".join(raised)


def run_recipe(path: str | Path, dry_run: bool = False, starts: list[str] = (),
               log: Callable[[str], None] = print) -> int:
    """``spades-train --recipe FILE [--dry-run] [--from STEP=MODEL]``: 0 done, 2 a recipe that
    cannot run (one line on stderr), 130 interrupted, a step's failure otherwise."""
    try:
        runner = Runner(load_recipe(path), starts, log)
        return runner.dry_run() if dry_run else runner.run()
    except (RecipeError, FileNotFoundError) as exc:
        print(f"spades-train: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spades-train: interrupted; run the same command again to resume (the steps done are reused)",
              file=sys.stderr)
        return 130
