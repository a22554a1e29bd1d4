"""Distillation: spades-label's labels (equivalent cards, resumable shards, clear errors) and
spades-train's ``distill_data`` (fits the teacher, keeps the best held-out epoch, resumes)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import agents
from agents.neural import DEFAULT_MODEL, PREVIOUS_MODELS, read_checkpoint
from spades_env import spades_v0
from spades_env.cards import parse_card
from spades_env.game import PHASE_BIDDING, PHASE_PLAY
from train.ppo.config import ConfigError, config_from_dict
from train.labelling.cli import main
from train.labelling.labeller import FIELDS, LabelError, label, load_labels, shard_path
from train.labelling.positions import equivalent_actions
from train.ppo.trainer import Trainer

from helpers_train import tiny


# The labeller's tests label with a fixed policy, so that what they assert about the labels (a fit
# that rises on them, say) does not change each time another policy ships as ``neural``.
STUDENT = PREVIOUS_MODELS["neural_v6"]


def settings(out: Path, **changes) -> dict:
    base = {"student": str(STUDENT), "teacher": "heuristic", "opponents": "heuristic", "deals": 4,
            "shard_deals": 2, "follow_teacher": 0.5, "rules": "standard", "seed": 0, "workers": 1, "out": str(out)}
    base.update(changes)
    return base


def quiet(line: str) -> None:
    pass


def synthetic_values_folder(folder: Path, data: dict, values: torch.Tensor) -> Path:
    """A labels folder of one shard: ``data``'s decisions with ``values`` (NaN kept where unvalued)."""
    folder.mkdir()
    old = data["values"].float()
    filled = torch.where(torch.isnan(old), old, values.expand_as(old))
    torch.save({**{k: data[k] for k in FIELDS}, "values": filled.half(), "format": "spades-distill-labels",
                "version": 1, "settings": data["settings"], "deals": [0, 6]}, folder / "shard_00000.pt")
    return folder


