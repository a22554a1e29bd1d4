"""``python -m train.label`` keeps working: ``spades-label`` moved to :mod:`train.labelling.cli`."""

if __name__ == "__main__":          # a Ctrl-C while the module imports: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.label", "train.labelling.cli:main"))

from train.labelling.cli import main  # noqa: E402,F401  (the old import path)
