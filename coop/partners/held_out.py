"""Held-out partners stay out of training by what they are, not by what they are called.

The partner zoo (``coop/partners/zoo.py``) keeps its held-out partners for evaluation only. A name
check alone let them in another way: a held-out model copied under a new file name, passed by
path to ``init_from`` or matched by a ``partner_population`` glob, or a held-out spec spelt with
its options in another order. :func:`refuse_held_out` reads every way into a training run (the
study's runs are spades-train configs, so they pass here too) and refuses, in one line:

- ``init_from``: a file with the bytes of a held-out partner's model;
- ``partner_population``: any file a glob or path matches with the bytes of a held-out or
  validation partner's model (validation partners are refused by name there too), and entries
  that are specs meaning a held-out or validation partner (:func:`coop.partners.zoo.canonical_spec`);
- ``expert_teacher`` and ``expert_opponents``: specs that are a held-out partner (by meaning or
  model);
- ``diversity_from``: a held-out partner's name or a file with its model's bytes.

``allow_held_out: true`` in a config lets them in on purpose (its results are then no test with
strangers). No torch here: the config's ``validate`` calls it.
"""

from __future__ import annotations

import glob as globbing
from pathlib import Path
from typing import Iterable, Optional

POPULATION_SPLITS = ("held-out", "validation")     # what a training population may not hold
INIT_SPLITS = ("held-out",)                         # what a run may not start from
_GLOB_CHARS = set("*?[")


def is_path_entry(entry: str) -> bool:
    """A ``partner_population`` entry that names files (a glob, a path or a ``.pt``), not a zoo name."""
    return bool(_GLOB_CHARS & set(entry)) or "/" in entry or entry.endswith(".pt")


def matched_files(entry: str, base: Optional[Path] = None) -> list[Path]:
    """The files a glob (or path) names, sorted; relative ones from ``base``."""
    pattern = entry if base is None or Path(entry).is_absolute() else str(base / entry)
    return sorted(Path(p) for p in globbing.glob(pattern) if Path(p).is_file())


def check_files(what: str, files: Iterable[Path], splits=POPULATION_SPLITS) -> None:
    """A :class:`coop.partners.zoo.HeldOutError` when one of ``files`` is a protected partner's model."""
    from coop.partners import zoo
    for path in files:
        zoo.refuse_for_training(f"{what} matches {str(path)!r}, which", path=path, splits=splits)


def refuse_held_out(cfg) -> None:
    """Raise :class:`coop.partners.zoo.HeldOutError` when the config would train with a held-out
    (or, in a population, validation) zoo partner, whatever its file or spelling; nothing when
    ``cfg.allow_held_out``."""
    from coop.partners import zoo
    if cfg.allow_held_out:
        return
    if cfg.init_from:
        zoo.refuse_for_training(f"init_from={str(cfg.init_from)!r}", path=cfg.init_from, splits=INIT_SPLITS)
    names = {p.name for p in zoo.all_partners()}
    for i, entry in enumerate(cfg.partner_population):
        what = f"partner_population[{i}]={entry!r}"
        if is_path_entry(entry):
            check_files(what, matched_files(entry))      # files that exist now; the run checks again
        else:                                            # a zoo name (by its partner's spec) or a spec
            spec = zoo.partner(entry, purpose="evaluation").spec if entry in names else entry
            zoo.refuse_for_training(what, spec=spec, splits=POPULATION_SPLITS)
    for i, entry in enumerate(getattr(cfg, "diversity_from", None) or []):
        what = f"diversity_from[{i}]={entry!r}"
        if is_path_entry(entry):
            check_files(what, matched_files(entry), splits=INIT_SPLITS)
        else:
            spec = zoo.partner(entry, purpose="evaluation").spec if entry in names else entry
            zoo.refuse_for_training(what, spec=spec, splits=INIT_SPLITS)
    if isinstance(cfg.expert_teacher, str):
        zoo.refuse_for_training(f"expert_teacher={cfg.expert_teacher!r}", spec=cfg.expert_teacher, splits=INIT_SPLITS)
    for spec in (cfg.expert_opponents or {}):
        if spec not in ("self", "previous"):
            zoo.refuse_for_training(f"expert_opponents: {spec!r}", spec=spec, splits=INIT_SPLITS)


__all__ = ["POPULATION_SPLITS", "INIT_SPLITS", "is_path_entry", "matched_files", "check_files", "refuse_held_out"]
