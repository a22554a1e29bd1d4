"""A recipe's last step: the model it made, set beside the shipped model of the same name.

    python -m train.recipes.ship runs/recipes/neural/tilt_game_bids/model.pt OUT --name neural_v7

Copies MODEL to OUT (atomically) and compares it with the manifest's model NAME tensor for
tensor, writing ``comparison.json`` beside OUT: ``identical`` (every tensor of the policy equal,
the same names, shapes and dtypes), the tensors that differ and the largest difference. Nothing
is written into ``agents/models``: shipping is a person's decision (a new file under a new name,
an entry in the manifest, the alias moved), made after the model is judged.
"""

from __future__ import annotations

if __name__ == "__main__":          # a Ctrl-C while the imports below run: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.recipes.ship", "train.recipes.ship:main"))

import argparse
import json
import sys
from pathlib import Path
from typing import Optional


def compare_policies(made: dict, shipped: dict) -> dict:
    """Tensor-for-tensor comparison of two model files' policies (``read_checkpoint`` dicts)."""
    import torch
    a, b = made["policy"], shipped["policy"]
    differ = []
    largest = 0.0
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x is None or y is None or x.shape != y.shape or x.dtype != y.dtype:
            differ.append(name)
            continue
        if not torch.equal(x, y):
            differ.append(name)
            largest = max(largest, float((x.double() - y.double()).abs().max()))
    same_arch = made.get("arch") == shipped.get("arch")
    return {"identical": not differ and same_arch, "tensors": len(set(a) | set(b)), "tensors_differing": differ,
            "largest_difference": largest, "same_arch": same_arch}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.recipes.ship", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the model the recipe made")
    parser.add_argument("out", help="where to copy it (its folder gets comparison.json)")
    parser.add_argument("--name", required=True, help="the shipped model it is compared with (a manifest name)")
    args = parser.parse_args(argv)
    from agents import model_manifest
    from agents.neural import ModelError, read_checkpoint
    from spades_env.files import FileRuleError, check_output, read_bytes, write_bytes, write_text
    try:
        out = check_output(args.out, "out", inputs=[args.model])          # before anything is read
        check_output(Path(args.out).parent / "comparison.json", "comparison.json", make_folders=True)
        made = read_checkpoint(args.model)
        try:
            shipped_path = model_manifest.model_path(args.name)
        except model_manifest.ManifestError:
            shipped_path = None                               # a name not shipped yet: nothing to compare
        comparison = {"model": str(args.model), "name": args.name,
                      "shipped_file": str(shipped_path) if shipped_path else None}
        if shipped_path is not None:
            comparison.update(compare_policies(made, read_checkpoint(shipped_path)))
        write_bytes(out, read_bytes(args.model, "model"), "out")
        write_text(out.parent / "comparison.json", json.dumps(comparison, indent=1) + "\n", "comparison.json")
    except (ModelError, FileNotFoundError, FileRuleError) as exc:
        print(f"ship: error: {exc}", file=sys.stderr)
        return 2
    if shipped_path is None:
        print(f"wrote {out}; {args.name!r} is not shipped yet: to ship it, copy it to agents/models/{args.name}.pt "
              "and add it to agents/models/manifest.json")
    elif comparison["identical"]:
        print(f"wrote {out}: identical to the shipped {args.name} ({shipped_path.name}) tensor for tensor "
              f"({comparison['tensors']} tensors)")
    else:
        print(f"wrote {out}: differs from the shipped {args.name}: {len(comparison['tensors_differing'])} of "
              f"{comparison['tensors']} tensors (largest difference {comparison['largest_difference']:.3g}); "
              f"see {out.parent / 'comparison.json'}")
    return 0

