"""The evaluation harness (``spades-eval``, the :mod:`evaluation` package): tiny matches, exact checks."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

import agents
from agents.base import Agent
from spades_env import spades_v0
from spades_env.cards import card_str
import evaluation as ev
from evaluation import EvaluationError, compare, crossplay, evaluate, main
from evaluation.cli import split_spec_list
from evaluation.matches import _check_same_deals

needs_heuristic = pytest.mark.skipif("heuristic" not in agents.available(),
                                     reason="the heuristic agent is not registered yet")


class Scripted(Agent):
    """Bids ``bid`` whenever legal (looks at its cards when offered blind nil), plays its lowest
    legal card: a game whose statistics can be checked by hand."""

    name = "scripted"

    def __init__(self, bid: int, seed=None) -> None:
        super().__init__(seed)
        self.bid = bid

    def act(self, obs, info=None) -> int:
        legal = np.flatnonzero(obs["action_mask"])
        if 67 in legal:
            return 67
        if legal[0] >= 52:  # bidding
            wanted = 52 + self.bid
            return wanted if wanted in legal else int(legal[0])
        return int(legal[0])


def nil_bot():
    return Scripted(0)


def greedy_bot():
    return Scripted(13)


# --------------------------------------------------------------------------------- command line

def test_cli_end_to_end_writes_json(tmp_path, capsys):
    out = tmp_path / "sub" / "match.json"
    code = main(["--team-a", "random", "--team-b", "random:seed=4", "--deals", "12", "--seed", "3",
                 "--json", str(out), "--quiet", "--workers", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "score difference per hand (A-B)" in printed and "95% CI" in printed
    assert "contracts made" in printed and "time per decision" in printed
    data = json.loads(out.read_text())
    for key in ("team_a", "team_b", "rules", "mode", "duplicate", "seed", "units", "hands",
                "score_diff_per_hand", "teams", "unit_diffs", "elapsed_s", "hands_per_s"):
        assert key in data, key
    assert data["team_a"] == "random" and data["team_b"] == "random:seed=4"
    assert data["units"] == 12 and data["hands"] == 12 and data["mode"] == "hands"
    diff = data["score_diff_per_hand"]
    assert diff["low"] <= diff["mean"] <= diff["high"] and diff["n"] == 12
    assert diff["mean"] == pytest.approx(sum(data["unit_diffs"]) / 12)
    for team in ("A", "B"):
        stats = data["teams"][team]
        for key in ("contracts_made", "contracts_set", "bid_error_mean", "bid_error_abs_mean", "nil_bids",
                    "nil_rate", "blind_nil_bids", "blind_nil_rate", "bags_per_hand", "seconds_per_decision"):
            assert key in stats, key
        assert stats["hands"] == 12 and stats["seconds_per_decision"] > 0
    assert data["teams"]["A"]["points"] - data["teams"]["B"]["points"] == pytest.approx(12 * diff["mean"])


def test_cli_games_mode_and_progress_bar(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)     # bars step aside when stderr is not a terminal
    out = tmp_path / "games.json"
    records = tmp_path / "records.json"
    assert main(["--team-a", "random", "--team-b", "random:seed=9", "--games", "3", "--json", str(out),
                 "--records", str(records), "--workers", "1"]) == 0
    captured = capsys.readouterr()
    assert "win rate" in captured.out and "games won / lost / tied" in captured.out
    assert "3/3" in captured.err  # tqdm's bar goes to stderr
    data = json.loads(out.read_text())
    assert data["mode"] == "games" and data["win_rate_a"]["method"] == "Wilson"
    win = data["win_rate_a"]
    assert 0 <= win["low"] <= win["mean"] <= win["high"] <= 1
    assert data["teams"]["A"]["games"] == 3
    assert data["teams"]["A"]["wins"] + data["teams"]["A"]["ties"] + data["teams"]["A"]["losses"] == 3
    saved = json.loads(records.read_text())
    assert len(saved) == 3 and all(r["game_over"] for r in saved)
    assert sum(len(r["hands"]) for r in saved) == data["hands"]


def test_cli_bad_inputs_exit_2_with_clear_messages(capsys):
    cases = [
        (["--team-a", "nosuchbot", "--team-b", "random"], "unknown agent 'nosuchbot'"),
        (["--team-a", "randon", "--team-b", "random"], "did you mean 'random'"),
        (["--team-a", "random:seed", "--team-b", "random"], "is not key=value"),
        (["--team-a", "random:", "--team-b", "random"], "nothing after ':'"),
        (["--team-a", "random:foo=1", "--team-b", "random"], "cannot be built"),
        (["--team-a", "random", "--team-b", "random", "--deals", "0"], "deals=0"),
        (["--team-a", "random", "--team-b", "random", "--games", "-1"], "games=-1"),
        (["--team-a", "random", "--team-b", "random", "--rules", "nosuchrules"], "unknown rules preset"),
        (["--team-a", "random", "--team-b", "random", "--rules", "standard.yaml"], "rules file not found"),
        (["--team-a", "random", "--team-b", "random", "--workers", "0"], "workers=0"),
        (["--team-a", "random"], "--team-b"),
        (["--team-a", "random", "random", "random", "--team-b", "random"], "got 3"),
        (["--team-a", "random", "--team-b", "random", "--start-scores", "100"], "--start-scores"),
        (["--team-a", "random", "--team-b", "random", "--reference", "random"], "--crossplay"),
        (["--crossplay", "seed=3,random"], "does not follow an agent spec"),
        (["--baseline", "random", "--team-b", "random"], "give both --team-a and --team-b"),
        (["--crossplay", "random", "--baseline", "random"], "drop it with --crossplay"),
        (["--team-a", "random", "--baseline", "random", "--team-b", "random", "--records", "x.json"], "--records"),
        (["--team-a", "random", "--team-b", "random", "--deals", "x"], "invalid int value"),
        (["--team-a", "random", "--team-b", "random", "--deals", "3", "--games", "3"], "not allowed with"),
    ]
    for argv, message in cases:
        assert main(argv + ["--quiet"]) == 2, argv
        err = capsys.readouterr().err
        assert message in err, (argv, err)


def test_cli_entry_point_is_declared():
    text = (Path(ev.__file__).parent.parent / "pyproject.toml").read_text()
    from tools.entry import COMMANDS
    assert 'spades-eval = "tools.entry:evaluate"' in text and '"evaluation*"' in text
    assert COMMANDS["spades-eval"] == "evaluation.cli:main"       # behind the Ctrl-C handler (tools/entry.py)


# --------------------------------------------------------------------------------- specs

def test_agent_specs_go_through_the_one_parser_with_evaluation_errors():
    player = ev.Player.of("neural:checkpoint=runs/x/model.pt,greedy=true,temp=0.5,dev=none")
    assert player.label == "neural:checkpoint=runs/x/model.pt,greedy=true,temp=0.5,dev=none"
    assert ev.Player.of("search:worlds=20,seed=3").salt == "3" and ev.Player.of("heuristic").salt == ""
    for bad, message in (("", "expected a registry name"), (":x=1", "no agent name"), ("a:x", "not key=value"),
                         ("random:=1", "not key=value"), ("random:x=1,x=2", "given twice"),
                         ("random:1x=2", "not key=value"), ("nosuchbot", "unknown agent 'nosuchbot'")):
        with pytest.raises(EvaluationError, match=message):
            ev.Player.of(bad)
    assert split_spec_list(["search:worlds=20,seed=3,heuristic", "random"]) == \
        ["search:worlds=20,seed=3", "heuristic", "random"]
    with pytest.raises(EvaluationError, match="agent instance"):
        ev.Team.of(agents.make("random"))
    team = ev.Team.of(("random", "random:seed=2"))
    assert team.label == "random + random:seed=2" and ev.Team.of("random").label == "random"


def test_api_bad_inputs():
    with pytest.raises(EvaluationError, match="deals=0"):
        evaluate("random", "random", deals=0)
    with pytest.raises(EvaluationError, match="positive whole number"):
        evaluate("random", "random", deals=2.5)
    with pytest.raises(EvaluationError, match="mode="):
        evaluate("random", "random", deals=2, mode="tricks")
    with pytest.raises(EvaluationError, match="not both"):
        evaluate("random", "random", deals=2, games=2)
    with pytest.raises(EvaluationError, match="four seats"):
        evaluate("random", "random", deals=2, rules={"players": 3, "partnerships": False, "blind_nil": False})
    with pytest.raises(EvaluationError, match="no act"):
        evaluate(lambda: object(), "random", deals=2)
    with pytest.raises(EvaluationError, match="pair"):
        evaluate(("random", "random", "random"), "random", deals=2)


class Broken(Agent):
    def act(self, obs, info=None):
        raise ZeroDivisionError("agent bug")


class Cheater(Agent):
    def act(self, obs, info=None):
        return int(np.flatnonzero(obs["action_mask"] == 0)[0])


def test_agent_failures_surface_with_context():
    with pytest.raises(ZeroDivisionError, match="agent bug"):
        evaluate(Broken, "random", deals=8, workers=2)
    with pytest.raises(RuntimeError, match="team B .*seat 1.*illegal action"):
        evaluate("random", Cheater, deals=2, workers=1)


def _dies():
    import os
    os._exit(3)


def test_a_dying_worker_is_an_error_not_a_hang():
    calls = []

    def factory():  # fine in the parent (the build check), fatal in a worker
        calls.append(1)
        if len(calls) > 1:
            _dies()
        return agents.make("random")

    with pytest.raises(EvaluationError, match="worker process died"):
        evaluate(factory, "random", deals=4, workers=2)


# --------------------------------------------------------------------------------- exactness

def test_duplicate_team_against_itself_is_exactly_zero():
    """Agents' seeds follow the seat, so the swapped play of a deal is the very same game."""
    result = evaluate("random", "random", deals=10, duplicate=True, seed=5, workers=1, keep_records=True)
    assert result.score_diff.mean == 0 and set(result.unit_diffs) == {0.0}
    assert result.score_diff.low == result.score_diff.high == 0
    assert result.teams["A"].points == result.teams["B"].points
    assert len(result.records) == 20
    for first, second in zip(result.records[::2], result.records[1::2]):
        assert first["hands"][0]["actions"] == second["hands"][0]["actions"]
    games = evaluate("random", "random", games=3, duplicate=True, seed=1, workers=1)
    assert games.score_diff.mean == 0 and games.game_diff.mean == 0 and games.win_rate.mean == 0.5


