"""The partner zoo: its size and splits, the held-out guard, the hashes and ``spades-coop zoo``."""

import json

import pytest

from agents.specs import make_agent
from coop.partners import zoo
from coop.cli import main


def test_zoo_has_enough_partners_splits_and_groups():
    assert zoo.ZOO_VERSION >= 1
    names = [p.name for p in zoo.PARTNERS]
    assert len(names) == len(set(names)) >= 12
    assert {p.split for p in zoo.PARTNERS} == set(zoo.SPLITS)
    assert sum(p.split == "held-out" for p in zoo.PARTNERS) >= 4
    assert len(zoo.groups()) >= 3
    for group in zoo.groups():       # every group can be trained with and tested against
        splits = {p.split for p in zoo.PARTNERS if p.group == group}
        assert "held-out" in splits and "train" in splits, group


def test_every_partner_builds():
    for p in zoo.PARTNERS:
        agent = make_agent(p.spec)
        assert callable(agent.act), p.name


def test_held_out_partners_need_purpose_evaluation():
    train = zoo.partners()
    assert train and all(p.split == "train" for p in train)
    with pytest.raises(zoo.HeldOutError, match="evaluation"):
        zoo.partners(("train", "held-out"))
    with pytest.raises(zoo.HeldOutError):
        zoo.partners("held-out", purpose="training")
    held_out = zoo.partners("held-out", purpose="evaluation")
    assert [p.split for p in held_out] == ["held-out"] * len(held_out) and len(held_out) >= 4
    name = held_out[0].name
    with pytest.raises(zoo.HeldOutError):
        zoo.partner(name)
    assert zoo.partner(name, purpose="evaluation").name == name
    assert zoo.partner("heuristic").spec == "heuristic"
    with pytest.raises(ValueError, match="split"):
        zoo.partners("test")
    with pytest.raises(ValueError, match="purpose"):
        zoo.partners(purpose="fun")
    with pytest.raises(KeyError):
        zoo.partner("nobody")
    assert {p.group for p in zoo.partners(("train", "validation"), group="bold")} == {"bold"}


def test_the_zoo_partner_neural_stays_the_policy_of_zoo_version_4():
    """Shipping a new `neural` must not change the zoo: its partner `neural` is pinned to the
    file shipped when version 4 was made (neural_v2)."""
    from agents.neural import DEFAULT_MODEL, PREVIOUS_MODELS
    pinned = zoo.model_file(zoo.partner("neural").spec)
    assert pinned == PREVIOUS_MODELS["neural_v2"]
    assert pinned.read_bytes() != DEFAULT_MODEL.read_bytes()


def test_hash_covers_the_spec_and_the_model_bytes(tmp_path):
    from agents.neural import DEFAULT_MODEL, PREVIOUS_MODEL
    assert zoo.model_file("neural") == DEFAULT_MODEL.resolve()
    assert zoo.model_file("neural_v1") == PREVIOUS_MODEL.resolve()
    assert zoo.model_file("heuristic") is None
    model = tmp_path / "m.pt"
    model.write_bytes(b"one")
    spec = f"neural:checkpoint={model}"
    first = zoo.partner_hash(spec)
    model.write_bytes(b"two")
    assert zoo.partner_hash(spec) != first
    hashes = [p.hash for p in zoo.PARTNERS]
    assert len(set(hashes)) == len(hashes) and all(len(h) == 64 for h in hashes)
    assert zoo.partner_hash("heuristic") != zoo.partner_hash("heuristic:bidding=aggressive")


def test_spades_coop_zoo_writes_the_listing(tmp_path, capsys):
    out = tmp_path / "zoo.json"
    assert main(["zoo", "--json", str(out)]) == 0
    listing = json.loads(out.read_text())
    assert [entry["name"] for entry in listing] == [p.name for p in zoo.PARTNERS]
    for entry in listing:
        assert {"name", "spec", "split", "hash"} <= set(entry)
        assert entry["split"] in ("train", "validation", "held-out")
    assert "held-out" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["zoo", "--help"])


def test_trained_partners_are_shipped_models_named_the_same_everywhere():
    """Version 2's trained seeds: neural:model=NAME loads agents/models/NAME.pt; a path is refused."""
    import agents
    from agents.neural import MODELS_DIR, shipped_model, shipped_models
    trained = [p for p in zoo.PARTNERS if p.group in ("imitation", "scratch", "biased", "diverse")]
    assert zoo.ZOO_VERSION >= 4 and len(trained) == 12          # version 4: the biased and diverse families
    for group in ("scratch", "biased", "diverse"):
        assert sorted(p.split for p in trained if p.group == group) == sorted(zoo.SPLITS)
    for p in trained:
        name = p.spec.split("model=")[1]
        assert name in shipped_models() and zoo.model_file(p.spec) == MODELS_DIR / f"{name}.pt"
    assert agents.make("neural", model="neural_v1").checkpoint == shipped_model("neural_v1")
    for bad in ("../neural_v1", "nope", "/etc/passwd"):
        with pytest.raises(ValueError, match="shipped model"):
            agents.make("neural", model=bad)
    with pytest.raises(ValueError, match="not both"):
        agents.make("neural", model="neural_v1", checkpoint=str(MODELS_DIR / "neural_v7.pt"))
