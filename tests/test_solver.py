"""The exact endgame solver (spades_env/solver.py and native/solver.c).

Checked three ways: against a brute-force minimax written here over the engine itself (every
legal card tried, the hand scored by SpadesGame), the C solver against the Python reference on
longer endings, and properties (a card's value is the best reply's, relabelled suits change
nothing); and its refusals.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spades_env.game import BID_ACTION_BASE, BLIND_NIL_ACTION, NIL_ACTION, PHASE_BIDDING, PHASE_PLAY, SpadesGame
from spades_env.native import unavailable_reason
from spades_env.rules import make_rules
from spades_env.solver import SolverError, payoff_tables, position_value, principal_line, solve
from spades_env.symmetries import symmetries

native = pytest.mark.skipif(unavailable_reason() is not None, reason="the native library does not build here")


def ending(seed: int, cards_left: int, rules="standard", nil_rate: float = 0.3) -> SpadesGame:
    """A random hand played at random down to ``cards_left`` cards (mid-trick too), bid with nils,
    blind nils where allowed, and carried scores and bags."""
    rng = random.Random(seed)
    r = make_rules(rules)
    lo = -190 if r.mercy_score is None else max(-190, r.mercy_score + 1)      # within the game's span
    hi = min(490, r.target_score - 1)
    scores = [rng.randrange(lo, hi), rng.randrange(lo, hi)]
    if rng.random() < 0.3:                   # a side trailing by enough to bid blind nil
        low = rng.randrange(lo, hi - 240)
        scores = [low, low + 100 + rng.randrange(140)][::rng.choice((1, -1))]
    bags = None if r.bags_from_score_digit else [rng.randrange(r.bag_limit), rng.randrange(r.bag_limit)]
    g = SpadesGame(r, rng.randrange(10 ** 9), scores=scores, bags=bags)
    while g.phase != PHASE_PLAY:
        legal = g.legal_actions()
        if BLIND_NIL_ACTION in legal:
            g.apply(BLIND_NIL_ACTION if rng.random() < 0.4 else legal[-1])
        elif g.phase == PHASE_BIDDING:
            if NIL_ACTION in legal and rng.random() < nil_rate:
                g.apply(NIL_ACTION)
            else:
                bids = [a for a in legal if a > NIL_ACTION]
                g.apply(rng.choice(bids[:5]) if bids else legal[0])
        else:
            g.apply(rng.choice(legal))
    while 4 * (g.tricks_per_hand - g.tricks_played) - len(g.trick_cards) > cards_left:
        g.apply(rng.choice(g.legal_actions()))
    return g


def brute_force(g: SpadesGame, side: int, objective: str, tricks_before: int) -> int:
    """Minimax by the engine alone: every legal card of every seat, the finished hand scored by
    SpadesGame (its last_results); the value for ``side``."""
    if g.phase != PHASE_PLAY:
        if objective == "tricks":
            return g.tricks_taken[side] + g.tricks_taken[side + 2] - tricks_before
        return g.last_results[side].points - g.last_results[1 - side].points
    values = []
    for card in g.legal_actions():
        child = g.copy()
        child.apply(card)
        values.append(brute_force(child, side, objective, tricks_before))
    return max(values) if g.side_of[g.to_act] == side else min(values)


def brute_values(g: SpadesGame, objective: str) -> dict[int, int]:
    side = g.side_of[g.to_act]
    before = g.tricks_taken[side] + g.tricks_taken[side + 2]
    out = {}
    for card in g.legal_actions():
        child = g.copy()
        child.apply(card)
        out[card] = brute_force(child, side, objective, before)
    return out


@pytest.mark.parametrize("backend", ["python", pytest.param("native", marks=native)])
@pytest.mark.parametrize("objective", ["points", "tricks"])
def test_equals_brute_force_on_short_endings(backend, objective):
    nils = blind = 0
    for seed in range(60):
        g = ending(seed, 4 + seed % 9)            # 1 to 3 tricks, mid-trick included
        nils += any(b == 0 for b in g.bids)
        blind += any(g.blind)
        assert solve(g, objective, backend=backend) == brute_values(g, objective), seed
    assert nils >= 10 and blind >= 3               # the endings do cover nils and blind nils


@pytest.mark.parametrize("rules", ["tournament", "openspiel", {"spades_lead": "any"},
                                   {"spades_lead": "forced_only", "nil_tricks_count_for_partner": True},
                                   {"bags": False}, {"bag_limit": 3, "bag_penalty": 50}])
def test_equals_brute_force_under_other_rules(rules):
    for seed in range(12):
        g = ending(1000 + seed, 5 + seed % 8, rules)
        expected = brute_values(g, "points")
        assert solve(g, "points", backend="python") == expected, seed
        if unavailable_reason() is None:
            assert solve(g, "points", backend="native") == expected, seed


@pytest.mark.parametrize("rules", ["short", "short_signals", {"preset": "short", "deck_ranks": 3},
                                   {"preset": "short", "no_spades_first_trick": True, "spades_lead": "any"}])
def test_equals_brute_force_on_a_short_deck(rules):
    """A short deck (6 ranks a suit, or 3): the same solver, fewer cards and tricks; whole short
    hands of 3 tricks from the opening lead included."""
    for seed in range(10):
        g = ending(3000 + seed, 4 + seed % 9, rules)
        assert g.tricks_per_hand == make_rules(rules).deck_ranks
        assert all(c % 13 >= g.rules.lowest_rank for h in g.hands for c in range(52) if h >> c & 1)
        for objective in ("points", "tricks"):
            expected = brute_values(g, objective)
            assert solve(g, objective, backend="python") == expected, (seed, objective)
            if unavailable_reason() is None:
                assert solve(g, objective, backend="native") == expected, (seed, objective)


@native
def test_native_equals_reference_on_whole_short_hands():
    for seed in range(2):                       # (the Python reference takes seconds on a whole hand)
        g = ending(4000 + seed, 24, "short")
        assert g.tricks_played == 0 and not g.trick_cards
        assert solve(g, "points", backend="native") == solve(g, "points", backend="python"), seed


def test_first_trick_rules_from_the_opening_lead():
    """no_spades_first_trick and two_of_clubs_leads bind only the first trick: a whole hand solved
    from its first lead, with the ending brute-forced once the first trick is over."""
    r = make_rules("standard", no_spades_first_trick=True, two_of_clubs_leads=True)
    g = ending(7, 52, r)
    assert g.tricks_played == 0 and not g.trick_cards
    assert list(solve(g, "tricks", backend="native" if unavailable_reason() is None else "python")) == [0]


@native
@pytest.mark.parametrize("objective", ["points", "tricks"])
def test_native_equals_reference_on_longer_endings(objective):
    for seed in range(16):
        cards = 24 if seed % 8 == 0 else 16 + seed % 5      # 4 to 6 tricks, mid-trick included
        g = ending(2000 + seed, cards)
        assert solve(g, objective, backend="native") == solve(g, objective, backend="python"), seed


@native
def test_native_equals_reference_on_sampled_search_worlds():
    """Positions as the search builds them (SpadesGame.from_view of a sampled world)."""
    from spades_env.observation import view_from_game
    for seed in range(10):
        g = ending(3000 + seed, 17 + seed % 3)
        view = view_from_game(g, g.to_act)
        rel = [(g.to_act + k) % 4 for k in range(4)]
        world = SpadesGame.from_view(view, g.rules, [g.hands[s] for s in rel])
        expected = solve(g, "points", backend="python")
        assert solve(world, "points", backend="native") == expected
        assert solve(world, "points", backend="python") == expected


def give_top(hands: list[int], leader: int, suit: int) -> bool:
    """Swap the highest card of ``suit`` another seat holds into ``leader``'s hand for the leader's
    lowest card of another suit (every hand keeps its size); False where there is none to take
    (the leader holds all the suit's live cards) or none to give."""
    mine = hands[leader]
    theirs = (hands[0] | hands[1] | hands[2] | hands[3]) & ~mine
    top = next((c for c in range(13 * suit + 12, 13 * suit - 1, -1) if theirs >> c & 1), None)
    spare = [c for c in range(52) if mine >> c & 1 and c // 13 != suit]
    if top is None or not spare:
        return False
    give = min(spare, key=lambda c: c % 13)
    holder = next(s for s in range(4) if hands[s] >> top & 1)
    hands[holder] = hands[holder] & ~(1 << top) | 1 << give
    hands[leader] = hands[leader] & ~(1 << give) | 1 << top
    return True


def with_winners(g: SpadesGame, rng: random.Random) -> SpadesGame:
    """``g`` (at a trick start) with the leader given the top one to three cards of some side
    suits, by swaps that keep every hand's size: positions where the leader's side can cash
    winners (the C solver's quick-trick floors), voids and ruffs left as they fall."""
    h = g.copy()
    hands = list(h.hands)
    leader = h.to_act
    for suit in rng.sample(range(3), rng.randrange(1, 4)):
        for _ in range(rng.randrange(1, 4)):
            if not give_top(hands, leader, suit):
                break
    h.hands = hands
    h._legal = -1
    return h


@native
@pytest.mark.parametrize("objective", ["points", "tricks"])
def test_native_equals_reference_where_the_leader_can_cash(objective):
    """The quick-trick floors: the leader holds top cards of side suits (opponents void with
    spades or not); C equals the Python reference at 8 to 20 cards, and the brute force up to 12
    (three tricks)."""
    rng = random.Random(5)
    for seed in range(14):
        g = with_winners(ending(5000 + seed, (2, 3, 4, 5)[seed % 4] * 4), rng)
        assert g.tricks_played > 0 and not g.trick_cards
        native_values = solve(g, objective, backend="native")
        assert native_values == solve(g, objective, backend="python"), seed
        if seed % 4 < 2:
            assert native_values == brute_values(g, objective), seed


def with_top_spades(g: SpadesGame, rng: random.Random) -> SpadesGame:
    """``with_winners``'s position with the leader also given the top live spades (as many as the
    longest other hand's spades, or one fewer), by the same swaps, and spades broken: positions
    where the leader can draw the other seats' spades and then cash side-suit winners (the C
    solver's quick tricks with trumps drawn), and near misses where it cannot."""
    h = with_winners(g, rng)
    hands = list(h.hands)
    leader = h.to_act
    longest = max((hands[s] >> 39).bit_count() for s in range(4) if s != leader)
    for _ in range(max(0, longest - rng.randrange(2))):
        if not give_top(hands, leader, 3):
            break
    h.hands = hands
    h.spades_broken = rng.random() < 0.5        # unbroken half the time: no spade lead, no draw
    h._legal = -1
    return h


@native
@pytest.mark.parametrize("objective", ["points", "tricks"])
def test_native_equals_reference_where_the_leader_can_draw_trumps(objective):
    """The quick tricks with trumps drawn: the leader holds the top spades and top side-suit
    cards, spades broken or not; C equals the Python reference at 8 to 16 cards (nils included),
    and the brute force at 8. (It fails if the floor ignores either condition of the draw.)"""
    rng = random.Random(11)
    for seed in range(120):
        g = with_top_spades(ending(9000 + seed, (2, 3, 4)[seed % 3] * 4, nil_rate=0.4), rng)
        assert g.tricks_played > 0 and not g.trick_cards
        native_values = solve(g, objective, backend="native")
        assert native_values == solve(g, objective, backend="python"), seed
        if seed % 3 == 0 and seed < 30:
            assert native_values == brute_values(g, objective), seed


@native
@pytest.mark.parametrize("objective", ["points", "tricks"])
def test_native_equals_reference_with_many_nils(objective):
    """Nils on both sides (the C solver orders a live nil's cards first and tests values already
    found for sibling cards); mid-trick positions included."""
    for seed in range(12):
        g = ending(6000 + seed, 13 + seed % 6, nil_rate=0.8)
        assert solve(g, objective, backend="native") == solve(g, objective, backend="python"), seed


def game_ending(seed: int, cards_left: int, bags: list[int]) -> SpadesGame:
    """A hand as a game reaches it: level scores, the given carried bags, numbers bid (no nil),
    played at random down to ``cards_left`` cards."""
    rng = random.Random(seed)
    g = SpadesGame(make_rules("standard"), rng.randrange(10 ** 9), scores=[0, 0], bags=bags)
    while g.phase != PHASE_PLAY:
        legal = g.legal_actions()
        bids = [a for a in legal if a > NIL_ACTION]
        g.apply(rng.choice(bids[:5]) if g.phase == PHASE_BIDDING and bids else legal[-1])
    while 4 * (g.tricks_per_hand - g.tricks_played) - len(g.trick_cards) > cards_left:
        g.apply(rng.choice(g.legal_actions()))
    return g


def payoff_is_monotone_in_tricks(g: SpadesGame) -> bool:
    """Whether the points payoff for the side to act depends on its tricks alone, nondecreasing:
    where the C solver solves trick counts and maps them back (native/solver.c's to_trick_counts)."""
    side = g.side_of[g.to_act]
    tables = payoff_tables(g, "points", side)
    r, taken = g.tricks_per_hand - g.tricks_played, g.tricks_taken
    by_total: dict[int, set[int]] = {}
    for x0 in range(r + 1):
        for x1 in range(r + 1 - x0):
            for x2 in range(r + 1 - x0 - x1):
                x = [x0, x1, x2, r - x0 - x1 - x2]
                t = [taken[s] + x[s] for s in range(4)]
                v = tables[side][t[side]][t[side + 2]] - tables[1 - side][t[1 - side]][t[3 - side]]
                by_total.setdefault(x[side] + x[side + 2], set()).add(int(v))
    if any(len(values) > 1 for values in by_total.values()):
        return False
    g_of = [by_total[k].pop() for k in sorted(by_total)]
    return all(a <= b for a, b in zip(g_of, g_of[1:]))


@native
def test_native_equals_reference_where_points_follow_the_tricks():
    """Game hands without a nil: from no carried bags the payoff is a nondecreasing function of
    the side's tricks (the C solver then solves trick counts and maps them back); with 7-9 bags
    carried a bag penalty is in reach and it may not be. Both kinds, C = the Python reference."""
    kinds = {True: 0, False: 0}
    for seed in range(24):
        bags = [0, 0] if seed % 2 == 0 else [7 + seed % 3, 9 - seed % 3]
        g = game_ending(11_000 + seed, 16 + seed % 5, bags)
        kinds[payoff_is_monotone_in_tricks(g)] += 1
        assert solve(g, "points", backend="native") == solve(g, "points", backend="python"), seed
        assert position_value(g, "points", backend="native") == position_value(g, "points", backend="python"), seed
    assert kinds[True] >= 8 and kinds[False] >= 4, kinds


def _child_value(g: SpadesGame, card: int, objective: str) -> int:
    """A card's value for the side to act, from the solver's values one card later."""
    side = g.side_of[g.to_act]
    child = g.copy()
    child.apply(card)
    gained = (child.tricks_taken[side] + child.tricks_taken[side + 2]
              - g.tricks_taken[side] - g.tricks_taken[side + 2])
    if child.phase != PHASE_PLAY:
        res = child.last_results
        return gained if objective == "tricks" else res[side].points - res[1 - side].points
    best = max(solve(child, objective).values())
    if child.side_of[child.to_act] == side:
        return best + (gained if objective == "tricks" else 0)
    if objective == "points":
        return -best
    return gained + (13 - child.tricks_played) - best


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), cards=st.integers(2, 24), objective=st.sampled_from(["points", "tricks"]))
def test_a_cards_value_is_the_best_reply_after_it(seed, cards, objective):
    g = ending(seed, cards)
    values = solve(g, objective)
    assert set(values) == set(g.legal_actions())
    for card, value in values.items():
        assert value == _child_value(g, card, objective)
    assert position_value(g, objective) == max(values.values())