def test_duplicate_swaps_seats_over_the_same_cards():
    """Duplicate of A vs B plays the same two games as B vs A: differences exactly mirrored."""
    ab = evaluate("random:seed=1", "random:seed=2", deals=8, duplicate=True, workers=1, keep_records=True)
    ba = evaluate("random:seed=2", "random:seed=1", deals=8, duplicate=True, workers=1)
    assert ab.unit_diffs == [-d for d in ba.unit_diffs] and any(d != 0 for d in ab.unit_diffs)
    assert asdict(ab.teams["A"]) | {"name": "", "seconds_per_decision": 0} == \
        asdict(ba.teams["B"]) | {"name": "", "seconds_per_decision": 0}
    for unit, (first, second) in enumerate(zip(ab.records[::2], ab.records[1::2])):
        h1, h2 = first["hands"][0], second["hands"][0]
        assert h1["deal"] == h2["deal"] and h1["dealer"] == h2["dealer"]
        deal, dealer = ev.make_deal(0, unit)
        assert h1["deal"] == [[card_str(c) for c in hand] for hand in deal] and h1["dealer"] == dealer
    # Non-duplicate: A always on seats 0+2.
    single = evaluate("random:seed=1", "random:seed=2", deals=8, workers=1)
    assert single.unit_diffs == [r["hands"][0]["score_change"][0] - r["hands"][0]["score_change"][1]
                                 for r in ab.records[::2]]


