"""``python -m train.game_bid_values`` keeps working: the module moved to :mod:`train.bids.game_bid_values`."""

if __name__ == "__main__":          # a Ctrl-C while the module imports: one line, status 130
    from train.interrupt import launch
    raise SystemExit(launch("python -m train.game_bid_values", "train.bids.game_bid_values:main"))

from train.bids.game_bid_values import main  # noqa: E402,F401  (the old import path)
