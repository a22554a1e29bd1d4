"""``python -m train.learning_curve`` keeps working: the module moved to :mod:`train.experimental.learning_curve`."""

if __name__ == "__main__":          # a Ctrl-C while the module imports: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.learning_curve", "train.experimental.learning_curve:main"))

from train.experimental.learning_curve import main  # noqa: E402,F401  (the old import path)
