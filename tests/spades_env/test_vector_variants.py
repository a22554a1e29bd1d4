"""The batched engine's two rule options of issue 74, the short deck (``deck_ranks``) and the free
signal (``signals``), beyond the differential tests against the AEC env (test_vector.py,
test_native.py): the deck the tables are dealt, given deals, the signal phase, the action space,
snapshots; and a golden stream that pins the standard game, byte for byte, to what it was before
either option existed."""

from __future__ import annotations

import hashlib
import random
import shutil

import pytest
import torch

from spades_env.game import PHASE_BIDDING, PHASE_SIGNAL, SIGNAL_ACTION_BASE
from spades_env.vector import SpadesVectorEnv, VectorEnvError
from spades_env.vector_seats import next_uniform, pick_kth_legal

BACKENDS = ["torch"] + (["native"] if shutil.which("cc") or shutil.which("gcc") else [])
SHORT_DECK = sum(1 << (13 * suit + rank) for suit in range(4) for rank in range(7, 13))     # 9..A of each suit


def _stream_digest(backend: str, tables: int = 24, steps: int = 300, hands: int = 8, **kwargs) -> str:
    """SHA-256 of every observation, mask, state, seat view, reward, end, final score and winner of
    ``steps`` steps over given deals (Python's shuffle) and splitmix64 choices: nothing in it
    depends on torch's random stream."""
    rng = random.Random(7)
    deals = []
    for _ in range(tables):
        per_table = []
        for _ in range(hands):
            cards = list(range(52))
            rng.shuffle(cards)
            per_table.append([sorted(cards[13 * s:13 * s + 13]) for s in range(4)])
        deals.append(per_table)
    env = SpadesVectorEnv(tables, seed=0, backend=backend, **kwargs)
    obs, mask = env.reset(deals=deals, dealer=[b % 4 for b in range(tables)], scores=[[0, 150]] * tables)
    state = torch.arange(tables, dtype=torch.int64) * 7919 + 11
    digest = hashlib.sha256()
    for t in range(steps):
        for x in (obs, mask, env.state_tensor(), env.observe_seat(t % 4)):
            digest.update(x.numpy().tobytes())
        obs, mask, rewards, done, info = env.step(pick_kth_legal(mask, next_uniform(state)))
        for x in (rewards, done, info["final_scores"], info["winner"]):
            digest.update(x.numpy().tobytes())
    return digest.hexdigest()


