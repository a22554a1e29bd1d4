"""The manifest of the shipped models: ``agents/models/manifest.json``.

Every file shipped in ``agents/models`` is listed there by name (``neural_v7``, ``zoo_scratch_s1``)
with its SHA-256, its parent, the recipe and step that made it, its date and its headline result
with the command that measured it. A name never changes its bytes: shipping a new policy adds a
file and moves the alias ``neural``; loading a shipped model checks its hash against the manifest.

Two kinds of file sit beside the manifest without being in it: a person's clone
(``human_NAME.pt``, written by ``spades-coop clone``, gitignored: it exists on one machine only,
so there is nothing to pin) loads unchecked under its own name; any other unlisted ``.pt`` file is
refused, since a name that no manifest pins could mean anything.

No torch here: the zoo and the web table resolve names without loading a network.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Optional

MODELS_DIR = Path(__file__).parent / "models"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "spades-model-manifest"
PEOPLE_PREFIX = "human_"          # people's clones: local, gitignored, outside the manifest
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]+")


class ManifestError(ValueError):
    """A manifest that cannot be read, or a name it does not hold."""


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int) -> dict:
    from spades_env.files import MAX_JSON_BYTES, FileRuleError, check_input
    try:
        data = json.loads(check_input(path, "model manifest", MAX_JSON_BYTES).read_text())
    except FileRuleError as exc:
        raise ManifestError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: not a readable model manifest ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or not isinstance(data.get("models"), list):
        raise ManifestError(f"{path}: expected a JSON object with format {MANIFEST_FORMAT!r} and a list of models")
    return data


def load_manifest(models_dir: str | Path | None = None) -> dict:
    """The manifest as written: ``{"format", "aliases", "former_names", "models": [...]}``."""
    path = Path(models_dir if models_dir is not None else MODELS_DIR) / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(f"{path}: no model manifest (expected agents/models/{MANIFEST_NAME})")
    return _read(str(path), path.stat().st_mtime_ns)


def entries(models_dir: str | Path | None = None) -> dict[str, dict]:
    """Every listed model by name."""
    return {entry["name"]: entry for entry in load_manifest(models_dir)["models"]}


def resolve_name(name: str, models_dir: str | Path | None = None) -> str:
    """The model a name means: itself if listed, an alias's target (``neural`` -> ``neural_v7``),
    or the new name of a renamed file (``neural_standard_v3`` -> ``neural_v3``). Raises
    :class:`ManifestError` for a name the manifest does not hold."""
    manifest = load_manifest(models_dir)
    listed = {entry["name"] for entry in manifest["models"]}
    aliases, former = manifest.get("aliases", {}), manifest.get("former_names", {})
    text = str(name)
    seen = set()
    while text not in listed and text not in seen:
        seen.add(text)
        if text in aliases:
            text = aliases[text]
        elif text in former:
            text = former[text]
        else:
            break
    if text not in listed:
        raise ManifestError(f"{name!r} is not a model in {MANIFEST_NAME} (expected one of "
                            f"{', '.join(sorted(listed | set(aliases)))})")
    return text


def model_path(name: str, models_dir: str | Path | None = None, verify: bool = True) -> Path:
    """The file of a shipped model by name (alias and former names followed), its SHA-256
    checked against the manifest unless ``verify`` is false. A person's clone (``human_NAME``)
    is returned unchecked. :class:`ManifestError` for an unknown name, a missing file or a file
    whose bytes are not the ones its name was shipped with."""
    folder = Path(models_dir if models_dir is not None else MODELS_DIR)
    text = str(name)
    if not NAME_PATTERN.fullmatch(text):
        raise ManifestError(f"{text!r}: expected a model name (letters, digits, _ and -), not a path")
    if text.startswith(PEOPLE_PREFIX):
        return folder / f"{text}.pt"
    entry = entries(folder)[resolve_name(text, folder)]
    path = folder / entry["file"]
    if not path.is_file():
        raise ManifestError(f"{path}: the file of model {entry['name']!r} is missing (the manifest lists it)")
    if verify:
        verify_file(entry, path)
    return path


def verify_file(entry: dict, path: Path) -> None:
    """Refuse a file whose bytes differ from the manifest's SHA-256 for its name (hashes are
    remembered per file size and modification time, so a loop of loads reads each file once)."""
    stat = path.stat()
    actual = _hash_once(str(path), stat.st_size, stat.st_mtime_ns)
    if actual != entry["sha256"]:
        raise ManifestError(f"{path}: its SHA-256 {actual[:16]}... is not the {entry['sha256'][:16]}... the manifest "
                            f"pins for {entry['name']!r}; a shipped name never changes its bytes (ship a new file "
                            "under a new name instead)")


@functools.lru_cache(maxsize=64)
def _hash_once(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def manifest_entry_for_file(path: str | Path, models_dir: str | Path | None = None) -> Optional[dict]:
    """The manifest entry whose file is ``path`` (a file inside the models folder), or None."""
    folder = Path(models_dir if models_dir is not None else MODELS_DIR).resolve()
    path = Path(path).resolve()
    if path.parent != folder or not (folder / MANIFEST_NAME).is_file():
        return None
    for entry in load_manifest(folder)["models"]:
        if entry["file"] == path.name:
            return entry
    return None


def listed_names(models_dir: str | Path | None = None) -> list[str]:
    """The names a spec may use: every listed model and alias, plus the people's clones present."""
    folder = Path(models_dir if models_dir is not None else MODELS_DIR)
    manifest = load_manifest(folder)
    names = {entry["name"] for entry in manifest["models"]} | set(manifest.get("aliases", {}))
    names |= {path.stem for path in folder.glob(f"{PEOPLE_PREFIX}*.pt")}
    return sorted(names)