def centred_legal(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits minus their mean over the legal actions (0 elsewhere)."""
    legal = torch.where(mask, logits, torch.zeros_like(logits))
    return torch.where(mask, legal - legal.sum(1, keepdim=True) / mask.sum(1, keepdim=True), 0.0)


def test_touching_cards_are_labelled_as_one_class():
    clubs = ["AC", "KC", "QC", "9C", "7C"]
    rest = [c for c in (f"{r}{s}" for s in "DHSC" for r in "23456789TJQKA") if c not in clubs]   # clubs last
    hands = [clubs + rest[:8]] + [rest[8 + 13 * k: 8 + 13 * (k + 1)] for k in range(3)]
    env = spades_v0.raw_env(rules="standard")
    env.reset(seed=0, options={"deal": [[parse_card(c) for c in h] for h in hands], "dealer": 3})
    bidder = agents.make("heuristic", seed=0)
    for _ in range(4):
        obs, *_ = env.last()
        env.step(bidder.act(obs))
    obs, *_ = env.last()
    assert env.agent_name_mapping[env.agent_selection] == 0          # left of the dealer leads
    assert sorted(equivalent_actions(obs, parse_card("KC"))) == sorted(parse_card(c) for c in ("QC", "KC", "AC"))
    assert equivalent_actions(obs, parse_card("9C")) == [parse_card("9C")]    # TC and JC are still out
    assert equivalent_actions(obs, parse_card("7C")) == [parse_card("7C")]    # so is 8C
    bidding = spades_v0.raw_env(rules="standard")
    bidding.reset(seed=0)
    obs, *_ = bidding.last()
    bid = int(np.flatnonzero(obs["action_mask"])[3])
    assert equivalent_actions(obs, bid) == [bid]


def test_labels_are_legal_reproducible_and_resumable(tmp_path):
    out = label(settings(tmp_path / "a"), progress=False, log=quiet)
    data = load_labels(out)
    n = data["teacher"].numel()
    assert n > 4 * 15                                      # 26 student decisions a deal, minus forced ones
    assert (data["mask"].sum(1) > 1).all()                 # forced moves are not labelled
    assert not (data["target"] & ~data["mask"]).any()       # the labels are legal actions
    assert data["target"].gather(1, data["teacher"][:, None]).all()
    assert data["mask"].gather(1, data["student"][:, None]).all()
    assert set(data["phase"].tolist()) == {1, 3}           # bids and card play (standard rules from 0-0)
    for deal in range(4):                                   # the student side alternates
        seats = set(data["seat"][data["deal"] == deal].tolist())
        assert seats == ({0, 2} if deal % 2 == 0 else {1, 3})
    # With the heuristic as teacher and the shipped model as student both sides of the labels exist.
    assert 0 < float((data["teacher"] == data["student"]).float().mean()) < 1
    again = load_labels(label(settings(tmp_path / "b"), progress=False, log=quiet))
    for key in FIELDS:
        torch.testing.assert_close(data[key], again[key], rtol=0, atol=0, equal_nan=True, msg=key)
    # A killed run resumes: finished shards are kept, a torn or missing one is labelled again.
    shard_path(out, 1).write_bytes(b"torn")
    before = shard_path(out, 0).stat().st_mtime_ns
    lines: list[str] = []
    label(settings(tmp_path / "a"), progress=False, log=lines.append)
    assert "1 of 2 shards already" in lines[0]
    assert shard_path(out, 0).stat().st_mtime_ns == before
    resumed = load_labels(out)
    for key in FIELDS:
        torch.testing.assert_close(data[key], resumed[key], rtol=0, atol=0, equal_nan=True, msg=key)


def test_a_shard_from_another_folder_or_a_torn_labels_json_is_refused(tmp_path):
    """A shard copied in from a folder of other settings (here another seed) is not taken as
    done by a resumed labelling nor fitted by load_labels; a torn labels.json is named."""
    a = label(settings(tmp_path / "a", deals=2), progress=False, log=quiet)
    b = label(settings(tmp_path / "b", deals=2, seed=7), progress=False, log=quiet)
    shutil.copy(shard_path(b, 0), shard_path(a, 0))
    with pytest.raises(LabelError, match=r"a/shard_00000\.pt: labelled with other settings .*seed"):
        label(settings(tmp_path / "a", deals=2), progress=False, log=quiet)
    with pytest.raises(LabelError, match=r"a/shard_00000\.pt: labelled with other settings than its folder's"):
        load_labels(a)
    (b / "labels.json").write_text((b / "labels.json").read_text()[:20])
    with pytest.raises(LabelError, match=r"b/labels\.json: unreadable or not JSON \(JSONDecodeError\)"):
        label(settings(tmp_path / "b", deals=2, seed=7), progress=False, log=quiet)
    with pytest.raises(LabelError, match=r"b/labels\.json: unreadable or not JSON"):
        load_labels(b)


def test_follow_teacher_one_plays_the_teachers_game(tmp_path):
    data = load_labels(label(settings(tmp_path, deals=2, follow_teacher=1.0, teacher="random:seed=1"),
                             progress=False, log=quiet))
    assert float((data["teacher"] == data["student"]).float().mean()) < 0.9


def test_varied_start_labels_hands_from_random_scores_and_bags(tmp_path):
    from spades_env.observation import decode_observation
    from spades_env.rules import make_rules
    from train.labelling.positions import random_start
    rules = make_rules("standard")
    rng = random.Random(0)
    starts = [random_start(rules, 0.5, rng) for _ in range(400)]
    varied = [s for s in starts if s]
    assert 150 < len(varied) < 250                                   # about half of the deals
    assert all(-150 <= x <= 490 and x % 10 == 0 for s in varied for x in s["scores"])
    assert all(0 <= b < rules.bag_limit for s in varied for b in s["bags"])
    assert random_start(rules, 0.0, rng) == {}
    data = load_labels(label(settings(tmp_path, deals=12, shard_deals=6, teacher="playout", follow_teacher=0.0,
                                      varied_start=1.0), progress=False, log=quiet))
    views = [decode_observation(o.float().numpy()) for o in data["obs"]]
    assert len({tuple(v.scores) for v in views}) > 6                # every deal from its own score
    assert any(any(v.bags) for v in views)
    assert any(any(v.blind) for v in views)                          # blind nil is bid (offered when behind by 100)
    with pytest.raises(LabelError, match=r"varied_start=2: expected the share of deals \(0 to 1\)"):
        label(settings(tmp_path / "bad", varied_start=2), log=quiet)


def test_real_starts_label_hands_from_the_states_whole_games_reach(tmp_path):
    """--start real: the varied_start share of the deals starts from scores and bags drawn from
    spades_env.starts' table (every drawn pair is one of its rows), not from uniform random ones."""
    from spades_env.observation import decode_observation
    from spades_env.rules import make_rules
    from spades_env.starts import load_table
    from train.labelling.positions import random_start
    rules, table = make_rules("standard"), load_table()
    recorded = {(tuple(s), tuple(b)) for s, b in zip(table.scores.tolist(), table.bags.tolist())}
    rng = random.Random(0)
    starts = [random_start(rules, 0.5, rng, "real") for _ in range(400)]
    real = [s for s in starts if s]
    assert 150 < len(real) < 250
    assert all((tuple(s["scores"]), tuple(s["bags"])) in recorded for s in real)
    uniform = [random_start(rules, 1.0, rng) for _ in range(200)]
    assert sum((tuple(s["scores"]), tuple(s["bags"])) in recorded for s in uniform) < 100   # the two differ
    data = load_labels(label(settings(tmp_path / "real", deals=8, shard_deals=4, teacher="playout",
                                      follow_teacher=0.0, varied_start=1.0, start="real"), progress=False, log=quiet))
    scores = {tuple(decode_observation(o.float().numpy()).scores) for o in data["obs"][data["phase"] == PHASE_BIDDING]}
    assert len(scores) > 3 and scores <= {s for s, _ in recorded} | {s[::-1] for s, _ in recorded}
    assert json.loads((tmp_path / "real" / "labels.json").read_text())["start"] == "real"
    with pytest.raises(LabelError, match=r"start='zero': expected one of varied, real"):
        label(settings(tmp_path / "bad", varied_start=1.0, start="zero"), log=quiet)
    with pytest.raises(LabelError, match=r"other settings \(start: 'real' there, 'varied' now\)"):   # a folder keeps its starts
        label(settings(tmp_path / "real", deals=8, shard_deals=4, teacher="playout", follow_teacher=0.0,
                       varied_start=1.0), log=quiet)


def test_label_errors_name_what_was_wrong(tmp_path, capsys):
    with pytest.raises(LabelError, match=r"unknown agent 'serch'"):
        label(settings(tmp_path, teacher="serch"), log=quiet)
    with pytest.raises(LabelError, match=r"deals=0: expected a positive integer"):
        label(settings(tmp_path, deals=0), log=quiet)
    with pytest.raises(LabelError, match=r"follow_teacher=1.5"):
        label(settings(tmp_path, follow_teacher=1.5), log=quiet)
    with pytest.raises(LabelError, match=r"four players in partnerships"):
        label(settings(tmp_path, rules="cutthroat"), log=quiet)
    with pytest.raises(LabelError, match=r"signals=4: labelling values bids and cards, not messages"):
        label(settings(tmp_path, rules="short_signals"), log=quiet)
    with pytest.raises(LabelError, match=r"continuation='students': expected one of heuristic, student"):
        label(settings(tmp_path, teacher="playout", continuation="students"), log=quiet)
    with pytest.raises(LabelError, match=r"applies to --teacher playout only \(the teacher here is 'heuristic'\)"):
        label(settings(tmp_path, continuation="student"), log=quiet)
    with pytest.raises(LabelError, match=r"no such model file"):
        label(settings(tmp_path, student=str(tmp_path / "none.pt")), log=quiet)
    label(settings(tmp_path / "made", deals=2), progress=False, log=quiet)
    with pytest.raises(LabelError, match=r"other settings \(seed: 0 there, 1 now\)"):
        label(settings(tmp_path / "made", deals=2, seed=1), log=quiet)
    meta = tmp_path / "made" / "labels.json"       # folders labelled before --continuation existed resume
    old_settings = json.loads(meta.read_text())
    del old_settings["continuation"]
    meta.write_text(json.dumps(old_settings))
    label(settings(tmp_path / "made", deals=2), progress=False, log=quiet)
    with pytest.raises(LabelError, match=r"other settings \(continuation: 'heuristic' there, 'student' now; teacher: "):
        label(settings(tmp_path / "made", deals=2, teacher="playout", continuation="student"), log=quiet)
    with pytest.raises(FileNotFoundError, match="no shard_"):
        load_labels(tmp_path)
    shard_path(tmp_path / "made", 0).write_bytes(b"not torch")
    with pytest.raises(LabelError, match="corrupt or not a labels shard"):
        load_labels(tmp_path / "made")
    assert main(["--out", str(tmp_path / "cli"), "--teacher", "nobody", "--deals", "1"]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def heuristic_labels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("labels") / "heuristic"
    return label(settings(out, deals=20, shard_deals=5, follow_teacher=1.0), progress=False, log=quiet)


def test_distillation_fits_the_teacher_and_keeps_the_best_epoch(tmp_path, heuristic_labels):
    logs: list[str] = []
    config = tiny(tmp_path, "distilled", "imitation_decisions=0", f"distill_data={heuristic_labels}",
                  "distill_epochs=20", "distill_learning_rate=0.005", "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=logs.append)
    trainer.train()
    start = next(line for line in logs if line.startswith("distillation:"))
    kept = [line for line in logs if line.startswith("distillation: kept")][0]
    before = float(start.split("teacher on ")[1].split("%")[0])
    after = float(kept.split("(")[1].split("%")[0])
    assert after > before + 15                  # from an untrained net to most of the heuristic's choices
    checkpoint = read_checkpoint(tmp_path / "distilled" / "checkpoints" / "last.pt")
    assert checkpoint["distilled"] is True and (tmp_path / "distilled" / "model.pt").exists()
    # A step size that only makes things worse: the starting weights are kept.
    logs.clear()
    config = tiny(tmp_path, "diverged", "imitation_decisions=0", f"distill_data={heuristic_labels}",
                  "distill_epochs=1", "distill_learning_rate=1000", "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=logs.append)
    start_weights = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    trainer.distill()
    assert "kept epoch 0" in logs[-1]
    for key, value in trainer.policy.state_dict().items():
        assert torch.equal(value, start_weights[key])


def test_distillation_checks_its_data_and_is_not_repeated_on_resume(tmp_path, heuristic_labels):
    with pytest.raises(ConfigError, match=r"labelled under the rules 'standard', this run plays 'openspiel'"):
        Trainer(tiny(tmp_path, "other_rules", "rules=openspiel", "imitation_decisions=0",
                     f"distill_data={heuristic_labels}"), log=quiet).train()
    with pytest.raises(FileNotFoundError, match="no shard_"):
        Trainer(tiny(tmp_path, "empty", "imitation_decisions=0", f"distill_data={tmp_path}"), log=quiet).train()
    config = tiny(tmp_path, "resumed", f"distill_data={heuristic_labels}", "max_updates=1", "eval_every=0")
    Trainer(config, log=quiet).train()
    logs: list[str] = []
    more = config_from_dict({**config.to_dict(), "max_updates": 2})
    Trainer(more, resume=True, log=logs.append).train()
    assert not any(line.startswith("distillation") for line in logs), "\n".join(logs)
    assert read_checkpoint(tmp_path / "resumed" / "checkpoints" / "last.pt")["update"] == 2


# ---------------------------------------------------------------------- blind nil only
@pytest.fixture(scope="module")
def blind_nil_labels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("labels") / "blind_nil"
    return label(settings(out, deals=24, shard_deals=12, follow_teacher=1.0, varied_start=1.0, only="blind-nil"),
                 progress=False, log=quiet)


def test_only_blind_nil_labels_the_blind_nil_decisions_and_the_hands_that_follow(blind_nil_labels):
    from spades_env.game import BLIND_NIL_ACTION, PHASE_BLIND_DECISION
    data = load_labels(blind_nil_labels)
    labelled = data["target"].any(1)
    assert bool(labelled.any()) and bool((~labelled).any())
    blind_rows = data["phase"] == PHASE_BLIND_DECISION
    assert bool(labelled[blind_rows].all())                   # every blind-nil decision keeps its label
    assert bool((data["teacher"][blind_rows] == BLIND_NIL_ACTION).any())
    deals = data["deal"].tolist()
    for deal in sorted(set(deals)):
        rows = [k for k, d in enumerate(deals) if d == deal]
        went_blind = [k for k in rows if int(data["phase"][k]) == PHASE_BLIND_DECISION
                      and int(data["teacher"][k]) == BLIND_NIL_ACTION]
        first = went_blind[0] if went_blind else None
        for k in rows:
            expected = int(data["phase"][k]) == PHASE_BLIND_DECISION or (first is not None and k >= first)
            assert bool(labelled[k]) == expected, (deal, k, first)
    # a blind-nil hand's play is labelled after the bid: passing (phase 2) and cards (phase 3)
    assert bool(labelled[data["phase"] == 2].any()) and bool(labelled[data["phase"] == PHASE_PLAY].any())
    # the labelled rows hold the teacher's choice, as with --only all
    rows = labelled.nonzero()[:, 0]
    assert bool(data["target"][rows, data["teacher"][rows]].all())


def test_only_ducking_labels_the_positions_where_only_bags_are_left(tmp_path):
    from spades_env.observation import decode_observation
    from train.labelling.positions import ducking_position
    data = load_labels(label(settings(tmp_path, deals=16, shard_deals=8, follow_teacher=0.0, varied_start=1.0,
                                      only="ducking"), progress=False, log=quiet))
    labelled = data["target"].any(1)
    assert bool(labelled.any()) and bool((~labelled).any())
    assert bool((data["phase"][labelled] == PHASE_PLAY).all())
    for k in range(len(labelled)):                     # every row: labelled exactly at a ducking position
        obs = {"observation": data["obs"][k].float().numpy(), "action_mask": data["mask"][k].numpy()}
        assert ducking_position(obs) == bool(labelled[k]), k
    for k in labelled.nonzero()[:, 0].tolist():        # there the side has made its contract, no nil intact
        view = decode_observation(data["obs"][k].float().numpy())
        side = [0, 2]                                   # the observation is from the seat's own view
        assert sum(view.tricks_taken[s] for s in side) >= sum(view.bids[s] for s in side)
        assert not any(view.bids[s] == 0 and view.tricks_taken[s] == 0 for s in range(4))


def test_only_nil_defence_labels_and_asks_the_teacher_only_while_an_opponents_nil_is_intact(tmp_path, monkeypatch):
    import train.labelling.labeller as label_module
    from spades_env.observation import decode_observation
    from train.labelling.positions import nil_defence_position
    asked: list[bool] = []
    ask = label_module.Labeller._label

    def counted(self, env, obs, *args):
        asked.append(nil_defence_position(obs))
        return (yield from ask(self, env, obs, *args))

    monkeypatch.setattr(label_module.Labeller, "_label", counted)
    data = load_labels(label(settings(tmp_path, deals=24, shard_deals=12, follow_teacher=0.0, varied_start=1.0,
                                      only="nil-defence"), progress=False, log=quiet))
    labelled = data["target"].any(1)
    assert bool(labelled.any()) and bool((~labelled).any())
    assert bool((data["phase"][labelled] == PHASE_PLAY).all())
    for k in range(len(labelled)):                     # every row: labelled exactly while a nil can be broken
        obs = {"observation": data["obs"][k].float().numpy(), "action_mask": data["mask"][k].numpy()}
        assert nil_defence_position(obs) == bool(labelled[k]), k
    for k in labelled.nonzero()[:, 0].tolist():
        view = decode_observation(data["obs"][k].float().numpy())
        assert any(view.bids[s] == 0 and view.tricks_taken[s] == 0 for s in (1, 3))
    assert asked and all(asked) and len(asked) == int(labelled.sum())   # the anchors cost no teacher


def test_only_nil_defence_play_out_values_value_every_class_there_and_nowhere_else(tmp_path):
    """``--teacher playout --only nil-defence``: the student's own play-outs value every legal card
    while an opponent's nil is intact (the classes' values, the best ones the target), and no other
    decision is valued (anchors)."""
    from train.labelling.positions import nil_defence_position
    data = load_labels(label(settings(tmp_path, deals=12, shard_deals=6, teacher="playout", continuation="student",
                                      follow_teacher=0.0, varied_start=1.0, only="nil-defence"),
                             progress=False, log=quiet))
    valued = ~torch.isnan(data["values"].float())
    labelled = data["target"].any(1)
    assert bool(labelled.any()) and bool((~labelled).any())
    assert torch.equal(valued.any(1), labelled)
    for k in range(len(labelled)):
        obs = {"observation": data["obs"][k].float().numpy(), "action_mask": data["mask"][k].numpy()}
        assert nil_defence_position(obs) == bool(labelled[k]), k
        if labelled[k]:
            legal = data["mask"][k]
            assert torch.equal(valued[k], legal)                       # every legal card valued
            values = data["values"][k].float()
            assert torch.equal(data["target"][k], legal & (values == values[legal].max()))


def test_distillation_into_the_nil_defence_head_moves_only_its_play(tmp_path):
    """Values fitted with ``nil_defence_head`` and ``policy_parts: nil_defence``, starting from the
    shipped policy: its logits change at the positions the head plays and at no other decision."""
    from agents.neural import policy_from_checkpoint
    folder = label(settings(tmp_path / "labels", deals=8, shard_deals=8, teacher="playout", continuation="student",
                            follow_teacher=0.0, varied_start=1.0, only="nil-defence"), progress=False, log=quiet)
    config = tiny(tmp_path, "head", "imitation_decisions=0", "hidden=256", "head_hidden=128", "card_features=true",
                  "nil_defence_head=true", "policy_parts=nil_defence", f"init_from={DEFAULT_MODEL}",
                  f"distill_data={folder}", "distill_value_temperature=1", "distill_epochs=3",
                  "distill_learning_rate=0.01", "distill_keep=last", "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=quiet)
    trainer.distill()
    shipped, _ = policy_from_checkpoint(read_checkpoint(DEFAULT_MODEL))
    shipped.score_tilts = None                      # init_from trains the network without the score rule
    for name, weights in trainer.policy.state_dict().items():
        if not name.startswith("nil_"):
            assert torch.equal(weights, shipped.state_dict()[name]), name
    data = load_labels(folder)
    obs, mask = data["obs"].float(), data["mask"]
    with torch.no_grad():
        after, before = trainer.policy(obs, mask), shipped(obs, mask)
    gate = trainer.policy.nil_defence_gate(obs)
    assert torch.equal(after[~gate], before[~gate])
    assert (after[gate] - before[gate]).abs().max() > 0.1


def test_only_is_checked_and_recorded(tmp_path, blind_nil_labels):
    with pytest.raises(LabelError, match=r"only='blind': expected one of all, blind-nil, ducking"):
        label(settings(tmp_path, only="blind"), log=quiet)
    with pytest.raises(LabelError, match=r"only='blind-nil' needs a teacher that chooses"):
        label(settings(tmp_path, teacher="playout", only="blind-nil"), log=quiet)
    with pytest.raises(LabelError, match=r"only='ducking' needs a teacher that chooses"):
        label(settings(tmp_path, teacher="playout", only="ducking"), log=quiet)
    assert json.loads((blind_nil_labels / "labels.json").read_text())["only"] == "blind-nil"
    copy = tmp_path / "copy"
    shutil.copytree(blind_nil_labels, copy)
    with pytest.raises(LabelError, match=r"other settings \(only: 'blind-nil' there, 'all' now"):
        label(settings(copy, deals=24, shard_deals=12, follow_teacher=1.0, varied_start=1.0), log=quiet)


def test_distillation_keeps_unlabelled_decisions_at_the_starting_policy(tmp_path, blind_nil_labels):
    """Rows without a label are fitted to the starting policy (KL); without that anchor the same
    fit moves them much further (the planted bug: anchors ignored)."""
    import train.imitation.warm_starts as warm_starts
    data = load_labels(blind_nil_labels)
    unlabelled = ~data["target"].any(1)

    def drift(name: str, anchored: bool) -> tuple[float, list[str]]:
        logs: list[str] = []
        folder = blind_nil_labels
        if not anchored:                      # the same labels with the anchors removed
            folder = tmp_path / f"{name}_labels"
            folder.mkdir()
            keep = ~unlabelled
            torch.save({**{k: data[k][keep] for k in FIELDS}, "format": "spades-distill-labels", "version": 1,
                        "settings": data["settings"], "deals": [0, 24]}, folder / "shard_00000.pt")
        config = tiny(tmp_path, name, "imitation_decisions=0", f"distill_data={folder}", "distill_epochs=20",
                      "distill_learning_rate=0.03", "minibatch_size=64", "distill_keep=last", "max_updates=0", "eval_every=0", "seed=3")
        trainer = Trainer(config, log=logs.append)
        obs, mask = data["obs"][unlabelled].float(), data["mask"][unlabelled]
        with torch.no_grad():
            before = torch.log_softmax(trainer.policy(obs, mask), 1)
        trainer.distill()
        with torch.no_grad():
            after = torch.log_softmax(trainer.policy(obs, mask), 1)
        kl = (before.exp() * (before - after)).masked_fill(~mask, 0.0).sum(1).mean()
        return float(kl), logs

    anchored, logs = drift("anchored", True)
    free, _ = drift("free", False)
    assert any("unlabelled decisions kept at the starting policy" in line for line in logs), logs
    assert any("nats from the starting policy" in line for line in logs)
    assert anchored < 0.5 * free, (anchored, free)
    assert torch.isfinite(torch.tensor(anchored))
    assert warm_starts is not None


def test_distillation_reports_the_drift_of_the_weights_it_keeps(tmp_path, blind_nil_labels):
    """A step size that only makes things worse: the starting weights are kept, so the drift
    reported on the unlabelled held-out decisions is 0 (not that of the diverged epoch)."""
    config = tiny(tmp_path, "kept_start", "imitation_decisions=0", f"distill_data={blind_nil_labels}",
                  "distill_epochs=1", "distill_learning_rate=1000", "max_updates=0", "eval_every=0")
    logs: list[str] = []
    result = Trainer(config, log=logs.append).distill()
    assert result["distill_epoch"] == 0
    assert any("fit epoch 1/1" in line and "nats from the starting policy" in line and
               not line.endswith(" 0.0000 nats from the starting policy on the unlabelled ones") for line in logs), logs
    assert abs(result["distill_anchor_kl"]) < 1e-6


def test_distillation_refuses_labels_with_no_teacher_choice(tmp_path, blind_nil_labels):
    data = load_labels(blind_nil_labels)
    folder = tmp_path / "empty_targets"
    folder.mkdir()
    torch.save({**{k: data[k] for k in FIELDS}, "target": torch.zeros_like(data["target"]),
                "format": "spades-distill-labels", "version": 1, "settings": data["settings"], "deals": [0, 24]},
               folder / "shard_00000.pt")
    config = tiny(tmp_path, "no_labels", "imitation_decisions=0", f"distill_data={folder}", "max_updates=0")
    with pytest.raises(ConfigError, match=r"no decision there has a teacher's label"):
        Trainer(config, log=quiet).train()


# ---------------------------------------------------------------------- play-out values
@pytest.fixture(scope="module")
def playout_labels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("labels") / "playout"
    return label(settings(out, teacher="playout", deals=6, shard_deals=3, follow_teacher=0.3), progress=False, log=quiet)


def test_playout_labels_value_every_legal_card(playout_labels, tmp_path):
    data = load_labels(playout_labels)
    again = load_labels(label(settings(tmp_path, teacher="playout", deals=6, shard_deals=3, follow_teacher=0.3),
                              progress=False, log=quiet))
    for key in FIELDS:                                                # reproducible
        torch.testing.assert_close(data[key], again[key], rtol=0, atol=0, equal_nan=True, msg=key)
    values = data["values"].float()
    valued = ~torch.isnan(values)
    play = data["phase"] == PHASE_PLAY
    assert play.sum() > 6 * 10 and (~play).sum() > 0
    assert torch.equal(valued[play], data["mask"][play])             # every legal card, nothing else
    assert not valued[~play].any()                                    # bids: no values...
    assert torch.equal(data["target"][~play], torch.nn.functional.one_hot(data["student"][~play], 68).bool())
    best = torch.where(valued, values, torch.tensor(float("-inf"))).max(1, keepdim=True).values
    assert torch.equal(data["target"][play], (values == best)[play])  # the best cards are the target
    assert data["target"].gather(1, data["teacher"][:, None]).all()
    # the student's card is the teacher's whenever it is among the best
    student_best = data["target"].gather(1, data["student"][:, None])[:, 0]
    assert torch.equal(data["teacher"][student_best], data["student"][student_best])
    # a row is labelled only when the cards differ in kind (forced plays and single classes are not)
    assert (data["mask"][play].sum(1) > 1).all()


def _play_heuristic_steps(env, bots: list, steps: int) -> None:
    """Step ``env`` ``steps`` times with each seat's agent in ``bots``."""
    for _ in range(steps):
        obs, *_ = env.last()
        env.step(bots[env.agent_name_mapping[env.agent_selection]].act(obs))


def _hand_difference(env, card: int, players: list, seat: int) -> float:
    """Play ``card`` on a copy of ``env``, then the hand out with ``players`` (one agent per seat);
    the hand's score difference for ``seat``'s side, from the env's rewards (each partner gets
    its side's points at the hand's last step)."""
    import copy as copy_module
    branch = copy_module.deepcopy(env)
    branch.step(card)
    total = {0: 0.0, 1: 0.0}
    for name in branch.agent_iter():
        obs, reward, termination, truncation, _ = branch.last()
        total[branch.agent_name_mapping[name] % 2] += reward
        branch.step(None if termination or truncation else players[branch.agent_name_mapping[name]].act(obs))
    return total[seat % 2] / 2 - total[1 - seat % 2] / 2


def test_playout_values_equal_heuristic_playouts_through_the_env():
    """Each class's value equals what the AEC env scores when that card (any card of the class) is
    played and the heuristic agents play the hand out: the fast copy, play-out and scoring agree
    with the real game, and touching cards are worth exactly the same."""
    from train.labelling.values import playout_values
    checked = 0
    for seed in range(3):
        env = spades_v0.raw_env(rules="standard", episode="hand", reward_scale=1.0)
        env.reset(seed=seed)
        bots = [agents.make("heuristic", seed=k) for k in range(4)]
        _play_heuristic_steps(env, bots, 4 + 9 + 4 * seed)       # the bids, then a few cards into the hand
        seat = env.agent_name_mapping[env.agent_selection]
        classes = playout_values(env.unwrapped.game, seat)
        for group, value in classes:
            for card in group:
                assert _hand_difference(env, card, bots, seat) == pytest.approx(value), (seed, card)
                checked += 1
    assert checked >= 6
    bidding = spades_v0.raw_env(rules="standard")
    bidding.reset(seed=0)
    with pytest.raises(ValueError, match="expected the play phase with this seat to act"):
        playout_values(bidding.unwrapped.game, bidding.agent_name_mapping[bidding.agent_selection])


def test_student_playout_values_equal_the_students_play_through_the_env():
    """With ``--continuation student`` each class's value equals what the AEC env scores when that
    card is played and the hand goes on with the student (the neural agent, greedy) on the
    valued seat's side and the heuristic agents on the other: the batched play-outs, the copied
    encoders and the scoring agree with the real game."""
    from train.labelling.values import playout_values
    student = agents.make("neural")
    checked = 0
    for seed in range(3):
        env = spades_v0.raw_env(rules="standard", episode="hand", reward_scale=1.0)
        env.reset(seed=seed)
        bots = [agents.make("heuristic", seed=k) for k in range(4)]
        _play_heuristic_steps(env, bots, 4 + 5 + 3 * seed)       # the bids, then a few cards into the hand
        seat = env.agent_name_mapping[env.agent_selection]
        before = env.unwrapped.encoder.buffer.copy()
        classes = playout_values(env.unwrapped.game, seat, student.policy, env.unwrapped.encoder)
        assert np.array_equal(env.unwrapped.encoder.buffer, before)     # the table's encoder is untouched
        assert len(classes) > 1
        players = [student if k % 2 == seat % 2 else bots[k] for k in range(4)]
        # The class's value is its first card's: a network may answer touching cards differently
        # (it sees which one fell), unlike the heuristic, for which any card of the class is worth
        # the same (the test above); the shipped policy does at seed 1 (8D: -122, 7D: +19).
        for group, value in classes:
            assert _hand_difference(env, group[0], players, seat) == pytest.approx(value), (seed, group)
            checked += 1
    assert checked >= 6
    with pytest.raises(ValueError, match="needs the observation encoder"):
        playout_values(env.unwrapped.game, env.agent_name_mapping[env.agent_selection], student.policy)


def test_an_encoder_copy_follows_a_copied_game_and_leaves_the_original_alone():
    from spades_env.observation import ObservationEncoder
    env = spades_v0.raw_env(rules="standard")
    env.reset(seed=3)
    _play_heuristic_steps(env, [agents.make("heuristic", seed=k) for k in range(4)], 4 + 6)
    original, before = env.unwrapped.encoder, env.unwrapped.encoder.buffer.copy()
    game, twin = env.unwrapped.game.copy(), original.copy()
    for _ in range(9):                                     # across the end of two tricks
        seat, card = game.to_act, game.legal_actions()[-1]
        game.apply(card)
        twin.after_card(game, seat, card)
    fresh = ObservationEncoder(game.rules)
    fresh.encode_all(game)
    assert np.array_equal(twin.buffer, fresh.buffer)
    assert np.array_equal(original.buffer, before)


def test_student_continuation_labels_deals_in_one_batch_as_one_by_one(tmp_path):
    """Labelling a shard's deals together (their play-outs batched) gives exactly the labels of
    labelling them one at a time, and the folder records the continuation."""
    from train.labelling.labeller import Labeller
    options = settings(tmp_path / "student", teacher="playout", continuation="student", deals=3, shard_deals=3,
                       follow_teacher=0.3)
    data = load_labels(label(options, progress=False, log=quiet))
    one_by_one = Labeller(options)
    rows = {k: [] for k in FIELDS}
    for index in range(3):
        for key, values in one_by_one.label_deal(index).items():
            rows[key].extend(values)
    torch.testing.assert_close(data["values"], torch.from_numpy(np.stack(rows["values"])), rtol=0, atol=0,
                               equal_nan=True)
    assert data["teacher"].tolist() == rows["teacher"] and data["student"].tolist() == rows["student"]
    assert data["settings"]["continuation"] == "student"
    play = data["phase"] == PHASE_PLAY
    assert torch.equal(~torch.isnan(data["values"][play].float()), data["mask"][play])
    heuristic_values = load_labels(label(dict(options, continuation="heuristic", out=str(tmp_path / "heuristic")),
                                         progress=False, log=quiet))["values"]
    assert heuristic_values.shape[0] > 0
    first = min(heuristic_values.shape[0], data["values"].shape[0])
    assert not torch.equal(torch.nan_to_num(heuristic_values[:first].float()),
                           torch.nan_to_num(data["values"][:first].float()))      # other play-outs, other values


def _mid_hand(seed: int, steps: int):
    """An env ``steps`` decisions of the heuristic into a hand (the bids, then some cards)."""
    env = spades_v0.raw_env(rules="standard", episode="hand", reward_scale=1.0)
    env.reset(seed=seed)
    _play_heuristic_steps(env, [agents.make("heuristic", seed=k) for k in range(4)], steps)
    return env


def test_sampled_worlds_keep_what_the_seat_knows_and_redeal_the_rest():
    """``--worlds``' tables: the seat's hand, the cards played, the voids shown and every public fact
    are the true table's; the other hands are a fresh deal of the unseen cards of the right sizes
    (no seat given a suit it showed void in), not the true one; each table's encoder is the one
    written afresh from it; the weights count the draws."""
    from agents.search import SearchAgent
    from spades_env.observation import ObservationEncoder, decode_observation
    from train.labelling.values import sampled_tables
    from spades_env.cards import SUIT_MASKS
    redealt = 0
    for seed in range(4):
        env = _mid_hand(seed, 4 + 6 + 3 * seed)
        game, seat = env.unwrapped.game, env.agent_name_mapping[env.agent_selection]
        obs, *_ = env.last()
        before = env.unwrapped.encoder.buffer.copy()
        tables = sampled_tables(game, seat, env.unwrapped.encoder, decode_observation(obs["observation"]),
                                game.rules, 8, random.Random(seed), SearchAgent(backend="python"))
        assert np.array_equal(env.unwrapped.encoder.buffer, before)           # the table's own encoder untouched
        assert sum(weight for _, _, weight in tables) == pytest.approx(8.0)
        unseen = sum(game.hands) & ~game.hands[seat]
        for table, code, _ in tables:
            assert table.hands[seat] == game.hands[seat]
            assert [h.bit_count() for h in table.hands] == [h.bit_count() for h in game.hands]
            assert sum(table.hands) & ~table.hands[seat] == unseen
            assert all(a & b == 0 for i, a in enumerate(table.hands) for b in table.hands[i + 1:])
            for s in range(4):
                for suit in range(4):
                    if game.voids[s] >> suit & 1:
                        assert table.hands[s] & SUIT_MASKS[suit] == 0
            assert (table.played, table.trick_cards, table.bids, table.scores, table.to_act) == \
                (game.played, game.trick_cards, game.bids, game.scores, game.to_act)
            assert table.legal_mask() == game.legal_mask()
            fresh = ObservationEncoder(table.rules)
            fresh.encode_all(table)
            assert np.array_equal(code.buffer, fresh.buffer)
            assert np.array_equal(code.observe(seat), env.unwrapped.encoder.observe(seat))   # what the seat sees
            redealt += table.hands != game.hands
    assert redealt >= 16


@pytest.mark.parametrize("continuation", ["heuristic", "student"])
def test_values_over_worlds_are_the_weighted_means_of_each_worlds_play_outs(continuation):
    """A request over several worlds is valued as the weighted mean of each world's play-outs, the
    batched play-outs agreeing with :func:`playout_values` on each world alone."""
    from agents.search import SearchAgent
    from spades_env.observation import decode_observation
    from train.labelling.labeller import Labeller, _PlayOut
    from train.labelling.positions import card_classes
    from train.labelling.values import playout_values, sampled_tables
    labeller = Labeller(settings(Path("unused"), teacher="playout", continuation=continuation, worlds=6))
    requests, expected = [], []
    for seed in range(3):
        env = _mid_hand(seed, 4 + 5 + 2 * seed)
        game, seat = env.unwrapped.game, env.agent_name_mapping[env.agent_selection]
        obs, *_ = env.last()
        tables = sampled_tables(game, seat, env.unwrapped.encoder, decode_observation(obs["observation"]),
                                game.rules, 6, random.Random(seed), SearchAgent(backend="python"))
        groups = card_classes(game, seat)
        requests.append(_PlayOut(tables, seat, groups))
        policy = labeller.student.policy if continuation == "student" else None
        per_world = [[value for _, value in playout_values(t, seat, policy, code if policy else None)]
                     for t, code, _ in tables]
        weights = [w for _, _, w in tables]
        expected.append([sum(w * row[j] for row, w in zip(per_world, weights)) / sum(weights)
                         for j in range(len(groups))])
    got = labeller._play_outs(requests)
    for row, want in zip(got, expected):
        assert row == pytest.approx(want)


def test_playout_labels_over_worlds_are_reproducible_and_recorded(tmp_path):
    """``worlds`` labels every legal card at the valued positions, the same on a second run, not the
    true deal's values, and the folder records it (a folder of the true deal is not resumed with it)."""
    options = settings(tmp_path / "worlds", deals=4, shard_deals=2, teacher="playout", continuation="student",
                       follow_teacher=0.0, varied_start=1.0, worlds=4)
    data = load_labels(label(options, progress=False, log=quiet))
    again = load_labels(label(dict(options, out=str(tmp_path / "again")), progress=False, log=quiet))
    torch.testing.assert_close(data["values"], again["values"], rtol=0, atol=0, equal_nan=True)
    play = data["phase"] == PHASE_PLAY
    assert bool(play.any())
    assert torch.equal(~torch.isnan(data["values"][play].float()), data["mask"][play])
    assert data["settings"]["worlds"] == 4
    true_deal = load_labels(label(dict(options, worlds=0, out=str(tmp_path / "true")), progress=False, log=quiet))
    assert torch.equal(true_deal["obs"], data["obs"])                       # the same positions (the student's play)
    assert not torch.equal(torch.nan_to_num(true_deal["values"].float()), torch.nan_to_num(data["values"].float()))
    with pytest.raises(LabelError, match=r"other settings \(worlds: 0 there, 4 now\)"):
        label(dict(options, out=str(tmp_path / "true")), log=quiet)
    with pytest.raises(LabelError, match=r"worlds=4 applies to --teacher playout only"):
        label(settings(tmp_path / "bad", worlds=4), log=quiet)
    with pytest.raises(LabelError, match=r"worlds=-1: expected a number of deals"):
        label(dict(options, worlds=-1, out=str(tmp_path / "bad")), log=quiet)
    with pytest.raises(LabelError, match=r"worlds=2.5: expected a number of deals"):
        label(dict(options, worlds=2.5, out=str(tmp_path / "bad")), log=quiet)


def test_a_search_teacher_labels_the_mean_value_of_every_candidate(tmp_path):
    # With stage=0 the search keeps every class of equivalent cards: each gets the mean of its
    # play-outs over the sampled deals; bids get none when the search does not search them.
    data = load_labels(label(settings(tmp_path / "s", teacher="search:worlds=4,stage=0,search_bids=false", deals=2,
                                      shard_deals=1, follow_teacher=0.0), progress=False, log=quiet))
    values = data["values"].float()
    play = data["phase"] == PHASE_PLAY
    assert torch.isnan(values[~play]).all()
    valued = ~torch.isnan(values).all(1)
    assert valued.sum() > 10 and not valued[~play].any()
    for row in valued.nonzero()[:, 0].tolist():
        legal = data["mask"][row]
        assert torch.equal(~torch.isnan(values[row]), legal)        # every legal card, all candidates kept
        obs = {"observation": data["obs"][row].float().numpy(), "action_mask": legal.numpy().astype(np.int8)}
        for card in legal.nonzero()[:, 0].tolist():                  # one value per class
            assert (values[row, equivalent_actions(obs, card)] == values[row, card]).all()


def test_a_search_teacher_that_searches_its_bids_values_the_bids_it_tried(tmp_path):
    # search's default bidding (searched, valued by the game): a bidding row holds a value for
    # each bid tried (the heuristic's, one above, nil) and none for the others
    data = load_labels(label(settings(tmp_path / "s", teacher="search:worlds=4,bid_worlds=4,stage=0", deals=2,
                                      shard_deals=1, follow_teacher=0.0), progress=False, log=quiet))
    values = data["values"].float()
    bidding = (data["phase"] == PHASE_BIDDING) & (data["mask"].sum(1) > 1)
    assert bidding.any()
    for row in bidding.nonzero()[:, 0].tolist():
        tried = ~torch.isnan(values[row])
        assert 2 <= tried.sum() <= 3 and not (tried & ~data["mask"][row]).any()


def test_shards_without_values_load_with_nan_values(tmp_path, heuristic_labels):
    data = torch.load(shard_path(heuristic_labels, 0), weights_only=True)
    del data["values"]
    (tmp_path / "old").mkdir()
    torch.save(data, shard_path(tmp_path / "old", 0))
    loaded = load_labels(tmp_path / "old")
    assert loaded["values"].shape == loaded["mask"].shape and torch.isnan(loaded["values"]).all()


def test_several_label_folders_load_together_and_must_share_the_rules(tmp_path, heuristic_labels, playout_labels):
    one, other = load_labels(heuristic_labels), load_labels(playout_labels)
    both = load_labels([str(heuristic_labels), playout_labels])
    for key in FIELDS:
        torch.testing.assert_close(both[key], torch.cat([one[key], other[key]]), rtol=0, atol=0, equal_nan=True)
    assert both["settings"] == one["settings"]
    config = tiny(tmp_path, "two", f"distill_data=[{heuristic_labels}, {playout_labels}]")
    assert config.distill_data == [str(heuristic_labels), str(playout_labels)]
    with pytest.raises(ConfigError, match=r"distill_data=\[3\]: expected a folder or a non-empty list of folders"):
        tiny(tmp_path, "bad", "distill_data=[3]")
    data = torch.load(shard_path(heuristic_labels, 0), weights_only=True)
    (tmp_path / "other_rules").mkdir()
    torch.save({**data, "settings": {**data["settings"], "rules": "tournament"}}, shard_path(tmp_path / "other_rules", 0))
    with pytest.raises(LabelError, match=r"labelled under the rules 'tournament', the shards before it under 'standard'"):
        load_labels([heuristic_labels, tmp_path / "other_rules"])
    with pytest.raises(LabelError, match=r"expected a folder written by spades-label, or a list of them"):
        load_labels([])


def test_distillation_by_values_fits_the_values_and_keeps_the_bids(tmp_path, playout_labels):
    # Synthetic values that a network can learn from the mask alone: every card is worth its rank.
    # The kept epoch must then prefer high cards on the held-out deals, and the bids stay put.
    data = load_labels(playout_labels)
    shards = synthetic_values_folder(tmp_path / "ranked", data, (torch.arange(68) % 13).float())
    logs: list[str] = []
    config = tiny(tmp_path, "by_values", "imitation_decisions=0", f"distill_data={shards}",
                  "distill_value_temperature=1", "distill_epochs=30", "distill_learning_rate=0.01", "minibatch_size=32",
                  "max_updates=0", "eval_every=0")
    trainer = Trainer(config, log=logs.append)
    obs, mask = data["obs"].float(), data["mask"]
    with torch.no_grad():
        before = trainer.policy(obs, mask)
    trainer.distill()
    with torch.no_grad():
        after = trainer.policy(obs, mask)
    first = next(line for line in logs if line.startswith("distillation by values"))
    start = float(first.split("worth ")[1].split(" points")[0])
    kept = float(logs[-1].split("worth ")[1].split(" points")[0])
    assert logs[-1].startswith("distillation: kept epoch") and "kept epoch 0 " not in logs[-1]
    assert kept > start + 1.0                    # from a random choice to the high cards
    bids = data["phase"] != PHASE_PLAY
    change = centred_legal(after, mask) - centred_legal(before, mask)
    assert change[bids].abs().max() < 0.25
    assert change[~bids].abs().max() > 1.0


def test_distillation_by_values_scores_pruned_candidates_at_the_rows_lowest_value(tmp_path, playout_labels):
    """A search teacher values only the candidates it kept (the others NaN): the favourite cards are
    still scored (a pruned favourite counts as its row's lowest value), never NaN, and the fit keeps
    an epoch that prefers high cards."""
    data = load_labels(playout_labels)
    ranked = (torch.arange(68) % 13).float().expand_as(data["values"]).clone()
    pruned = data["mask"] & (ranked < 4)                  # every legal card below a six: not searched
    data = {**data, "values": torch.where(pruned, torch.full_like(ranked, float("nan")), data["values"].float())}
    shards = synthetic_values_folder(tmp_path / "pruned", data, (torch.arange(68) % 13).float())
    logs: list[str] = []
    config = tiny(tmp_path, "pruned_values", "imitation_decisions=0", f"distill_data={shards}",
                  "distill_value_temperature=1", "distill_epochs=30", "distill_learning_rate=0.01", "minibatch_size=32",
                  "max_updates=0", "eval_every=0")
    Trainer(config, log=logs.append).distill()
    first = next(line for line in logs if line.startswith("distillation by values"))
    start = float(first.split("worth ")[1].split(" points")[0])
    kept = float(logs[-1].split("worth ")[1].split(" points")[0])
    assert start == start and kept == kept                # not NaN
    assert "kept epoch 0 " not in logs[-1] and kept > start + 1.0


def test_distillation_by_values_needs_values(tmp_path, heuristic_labels):
    with pytest.raises(ConfigError, match=r"holds no values \(label them with spades-label --teacher playout\)"):
        Trainer(tiny(tmp_path, "no_values", "imitation_decisions=0", f"distill_data={heuristic_labels}",
                     "distill_value_temperature=5", "max_updates=0"), log=quiet).train()
    with pytest.raises(ConfigError, match=r"distill_value_temperature=0.0: expected a positive number or null"):
        tiny(tmp_path, "zero", "distill_value_temperature=0")


@pytest.mark.parametrize("keep", ["loss", "last"])
def test_distill_keep_chooses_the_kept_epoch(tmp_path, playout_labels, keep):
    logs: list[str] = []
    config = tiny(tmp_path, f"keep_{keep}", "imitation_decisions=0", f"distill_data={playout_labels}",
                  "distill_value_temperature=5", "distill_epochs=3", "distill_learning_rate=0.003",
                  "minibatch_size=32", "max_updates=0", "eval_every=0", f"distill_keep={keep}")
    Trainer(config, log=logs.append).distill()
    losses = [float(line.split("held-out loss ")[1].split(",")[0]) for line in logs if "held-out loss" in line]
    kept = int(logs[-1].split("kept epoch ")[1].split(" ")[0])
    assert len(losses) == 3
    if keep == "last":
        assert kept == 3
    else:                     # here every epoch lowers the held-out loss below the starting weights'
        assert kept == 1 + losses.index(min(losses))
    with pytest.raises(ConfigError, match=r"distill_keep='best': expected 'score', 'loss' or 'last'"):
        tiny(tmp_path, "bad_keep", "distill_keep=best")


# ---- issue 75: --out, the student and the shards by the file rules ------------------------------

def test_a_bad_out_or_student_is_one_line_before_any_labelling(tmp_path, capsys):
    from helpers_files import is_char_device, private_device, private_fifo

    (tmp_path / "FILE").write_text("x")
    zero, fifo = private_device(tmp_path, "zero", minor=5), private_fifo(tmp_path)
    cases = [(["--out", str(tmp_path / "FILE")], "FILE is a file: expected a folder"),
             (["--out", str(tmp_path / "FILE" / "labels")], "FILE is not a folder"),
             (["--out", str(zero)], "zero is a device: expected a folder"),
             (["--out", str(tmp_path / "o1"), "--student", str(zero)], "zero is a device, not a regular file"),
             (["--out", str(tmp_path / "o2"), "--student", str(fifo)], "pipe is a FIFO, not a regular file")]
    for argv, expected in cases:
        assert main(argv + ["--teacher", "heuristic", "--deals", "1", "--workers", "1", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("spades-label: error: ") and expected in err, err
    assert is_char_device(zero) and not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_a_truncated_or_hollow_shard_is_labelled_again_on_resume_and_refused_when_loaded(tmp_path):
    out = label(settings(tmp_path / "made", deals=2, shard_deals=1), progress=False, log=quiet)
    whole = torch.load(shard_path(out, 1), weights_only=True)
    cut = {**whole, "teacher": whole["teacher"][:-1].clone()}               # a row short: truncated
    torch.save(cut, shard_path(out, 1))
    with pytest.raises(LabelError, match="teacher has .* rows, obs .*: a truncated shard"):
        load_labels(out)
    lines = []
    label(settings(tmp_path / "made", deals=2, shard_deals=1), progress=False, log=lines.append)
    assert any("1 of 2 shards already" in line for line in lines)
    again = torch.load(shard_path(out, 1), weights_only=True)
    assert torch.equal(again["teacher"], whole["teacher"])
    hollow = {**whole, "obs": torch.zeros(1, dtype=torch.float16).expand(2_000_000, whole["obs"].shape[1])}
    torch.save(hollow, shard_path(out, 1))
    with pytest.raises(LabelError, match="a view .* over values the file does not hold"):
        load_labels(out)


def test_solver_teacher_labels_exact_endgame_values_over_worlds(tmp_path):
    """``--teacher solver``: every legal card valued (heuristic play-outs handing over to the exact
    solver for the last tricks, averaged over sampled worlds), recorded with its endgame_tricks,
    and values that are not the heuristic play-outs'."""
    options = settings(tmp_path / "solver", deals=2, shard_deals=2, teacher="solver", follow_teacher=0.0, worlds=3,
                       endgame_tricks=4)
    data = load_labels(label(options, progress=False, log=quiet))
    play = data["phase"] == PHASE_PLAY
    assert bool(play.any())
    assert torch.equal(~torch.isnan(data["values"][play].float()), data["mask"][play])
    assert data["settings"]["endgame_tricks"] == 4 and data["settings"]["teacher"] == "solver"
    playout = load_labels(label(dict(options, teacher="playout", endgame_tricks=None, out=str(tmp_path / "playout")),
                                progress=False, log=quiet))
    assert torch.equal(playout["obs"], data["obs"])
    assert not torch.equal(torch.nan_to_num(playout["values"].float()), torch.nan_to_num(data["values"].float()))
    with pytest.raises(LabelError, match=r"endgame_tricks=4 applies to --teacher solver only"):
        label(settings(tmp_path / "bad", endgame_tricks=4), log=quiet)
    with pytest.raises(LabelError, match=r"endgame_tricks=0: expected the tricks left to solve exactly, 1..13"):
        label(dict(options, endgame_tricks=0, out=str(tmp_path / "bad")), log=quiet)
