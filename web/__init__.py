"""The web table (``spades-web``): play the agents and inspect any game in a browser.

``web.server`` is the Starlette app and the command; ``web.table`` one game at the table;
``web.inspector`` replays records into frames and asks agents about positions; ``web/static``
the page (HTML, CSS, JavaScript; nothing fetched from elsewhere).
"""
