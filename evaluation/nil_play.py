"""How well an agent plays a nil it bid: forced nils on hands fit for one, ducking counted.

Whether a policy bids nil depends on what its nils are worth, and that depends on how it plays
them. This measures the play alone: over seeded deals, the seat whose hand the heuristic's nil
model (:func:`agents.heuristic_decisions.nil_success_chance`, used here only as a yardstick of
the hand) rates at least ``min_chance`` bids nil whatever the agent would have bid; everything
else is the agents' own. Counted while that nil is intact: the turns where the nil seat follows
to a trick and holds a card that would not win it (a chance to duck), and the turns it played a
winning card anyway (a ducking error), by kind (following suit, ruffing, overtaking its partner).
The heuristic makes no ducking errors and keeps about 89% of these nils in self-play; the
scratch policies of 2026-12-02 erred on 14-22% of the chances and kept under 30%
(experiments/2026-12-01-scratch-nil/README.md, 2026-12-03).

    python -m evaluation.nil_play --agent neural:model=zoo_scratch_s1 --hands 150
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any, Optional, Sequence

from agents.heuristic_decisions import nil_success_chance
from agents.specs import make_agent
from spades_env import spades_v0
from spades_env.game import BID_ACTION_BASE, LOOK_ACTION, PHASE_BIDDING, PHASE_BLIND_DECISION, card_beats

from .cli_common import OneLineParser, check_output_file, fail_line, write_text_file
from .outcomes import EvaluationError

NIL_ACTION = BID_ACTION_BASE


def nil_play(agent: str, hands: int = 150, seed: int = 0, min_chance: float = 0.75,
             opponents: Optional[str] = None, max_deals: Optional[int] = None) -> dict[str, Any]:
    """Play ``hands`` hands with a forced nil (module doc); ``agent`` plays the nil seat and its
    partner, ``opponents`` (default: ``agent``) the other side. Returns the counts and shares."""
    if not isinstance(hands, int) or isinstance(hands, bool) or not 1 <= hands <= 100_000:
        raise EvaluationError(f"hands={hands!r}: expected a whole number 1..100,000")
    if not isinstance(min_chance, (int, float)) or not 0.0 <= min_chance < 1.0:
        raise EvaluationError(f"min_chance={min_chance!r}: expected a number in [0, 1)")
    opponents = agent if opponents is None else opponents
    seats = [make_agent(agent if s % 2 == 0 else opponents, seed=seed * 4 + s) for s in range(4)]
    rng = random.Random(seed)
    env = spades_v0.raw_env(rules="standard", episode="hand")
    counts = {"hands": 0, "kept": 0, "duck_chances": 0, "duck_errors": 0, "errors_following": 0,
              "errors_ruffing": 0, "errors_over_partner": 0, "deals_drawn": 0}
    limit = max_deals if max_deals is not None else 200 * hands
    while counts["hands"] < hands:
        if counts["deals_drawn"] >= limit:
            raise EvaluationError(f"nil_play: {counts['hands']} of {hands} hands fit for nil (chance >= {min_chance}) "
                                  f"in {limit} deals; lower --min-chance")
        counts["deals_drawn"] += 1
        deck = list(range(52))
        rng.shuffle(deck)
        deal = [sorted(deck[13 * i:13 * i + 13]) for i in range(4)]
        chances = [nil_success_chance(hand) for hand in deal]
        best = max(range(4), key=lambda s: chances[s])
        if chances[best] < min_chance:
            continue
        # The nil seat is seat 0 (the agent's side), so the deal is rotated to put that hand there.
        deal = deal[best:] + deal[:best]
        env.reset(seed=rng.randrange(2**31), options={"deal": deal, "dealer": rng.randrange(4)})
        game = env.unwrapped.game
        counts["hands"] += 1
        for name in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            seat = int(name[-1])
            action = seats[seat].act(obs, info)
            if seat == 0 and game.phase in (PHASE_BIDDING, PHASE_BLIND_DECISION) and action != NIL_ACTION:
                if game.phase == PHASE_BLIND_DECISION:
                    action = LOOK_ACTION                # look at the cards; the nil is bid next
                elif obs["action_mask"][NIL_ACTION]:
                    action = NIL_ACTION
            elif seat == 0 and action < 52 and game.bids[0] == 0 and game.tricks_taken[0] == 0 and game.trick_cards:
                winner = game.win_card
                legal = [c for c in range(52) if obs["action_mask"][c]]
                if any(not card_beats(c, winner) for c in legal):
                    counts["duck_chances"] += 1
                    if card_beats(action, winner):
                        counts["duck_errors"] += 1
                        led = game.trick_cards[0] // 13
                        counts["errors_following" if action // 13 == led else "errors_ruffing"] += 1
                        if game.win_seat == 2:
                            counts["errors_over_partner"] += 1
            env.step(action)
        counts["kept"] += game.bids[0] == 0 and game.tricks_taken[0] == 0
    return {"agent": agent, "opponents": opponents, "seed": seed, "min_chance": min_chance, **counts,
            "kept_share": counts["kept"] / counts["hands"],
            "duck_error_share": counts["duck_errors"] / max(1, counts["duck_chances"])}


def format_nil_play(result: dict[str, Any]) -> str:
    return (f"{result['agent']} (opponents {result['opponents']}): {result['kept']}/{result['hands']} forced nils "
            f"kept ({100 * result['kept_share']:.1f}%); a winning card played on {result['duck_errors']} of "
            f"{result['duck_chances']} chances to duck ({100 * result['duck_error_share']:.1f}%: "
            f"{result['errors_following']} following suit, {result['errors_ruffing']} ruffing, "
            f"{result['errors_over_partner']} over its partner's winner)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m evaluation.nil_play", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", required=True, help="the agent spec playing the nil seat and its partner")
    parser.add_argument("--opponents", default=None, help="the other side's agent spec (default: --agent)")
    parser.add_argument("--hands", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-chance", type=float, default=0.75,
                        help="hands whose nil the heuristic's model rates at least this (default 0.75)")
    parser.add_argument("--json", default=None, help="also write the result as JSON")
    args = parser.parse_args(argv)
    try:
        if args.json:
            check_output_file(args.json, "--json")
        result = nil_play(args.agent, args.hands, args.seed, args.min_chance, args.opponents)
    except (EvaluationError, ValueError) as exc:
        return fail_line(parser.prog, exc)
    print(format_nil_play(result))
    if args.json:
        write_text_file(args.json, json.dumps(result, indent=1) + "\n", "--json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
