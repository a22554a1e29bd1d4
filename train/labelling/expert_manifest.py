"""What a resumed expert iteration builds on, checked: every finished round's files and label
shards by their SHA-256, recorded in the trainer's checkpoint (and shown in
``expert/manifest.json``).

A round writes, in order: ``student.pt`` (the policy it starts from), the label shards,
``label_manifest.json`` (their hashes, once all are written), ``fitted.pt`` and ``fit.json``
(which records ``fitted.pt``'s hash), then ``round.json``. When the round is over its record
(every one of those files' hashes) goes into the checkpoint with ``expert_rounds_done``. A
resume refuses, in one line naming the file, anything that does not match: a finished round's
file missing, changed or unreadable, a shard deleted or copied in, a checkpoint that counts
more rounds than it has records of, a ``student.pt`` that is not the policy the checkpoint
resumes from. A checkpoint from before the records has its rounds checked for their files'
presence and round numbers, and then recorded as they are (:func:`adopt_older_rounds`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import torch

from spades_env.files import MAX_JSON_BYTES, MAX_MODEL_BYTES, FileRuleError, file_sha256, read_text, write_text
from train.ppo.config import ConfigError

ROUND_FILES = ("student.pt", "fitted.pt", "fit.json", "round.json")
LABELS_MANIFEST = "label_manifest.json"


class ExpertIterationError(ConfigError):
    """An expert-iteration run folder that a resume cannot build on."""


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (a regular file, by the input rule: never a device or FIFO)."""
    try:
        return file_sha256(path, "run file", MAX_MODEL_BYTES)
    except FileRuleError as exc:
        raise ExpertIterationError(str(exc)) from None


def read_json(path: Path, keys: tuple[str, ...] = ()) -> dict:
    """A JSON object written by the run; a missing, torn or foreign file is refused naming it."""
    try:
        if not Path(path).exists():
            raise FileNotFoundError(path)
        data = json.loads(read_text(path, "run file", MAX_JSON_BYTES))       # never a device or a FIFO
    except FileNotFoundError:
        raise ExpertIterationError(f"{path}: missing; a resumed run needs the files of the rounds it builds on "
                                   "(restore it, or start the run over with --overwrite)") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ExpertIterationError(f"{path}: unreadable or not JSON ({type(exc).__name__}); restore it, or delete "
                                   "the round's folder if the checkpoint is from before that round") from None
    if not isinstance(data, dict) or any(key not in data for key in keys):
        raise ExpertIterationError(f"{path}: not what the run wrote (expected a JSON object with "
                                   f"{', '.join(keys) or 'fields'})")
    return data


def write_json(path: Path, data: dict) -> None:
    """Write atomically (a kill leaves the old file or none), by the output rule."""
    try:
        write_text(path, json.dumps(data, indent=2, default=float), "run file")
    except FileRuleError as exc:
        raise ExpertIterationError(str(exc)) from None


def labels_record(folders: list[Path], labels: int, label_s: float) -> dict:
    """The hashes of the round's label folders (``labels.json`` and every shard), with the number
    of labels and the seconds the labelling took."""
    return {"labels": labels, "label_s": label_s,
            "folders": {folder.name: {p.name: file_digest(p) for p in
                                      [folder / "labels.json", *sorted(folder.glob("shard_*.pt"))]}
                        for folder in folders}}


def verify_files(folder: Path, expected: dict[str, str], what: str) -> None:
    """Every file of ``expected`` (name -> SHA-256) in ``folder`` as recorded, and no other shard."""
    for name, digest in expected.items():
        path = folder / name
        if not path.is_file():
            raise ExpertIterationError(f"{path}: missing; {what} records it (restore it, or start the run over "
                                       "with --overwrite)")
        if file_digest(path) != digest:
            raise ExpertIterationError(f"{path}: changed since {what} recorded it (its SHA-256 differs); restore "
                                       "it, or start the run over with --overwrite")
    extra = sorted(p.name for p in folder.glob("shard_*.pt") if p.name not in expected)
    if extra:
        raise ExpertIterationError(f"{folder / extra[0]}: a shard {what} does not record (copied in?); remove it")


def verify_labels(round_folder: Path, record: dict, what: str) -> list[Path]:
    """Check the label folders of a ``labels_record``; returns them."""
    folders = []
    for name, files in record["folders"].items():
        folder = round_folder / name
        if not folder.is_dir():
            raise ExpertIterationError(f"{folder}: missing; {what} records its labels")
        verify_files(folder, files, what)
        folders.append(folder)
    return folders


