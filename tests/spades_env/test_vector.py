"""The batched engine agrees exactly with the AEC env, and refuses what it cannot run."""

import pytest
import torch

from spades_env.vector import SpadesVectorEnv, VectorEnvError

from helpers_vector import TEST_DEVICE, compare_with_vector, play_aec_games

# (env kwargs, games): thousands of random games in total across presets, variants and rewards.
DIFFERENTIAL_CASES = [
    ({"rules": "standard"}, 500),
    ({"rules": "standard", "reward": "team_diff", "shaping": 1.0}, 250),
    ({"rules": "standard", "reward": "win", "episode": "game"}, 150),
    ({"rules": "standard", "win_bonus": 2.0, "shaping": 0.5, "max_hands": 4}, 150),
    ({"rules": "standard", "episode": "hand"}, 300),
    ({"rules": "standard", "reward": "team_diff", "bag_cost": "game"}, 150),
    ({"rules": "tournament", "bag_limit": 5, "bag_penalty": 50, "bag_cost": 4.5}, 100),
    ({"rules": "standard", "blind_nil_pass": 3, "blind_nil_min_deficit": 0}, 150),
    ({"rules": "standard", "two_of_clubs_leads": True, "no_spades_first_trick": True}, 150),
    ({"rules": "standard", "bids_may_total_13": False, "spades_lead": "any", "bags": False}, 150),
    ({"rules": "standard", "nil_tricks_count_for_partner": True, "mercy_score": None, "max_hands": 5}, 100),
    ({"rules": "basic"}, 300),
    ({"rules": "tournament", "bag_limit": 5, "bag_penalty": 50}, 300),
    ({"rules": "openspiel"}, 400),
    ({"rules": "openspiel", "reward": "team_diff", "max_team_bid": 9}, 150),
    # issue 74: the short deck (6 ranks, 6 tricks a hand, bids 0..6) and the free signal (actions 68..)
    ({"rules": "short"}, 300),
    ({"rules": "short_signals", "reward": "team_diff", "shaping": 1.0}, 300),
    ({"rules": "standard", "signals": 3}, 150),
    ({"rules": "short_signals", "blind_nil": True, "blind_nil_min_deficit": 0, "bids_may_total_13": False,
      "max_team_bid": 5, "episode": "hand"}, 150),
]