def test_results_identical_whatever_the_number_of_workers():
    mixed = ("random", "random:seed=5")
    one = evaluate(mixed, "random:seed=2", deals=24, duplicate=True, seed=11, workers=1)
    two = evaluate(mixed, "random:seed=2", deals=24, duplicate=True, seed=11, workers=2)
    assert one.to_dict(timing=False) == two.to_dict(timing=False)
    assert one.workers == 1 and two.workers == 2
    g1 = evaluate("random", "random:seed=3", games=4, duplicate=True, seed=2, workers=1)
    g2 = evaluate("random", "random:seed=3", games=4, duplicate=True, seed=2, workers=2)
    assert g1.win_rate.method == "Wilson over duplicate pairs" and g1.hands_per_game > 0
    assert g1.to_dict(timing=False) == g2.to_dict(timing=False)
    # A closure factory works across processes too (the pool forks where it can).
    c1 = evaluate(lambda: agents.make("random"), "random:seed=7", deals=6, workers=1)
    c2 = evaluate(lambda: agents.make("random"), "random:seed=7", deals=6, workers=2)
    assert c1.unit_diffs == c2.unit_diffs


class ThreadReporter(Agent):
    """Plays randomly and notes, at every decision, the torch threads and OMP_NUM_THREADS it sees
    (in a file: the decisions may happen in worker processes)."""

    def __init__(self, log, seed=None) -> None:
        super().__init__(seed)
        self.log, self.inner = log, agents.make("random")

    def reset(self, seed=None) -> None:
        self.inner.reset(seed)

    def act(self, obs, info=None) -> int:
        import os

        import torch
        with open(self.log, "a") as out:
            out.write(f"{torch.get_num_threads()} {os.environ.get('OMP_NUM_THREADS')}\n")
        return self.inner.act(obs, info)


