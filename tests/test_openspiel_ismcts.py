"""tools/openspiel_ismcts.py: the resampler OpenSpiel's ISMCTS is given, and the side-by-side match."""

from __future__ import annotations

import random

import pytest

pyspiel = pytest.importorskip("pyspiel")
pytest.importorskip("open_spiel.python.algorithms.ismcts")

from tools.openspiel_ismcts import (NUM_CARDS, main, openspiel_game, public_history,  # noqa: E402
                                    run_match, sample_world)


def _random_states(count: int, seed: int):
    """States after random play, at every stage of a hand (bidding included)."""
    game = openspiel_game()
    rng = random.Random(seed)
    for _ in range(count):
        state = game.new_initial_state()
        state.set_current_scores([rng.randint(-200, 400), rng.randint(-200, 400)])
        while state.is_chance_node():
            state.apply_action(rng.choice(state.legal_actions()))
        for _ in range(rng.randint(0, 55)):
            state.apply_action(rng.choice(state.legal_actions()))
        yield game, state


def test_public_history_places_every_card_with_its_player():
    # The seat of each played card is the one that held it in the real deal.
    for _, state in _random_states(60, seed=1):
        history = state.history()
        dealt, played, void = public_history(history)
        for seat in range(4):
            assert set(played[seat]) <= set(dealt[seat])
            for suit in void[seat]:      # a suit shown lacking is really gone from the hand
                left = set(dealt[seat]) - set(played[seat])
                assert all(c // 13 != suit for c in left)


def test_sampled_worlds_look_the_same_to_the_seat_and_keep_voids():
    changed = 0
    for game, state in _random_states(60, seed=2):
        player = state.current_player()
        truth = state.history()[:NUM_CARDS]
        for i in range(3):
            world = sample_world(state, player, random.Random(i), game)
            assert world.observation_string(player) == state.observation_string(player)
            assert sorted(world.legal_actions()) == sorted(state.legal_actions())
            dealt, played, void = public_history(world.history())
            for seat in range(4):
                left = set(dealt[seat]) - set(played[seat])
                assert not any(c // 13 in void[seat] for c in left)
            changed += world.history()[:NUM_CARDS] != truth
    assert changed > 100        # the unseen cards really are dealt again


def test_a_duplicate_deal_is_played_both_ways_and_scored_by_openspiel():
    import agents
    seen = []
    result = run_match({"heuristic": agents.make("heuristic"), "random": agents.make("random", seed=0)}, 1, 5,
                       200.0, 0, progress=lambda line: None, checkpoint=seen.append)
    assert seen == [result] and result["deals"] == 1
    for spec in ("heuristic", "random"):
        assert result["agents"][spec]["difference_per_hand"]["n"] == 1
        assert result["agents"][spec]["ms_a_card_decision"]["ismcts"]["n"] > 0


def test_a_bad_agent_is_one_line_and_exit_2(capsys):
    assert main(["--agent", "no_such_agent", "--deals", "1"]) == 2
    err = capsys.readouterr().err
    assert "no_such_agent" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        main(["--deals", "0"])
    assert exc.value.code == 2
