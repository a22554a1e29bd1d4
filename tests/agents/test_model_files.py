"""Model files from outside: weights that are not finite are refused by every load path."""

import pytest
import torch

import agents
from agents.neural import DEFAULT_MODEL, PREVIOUS_MODEL, ModelError, NeuralAgent, read_checkpoint

from helpers import play_hand_asserting_legal


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused(tmp_path, value):
    data = torch.load(DEFAULT_MODEL, weights_only=True)
    name = next(k for k, v in data["policy"].items() if v.is_floating_point())
    data["policy"][name] = data["policy"][name].clone()
    data["policy"][name].view(-1)[0] = value
    path = tmp_path / "bad.pt"
    torch.save(data, path)
    with pytest.raises(ModelError, match="not finite"):
        read_checkpoint(path)
    with pytest.raises(ModelError, match="not finite"):
        NeuralAgent(checkpoint=path)
    with pytest.raises(ModelError, match="not finite"):
        agents.make("neural", checkpoint=str(path))


def test_the_shipped_model_loads():
    assert NeuralAgent().policy is not None


def test_the_previous_shipped_model_stays_loadable_and_plays_legal_games():
    """neural_v1 is the policy shipped before expert iteration's (docs/shipped_model.md)."""
    bot = agents.make("neural_v1")
    assert bot.checkpoint == PREVIOUS_MODEL and bot.checkpoint != DEFAULT_MODEL
    play_hand_asserting_legal(bot, seed=4)
    with pytest.raises(ValueError, match="neural_v1 is one fixed model"):
        agents.make("neural_v1", checkpoint=str(DEFAULT_MODEL))


def test_the_policy_shipped_on_2026_11_26_stays_loadable_as_neural_v2():
    """neural_v2 is expert iteration's round 4, shipped as neural until 2026-11-27."""
    from agents.neural import PREVIOUS_MODELS
    bot = agents.make("neural_v2")
    assert bot.checkpoint == PREVIOUS_MODELS["neural_v2"] != DEFAULT_MODEL
    assert read_checkpoint(bot.checkpoint)["provenance"]["trained_by"] == "spades-train expert iteration"
    play_hand_asserting_legal(bot, seed=5)
    with pytest.raises(ValueError, match="neural_v2 is one fixed model"):
        agents.make("neural_v2", checkpoint=str(DEFAULT_MODEL))


def _decisions_that_may_differ(bot, other, hands: int, scores_of, may_differ) -> tuple[int, int]:
    """Play ``hands`` hands (hand ``seed`` from ``scores_of(seed)``) with ``other`` choosing, asking
    ``bot`` at every decision too: they must agree wherever ``may_differ(obs, other's choice)`` is
    false. Returns (decisions where they may differ, decisions where they did)."""
    from spades_env import spades_v0
    allowed = differ = 0
    env = spades_v0.env(episode="hand")
    for seed in range(hands):
        env.reset(seed=seed, options={"scores": scores_of(seed)})
        for _ in env.agent_iter():
            obs, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            a, b = bot.act(obs), other.act(obs)
            if may_differ(obs, b):
                allowed += 1
                differ += a != b
            else:
                assert a == b
            env.step(b)
    return allowed, differ


def test_the_shipped_model_is_neural_v6_with_bids_valued_by_the_game():
    """The default neural model (since 2026-11-29) is neural_v6 weight for weight except its
    bidding head, fitted to Monte-Carlo bid values scored by the probability of winning the game
    (python -m train.bids.game_bid_values fit --objective win --from-policy) and tilted 0.5 upwards;
    the score rule, dropped, is in the values."""
    import hashlib
    from agents.neural import PREVIOUS_MODELS
    shipped, v6 = read_checkpoint(DEFAULT_MODEL), read_checkpoint(PREVIOUS_MODELS["neural_v6"])
    assert shipped["arch"]["nil_defence_head"] is True and "score_tilts" not in shipped["arch"]
    assert v6["arch"]["score_tilts"] == {"lead": [350, -0.7]}
    record = shipped["provenance"]["game_bid_values"]
    assert (record["objective"], record["from_policy"], record["deals"]) == ("win", True, 131072)
    assert record["student_sha256"] == hashlib.sha256(PREVIOUS_MODELS["neural_v6"].read_bytes()).hexdigest()
    assert record["score_tilts_dropped"] == {"lead": [350, -0.7]}
    assert shipped["provenance"]["bid_tilt"]["tilt"] == 0.5
    assert set(shipped["policy"]) == set(v6["policy"])
    moved = {k for k in v6["policy"] if not torch.equal(shipped["policy"][k], v6["policy"][k])}
    assert moved and all(k.startswith("bid_head.") for k in moved)          # only the bids are new