def test_agents_play_on_one_torch_thread_and_the_callers_count_comes_back(tmp_path):
    # On shared cores torch's spinning thread pool made a neural decision 27-48 ms instead of
    # about 0.2 ms (issue 39): play uses one intra-op thread, here and in every worker.
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        here, forked = tmp_path / "here.log", tmp_path / "forked.log"
        evaluate(lambda: ThreadReporter(here), "random", deals=2, workers=1)
        assert torch.get_num_threads() == 2                           # restored for the caller
        assert {line.split()[0] for line in here.read_text().splitlines()} == {"1"}
        evaluate(lambda: ThreadReporter(forked), "random", deals=4, workers=2)
        assert set(forked.read_text().splitlines()) == {"1 1"}        # workers: torch and OpenMP
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_play_matches_gives_every_play_of_every_deal_for_new_evaluations():
    config = ev.match_config("heuristic", "random", deals=5, duplicate=True, seed=4)
    (outcomes,) = ev.play_matches([config], workers=1)
    assert [[(o.unit, o.play) for o in unit] for unit in outcomes] == [[(u, 0), (u, 1)] for u in range(5)]
    result = evaluate("heuristic", "random", deals=5, duplicate=True, seed=4, workers=1)
    assert [sum(o.diff for o in unit) for unit in outcomes] == result.unit_points
    assert ev.summarize(config, outcomes).to_dict(timing=False) == result.to_dict(timing=False)
    with pytest.raises(EvaluationError, match="workers=0"):
        ev.play_matches([config], workers=0)


def test_deals_are_reproducible_and_seed_derivation_is_stable():
    deals = ev.make_deals(6, seed=7)
    assert deals == ev.make_deals(6, seed=7)
    assert deals != ev.make_deals(6, seed=8)
    assert deals[:3] == ev.make_deals(3, seed=7)  # deal i does not depend on how many are drawn
    for hands, dealer in deals:
        assert sorted(c for hand in hands for c in hand) == list(range(52))
        assert all(len(hand) == 13 for hand in hands) and 0 <= dealer < 4
    # A hash of its parts (blake2b), not Python's salted hash(): the same in every process.
    assert ev.derive_seed("a", 1) == 6920629095001669593
    assert ev.make_deal(0, 0)[0][0][:3] == ev.make_deals(1, 0)[0][0][0][:3]
    assert ev.make_deal(0, 0, "openspiel")[1] is None  # the openspiel rules fix the dealer
    r1 = evaluate("random", "random:seed=1", deals=5, seed=3, workers=1)
    r2 = evaluate("random", "random:seed=1", deals=5, seed=3, workers=1)
    r3 = evaluate("random", "random:seed=1", deals=5, seed=4, workers=1)
    assert r1.unit_diffs == r2.unit_diffs != r3.unit_diffs


def test_env_game_deals_do_not_depend_on_the_actions():
    """What duplicate games rely on: reset(seed=s) gives the same deal sequence whatever is played."""
    def deals_played(agent_seed: int) -> list:
        env = spades_v0.raw_env(rules="standard", episode="game", max_hands=4, mercy_score=None,
                                 target_score=5000)
        env.reset(seed=123)
        bots = [agents.make("random", seed=agent_seed + s) for s in range(4)]
        for name in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            env.step(None if term or trunc else bots[env.agent_name_mapping[name]].act(obs, info))
        hands = env.game_record()["hands"]
        return [(h["deal"], h["dealer"]) for h in hands], [h["actions"] for h in hands]

    (a, actions_a), (b, actions_b) = deals_played(0), deals_played(100)
    assert len(a) == len(b) == 4 and a == b and actions_a != actions_b
    assert len({str(deal) for deal, _ in a}) == 4