@native
def test_a_cards_value_is_the_best_reply_after_it_in_long_endings():
    """At 40-41 cards the C solver's table is large enough to be mapped on its own (huge pages
    on Linux); the same property there, with and without nils, both objectives."""
    for seed, g in enumerate([game_ending(12_000, 40, [0, 0]), ending(12_001, 41), game_ending(12_002, 41, [8, 8])]):
        for objective in ("points", "tricks"):
            values = solve(g, objective, backend="native")
            assert all(value == _child_value(g, card, objective) for card, value in values.items()), (seed, objective)
            assert position_value(g, objective, backend="native") == max(values.values())


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10 ** 6), cards=st.integers(2, 24), which=st.integers(1, 5))
def test_relabelling_side_suits_changes_no_value(seed, cards, which):
    g = ending(seed, cards)
    relabel = symmetries(g.rules)[which]
    h = g.copy()
    h.hands = [relabel.map_cards(m) for m in g.hands]
    h.trick_cards = [relabel.map_card(c) for c in g.trick_cards]
    if h.trick_cards:
        h.led_suit = h.trick_cards[0] // 13
        h.win_card = relabel.map_card(g.win_card)
    h._legal = -1
    values = solve(g, "points")
    assert solve(h, "points") == {relabel.map_card(c): v for c, v in values.items()}


