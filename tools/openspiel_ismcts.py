"""``python -m tools.openspiel_ismcts``: our agents against OpenSpiel's ISMCTS on OpenSpiel's ``spades``.

OpenSpiel ships an information-set MCTS (``open_spiel.python.algorithms.ismcts``, random play-out
evaluator) but its ``spades`` implements neither ``InformationStateString`` nor
``ResampleFromInfostate``, which that search needs. The bot takes the two the way OpenSpiel
provides for such games: ``use_observation_string=True`` (spades' observation string holds the
seat's hand, every bid and every trick played, so it is the information state) and
``set_resampler`` with :func:`sample_world`, which deals the unseen cards again consistently with
what the seat to act has seen (its own cards, the cards played, the suits each seat has shown it
lacks). Everything else is OpenSpiel's as shipped: its tree policy, its play-outs, its engine.

Hands are played side by side, the way tests/spades_env/test_openspiel_agreement.py drives the two
engines: our ``rules="openspiel"`` env and a pyspiel state get the same deal and every action;
at each decision the legal moves are compared, our agent reads our env, ISMCTS reads the pyspiel
state, and the hand's score is OpenSpiel's ``returns()`` (checked equal to ours). Each deal is
played twice, our agent on seats 0+2 and then on 1+3 (duplicate), from a 0-0 score.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Optional, Sequence

NUM_CARDS = 52
BID_BASE = 52
SUITS = 4


def _suit(card: int) -> int:
    return card // 13


def _rank(card: int) -> int:
    return card % 13


def public_history(history: Sequence[int]):
    """From a pyspiel spades history: each seat's dealt cards, the seat of every card played, the
    cards played by each seat, and the suits each seat has shown it no longer holds."""
    dealt = [[c for i, c in enumerate(history[:NUM_CARDS]) if i % 4 == seat] for seat in range(4)]
    cards = [a for a in history[NUM_CARDS:] if a < BID_BASE]
    played: list[list[int]] = [[] for _ in range(4)]
    void = [set() for _ in range(4)]
    leader, broken, trick = 0, False, []     # OpenSpiel: seat 0 leads the first trick
    for card in cards:
        seat = leader if not trick else (trick[0][0] + len(trick)) % 4
        if not trick and _suit(card) == 3 and not broken:
            void[seat].update((0, 1, 2))     # spades led before they broke: it held nothing else
        elif trick and _suit(card) != _suit(trick[0][1]):
            void[seat].add(_suit(trick[0][1]))
        broken = broken or _suit(card) == 3
        trick.append((seat, card))
        played[seat].append(card)
        if len(trick) == 4:
            led = _suit(trick[0][1])
            leader = max(trick, key=lambda t: (_suit(t[1]) == 3, _suit(t[1]) == led, _rank(t[1])))[0]
            trick = []
    return dealt, played, void


def sample_world(state, player: int, rng: random.Random, game=None):
    """A pyspiel state ``player`` cannot tell from ``state``: the cards it has not seen dealt
    again at random (each seat's count kept, no card of a suit it has shown it lacks), the same
    scores, bids and play. Seats are filled most constrained card first, a seat drawn in
    proportion to its free places (close to uniform over consistent deals)."""
    history = state.history()
    dealt, played, void = public_history(history)
    seen = set(dealt[player]).union(*map(set, played))
    unseen = [c for c in range(NUM_CARDS) if c not in seen]
    others = [s for s in range(4) if s != player]
    need0 = {s: len(dealt[s]) - len(played[s]) for s in others}
    for _ in range(1000):
        rng.shuffle(unseen)
        unseen.sort(key=lambda c: sum(_suit(c) not in void[s] for s in others))
        need = dict(need0)
        hands = {s: list(played[s]) for s in others}
        for card in unseen:
            seats = [s for s in others if need[s] and _suit(card) not in void[s]]
            if not seats:
                break
            seat = rng.choices(seats, weights=[need[s] for s in seats])[0]
            hands[seat].append(card)
            need[seat] -= 1
        else:
            break
    else:
        raise RuntimeError("sample_world: no deal consistent with the play found in 1000 tries")
    hands[player] = list(dealt[player])
    world = (game or state.get_game()).new_initial_state()
    world.set_current_scores(list(state.get_current_scores()))
    for j in range(13):
        for seat in range(4):
            world.apply_action(hands[seat][j])
    for action in history[NUM_CARDS:]:
        world.apply_action(action)
    return world


def openspiel_game():
    """OpenSpiel's ``spades`` with returns that are the hand's scores (no game-over bonus)."""
    import pyspiel
    return pyspiel.load_game("spades", {"win_or_loss_bonus": 0})


def make_ismcts(game, simulations: int, uct_c: float, seed: int):
    """OpenSpiel's ISMCTS bot (random play-outs, most visited move), resampling with :func:`sample_world`."""
    import numpy as np
    from open_spiel.python.algorithms import ismcts, mcts

    random_state = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=random_state)
    bot = ismcts.ISMCTSBot(game, evaluator, uct_c, simulations, random_state=random_state,
                           final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
                           use_observation_string=True)
    rng = random.Random(seed)
    bot.set_resampler(lambda state, player: sample_world(state, player, rng, game))
    return bot


