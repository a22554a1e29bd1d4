"""The text and picture reports of ``spades-eval``: a match, a cross-play table (and its heat
map), a paired comparison. They read the result objects of :mod:`evaluation.results`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

from .outcomes import HAND_KINDS
from .statistics import Interval
from spades_env.files import save_figure

# What is printed: the result classes of evaluation.results (which print themselves with these
# functions, so this module does not import them).
MatchResult = ComparisonResult = CrossplayResult = TeamStats = Any

# ---------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------

def _signed(x: Optional[float], digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}"


def _plain(x: Optional[float], digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _p(p: Optional[float]) -> str:
    if p is None:
        return ""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _interval_line(label: str, iv: Interval, signed: bool = True, percent: bool = False,
                   level: float = 0.95) -> str:
    if percent:
        fmt = _pct
    else:
        fmt = _signed if signed else _plain
    ci = "n/a (needs 2+ units)" if iv.low is None else f"[{fmt(iv.low)}, {fmt(iv.high)}]"
    extra = f", {_p(iv.p_value)}" if iv.p_value is not None else ""
    return f"{label:<32}{fmt(iv.mean):>9}   {round(100 * level)}% CI {ci}   ({iv.method}, n={iv.n}{extra})"


def _table(rows: list[tuple[str, ...]], head: tuple[str, ...]) -> list[str]:
    """Text table lines: the header, a rule, the rows; the first column left-aligned, the others right."""
    widths = [max(len(row[i]) for row in rows + [head]) for i in range(len(head))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths)))
    return [line(head), "-" * (sum(widths) + 2 * (len(head) - 1))] + [line(row) for row in rows]


START_LABELS = {"zero": "at 0-0 with no bags", "real": "from real game states (scores, bags, dealer)"}
POINT_KIND_LABELS = {"contracts": "contracts", "overtricks": "overtricks", "nils": "nils",
                     "blind_nils": "blind nils", "bag_penalties": "bag penalties"}


def format_match(r: MatchResult) -> str:
    """The printed report: the headline numbers with intervals, then a per-team table."""
    unit = "deal" if r.mode == "hands" else "game"
    plays = " x 2 (duplicate: teams swap seats over the same cards)" if r.duplicate else ""
    lines = [f"Team A (seats 0+2): {r.team_a}", f"Team B (seats 1+3): {r.team_b}",
             f"rules {r.rules}, {r.mode} mode, {r.units} {unit}{'s' if r.units != 1 else ''}{plays}, "
             f"seed {r.seed}, {r.hands} hands played"
             + (f", start scores A {r.start_scores[0]} / B {r.start_scores[1]}" if r.start_scores else "")
             + (f", hands start {START_LABELS.get(r.start, r.start)}" if r.mode == "hands" else ""), ""]
    lines.append(_interval_line("score difference per hand (A-B)", r.score_diff, level=r.confidence))
    if r.mode == "games":
        lines.append(_interval_line("points per game (A-B)", r.game_diff, level=r.confidence))
        lines.append(_interval_line("A's game win rate", r.win_rate, percent=True, level=r.confidence))
        lines.append(f"{'hands per game':<32}{r.hands_per_game:>9.2f}")
    lines.append("")
    a, b = r.teams["A"], r.teams["B"]

    def both(f: Callable[[TeamStats], str]) -> tuple[str, str]:
        return f(a), f(b)

    rows = [
        ("hands played", *both(lambda t: str(t.hands))),
        ("points per hand", *both(lambda t: _signed(t.points_per_hand))),
        ("contracts made", *both(lambda t: f"{t.contracts_made}/{t.contracts} ({_pct(t.make_rate)})")),
        ("contracts set", *both(lambda t: str(t.contracts_set))),
        ("tricks - contract, mean", *both(lambda t: _signed(t.bid_error_mean))),
        ("tricks - contract, mean |.|", *both(lambda t: _plain(t.bid_error_abs_mean))),
        ("nil kept / bid", *both(lambda t: f"{t.nil_kept}/{t.nil_bids} ({_pct(t.nil_rate)})")),
        ("blind nil kept / bid", *both(lambda t: f"{t.blind_nil_kept}/{t.blind_nil_bids} ({_pct(t.blind_nil_rate)})")),
        ("bags per hand", *both(lambda t: _plain(t.bags_per_hand))),
    ]
    rows.append(("bag penalties", *both(lambda t: str(t.bag_penalties))))
    for kind, label in POINT_KIND_LABELS.items():
        rows.append((f"points per hand: {label}", *both(lambda t, k=kind: _signed(t.points_by_kind_per_hand.get(k)))))
    if r.mode == "games":
        rows.append(("games won / lost / tied", *both(lambda t: f"{t.wins}/{t.losses}/{t.ties}")))
        rows.append(("won by a bag-out / blind nil", *both(lambda t: f"{t.wins_by_bag_out}/{t.wins_by_blind_nil}")))
        of = "" if r.wins_from_behind_note is None else f" (of {r.wins_from_behind_games} games)"
        rows.append((f"won from behind in the last hand{of}", *both(lambda t: str(t.wins_from_behind))))
    rows.append(("time per decision", *both(lambda t: _duration(t.seconds_per_decision))))
    lines += _table(rows, ("", f"A: {r.team_a}", f"B: {r.team_b}"))
    if r.hand_kinds:
        kinds = [(kind, k) for kind, k in r.hand_kinds.items() if k["hands"]]
        head = ("where the points come from", "hands", "share", "A-B in them", "A-B per hand")
        rows = [(kind, str(k["hands"]), _pct(k["share"]), _signed(k["mean_diff"], 1), _signed(k["points_per_hand"]))
                for kind, k in kinds]
        lines += [""] + _table(rows, head)
    if r.wins_from_behind_note:
        lines += ["", f"note: {r.wins_from_behind_note}"]
    if r.elapsed_s is not None:
        lines += ["", f"{r.hands} hands in {r.elapsed_s:.2f} s ({r.hands_per_s:,.0f} hands/s, {r.workers} worker"
                  f"{'s' if r.workers != 1 else ''})"]
    return "\n".join(lines)


def format_crossplay(c: CrossplayResult) -> str:
    first = c.cells[0][0]
    unit = "deals" if first.mode == "hands" else "games"
    lines = [f"Cross-play against {c.reference} (seats 1+3): rows = partner on seat 0, "
             f"columns = partner on seat 2",
             f"rules {first.rules}, {first.mode} mode, {first.units} {unit}"
             f"{' x 2 (duplicate)' if first.duplicate else ''} per cell, seed {first.seed}"
             f"{', hands from real game states' if first.start == 'real' else ''}; "
             f"points per hand minus the reference's, {round(100 * first.confidence)}% CI half-width", ""]
    names = c.agents
    cell_text = [[f"{r.score_diff.mean:+.1f}" + ("" if r.score_diff.half_width is None
                                                  else f" ±{r.score_diff.half_width:.1f}") for r in row]
                 for row in c.cells]
    if first.mode == "games":
        cell_text = [[t + f" ({_pct(r.win_rate.mean)} won)" for t, r in zip(trow, row)]
                     for trow, row in zip(cell_text, c.cells)]
    corner = "seat 0 \\ seat 2"
    w0 = max(len(corner), *(len(n) for n in names))
    widths = [max(len(names[j]), *(len(cell_text[i][j]) for i in range(len(names)))) for j in range(len(names))]
    lines.append(f"{corner:<{w0}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths)))
    lines.append("-" * (w0 + 2 + sum(widths) + 2 * (len(widths) - 1)))
    for i, name in enumerate(names):
        lines.append(f"{name:<{w0}}  " + "  ".join(f"{t:>{w}}" for t, w in zip(cell_text[i], widths)))
    lines.append("")
    lines.append(f"self-play (diagonal) mean  {_signed(c.self_play)}")
    if c.cross_play is not None:
        lines.append(f"cross-play (off-diagonal)  {_signed(c.cross_play)}")
        lines.append(_interval_line("self-play minus cross-play", c.gap, level=first.confidence))
    if c.cooperative_rating is not None:
        from .cooperative_rating import format_cooperative_rating
        lines += ["", format_cooperative_rating(c.cooperative_rating)]
    if c.elapsed_s is not None:
        hands = sum(r.hands for row in c.cells for r in row)
        lines.append(f"\n{hands} hands in {c.elapsed_s:.2f} s ({hands / c.elapsed_s:,.0f} hands/s, "
                     f"{c.workers} worker{'s' if c.workers != 1 else ''})")
    return "\n".join(lines)


def format_comparison(c: ComparisonResult) -> str:
    """The printed report of :func:`compare`: both teams' results, then the paired difference and
    where it comes from."""
    cand, base = c.candidate, c.baseline
    unit = "deal" if cand.mode == "hands" else "game"
    plays = " x 2 (duplicate)" if cand.duplicate else ""
    lines = [f"Candidate: {cand.team_a}", f"Baseline:  {base.team_a}",
             f"Opponent:  {cand.team_b} (seats 1+3; the candidate and the baseline take seats 0+2 in turn)",
             f"rules {cand.rules}, {cand.mode} mode, {cand.units} {unit}{'s' if cand.units != 1 else ''}{plays}, "
             f"seed {cand.seed}: the same deals for both"
             + (f", start scores {cand.start_scores[0]} / {cand.start_scores[1]}" if cand.start_scores else "")
             + (f", hands start {START_LABELS.get(cand.start, cand.start)}" if cand.mode == "hands" else ""), ""]

    def ci(iv: Optional[Interval], fmt: Callable[[Optional[float]], str] = _signed) -> str:
        if iv is None:
            return "n/a"
        return fmt(iv.mean) + ("" if iv.low is None else f" [{fmt(iv.low)}, {fmt(iv.high)}]")

    a, b = cand.teams["A"], base.teams["A"]
    rows = [("points per hand vs opponent", ci(cand.score_diff), ci(base.score_diff))]
    if cand.mode == "games":
        rows.append(("games won", ci(cand.win_rate, _pct), ci(base.win_rate, _pct)))
    rows += [
        ("contracts made", _pct(a.make_rate), _pct(b.make_rate)),
        ("opponent's contracts made", _pct(cand.teams["B"].make_rate), _pct(base.teams["B"].make_rate)),
        ("nil kept / bid", f"{a.nil_kept}/{a.nil_bids}", f"{b.nil_kept}/{b.nil_bids}"),
        ("bags per hand", _plain(a.bags_per_hand), _plain(b.bags_per_hand)),
        ("time per decision", _duration(a.seconds_per_decision), _duration(b.seconds_per_decision)),
    ]
    lines += _table(rows, ("", "candidate", "baseline"))
    lines += ["", _interval_line("candidate minus baseline", c.difference, level=cand.confidence)]
    if c.win_rate_difference is not None:
        lines.append(_interval_line("games won, difference", c.win_rate_difference, percent=True,
                                    level=cand.confidence))
    parts = c.hand_kinds_difference()
    rows = [(kind, _signed(cand.hand_kinds[kind]["points_per_hand"]), _signed(base.hand_kinds[kind]["points_per_hand"]),
             _signed(parts[kind])) for kind in HAND_KINDS
            if cand.hand_kinds[kind]["hands"] or base.hand_kinds[kind]["hands"]]
    lines += [""] + _table(rows, ("where the difference comes from", "candidate", "baseline", "difference"))
    lines.append("(each team's part of its points per hand against the opponent, by kind of hand seen from it)")
    if c.elapsed_s is not None:
        hands = cand.hands + base.hands
        lines.append(f"\n{hands} hands in {c.elapsed_s:.2f} s ({hands / c.elapsed_s:,.0f} hands/s, "
                     f"{c.workers} worker{'s' if c.workers != 1 else ''})")
    return "\n".join(lines)


def plot_crossplay(c: CrossplayResult, path: Union[str, os.PathLike]) -> Path:
    """A heat map of the cross-play matrix (points per hand minus the reference's) as a PNG."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, safe in workers and CI

    values = c.matrix("score_diff")
    n = len(values)
    span = max(1e-9, max(abs(v) for row in values for v in row))
    size = max(4.0, 1.1 * n + 2.5)
    fig = Figure(figsize=(size, size * 0.85), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(values, cmap="RdBu", vmin=-span, vmax=span)
    ax.set_xticks(range(n), c.agents, rotation=30, ha="right")
    ax.set_yticks(range(n), c.agents)
    ax.set_xlabel("partner on seat 2")
    ax.set_ylabel("partner on seat 0")
    first = c.cells[0][0]
    ax.set_title(f"vs {c.reference}: points per hand (A-B)\n{first.rules}, {first.units} "
                 f"{'deals' if first.mode == 'hands' else 'games'}{', duplicate' if first.duplicate else ''}",
                 fontsize=10)
    for i, row in enumerate(c.cells):
        for j, r in enumerate(row):
            hw = r.score_diff.half_width
            text = f"{r.score_diff.mean:+.1f}" + ("" if hw is None else f"\n±{hw:.1f}")
            colour = "white" if abs(r.score_diff.mean) > 0.6 * span else "black"
            ax.text(j, i, text, ha="center", va="center", color=colour, fontsize=9)
    fig.colorbar(image, ax=ax, label="points per hand, team minus reference")
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, "plot", dpi=120)
    return path
