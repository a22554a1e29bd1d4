"""Training for cooperation (coop/methods/cooperation.py): symmetry augmentation keeps masks, actions and
log-probabilities consistent; Other-Play's seats see relabelled games and answer legally in the
real one (and with the identity alone nothing changes); partner populations refuse held-out zoo
partners and play their seat."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from agents.networks import PolicyNet
from coop.partners.zoo import HeldOutError, partners
from spades_env import symmetries
from spades_env.vector import SpadesVectorEnv
from coop.methods.cooperation import (POPULATION, CooperationError, OtherPlay, PartnerPopulation, augment_batch,
                               resolve_population)

torch.set_num_threads(1)


def random_legal(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.where(mask, torch.rand(mask.shape, generator=generator), -1.0).argmax(1)


def played_batch(rows: int = 256, seed: int = 0) -> dict:
    """Observations, masks and legal actions of random play on the batched engine."""
    env = SpadesVectorEnv(64, rules="standard", seed=seed)
    obs, mask = env.reset()
    gen = torch.Generator().manual_seed(seed)
    keep = {"obs": [], "mask": [], "action": []}
    while sum(len(a) for a in keep["action"]) < rows:
        action = random_legal(mask, gen)
        keep["obs"].append(obs)
        keep["mask"].append(mask)
        keep["action"].append(action)
        obs, mask, *_ = env.step(action)
    return {k: torch.cat(v)[:rows] for k, v in keep.items()}


def test_augmented_rows_are_relabelled_decisions_with_the_policys_logp():
    torch.manual_seed(0)
    data = played_batch()
    policy = PolicyNet(data["obs"].shape[1], 32, 1, 16)
    data["logp"] = torch.zeros(len(data["action"]))
    data["advantage"] = torch.randn(len(data["action"]))
    maps = symmetries("standard").batched("cpu")
    out, which = augment_batch(data, maps, torch.Generator().manual_seed(1), lambda o, m: policy(o, m), chunk=100)
    assert len(set(which.tolist())) == 6                               # every relabelling drawn
    assert torch.equal(out["advantage"], data["advantage"])            # returns and advantages unchanged
    group = symmetries("standard")
    for r in range(0, len(which), 17):
        g = group[int(which[r])]
        assert out["action"][r] == g.map_action(int(data["action"][r]))
        assert torch.equal(out["obs"][r], torch.as_tensor(g.map_observation(data["obs"][r].numpy())))
        assert torch.equal(out["mask"][r], torch.as_tensor(g.map_mask(data["mask"][r].numpy())))
    assert bool(out["mask"].gather(1, out["action"][:, None]).all())   # the mapped action is legal in the mapped mask
    expected = F.log_softmax(policy(out["obs"], out["mask"]), 1).gather(1, out["action"][:, None])[:, 0]
    assert torch.allclose(out["logp"], expected, atol=1e-6)            # pi_old under the relabelled decision
    assert torch.equal(data["logp"], torch.zeros(len(data["action"])))  # the input is left alone


def test_an_equivariant_policy_keeps_its_log_probabilities():
    """A policy that only reads bids and mask cells of bids is equivariant: its logp of the
    relabelled decision equals that of the original (the mapping of actions and masks agrees)."""
    data = played_batch(128, seed=3)
    uniform = lambda obs, mask: torch.where(mask, 0.0, -1e9)           # noqa: E731
    maps = symmetries("standard").batched("cpu")
    out, _ = augment_batch(data, maps, torch.Generator().manual_seed(2), uniform)
    before = F.log_softmax(uniform(data["obs"], data["mask"]), 1).gather(1, data["action"][:, None])[:, 0]
    assert torch.allclose(out["logp"], before)


def play(env: SpadesVectorEnv, steps: int, other_play, policy, seed: int = 0) -> list[tuple]:
    """Steps of the engine with every seat played by ``policy`` seen through ``other_play`` (or
    not at all with None); returns what the seats saw and chose, and the rewards."""
    obs, mask = env.reset()
    trace = []
    for _ in range(steps):
        seat = env.to_act
        seen_obs, seen_mask = obs, mask
        if other_play is not None:
            seen_obs, seen_mask, _ = other_play.view(seat, obs, mask)
        chosen = policy(seen_obs, seen_mask)
        actions = chosen if other_play is None else other_play.real_actions(seat, chosen)
        assert bool(mask.gather(1, actions[:, None]).all()), "an action illegal in the real game"
        obs, mask, rewards, done, _ = env.step(actions)
        if other_play is not None:
            other_play.redraw(done)
        trace.append((seen_obs.clone(), seen_mask.clone(), chosen.clone(), rewards.clone()))
    return trace


def first_legal(obs, mask):
    return mask.to(torch.int8).argmax(1)


def test_other_play_with_the_identity_alone_is_plain_play():
    plain = play(SpadesVectorEnv(16, seed=5), 120, None, first_legal)
    same = play(SpadesVectorEnv(16, seed=5), 120, OtherPlay("standard", "partner", 16, torch.device("cpu"), 9, [0]),
                first_legal)
    for a, b in zip(plain, same):
        for x, y in zip(a, b):
            assert torch.equal(x, y)


@pytest.mark.parametrize("mode", ["partner", "learner"])
def test_other_play_seats_see_relabelled_games_and_play_legally(mode):
    tables = 32
    other = OtherPlay("standard", mode, tables, torch.device("cpu"), seed=4)
    env = SpadesVectorEnv(tables, seed=2)
    group = symmetries("standard")
    seats = {"partner": (2, 3), "learner": (0, 1)}[mode]
    obs, mask = env.reset()
    seen_any = set()
    for _ in range(200):          # more than a hand: tables redraw at the end of their episode
        seat = env.to_act
        seen_obs, seen_mask, _ = other.view(seat, obs, mask)
        for t in range(0, tables, 5):
            g = group[int(other.which[t])] if int(seat[t]) in seats else group.identity
            assert torch.equal(seen_obs[t], torch.as_tensor(g.map_observation(obs[t].numpy())))
            assert torch.equal(seen_mask[t], torch.as_tensor(g.map_mask(mask[t].numpy())))
        chosen = first_legal(seen_obs, seen_mask)         # legal in the seen game
        actions = other.real_actions(seat, chosen)
        assert bool(mask.gather(1, actions[:, None]).all())
        seen_any.update(other.which.tolist())
        obs, mask, _, done, _ = env.step(actions)
        other.redraw(done)
    assert seen_any == set(range(6))


def test_other_play_on_a_signals_variant_relabels_the_messages_and_the_suits():
    """Under ``signals`` the group holds the message permutations, composed with the suit
    relabellings, so the partner seat plays episodes whose messages mean something else."""
    tables, rules = 64, "short_signals"
    other = OtherPlay(rules, "partner", tables, torch.device("cpu"), seed=3)
    env = SpadesVectorEnv(tables, rules=rules, seed=1)
    group = symmetries(rules)
    messages = range(68, 72)
    assert len(group) == 6 * 24                   # side suits x permutations of four messages
    obs, mask = env.reset()
    gen = torch.Generator().manual_seed(0)
    drawn, mapped_messages = set(), 0
    for _ in range(160):                          # five hands of 32 steps: tables redraw at each end
        seat = env.to_act
        seen_obs, seen_mask, _ = other.view(seat, obs, mask)
        chosen = random_legal(seen_mask, gen)     # legal in the seen game
        actions = other.real_actions(seat, chosen)
        assert bool(mask.gather(1, actions[:, None]).all()), "an action illegal in the real game"
        for t in range(0, tables, 3):
            g = group[int(other.which[t])] if int(seat[t]) in (2, 3) else group.identity
            assert torch.equal(seen_obs[t], torch.as_tensor(g.map_observation(obs[t].numpy())))
            assert torch.equal(seen_mask[t], torch.as_tensor(g.map_mask(mask[t].numpy())))
            if int(chosen[t]) in messages:        # the message sent in the seen game, said in the real one
                assert g.map_action(int(actions[t])) == int(chosen[t])
                mapped_messages += int(actions[t]) != int(chosen[t])
        drawn.update(other.which.tolist())
        obs, mask, _, done, _ = env.step(actions)
        other.redraw(done)

    def moves_messages(g):
        return any(group[g].map_action(m) != m for m in messages)

    def moves_suits(g):
        return any(group[g].map_action(c) != c for c in range(52))

    assert mapped_messages > 0
    assert any(moves_messages(g) and not moves_suits(g) for g in drawn)
    assert any(moves_suits(g) and not moves_messages(g) for g in drawn)
    assert any(moves_suits(g) and moves_messages(g) for g in drawn)
    assert len(drawn) > 24 + 6                    # drawn from the whole group of 144, not a part of it


def test_other_play_resumes_its_stream():
    a = OtherPlay("standard", "partner", 8, torch.device("cpu"), seed=1)
    state = a.state_dict()
    everyone = torch.ones(8, dtype=torch.bool)
    a.redraw(everyone)
    b = OtherPlay("standard", "partner", 8, torch.device("cpu"), seed=99)
    b.load_state_dict(state)
    b.redraw(everyone)
    assert torch.equal(a.which, b.which)
    with pytest.raises(CooperationError, match="other_play='both'"):
        OtherPlay("standard", "both", 8, torch.device("cpu"), seed=1)


def test_populations_refuse_held_out_and_validation_partners():
    with pytest.raises(CooperationError, match="is held out"):
        resolve_population(["low-asks"], 0, torch.device("cpu"))           # held-out
    with pytest.raises(HeldOutError):                                      # the zoo's own guard, underneath
        partners("held-out")
    with pytest.raises(CooperationError, match="validation split"):
        resolve_population(["never-nil"], 0, torch.device("cpu"))
    with pytest.raises(CooperationError, match="neither a zoo partner"):
        resolve_population(["nobody"], 0, torch.device("cpu"))
    with pytest.raises(CooperationError, match="no checkpoint file matches"):
        resolve_population(["/nonexistent/run_*/update_*.pt"], 0, torch.device("cpu"))


def test_population_members_play_the_learners_partner_seat(tmp_path):
    from agents.neural import save_model
    policy = PolicyNet(SpadesVectorEnv(1).obs_size, 16, 1, 8)
    for k in range(2):
        save_model(policy, tmp_path / f"m{k}.pt", "standard", {})
    members = resolve_population(["heuristic", "aggressive", str(tmp_path / "m*.pt")], 0, torch.device("cpu"))
    assert [m.source for m in members] == ["zoo", "zoo", "checkpoint", "checkpoint"]
    tables = 64
    population = PartnerPopulation(members, 0.5, tables, torch.Generator().manual_seed(0), torch.device("cpu"))
    controller = torch.zeros(tables, 4, dtype=torch.int64)
    side = torch.randint(0, 2, (tables,), generator=torch.Generator().manual_seed(3))
    population.assign(torch.ones(tables, dtype=torch.bool), controller, side)
    has = population.member >= 0
    assert 10 < int(has.sum()) < 54
    rows = torch.nonzero(has)[:, 0]
    assert bool((controller[rows, side[rows] + 2] == POPULATION).all())
    assert int((controller == POPULATION).sum()) == int(has.sum())        # only the partner's seat
    env = SpadesVectorEnv(tables, seed=0)
    obs, mask = env.reset()
    actions = torch.full((tables,), -1, dtype=torch.int64)
    population.actions(obs, mask, has, actions)
    assert bool(mask[has].gather(1, actions[has][:, None]).all()) and bool((actions[~has] == -1).all())
    state = population.state_dict()
    other = PartnerPopulation(members[:2], 0.5, tables, torch.Generator(), torch.device("cpu"))
    with pytest.raises(CooperationError, match="changed since the checkpoint"):
        other.load_state_dict(state)


def test_the_grouped_augmentation_equals_the_batched_per_row_maps():
    data = played_batch(300, seed=7)
    data["logp"] = torch.zeros(300)
    maps = symmetries("standard").batched("cpu")
    out, which = augment_batch(data, maps, torch.Generator().manual_seed(5), lambda o, m: torch.where(m, 0.0, -1e9))
    assert torch.equal(out["obs"], maps.map_observations(data["obs"], which))
    assert torch.equal(out["mask"], maps.map_masks(data["mask"], which))
