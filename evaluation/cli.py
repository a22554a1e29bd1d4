"""The ``spades-eval`` command line: parses the arguments, runs :mod:`evaluation.results`'s
matches, prints their reports and writes ``--json``. Every error is one line and exit code 2."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from spades_env.rules import RulesError
from spades_env.starts import hand_start_names

from .cli_common import OneLineParser, add_progress_flags, check_output_file, write_text_file
from .outcomes import EvaluationError
from .report import plot_crossplay
from .results import compare, crossplay, evaluate

# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def split_spec_list(items: Sequence[str]) -> list[str]:
    """Agent specs from ``--crossplay`` arguments, comma- and/or space-separated.

    A comma-separated piece that holds ``=`` but no ``:`` continues the previous spec's options:
    ``"search:worlds=20,seed=3,heuristic"`` -> ``["search:worlds=20,seed=3", "heuristic"]``.
    """
    specs: list[str] = []
    for item in items:
        for piece in item.split(","):
            piece = piece.strip()
            if not piece:
                continue
            if "=" in piece and ":" not in piece.split("=", 1)[0]:
                if not specs or ":" not in specs[-1]:
                    raise EvaluationError(f"--crossplay: option {piece!r} does not follow an agent spec "
                                          "(expected NAME or NAME:key=value,...)")
                specs[-1] += "," + piece
            else:
                specs.append(piece)
    return specs


def _team_arg(values: Optional[list[str]], flag: str) -> Any:
    if not values:
        return None
    if len(values) > 2:
        raise EvaluationError(f"{flag}: expected one agent spec, or two (seat 0/1 partner, seat 2/3 partner), "
                              f"got {len(values)}")
    return values[0] if len(values) == 1 else tuple(values)


def _start_scores_arg(text: Optional[str]) -> Optional[tuple[int, int]]:
    if text is None:
        return None
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise EvaluationError(f"--start-scores {text!r}: expected two integers A,B (e.g. 0,150)") from None
    return a, b


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="spades-eval", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Play team A (seats 0+2) against team B (seats 1+3) over seeded deals and print the "
                    "score difference with confidence intervals and per-team statistics.",
        epilog="Agent specs: NAME or NAME:key=value,... (values parsed as int, float, true/false, "
               "none or text), e.g. heuristic, search:worlds=20,seed=3, neural:checkpoint=runs/x/model.pt.\n"
               "Give two specs to --team-a/--team-b for different partners (seat 0/1, seat 2/3).\n"
               "Results do not depend on --workers or --ray. Exit status 2 on bad input.")
    parser.add_argument("--team-a", nargs="+", metavar="SPEC", help="team A (seats 0+2): one spec, or two")
    parser.add_argument("--team-b", nargs="+", metavar="SPEC", help="team B (seats 1+3): one spec, or two")
    count = parser.add_mutually_exclusive_group()
    count.add_argument("--deals", type=int, metavar="N", help="single hands over N seeded deals (default 100)")
    count.add_argument("--hands", type=int, metavar="N", help="the same as --deals")
    count.add_argument("--games", type=int, metavar="N", help="N whole games to the target score instead")
    parser.add_argument("--duplicate", action="store_true",
                        help="play every deal (game seed) twice, teams swapping seats over the same cards")
    parser.add_argument("--seed", type=int, default=0, help="match seed (default 0)")
    parser.add_argument("--rules", default="standard", help="rules preset or YAML file (default standard)")
    parser.add_argument("--start-scores", metavar="A,B",
                        help="team scores at the start of every hand/game (e.g. 0,150 lets A bid blind nil), each "
                             "strictly between the rules' mercy score and target; a negative first score is written "
                             "--start-scores=-150,0")
    parser.add_argument("--start", default="zero", choices=hand_start_names(),
                        help="single hands (--deals): where every hand starts: zero (0-0, no bags; the default) or "
                             "real (scores, bags and dealer drawn from the states whole games between the baselines "
                             "reach: blind nil and the bag limit come up as in a game); with --duplicate both plays "
                             "of a deal start from the same table, each team once on either side")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--workers", type=int, metavar="N", help="processes (default: the CPUs available)")
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help="play on a Ray cluster: ADDRESS (host:port, or auto), or without one a Ray instance "
                             "started here with --workers CPUs; the same results as --workers 1 (needs "
                             "spades-rl[ray])")
    parser.add_argument("--journal", metavar="FILE",
                        help="write every finished deal to FILE as it finishes; the same command again resumes a "
                             "killed match from it, to the same result")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    parser.add_argument("--records", metavar="FILE", help="write every play's game record (JSON list)")
    parser.add_argument("--baseline", nargs="+", metavar="SPEC",
                        help="compare: this team (one spec, or two) also plays --team-b on the same deals, and "
                             "team A minus it is reported paired by deal")
    parser.add_argument("--crossplay", nargs="+", metavar="SPEC",
                        help="cross-play: every pair of these agents as partners against --reference")
    parser.add_argument("--reference", metavar="SPEC",
                        help="crossplay opponent team (default heuristic if registered, else random)")
    parser.add_argument("--plot", metavar="FILE",
                        help="crossplay heat map PNG (default: next to --json, else crossplay.png)")
    add_progress_flags(parser)          # --no-progress, alias --quiet (every command takes both)
    return parser


def _write_json(path: str, data: Any, flag: str = "--json") -> None:
    write_text_file(path, json.dumps(data, indent=1), flag)     # a failed write is one line too


def _stop(signum, frame) -> None:
    """Ctrl-C or SIGTERM: one line, the workers ended, exit 130 now (a pool whose workers were
    stopped must not be waited for at exit)."""
    import multiprocessing
    print("spades-eval: interrupted; the match was not finished (with --journal, the same command resumes it)",
          file=sys.stderr, flush=True)
    for child in multiprocessing.active_children():
        child.terminate()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():           # its tasks stop, a Ray started here ends
        ray.shutdown()
    sys.stdout.flush()
    os._exit(130)


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's own errors exit 2, --help 0
        return int(exc.code or 0)

    def fail(message: str) -> int:
        print(f"spades-eval: error: {message}", file=sys.stderr)
        return 2

    import signal
    # Ctrl-C and SIGTERM end the match at once, wherever the main process is: one line, the
    # workers stopped (they also die with this process: evaluation.matches.die_with_parent).
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        # --crossplay draws its table to --plot, or beside --json, or to crossplay.png
        plot = (args.plot or (str(Path(args.json).with_suffix(".png")) if args.json else "crossplay.png")
                if args.crossplay else args.plot)
        for flag, value in (("--json", args.json), ("--records", args.records), ("--plot", plot)):
            if value:                           # a folder, `out/`, an unwritable place: refused before play
                check_output_file(value, flag)
        n = args.games if args.games is not None else (args.hands if args.hands is not None else args.deals)
        mode = "games" if args.games is not None else "hands"
        common = dict(deals=None if mode == "games" else n, games=n if mode == "games" else None,
                      duplicate=args.duplicate, rules=args.rules, seed=args.seed, workers=args.workers,
                      progress=not args.no_progress, start_scores=_start_scores_arg(args.start_scores),
                      confidence=args.confidence, ray=args.ray, journal=args.journal, start=args.start)
        if args.crossplay:
            if args.team_a or args.team_b:
                return fail("--crossplay plays every pairing against --reference; drop --team-a/--team-b")
            if args.records:
                return fail("--records is for single matches, not --crossplay")
            if args.baseline:
                return fail("--baseline compares two teams against --team-b; drop it with --crossplay")
            result = crossplay(split_spec_list(args.crossplay), reference=args.reference, **common)
        else:
            if args.reference or args.plot:
                return fail("--reference and --plot go with --crossplay")
            if args.records and args.baseline:
                return fail("--records is for single matches, not --baseline")
            team_a, team_b = _team_arg(args.team_a, "--team-a"), _team_arg(args.team_b, "--team-b")
            if team_a is None or team_b is None:
                return fail("give both --team-a and --team-b (or --crossplay)")
            if args.baseline:
                result = compare(team_a, _team_arg(args.baseline, "--baseline"), team_b, **common)
            else:
                result = evaluate(team_a, team_b, keep_records=bool(args.records), **common)
    except (EvaluationError, RulesError) as exc:
        return fail(str(exc))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    print(result.format())
    try:
        if args.json:
            _write_json(args.json, result.to_dict())
            print(f"\nwrote {args.json}")
        if args.crossplay:
            plot_crossplay(result, plot)
            print(f"wrote {plot}")
        elif args.records:
            _write_json(args.records, result.records, "--records")
            print(f"wrote {args.records}")
    except EvaluationError as exc:              # the disk filled, or the folder changed, since the check
        return fail(str(exc))
    except OSError as exc:                      # the same, met by the plot's own write
        return fail(f"cannot write {exc.filename or 'the plot'}: {exc.strerror or exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