def test_duplicate_games_refuse_different_deal_sequences():
    def outcome(deal):
        return ev.PlayOutcome(0, 0, 1, {}, record={"hands": [{"deal": deal, "dealer": 1}]})

    _check_same_deals([outcome([["AS"]]), outcome([["AS"]])], 0)
    with pytest.raises(RuntimeError, match="dealt differently"):
        _check_same_deals([outcome([["AS"]]), outcome([["KS"]])], 0)


# --------------------------------------------------------------------------------- statistics

def test_team_stats_by_hand_with_scripted_bidders():
    """Team A bids nil twice, team B bids 13 + 13 (always set): every figure follows by hand."""
    r = evaluate(nil_bot, greedy_bot, deals=10, seed=2, workers=1, keep_records=True)
    a, b = r.teams["A"], r.teams["B"]
    taken_a = [h["tricks_taken"][0] + h["tricks_taken"][2] for rec in r.records for h in rec["hands"]]
    kept = sum((h["tricks_taken"][s] == 0) for rec in r.records for h in rec["hands"] for s in (0, 2))
    assert a.nil_bids == 20 and a.nil_kept == kept and a.contracts == 0 and a.make_rate is None
    penalties = sum(h["bag_penalties"][0] for rec in r.records for h in rec["hands"])
    assert a.points == 100 * kept - 100 * (20 - kept) - 100 * penalties
    assert a.bags == sum(taken_a)                   # a nil bidder's tricks are bags
    assert b.contracts == b.contracts_set == 10 and b.contracts_made == 0 and b.nil_bids == 0
    assert b.points == -260 * 10 and b.bags == 0
    assert b.bid_error_mean == pytest.approx(sum(13 - t - 26 for t in taken_a) / 10)
    assert b.bid_error_abs_mean == pytest.approx(-b.bid_error_mean)
    assert r.score_diff.mean == pytest.approx((a.points - b.points) / 10)
    assert a.decisions == b.decisions == 10 * 2 * 14   # a bid and 13 cards per seat
    assert a.seconds_per_decision > 0


def test_team_stats_match_a_direct_computation_from_records():
    """Random play from 0-150 (team A may bid blind nil), duplicate, recomputed from the records."""
    r = evaluate("random", "random:seed=1", deals=30, duplicate=True, seed=4, workers=1,
                 start_scores=(0, 150), keep_records=True)
    expect = {t: dict(points=0, contracts=0, made=0, set=0, err=0, abs_err=0, nil=0, nil_kept=0,
                      blind=0, blind_kept=0, bags=0, hands=0) for t in "AB"}
    for index, record in enumerate(r.records):
        swapped = index % 2 == 1
        hand = record["hands"][0]
        assert record["start"]["scores"] == ([150, 0] if swapped else [0, 150])
        for team, side in (("A", 1 if swapped else 0), ("B", 0 if swapped else 1)):
            e = expect[team]
            e["hands"] += 1
            e["points"] += hand["score_change"][side]
            e["bags"] += hand["bags_taken"][side]
            seats = (side, side + 2)
            contract = sum(hand["bids"][s] for s in seats if hand["bids"][s] > 0)
            if contract:
                tricks = sum(hand["tricks_taken"][s] for s in seats if hand["bids"][s] > 0)
                e["contracts"] += 1
                e["made" if tricks >= contract else "set"] += 1
                e["err"] += tricks - contract
                e["abs_err"] += abs(tricks - contract)
            for s in seats:
                if hand["bids"][s] == 0:
                    key = "blind" if hand["blind"][s] else "nil"
                    e[key] += 1
                    e[key + "_kept"] += hand["tricks_taken"][s] == 0
    assert expect["A"]["blind"] > 0 and expect["B"]["blind"] == 0   # only the trailing team may
    for team in "AB":
        s, e = r.teams[team], expect[team]
        assert (s.hands, s.points, s.contracts, s.contracts_made, s.contracts_set, s.bags) == \
            (e["hands"], e["points"], e["contracts"], e["made"], e["set"], e["bags"])
        assert (s.nil_bids, s.nil_kept, s.blind_nil_bids, s.blind_nil_kept) == \
            (e["nil"], e["nil_kept"], e["blind"], e["blind_kept"])
        assert s.bid_error_mean == pytest.approx(e["err"] / e["contracts"])
        assert s.bid_error_abs_mean == pytest.approx(e["abs_err"] / e["contracts"])
        assert s.points_per_hand == pytest.approx(e["points"] / 60)
    units = [(r.records[2 * u]["hands"][0]["score_change"][0] - r.records[2 * u]["hands"][0]["score_change"][1]
              + r.records[2 * u + 1]["hands"][0]["score_change"][1]
              - r.records[2 * u + 1]["hands"][0]["score_change"][0]) / 2 for u in range(30)]
    assert r.unit_diffs == units
    assert r.score_diff.mean == pytest.approx(np.mean(units))
    half = 2.045229642 * np.std(units, ddof=1) / np.sqrt(30)   # t(0.975, 29)
    assert r.score_diff.high - r.score_diff.mean == pytest.approx(half)


