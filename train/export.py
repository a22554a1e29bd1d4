"""``python -m train.export`` keeps working: the module moved to :mod:`train.labelling.export`."""

if __name__ == "__main__":          # a Ctrl-C while the module imports: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.export", "train.labelling.export:main"))

from train.labelling.export import main  # noqa: E402,F401  (the old import path)
