"""A recipe file: named steps, each a command with its config, inputs named by step.

    name: neural
    steps:
      imitation:
        kind: train                       # a spades-train run
        config: neural/imitation.yaml     # relative to the recipe file, or an inline mapping
        set: {max_updates: 0}             # every override, written here
      ppo:
        kind: train
        config: neural/ppo.yaml
        inputs: {init_from: imitation.checkpoint}   # a config field (or flag) <- a step's output
      collect:
        kind: collect                     # python -m train.game_bid_values collect
        config: {deals: 32768, seed: 1}   # its flags
        inputs: {student: ppo}            # a step's default output (its model)

A recipe may take a prefix of another: ``extends: neural.yaml`` with ``until: [card_play_bags]``
takes those steps of neural.yaml and every step they read, as they are written there; its own
``steps`` come after (and may read them).

Inputs name steps, never files: what a step reads is what the recipe made (or, with
``--from STEP=MODEL``, a shipped model by its manifest name). Everything is checked when the
file is read — unknown kinds, unknown steps, cycles, missing configs, unknown config fields —
and each mistake is one :class:`RecipeError` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .kinds import KINDS, StepKind

STEP_NAME = re.compile(r"[a-z][a-z0-9_]*")
RECIPE_KEYS = {"name", "description", "run_dir", "steps", "extends", "until"}
STEP_KEYS = {"kind", "config", "set", "inputs", "note"}
RESERVED_NAMES = {"configs", "logs"}        # folders of the run folder: inline configs, the steps' logs


class RecipeError(ValueError):
    """A recipe that cannot run as written (one line: what is wrong, what was expected)."""


@dataclass(frozen=True)
class InputRef:
    """One input of a step: ``step`` (its default output) or ``step.output``."""

    step: str
    output: Optional[str] = None

    @property
    def text(self) -> str:
        return self.step if self.output is None else f"{self.step}.{self.output}"


@dataclass
class Step:
    """One step as the recipe writes it, its config resolved to a file or a mapping."""

    name: str
    kind: StepKind
    config_file: Optional[Path]            # a config given by path (relative to the recipe file)
    config: dict                           # the config given inline (or {} with a config file)
    overrides: dict                        # ``set:`` (train steps)
    inputs: dict[str, list[InputRef]]      # parameter -> one or more step outputs
    single: dict[str, bool]                # parameter -> given as one ref (not a list)
    note: str = ""
    inline_config_path: Optional[Path] = None     # where the runner writes an inline train config

    def upstream(self) -> list[str]:
        return list(dict.fromkeys(ref.step for refs in self.inputs.values() for ref in refs))


@dataclass
class Recipe:
    name: str
    path: Path
    run_dir: Path
    steps: dict[str, Step] = field(default_factory=dict)      # in order: every input before its user
    description: str = ""

    def downstream(self, name: str) -> list[str]:
        return [s.name for s in self.steps.values() if name in s.upstream()]


def _where(path: Path, step: Optional[str] = None) -> str:
    return f"{path}: step {step!r}" if step else str(path)


def load_recipe(path: str | Path, depth: int = 0) -> Recipe:
    """Read and check a recipe file; steps come back in an order that runs every input first."""
    from spades_env.safe_yaml import YamlLimitError, load_yaml_file
    import yaml
    path = Path(path)
    if not path.is_file():
        raise RecipeError(f"{path}: no such recipe file (expected a YAML file such as configs/recipes/neural.yaml)")
    try:
        data = load_yaml_file(path, "recipe")
    except YamlLimitError as exc:
        raise RecipeError(str(exc)) from None
    except OSError as exc:
        raise RecipeError(f"cannot read recipe {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path}: not valid YAML ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: expected a mapping with name and steps, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - RECIPE_KEYS)
    if unknown:
        raise RecipeError(f"{path}: unknown key {unknown[0]!r} (expected {', '.join(sorted(RECIPE_KEYS))})")
    name = data.get("name")
    if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
        raise RecipeError(f"{path}: name {name!r}: expected a lower-case name (letters, digits, _)")
    steps = data.get("steps") or {}
    if not isinstance(steps, dict) or not (steps or data.get("extends")):
        raise RecipeError(f"{path}: steps: expected a mapping of step name -> step (kind, config, inputs)")
    run_dir = data.get("run_dir", f"runs/recipes/{name}")
    if not isinstance(run_dir, str) or not run_dir:
        raise RecipeError(f"{path}: run_dir {run_dir!r}: expected a folder path")
    here = Path.cwd().resolve()
    if Path(run_dir).resolve() in (here, *here.parents):       # its step folders are emptied before a step runs
        raise RecipeError(f"{path}: run_dir {run_dir!r} is this folder or above it: expected a folder of its own "
                          f"(default runs/recipes/{name})")
    recipe = Recipe(name=name, path=path, run_dir=Path(run_dir), description=str(data.get("description") or ""))
    parsed = _base_steps(path, data, depth)
    for step_name, body in steps.items():
        if str(step_name) in parsed:
            raise RecipeError(f"{_where(path, str(step_name))}: already a step of {data['extends']}; give it another name")
        parsed[str(step_name)] = _parse_step(path, str(step_name), body)
    for step in parsed.values():
        for parameter, refs in step.inputs.items():
            for ref in refs:
                if ref.step not in parsed:
                    close = [n for n in parsed if n.startswith(ref.step[:4])][:1]
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise RecipeError(f"{_where(path, step.name)}: input {parameter}: unknown step {ref.step!r}{hint}")
                if ref.step == step.name:
                    raise RecipeError(f"{_where(path, step.name)}: input {parameter}: a step cannot read its own output")
                produced = parsed[ref.step].kind.outputs
                if ref.output is not None and ref.output not in produced:
                    raise RecipeError(f"{_where(path, step.name)}: input {parameter}: step {ref.step!r} "
                                      f"({parsed[ref.step].kind.name}) has no output {ref.output!r} "
                                      f"(expected one of {', '.join(produced)})")
    for step_name in _order(path, parsed):
        recipe.steps[step_name] = parsed[step_name]
    return recipe


def _base_steps(path: Path, data: dict, depth: int) -> dict[str, Step]:
    """The steps an ``extends:`` recipe takes from its base: ``until`` and all they read."""
    base_file, until = data.get("extends"), data.get("until")
    if base_file is None:
        if until is not None:
            raise RecipeError(f"{path}: until goes with extends (the recipe whose prefix this one is)")
        return {}
    if not isinstance(base_file, str) or not base_file:
        raise RecipeError(f"{path}: extends {base_file!r}: expected a recipe file (relative to this one)")
    if depth >= 4:
        raise RecipeError(f"{path}: extends goes more than 4 recipes deep (a recipe extending itself?)")
    base = load_recipe(path.parent / base_file, depth + 1)
    names = until if isinstance(until, list) else [until]
    if until is None or not names or not all(isinstance(n, str) for n in names):
        raise RecipeError(f"{path}: until: expected the last step (or steps) of {base_file} to take")
    taken: set[str] = set()
    stack = []
    for name in names:
        if name not in base.steps:
            raise RecipeError(f"{path}: until {name!r}: no such step in {base_file} (steps: {', '.join(base.steps)})")
        stack.append(name)
    while stack:
        name = stack.pop()
        if name not in taken:
            taken.add(name)
            stack += base.steps[name].upstream()
    return {name: step for name, step in base.steps.items() if name in taken}


def _parse_step(path: Path, name: str, body: Any) -> Step:
    where = _where(path, name)
    if not STEP_NAME.fullmatch(name):
        raise RecipeError(f"{path}: step name {name!r}: expected lower-case letters, digits and _")
    if name in RESERVED_NAMES:
        raise RecipeError(f"{path}: step name {name!r} is the run folder's own ({', '.join(sorted(RESERVED_NAMES))}); "
                          "give the step another name")
    if not isinstance(body, dict):
        raise RecipeError(f"{where}: expected a mapping with kind, config, inputs")
    unknown = sorted(set(map(str, body)) - STEP_KEYS)
    if unknown:
        raise RecipeError(f"{where}: unknown key {unknown[0]!r} (expected {', '.join(sorted(STEP_KEYS))})")
    kind_name = body.get("kind")
    if kind_name not in KINDS:
        raise RecipeError(f"{where}: kind {kind_name!r}: expected one of {', '.join(sorted(KINDS))}")
    kind = KINDS[kind_name]
    config, config_file = body.get("config"), None
    if config is None:
        if kind.needs_config:
            raise RecipeError(f"{where}: no config (a {kind.name} step needs config: FILE or an inline mapping)")
        config = {}
    elif isinstance(config, str):
        config_file = (path.parent / config)
        if not config_file.is_file():
            raise RecipeError(f"{where}: config {config!r}: no such file {config_file} (paths are relative to the recipe)")
        if not kind.takes_config_file:
            raise RecipeError(f"{where}: config {config!r}: a {kind.name} step takes its flags inline (a mapping)")
        config = {}
    elif not isinstance(config, dict):
        raise RecipeError(f"{where}: config: expected a file path or a mapping, got {type(config).__name__}")
    overrides = body.get("set") or {}
    if not isinstance(overrides, dict):
        raise RecipeError(f"{where}: set: expected a mapping of field: value")
    if overrides and not kind.takes_config_file:
        raise RecipeError(f"{where}: set: only train steps take overrides; write a {kind.name} step's flags in config")
    raw_inputs = body.get("inputs") or {}
    if not isinstance(raw_inputs, dict):
        raise RecipeError(f"{where}: inputs: expected a mapping of parameter: step (or a list of steps)")
    inputs, single = {}, {}
    for parameter, value in raw_inputs.items():
        parameter = str(parameter)
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v for v in values):
            raise RecipeError(f"{where}: input {parameter}: expected a step name (or step.output), or a list of them")
        refs = []
        for text in values:
            step_name, _, output = text.partition(".")
            if "/" in text or text.endswith(".pt") or not STEP_NAME.fullmatch(step_name):
                raise RecipeError(f"{where}: input {parameter}: {text!r} is not a step; inputs name the step that "
                                  "makes them, never a file (a shipped model enters with --from STEP=MODEL)")
            refs.append(InputRef(step_name, output or None))
        if parameter in config or parameter in overrides:
            raise RecipeError(f"{where}: input {parameter}: also set in the config; give it once")
        inputs[parameter], single[parameter] = refs, not isinstance(value, list)
    step = Step(name=name, kind=kind, config_file=config_file, config=dict(config), overrides=dict(overrides),
                inputs=inputs, single=single, note=str(body.get("note") or ""))
    try:
        kind.check(step)
    except ValueError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    return step


def _order(path: Path, steps: dict[str, Step]) -> list[str]:
    """The steps in file order, each moved after its inputs; a cycle is named."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            cycle = trail[trail.index(name):] + [name]
            raise RecipeError(f"{path}: the steps form a cycle ({' -> '.join(cycle)}); an input must come from an "
                              "earlier step")
        state[name] = "open"
        for upstream in steps[name].upstream():
            visit(upstream, trail + [name])
        state[name] = "done"
        order.append(name)

    for name in steps:
        visit(name, [])
    return order
