"""Issue 47's training pieces: desynchronised tables, the bids' own credit (lambda, normalisation,
Monte-Carlo and counterfactual values), the control's reset bidding head, and the ablation's
measurements. The counterfactual values are checked against the engine itself: the value of the
bid actually made is the reward the seat was paid, on both engines."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from spades_env.game import BID_ACTION_BASE
from spades_env.vector import SpadesVectorEnv
from train.bids.bid_counterfactual import NUM_BIDS, CounterfactualBids
from train.ppo.config import ConfigError, load_config
from train.ppo.trainer import Trainer
from train.ppo.update import normalised_advantages

from helpers_train import tiny

SCRATCH = ["imitation_decisions=0", "opponents={self: 1.0}"]


@pytest.mark.parametrize("backend, reward, bag_cost", [("torch", "team_diff", 10.0), ("native", "team_score", 0.0),
                                                       ("native", "team_diff", 10.0)])
def test_the_made_bids_value_is_the_reward_paid(backend, reward, bag_cost):
    """Random legal play from random scores and bags (blind nil offered, bag penalties met): for
    every bid, its counterfactual value at the bid made equals the seat's reward for the hand;
    illegal bids are nan, legal ones finite."""
    tables = 32
    env = SpadesVectorEnv(tables, rules="standard", reward=reward, episode="hand", seed=5, bag_cost=bag_cost,
                          backend=backend)
    gen = torch.Generator().manual_seed(1)
    obs, mask = env.reset(scores=torch.randint(-10, 45, (tables, 2), generator=gen) * 10,
                          bags=torch.randint(0, 10, (tables, 2), generator=gen))
    cf = CounterfactualBids(env, env.obs_size, keep_updates=100, device=torch.device("cpu"))
    made: dict[tuple[int, int], int] = {}
    paid = torch.zeros(tables, 4)
    checked = 0
    for _ in range(200):
        actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
        seat = env.to_act
        cf.before_step(obs, mask, actions, torch.ones(tables, dtype=torch.bool))
        for t in torch.nonzero((actions >= BID_ACTION_BASE) & (actions < BID_ACTION_BASE + NUM_BIDS))[:, 0].tolist():
            made[(t, int(seat[t]))] = int(actions[t]) - BID_ACTION_BASE
        before = len(cf._current)
        obs, mask, rewards, done, _ = env.step(actions)
        paid += rewards
        cf.after_step(done)
        finished = torch.nonzero(done)[:, 0].tolist()
        if finished and len(cf._current) > before:
            _, bid_mask, target = cf._current[-1]
            legal = bid_mask[:, BID_ACTION_BASE:BID_ACTION_BASE + NUM_BIDS]
            assert torch.isfinite(target[legal]).all() and torch.isnan(target[~legal]).all()
            row = 0
            for t in finished:                        # the records' order: tables, then seats
                for s in range(4):
                    if (t, s) in made:
                        assert float(target[row, made.pop((t, s))]) == pytest.approx(float(paid[t, s]), abs=1e-5)
                        row += 1
                        checked += 1
            assert row == target.shape[0]
        for t in finished:
            paid[t] = 0
            for s in range(4):
                made.pop((t, s), None)
    assert checked > 200


def test_played_nil_is_valued_only_by_nil_hands():
    """bid_counterfactual_nil: played: a nil bid's record values nil alone (the reward paid); any
    other bid's record values every legal bid but nil."""
    tables = 32
    env = SpadesVectorEnv(tables, rules="standard", reward="team_diff", episode="hand", seed=9, bag_cost=10.0,
                          backend="native")
    gen = torch.Generator().manual_seed(2)
    obs, mask = env.reset()
    cf = CounterfactualBids(env, env.obs_size, keep_updates=100, device=torch.device("cpu"), nil="played")
    chosen = torch.full((tables, 4), -1)
    for _ in range(120):
        actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
        is_bid = (actions >= BID_ACTION_BASE) & (actions < BID_ACTION_BASE + NUM_BIDS)
        cf.before_step(obs, mask, actions, torch.ones(tables, dtype=torch.bool))
        chosen[is_bid, env.to_act[is_bid]] = actions[is_bid] - BID_ACTION_BASE
        obs, mask, _, done, _ = env.step(actions)
        cf.after_step(done)
    cf.end_rollout()
    _, bid_mask, target = cf.records()
    legal = bid_mask[:, BID_ACTION_BASE:BID_ACTION_BASE + NUM_BIDS]
    nil_rows = torch.isfinite(target[:, 0])
    assert bool(nil_rows.any()) and bool((~nil_rows).any())
    assert bool(torch.isnan(target[nil_rows, 1:]).all())
    assert bool(torch.isfinite(target[~nil_rows][:, 1:][legal[~nil_rows][:, 1:]]).all())
    with pytest.raises(ValueError, match="expected one of counterfactual, played"):
        CounterfactualBids(env, env.obs_size, keep_updates=1, device=torch.device("cpu"), nil="guess")


