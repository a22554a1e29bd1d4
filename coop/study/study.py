"""The cooperation study (issue 41): ``spades-coop study --config configs/coop_study.yaml``.

One command trains several seeds of each training method with ``spades-train`` (each run an
ordinary, resumable run folder) and then measures them all with the cooperation lab:

    spades-coop study --config configs/coop_study.yaml --stage train --jobs 15   # the runs, in parallel
    spades-coop study --config configs/coop_study.yaml --stage evaluate          # the measurements
    spades-coop study --config configs/coop_study.yaml --report                  # report.md from the results
    spades-coop study --config configs/coop_study.yaml --resume                  # continue after a kill

The study folder (``folder`` in the config) holds ``runs/<method>_s<seed>/`` (run folders),
``configs/`` (each run's full config), ``logs/`` (each run's output) and ``results/`` (JSON, PNG
and ``report.md``). A method may wait for others (``after``): population training takes the
checkpoints of the self-play seeds as partners, so it starts once they are done. Every stage
skips what is already done: finished runs, and evaluation pieces whose JSON is written (their
long matches keep journals, so a killed piece resumes where it stopped).

The analysis is in :mod:`coop.study.report`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import yaml

from coop.study.errors import StudyError
from spades_env.files import write_text

STAGES = ("train", "evaluate", "all")
_STUDY_KEYS = {"name", "folder", "seeds", "train", "methods", "evaluation"}
_EVAL_DEFAULTS = {"reference": "heuristic", "suite": "held-out", "crossplay_deals": 100, "suite_deals": 50,
                  "signals_deals": 50,
                  "league_deals": 50, "league_extra": ["heuristic", "random"], "seed": 0, "workers": None,
                  "held_out_partners": None}
# held_out_partners: the held-out scenario's partners instead of the zoo's held-out split (zoo names or specs),
# for train rules the zoo's networks cannot play (a short deck: their observations are the full deck's)


MAX_JOBS = 256               # training runs at once, each a process
MAX_SEED = 2 ** 32 - 1        # spades-train's seeds (10**30 passed the check and failed in the run)


@dataclass
class Method:
    name: str
    fields: dict
    after: list[str]


@dataclass
class Study:
    name: str
    folder: Path
    seeds: list[int]
    train: dict
    methods: list[Method]
    evaluation: dict = field(default_factory=dict)

    @property
    def runs_dir(self) -> Path:
        return self.folder / "runs"

    @property
    def results_dir(self) -> Path:
        return self.folder / "results"

    def runs(self) -> list["Run"]:
        return [Run(self, m, s) for m in self.methods for s in self.seeds]

    @property
    def rules(self) -> str:
        """The rules every run trains under (``train.rules``), and so every measurement plays."""
        return str(self.train.get("rules") or "standard")


@dataclass
class Run:
    study: Study
    method: Method
    seed: int

    @property
    def name(self) -> str:
        return f"{self.method.name}_s{self.seed}"

    @property
    def path(self) -> Path:
        return self.study.runs_dir / self.name

    @property
    def done(self) -> bool:
        return (self.path / "final_eval.json").is_file() and (self.path / "model.pt").is_file()

    @property
    def started(self) -> bool:
        return (self.path / "checkpoints" / "last.pt").is_file()

    def fields(self) -> dict:
        """This run's spades-train fields: the shared ones, the method's, its name, folder and seed."""
        values = {**self.study.train, **self.method.fields, "name": self.name, "run_dir": str(self.study.runs_dir),
                  "seed": self.seed}
        population = values.get("partner_population")
        if isinstance(population, list):
            values["partner_population"] = [str(p).replace("{runs}", str(self.study.runs_dir)) for p in population]
        return values

    @property
    def spec(self) -> str:
        return f"neural:checkpoint={self.path / 'model.pt'}"


def load_study(path: str | os.PathLike, folder: Optional[str] = None) -> Study:
    """Read and check a study config (``folder`` overrides the config's): every field's type and
    range here, so that a wrong one is one line before any run starts, not a traceback in one."""
    from spades_env.safe_yaml import YamlLimitError, load_yaml_file
    try:
        data = load_yaml_file(path, "study config")
    except YamlLimitError as exc:
        raise StudyError(str(exc)) from None
    if not isinstance(data, dict):
        raise StudyError(f"{path}: expected a mapping with {', '.join(sorted(_STUDY_KEYS))}")
    unknown = sorted(set(data) - _STUDY_KEYS, key=str)
    if unknown:
        raise StudyError(f"{path}: unknown key {unknown[0]!r}; expected some of {', '.join(sorted(_STUDY_KEYS))}")
    seeds = data.get("seeds")
    if not isinstance(seeds, list) or not seeds or any(not isinstance(s, int) or isinstance(s, bool)
                                                       or not 0 <= s <= MAX_SEED for s in seeds) \
            or len(set(seeds)) != len(seeds):
        raise StudyError(f"{path}: seeds={_shown(seeds)}: expected a list of distinct integers from 0 to "
                         f"{MAX_SEED:,}")
    for key in ("name", "folder"):
        if data.get(key) is not None and not (isinstance(data[key], str) and data[key].strip()):
            raise StudyError(f"{path}: {key}={_shown(data[key])}: expected a text")
    train = data.get("train") or {}
    if not isinstance(train, dict):
        raise StudyError(f"{path}: train={_shown(train)}: expected a mapping of spades-train fields")
    for reserved in ("name", "run_dir", "seed"):
        if reserved in train:
            raise StudyError(f"{path}: train.{reserved} is set by the study for each run; remove it")
    methods_in = data.get("methods")
    if not isinstance(methods_in, dict) or not methods_in:
        raise StudyError(f"{path}: methods: expected a mapping of method name -> {{fields: ..., after: [...]}}")
    methods = []
    for name, body in methods_in.items():
        body = body or {}
        if not isinstance(name, str) or not name.isidentifier():
            raise StudyError(f"{path}: method name {name!r}: expected a word (letters, digits, _)")
        if not isinstance(body, dict) or set(body) - {"fields", "after"}:
            raise StudyError(f"{path}: methods.{name}: expected a mapping with 'fields' and optionally 'after'")
        fields = body.get("fields") or {}
        if not isinstance(fields, dict):
            raise StudyError(f"{path}: methods.{name}.fields={_shown(fields)}: expected a mapping of spades-train "
                             "fields")
        after = body.get("after") or []
        if not isinstance(after, list) or any(not isinstance(a, str) for a in after):
            raise StudyError(f"{path}: methods.{name}.after={_shown(after)}: expected a list of other methods' names")
        bad = [a for a in after if a not in methods_in or a == name]
        if bad:
            raise StudyError(f"{path}: methods.{name}.after: {bad[0]!r} is not another method of the study")
        methods.append(Method(name, dict(fields), list(after)))
    _refuse_waiting_circles(path, {m.name: m.after for m in methods})
    given = data.get("evaluation") or {}
    if not isinstance(given, dict):
        raise StudyError(f"{path}: evaluation={_shown(given)}: expected a mapping of "
                         f"{', '.join(sorted(_EVAL_DEFAULTS))}")
    evaluation = {**_EVAL_DEFAULTS, **given}
    unknown = sorted(set(evaluation) - set(_EVAL_DEFAULTS), key=str)
    if unknown:
        raise StudyError(f"{path}: evaluation: unknown key {unknown[0]!r}; expected some of "
                         f"{', '.join(sorted(_EVAL_DEFAULTS))}")
    _check_evaluation(path, evaluation)
    study = Study(str(data.get("name") or Path(path).stem), Path(folder or data.get("folder") or
                                                                  f"runs/{Path(path).stem}"),
                  list(seeds), dict(train), methods, evaluation)
    check_study_folder(study.folder)
    for run in study.runs():                   # every run's config must be a valid spades-train config
        check_run_config(run)
    return study


def _shown(value) -> str:
    """A value for an error line, cut short (a 10**30 or a long list stays readable)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_evaluation(path, evaluation: dict) -> None:
    """The evaluation settings' types and ranges (a wrong one failed deep in the evaluate stage)."""
    from coop.common import MAX_DEALS
    from evaluation.matches import MAX_WORKERS

    def whole(key: str, least: int, most: int) -> None:
        value = evaluation[key]
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            raise StudyError(f"{path}: evaluation.{key}={_shown(value)}: expected a whole number from {least} "
                             f"to {most:,}")

    for key in ("reference", "suite"):
        if not isinstance(evaluation[key], str) or not evaluation[key].strip():
            raise StudyError(f"{path}: evaluation.{key}={_shown(evaluation[key])}: expected a text")
    for key in ("crossplay_deals", "suite_deals", "league_deals"):
        whole(key, 1, MAX_DEALS)
    whole("signals_deals", 2, MAX_DEALS)
    whole("seed", 0, MAX_SEED)
    if evaluation["workers"] is not None:
        whole("workers", 1, MAX_WORKERS)
    extra = evaluation["league_extra"]
    if not isinstance(extra, list) or any(not isinstance(spec, str) or not spec.strip() for spec in extra):
        raise StudyError(f"{path}: evaluation.league_extra={_shown(extra)}: expected a list of agent specs")
    partners = evaluation["held_out_partners"]
    if partners is not None and (not isinstance(partners, list) or not partners
                                 or any(not isinstance(p, str) or not p.strip() for p in partners)):
        raise StudyError(f"{path}: evaluation.held_out_partners={_shown(partners)}: expected a list of zoo partner "
                         "names or agent specs (or null: the zoo's held-out split)")
    from agents.specs import AgentSpecError, check_agent_name, parse_agent_spec
    for where, spec in [("reference", evaluation["reference"])] + [("league_extra", s) for s in extra]:
        try:                  # a misspelt agent failed after the whole train stage
            check_agent_name(parse_agent_spec(spec)[0], spec)
        except AgentSpecError as exc:
            raise StudyError(f"{path}: evaluation.{where}: {exc}") from None


def check_study_folder(folder: Path) -> None:
    """The study folder and its parts are folders, or do not exist yet (a file or ``/dev/null``
    there failed with a traceback when the first run was launched)."""
    for part in (folder, folder / "runs", folder / "results", folder / "configs", folder / "logs"):
        if os.path.lexists(part) and not part.is_dir():
            if part == folder:
                raise StudyError(f"--folder {part} is not a folder: expected a study folder (new, or one to resume)")
            raise StudyError(f"{part} is not a folder: the study keeps its {part.name} there (move the file away)")
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise StudyError(f"--folder {folder}: {probe} is not a folder")
    from evaluation.cli_common import writable
    if not writable(probe):
        raise StudyError(f"--folder {folder}: {probe} is not writable (read-only)")


def _refuse_waiting_circles(path, after: dict[str, list[str]]) -> None:
    """Methods that wait for each other (a after b, b after a, or longer) would never start."""
    ready: set[str] = set()
    while len(ready) < len(after):
        now = {m for m, waits in after.items() if m not in ready and set(waits) <= ready}
        if not now:
            stuck = sorted(set(after) - ready)
            raise StudyError(f"{path}: methods {', '.join(stuck)} wait for each other ('after' goes round "
                             "in a circle): none of them could start")
        ready |= now


def check_run_config(run: Run):
    """The run's spades-train config, validated (globs of populations are not resolved here)."""
    from train.ppo.config import ConfigError, config_from_dict
    try:
        return config_from_dict(run.fields(), f"study run {run.name}")
    except ConfigError as exc:
        raise StudyError(str(exc)) from None


def _where_independent(fields: dict, runs_dir: str) -> dict:
    """A run's fields without where the study lies: no ``run_dir``, ``{runs}`` in population globs."""
    out = {k: v for k, v in fields.items() if k != "run_dir"}
    population = out.get("partner_population")
    if isinstance(population, list) and runs_dir:
        out["partner_population"] = [p.replace(runs_dir, "{runs}") if isinstance(p, str) else p for p in population]
    return out


def check_runs_unchanged(study: Study) -> None:
    """A run already started keeps the fields it started with: train fields edited between a kill
    and ``--resume`` would give runs of two configs in one study, so they are refused."""
    from spades_env.safe_yaml import YamlLimitError, load_yaml_file
    for run in study.runs():
        path = study.folder / "configs" / f"{run.name}.yaml"
        if not (run.started or run.done) or not path.is_file():
            continue
        try:
            before = load_yaml_file(path, "run config")
        except YamlLimitError as exc:
            raise StudyError(str(exc)) from None
        now = _where_independent(run.fields(), str(study.runs_dir))
        if isinstance(before, dict):        # the study folder may have moved or been named another way
            before = _where_independent(before, str(before.get("run_dir", "")))
        if before != now:
            keys = before.keys() | now.keys() if isinstance(before, dict) else now.keys()
            changed = sorted(k for k in keys if not isinstance(before, dict) or before.get(k) != now.get(k))
            raise StudyError(f"run {run.name} started with other fields than the config gives now "
                             f"({', '.join(changed[:5])} changed; see {path}): put them back, or start the "
                             "study in another --folder")


# ------------------------------------------------------------------ the train stage
def _write_run_config(run: Run) -> Path:
    path = run.study.folder / "configs" / f"{run.name}.yaml"
    return write_text(path, yaml.safe_dump(run.fields(), sort_keys=False), "run config")


def _launch(run: Run) -> subprocess.Popen:
    config = _write_run_config(run)
    command = [sys.executable, "-m", "train.ppo.trainer", "--config", str(config)]
    if run.started:
        command.append("--resume")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log_dir = run.study.folder / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    from evaluation.matches import die_with_parent
    with open(log_dir / f"{run.name}.log", "a") as log:       # the run keeps its own copy of the file
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        # a run ends with the study, however the study ends (SIGKILL included): no orphan trains on
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent)


