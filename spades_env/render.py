"""A readable picture of the table: hands, bids, the trick in progress, tricks taken, the score."""

from __future__ import annotations

from .cards import card_pretty, format_hand
from .game import (PHASE_BIDDING, PHASE_BLIND_DECISION, PHASE_NAMES, PHASE_PLAY, PHASE_SIGNAL, PHASES_DONE,
                   SpadesGame, action_str)
from .names import SEAT_NAMES, bid_word, side_name  # noqa: F401  (SEAT_NAMES: kept importable here)
from .names import seat_label as seat_name


def bid_text(game: SpadesGame, seat: int) -> str:
    return bid_word(game.bids[seat], bool(game.blind[seat]))


def message_text(game: SpadesGame, seat: int) -> str:
    """The message a seat sent this hand under ``signals: N`` (``"-"`` not yet)."""
    message = game.messages[seat]
    return "-" if message < 0 else str(message)


def render_table(game: SpadesGame, done: bool = False, show_hands: bool = True) -> str:
    """The table as text. ``show_hands`` shows every hand (a spectator's view)."""
    r = game.rules
    n = game.n
    lines = []
    phase = PHASE_NAMES[game.phase]
    lines.append(f"Spades ({r.name}) - hand {game.hand_number}, dealer {seat_name(game.dealer, n)}, phase: {phase}")
    if r.partnerships:
        lines.append(f"Score  {side_name(0, short=True)} {game.scores[0]:>5} ({game.bags[0]} bags)   "
                     f"{side_name(1, short=True)} {game.scores[1]:>5} ({game.bags[1]} bags)   "
                     f"target {r.target_score}")
    else:
        lines.append("Score  " + "   ".join(f"P{s} {game.scores[s]} ({game.bags[s]} bags)" for s in range(n)))
    lines.append("")
    trick = dict(game.current_trick)
    for seat in range(n):
        marker = ">" if (seat == game.to_act and not done and game.phase not in PHASES_DONE) else " "
        hand = format_hand(game.hands[seat], pretty=True) if show_hands else f"{bin(game.hands[seat]).count('1')} cards"
        if not game.looked[seat]:
            hand += "   (not looked at)"
        played = card_pretty(trick[seat]) if seat in trick else ""
        message = f"message {message_text(game, seat):<2} " if r.signals else ""
        lines.append(f"{marker} {seat_name(seat, n):<10} {message}bid {bid_text(game, seat):<9} tricks "
                     f"{game.tricks_taken[seat]:>2}  {played:<4} | {hand}")
    if game.phase == PHASE_PLAY:
        lines.append("")
        broken = "broken" if game.spades_broken else "not broken"
        lines.append(f"Trick {game.tricks_played + 1}/{game.tricks_per_hand}, spades {broken}")
    before_bids = game.phase in (PHASE_SIGNAL, PHASE_BLIND_DECISION, PHASE_BIDDING) and not any(b >= 0 for b in game.bids)
    if game.hands_completed and (game.phase in PHASES_DONE or before_bids):
        last = game.hand_record(-1)
        if "score_change" in last:
            lines.append(f"Last hand (#{last['number']}): score change {last['score_change']}, "
                         f"scores {last['scores']}")
    if game.game_over:
        if game.winner is None:
            lines.append("Game over: tied at the top")
        elif r.partnerships:
            lines.append(f"Game over: {side_name(game.winner)} win"
                         + (" (truncated at max_hands)" if game.truncated else ""))
        else:
            lines.append(f"Game over: player {game.winner} wins")
    elif game.actions:
        seat, action = game.actions[-1]
        lines.append(f"Last action: {seat_name(seat, n)} {action_str(action)}")
    return "\n".join(lines)
