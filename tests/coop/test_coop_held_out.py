"""Held-out partners stay out of training by content (coop/partners/zoo.py, coop/partners/held_out.py): a
held-out model copied under a new name, or a held-out spec spelt otherwise, is refused by
``partner_population``, ``init_from``, the study and spades-train (exit 2, one line naming the
split), unless ``allow_held_out: true``; and the split listing is pinned to ``ZOO_VERSION``."""

from __future__ import annotations

import shutil

import pytest
import torch
import yaml

from coop.partners import zoo
from train.ppo.config import ConfigError, config_from_dict

# The zoo's splits, pinned per version: moving a partner to another split (or adding, removing,
# renaming one) fails here until ZOO_VERSION goes up and its listing is pinned below.
PINNED_SPLITS = {
    2: {"heuristic": "train", "high-asks": "train", "low-asks": "held-out", "partner-leads": "validation",
        "trump-leads": "held-out", "conservative": "train", "never-nil": "validation", "cautious": "held-out",
        "aggressive": "train", "eager-nil": "validation", "bold": "held-out", "search-8": "train",
        "search-32": "held-out", "neural": "train", "neural-v1": "held-out", "imitation-s1": "train",
        "imitation-s2": "validation", "imitation-s3": "held-out", "scratch-s1": "train",
        "scratch-s2": "validation", "scratch-s3": "held-out"},
}
PINNED_SPLITS[3] = dict(PINNED_SPLITS[2])       # version 3: the scratch seeds retrained, splits kept
PINNED_SPLITS[4] = {**PINNED_SPLITS[3], "ruffer": "train", "overtaker": "validation",   # the biased family
                    "nil-seeker": "held-out", "diverse-s1": "train", "diverse-s2": "validation",  # and the diverse
                    "diverse-s3": "held-out"}
PINNED_SPLITS[5] = dict(PINNED_SPLITS[4])       # version 5: the scratch seeds retrained (recipe version 2)
PINNED_SPLITS[6] = dict(PINNED_SPLITS[5])       # version 6: the scratch seeds retrained at GPU scale
PINNED_SPLITS[7] = dict(PINNED_SPLITS[6])       # version 7: the search partners respelt search_v1
HELD_OUT_COUNT = {2: 8, 3: 8, 4: 10, 5: 10, 6: 10, 7: 10}


def test_the_split_listing_is_pinned_to_the_zoo_version():
    assert zoo.ZOO_VERSION in PINNED_SPLITS, "a new ZOO_VERSION: pin its split listing in PINNED_SPLITS"
    assert {p.name: p.split for p in zoo.PARTNERS} == PINNED_SPLITS[zoo.ZOO_VERSION]
    held_out = sum(split == "held-out" for split in PINNED_SPLITS[zoo.ZOO_VERSION].values())
    assert held_out == HELD_OUT_COUNT[zoo.ZOO_VERSION]


# What each partner of the current version is (its spec and its model file's bytes): a partner
# retrained or respelt under its old name fails here until ZOO_VERSION goes up and this is pinned again.
PINNED_HASHES = {5: {
    "heuristic": "bcbb0eeac8d6", "high-asks": "949c27010893", "low-asks": "19c5fb765932",
    "partner-leads": "09c771074e99", "trump-leads": "037f3696489e", "conservative": "29e6485fe405",
    "never-nil": "685b45e50974", "cautious": "c1ce2e859c4c", "aggressive": "b9af186e54a5",
    "eager-nil": "8b08182c4f15", "bold": "e266ecf0af5a", "search-8": "914c95d5ebc2", "search-32": "b75a86d95fc0",
    "neural": "7a76d45fba1b", "neural-v1": "4dddd88a9d2d", "imitation-s1": "e63f48957790",
    "imitation-s2": "220a6bc2ea95", "imitation-s3": "1d77aadcb0d8", "scratch-s1": "c8e90ea0639e",
    "scratch-s2": "902a27d50bb0", "scratch-s3": "e87635c965e1", "ruffer": "a3bf80ad5f81",
    "overtaker": "36691db2af01", "nil-seeker": "b07e7967c983", "diverse-s1": "bc052a8e14a6",
    "diverse-s2": "d8d863516d95", "diverse-s3": "04166f7962c0"}}
PINNED_HASHES[6] = {**PINNED_HASHES[5], "scratch-s1": "9cc5b7f61c4c", "scratch-s2": "085fdb150e1d",
                    "scratch-s3": "9fe2ff062e7e"}
PINNED_HASHES[7] = {**PINNED_HASHES[6], "search-8": "df48e48784b8", "search-32": "b0724d5d110a"}   # search_v1


def test_the_partners_are_pinned_to_the_zoo_version():
    assert zoo.ZOO_VERSION in PINNED_HASHES, "a new ZOO_VERSION: pin its partners' hashes in PINNED_HASHES"
    assert {p.name: p.hash[:12] for p in zoo.PARTNERS} == PINNED_HASHES[zoo.ZOO_VERSION]


@pytest.fixture
def held_out_copy(tmp_path):
    """The held-out imitation-s3 model under a new, innocent name."""
    source = zoo.model_file(zoo.partner("imitation-s3", purpose="evaluation").spec)
    copy = tmp_path / "my_new_model.pt"
    shutil.copyfile(source, copy)
    return copy