def read_labels_manifest(round_folder: Path) -> Optional[dict]:
    """The round's ``label_manifest.json`` if its labelling finished, else None."""
    path = round_folder / LABELS_MANIFEST
    if not path.exists():
        return None
    return read_json(path, ("labels", "label_s", "folders"))


def round_record(round_folder: Path, labels: dict) -> dict:
    """A finished round's record for the checkpoint: its files' hashes and its labels'."""
    return {"files": {name: file_digest(round_folder / name) for name in ROUND_FILES}, "labels": labels}


def verify_finished_rounds(expert_dir: Path, done: int, manifest: Optional[dict[str, Any]],
                           checkpoint: str, check_files: bool = True, labels_from: int = 1) -> None:
    """Rounds 1..``done`` (the checkpoint's ``expert_rounds_done``) are recorded in ``manifest``
    (the checkpoint's records; None: a checkpoint from before them) and, with ``check_files``
    (when more rounds build on them), there as recorded. The label shards of rounds before
    ``labels_from`` are not checked: no later fit reads them (they are outside the replay
    window), so they may be deleted, and a run resumed elsewhere needs only the rounds' own files
    (policies and records, a few MB) and the labels it will still fit."""
    if manifest is not None and sorted(manifest, key=int) != [str(r) for r in range(1, len(manifest) + 1)]:
        raise ExpertIterationError(f"{checkpoint}: its expert-round records are not rounds 1..n "
                                   f"({', '.join(sorted(manifest, key=int))})")
    if manifest is not None and len(manifest) != done:
        raise ExpertIterationError(f"{checkpoint}: counts {done} expert rounds done but records "
                                   f"{len(manifest)}; the checkpoint does not match its run folder")
    if not check_files and manifest is not None:
        return
    for round_ in range(1, done + 1):
        folder = expert_dir / f"round_{round_:02d}"
        what = f"the checkpoint {checkpoint} (round {round_} done)"
        if manifest is None:                       # an older run: the files must at least be there
            row = read_json(folder / "round.json", ("round",))
            if row["round"] != round_:
                raise ExpertIterationError(f"{folder / 'round.json'}: says round {row['round']!r}, its folder is "
                                           f"round {round_}")
            if not any(folder.glob("labels_*/shard_*.pt")):
                raise ExpertIterationError(f"{folder}: no label shards; {what} needs them")
            continue
        record = manifest[str(round_)]
        if not folder.is_dir():
            raise ExpertIterationError(f"{folder}: missing; {what} needs its files")
        verify_files(folder, record["files"], what)
        if round_ >= labels_from:
            verify_labels(folder, record["labels"], what)
        row = read_json(folder / "round.json", ("round",))
        if row["round"] != round_:
            raise ExpertIterationError(f"{folder / 'round.json'}: says round {row['round']!r}, its folder is "
                                       f"round {round_}")


def adopt_older_rounds(expert_dir: Path, done: int) -> dict[str, Any]:
    """Records of rounds 1..``done`` of a run from before the records, made from their files as
    they are now (checked for presence by :func:`verify_finished_rounds`)."""
    records = {}
    for round_ in range(1, done + 1):
        folder = expert_dir / f"round_{round_:02d}"
        row = read_json(folder / "round.json", ("round", "labels"))
        folders = recorded_label_folders(expert_dir, round_, None)
        labels = labels_record(folders, row["labels"], row.get("label_s", 0.0))
        records[str(round_)] = round_record(folder, labels)
    return records


def recorded_label_folders(expert_dir: Path, round_: int, manifest: Optional[dict[str, Any]]) -> list[Path]:
    """The label folders of a finished round (from its record; an older run's: those with shards)."""
    folder = expert_dir / f"round_{round_:02d}"
    if manifest is None or str(round_) not in manifest:
        return sorted(p for p in folder.glob("labels_*") if p.is_dir() and any(p.glob("shard_*.pt")))
    return [folder / name for name in manifest[str(round_)]["labels"]["folders"]]


def same_policy(path: Path, policy: torch.nn.Module) -> bool:
    """Whether the model file at ``path`` holds exactly ``policy``'s weights."""
    from agents.neural import read_checkpoint

    saved = read_checkpoint(path)["policy"]
    now = policy.state_dict()
    return saved.keys() == now.keys() and all(torch.equal(saved[k].cpu(), now[k].cpu()) for k in now)


def write_manifest_copy(expert_dir: Path, manifest: dict) -> None:
    """``expert/manifest.json``: the checkpoint's records, for people (the checkpoint's copy is the one checked)."""
    write_json(expert_dir / "manifest.json", {"rounds": manifest})
