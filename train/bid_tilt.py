"""``python -m train.bid_tilt`` keeps working: the module moved to :mod:`train.bids.bid_tilt`."""

if __name__ == "__main__":          # a Ctrl-C while the module imports: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.bid_tilt", "train.bids.bid_tilt:main"))

from train.bids.bid_tilt import main  # noqa: E402,F401  (the old import path)