def test_the_policy_shipped_on_the_evening_of_2026_11_28_stays_loadable_as_neural_v6():
    """neural_v6 is neural_v5 weight for weight plus the nil-defence head fitted alone (policy_parts:
    nil_defence) to play-out values of neural_v5's own play, the score rule written back by python
    -m train.bids.bid_tilt; it plays the cards as the shipped policy does, and bids otherwise at times."""
    from agents.neural import PREVIOUS_MODELS
    from spades_env.game import BID_ACTION_BASE
    v6, v5 = read_checkpoint(PREVIOUS_MODELS["neural_v6"]), read_checkpoint(PREVIOUS_MODELS["neural_v5"])
    assert v6["arch"]["nil_defence_head"] is True and not v5["arch"].get("nil_defence_head", False)
    config = v6["provenance"]["config"]
    # the path as it was on 2026-11-28 (neural_v5's file then), as the file records it
    assert (config["policy_parts"], config["init_from"]) == ("nil_defence", "agents/models/neural_standard.pt")
    assert config["distill_data"] == ["runs/nil_defence_worlds8", "runs/nil_defence_playout", "runs/nil_defence_playout2"]
    assert set(v5["policy"]) < set(v6["policy"])
    assert all(k.startswith("nil_") for k in set(v6["policy"]) - set(v5["policy"]))
    assert all(torch.equal(v6["policy"][k], v5["policy"][k]) for k in v5["policy"])        # only the head is new
    bot, shipped = agents.make("neural_v6"), agents.make("neural")
    assert bot.checkpoint == PREVIOUS_MODELS["neural_v6"] != DEFAULT_MODEL
    bids, differ = _decisions_that_may_differ(bot, shipped, 30, lambda seed: [seed * 15 - 100, 300 - seed * 10],
                                              lambda obs, chosen: chosen >= BID_ACTION_BASE)
    assert bids > 0 and differ > 0
    with pytest.raises(ValueError, match="neural_v6 is one fixed model"):
        agents.make("neural_v6", checkpoint=str(DEFAULT_MODEL))


def test_the_policy_shipped_at_noon_on_2026_11_28_stays_loadable_as_neural_v5():
    """neural_v5 plays as neural_v6 everywhere but the card decisions taken while an opponent's nil
    is intact (the nil-defence head's gate), where they differ at times."""
    from agents.neural import PREVIOUS_MODELS
    from train.labelling.positions import nil_defence_position
    bot, shipped = agents.make("neural_v5"), agents.make("neural_v6")
    assert bot.checkpoint == PREVIOUS_MODELS["neural_v5"] != DEFAULT_MODEL
    gated, differ = _decisions_that_may_differ(bot, shipped, 40, lambda seed: [seed * 10 - 100, 200 - seed * 5],
                                               lambda obs, chosen: nil_defence_position(obs))
    assert gated > 0 and differ > 0
    with pytest.raises(ValueError, match="neural_v5 is one fixed model"):
        agents.make("neural_v5", checkpoint=str(DEFAULT_MODEL))


