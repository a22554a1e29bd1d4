"""``blind_nil_explore``: the learner bids blind nil on a share of the decisions where it is
offered, so its card play meets blind-nil hands (train/ppo/rollout.py, Collector.explore_blind_nil)."""

import pytest
import torch

from spades_env.game import BLIND_NIL_ACTION, LOOK_ACTION
from train.ppo.config import ConfigError, load_config
from train.ppo.rollout import Collector


def explorer(share: float, seed: int = 0) -> Collector:
    collector = Collector.__new__(Collector)          # the one method needs only these two
    collector.blind_nil_explore = share
    collector.generator = torch.Generator().manual_seed(seed)
    return collector


def masks(rows: int, offered: bool) -> torch.Tensor:
    mask = torch.zeros(rows, 68, dtype=torch.bool)
    if offered:
        mask[:, BLIND_NIL_ACTION] = mask[:, LOOK_ACTION] = True
    else:
        mask[:, 52:66] = True
    return mask


def test_blind_nil_is_put_in_on_the_share_of_offered_rows_only():
    sampled = torch.full((4000,), LOOK_ACTION)
    chosen = explorer(0.5).explore_blind_nil(sampled, masks(4000, offered=True))
    share = (chosen == BLIND_NIL_ACTION).float().mean().item()
    assert 0.46 < share < 0.54
    assert set(chosen.tolist()) == {BLIND_NIL_ACTION, LOOK_ACTION}
    bids = torch.full((4000,), 55)
    assert torch.equal(explorer(1.0).explore_blind_nil(bids, masks(4000, offered=False)), bids)


def test_every_offered_row_with_share_one_and_the_policy_choice_kept_by_the_rest():
    sampled = torch.tensor([LOOK_ACTION, BLIND_NIL_ACTION, LOOK_ACTION])
    assert explorer(1.0).explore_blind_nil(sampled, masks(3, offered=True)).tolist() == [BLIND_NIL_ACTION] * 3
    assert explorer(0.0).explore_blind_nil(sampled, masks(3, offered=True)).tolist() == sampled.tolist()


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(value):
    with pytest.raises(ConfigError, match="blind_nil_explore"):
        load_config("configs/quickstart.yaml", overrides=[f"blind_nil_explore={value}"])


REAL_GAME = "experiments/2026-11-27-training-for-the-real-game"    # the configs of that experiment


def test_the_game_configs_load():
    for name in ("neural_game", "neural_game_bids", "neural_game_blind"):
        cfg = load_config(f"{REAL_GAME}/{name}.yaml")
        assert cfg.bag_cost == 10.0
    assert load_config(f"{REAL_GAME}/neural_game_blind.yaml").blind_nil_explore == 0.5


def nil_explorer(share: float, seed: int = 0, max_bid=None) -> Collector:
    collector = Collector.__new__(Collector)
    collector.nil_explore, collector.nil_explore_max_bid = share, max_bid
    collector.generator = torch.Generator().manual_seed(seed)
    return collector


def test_nil_is_put_in_on_the_share_of_bidding_turns_only():
    """``nil_explore``: nil replaces the policy's bid on about the share of bidding turns, whatever
    the bid drawn; card turns and blind-nil turns are left as they are."""
    sampled = torch.full((4000,), 55)                               # a bid of 3
    chosen = nil_explorer(0.25).explore_nil(sampled, masks(4000, offered=False))
    share = (chosen == 52).float().mean().item()
    assert 0.22 < share < 0.28 and set(chosen.tolist()) == {52, 55}
    blind = torch.full((100,), LOOK_ACTION)
    assert torch.equal(nil_explorer(1.0).explore_nil(blind, masks(100, offered=True)), blind)
    cards = torch.arange(10)
    card_mask = torch.zeros(10, 68, dtype=torch.bool)
    card_mask[:, :13] = True
    assert torch.equal(nil_explorer(1.0).explore_nil(cards, card_mask), cards)


def test_nil_is_put_in_only_on_the_policys_low_bids_with_a_max_bid():
    """``nil_explore_max_bid: 1``: only the turns where the policy drew nil or 1 may become nil (the
    policy's own weakest hands); bids of 2 and more, cards and blind-nil turns are left alone."""
    sampled = torch.tensor([53, 54, 55, 65, 52] * 800)              # bids 1, 2, 3, 13 and nil
    chosen = nil_explorer(0.5, max_bid=1).explore_nil(sampled, masks(4000, offered=False))
    ones = sampled == 53
    assert torch.equal(chosen[~ones], sampled[~ones])
    share = (chosen[ones] == 52).float().mean().item()
    assert 0.45 < share < 0.55 and set(chosen[ones].tolist()) == {52, 53}
    assert torch.equal(nil_explorer(1.0, max_bid=0).explore_nil(sampled, masks(4000, offered=False)), sampled)
    everything = nil_explorer(1.0, max_bid=13).explore_nil(sampled, masks(4000, offered=False))
    assert set(everything.tolist()) == {52}
    blind = torch.full((100,), LOOK_ACTION)
    assert torch.equal(nil_explorer(1.0, max_bid=13).explore_nil(blind, masks(100, offered=True)), blind)


@pytest.mark.parametrize("value", ["14", "-1", "true", "1.5", "'one'"])
def test_a_bad_nil_explore_max_bid_is_refused(value):
    with pytest.raises(ConfigError, match="nil_explore_max_bid"):
        load_config("configs/quickstart.yaml", overrides=[f"nil_explore_max_bid={value}"]).validate()


def test_the_trainer_hands_nil_explore_max_bid_to_its_collector(tmp_path):
    from train.ppo.trainer import Trainer
    trainer = Trainer(load_config("configs/quickstart.yaml", overrides=[
        f"run_dir={tmp_path}", "name=low", "nil_explore=0.3", "nil_explore_max_bid=1", "num_envs=8", "minibatch_size=256",
        "imitation_decisions=0", "eval_every=0"]), log=lambda line: None)
    try:
        assert (trainer.collector.nil_explore, trainer.collector.nil_explore_max_bid) == (0.3, 1)
    finally:
        trainer.run_lock.release()


def test_nil_explore_trains_and_is_checked(tmp_path):
    with pytest.raises(ConfigError, match="nil_explore"):
        load_config("configs/quickstart.yaml", overrides=["nil_explore=2"])
    from train.ppo.trainer import Trainer
    cfg = load_config("configs/quickstart.yaml", overrides=[
        f"run_dir={tmp_path}", "name=nil", "nil_explore=0.5", "num_envs=16", "rollout_steps=56",
        "total_decisions=1792", "minibatch_size=448", "imitation_decisions=0", "eval_every=0", "final_eval_deals=0",
        "final_eval_games=0", "bid_learning=counterfactual", "bid_counterfactual_nil=played", "desync_tables=false"])
    trainer = Trainer(cfg)
    trainer.train()
    nils = (trainer.collector.storage.action == 52) & trainer.collector.storage.learner
    bids = (trainer.collector.storage.action >= 52) & (trainer.collector.storage.action < 66) & trainer.collector.storage.learner
    assert 0.3 < nils.sum().item() / bids.sum().item() < 0.8        # half of the bids forced to nil, and the policy's own
