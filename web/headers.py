"""Security headers on every answer of ``spades-web``, the page's and the API's alike.

Without them another site could show the table inside a frame of its own and trick a click
(clickjacking), and a script that found its way into the page could load code from anywhere.
:class:`SecurityHeaders` (ASGI middleware, outermost: refusals of ``BrowserGuard`` get them too)
sets a strict Content-Security-Policy (scripts, styles, images and requests from this server
only, no inline code, no plugins, no framing: ``frame-ancestors 'none'``), ``X-Frame-Options:
DENY`` for browsers that predate CSP, ``nosniff`` and no referrer. The page keeps to the policy:
``web/static`` holds no inline script or style (``tests/test_hardening_round4.py`` checks it).
"""

from __future__ import annotations

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "frame-ancestors 'none'",
])

SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}
_ENCODED = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS.items()]


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every HTTP response (replacing any the app set)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                kept = [(name, value) for name, value in message.get("headers", [])
                        if name.lower().decode("latin-1") not in SECURITY_HEADERS]
                message = {**message, "headers": kept + _ENCODED}
            await send(message)

        await self.app(scope, receive, send_with_headers)


__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "SecurityHeaders"]
