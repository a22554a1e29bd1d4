"""``spades-coop``: the cooperation lab's commands.

``zoo``, ``run``, ``signals`` and ``distance`` measure (:mod:`evaluation.coop_cli`); ``study`` trains seeds of
each cooperation method and measures them (:mod:`train.coop_study`), ``bid-values`` plays every
bid out under a policy's own play (:mod:`train.bid_value_map`) and ``clone`` fits a partner to
people's games (:mod:`train.behaviour_cloning`), so the command lives on the training floor,
which may use evaluation, and not the other way round.
"""

from __future__ import annotations

import sys
from typing import Optional

from evaluation.coop_cli import main as measure_main


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["study"]:
        from .coop_study import main as study_main
        return study_main(argv[1:])
    if argv[:1] == ["bid-values"]:
        from .bid_value_map import main as bid_values_main
        return bid_values_main(argv[1:])
    if argv[:1] == ["clone"]:
        from .behaviour_cloning import main as clone_main
        return clone_main(argv[1:])
    return measure_main(argv)


if __name__ == "__main__":
    sys.exit(main())