def _expected_hand_kinds(records) -> dict[str, list]:
    """Hands and A-B points per kind, recomputed from the records of a duplicate match (team A
    sits on side 0 in even plays, side 1 in odd ones)."""
    expect = {kind: [0, 0] for kind in ev.HAND_KINDS}
    for index, record in enumerate(records):
        a, b = (1, 0) if index % 2 else (0, 1)              # the sides of A and B in this play
        for hand in record["hands"]:
            bids, taken = hand["bids"], hand["tricks_taken"]
            nils = {team: [taken[s] == 0 for s in (side, side + 2) if bids[s] == 0] for team, side in (("A", a), ("B", b))}
            if nils["A"] and nils["B"]:
                kind = "nil by both teams"
            elif nils["A"] or nils["B"]:
                team = "A" if nils["A"] else "B"
                kind = f"{team} nil {'kept' if all(nils[team]) else 'broken'}"
            else:
                set_a, set_b = (sum(taken[s] for s in (side, side + 2)) < bids[side] + bids[side + 2] for side in (a, b))
                kind = {(False, False): "no nil: both made", (True, False): "no nil: A set",
                        (False, True): "no nil: B set", (True, True): "no nil: both set"}[set_a, set_b]
            expect[kind][0] += 1
            expect[kind][1] += hand["score_change"][a] - hand["score_change"][b]
    return expect


def test_hand_kinds_split_the_score_difference():
    """Every hand falls in one kind (team A's view: a team's nil kept or broken, else which
    contracts were set); the kinds' counts and points match the records and add up to the match."""
    r = evaluate("random", "heuristic", deals=40, duplicate=True, seed=5, workers=1, keep_records=True)
    expect = _expected_hand_kinds(r.records)
    assert list(r.hand_kinds) == list(ev.HAND_KINDS)
    for kind, (n, points) in expect.items():
        k = r.hand_kinds[kind]
        assert k["hands"] == n and k["points_per_hand"] == pytest.approx(points / 80), kind
        assert k["mean_diff"] == (pytest.approx(points / n) if n else None)
    assert sum(n for n, _ in expect.values()) == 80
    assert sum(k["points_per_hand"] for k in r.hand_kinds.values()) == pytest.approx(r.score_diff.mean)
    assert r.hand_kinds["A nil broken"]["hands"] > 0 and r.hand_kinds["no nil: A set"]["hands"] > 0
    assert json.loads(json.dumps(r.to_dict()))["hand_kinds"] == r.hand_kinds
    report = r.format()
    assert "where the points come from" in report and "no nil: A set" in report


def test_hand_kinds_in_whole_games():
    """In games mode every hand of every game is counted once (bag penalties and blind nils
    included) and the kinds' parts add up to the match's points per hand."""
    r = evaluate("heuristic", "random", games=3, duplicate=True, seed=2, workers=1, keep_records=True)
    expect = _expected_hand_kinds(r.records)
    assert sum(n for n, _ in expect.values()) == r.hands > 6
    for kind, (n, points) in expect.items():
        k = r.hand_kinds[kind]
        assert k["hands"] == n and k["points_per_hand"] == pytest.approx(points / r.hands), kind
    assert sum(k["points_per_hand"] for k in r.hand_kinds.values()) == pytest.approx(r.score_diff.mean)