def play_hand(env, game, deal, ours_side: int, agent, bot, stats: dict) -> list[int]:
    """One hand from 0-0, ``agent`` on the seats of side ``ours_side``, ``bot`` on the others;
    the two sides' hand scores (OpenSpiel's returns, checked equal to ours)."""
    env.reset(seed=0, options={"deal": [list(h) for h in deal], "scores": [0, 0]})
    agent.reset(seed=stats["hands"])
    state = game.new_initial_state()
    for j in range(13):
        for seat in range(4):
            state.apply_action(deal[seat][j])
    while not state.is_terminal():
        seat = state.current_player()
        obs, _, _, _, info = env.last()
        legal = sorted(state.legal_actions())
        if [int(a) for a in obs["action_mask"].nonzero()[0]] != legal:
            raise RuntimeError(f"legal moves differ from OpenSpiel's at {state.history()}")
        start = time.perf_counter()
        action = int(agent.act(obs, info)) if seat % 2 == ours_side else int(bot.step(state))
        if len(legal) > 1 and legal[0] < BID_BASE:
            stats["ms_ours" if seat % 2 == ours_side else "ms_ismcts"].append(1e3 * (time.perf_counter() - start))
        env.step(action)
        state.apply_action(action)
    returns = [int(r) for r in state.returns()[:2]]
    ours = env.unwrapped.game.hand_records[-1]["score_change"]
    if list(ours) != returns:
        raise RuntimeError(f"hand scores differ: ours {ours}, OpenSpiel's {returns}")
    game_state = env.unwrapped.game
    for side in range(2):
        who = "ours" if side == ours_side else "ismcts"
        members = (side, side + 2)
        contract = sum(game_state.bids[s] for s in members if game_state.bids[s] > 0)
        if contract:   # the side's tricks, a nil partner's included, against its non-nil bids
            stats[f"contracts_{who}"].append(sum(game_state.tricks_taken[s] for s in members) >= contract)
        for s in members:
            if game_state.bids[s] == 0:
                stats[f"nils_{who}"].append(game_state.tricks_taken[s] == 0)
    stats["hands"] += 1
    return returns


def _share(values: list) -> Optional[dict]:
    from evaluation.statistics import wilson_interval
    if not values:
        return None
    iv = wilson_interval(sum(values), len(values))
    return {"rate": sum(values) / len(values), "low": iv.low, "high": iv.high, "n": len(values)}


