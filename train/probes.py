"""``python -m train.probes`` keeps working: the module moved to :mod:`train.experimental.probes`."""

if __name__ == "__main__":          # a Ctrl-C while the module imports: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.probes", "train.experimental.probes:main"))

from train.experimental.probes import main  # noqa: E402,F401  (the old import path)