def test_interval_helpers():
    assert ev.t_quantile(0.95, 1) == pytest.approx(12.7062, abs=1e-3)
    assert ev.t_quantile(0.95, 10) == pytest.approx(2.2281, abs=1e-3)
    assert ev.t_quantile(0.95, 29) == pytest.approx(2.0452, abs=1e-3)
    assert ev.t_quantile(0.99, 5) == pytest.approx(4.0321, abs=1e-3)
    assert ev.t_quantile(0.95, 10_000) == pytest.approx(1.9602, abs=1e-3)
    assert ev.t_p_value(2.2281, 10) == pytest.approx(0.05, abs=1e-3)
    w = ev.wilson_interval(8, 10)
    assert (w.low, w.high) == (pytest.approx(0.4902, abs=1e-3), pytest.approx(0.9433, abs=1e-3))
    one = ev.mean_interval([3.0])
    assert one.mean == 3 and one.low is None and one.high is None
    # The ratio estimator with equal cluster sizes is the plain mean with the plain t interval.
    num, den = [4.0, -2.0, 6.0, 1.0], [2, 2, 2, 2]
    ratio, plain = ev.ratio_interval(num, den), ev.mean_interval([x / 2 for x in num])
    assert ratio.mean == pytest.approx(plain.mean)
    assert (ratio.low, ratio.high) == (pytest.approx(plain.low), pytest.approx(plain.high))


# --------------------------------------------------------------------------------- variants, crossplay

def test_cutthroat_is_supported():
    same = evaluate("random", "random", deals=6, duplicate=True, rules="cutthroat", workers=1)
    assert same.score_diff.mean == 0 and same.rules == "cutthroat"
    r = evaluate("random", "random:seed=1", deals=6, rules="cutthroat", workers=1, keep_records=True)
    for record, diff in zip(r.records, r.unit_diffs):
        change = record["hands"][0]["score_change"]
        assert len(change) == 4 and diff == change[0] + change[2] - change[1] - change[3]
    assert evaluate("random", "random:seed=1", games=2, rules="cutthroat", workers=1).teams["A"].games == 2