def test_principal_line_plays_the_hand_out_at_its_value():
    g = ending(11, 20)
    line = principal_line(g, "points")
    assert len(line["cards"]) == 20
    side = line["side"]
    assert line["value"] == line["score_change"][side] - line["score_change"][1 - side]
    assert sum(line["tricks_taken"]) == 13
    assert g.phase == PHASE_PLAY and 52 - 4 * g.tricks_played - len(g.trick_cards) == 20   # untouched


def test_refusals_name_the_problem():
    g = SpadesGame("standard", 0)
    assert g.phase == PHASE_BIDDING
    with pytest.raises(SolverError, match="'bidding' phase; expected the 'play' phase"):
        solve(g)
    p = ending(3, 12)
    with pytest.raises(SolverError, match="objective='score'"):
        solve(p, "score")
    with pytest.raises(SolverError, match="backend='gpu'"):
        solve(p, backend="gpu")
    with pytest.raises(SolverError, match="expected a SpadesGame"):
        solve("not a game")
    broken = p.copy()
    broken.hands = list(p.hands)
    broken.hands[0] |= broken.hands[1]
    broken.hands[1] = 0
    with pytest.raises(SolverError, match="seat 0 holds"):
        solve(broken)
    cutthroat = SpadesGame("cutthroat", 0)
    while cutthroat.phase != PHASE_PLAY:
        cutthroat.apply(BID_ACTION_BASE + 3 if cutthroat.phase == PHASE_BIDDING else cutthroat.legal_actions()[0])
    with pytest.raises(SolverError, match="cutthroat"):
        solve(cutthroat)
    three = SpadesGame(make_rules("cutthroat", players=3), 0)
    while three.phase != PHASE_PLAY:
        three.apply(BID_ACTION_BASE + 3 if three.phase == PHASE_BIDDING else three.legal_actions()[0])
    with pytest.raises(SolverError, match="3 players"):
        solve(three)


