"""``spades-label``: a teacher's choices on the positions a student reaches, for distillation.

    spades-label --teacher search --deals 3000 --out data/search_labels --workers 2

The student (a neural model, by default the shipped one) plays one side of single hands against
``--opponents`` (the heuristic by default); at every decision of the student's seats that has
more than one legal action the teacher (any registered agent spec, e.g. ``search`` or
``search:worlds=100``) is asked what it would do there. That choice is the label; the hand then
goes on with the teacher's action (probability ``--follow-teacher``) or the student's, so the
positions are those the student meets (DAgger) and those the teacher leads it to.

Card choices are labelled with the whole class of equivalent cards (touching cards of one suit,
:func:`agents.search.touching_groups`: they win exactly the same tricks), so the student is not
taught an arbitrary preference between, say, the king and queen of a suit it holds both of.

The labels go to ``--out`` in shards of ``--shard-deals`` deals (``shard_00000.pt``, ...), each
written atomically; running the same command again skips finished shards, so a killed labelling
run resumes where it stopped. ``--ray [ADDRESS]`` labels the shards as tasks on a Ray cluster (a
local one without an address; :mod:`evaluation.ray_cluster`): each comes back to this process, which
writes it, so the same resuming holds and the shards are those of ``--workers 1``. ``spades-train`` fits a policy to them with ``distill_data: DIR``
(or a list of folders, e.g. two labelling runs with different seeds or students, fitted together).
A shard holds, per labelled decision: ``obs`` (float16), ``mask`` and ``target`` (bool, 68
actions; ``target`` is the set of actions as good as the teacher's), ``teacher`` and ``student``
(the two choices), ``phase``, ``deal``, ``seat`` and ``values`` (float16, 68 actions; NaN where
the teacher gives no value).

``--teacher playout`` labels values instead of one choice: at every card decision of the student
with more than one class of equivalent cards, each class is played on a copy of the *true* table
and the rest of the hand played out by the heuristic on all four seats; the value of the class is
the hand's score difference for the student's side (:func:`playout_values`). The student never
sees the other hands: averaged over the deals that lead to the same observation, these values are
what each card is worth there when the hand goes on with heuristic play (what the ``search``
player estimates by sampling deals, here learnt from the real ones). The teacher's choice is the
best class (the student's card when it is among the best). Bidding decisions are kept with the
student's own choice and no values. ``spades-train`` fits them with ``distill_value_temperature``.

A ``search`` teacher also gives values: its mean play-out value of every candidate class over
the deals it sampled (those it dropped after its first stage stay NaN; ``stage=0`` keeps every
candidate), e.g. ``--teacher search:worlds=16,stage=0``. Unlike ``playout``'s values, measured on
the one true deal, these average over deals consistent with what the seat knows (sampled
uniformly, weighted by the bids), so each label is less noisy; ``distill_value_temperature``
fits them the same way.

``--continuation student`` plays the student's side of those play-outs with the student itself
(its favourite card; the play-outs of a shard's deals batched together), the other side still with the heuristic:
the values are then what each card is worth when the hand goes on with the student's own play
(a step of policy iteration against the heuristic), at about half the labelling speed.

``--teacher solver`` labels values as ``playout`` does, each card's play-out handing over to the
exact solver (:mod:`spades_env.solver`) once ``--endgame-tricks K`` tricks remain (default 3): the
values the new ``search`` compares (agents/endgame_search.py), nils and bags scored exactly in
the last tricks. With ``--worlds N`` they are averaged over N sampled deals.

``--worlds N`` (with ``--teacher playout`` or ``solver``) values every class over N deals consistent with what
the seat knows instead of the true one (:func:`sampled_tables`: the hidden hands redealt as the
search draws its worlds, weighted by the bids), the class's value the weighted mean of its
play-outs there: N times the play-outs, each label far less noisy than one true deal's.

``--varied-start SHARE`` starts that share of the deals from random scores (-150..490) and bags
instead of 0-0 (as ``spades-train``'s ``varied_start``): blind nil is then offered to a side 100
points behind, and bags near the limit cost their penalty in the values. With ``--start real`` those
deals start instead from scores and bags drawn from the states whole games reach
(:mod:`spades_env.starts`), so blind nil and the bag limit come up as often as in a real game.

``--only blind-nil`` keeps the teacher's label on the decisions about blind nil alone: every
blind-nil decision (bid it, or look), and every decision of the student's side from the moment
that side bids blind nil to the end of the hand (the partner's bid, the passing both ways, the
card play of both seats). The side's other decisions stay in the shards with an empty ``target``:
``distill`` fits them to the starting policy's own probabilities (a KL anchor), so a policy can
learn blind nil from a teacher that plays it without its other play being pulled towards that
teacher. Use it with ``--varied-start`` (blind nil is only offered to a side 100 behind) and a
high ``--follow-teacher`` (a student that never bids blind nil reaches no blind-nil hand).
``--only ducking`` keeps the label at the card decisions where the only thing left to play for is
avoiding bags (:func:`ducking_position`: the side's contract made, no set of the other side in
reach, no nil in play), the rest again kept as anchors.
``--only nil-defence`` keeps the label at the card decisions made while an opponent's nil or blind
nil is intact (:func:`nil_defence_position`: the opponent who bid it has taken no trick yet), where
the search breaks nils the policy lets through; the teacher is asked only there (the anchors cost
no search), so a slow teacher labels these positions at a fraction of the cost of ``all``. It is
the one ``--only`` that ``--teacher playout`` takes too: every card class valued by play-outs on
the true deal there, nowhere else.
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.labelling.cli", "train.labelling.cli:main"))

import argparse
import sys
from typing import Optional

from agents.neural import DEFAULT_MODEL
from evaluation import default_workers
from train.labelling.labeller import CONTINUATIONS, ONLY, LabelError, label


def main(argv: Optional[list[str]] = None) -> int:
    from evaluation.cli_common import OneLineParser      # errors in one line, not the usage block
    parser = OneLineParser(prog="spades-label", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder of the label shards (resumes what is there)")
    parser.add_argument("--teacher", default="search_v1", help="agent spec of the teacher (default: search_v1, "
                        "the search of before the exact endgames), or 'playout': the heuristic play-out value of "
                        "every card on the true table (see above), or 'solver': the same with the last "
                        "--endgame-tricks tricks solved exactly (the new search's values; with --worlds N)")
    parser.add_argument("--endgame-tricks", type=int, default=None, metavar="K",
                        help="with --teacher solver: tricks left when the play-out hands over to the exact "
                        "solver (default 3, 1..13)")
    parser.add_argument("--student", default=str(DEFAULT_MODEL), help="neural model or checkpoint that plays "
                        "(default: the shipped model)")
    parser.add_argument("--opponents", default="heuristic", help="agent spec of the other side (default: heuristic)")
    parser.add_argument("--deals", type=int, default=1000, help="deals to play (default 1000)")
    parser.add_argument("--shard-deals", type=int, default=20, help="deals per shard file (default 20)")
    parser.add_argument("--follow-teacher", type=float, default=0.5,
                        help="probability of playing the teacher's action instead of the student's (default 0.5)")
    parser.add_argument("--continuation", choices=CONTINUATIONS, default="heuristic",
                        help="with --teacher playout: who plays the student's side after the valued card "
                        "(default heuristic: all four seats; student: the student's greedy policy, the other "
                        "side still the heuristic)")
    parser.add_argument("--worlds", type=int, default=0, metavar="N",
                        help="with --teacher playout: value each card over N deals consistent with what the seat "
                        "knows (drawn as the search draws its worlds, weighted by the bids) instead of the one "
                        "true deal: N times the play-outs, labels far less noisy (default 0: the true deal)")
    parser.add_argument("--varied-start", type=float, default=0.0, metavar="SHARE",
                        help="share of the deals (drawn per deal) that start from random scores (-150..490) and "
                        "bags instead of 0-0, where blind nil is offered and bags near the limit cost (default 0)")
    parser.add_argument("--start", choices=("varied", "real"), default="varied",
                        help="where those deals start: varied (random scores and bags, the default) or real "
                        "(scores and bags drawn from the states whole games reach: spades_env.starts)")
    parser.add_argument("--only", choices=ONLY, default="all",
                        help="which decisions keep the teacher's label: all (default), blind-nil (the "
                        "blind-nil decisions and the student's side's play once it bid blind nil), ducking "
                        "(card decisions where only bags are left to play for) or nil-defence (card decisions "
                        "while an opponent's nil is intact); the rest are kept as anchors "
                        "that distill fits to the starting policy")
    parser.add_argument("--rules", default="standard", help="rule preset (partnership rules; default standard)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: the CPUs)")
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help="label on a Ray cluster: ADDRESS (host:port, or auto), or without one a Ray instance "
                        "started here with --workers CPUs; shards are written here as they arrive, so a killed "
                        "run resumes (needs spades-rl[ray])")
    parser.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                        help="log a line per shard instead of a bar")
    args = parser.parse_args(argv)
    settings = {"student": args.student, "teacher": args.teacher, "opponents": args.opponents, "deals": args.deals,
                "shard_deals": args.shard_deals, "follow_teacher": args.follow_teacher,
                "continuation": args.continuation, "varied_start": args.varied_start, "start": args.start, "only": args.only,
                "worlds": args.worlds,
                **({} if args.endgame_tricks is None else {"endgame_tricks": args.endgame_tricks}),
                "rules": args.rules,
                "seed": args.seed, "workers": args.workers or default_workers(), "out": args.out, "ray": args.ray}
    try:
        label(settings, progress=not args.no_progress, log=lambda line: print(line, flush=True))
    except (LabelError, FileNotFoundError) as exc:
        print(f"spades-label: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spades-label: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    return 0

