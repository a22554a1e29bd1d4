"""Labelling and expert iteration: ``spades-label`` (a teacher's choices or values at
positions), expert iteration's rounds and their manifest, and ``train.labelling.export``."""
