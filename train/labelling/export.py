"""Export the policy of a training checkpoint as a small model file for ``agents.make("neural")``.

    python -m train.labelling.export runs/quickstart/checkpoints/last.pt runs/quickstart/model.pt
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.labelling.export", "train.labelling.export:main"))

import argparse
import sys
from typing import Optional

from agents.neural import ModelError, export_model


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.labelling.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a spades-train checkpoint (or an exported model)")
    parser.add_argument("out", help="where to write the model")
    args = parser.parse_args(argv)
    try:
        path = export_model(args.checkpoint, args.out)
    except (ModelError, FileNotFoundError) as exc:
        print(f"export: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} kB)")
    return 0