def train_stage(study: Study, jobs: int = 1, log: Callable[[str], None] = print, poll_s: float = 0.5) -> dict:
    """Run every unfinished run, at most ``jobs`` at once, each after the methods it waits for.
    Returns ``{run name: 'done' | 'failed' | 'skipped'}``; a killed stage resumes where it stopped."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise StudyError(f"--jobs {jobs!r}: expected a whole number from 1 to {MAX_JOBS}")
    pending = [r for r in study.runs()]
    status = {r.name: "done" for r in pending if r.done}
    pending = [r for r in pending if not r.done]
    running: dict[str, tuple[Run, subprocess.Popen, float]] = {}
    if not pending:
        log(f"train: all {len(status)} runs are done")
        return status
    log(f"train: {len(status)} runs done, {len(pending)} to run, {jobs} at a time (logs in {study.folder / 'logs'})")
    try:
        while pending or running:
            for name, (run, proc, started) in list(running.items()):
                code = proc.poll()
                if code is None:
                    continue
                del running[name]
                status[name] = "done" if code == 0 and run.done else "failed"
                log(f"train: {name} {status[name]} in {time.time() - started:.0f} s"
                    + ("" if status[name] == "done" else f" (exit {code}; see logs/{name}.log)"))
            for run in list(pending):
                waits = [r for r in study.runs() if r.method.name in run.method.after]
                if any(status.get(r.name) in ("failed", "skipped") for r in waits):
                    status[run.name] = "skipped"
                    pending.remove(run)
                    log(f"train: {run.name} skipped (a run it waits for failed)")
                    continue
                if len(running) >= jobs or any(status.get(r.name) != "done" for r in waits):
                    continue
                pending.remove(run)
                log(f"train: {run.name} {'resumed' if run.started else 'started'}")
                running[run.name] = (run, _launch(run), time.time())
            if running:
                time.sleep(poll_s)
    finally:
        for run, proc, _ in running.values():        # a killed stage takes its runs with it
            if proc.poll() is None:
                proc.terminate()
        for run, proc, _ in running.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return status


def train_runs(study: Study, jobs: int, resume: bool, log: Callable[[str], None] = print) -> tuple[list[str], int]:
    """The train stage of a command: refuses a folder that already holds runs unless ``resume``,
    trains what is not done; returns the runs that did not finish and how many runs there were."""
    if any(r.started or r.done for r in study.runs()) and not resume:
        raise StudyError(f"{study.folder} already holds runs of this study: continue it with --resume, "
                         "or pick another --folder")
    status = train_stage(study, jobs, log=log)
    return sorted(n for n, s in status.items() if s != "done"), len(status)


# ------------------------------------------------------------------ the command
def build_parser() -> argparse.ArgumentParser:
    from evaluation.cli_common import OneLineParser
    parser = OneLineParser(prog="spades-coop study", description="Train several seeds of each training "
                                     "method (spades-train runs) and measure them with the cooperation lab: "
                                     "cross-play, held-out scenarios, signals, league (docs/cooperation.md).")
    parser.add_argument("--config", required=True, help="study config (e.g. configs/coop_study.yaml)")
    parser.add_argument("--stage", choices=STAGES, default="all", help="train, evaluate or all (default all)")
    parser.add_argument("--jobs", type=int, default=1, help="training runs at once, one torch thread each")
    parser.add_argument("--workers", type=int, default=None, help="evaluation processes (default: the config's, "
                                                                    "else the CPUs available)")
    parser.add_argument("--resume", action="store_true", help="continue a study folder that already holds runs")
    parser.add_argument("--folder", help="the study folder (default: the config's folder)")
    parser.add_argument("--report", action="store_true", help="only write results/report.md from the results")
    from evaluation.cli_common import add_progress_flags
    add_progress_flags(parser)
    return parser


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt       # SIGTERM: the runs are stopped as for Ctrl-C (their checkpoints stay)


def main(argv: Optional[list[str]] = None) -> int:
    import signal
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    from coop.study.report import cpu_hours, evaluate_stage, write_report
    from evaluation.outcomes import EvaluationError
    try:
        study = load_study(args.config, args.folder)
        if args.workers is not None:                  # checked now, not after the training
            from evaluation.matches import check_workers
            check_workers(args.workers)
        if not args.report:
            check_runs_unchanged(study)
        if args.report:
            print(f"wrote {write_report(study)}")
            return 0
        if args.stage in ("train", "all"):
            failed, total = train_runs(study, args.jobs, args.resume, log=lambda line: print(line, flush=True))
            print(f"train: {total - len(failed)}/{total} runs done, {cpu_hours(study):.3f} CPU hours "
                  "of training in all (the runs' training time, one thread each)")
            if failed:
                print(f"spades-coop study: error: runs not finished: {', '.join(failed)}", file=sys.stderr)
                return 1
        if args.stage in ("evaluate", "all"):
            workers = args.workers if args.workers is not None else study.evaluation.get("workers")
            evaluate_stage(study, workers=workers, progress=not args.no_progress,
                           log=lambda line: print(line, flush=True))
            print(f"wrote {write_report(study)}")
    except (StudyError, EvaluationError, OSError) as exc:
        print(f"spades-coop study: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spades-coop study: interrupted; continue with --resume", file=sys.stderr)
        return 130
    return 0


__all__ = ["Study", "Method", "Run", "StudyError", "load_study", "train_stage", "train_runs", "main"]