def test_neural_v5_is_the_real_game_policy_with_its_bids_tilted():
    """neural_v5 (shipped from noon to the evening of 2026-11-28) is the policy trained for whole
    games (blind nil learnt from the heuristic, then its card play by PPO with the bag price:
    neural_v3) with its bids tilted upwards by 1.4 per trick and blind nil shifted by 1.386 (its
    threshold from 0.5 to 0.2) inside the network (neural_v4), and the tilt 0.7 lower where its
    side leads with 350 or more (the network's score rule); both written by python -m train.bids.bid_tilt."""
    import hashlib
    from agents.neural import PREVIOUS_MODELS
    shipped = read_checkpoint(PREVIOUS_MODELS["neural_v5"])
    assert shipped["provenance"]["config_name"] == "neural_game_bags"
    assert shipped["provenance"]["init_from"] == "runs/neural_blind_nil/model.pt"
    assert shipped["arch"]["score_tilts"] == {"lead": [350, -0.7]}
    record = shipped["provenance"]["bid_tilt"]
    assert (record["tilt"], record["blind_nil"], record["score_tilts"]) == (0.0, 0.0, {"lead": [350, -0.7]})
    assert record["source_sha256"] == hashlib.sha256(PREVIOUS_MODELS["neural_v4"].read_bytes()).hexdigest()
    assert (record["earlier"]["tilt"], record["earlier"]["blind_nil"]) == (1.4, 1.386)
    assert record["earlier"]["source_sha256"] == hashlib.sha256(PREVIOUS_MODELS["neural_v3"].read_bytes()).hexdigest()
    v4 = read_checkpoint(PREVIOUS_MODELS["neural_v4"])
    assert all(torch.equal(shipped["policy"][k], v4["policy"][k]) for k in shipped["policy"])   # the rule alone
    assert "score_tilts" not in v4["arch"]
    for name in ("neural_v1", "neural_v2", "neural_v3"):
        previous = read_checkpoint(PREVIOUS_MODELS[name])
        assert any(not torch.equal(shipped["policy"][k], previous["policy"][k]) for k in shipped["policy"]), name
    assert read_checkpoint(PREVIOUS_MODEL)["provenance"]["trained_by"] == "spades-train"


def test_the_policy_shipped_on_the_morning_of_2026_11_28_stays_loadable_as_neural_v4():
    """neural_v4 is the tilted network without the score rule; it bids higher than neural_v5 (whose
    bids the shipped policy keeps) only where its side leads with 350 points or more."""
    from agents.neural import PREVIOUS_MODELS
    from spades_env import spades_v0
    from spades_env.observation import decode_observation
    bot, shipped = agents.make("neural_v4"), agents.make("neural_v5")
    assert bot.checkpoint == PREVIOUS_MODELS["neural_v4"] != DEFAULT_MODEL
    differ = 0
    env = spades_v0.env()
    for seed, scores in enumerate([[0, 0], [400, 120], [380, 390], [120, 420], [451, 300], [360, -40]] * 3):
        env.reset(seed=seed, options={"scores": scores})
        for _ in range(4):                                   # the four bids (no blind nil offered here)
            obs, *_ = env.last()
            view = decode_observation(obs["observation"])
            leads = view.scores[0] >= 350 and view.scores[0] > view.scores[1]
            a, b = bot.act(obs), shipped.act(obs)
            assert a >= b if leads else a == b
            differ += a != b
            env.step(b)
    assert differ > 0


def test_the_policy_shipped_on_2026_11_27_stays_loadable_as_neural_v3():
    """neural_v3 is the untilted network, shipped as neural until 2026-11-28."""
    from agents.neural import PREVIOUS_MODELS
    bot = agents.make("neural_v3")
    assert bot.checkpoint == PREVIOUS_MODELS["neural_v3"] != DEFAULT_MODEL
    assert "bid_tilt" not in read_checkpoint(bot.checkpoint)["provenance"]
    play_hand_asserting_legal(bot, seed=6)
    with pytest.raises(ValueError, match="neural_v3 is one fixed model"):
        agents.make("neural_v3", checkpoint=str(DEFAULT_MODEL))


def test_the_shipped_model_bids_blind_nil_far_behind():
    """What made it ship: far behind (here 0 to 300) it bids blind nil where the offer comes,
    which neural_v2 never does."""
    from spades_env import spades_v0
    from spades_env.game import BLIND_NIL_ACTION, LOOK_ACTION
    bids = {"neural": [], "neural_v2": []}
    for name in bids:
        bot = agents.make(name)
        for seed in range(20):
            env = spades_v0.raw_env(rules="standard", episode="hand")
            env.reset(seed=seed, options={"scores": [0, 300], "dealer": 3})   # seats 0 and 2 trail by 300
            obs, *_ = env.last()
            assert obs["action_mask"][BLIND_NIL_ACTION] and obs["action_mask"][LOOK_ACTION]
            bids[name].append(int(bot.act(obs, {})))
    assert bids["neural"].count(BLIND_NIL_ACTION) >= 15, bids
    assert bids["neural_v2"].count(BLIND_NIL_ACTION) == 0, bids
