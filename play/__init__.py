"""The person's terminal table: ``spades-play`` (:mod:`play.cli`) and its announcements
(:mod:`play.table`). The browser table is ``web/``; the person's seat itself is an agent,
``agents.make("human")``."""
