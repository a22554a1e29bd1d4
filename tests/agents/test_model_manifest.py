"""agents/models/manifest.json: every shipped file under a name that never changes its bytes.

A file whose bytes change under its name fails here (and is refused when loaded); so does a file
that is not listed, a listed file that is missing, an alias or a parent that names nothing."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import agents
from agents import model_manifest, neural
from agents.neural import ModelError, NeuralAgent

MODELS = Path(model_manifest.MODELS_DIR)
MANIFEST = json.loads((MODELS / model_manifest.MANIFEST_NAME).read_text())
ENTRIES = {entry["name"]: entry for entry in MANIFEST["models"]}
FIELDS = {"name", "file", "sha256", "parent", "recipe", "step", "date", "what", "result"}


def shipped_files() -> list[Path]:
    """Every model file in agents/models but the people's clones (local, gitignored)."""
    return sorted(p for p in MODELS.glob("*.pt") if not p.name.startswith(model_manifest.PEOPLE_PREFIX))


def test_every_model_file_is_listed_with_its_sha256():
    listed = {entry["file"] for entry in MANIFEST["models"]}
    on_disk = {path.name for path in shipped_files()}
    assert on_disk - listed == set(), "files in agents/models that the manifest does not list"
    assert listed - on_disk == set(), "files the manifest lists that are missing"
    for path in shipped_files():
        entry = next(e for e in MANIFEST["models"] if e["file"] == path.name)
        assert model_manifest.file_sha256(path) == entry["sha256"], f"{path.name} changed its bytes under its name"


def test_each_entry_is_complete_and_a_name_is_its_file():
    assert MANIFEST["format"] == model_manifest.MANIFEST_FORMAT
    assert len(ENTRIES) == len(MANIFEST["models"]), "a name listed twice"
    for name, entry in ENTRIES.items():
        assert FIELDS <= set(entry), (name, FIELDS - set(entry))
        assert entry["file"] == f"{name}.pt" and re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["date"]), name
        assert entry["parent"] is None or entry["parent"] in ENTRIES, (name, entry["parent"])
        if entry["name"].startswith("neural_v"):
            assert entry["recipe"] == "configs/recipes/neural.yaml" and entry["step"]
            assert entry["result"]["text"] and entry["result"]["command"].startswith("spades-eval ")
        else:
            assert entry["config"].startswith("spades-train --config configs/zoo_")
    hashes = [entry["sha256"] for entry in MANIFEST["models"]]
    assert len(set(hashes)) == len(hashes), "two names for the same bytes"


def test_the_alias_and_the_former_names_resolve_to_listed_models():
    assert MANIFEST["aliases"] == {"neural": "neural_v7"}
    for alias, target in MANIFEST["aliases"].items():
        assert target in ENTRIES and alias not in ENTRIES
    assert model_manifest.resolve_name("neural") == "neural_v7"
    assert neural.DEFAULT_MODEL == MODELS / "neural_v7.pt"
    for former, now in MANIFEST["former_names"].items():       # the files' names before 2026-12-01
        assert model_manifest.resolve_name(former) == model_manifest.resolve_name(now)
    assert model_manifest.resolve_name("neural_standard_v3") == "neural_v3"
    with pytest.raises(model_manifest.ManifestError, match="'neural_v99' is not a model in manifest.json"):
        model_manifest.resolve_name("neural_v99")


def test_every_version_loads_by_its_name():
    assert agents.make("neural").checkpoint == MODELS / "neural_v7.pt"
    for k in range(1, 8):
        bot = agents.make(f"neural_v{k}")
        assert bot.checkpoint == MODELS / f"neural_v{k}.pt"
        assert agents.make("neural", model=f"neural_v{k}").checkpoint == bot.checkpoint
    assert agents.make("neural", model="neural_standard_v2").checkpoint == MODELS / "neural_v2.pt"   # a redirect
    assert agents.make("neural", model="zoo_scratch_s1").checkpoint == MODELS / "zoo_scratch_s1.pt"


@pytest.fixture
def models_copy(tmp_path, monkeypatch):
    """agents/models copied (three files and the manifest), agents.neural pointed at it."""
    folder = tmp_path / "models"
    folder.mkdir()
    manifest = dict(MANIFEST, models=[ENTRIES[n] for n in ("neural_v6", "neural_v7", "zoo_scratch_s1")],
                    former_names={})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for name in ("neural_v6", "neural_v7", "zoo_scratch_s1"):
        shutil.copyfile(MODELS / f"{name}.pt", folder / f"{name}.pt")
    monkeypatch.setattr(neural, "MODELS_DIR", folder)
    return folder


def test_loading_refuses_a_file_whose_bytes_are_not_its_names(models_copy):
    NeuralAgent(model="zoo_scratch_s1")                                  # the bytes it was shipped with
    shutil.copyfile(models_copy / "neural_v6.pt", models_copy / "zoo_scratch_s1.pt")   # other bytes, same name
    with pytest.raises(ModelError, match=r"zoo_scratch_s1.pt: its SHA-256 .* is not the .* the manifest pins for "
                                         r"'zoo_scratch_s1'; a shipped name never changes its bytes"):
        NeuralAgent(model="zoo_scratch_s1")
    with pytest.raises(ModelError, match="never changes its bytes"):      # by path, the same rule
        NeuralAgent(checkpoint=str(models_copy / "zoo_scratch_s1.pt"))
    data = bytearray((MODELS / "neural_v7.pt").read_bytes())
    data[len(data) // 2] ^= 0xFF                                          # one byte of the weights flipped
    (models_copy / "neural_v7.pt").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="the manifest pins for 'neural_v7'"):
        NeuralAgent(model="neural")


def test_an_unlisted_file_is_refused_and_a_persons_clone_loads_unchecked(models_copy):
    shutil.copyfile(MODELS / "neural_v5.pt", models_copy / "stray.pt")
    with pytest.raises(ModelError, match=r"stray.pt: not in manifest.json; a file in agents/models loads only under a "
                                         r"name the manifest pins \(or as a person's clone, human_NAME.pt\)"):
        NeuralAgent(checkpoint=str(models_copy / "stray.pt"))
    with pytest.raises(ValueError, match="expected the name of a shipped model"):
        NeuralAgent(model="stray")
    shutil.copyfile(MODELS / "neural_v5.pt", models_copy / "human_ada.pt")   # spades-coop clone writes these
    bot = NeuralAgent(model="human_ada")
    assert bot.checkpoint == models_copy / "human_ada.pt"
    assert "human_ada" in neural.shipped_models() and "stray" not in neural.shipped_models()