def test_a_game_over_is_refused_by_its_phase():
    g = ending(5, 1)
    g.apply(g.legal_actions()[0])
    assert g.phase != PHASE_PLAY
    with pytest.raises(SolverError, match="phase"):
        solve(g)


@native
def test_the_benchmark_command_times_both_solvers(tmp_path, capsys):
    import json

    from spades_env.solver_bench import main
    out = tmp_path / "bench.json"
    assert main(["--positions", "3", "--sizes", "8,12", "--whole", "0", "--reference-up-to", "8",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["cards"] for r in rows] == [8, 12] and "python" in rows[0] and "python" not in rows[1]
    assert all(r["native"]["positions"] == 3 and r["native"]["p99_ms"] >= r["native"]["median_ms"] for r in rows)
    assert all(r["native"]["cpu_p99_ms"] >= r["native"]["cpu_median_ms"] >= 0 for r in rows)
    with pytest.raises(SystemExit) as exit_info:
        main(["--sizes", "1,99"])
    assert exit_info.value.code == 2
    assert "expected card counts 2..52" in capsys.readouterr().err


def test_the_benchmarks_heuristic_whole_hands_are_first_leads_from_0_0():
    """``--whole-bids heuristic``: the hand as a game deals it (0-0, the heuristic's bids),
    stopped before the first card; the same seed gives the same hand."""
    from spades_env.solver_bench import heuristic_whole_hand
    g = heuristic_whole_hand(11)
    assert g.phase == PHASE_PLAY and g.tricks_played == 0 and not g.trick_cards
    assert list(g.scores) == [0, 0] and len(g.bids) == 4
    again = heuristic_whole_hand(11)
    assert again.bids == g.bids and again.legal_actions() == g.legal_actions()
    import agents                                   # the bids are the heuristic agent's
    from spades_env.env import SpadesEnv
    env = SpadesEnv()
    env.reset(seed=11)
    bidder = agents.make("heuristic")
    while env.game.phase != PHASE_PLAY:
        env.step(bidder.act(env.observe(env.agent_selection)))
    assert env.game.bids == g.bids
