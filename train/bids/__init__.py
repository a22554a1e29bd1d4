"""Bid values, in one place: Monte-Carlo bid values (:mod:`train.bids.bid_values`), the
counterfactual bids of PPO's update (:mod:`train.bids.bid_counterfactual`), bids valued by
the game (:mod:`train.bids.game_bid_values`), the tilt of a policy's bids
(:mod:`train.bids.bid_tilt`) and ``spades-coop bid-values`` (:mod:`train.bids.bid_value_map`)."""