# Computed with the engine as it was before issue 74 (commit 5b69e18), both backends alike.
GOLDEN = [
    ({}, "e12d00f377a6669411e50abd9f27d83241d8ae85f87fa6f0c695605cc17a026d"),
    ({"bids_may_total_13": False, "blind_nil_pass": 3, "blind_nil_min_deficit": 0, "max_team_bid": 11,
      "shaping": 1.0, "reward": "team_diff", "max_hands": 3},
     "a03216bdd251eaf0b7c2d6df7156716fc91345900c08115ea956bcd7eadddc03"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kwargs,expected", GOLDEN, ids=["standard", "variants"])
def test_signals_0_and_13_ranks_stream_byte_for_byte_as_before(backend, kwargs, expected):
    assert _stream_digest(backend, **kwargs) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_short_deck_is_dealt_whole(backend):
    env = SpadesVectorEnv(64, rules="short", seed=3, backend=backend)
    deals = env.draw_deals(500)
    hands = deals[:, :4]
    assert bool((hands.sum(1) == SHORT_DECK).all())                      # disjoint, the 24 cards
    counts = ((hands[..., None] >> torch.arange(52)) & 1).sum(2)
    assert bool((counts == 6).all())
    assert torch.equal(deals, SpadesVectorEnv(64, rules="short", seed=3).draw_deals(500))   # both backends alike
    obs, mask = env.reset()
    assert obs.shape == (64, env.layout.obs_size) and mask.shape == (64, 68)
    assert bool((env.state.hands.sum(1) == SHORT_DECK).all())
    bids = mask[:, 52:66]
    assert bool(bids[:, :7].any(1).all()) and not bool(bids[:, 7:].any())     # bids 0..6, never above


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_given_short_deal_is_dealt_and_a_card_outside_the_deck_refused_by_name(backend):
    deal = [["AS", "KS", "QS", "JS", "TS", "9S"], ["AH", "KH", "QH", "JH", "TH", "9H"],
            ["AD", "KD", "QD", "JD", "TD", "9D"], ["AC", "KC", "QC", "JC", "TC", "9C"]]
    env = SpadesVectorEnv(2, rules="short", seed=0, backend=backend)
    obs, _ = env.reset(deals=[deal, deal], dealer=3)
    assert env.state.hands[:, 0].tolist() == [0b111111 << (39 + 7)] * 2
    hand = env.layout.obs_blocks["hand"]
    assert obs[0, hand.slice].nonzero()[:, 0].tolist() == list(range(46, 52))       # seat 0 to act, its spades
    outside = [row[:] for row in deal]
    outside[1][5] = "8H"
    with pytest.raises(VectorEnvError, match=r"deals: table 1: .*8H.*not in the short deck"):
        env.reset(deals=[deal, outside])
    boards = torch.tensor([[0b111111 << (13 * s + 7) for s in (3, 2, 1, 0)]] * 2)
    swapped = boards.clone()
    swapped[1, 1] ^= (1 << (26 + 7)) | (1 << (26 + 6))                   # 9H out, 8H in
    with pytest.raises(VectorEnvError, match=r"card 8H is not in the deck: .*24 cards of the short deck"):
        env.reset(deals=swapped)
    with pytest.raises(VectorEnvError, match="every hand must hold 6 cards"):
        lopsided = [boards[0, 0] | boards[0, 1], 0, *boards[0, 2:]]           # 12 cards and none
        SpadesVectorEnv(2, rules="short").reset(deals=torch.tensor([lopsided] * 2))
    env.reset(deals=boards)                                             # a failed reset left nothing behind
    assert torch.equal(env.state.deal, boards)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_signal_phase_comes_first_and_every_seat_sends_one_message(backend):
    B = 8
    env = SpadesVectorEnv(B, rules="short_signals", seed=2, backend=backend)
    assert env.num_actions == 72 and env.layout.obs_size == 731
    obs, mask = env.reset(dealer=[b % 4 for b in range(B)])
    blocks = env.layout.obs_blocks
    for turn in range(4):
        assert bool((env.state.phase == PHASE_SIGNAL).all())
        assert torch.equal(env.to_act, (torch.arange(B) % 4 + 1 + turn) % 4)     # in bidding order
        assert mask.shape == (B, 72) and bool(mask[:, 68:].all()) and not bool(mask[:, :68].any())
        assert bool((obs[:, blocks["signal_phase"].slice] == 1).all())
        assert not bool(obs[:, blocks["phase"].slice].any())                      # the one-hot is all zero
        obs, mask, rewards, done, _ = env.step(torch.full((B,), SIGNAL_ACTION_BASE + turn))
        assert not bool(rewards.any()) and not bool(done.any())                   # messages score nothing
    assert bool((env.state.phase == PHASE_BIDDING).all()) and torch.equal(env.to_act, (torch.arange(B) + 1) % 4)
    assert not bool(obs[:, blocks["signal_phase"].slice].any())
    messages = obs[:, blocks["messages"].slice].view(B, 4, 4)                     # relative seat, message
    # the first bidder (relative 0) sent message 0, the next 1, its partner 2, the dealer (relative 3) 3
    assert torch.equal(messages.argmax(2), torch.tensor([[0, 1, 2, 3]] * B)) and bool((messages.sum(2) == 1).all())
    with pytest.raises(VectorEnvError, match="illegal actions at tables .* phase bidding"):
        env.step(torch.full((B,), SIGNAL_ACTION_BASE))
    unchecked = SpadesVectorEnv(B, rules="short_signals", seed=2, check_actions=False, backend=backend)
    unchecked.reset()
    with pytest.raises((VectorEnvError, RuntimeError), match=r"action 72 at table 0: not an action id \(0..71\)"):
        unchecked.step(torch.full((B,), 72))


@pytest.mark.parametrize("backend", BACKENDS)
def test_snapshots_carry_the_messages_and_old_snapshots_still_load(backend):
    env = SpadesVectorEnv(6, rules="short_signals", seed=4, backend=backend)
    _, mask = env.reset()
    generator = torch.Generator().manual_seed(1)
    for _ in range(2):                                  # two messages sent at every table
        _, mask, *_ = env.step(torch.multinomial(mask.float(), 1, generator=generator)[:, 0])
    snapshot = env.state_dict()
    assert (snapshot["state"]["messages"] >= 0).sum() == 12
    other = SpadesVectorEnv(6, rules="short_signals", seed=9, backend="torch")
    other.reset()
    other.load_state_dict(snapshot)
    assert torch.equal(other.state.messages, env.state.messages) and torch.equal(other.observe()[0], env.observe()[0])
    del snapshot["state"]["messages"]                   # a snapshot from before the signal existed...
    with pytest.raises(VectorEnvError, match="the snapshot's state has no 'messages'"):
        other.load_state_dict(snapshot)                 # ...cannot be a signal table's
    plain = SpadesVectorEnv(4, seed=1, backend=backend)
    plain.reset()
    old = plain.state_dict()
    del old["state"]["messages"]
    fresh = SpadesVectorEnv(4, seed=8, backend=backend)
    fresh.reset()
    fresh.load_state_dict(old)                          # a standard table's loads: no message was sent
    assert torch.equal(fresh.observe()[0], plain.observe()[0]) and bool((fresh.state.messages == -1).all())
    bad = env.state_dict()
    bad["state"]["messages"][0, 0] = 4
    with pytest.raises(VectorEnvError, match=r"state 'messages': value 4 outside -1..3"):
        other.load_state_dict(bad)


def test_the_gymnasium_adapter_has_the_signal_in_its_action_space():
    from spades_env.vector_gym import SpadesGymVectorEnv

    envs = SpadesGymVectorEnv(4, rules="short_signals", opponents="heuristic", seed=0)
    obs, info = envs.reset(seed=0)
    assert envs.single_action_space.n == 72 and info["action_mask"].shape == (4, 72)
    assert obs.shape == (4, 731) and envs.single_observation_space.contains(obs[0])