@pytest.mark.parametrize("kwargs,count", DIFFERENTIAL_CASES, ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_batched_engine_matches_aec_env(kwargs, count):
    done = 0
    for chunk in range(0, count, 150):   # chunks keep the recorded observations small
        games = play_aec_games(min(150, count - chunk), seed=chunk + 17, **kwargs)
        done += compare_with_vector(games, **kwargs)["decisions"]
    assert done > count * 30


def test_state_tensor_and_every_seats_view_match_aec_env():
    for rules in ("standard", "openspiel", "short_signals"):
        games = play_aec_games(25, seed=3, with_state=True, rules=rules)
        compare_with_vector(games, rules=rules)


def test_seeded_deals_are_reproducible_and_differ_between_seeds():
    def run(seed):
        env = SpadesVectorEnv(64, seed=seed)
        env.reset()
        out = []
        gen = torch.Generator().manual_seed(1)
        for _ in range(300):
            mask = env.legal_mask()
            actions = torch.multinomial(mask.float(), 1, generator=gen)[:, 0]
            obs, mask, rewards, done, info = env.step(actions)
            out.append((obs.sum().item(), rewards.sum().item(), int(done.sum())))
        return out, env.state.deal.clone()
    a, deals_a = run(5)
    b, deals_b = run(5)
    c, deals_c = run(6)
    assert a == b and torch.equal(deals_a, deals_b)
    assert not torch.equal(deals_a, deals_c)


def test_deals_are_complete_and_disjoint():
    env = SpadesVectorEnv(256, seed=0)
    env.reset()
    deal = env.state.hands
    assert torch.all(deal[:, 0] | deal[:, 1] | deal[:, 2] | deal[:, 3] == (1 << 52) - 1)
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    assert all(torch.all(deal[:, i] & deal[:, j] == 0) for i, j in pairs)
    counts = [[bin(int(h)).count("1") for h in row] for row in deal]
    assert all(c == [13, 13, 13, 13] for c in counts)


def test_finished_tables_restart_and_report_final_values():
    env = SpadesVectorEnv(32, seed=1, episode="hand", reward_scale=1.0)
    env.reset()
    totals = torch.zeros(32, 4, dtype=torch.float64)
    finished_once = torch.zeros(32, dtype=torch.bool)
    gen = torch.Generator().manual_seed(0)
    for _ in range(60):
        mask = env.legal_mask()
        obs, mask, rewards, done, info = env.step(torch.multinomial(mask.float(), 1, generator=gen)[:, 0])
        totals += rewards
        if done.any():
            # A finished hand: partners got the same reward, the table already shows a new deal.
            assert torch.equal(rewards[done][:, 0], rewards[done][:, 2])
            assert torch.all(env.state.tricks_played[done] == 0)
            finished_once |= done
    assert finished_once.all()


def test_a_device_it_cannot_use_is_refused_clearly():
    with pytest.raises(VectorEnvError, match=r"device='gpu': not a torch device"):
        SpadesVectorEnv(4, device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(VectorEnvError, match=r"device='cuda': no CUDA GPU is usable here.*use device='cpu'"):
            SpadesVectorEnv(4, device="cuda")


def test_refuses_what_it_cannot_run():
    with pytest.raises(VectorEnvError, match="partnership"):
        SpadesVectorEnv(4, rules="cutthroat")
    with pytest.raises(VectorEnvError, match="num_envs"):
        SpadesVectorEnv(0)
    env = SpadesVectorEnv(2, rules="openspiel")
    with pytest.raises(VectorEnvError, match="dealer"):
        env.reset(dealer=1)
    env = SpadesVectorEnv(2)
    with pytest.raises(VectorEnvError, match="before reset"):
        env.step(torch.zeros(2, dtype=torch.int64))
    env.reset(seed=0)
    with pytest.raises(VectorEnvError, match="illegal actions at tables .* phase bidding"):
        env.step(torch.tensor([0, 0]))          # nobody may play a card during the bidding
    with pytest.raises(VectorEnvError, match="one per table"):
        env.step(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(VectorEnvError, match="table 1"):
        env.reset(deals=[[list(range(13)), list(range(13, 26)), list(range(26, 39)), list(range(39, 52))],
                         [list(range(13)), list(range(13)), list(range(26, 39)), list(range(39, 52))]])
    with pytest.raises(VectorEnvError, match="bags"):
        env.reset(bags=[3, 12])
    with pytest.raises(VectorEnvError, match="scores"):
        env.reset(scores=[1.5, 2.0])


def test_a_failed_reset_changes_nothing():
    env = SpadesVectorEnv(3, seed=0)
    env.reset(scores=[0, 250])
    before = env.state.clone()
    for bad in ({"dealer": [0, 1]}, {"bags": [0, 99]}, {"scores": [[1, 2]]}, {"deals": [[[0]]] * 3}):
        with pytest.raises(VectorEnvError):
            env.reset(seed=9, **bad)
    assert all(torch.equal(getattr(before, f), getattr(env.state, f)) for f in before.__dataclass_fields__)
    twin = SpadesVectorEnv(3, seed=0)          # never saw the failed resets
    twin.reset(scores=[0, 250])
    env.reset()
    twin.reset()                               # both continue the same seeded stream
    assert torch.equal(env.state.deal, twin.state.deal) and torch.equal(env.state.dealer, twin.state.dealer)


def test_draw_deals_are_whole_reproducible_deals_from_the_seeded_stream():
    draws = [SpadesVectorEnv(2, seed=5).draw_deals(200) for _ in range(2)]
    assert torch.equal(draws[0], draws[1]) and draws[0].shape == (200, 5)
    hands, dealers = draws[0][:, :4], draws[0][:, 4]
    assert bool(((dealers >= 0) & (dealers <= 3)).all())
    counts = ((hands[..., None] >> torch.arange(52)) & 1).sum(2)
    assert bool((counts == 13).all())                                   # 13 cards per hand
    assert bool(((hands[:, 0] | hands[:, 1] | hands[:, 2] | hands[:, 3]) == (1 << 52) - 1).all())
    assert not torch.equal(draws[0], SpadesVectorEnv(2, seed=6).draw_deals(200))
    env = SpadesVectorEnv(3, seed=5)                                     # a drawn deal can be dealt back
    deal = env.draw_deals(1)
    env.reset(deals=deal[:, :4].expand(3, 4), dealer=int(deal[0, 4]))
    assert bool((env.state.hands == deal[:, :4]).all())


def test_explicit_deals_in_card_strings():
    deal = [["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "5S", "4S", "3S", "2S"],
            [f"{r}H" for r in "AKQJT98765432"], [f"{r}D" for r in "AKQJT98765432"],
            [f"{r}C" for r in "AKQJT98765432"]]
    env = SpadesVectorEnv(3, seed=0)
    obs, mask = env.reset(deals=[deal] * 3, dealer=3)
    assert torch.all(env.state.hands[:, 0] == ((1 << 13) - 1) << 39)
    assert torch.all(env.to_act == 0)                # the dealer's left bids first
    seats = env.to_act
    env.step(mask.to(torch.int64).argmax(1))
    assert torch.all(seats == 0) and torch.all(env.to_act == 1)   # a copy, and the turn moved on
    with pytest.raises(VectorEnvError, match="before reset"):
        SpadesVectorEnv(1).to_act


def test_compiled_step_matches_eager():
    """compile=True runs the same step under torch.compile: identical results, step for step."""
    eager = SpadesVectorEnv(16, seed=3, reward="team_diff", shaping=1.0, device=TEST_DEVICE)
    compiled = SpadesVectorEnv(16, seed=3, reward="team_diff", shaping=1.0, compile=True, device=TEST_DEVICE)
    outs = [env.reset(scores=[0, 150]) for env in (eager, compiled)]
    gen = torch.Generator().manual_seed(0)
    for _ in range(120):
        assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
        actions = torch.where(outs[0][1], torch.rand(16, 68, generator=gen).to(TEST_DEVICE), -1.0).argmax(1)
        outs = [env.step(actions) for env in (eager, compiled)]
        assert torch.equal(outs[0][2], outs[1][2]) and torch.equal(outs[0][3], outs[1][3])
        assert torch.equal(outs[0][4]["final_scores"], outs[1][4]["final_scores"])


def test_state_dict_continues_exactly():
    """A snapshot restored into a fresh env continues step for step (checkpointed training)."""
    def play(env, steps, gen):
        seen = []
        for _ in range(steps):
            actions = torch.multinomial(env.legal_mask().float(), 1, generator=gen)[:, 0]
            obs, mask, rewards, done, _ = env.step(actions)
            seen.append((obs.clone(), rewards.clone(), done.clone()))
        return seen

    env = SpadesVectorEnv(32, seed=1)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    play(env, 90, gen)
    snapshot, gen_state = env.state_dict(), gen.get_state()
    expected = play(env, 200, gen)
    other = SpadesVectorEnv(32, seed=7)
    other.reset()
    other.load_state_dict(snapshot)
    gen.set_state(gen_state)
    for (o1, r1, d1), (o2, r2, d2) in zip(expected, play(other, 200, gen)):
        assert torch.equal(o1, o2) and torch.equal(r1, r2) and torch.equal(d1, d2)
    with pytest.raises(VectorEnvError, match="snapshot of 32 tables"):
        SpadesVectorEnv(16, seed=0).load_state_dict(snapshot)


FUSED_CASES = [
    ({"episode": "hand", "reward": "team_diff", "shaping": 1.0}, torch.bfloat16),
    ({"bids_may_total_13": False, "blind_nil_pass": 3, "blind_nil_min_deficit": 0, "max_hands": 2,
      "win_bonus": 1.0, "max_team_bid": 11}, torch.float32),
    ({"rules": "short_signals", "blind_nil": True, "blind_nil_min_deficit": 0, "max_hands": 3, "shaping": 1.0},
     torch.float32),
]


@pytest.mark.parametrize("kwargs,obs_dtype", FUSED_CASES,
                         ids=["hand_team_diff_bfloat16", "variants_float32", "short_signals_float32"])
def test_compiled_fused_path_matches_eager_over_many_games(kwargs, obs_dtype):
    """compile=True builds the observation and the mask with its own (bit-packed) encoders: over
    hundreds of random games (nil and blind nil often), every observation (float32, or bfloat16:
    the eager float32 one converted), mask, reward, done flag, final score, winner and state
    field equals the eager engine's."""
    B = 64
    eager = SpadesVectorEnv(B, seed=11, device=TEST_DEVICE, **kwargs)
    compiled = SpadesVectorEnv(B, seed=11, compile=True, obs_dtype=obs_dtype, device=TEST_DEVICE, **kwargs)
    outs = [env.reset(scores=[0, 150]) for env in (eager, compiled)]
    gen = torch.Generator().manual_seed(2)
    episodes = 0
    for t in range(420):
        assert outs[1][0].dtype == obs_dtype and torch.equal(outs[0][0].to(obs_dtype), outs[1][0]), f"step {t}: obs"
        assert outs[1][1].dtype == torch.bool and torch.equal(outs[0][1], outs[1][1]), f"step {t}: masks"
        for field in eager.state.__dataclass_fields__:
            assert torch.equal(getattr(eager.state, field), getattr(compiled.state, field)), f"step {t}: {field}"
        noise = torch.rand(B, eager.num_actions, generator=gen)
        noise[:, 52] += 0.3                    # nil now and then, blind nil often when offered
        noise[:, 66] += 0.6
        noise = noise.to(TEST_DEVICE)
        actions = torch.where(outs[0][1], noise, -1.0).argmax(1)
        outs = [env.step(actions) for env in (eager, compiled)]
        assert torch.equal(outs[0][2], outs[1][2]) and torch.equal(outs[0][3], outs[1][3]), f"step {t}: rewards/done"
        for key in ("final_scores", "winner"):
            assert torch.equal(outs[0][4][key], outs[1][4][key]), f"step {t}: {key}"
        episodes += int(outs[0][3].sum())
    assert torch.equal(eager.state_tensor().to(obs_dtype), compiled.state_tensor())
    assert episodes >= 150


def test_obs_dtype_is_the_float32_observation_converted():
    """obs_dtype=bfloat16/float16: every observation is exactly the float32 one converted; 0/1
    cells stay exact, only the fractional cells (sides, game) are rounded."""
    dtypes = (torch.float32, "bfloat16", torch.float16)
    envs = [SpadesVectorEnv(32, seed=4, max_hands=3, obs_dtype=dt) for dt in dtypes]
    outs = [env.reset(scores=[40, 170]) for env in envs]
    gen = torch.Generator().manual_seed(5)
    rounded = 0
    for t in range(80):
        base = outs[0][0]
        for env, out in zip(envs[1:], outs[1:]):
            assert out[0].dtype == env.obs_dtype and torch.equal(out[0], base.to(env.obs_dtype)), t
            assert torch.equal(out[1], outs[0][1])
            assert torch.equal(env.observe_seat(2), envs[0].observe_seat(2).to(env.obs_dtype))
            assert torch.equal(env.state_tensor(), envs[0].state_tensor().to(env.obs_dtype))
            binary = (base == 0) | (base == 1)
            assert torch.equal(out[0][binary].float(), base[binary])
        rounded += int((outs[1][0].float() != base).sum())
        actions = torch.where(outs[0][1], torch.rand(32, 68, generator=gen), -1.0).argmax(1)
        outs = [env.step(actions) for env in envs]
    assert rounded > 0                          # bfloat16 did round some score fractions
    with pytest.raises(VectorEnvError, match="obs_dtype"):
        SpadesVectorEnv(2, obs_dtype=torch.int8)


def test_snapshot_and_seat_view_errors_are_clear():
    env = SpadesVectorEnv(4, seed=0)
    with pytest.raises(VectorEnvError, match="before reset"):
        env.state_dict()
    with pytest.raises(VectorEnvError, match="before reset"):
        env.observe_seat(0)
    env.reset()
    with pytest.raises(VectorEnvError, match="expected seats 0..3"):
        env.observe_seat(4)
    with pytest.raises(VectorEnvError, match="expected a SpadesVectorEnv.state_dict"):
        env.load_state_dict({"state": {}})


def test_set_start_applies_to_the_next_episode_of_the_chosen_tables():
    env = SpadesVectorEnv(4, rules="standard", reward="team_diff", episode="hand", seed=0)
    _, mask = env.reset()
    tables = torch.tensor([True, False, True, False])
    env.set_start(scores=[[250, -40]] * 4, bags=[[3, 9]] * 4, tables=tables)
    assert env.state.scores.abs().sum() == 0                      # hands in progress keep 0-0
    restarted = torch.zeros(4, dtype=torch.bool)
    generator = torch.Generator().manual_seed(0)
    while not bool(restarted.all()):
        actions = torch.multinomial(mask.float(), 1, generator=generator)[:, 0]
        _, mask, _, done, _ = env.step(actions)
        for t in torch.nonzero(done & ~restarted)[:, 0].tolist():
            expected = [250, -40] if tables[t] else [0, 0]
            assert env.state.scores[t].tolist() == expected
            assert env.state.bags[t].tolist() == ([3, 9] if tables[t] else [0, 0])
        restarted |= done
    with pytest.raises(VectorEnvError, match="tables must be a bool mask of shape"):
        env.set_start(scores=[0, 0], tables=torch.tensor([1, 0, 1, 0]))
    with pytest.raises(VectorEnvError, match="expected 0..9 per partnership"):
        env.set_start(bags=[0, 10])


def test_fractions_are_rounded_like_the_aec_env_even_through_a_reciprocal():
    """The observation's fractions (tricks / 13, bags / limit, scores / target, hands / max) equal
    Python's division rounded to float32, also where a device divides through the reciprocal
    (CUDA does for a constant divisor; float32 that way is one ulp off for 7/13): emulated here."""
    from spades_env.vector_encoding import _ratio

    numerators = torch.arange(-2000, 2001)
    for denominator in (13, 3, 7, 10, 100, 250, 300, 500, 1000):
        expected = torch.tensor([n / denominator for n in numerators.tolist()], dtype=torch.float32)
        assert torch.equal(_ratio(numerators, denominator), expected), denominator
        through_reciprocal = (numerators.to(torch.float64) * (1.0 / denominator)).to(torch.float32)
        assert torch.equal(through_reciprocal, expected), denominator
    assert not torch.equal((numerators.float() * (1.0 / 13)), numerators / 13)   # why float64 is needed
    # the bag penalties' floor((bags + 0.5) / limit) is bags // limit, through the reciprocal too
    bags = torch.arange(0, 60, dtype=torch.float64)
    for limit in (3, 5, 7, 10, 11):
        through_reciprocal = ((bags + 0.5) * (1.0 / limit)).floor()
        assert torch.equal(through_reciprocal, bags // limit), limit


def test_a_compiled_env_raises_the_recompile_limit():
    """Each batch size or rule set is one more compilation of the shared step function: past
    torch's default limit of 8 the rest would silently run eagerly (10x slower)."""
    from spades_env.vector_device import RECOMPILE_LIMIT, recompile_limit_setting

    dynamo_config, name = recompile_limit_setting()
    before = getattr(dynamo_config, name)
    try:
        setattr(dynamo_config, name, 8)
        SpadesVectorEnv(4)
        assert getattr(dynamo_config, name) == 8                 # eager envs leave it alone
        SpadesVectorEnv(4, compile=True)
        assert getattr(dynamo_config, name) == RECOMPILE_LIMIT
    finally:
        setattr(dynamo_config, name, max(before, RECOMPILE_LIMIT))


def test_large_draws_come_in_chunks_of_whole_deals(monkeypatch):
    """Past DEAL_CHUNK deals, draw_deals shuffles chunk by chunk (bounded scratch memory at huge
    batches): still whole, reproducible deals, the first chunk's hands shuffled as before."""
    import spades_env.vector as vector

    small = SpadesVectorEnv(2, seed=9).draw_deals(20)
    monkeypatch.setattr(vector, "DEAL_CHUNK", 7)
    chunked = [SpadesVectorEnv(2, seed=9).draw_deals(20) for _ in range(2)]
    assert torch.equal(chunked[0], chunked[1]) and chunked[0].shape == (20, 5)
    assert torch.equal(chunked[0][:7, :4], small[:7, :4])            # the first chunk's hands: the same shuffle
    hands = chunked[0][:, :4]
    assert torch.all(hands.sum(1) == (1 << 52) - 1)                  # four disjoint hands, the whole deck
    for seat in range(4):
        assert all(bin(int(h)).count("1") == 13 for h in hands[:, seat])
    assert torch.all((chunked[0][:, 4] >= 0) & (chunked[0][:, 4] < 4))