def _timing(values: list) -> Optional[dict]:
    values = sorted(values)
    if not values:
        return None
    return {"mean": sum(values) / len(values), "median": values[len(values) // 2],
            "p99": values[min(len(values) - 1, int(0.99 * len(values)))], "n": len(values)}


def run_match(agents: dict, deals: int, simulations: int, uct_c: float, seed: int,
              progress=print, checkpoint=None) -> dict:
    """``deals`` duplicate deals of each agent of ``agents`` (spec -> agent, all on the same deals)
    against OpenSpiel's ISMCTS; per agent the per-deal difference (ours minus ISMCTS, a hand, both
    seatings averaged) with its 95% interval. ``checkpoint(result)`` gets the result so far after
    every deal (a long run stopped early keeps what it played)."""
    from evaluation.statistics import mean_interval
    from spades_env import spades_v0

    game = openspiel_game()
    env = spades_v0.raw_env(rules="openspiel", reward_scale=1.0)
    bot = make_ismcts(game, simulations, uct_c, seed)
    stats = {spec: {"hands": 0, "ms_ours": [], "ms_ismcts": [], "contracts_ours": [], "contracts_ismcts": [],
                    "nils_ours": [], "nils_ismcts": [], "differences": []} for spec in agents}
    rng = random.Random(seed)
    start = time.time()
    result: dict = {}
    for d in range(deals):
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        deal = [sorted(deck[p::4]) for p in range(4)]
        for spec, agent in agents.items():
            pair = []
            for ours_side in (0, 1):
                scores = play_hand(env, game, deal, ours_side, agent, bot, stats[spec])
                pair.append(scores[ours_side] - scores[1 - ours_side])
            stats[spec]["differences"].append(sum(pair) / 2)
        result = {"deals": d + 1, "seed": seed, "seconds": time.time() - start,
                  "ismcts": {"simulations": simulations, "uct_c": uct_c, "evaluator": "one random play-out",
                             "final_policy": "most visited", "key": "observation string"},
                  "agents": {spec: {"difference_per_hand": mean_interval(st["differences"]).to_dict(),
                                    "contracts_made": {"ours": _share(st["contracts_ours"]),
                                                       "ismcts": _share(st["contracts_ismcts"])},
                                    "nils_made": {"ours": _share(st["nils_ours"]), "ismcts": _share(st["nils_ismcts"])},
                                    "ms_a_card_decision": {"ours": _timing(st["ms_ours"]),
                                                           "ismcts": _timing(st["ms_ismcts"])},
                                    "per_deal": st["differences"]}
                             for spec, st in stats.items()}}
        if checkpoint is not None:
            checkpoint(result)
        lines = []
        for spec, st in stats.items():
            iv = mean_interval(st["differences"])
            bounds = "" if iv.low is None else f" [{iv.low:+.2f}, {iv.high:+.2f}]"
            lines.append(f"{spec} - ISMCTS {iv.mean:+.2f} a hand{bounds}")
        progress(f"  {d + 1}/{deals} deals, {time.time() - start:.0f} s: " + "; ".join(lines))
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.openspiel_ismcts", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", action="append",
                        help="our agent, a spades-eval spec; repeat it for several on the same deals (default: search)")
    parser.add_argument("--deals", type=int, default=20, help="duplicate deals, each played twice (default 20)")
    parser.add_argument("--simulations", type=int, default=1000, help="ISMCTS simulations a decision (default 1000)")
    parser.add_argument("--uct-c", type=float, default=200.0,
                        help="ISMCTS exploration constant, in points (default 200: returns span -230..230)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    if args.deals < 1 or args.simulations < 1 or args.uct_c < 0:
        parser.error("--deals and --simulations must be at least 1, --uct-c at least 0")
    try:
        import pyspiel  # noqa: F401
        from open_spiel.python.algorithms import ismcts  # noqa: F401
    except ImportError:
        print("open_spiel is not installed: pip install open_spiel", file=sys.stderr)
        return 2
    from evaluation.matches import EvaluationError, Player
    from spades_env.files import check_output, write_json
    agents = {}
    for spec in args.agent or ["search"]:
        try:
            agents[spec] = Player.of(spec).factory()
        except (EvaluationError, ValueError, TypeError) as exc:
            print(f"--agent {spec!r}: {exc}", file=sys.stderr)
            return 2
    if args.json:
        try:
            check_output(args.json, "--json")
        except (OSError, ValueError) as exc:
            print(str(exc), file=sys.stderr)
            return 2
    checkpoint = (lambda result: write_json(args.json, result, "--json")) if args.json else None
    result = run_match(agents, args.deals, args.simulations, args.uct_c, args.seed,
                       progress=lambda line: print(line, file=sys.stderr, flush=True), checkpoint=checkpoint)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