def test_specs_are_read_by_their_meaning():
    cautious = zoo.partner("cautious", purpose="evaluation")
    for spelling in ("heuristic:cover=none,nil=never,bidding=conservative",
                     "heuristic:nil=never,bidding=conservative,cover=none,seed=3,backend=python",
                     "heuristic:bidding=conservative,nil=never,cover=none,leads=standard"):
        assert zoo.canonical_spec(spelling) == zoo.canonical_spec(cautious.spec)
        assert zoo.partner_of_spec(spelling) == cautious
    assert zoo.partner_of_spec("search_v1:seed=4,worlds=32.0").name == "search-32"
    assert zoo.partner_of_spec("heuristic:bidding=standard").name == "heuristic"
    assert zoo.partner_of_spec("heuristic:bidding=conservative,nil=eager") is None
    assert zoo.partner_of_spec("neural_v1").name == "neural-v1"
    assert zoo.partner_of_spec("neural:model=zoo_scratch_s3,greedy=false").name == "scratch-s3"


def test_a_held_out_model_copied_under_a_new_name_is_refused(held_out_copy, tmp_path):
    for fields in ({"init_from": str(held_out_copy)},
                   {"partner_population": [str(held_out_copy)]},
                   {"partner_population": [str(tmp_path / "*.pt")]}):
        with pytest.raises(ConfigError, match="imitation-s3' of the held-out split") as info:
            config_from_dict(fields)
        assert "\n" not in str(info.value) and "allow_held_out" in str(info.value)
        assert config_from_dict({**fields, "allow_held_out": True}).allow_held_out     # on purpose


def test_a_held_out_policy_saved_again_under_another_name_is_refused(tmp_path):
    """Other bytes (torch.save names its archive after the file), the same policy weights."""
    from agents.neural import read_checkpoint
    source = zoo.model_file("neural:model=zoo_scratch_s3")
    resaved = tmp_path / "fresh_start.pt"
    torch.save(read_checkpoint(source), resaved)
    assert zoo.file_digest(resaved) != zoo.file_digest(source)
    assert zoo.weights_digest(resaved) == zoo.weights_digest(source)
    with pytest.raises(ConfigError, match="'scratch-s3' of the held-out split"):
        config_from_dict({"init_from": str(resaved)})
    assert zoo.weights_digest(tmp_path / "nothing.pt") is None


def test_held_out_specs_spelt_otherwise_and_validation_models_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="'bold' of the held-out split"):
        config_from_dict({"partner_population": ["heuristic:nil=eager,cover=strong,bidding=aggressive"]})
    with pytest.raises(ConfigError, match="'never-nil' of the validation split"):
        config_from_dict({"partner_population": ["heuristic:nil=never,bidding=conservative"]})
    with pytest.raises(ConfigError, match="'search-32' of the held-out split"):
        config_from_dict({"expert_opponents": {"search_v1:worlds=32,seed=1": 1.0}})
    with pytest.raises(ConfigError, match="expert_teacher=.*'low-asks' of the held-out split"):
        config_from_dict({"expert_teacher": "heuristic:discards=low_asks"})
    validation = tmp_path / "v.pt"
    shutil.copyfile(zoo.model_file("neural:model=zoo_scratch_s2"), validation)
    with pytest.raises(ConfigError, match="'scratch-s2' of the validation split"):
        config_from_dict({"partner_population": [str(validation)]})
    assert config_from_dict({"init_from": str(validation)}).init_from == str(validation)   # validation may start a run
    train = tmp_path / "t.pt"
    shutil.copyfile(zoo.model_file("neural:model=zoo_scratch_s1"), train)
    assert config_from_dict({"partner_population": [str(train)], "init_from": str(train)})


def test_spades_train_exits_2_with_one_line_naming_the_held_out_split(held_out_copy, tmp_path, capsys):
    from train.ppo.trainer import main
    for setting in (f"init_from={held_out_copy}", f"partner_population=[{held_out_copy}]"):
        assert main(["--set", setting, "--set", f"run_dir={tmp_path}", "--set", "name=leak"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "held-out split" in err and "imitation-s3" in err, err
    assert not (tmp_path / "leak").exists()


def test_files_a_glob_matches_later_are_refused_where_the_members_are_built(held_out_copy, tmp_path):
    """The config is checked when it is read; a population glob may match new files by the time
    the run starts, so the members are checked again as they are loaded."""
    from coop.methods.cooperation import CooperationError, resolve_population
    glob = str(tmp_path / "*.pt")
    with pytest.raises(CooperationError, match="held-out split"):
        resolve_population([glob], 0, torch.device("cpu"))
    with pytest.raises(CooperationError, match="held-out split"):
        resolve_population(["heuristic:leads=trumps,seed=9"], 0, torch.device("cpu"))
    members = resolve_population([glob, "low-asks"], 0, torch.device("cpu"), allow_held_out=True)
    assert [m.source for m in members] == ["checkpoint", "zoo"]


def test_the_study_refuses_a_held_out_start_before_any_run(held_out_copy, tmp_path):
    from coop.study.study import StudyError, load_study
    study = {"name": "leak", "folder": str(tmp_path / "study"), "seeds": [1],
             "train": {"init_from": str(held_out_copy)}, "methods": {"selfplay": {}}}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    with pytest.raises(StudyError, match="held-out split"):
        load_study(path)
    assert not (tmp_path / "study").exists()
