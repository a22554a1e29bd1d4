"""How fast the web table answers: ``python -m web.latency [AGENT ...]``; how long one decision
of a browser-allowed agent spec takes at most: ``python -m web.latency --decisions SPEC ...``.

Starts the server on a free local port, plays the first hand of six seeded games as North
(always the first legal action) with AGENT (default ``heuristic``) as East, and times each of
East's moves from the person's action request to the view that shows East's move, through
HTTP exactly as the page does (long-polling ``GET /api/games/{id}?since=V``)."""

from __future__ import annotations

import socket
import statistics
import sys
import tempfile
import threading
import time


def measure(agent: str, games: int = 6) -> list[float]:
    import uvicorn
    try:
        import httpx2 as httpx      # what Starlette's test client now asks for
    except ImportError:
        import httpx

    from web.server import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(tempfile.mkdtemp()), host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
    seconds = []
    try:
        for seed in range(games):
            state = client.post("/api/games", json={"seat": 0, "agents": {"1": agent}, "seed": seed}).json()
            while not state["over"] and not state["hands"]:
                while state["to_act"] != state["seat"] and not state["over"]:
                    state = client.get(f"/api/games/{state['id']}?since={state['version']}&wait=5").json()
                if state["over"] or state["hands"]:
                    break
                began = time.perf_counter()
                state = client.post(f"/api/games/{state['id']}/action", json={"action": state["legal"][0]["id"]}).json()
                if state["to_act"] == 1:
                    state = client.get(f"/api/games/{state['id']}?since={state['version']}&wait=30").json()
                    seconds.append(time.perf_counter() - began)
    finally:
        server.should_exit = True
    return seconds


def decision_seconds(spec: str, decisions: int = 14, seed: int = 3) -> list[float]:
    """Seconds of each of the first ``decisions`` decisions of East, an agent built from ``spec``
    exactly as the web table builds it (:func:`web.table.browser_agent_spec`, so only options a
    browser may set), in a seeded game with the heuristic on the other seats."""
    import agents
    from spades_env import spades_v0
    from web.limits import models_offered
    from web.table import browser_agent_spec

    name, options = browser_agent_spec(spec, models_offered())
    east, others = agents.make(name, **{"seed": 1, **options}), agents.make("heuristic", seed=2)
    env = spades_v0.raw_env(episode="game")
    env.reset(seed=seed)
    seconds: list[float] = []
    for seat_name in env.agent_iter():
        obs, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        if seat_name == env.possible_agents[1]:
            began = time.perf_counter()
            action = east.act(obs, info)
            seconds.append(time.perf_counter() - began)
            if len(seconds) >= decisions:
                break
        else:
            action = others.act(obs, info)
        env.step(action)
    return seconds


def main(argv: list[str] | None = None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    if argv[:1] == ["--decisions"]:
        for spec in argv[1:]:
            times = decision_seconds(spec)
            print(f"{spec}: {len(times)} decisions of East, slowest {max(times):.2f} s, "
                  f"median {statistics.median(times):.3f} s")
        return 0
    for agent in argv or ["heuristic"]:
        times = sorted(measure(agent))
        print(f"{agent}: {len(times)} moves, median {1000 * statistics.median(times):.1f} ms, "
              f"95th percentile {1000 * times[int(0.95 * len(times))]:.1f} ms, max {1000 * times[-1]:.1f} ms "
              "(from the person's action to the agent's move in the view)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
