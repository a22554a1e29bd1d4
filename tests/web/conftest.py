"""The web tests' shared client: the server of web/server.py over a fresh records folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def client(tmp_path):
    TestClient = pytest.importorskip("starlette.testclient").TestClient     # needs httpx2 (or httpx)
    from web.server import create_app
    with TestClient(create_app(tmp_path / "records"), base_url="http://127.0.0.1:8000") as c:
        yield c
