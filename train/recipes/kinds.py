"""The kinds of step a recipe may use, each one of the project's commands.

| kind     | command                                        | outputs (first: the default)          |
|----------|------------------------------------------------|---------------------------------------|
| train    | ``spades-train --config FILE --set ...``       | model (model.pt), checkpoint (last.pt)|
| label    | ``spades-label --out DIR ...``                 | folder (the label shards)             |
| collect  | ``python -m train.game_bid_values collect``    | folder (the bid-value shards)         |
| fit      | ``python -m train.game_bid_values fit``        | model                                 |
| tilt     | ``python -m train.bid_tilt SOURCE OUT``        | model                                 |
| export   | ``python -m train.export CHECKPOINT OUT``      | model                                 |
| evaluate | ``spades-eval ... --json FILE``                | result (the match's JSON)             |
| ship     | ``python -m train.recipes.ship MODEL OUT``     | model (compared with the manifest's)  |

A step's ``config`` is a spades-train config for ``train`` (a file or a mapping, ``set:`` its
overrides) and the command's flags for the others (``deals: 32768`` -> ``--deals 32768``; true
-> the bare flag). ``inputs`` fill the parameters that read another step's output: a config field
(``init_from``, ``distill_data``, ...) for ``train``, a flag or the positional argument otherwise.
Every output lives in the step's folder, ``<run_dir>/<step>/``.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional


def render_value(value) -> str:
    """A config value as ``--set field=VALUE`` reads it back (YAML flow style)."""
    import yaml
    if isinstance(value, str) and value and not any(c in value for c in ":{}[],#&*!|>'\"%@`") \
            and value.strip() == value and value.lower() not in ("true", "false", "null", "yes", "no", "on", "off", "~"):
        try:
            float(value)
        except ValueError:
            return value
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    return text[:-5].strip() if text.endswith("\n...\n") else text.strip()


def flag_arguments(flags: dict) -> list[str]:
    """``{"deals": 32768, "from_policy": True, "data": [a, b]}`` -> ``--deals 32768 --from-policy --data a b``."""
    argv: list[str] = []
    for key, value in flags.items():
        flag = "--" + str(key).replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    return argv


@dataclass(frozen=True)
class StepKind:
    """What a step of this kind runs and what it leaves in its folder.

    ``build(step, inputs, folder, resume)`` returns the arguments after ``program``; ``inputs``
    maps each input parameter to its paths. ``resumable``: a killed step continues from what it
    left (its shards, its checkpoints) when rerun with the same fingerprint; the others start over."""

    name: str
    program: tuple[str, ...]
    outputs: dict[str, str]
    build: Callable
    needs_config: bool = False
    takes_config_file: bool = False
    resumable: bool = False
    flags: Optional[frozenset] = None          # the flags its config may set (None: any)
    input_parameters: Optional[frozenset] = frozenset()    # None: any (train: config fields, checked)
    required_inputs: frozenset = frozenset()
    check_step: Optional[Callable] = None

    @property
    def default_output(self) -> str:
        return next(iter(self.outputs))

    def check(self, step) -> None:
        """A ValueError naming what a step of this kind cannot take."""
        for parameter in step.inputs:
            if self.input_parameters is not None and parameter not in self.input_parameters:
                raise ValueError(f"input {parameter}: a {self.name} step reads "
                                 f"{', '.join(sorted(self.input_parameters)) or 'no inputs'}")
        if self.flags is not None:
            for key in step.config:
                if str(key) not in self.flags:
                    raise ValueError(f"config {key!r}: not a flag of {' '.join(self.program)} "
                                     f"(expected one of {', '.join(sorted(self.flags))})")
        for parameter in sorted(self.required_inputs):
            if parameter not in step.inputs:
                raise ValueError(f"no input {parameter} (a {self.name} step needs it: inputs: {{{parameter}: STEP}})")
        if self.check_step is not None:
            self.check_step(step)

    def output_paths(self, folder: Path) -> dict[str, Path]:
        return {name: folder / relative if relative else folder for name, relative in self.outputs.items()}

    def executable(self) -> list[str]:
        """The program as this machine runs it: ``python -m X`` under this interpreter, a
        console script (``spades-train``) from this environment."""
        if self.program[:2] == ("python", "-m"):
            return [sys.executable, "-m", *self.program[2:]]
        script = Path(sys.executable).parent / self.program[0]
        found = str(script) if script.is_file() else shutil.which(self.program[0])
        if found is None:
            raise FileNotFoundError(f"{self.program[0]}: not installed in this environment (pip install -e .)")
        return [found, *self.program[1:]]


def _single_path(inputs: dict, parameter: str) -> str:
    return str(inputs[parameter][0])


def _inputs_as_flags(step, inputs: dict, positional: tuple = ()) -> list[str]:
    flags = {}
    for parameter, paths in inputs.items():
        if parameter in positional:
            continue
        flags[parameter] = str(paths[0]) if step.single[parameter] else [str(p) for p in paths]
    return flag_arguments(flags)


# ---------------------------------------------------------------------------------------- train

def train_settings(step) -> dict:
    """A train step's settings as spades-train reads them: its config (a file, or inline), then
    its ``set:`` overrides; a ConfigError when a field is wrong."""
    import yaml
    from train.ppo.config import config_from_dict, flatten_sections, load_config
    overrides = [f"{k}={render_value(v)}" for k, v in step.overrides.items()]
    if step.config_file is not None:
        return load_config(step.config_file, overrides).to_dict()
    config_from_dict(flatten_sections(dict(step.config), f"step {step.name}'s config"), step.name)
    with tempfile.TemporaryDirectory() as folder:      # the fields together, as spades-train reads them
        inline = Path(folder) / f"{step.name}.yaml"
        inline.write_text(yaml.safe_dump(dict(step.config)))
        return load_config(inline, overrides).to_dict()


def _train_check(step) -> None:
    """Every field of the config, its overrides and its inputs must be a spades-train field."""
    from train.ppo.config import FIELDS, ConfigError
    for parameter in step.inputs:
        if parameter not in FIELDS:
            raise ValueError(f"input {parameter}: not a spades-train config field (inputs fill fields such as init_from)")
    try:
        train_settings(step)
    except ConfigError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def _train_build(step, inputs: dict, folder: Path, resume: bool) -> list[str]:
    config_path = step.inline_config_path if step.config_file is None else step.config_file
    argv = ["--config", str(config_path)]
    for key, value in step.overrides.items():
        argv += ["--set", f"{key}={render_value(value)}"]
    for parameter, paths in inputs.items():
        value = str(paths[0]) if step.single[parameter] else [str(p) for p in paths]
        argv += ["--set", f"{parameter}={render_value(value)}"]
    argv += ["--set", f"run_dir={render_value(str(folder.parent))}", "--set", f"name={folder.name}", "--no-progress"]
    if resume:
        argv.append("--resume")
    return argv


TRAIN = StepKind("train", ("spades-train",), {"model": "model.pt", "checkpoint": "checkpoints/last.pt"},
                 _train_build, needs_config=True, takes_config_file=True, resumable=True, input_parameters=None,
                 check_step=_train_check)

# ---------------------------------------------------------------------------------------- label

LABEL = StepKind(
    "label", ("spades-label",), {"folder": ""},
    lambda step, inputs, folder, resume: ["--out", str(folder), *_inputs_as_flags(step, inputs),
                                          *flag_arguments(step.config), "--no-progress"],
    resumable=True, input_parameters=frozenset({"student"}),
    flags=frozenset({"teacher", "opponents", "deals", "shard_deals", "follow_teacher", "continuation", "worlds",
                     "varied_start", "only", "rules", "seed", "workers"}),
    required_inputs=frozenset({"student"}))

# ------------------------------------------------------------------------------ bid values by game

COLLECT = StepKind(
    "collect", ("python", "-m", "train.game_bid_values", "collect"), {"folder": ""},
    lambda step, inputs, folder, resume: [*_inputs_as_flags(step, inputs), *flag_arguments(step.config),
                                          "--out", str(folder)],
    resumable=True, input_parameters=frozenset({"student"}),
    flags=frozenset({"deals", "shard_deals", "heuristic_share", "start", "bag_cost", "rules", "seed", "workers"}),
    required_inputs=frozenset({"student"}))

FIT = StepKind(
    "fit", ("python", "-m", "train.game_bid_values", "fit"), {"model": "model.pt"},
    lambda step, inputs, folder, resume: [*_inputs_as_flags(step, inputs), *flag_arguments(step.config),
                                          "--out", str(folder / "model.pt")],
    input_parameters=frozenset({"data", "student"}),
    flags=frozenset({"objective", "temperature", "from_policy", "epochs", "learning_rate", "step", "keep_score_tilts",
                     "rules", "seed"}),
    required_inputs=frozenset({"data", "student"}))

TILT = StepKind(
    "tilt", ("python", "-m", "train.bid_tilt"), {"model": "model.pt"},
    lambda step, inputs, folder, resume: [_single_path(inputs, "source"), str(folder / "model.pt"),
                                          *flag_arguments(step.config)],
    input_parameters=frozenset({"source"}),
    flags=frozenset({"tilt", "blind_nil", "nil", "lead_tilt", "trail_tilt"}),
    required_inputs=frozenset({"source"}))

EXPORT = StepKind(
    "export", ("python", "-m", "train.export"), {"model": "model.pt"},
    lambda step, inputs, folder, resume: [_single_path(inputs, "checkpoint"), str(folder / "model.pt")],
    input_parameters=frozenset({"checkpoint"}), flags=frozenset(),
    required_inputs=frozenset({"checkpoint"}))

# ------------------------------------------------------------------------------------- evaluate


def _evaluate_build(step, inputs: dict, folder: Path, resume: bool) -> list[str]:
    flags = {parameter: f"neural:checkpoint={paths[0]}" for parameter, paths in inputs.items()}   # a step's model
    flags.update(step.config)
    return [*flag_arguments(flags), "--json", str(folder / "result.json"), "--no-progress"]


def _evaluate_check(step) -> None:
    if "team_a" not in step.inputs and "team_a" not in step.config:
        raise ValueError("no team_a (inputs: {team_a: STEP} for a step's model, or config: {team_a: SPEC})")
    if "json" in step.config:
        raise ValueError("config 'json': the result is written to the step's folder (result.json)")


EVALUATE = StepKind("evaluate", ("spades-eval",), {"result": "result.json"}, _evaluate_build,
                    input_parameters=frozenset({"team_a", "team_b", "baseline"}), check_step=_evaluate_check)

# ----------------------------------------------------------------------------------------- ship


def _ship_check(step) -> None:
    name = step.config.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("config name: expected the model name the step's model would ship as (e.g. neural_v7)")


SHIP = StepKind(
    "ship", ("python", "-m", "train.recipes.ship"), {"model": "model.pt", "comparison": "comparison.json"},
    lambda step, inputs, folder, resume: [_single_path(inputs, "model"), str(folder / "model.pt"),
                                          *flag_arguments(step.config)],
    needs_config=True, input_parameters=frozenset({"model"}), flags=frozenset({"name"}), check_step=_ship_check,
    required_inputs=frozenset({"model"}))

KINDS: dict[str, StepKind] = {kind.name: kind for kind in (TRAIN, LABEL, COLLECT, FIT, TILT, EXPORT, EVALUATE, SHIP)}


def display(argv: list[str]) -> str:
    """A command as a person would type it."""
    return " ".join(shlex.quote(part) for part in argv)