def test_bid_value_loss_fits_the_made_bids_logit_times_temperature():
    """bid_learning: values: the made bid's value is its logit x bid_temperature x reward_scale,
    fitted to the return; card rows do not count, a blind-nil decision (action 66) does."""
    from types import SimpleNamespace
    from train.ppo.update import bid_value_loss
    cfg = SimpleNamespace(bid_temperature=10.0, reward_scale=0.01)
    logits = torch.zeros(3, 68)
    logits[0, 55], logits[2, 66] = 5.0, -2.0                 # values 0.5 and -0.2 reward units
    mb = {"action": torch.tensor([55, 3, 66]), "ret": torch.tensor([0.5, 9.0, 0.2])}
    assert float(bid_value_loss(logits, mb, cfg)) == pytest.approx(0.5 * (0.0 + 0.4 ** 2) / 2)
    assert float(bid_value_loss(logits, {"action": torch.tensor([3]), "ret": torch.tensor([1.0])}, cfg)) == 0.0


@pytest.mark.parametrize("minibatch, steps", [(4, 2 * 3), (10, 2 * 1), (512, 2 * 1)])
def test_the_bids_fit_takes_a_step_per_minibatch_of_bid_fit_minibatch(minibatch, steps):
    """fit_bid_values: bid_fit_passes passes, each in minibatches of bid_fit_minibatch valued bids
    (the GPU config's larger ones take fewer steps an update), and one loss read at the end."""
    from types import SimpleNamespace
    from agents.networks import PolicyNet
    from train.ppo.update import fit_bid_values
    torch.manual_seed(0)
    policy = PolicyNet(obs_size=742, hidden=16, layers=1, head_hidden=8)
    n = 10
    obs, mask = torch.rand(n, 742), torch.zeros(n, 68, dtype=torch.bool)
    mask[:, BID_ACTION_BASE:BID_ACTION_BASE + NUM_BIDS] = True
    target = torch.randn(n, NUM_BIDS)
    cfg = SimpleNamespace(bid_fit_passes=2, bid_fit_minibatch=minibatch, bid_temperature=10.0, reward_scale=0.01,
                          bid_value_coef=1.0, max_grad_norm=0.5, learn_precision="float32", card_features=False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    taken = []
    optimizer.register_step_post_hook(lambda opt, args, kwargs: taken.append(1))
    out = fit_bid_values(policy, optimizer, (obs, mask, target), cfg, torch.Generator().manual_seed(0),
                         torch.device("cpu"))
    assert len(taken) == steps and out["loss__bid_values"] > 0


def test_values_and_lambda_runs_train(tmp_path):
    """bid_learning: values and bid_gae_lambda with separate normalisation train end to end."""
    for name, extra in (("values", ["bid_learning=values"]),
                        ("lambda", ["bid_gae_lambda=1.0", "bid_advantage_norm=separate"])):
        trainer = Trainer(tiny(tmp_path, name, *SCRATCH, *extra, "total_decisions=1024", "eval_every=0",
                               "final_eval_deals=2", "eval_opponents=[random]", "eval_against_start=false"),
                          log=lambda line: None)
        before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        trainer.train()
        assert not torch.equal(before["bid_head.2.weight"], trainer.policy.state_dict()["bid_head.2.weight"])


def test_separate_normalisation_centres_bids_and_cards_apart():
    adv = torch.tensor([10.0, 12.0, 14.0, -1.0, 0.0, 1.0, 2.0])
    action = torch.tensor([52, 55, 60, 3, 7, 9, 11])
    out = normalised_advantages(adv, action, "separate")
    for rows in (action >= 52, action < 52):
        assert float(out[rows].mean()) == pytest.approx(0.0, abs=1e-6)
        assert float(out[rows].std()) == pytest.approx(1.0, abs=1e-4)
    joint = normalised_advantages(adv, action, "joint")
    assert float(joint[:3].min()) > 0            # together the bids' large advantages all stay above 0


def test_desynchronised_tables_bid_at_different_steps(tmp_path):
    """Without it every table bids in the same steps; with it the first rollout's bids are spread
    over its steps, and a run with it resumes as any other."""
    def bid_steps(desync: bool) -> set[int]:
        trainer = Trainer(tiny(tmp_path, f"d{desync}", *SCRATCH, "num_envs=32", "rollout_steps=56",
                               f"desync_tables={str(desync).lower()}"), log=lambda line: None)
        try:
            if desync:
                trainer.collector.desynchronise(trainer.policy, trainer.critic)
            buf = trainer.collect()
        finally:
            trainer.run_lock.release()
        is_bid = (buf.action >= BID_ACTION_BASE) & (buf.action < BID_ACTION_BASE + NUM_BIDS)
        return set(torch.nonzero(is_bid.any(1))[:, 0].tolist())

    assert len(bid_steps(False)) == 4
    assert len(bid_steps(True)) > 15


def test_counterfactual_run_learns_and_resumes_exactly(tmp_path):
    """bid_learning: counterfactual with bag_cost and desync trains end to end, logs the bids' fit,
    and a run stopped at an update and resumed ends with the weights of one never stopped (the
    kept bids and their optimizer are in the checkpoint)."""
    settings = [*SCRATCH, "bid_learning=counterfactual", "desync_tables=true", "bag_cost=10",
                "total_decisions=3072", "eval_every=0", "final_eval_deals=2",
                "eval_opponents=[random]", "eval_against_start=false"]
    straight = Trainer(tiny(tmp_path, "straight", *settings), log=lambda line: None)
    straight.train()
    rows = list(csv.DictReader((tmp_path / "straight" / "metrics.csv").open()))
    assert any(r["loss__bid_values"] for r in rows)
    stopped = Trainer(tiny(tmp_path, "stopped", *settings, "max_updates=3"), log=lambda line: None)
    stopped.train()
    resumed = Trainer(tiny(tmp_path, "stopped", *settings), resume=True, log=lambda line: None)
    resumed.train()
    a, b = straight.policy.state_dict(), resumed.policy.state_dict()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_reset_bid_head_keeps_the_rest(tmp_path):
    first = Trainer(tiny(tmp_path, "base", *SCRATCH, "total_decisions=1024"), log=lambda line: None)
    first.train()
    model = tmp_path / "base" / "model.pt"
    control = Trainer(tiny(tmp_path, "control", *SCRATCH, f"init_from={model}", "reset_bid_head=true",
                           "policy_parts=bids"), log=lambda line: None)
    try:
        old, new = first.policy.state_dict(), control.policy.state_dict()
        assert all(torch.equal(old[k], new[k]) for k in old if not k.startswith("bid_head"))
        assert not torch.equal(old["bid_head.0.weight"], new["bid_head.0.weight"])
    finally:
        control.run_lock.release()


@pytest.mark.parametrize("setting, words", [
    ("bid_gae_lambda=1.5", "bid_gae_lambda=1.5: expected 0..1"),
    ("bid_advantage_norm=apart", "expected 'joint' or 'separate'"),
    ("bid_learning=guess", "expected 'ppo', 'values' or 'counterfactual'"),
    ("bid_temperature=0", "bid_temperature=0"),
    ("bid_replay_updates=0", "bid_replay_updates=0: expected a positive integer"),
    ("bid_fit_minibatch=0", "bid_fit_minibatch=0: expected a positive integer"),
    ("reset_bid_head=true", "reset_bid_head: true needs init_from"),
    ("bid_counterfactual_nil=maybe", "expected 'counterfactual' or 'played'"),
])
def test_bad_bid_settings_are_refused(tmp_path, setting, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_config(None, [f"run_dir={tmp_path}", setting]).validate()


def test_counterfactual_needs_hand_episodes(tmp_path):
    with pytest.raises(ConfigError, match="needs episode: hand"):
        load_config(None, [f"run_dir={tmp_path}", "bid_learning=counterfactual", "episode=game"]).validate()


def test_ablation_measurements_and_table(tmp_path):
    """The ablation's entropy summary and table from made-up measurements (the training and the
    signals are exercised by the other tests and by the CLI's own tests)."""
    from coop.study.study import load_study
    from coop.study.scratch_ablation import bid_entropy_summary, report_markdown, summarise

    rows = [{"decisions": str(d), "loss__entropy_bid": e} for d, e in
            [(1000, "2.6"), (2000, ""), (3000, "0.05"), (4000, "0.02")]]
    summary = bid_entropy_summary(rows)
    assert summary["collapsed_at_decisions"] == 3000 and summary["updates_without_bids"] == 0.25
    assert summary["final"] == pytest.approx(0.02)
    study = load_study("experiments/2026-11-27-learning-from-scratch/scratch_ablation.yaml", str(tmp_path / "abl"))
    results = {}
    for run in study.runs()[:6]:
        bits = 0.1 * run.seed
        results[run.name] = {"run": run.name, "arm": run.method.name, "seed": run.seed, "decisions": 1,
                             "bits": {"value": bits, "low": 0, "high": 1}, "mean_bid": 2.0, "nil_share": 0.0,
                             "bid_entropy": {"final": 0.5, "collapsed_at_decisions": None,
                                             "updates_without_bids": 0.0},
                             "points_vs_heuristic": {"mean": -30.0 - run.seed, "low": -40, "high": -20, "n": 9},
                             "games_vs_heuristic": None}
    arms = summarise(study, results)
    assert [a["arm"] for a in arms] == [m.name for m in study.methods[:2]]
    assert arms[0]["bits"]["mean"] == pytest.approx(0.2) and arms[0]["bits"]["low"] < 0.2
    text = report_markdown(study, arms, "experiments/2026-11-27-learning-from-scratch/scratch_ablation.yaml")
    assert "| baseline |" in text and "0.10 / 0.20 / 0.30" in text and "never" in text
    json.dumps(arms)


def test_counterfactual_bids_leave_the_blind_nil_choice_to_ppo():
    """With bid_learning: counterfactual the bids nil..13 take no PPO gradient (their values are
    fitted apart), but the blind-nil choice (blind nil or look, which the values do not cover)
    does: it once took none from either, and drifted with the bids' fit."""
    from types import SimpleNamespace
    from agents.networks import PolicyNet
    from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, LOOK_ACTION
    from train.ppo.update import fitted_as_values, ppo_loss
    action = torch.tensor([0, BID_ACTION_BASE, BID_ACTION_BASE + 13, BLIND_NIL_ACTION, LOOK_ACTION])
    assert fitted_as_values(action, "counterfactual").tolist() == [False, True, True, False, False]
    assert fitted_as_values(action, "values").tolist() == [False, True, True, True, True]

    torch.manual_seed(5)
    policy, critic = PolicyNet(742, 16, 1, 8), torch.nn.Linear(742, 1)
    mask = torch.zeros(4, 68, dtype=torch.bool)
    mask[:2, BID_ACTION_BASE:BID_ACTION_BASE + 14] = True              # two bids
    mask[2:, [BLIND_NIL_ACTION, LOOK_ACTION]] = True                    # two blind-nil choices
    mb = {"obs": torch.rand(4, 742), "mask": mask,
          "action": torch.tensor([BID_ACTION_BASE + 3, BID_ACTION_BASE + 5, BLIND_NIL_ACTION, LOOK_ACTION]),
          "logp": torch.log(torch.tensor([1 / 14, 1 / 14, 0.5, 0.5])), "advantage": torch.tensor([1.0, -1.0, -1.0, 1.0]),
          "ret": torch.zeros(4)}
    cfg = SimpleNamespace(learn_precision="float32", clip=0.2, value_coef=0.5, entropy_coef=0.0,
                          bid_learning="counterfactual")

    def policy_gradient(rows):
        policy.zero_grad()
        part = {key: value[rows] for key, value in mb.items()}
        ppo_loss(policy, lambda x: critic(x)[:, 0], part, cfg, critic_only=False, device=torch.device("cpu")).policy.backward()
        return sum(float(p.grad.abs().sum()) for p in policy.parameters() if p.grad is not None)

    assert policy_gradient([2, 3]) > 0.0       # blind nil worse than looking: pushed down
    assert policy_gradient([0, 1]) == 0.0      # bids: fitted apart, no PPO gradient