def test_crossplay_matrix_and_heat_map(tmp_path, capsys):
    result = crossplay(["random", "random:seed=1"], reference="random:seed=2", deals=6, duplicate=True,
                       workers=1)
    matrix = result.matrix()
    assert len(matrix) == 2 and all(len(row) == 2 for row in matrix)
    assert result.cells[0][1].team_a == "random + random:seed=1" and result.reference == "random:seed=2"
    assert result.self_play == pytest.approx((matrix[0][0] + matrix[1][1]) / 2)
    assert result.cross_play == pytest.approx((matrix[0][1] + matrix[1][0]) / 2)
    assert result.gap.mean == pytest.approx(result.self_play - result.cross_play)
    png = result.plot(tmp_path / "cp.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "seat 0 \\ seat 2" in result.format()
    # The command line: matrix printed, JSON written, the PNG next to it.
    out = tmp_path / "cp.json"
    assert main(["--crossplay", "random,random:seed=1", "--reference", "random", "--deals", "4",
                 "--json", str(out), "--quiet", "--workers", "2"]) == 0
    printed = capsys.readouterr().out
    assert "self-play" in printed and "cross-play" in printed
    data = json.loads(out.read_text())
    assert len(data["score_diff"]) == 2 and data["reference"] == "random"
    assert (tmp_path / "cp.png").read_bytes()[:4] == b"\x89PNG"
    # The gap is paired by deal: with one hand per deal it is the paired t interval.
    paired = [(result.cells[0][0].unit_diffs[u] + result.cells[1][1].unit_diffs[u]) / 2
              - (result.cells[0][1].unit_diffs[u] + result.cells[1][0].unit_diffs[u]) / 2 for u in range(6)]
    direct = ev.mean_interval(paired)
    assert (result.gap.low, result.gap.high) == (pytest.approx(direct.low), pytest.approx(direct.high))
    games = crossplay(["random", "random:seed=1"], reference="random", games=2, workers=1)
    assert games.gap.mean == pytest.approx(games.self_play - games.cross_play)
    assert games.to_dict()["win_rate"] is not None and "won" in games.format()
    solo = crossplay(["random"], reference="random", deals=3, duplicate=True, workers=1)
    assert solo.matrix() == [[0.0]] and solo.gap is None


@needs_heuristic
def test_compare_is_paired_by_deal(tmp_path, capsys):
    """Candidate and baseline meet the opponent on the same deals: each side equals its own match,
    and the difference is the paired t interval over the deals."""
    kw = dict(deals=12, duplicate=True, seed=3, workers=1)
    c = compare("heuristic", "random:seed=4", "random", **kw)
    alone_c, alone_b = evaluate("heuristic", "random", **kw), evaluate("random:seed=4", "random", **kw)
    assert c.candidate.unit_diffs == alone_c.unit_diffs and c.baseline.unit_diffs == alone_b.unit_diffs
    paired = ev.mean_interval([x - y for x, y in zip(alone_c.unit_diffs, alone_b.unit_diffs)])
    assert c.difference.mean == pytest.approx(alone_c.score_diff.mean - alone_b.score_diff.mean)
    assert (c.difference.low, c.difference.high) == (pytest.approx(paired.low), pytest.approx(paired.high))
    assert c.difference.low > 100 and c.difference.method == "paired by deal"
    assert sum(c.hand_kinds_difference().values()) == pytest.approx(c.difference.mean)
    assert c.win_rate_difference is None
    # A team compared with itself: exactly nothing to tell apart.
    same = compare("random:seed=4", "random:seed=4", "heuristic", **kw)
    assert same.difference.mean == 0 and same.difference.p_value == 1.0
    with pytest.raises(EvaluationError, match="confidence=1.5"):
        compare("random", "random", "random", deals=2, confidence=1.5)
    # Games: paired by game, total points over total hands, and the win rates.
    g = compare("heuristic", "random", "random", games=3, duplicate=True, seed=1, workers=1)
    direct = ev.contrast_interval([(1.0, g.candidate.unit_points, g.candidate.unit_hands),
                                   (-1.0, g.baseline.unit_points, g.baseline.unit_hands)])
    assert (g.difference.mean, g.difference.low) == (pytest.approx(direct.mean), pytest.approx(direct.low))
    assert g.difference.mean == pytest.approx(g.candidate.score_diff.mean - g.baseline.score_diff.mean)
    assert g.win_rate_difference.mean == pytest.approx(g.candidate.win_rate.mean - g.baseline.win_rate.mean)
    assert "games won, difference" in g.format()
    # The command line.
    out = tmp_path / "cmp.json"
    assert main(["--team-a", "heuristic", "--baseline", "random", "--team-b", "random", "--deals", "4",
                 "--duplicate", "--json", str(out), "--quiet", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "candidate minus baseline" in printed and "where the difference comes from" in printed
    data = json.loads(out.read_text())
    assert data["opponent"] == "random" and data["candidate"]["team_a"] == "heuristic"
    assert data["baseline"]["team_a"] == "random" and data["difference"]["n"] == 4


@needs_heuristic
def test_heuristic_beats_random():
    r = evaluate("heuristic", "random", deals=12, duplicate=True, workers=1)
    assert r.score_diff.low > 0
    assert r.teams["A"].make_rate > r.teams["B"].make_rate


def test_rules_from_a_yaml_file(tmp_path):
    rules = tmp_path / "short.yaml"
    rules.write_text("preset: basic\ntarget_score: 150\nmercy_score: null\nmax_hands: 3\n")
    r = evaluate("random", "random:seed=1", games=2, rules=str(rules), workers=1)
    assert r.rules == "short" and r.rules_settings["target_score"] == 150
    assert r.teams["A"].nil_bids == 0 and r.hands <= 6   # basic: no nil; at most 3 hands a game


def test_the_crossplay_plot_beside_json_is_checked_before_any_play(tmp_path, capsys):
    """--crossplay draws its table beside --json (out.png): a folder there is refused at once."""
    (tmp_path / "out.png").mkdir()
    code = main(["--crossplay", "random", "heuristic", "--reference", "random", "--deals", "2", "--workers", "1",
                 "--json", str(tmp_path / "out.json"), "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--plot" in err and "out.png" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()
